"""XLA's ragged all-to-all, as one rank's pieces to send and how it places what it receives.

Operands (XLA's ``RaggedAllToAll``): ``input`` and ``output`` of the same rank, ragged along
dimension 0; ``input_offsets``, ``send_sizes``, ``output_offsets``, ``recv_sizes``, each of
``num_ranks * U`` integers (rank 1, or rank 2 read row-major), U updates per peer. Update
``i`` to peer ``j`` is index ``k = j * U + i``: rows ``input[input_offsets[k] :][:
send_sizes[k]]`` are written into *peer j's* output at rows ``output_offsets[k] ...``
(offsets into the receiver's buffer, given by the sender). ``recv_sizes[j * U + i]`` is the
size of update ``i`` this rank receives from peer ``j``. Rows no update writes keep
``output``'s values. (XLA's GPU kernel, ``ragged_all_to_all_kernel_lib.cu.h``, does exactly
these copies; XLA's CPU client does not run the op.)

Each piece sent to a peer is bytes: the int64 output offsets and sizes of its U updates,
then the rows, so a receiver knows where to write without a second exchange.

>>> alone = RaggedPlan(np.arange(4), np.full(5, -1), [1], [2], [3], [2], num_ranks=1)
>>> alone.placed(alone.pieces()[0]).tolist()  # rows 1..2 of the input at rows 3..4
[-1, -1, -1, 1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._errors import InvalidArgumentError


def _counts(values: ArrayLike, name: str, num_ranks: int) -> np.ndarray:
    array = np.asarray(values).astype(np.int64).reshape(-1)
    if array.size == 0 or array.size % num_ranks:
        raise InvalidArgumentError(
            f"ragged-all-to-all {name} has {array.size} values; it needs a positive multiple "
            f"of the {num_ranks} ranks"
        )
    return array


class RaggedPlan:
    """One rank's ragged all-to-all: ``pieces()`` to exchange, ``placed(received)`` to
    build its result (see the module docstring)."""

    def __init__(self, send: ArrayLike, output: ArrayLike, input_offsets: ArrayLike,
                 send_sizes: ArrayLike, output_offsets: ArrayLike, recv_sizes: ArrayLike,
                 num_ranks: int) -> None:
        self.send = np.asarray(send)
        self.output = np.asarray(output)
        if (self.send.ndim == 0 or self.send.ndim != self.output.ndim
                or self.send.shape[1:] != self.output.shape[1:]
                or self.send.dtype != self.output.dtype):
            raise InvalidArgumentError(
                f"ragged-all-to-all input {self.send.dtype}{list(self.send.shape)} and output "
                f"{self.output.dtype}{list(self.output.shape)} must share their type and every "
                "dimension but the first"
            )
        self.num_ranks = num_ranks
        self.input_offsets = _counts(input_offsets, "input_offsets", num_ranks)
        self.send_sizes = _counts(send_sizes, "send_sizes", num_ranks)
        self.output_offsets = _counts(output_offsets, "output_offsets", num_ranks)
        self.recv_sizes = _counts(recv_sizes, "recv_sizes", num_ranks)
        sizes = {a.size for a in (self.input_offsets, self.send_sizes, self.output_offsets,
                                  self.recv_sizes)}
        if len(sizes) > 1:
            raise InvalidArgumentError(
                "ragged-all-to-all offsets and sizes must have the same number of values")
        self.updates = self.send_sizes.size // num_ranks
        ends = self.input_offsets + self.send_sizes
        if (np.any(self.send_sizes < 0) or np.any(self.input_offsets < 0)
                or np.any(ends > self.send.shape[0])):
            raise InvalidArgumentError(
                f"ragged-all-to-all reads rows outside its input of {self.send.shape[0]} rows "
                f"(input_offsets {self.input_offsets.tolist()}, send_sizes "
                f"{self.send_sizes.tolist()})"
            )
        self.row_bytes = int(np.prod(self.send.shape[1:], dtype=np.int64)) * self.send.itemsize

    def pieces(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The byte piece for each peer, and a buffer for each peer's piece to this rank
        (sized from ``recv_sizes``)."""
        sends, likes = [], []
        for peer in range(self.num_ranks):
            k = slice(peer * self.updates, (peer + 1) * self.updates)
            rows = [self.send[o:o + n] for o, n in zip(self.input_offsets[k].tolist(),
                                                       self.send_sizes[k].tolist(),
                                                       strict=True)]
            header = np.concatenate([self.output_offsets[k], self.send_sizes[k]])
            data = np.ascontiguousarray(np.concatenate(rows, axis=0)).reshape(-1)
            sends.append(np.concatenate([header.view(np.uint8), data.view(np.uint8)]))
            received = int(self.recv_sizes[k].sum())
            likes.append(np.empty(16 * self.updates + received * self.row_bytes, np.uint8))
        return sends, likes

    def placed(self, received: Sequence[np.ndarray]) -> np.ndarray:
        """A copy of ``output`` with every peer's updates (``received[peer]``, its piece to
        this rank) written in; ``InvalidArgumentError`` when a peer's sizes are not the
        ``recv_sizes`` or an update falls outside ``output``."""
        out = np.array(self.output, copy=True)
        for peer, piece in enumerate(received):
            piece = np.asarray(piece, dtype=np.uint8)
            header = piece[:16 * self.updates].view(np.int64)
            offsets, sizes = header[:self.updates], header[self.updates:]
            expected = self.recv_sizes[peer * self.updates:(peer + 1) * self.updates]
            if not np.array_equal(sizes, expected):
                raise InvalidArgumentError(
                    f"ragged-all-to-all: rank {peer} sends updates of {sizes.tolist()} rows "
                    f"where recv_sizes expects {expected.tolist()}"
                )
            rows = piece[16 * self.updates:].view(self.send.dtype).reshape(
                (-1, *self.send.shape[1:]))
            start = 0
            for offset, size in zip(offsets.tolist(), sizes.tolist(), strict=True):
                if offset < 0 or offset + size > out.shape[0]:
                    raise InvalidArgumentError(
                        f"ragged-all-to-all: rank {peer} writes rows {offset}..{offset + size}"
                        f" outside the output of {out.shape[0]} rows"
                    )
                out[offset:offset + size] = rows[start:start + size]
                start += size
        return out

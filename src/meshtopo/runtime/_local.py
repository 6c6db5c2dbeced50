"""The ``local`` backend: every device a communicator in this process, numpy buffers.

Operations launch without blocking: a call records this rank's buffer at the clique's
rendezvous and returns an ``Event``; the last rank to arrive computes every rank's result with
numpy (deterministically, in rank order) and the event becomes ready. ``wait()`` blocks until
then, with the stuck warning and the ``RendezvousError`` of ``_rendezvous``. Results may be
shared between ranks and are read-only.

Matching: a communicator's operations meet the same operation of the other ranks by their
``op_name`` (default: the operation kind) and how often this communicator issued that name
before, as XLA's CPU runtime keys its rendezvous by op id.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from .._errors import InvalidArgumentError, MeshtopoError
from ._clique_key import CliqueKey
from ._communicator import (
    Communicator,
    Event,
    ReductionKind,
    all_to_all_chunks_check,
    check_out,
    into,
    reduce_arrays,
    scatter_chunks_check,
)
from ._factory import CommunicatorFactory, split_ranks
from ._ragged import RaggedPlan
from ._rendezvous import DEFAULT_TIMEOUT, Rendezvous, Slot


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _same(values: list[Any], op: str, clique: CliqueKey) -> None:
    signatures = {(v[0], v[1]) for v in values}
    if len(signatures) > 1:
        described = "; ".join(f"rank {r}: {v[0]} {v[1]}" for r, v in enumerate(values))
        raise InvalidArgumentError(
            f"ranks of clique <{clique}> issued different operations for `{op}`: {described}"
        )


class LocalCommunicator(Communicator):
    """One rank of an in-process clique; see the module docstring."""

    def __init__(self, key: CliqueKey, rank: int, clique_id: Hashable, factory: LocalFactory,
                 ) -> None:
        super().__init__(key, rank)
        self._clique_id = clique_id
        self._factory = factory
        self._issued: Counter[str] = Counter()
        self._pending: list[Slot] = []
        self._error: BaseException | None = None

    def _launch(self, kind: str, op_name: str | None, signature: str, payload: Any,
                compute: Callable[[list[Any]], list[Any]],
                positions: tuple[int, ...] | None = None) -> Event[Any]:
        self.health_check()
        name = op_name or kind
        count = self._issued[name]
        self._issued[name] += 1
        ranks = positions if positions is not None else tuple(range(self.num_ranks))
        devices = [self.key.devices[r] for r in ranks]
        slot_key = (self.key, self._clique_id, name, count, ranks)

        def checked(values: list[Any]) -> list[Any]:
            _same(values, name, self.key)
            return compute([v[2] for v in values])

        position = ranks.index(self.current_rank)
        slot = self._factory.rendezvous.arrive(
            slot_key, position, (kind, signature, payload), devices, name, str(self.key),
            checked,
        )
        self._pending.append(slot)
        started = time.monotonic()
        timeout = self._factory.timeout

        def waiter(_: float | None) -> Any:
            try:
                return self._factory.rendezvous.wait(slot, position, timeout, None, started)
            finally:
                if slot in self._pending:
                    self._pending.remove(slot)

        return Event(waiter)

    def all_reduce(self, send: np.ndarray, reduction: ReductionKind | str = ReductionKind.SUM,
                   op_name: str | None = None, out: np.ndarray | None = None
                   ) -> Event[np.ndarray]:
        kind = ReductionKind.parse(reduction)
        send = np.asarray(send)
        check_out(send, out)

        def compute(values: list[tuple[np.ndarray, np.ndarray | None]]) -> list[np.ndarray]:
            reduced = _read_only(reduce_arrays([v[0] for v in values], kind))
            return [into(o, reduced) for _, o in values]  # every send read before any out

        return self._launch("all-reduce", op_name, f"{kind.value} {send.dtype}{send.shape}",
                            (send, out), compute)

    def all_gather(self, send: np.ndarray, axis: int = 0,
                   op_name: str | None = None) -> Event[np.ndarray]:
        send = np.asarray(send)

        def compute(values: list[np.ndarray]) -> list[np.ndarray]:
            out = _read_only(np.concatenate(values, axis=axis))
            return [out] * len(values)

        return self._launch("all-gather", op_name, f"axis {axis} {send.dtype}", send, compute)

    def reduce_scatter(self, send: np.ndarray, reduction: ReductionKind | str = ReductionKind.SUM,
                       axis: int = 0, op_name: str | None = None) -> Event[np.ndarray]:
        kind = ReductionKind.parse(reduction)
        send = np.asarray(send)
        scatter_chunks_check(send, axis, self.num_ranks)

        def compute(values: list[np.ndarray]) -> list[np.ndarray]:
            reduced = reduce_arrays(values, kind)
            return [_read_only(c) for c in np.split(reduced, len(values), axis=axis)]

        return self._launch("reduce-scatter", op_name,
                            f"{kind.value} axis {axis} {send.dtype}{send.shape}", send, compute)

    def broadcast(self, send: np.ndarray, root: int,
                  op_name: str | None = None) -> Event[np.ndarray]:
        self._check_rank(root, "broadcast root")
        send = np.asarray(send)

        def compute(values: list[np.ndarray]) -> list[np.ndarray]:
            out = _read_only(values[root])
            return [out] * len(values)

        return self._launch("broadcast", op_name, f"root {root} {send.dtype}{send.shape}", send,
                            compute)

    def collective_permute(self, send: np.ndarray, source_rank: int | None,
                           target_ranks: Sequence[int],
                           op_name: str | None = None) -> Event[np.ndarray]:
        self._check_rank(source_rank, "collective-permute source")
        for target in target_ranks:
            self._check_rank(target, "collective-permute target")
        send = np.asarray(send)
        payload = (send, source_rank, tuple(target_ranks))

        def compute(values: list[tuple[np.ndarray, int | None, tuple[int, ...]]]
                    ) -> list[np.ndarray]:
            outputs = []
            for rank, (buffer, source, _) in enumerate(values):
                if source is None:
                    outputs.append(np.zeros_like(buffer))
                    continue
                if rank not in values[source][2]:
                    raise InvalidArgumentError(
                        f"collective-permute on clique <{self.key}>: rank {rank} expects data "
                        f"from rank {source}, which does not send to it"
                    )
                outputs.append(_read_only(values[source][0]))
            return outputs

        return self._launch("collective-permute", op_name, f"{send.dtype}{send.shape}", payload,
                            compute)

    def all_to_all(self, chunks: Sequence[np.ndarray],
                   op_name: str | None = None) -> Event[list[np.ndarray]]:
        all_to_all_chunks_check(chunks, self.num_ranks)
        arrays = [np.asarray(c) for c in chunks]

        def compute(values: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
            return [[_read_only(values[j][r]) for j in range(len(values))]
                    for r in range(len(values))]

        return self._launch("all-to-all", op_name, f"{arrays[0].dtype}", arrays, compute)

    def ragged_all_to_all(self, send: np.ndarray, output: np.ndarray,
                          input_offsets: np.ndarray, send_sizes: np.ndarray,
                          output_offsets: np.ndarray, recv_sizes: np.ndarray,
                          op_name: str | None = None) -> Event[np.ndarray]:
        plan = RaggedPlan(send, output, input_offsets, send_sizes, output_offsets,
                          recv_sizes, self.num_ranks)
        payload = (plan, plan.pieces()[0])

        def compute(values: list[tuple[RaggedPlan, list[np.ndarray]]]) -> list[np.ndarray]:
            return [_read_only(p.placed([v[1][r] for v in values]))
                    for r, (p, _) in enumerate(values)]

        return self._launch("ragged-all-to-all", op_name, f"{plan.send.dtype}", payload,
                            compute)

    def _p2p(self, peer: int, sending: bool, buffer: np.ndarray,
             op_name: str | None) -> Event[Any]:
        self._check_rank(peer, "peer")
        source, target = (self.current_rank, peer) if sending else (peer, self.current_rank)
        positions = (source, target)

        def compute(values: list[np.ndarray]) -> list[Any]:
            return [None, _read_only(values[0])]

        # One name per direction, so each direction counts its own transfers.
        name = f"{op_name or 'send/recv'} {self.key.devices[source]}->{self.key.devices[target]}"
        return self._launch("send/recv", name, f"{buffer.dtype}{buffer.shape}", buffer,
                            compute, positions)

    def send(self, send: np.ndarray, peer: int, op_name: str | None = None) -> Event[None]:
        return self._p2p(peer, True, np.asarray(send), op_name)

    def recv(self, like: np.ndarray, peer: int, op_name: str | None = None) -> Event[np.ndarray]:
        return self._p2p(peer, False, np.asarray(like), op_name)

    def barrier(self, op_name: str | None = None) -> Event[None]:
        return self._launch("barrier", op_name, "", None, lambda values: [None] * len(values))

    def split(self, color: int | None, key: int) -> Event[Communicator | None]:
        def compute(values: list[tuple[int | None, int]]) -> list[Communicator | None]:
            groups = split_ranks([v[0] for v in values], [v[1] for v in values])
            created: dict[tuple[int, ...], list[Communicator]] = {}
            split_id = next(self._factory.ids)
            for group in groups:
                if group is not None and group not in created:
                    new_key = CliqueKey(tuple(self.key.devices[r] for r in group))
                    created[group] = self._factory.create_communicators(
                        new_key, ("split", self._clique_id, split_id),
                        [(d, i) for i, d in enumerate(new_key.devices)])
            return [None if g is None else created[g][g.index(r)]
                    for r, g in enumerate(groups)]

        return self._launch("split", None, "", (color, key), compute)

    def abort(self) -> None:
        error = MeshtopoError(f"communicator of device {self.device} (rank {self.current_rank} "
                              f"of clique <{self.key}>) was aborted")
        self._error = error
        for slot in list(self._pending):
            slot.fail(error)

    def health_check(self) -> None:
        if self._error is not None:
            raise self._error


class LocalFactory(CommunicatorFactory):
    """Creates ``LocalCommunicator`` cliques sharing one in-process rendezvous.

    ``timeout`` is the rendezvous timeout of every operation (seconds)."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = float(timeout)
        self.rendezvous = Rendezvous()
        self.ids = itertools.count()

    def create_communicators(self, key: CliqueKey, clique_id: Hashable | None,
                             ranks: Sequence[tuple[int, int]]) -> list[Communicator]:
        communicators: list[Communicator] = []
        for device, rank in ranks:
            if key.rank(device) != rank:
                raise InvalidArgumentError(
                    f"device {device} has rank {key.rank(device)} in clique <{key}>, not {rank}"
                )
            communicators.append(LocalCommunicator(key, rank, clique_id, self))
        return communicators

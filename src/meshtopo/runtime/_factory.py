"""``CommunicatorFactory`` (XLA's ``Collectives``) and MPI/NCCL split semantics.

A factory creates the communicators of a clique from its key, an optional rendezvous id (the
clique id: communicators created with the same key and id form one clique) and this process's
(device, rank) pairs, and splits existing communicators into sub-cliques by colour and key.

Split semantics (``MPI_Comm_split`` / ``ncclCommSplit``): ranks with equal colour form one new
communicator; new ranks are ordered by key, ties by parent rank; a colour of None opts out
(the rank gets None). XLA's colour for a new clique is ``clique_split_color(devices)``, and
its keys are the ranks in the new clique.

>>> split_ranks([1, 0, 1, None], [0, 0, 0, 0])
[(0, 2), (1,), (0, 2), None]
>>> split_ranks([5, 5, 5], [2, 1, 1])
[(1, 2, 0), (1, 2, 0), (1, 2, 0)]
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Sequence

import numpy as np

from .._errors import InvalidArgumentError
from ._clique_key import CliqueKey, clique_split_color
from ._communicator import Clique, Communicator


def split_ranks(colors: Sequence[int | None], keys: Sequence[int]) -> list[tuple[int, ...] | None]:
    """For each parent rank, the parent ranks of its new communicator in new-rank order,
    or None for a rank whose colour is None."""
    if len(colors) != len(keys):
        raise InvalidArgumentError(
            f"split needs one key per colour, got {len(colors)} colours and {len(keys)} keys"
        )
    opted_in = np.array([c is not None for c in colors], dtype=bool)
    color = np.array([0 if c is None else int(c) for c in colors], dtype=np.int64)
    key = np.asarray(keys, dtype=np.int64).reshape(-1)
    parent = np.arange(len(colors), dtype=np.int64)
    order = np.lexsort((parent, key, color))
    order = order[opted_in[order]]
    if not order.size:
        return [None] * len(colors)
    sorted_colors = color[order]
    starts = np.flatnonzero(np.r_[True, sorted_colors[1:] != sorted_colors[:-1]])
    members = [tuple(g.tolist()) for g in np.split(order, starts[1:])]
    group_of = {int(c): g for c, g in zip(sorted_colors[starts].tolist(), members, strict=True)}
    return [group_of[int(c)] if ok else None for c, ok in zip(color, opted_in, strict=True)]


class CommunicatorFactory(abc.ABC):
    """Creates communicators for cliques and splits them (one factory per backend)."""

    @abc.abstractmethod
    def create_communicators(self, key: CliqueKey, clique_id: Hashable | None,
                             ranks: Sequence[tuple[int, int]]) -> list[Communicator]:
        """One communicator per (device, rank) pair given, in the order given; ``ranks``
        name this process's devices of the clique and their ranks in it."""

    def create_clique(self, key: CliqueKey, clique_id: Hashable | None = None,
                      devices: Sequence[int] | None = None) -> Clique:
        """A ``Clique`` of communicators for ``devices`` (default: every device of the key)."""
        local = key.devices if devices is None else devices
        pairs = []
        for device in local:
            rank = key.rank(device)
            if rank is None:
                raise InvalidArgumentError(f"device {device} is not in clique <{key}>")
            pairs.append((int(device), rank))
        communicators = self.create_communicators(key, clique_id, pairs)
        return Clique(key, {c.current_rank: c for c in communicators})

    def split_communicators(self, communicators: Sequence[Communicator],
                            colors: Sequence[int | None],
                            keys: Sequence[int]) -> list[Communicator | None]:
        """Split each communicator with its colour and key; launch every split, then wait
        for each (all ranks of the parent must split, in this or other processes)."""
        if not len(communicators) == len(colors) == len(keys):
            raise InvalidArgumentError(
                f"split needs one colour and one key per communicator, got "
                f"{len(communicators)} communicators, {len(colors)} colours, {len(keys)} keys"
            )
        events = [c.split(color, key) for c, color, key in zip(communicators, colors, keys,
                                                               strict=True)]
        return [event.wait() for event in events]

    def split_into_cliques(self, communicators: Sequence[Communicator],
                           new_keys: Sequence[CliqueKey | None]) -> list[Communicator | None]:
        """XLA's split of acquired communicators into sub-cliques: communicator i joins
        ``new_keys[i]`` (None: opts out) with colour ``clique_split_color(new key's devices)``
        and its rank in the new key as the split key. Every new key must be a subset of its
        parent clique and contain the communicator's device."""
        colors: list[int | None] = []
        keys: list[int] = []
        for communicator, new_key in zip(communicators, new_keys, strict=True):
            if new_key is None:
                colors.append(None)
                keys.append(0)
                continue
            rank = new_key.rank(communicator.device)
            if rank is None or not new_key.is_subset_of(communicator.key):
                raise InvalidArgumentError(
                    f"clique <{new_key}> is not a sub-clique of <{communicator.key}> holding "
                    f"device {communicator.device}"
                )
            colors.append(clique_split_color(new_key.devices))
            keys.append(rank)
        return self.split_communicators(communicators, colors, keys)

"""The ``torch`` backend: torch.distributed with gloo, one process per device.

Ranks: world rank ``i`` is the i-th device of the sorted device list. A clique's process
group is created once per distinct device tuple (``GroupCache``) with
``new_group(ranks, sort_ranks=False)``, so the group rank is the clique rank (torch's default
``sort_ranks=True`` would discard a custom order). ``new_group`` must be entered by every
process of the world in the same order, so every process creates every group of the module
up front, in one global order (``GroupCache.create_all``). (With
``use_local_synchronization=True`` torch names a group after the ranks *and the number of
groups this process made before*, so processes in different numbers of groups never meet.)

Before any bytes move, the participants of each operation meet in the TCPStore
(``StoreRendezvous``): each sets its arrival key and waits for the others', with the stuck
warning and the ``RendezvousError`` naming who never came. Operations complete before they
return: the event is ready at once (CPU-like).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from .._errors import InvalidArgumentError, MeshtopoError
from ._clique_key import CliqueKey
from ._communicator import (
    Communicator,
    Event,
    ReductionKind,
    all_to_all_chunks_check,
    scatter_chunks_check,
)
from ._factory import CommunicatorFactory, split_ranks
from ._rendezvous import logger, stuck_message, timeout_error, warn_stuck_after

_OPS = {ReductionKind.SUM: dist.ReduceOp.SUM, ReductionKind.PRODUCT: dist.ReduceOp.PRODUCT,
        ReductionKind.MIN: dist.ReduceOp.MIN, ReductionKind.MAX: dist.ReduceOp.MAX}
# numpy dtypes gloo does not carry, and the dtype they travel as (values preserved).
_CARRIED: dict[np.dtype, np.dtype] = {
    np.dtype(np.bool_): np.dtype(np.uint8), np.dtype(np.uint16): np.dtype(np.int64),
    np.dtype(np.uint32): np.dtype(np.int64),
}


def _to_tensor(array: np.ndarray) -> torch.Tensor:
    array = np.asarray(array)
    if array.dtype.kind == "c" or array.dtype == np.uint64:
        raise InvalidArgumentError(f"the torch backend does not carry {array.dtype} buffers")
    carried = _CARRIED.get(array.dtype, array.dtype)
    return torch.from_numpy(np.ascontiguousarray(array.astype(carried, copy=True)))


def _to_array(tensor: torch.Tensor, dtype: np.dtype) -> np.ndarray:
    out = tensor.numpy()
    return out.astype(dtype) if out.dtype != dtype else out


class StoreRendezvous:
    """Membership through a TCPStore: ``join`` returns once every device of the operation
    set its key, or raises ``RendezvousError`` after ``timeout`` seconds."""

    def __init__(self, store: dist.Store, timeout: float) -> None:
        self.store = store
        self.timeout = timeout

    def join(self, key: str, device: int, devices: Sequence[int], op_name: str,
             clique: str) -> None:
        """Arrive as ``device`` and wait for every one of ``devices``."""
        keys = [f"{key}/{d}" for d in devices]
        self.store.set(f"{key}/{device}", "1")
        start = time.monotonic()
        warn = warn_stuck_after(self.timeout)
        for limit, last in ((warn, False), (self.timeout - warn, True)):
            try:
                self.store.wait(keys, timedelta(seconds=max(limit, 0.001)))
                if last:
                    logger.error("Thread is unstuck! Warning above was a false-positive. "
                                 "Perhaps the timeout is too short.")
                return
            except (RuntimeError, dist.DistStoreError):
                arrived = [d for d, k in zip(devices, keys, strict=True) if self.store.check([k])]
                missing = [d for d in devices if d not in arrived]
                if last:
                    raise timeout_error(device, op_name, clique, self.timeout, arrived,
                                        missing, time.monotonic() - start) from None
                logger.error(stuck_message(device, op_name, time.monotonic() - start,
                                           len(devices), arrived, missing))


class GroupCache:
    """One gloo process group per distinct device tuple (in rank order), created once."""

    def __init__(self, world_devices: Sequence[int]) -> None:
        self.world_rank = {int(d): i for i, d in enumerate(world_devices)}
        self.groups: dict[tuple[int, ...], Any] = {}
        self.created = 0

    def ranks(self, devices: Iterable[int]) -> list[int]:
        """World ranks of ``devices``, in the order given."""
        return [self.world_rank[int(d)] for d in devices]

    def group(self, devices: tuple[int, ...]) -> Any:
        """The process group of ``devices``; ``InvalidArgumentError`` if it was not created
        by ``create_all``."""
        if devices not in self.groups:
            raise InvalidArgumentError(
                f"no process group for devices {list(devices)}: every group must be created "
                "by every process, up front (GroupCache.create_all)"
            )
        return self.groups[devices]

    def create_all(self, cliques: Iterable[tuple[int, ...]]) -> None:
        """Create every group in ``cliques`` not created yet, in one global order; every
        process of the world must call this with the same groups."""
        for devices in sorted(set(cliques) - set(self.groups), key=lambda g: (len(g), g)):
            self.groups[devices] = dist.new_group(self.ranks(devices), backend="gloo",
                                                  sort_ranks=False)
            self.created += 1


class TorchCommunicator(Communicator):
    """One rank of a clique, backed by a gloo process group (see the module docstring)."""

    def __init__(self, key: CliqueKey, rank: int, factory: TorchFactory) -> None:
        super().__init__(key, rank)
        self._factory = factory
        self._issued: Counter[str] = Counter()
        self._error: BaseException | None = None
        self._key_text = hashlib.sha1(str(key.devices).encode()).hexdigest()[:16]

    @property
    def _group(self) -> Any:
        return self._factory.groups.group(self.key.devices)

    def _meet(self, name: str, devices: Sequence[int] | None = None) -> None:
        self.health_check()
        if not self._factory.check_membership:
            return
        count = self._issued[name]
        self._issued[name] += 1
        members = self.key.devices if devices is None else devices
        self._factory.rendezvous.join(f"{self._key_text}/{name}/{count}", self.device, members,
                                      name, str(self.key))

    def _run(self, name: str, operation: Any, devices: Sequence[int] | None = None) -> Event[Any]:
        self._meet(name, devices)
        try:
            return Event.ready(operation())
        except MeshtopoError:
            raise
        except Exception as error:  # gloo reports a dead peer as a RuntimeError
            self._error = MeshtopoError(
                f"{name} on clique <{self.key}> failed on device {self.device}: {error}")
            raise self._error from error

    def _ranks(self) -> list[int]:
        return self._factory.groups.ranks(self.key.devices)

    def all_reduce(self, send: np.ndarray, reduction: ReductionKind | str = ReductionKind.SUM,
                   op_name: str | None = None) -> Event[np.ndarray]:
        kind = ReductionKind.parse(reduction)
        send = np.asarray(send)

        def operation() -> np.ndarray:
            tensor = _to_tensor(send)
            if self.num_ranks > 1:
                dist.all_reduce(tensor, _OPS[kind], group=self._group)
            return _to_array(tensor, send.dtype)

        return self._run(op_name or "all-reduce", operation)

    def all_gather(self, send: np.ndarray, axis: int = 0,
                   op_name: str | None = None) -> Event[np.ndarray]:
        send = np.asarray(send)

        def operation() -> np.ndarray:
            tensor = _to_tensor(send)
            parts = [torch.empty_like(tensor) for _ in range(self.num_ranks)]
            dist.all_gather(parts, tensor, group=self._group)
            return np.concatenate([_to_array(p, send.dtype) for p in parts], axis=axis)

        return self._run(op_name or "all-gather", operation)

    def reduce_scatter(self, send: np.ndarray, reduction: ReductionKind | str = ReductionKind.SUM,
                       axis: int = 0, op_name: str | None = None) -> Event[np.ndarray]:
        kind = ReductionKind.parse(reduction)
        send = np.asarray(send)
        scatter_chunks_check(send, axis, self.num_ranks)

        def operation() -> np.ndarray:
            chunks = [_to_tensor(c) for c in np.split(send, self.num_ranks, axis=axis)]
            out = torch.empty_like(chunks[0])
            dist.reduce_scatter(out, chunks, _OPS[kind], group=self._group)
            return _to_array(out, send.dtype)

        return self._run(op_name or "reduce-scatter", operation)

    def broadcast(self, send: np.ndarray, root: int,
                  op_name: str | None = None) -> Event[np.ndarray]:
        self._check_rank(root, "broadcast root")
        send = np.asarray(send)

        def operation() -> np.ndarray:
            tensor = _to_tensor(send)
            dist.broadcast(tensor, group_src=root, group=self._group)
            return _to_array(tensor, send.dtype)

        return self._run(op_name or "broadcast", operation)

    def collective_permute(self, send: np.ndarray, source_rank: int | None,
                           target_ranks: Sequence[int],
                           op_name: str | None = None) -> Event[np.ndarray]:
        self._check_rank(source_rank, "collective-permute source")
        send = np.asarray(send)

        def operation() -> np.ndarray:
            ranks = self._ranks()
            tensor = _to_tensor(send)
            received = torch.zeros_like(tensor)
            ops = [dist.P2POp(dist.isend, tensor, ranks[t]) for t in target_ranks
                   if t != self.current_rank]
            if source_rank is not None and source_rank != self.current_rank:
                ops.append(dist.P2POp(dist.irecv, received, ranks[source_rank]))
            for work in dist.batch_isend_irecv(ops) if ops else []:
                work.wait()
            if source_rank == self.current_rank:
                received = tensor
            return _to_array(received, send.dtype)

        return self._run(op_name or "collective-permute", operation)

    def all_to_all(self, chunks: Sequence[np.ndarray],
                   op_name: str | None = None) -> Event[list[np.ndarray]]:
        all_to_all_chunks_check(chunks, self.num_ranks)
        arrays = [np.asarray(c) for c in chunks]

        def operation() -> list[np.ndarray]:
            inputs = [_to_tensor(a) for a in arrays]
            outputs = [torch.empty_like(t) for t in inputs]
            dist.all_to_all(outputs, inputs, group=self._group)
            return [_to_array(o, a.dtype) for o, a in zip(outputs, arrays, strict=True)]

        return self._run(op_name or "all-to-all", operation)

    def send(self, send: np.ndarray, peer: int, op_name: str | None = None) -> Event[None]:
        self._check_rank(peer, "peer")
        pair = (self.device, self.key.devices[peer])

        def operation() -> None:
            dist.send(_to_tensor(send), self._ranks()[peer])

        return self._run(op_name or f"send/recv {pair[0]}->{pair[1]}", operation, pair)

    def recv(self, like: np.ndarray, peer: int, op_name: str | None = None) -> Event[np.ndarray]:
        self._check_rank(peer, "peer")
        like = np.asarray(like)
        pair = (self.key.devices[peer], self.device)

        def operation() -> np.ndarray:
            tensor = _to_tensor(like)
            dist.recv(tensor, self._ranks()[peer])
            return _to_array(tensor, like.dtype)

        return self._run(op_name or f"send/recv {pair[0]}->{pair[1]}", operation, pair)

    def barrier(self, op_name: str | None = None) -> Event[None]:
        return self._run(op_name or "barrier", lambda: None)

    def split(self, color: int | None, key: int) -> Event[Communicator | None]:
        """Split by colour; on this backend the parent clique must be the whole world (every
        process creates every new group, as ``new_group`` requires)."""
        if sorted(self.key.devices) != sorted(self._factory.groups.world_rank):
            raise InvalidArgumentError(
                f"the torch backend splits only a clique of every device of the world, not "
                f"<{self.key}>"
            )

        def operation() -> Communicator | None:
            mine = torch.tensor([0 if color is None else 1, color or 0, key], dtype=torch.int64)
            parts = [torch.empty_like(mine) for _ in range(self.num_ranks)]
            dist.all_gather(parts, mine, group=self._group)
            colors = [int(p[1]) if int(p[0]) else None for p in parts]
            groups = split_ranks(colors, [int(p[2]) for p in parts])
            self._factory.groups.create_all(
                tuple(self.key.devices[r] for r in g) for g in groups if g is not None)
            mine_group = groups[self.current_rank]
            if mine_group is None:
                return None
            new_key = CliqueKey(tuple(self.key.devices[r] for r in mine_group))
            [communicator] = self._factory.create_communicators(
                new_key, None, [(self.device, mine_group.index(self.current_rank))])
            return communicator

        return self._run("split", operation)

    def abort(self) -> None:
        self._error = MeshtopoError(f"communicator of device {self.device} (rank "
                                    f"{self.current_rank} of clique <{self.key}>) was aborted")

    def health_check(self) -> None:
        if self._error is not None:
            raise self._error


class TorchFactory(CommunicatorFactory):
    """Creates ``TorchCommunicator`` s in this process (one device per process).

    Needs ``torch.distributed`` initialised with gloo; ``store`` is the job's TCPStore (its
    ``rv/`` prefix holds the membership keys), ``world_devices`` the device of each world
    rank, ``timeout`` the rendezvous timeout in seconds. ``check_membership=False`` skips the
    store rendezvous before each operation (gloo then matches by arrival order, and a missing
    peer is gloo's own timeout error rather than a ``RendezvousError``); the benchmark uses it
    to show what the check costs."""

    def __init__(self, store: dist.Store, world_devices: Sequence[int], timeout: float,
                 check_membership: bool = True) -> None:
        self.groups = GroupCache(world_devices)
        self.rendezvous = StoreRendezvous(dist.PrefixStore("rv/", store), timeout)
        self.check_membership = check_membership

    def create_communicators(self, key: CliqueKey, clique_id: Hashable | None,
                             ranks: Sequence[tuple[int, int]]) -> list[Communicator]:
        communicators: list[Communicator] = []
        for device, rank in ranks:
            if key.rank(device) != rank:
                raise InvalidArgumentError(
                    f"device {device} has rank {key.rank(device)} in clique <{key}>, not {rank}"
                )
            communicators.append(TorchCommunicator(key, rank, self))
        return communicators

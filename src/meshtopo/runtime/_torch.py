"""The ``torch`` backend: torch.distributed with gloo, one process per device.

Ranks: world rank ``i`` is the i-th device of the sorted device list. A clique's process
group is created once per distinct device tuple (``GroupCache``) with
``new_group(ranks, sort_ranks=False)``, so the group rank is the clique rank (torch's default
``sort_ranks=True`` would discard a custom order). ``new_group`` must be entered by every
process of the world in the same order, so every process creates every group of the module
up front, in one global order (``GroupCache.create_all``). (With
``use_local_synchronization=True`` torch names a group after the ranks *and the number of
groups this process made before*, so processes in different numbers of groups never meet.)

Membership (``TorchFactory(membership=...)``): before bytes move, participants meet in the
TCPStore (``StoreRendezvous``): each sets its arrival key and waits for the others', with the
stuck warning and the ``RendezvousError`` naming who never came. ``"operation"`` meets before
every operation (what ``execute`` and ``replay`` use: a device that issues a different
collective is caught before gloo could pair the two); ``"clique"`` (the default) meets before
a communicator's first operation only, as XLA's GPU runtime acquires a clique once and then
leaves each operation to NCCL: later operations go straight to gloo, whose timeout is the
rendezvous timeout, and a gloo timeout is diagnosed in the store (the devices of the
operation arrive there and wait ``_GRACE`` seconds for each other), so a device that never
came is still a ``RendezvousError`` naming it, within the timeout plus ``_GRACE``. A stuck
operation logs XLA's stuck warning either way. Point-to-point transfers never meet first:
each carries a gloo tag made from its name, direction and count, so a send meets only its
own recv.

Buffers: data moves as the caller's bytes (no copy for a contiguous writeable array, every
element type, ``bf16`` and ``f8`` included); a reduction runs on a tensor over one copy of the
input (the result, out of place by contract), or in place on ``out``; element types gloo does
not reduce as XLA does (bf16, f8, u64, complex) are gathered and reduced here in rank order
(``reduce_arrays``). Collective operations complete before they return (the event is ready,
CPU-like); ``send``/``recv`` return once launched and complete in ``wait()`` (GPU-like), so a
device can post its sends and recvs before waiting on any.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
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
    check_out,
    into,
    reduce_arrays,
    scatter_chunks_check,
)
from ._factory import CommunicatorFactory, split_ranks
from ._ragged import RaggedPlan
from ._rendezvous import (
    RendezvousError,
    logger,
    stuck_message,
    timeout_error,
    warn_stuck_after,
)

_OPS = {ReductionKind.SUM: dist.ReduceOp.SUM, ReductionKind.PRODUCT: dist.ReduceOp.PRODUCT,
        ReductionKind.MIN: dist.ReduceOp.MIN, ReductionKind.MAX: dist.ReduceOp.MAX}
MEMBERSHIP = ("operation", "clique", "none")
_GRACE = 0.5  # seconds the devices of a timed-out operation have to show where they are
# The element types gloo reduces itself, and the numpy type each travels as for reductions
# (values preserved); other types (bf16, f8, u64, complex) are gathered and reduced in rank
# order here.
_REDUCED_AS: dict[np.dtype, np.dtype] = {
    np.dtype(t): np.dtype(c) for t, c in (
        (np.bool_, np.uint8), (np.uint8, np.uint8), (np.int8, np.int64), (np.int16, np.int64),
        (np.uint16, np.int64), (np.int32, np.int32), (np.uint32, np.int64),
        (np.int64, np.int64), (np.float16, np.float16), (np.float32, np.float32),
        (np.float64, np.float64))
}  # fmt: skip


def _reduced_as(dtype: np.dtype) -> np.dtype | None:
    """The numpy type ``dtype`` is reduced in by gloo, or None when gloo does not reduce it
    as XLA does (bf16 and f8, which XLA's CPU collectives reduce in float32 and round once;
    u64 and complex, which gloo lacks)."""
    return _REDUCED_AS.get(dtype)


def _tensor(array: np.ndarray) -> torch.Tensor:
    """A tensor over ``array``'s memory (C-contiguous, writeable, of a type gloo reduces)."""
    return torch.from_numpy(array)


def _bytes(array: np.ndarray) -> torch.Tensor:
    """``array``'s bytes as a uint8 tensor, without a copy when it is contiguous and
    writeable (data movement only: every element type travels)."""
    if not (array.flags.c_contiguous and array.flags.writeable):
        array = np.array(array, order="C", copy=True)
    return torch.from_numpy(array.reshape(-1).view(np.uint8))


def _empty_like(array: np.ndarray) -> tuple[np.ndarray, torch.Tensor]:
    """A new array shaped and typed as ``array`` and a uint8 tensor over its bytes."""
    out = np.empty(array.shape, array.dtype)
    return out, torch.from_numpy(out.reshape(-1).view(np.uint8))


class Alarm:
    """One scheduled callback of a ``Watchdog``; ``cancel()`` before its time drops it."""

    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        """Do not run the callback (if it has not started)."""
        self.cancelled = True


class Watchdog:
    """One daemon thread that runs callbacks at their times (``time.monotonic``) unless
    cancelled first: a stuck warning costs an operation a heap push, not a thread."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._alarms: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, when: float, callback: Callable[[], object]) -> Alarm:
        """Run ``callback`` on the watchdog thread at ``when``, unless cancelled."""
        alarm = Alarm(callback)
        with self._condition:
            earliest = not self._alarms or when < self._alarms[0][0]
            heapq.heappush(self._alarms, (when, next(self._order), alarm))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="meshtopo-watchdog",
                                                daemon=True)
                self._thread.start()
            elif earliest:
                self._condition.notify()
        return alarm

    def _run(self) -> None:
        with self._condition:
            while True:
                while self._alarms and self._alarms[0][2].cancelled:
                    heapq.heappop(self._alarms)
                if not self._alarms:
                    self._condition.wait()
                    continue
                wait = self._alarms[0][0] - time.monotonic()
                if wait > 0:
                    self._condition.wait(wait)
                    continue
                alarm = heapq.heappop(self._alarms)[2]
                self._condition.release()
                try:
                    alarm.callback()
                except Exception as error:  # a warning that could not be logged
                    logger.error(f"stuck warning failed: {error}")
                finally:
                    self._condition.acquire()


WATCHDOG = Watchdog()
"""The watchdog of this process's torch communicators."""


def _timed_out(error: BaseException) -> bool:
    """Whether gloo's ``error`` says it gave up waiting for a peer: its own timeout, or the
    peer closing the pair (a peer waiting in another operation that timed out first: which
    the store diagnoses as the same divergence)."""
    message = str(error).lower()
    return "timed out" in message or "closed by peer" in message or "reset by peer" in message


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

    def diagnose(self, key: str, device: int, devices: Sequence[int], op_name: str,
                 clique: str, started: float, warning: bool = False) -> RendezvousError | None:
        """For an operation gloo gave up on (or, with ``warning``, is stuck in): arrive as
        ``device`` and give the others ``_GRACE`` seconds to arrive at the same operation;
        the ``RendezvousError`` naming who did not (logged as XLA's stuck warning instead
        with ``warning``), or None when every device was there."""
        keys = [f"{key}/{d}" for d in devices]
        self.store.set(f"{key}/{device}", "1")
        try:
            self.store.wait(keys, timedelta(seconds=_GRACE))
            return None
        except (RuntimeError, dist.DistStoreError):
            arrived = [d for d, k in zip(devices, keys, strict=True) if self.store.check([k])]
            missing = [d for d in devices if d not in arrived]
        waited = time.monotonic() - started
        if warning:
            logger.error(stuck_message(device, op_name, waited, len(devices), arrived, missing))
            return None
        return timeout_error(device, op_name, clique, self.timeout, arrived, missing, waited)


class GroupCache:
    """One gloo process group per distinct device tuple (in rank order), created once;
    ``timeout`` (seconds; default torch's) is how long gloo waits for a peer."""

    def __init__(self, world_devices: Sequence[int], timeout: float | None = None) -> None:
        self.world_rank = {int(d): i for i, d in enumerate(world_devices)}
        self.timeout = None if timeout is None else timedelta(seconds=timeout)
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
            self.groups[devices] = dist.new_group(self.ranks(devices), timeout=self.timeout,
                                                  backend="gloo", sort_ranks=False)
            self.created += 1


Launched = tuple[list[Any], Callable[[], Any]]
"""What an operation's launch gives: gloo's work handles and what builds the result once
they completed."""


class TorchCommunicator(Communicator):
    """One rank of a clique, backed by a gloo process group (see the module docstring)."""

    def __init__(self, key: CliqueKey, rank: int, factory: TorchFactory) -> None:
        super().__init__(key, rank)
        self._factory = factory
        self._issued: Counter[str] = Counter()
        self._error: BaseException | None = None
        self._key_text = hashlib.sha1(str(key.devices).encode()).hexdigest()[:16]
        self._met = False
        self._cached_group: Any = None
        self._world_ranks = factory.groups.ranks(key.devices)

    @property
    def _group(self) -> Any:
        if self._cached_group is None:
            self._cached_group = self._factory.groups.group(self.key.devices)
        return self._cached_group

    def _run(self, name: str, launch: Callable[[], Launched],
             devices: Sequence[int] | None = None, point_to_point: bool = False
             ) -> Event[Any]:
        """Meet (per the factory's ``membership``; point-to-point operations never meet
        first, their tags keep them apart), launch, wait for gloo's work and build the
        result; a gloo timeout is diagnosed in the store (who never came). Point-to-point
        events are pending until ``wait()`` (launched, GPU-like); the others are ready."""
        self.health_check()
        factory = self._factory
        members = self.key.devices if devices is None else devices
        count = self._issued[name]
        self._issued[name] += 1
        key = f"{self._key_text}/{name}/{count}"
        met = not point_to_point and (
            factory.membership == "operation"
            or (factory.membership == "clique" and not self._met))
        if met:
            factory.rendezvous.join(key, self.device, members, name, str(self.key))
            self._met = True
        started = time.monotonic()

        def complete(works: list[Any], finish: Callable[[], Any]) -> Any:
            try:
                for work in works:
                    self._wait(work, key, members, name, started, watch=not met)
                return finish()
            except MeshtopoError:
                raise
            except Exception as error:  # gloo reports a dead or absent peer as a RuntimeError
                diagnosed = None
                if factory.membership != "none" and not met and _timed_out(error):
                    diagnosed = factory.rendezvous.diagnose(key, self.device, members, name,
                                                            str(self.key), started)
                self._error = diagnosed or MeshtopoError(
                    f"{name} on clique <{self.key}> failed on device {self.device}: {error}")
                raise self._error from None if diagnosed else error

        works, finish = launch()
        if point_to_point:
            return Event(lambda _: complete(works, finish))
        return Event.ready(complete(works, finish))

    def _wait(self, work: Any, key: str, members: Sequence[int], name: str, started: float,
              watch: bool) -> None:
        """Wait for one gloo work; when ``watch``, give up at the rendezvous timeout, and if
        it is not done by the warning time, log the stuck warning (with who arrived) from the
        ``WATCHDOG`` thread (gloo closes a point-to-point pair whose wait timed out, so each
        work is waited once)."""
        timeout = self._factory.rendezvous.timeout
        if not watch or self._factory.membership == "none":
            work.wait()
            return
        elapsed = time.monotonic() - started
        warning = WATCHDOG.schedule(started + warn_stuck_after(timeout), lambda: (
            self._factory.rendezvous.diagnose(key, self.device, members, name, str(self.key),
                                              started, warning=True)))
        try:
            work.wait(timedelta(seconds=max(timeout - elapsed, 0.001)))
        finally:
            warning.cancel()

    def all_reduce(self, send: np.ndarray, reduction: ReductionKind | str = ReductionKind.SUM,
                   op_name: str | None = None, out: np.ndarray | None = None
                   ) -> Event[np.ndarray]:
        """As ``Communicator.all_reduce``; with ``out`` of a type gloo reduces and
        contiguous, ``out`` is reduced in place (no copy at all when ``out`` is ``send``).
        Without ``out`` the result is a new array, as the contract promises: ``send`` is
        copied once into it and gloo reduces that array in place, so the call costs one copy
        more than a raw in-place ``dist.all_reduce`` and the same as one on a clone (numpy's
        copy into fresh memory, no tensor-side copy: the tensor is a view of the result).
        A type gloo reduces in a wider one (int8, int16, uint16, uint32 in int64; bool in
        uint8) is converted on the way in and back, the one copy each way its values need."""
        kind = ReductionKind.parse(reduction)
        send = np.asarray(send)
        check_out(send, out)
        carried = _reduced_as(send.dtype)
        if carried is None:
            return self._run(op_name or "all-reduce", lambda: self._gathered_reduction(
                send, kind, lambda reduced: into(out, reduced)))

        def launch() -> Launched:
            if (out is not None and carried == send.dtype and out.flags.c_contiguous
                    and out.flags.writeable):
                buffer = out
                if out is not send:
                    np.copyto(out, send)  # numpy copes with overlapping views
            else:  # out of place by contract: the one copy the result needs
                buffer = np.array(send, dtype=carried, order="C", copy=True)
            works = ([dist.all_reduce(_tensor(buffer), _OPS[kind], group=self._group,
                                      async_op=True)] if self.num_ranks > 1 else [])
            return works, lambda: into(out, buffer.astype(send.dtype, copy=False))

        return self._run(op_name or "all-reduce", launch)

    def _gathered_reduction(self, send: np.ndarray, kind: ReductionKind,
                            finish: Callable[[np.ndarray], Any]) -> Launched:
        """Every rank's ``send`` gathered and reduced here in rank order, for element types
        gloo does not reduce."""
        received = [_empty_like(send) for _ in range(self.num_ranks)]
        work = dist.all_gather([t for _, t in received], _bytes(send), group=self._group,
                               async_op=True)
        return [work], lambda: finish(reduce_arrays([a for a, _ in received], kind))

    def all_gather(self, send: np.ndarray, axis: int = 0,
                   op_name: str | None = None) -> Event[np.ndarray]:
        send = np.asarray(send)

        def launch() -> Launched:
            received = [_empty_like(send) for _ in range(self.num_ranks)]
            work = dist.all_gather([t for _, t in received], _bytes(send), group=self._group,
                                   async_op=True)
            return [work], lambda: np.concatenate([a for a, _ in received], axis=axis)

        return self._run(op_name or "all-gather", launch)

    def reduce_scatter(self, send: np.ndarray, reduction: ReductionKind | str = ReductionKind.SUM,
                       axis: int = 0, op_name: str | None = None) -> Event[np.ndarray]:
        kind = ReductionKind.parse(reduction)
        send = np.asarray(send)
        scatter_chunks_check(send, axis, self.num_ranks)
        carried = _reduced_as(send.dtype)
        if carried is None:
            return self._run(op_name or "reduce-scatter", lambda: self._gathered_reduction(
                send, kind, lambda reduced: np.split(reduced, self.num_ranks,
                                                     axis=axis)[self.current_rank]))

        def launch() -> Launched:
            chunks = [np.array(c, dtype=carried, order="C", copy=True)
                      for c in np.split(send, self.num_ranks, axis=axis)]
            out = np.empty_like(chunks[0])
            work = dist.reduce_scatter(_tensor(out), [_tensor(c) for c in chunks], _OPS[kind],
                                       group=self._group, async_op=True)
            return [work], lambda: out.astype(send.dtype, copy=False)

        return self._run(op_name or "reduce-scatter", launch)

    def broadcast(self, send: np.ndarray, root: int,
                  op_name: str | None = None) -> Event[np.ndarray]:
        self._check_rank(root, "broadcast root")
        send = np.asarray(send)

        def launch() -> Launched:
            out = np.array(send, order="C", copy=True)
            work = dist.broadcast(_bytes(out), group_src=root, group=self._group,
                                  async_op=True)
            return [work], lambda: out

        return self._run(op_name or "broadcast", launch)

    def collective_permute(self, send: np.ndarray, source_rank: int | None,
                           target_ranks: Sequence[int],
                           op_name: str | None = None) -> Event[np.ndarray]:
        self._check_rank(source_rank, "collective-permute source")
        send = np.asarray(send)

        def launch() -> Launched:
            ranks = self._world_ranks
            sent = _bytes(send)
            received, tensor = _empty_like(send)
            ops = [dist.P2POp(dist.isend, sent, ranks[t]) for t in target_ranks
                   if t != self.current_rank]
            if source_rank is not None and source_rank != self.current_rank:
                ops.append(dist.P2POp(dist.irecv, tensor, ranks[source_rank]))
            works = dist.batch_isend_irecv(ops) if ops else []

            def finish() -> np.ndarray:
                if source_rank is None:
                    return np.zeros_like(send)
                return np.array(send) if source_rank == self.current_rank else received

            return list(works), finish

        return self._run(op_name or "collective-permute", launch)

    def all_to_all(self, chunks: Sequence[np.ndarray],
                   op_name: str | None = None) -> Event[list[np.ndarray]]:
        all_to_all_chunks_check(chunks, self.num_ranks)
        arrays = [np.asarray(c) for c in chunks]
        return self._run(op_name or "all-to-all", lambda: self._exchange(arrays, arrays))

    def _exchange(self, sends: Sequence[np.ndarray], likes: Sequence[np.ndarray]) -> Launched:
        """gloo's all_to_all: ``sends[j]`` goes to rank j; rank j's buffer for this rank
        arrives shaped and typed as ``likes[j]``."""
        received = [_empty_like(like) for like in likes]
        work = dist.all_to_all([t for _, t in received], [_bytes(a) for a in sends],
                               group=self._group, async_op=True)
        return [work], lambda: [a for a, _ in received]

    def _exchange_bytes(self, sends: Sequence[np.ndarray], sizes: Sequence[int]) -> Launched:
        """gloo's all_to_all of byte pieces of any sizes (``all_to_all_single`` with splits):
        ``sends[j]`` goes to rank j, rank j sends ``sizes[j]`` bytes here."""
        sent = torch.from_numpy(np.concatenate([np.asarray(a, np.uint8) for a in sends]))
        out = np.empty(int(sum(sizes)), np.uint8)
        work = dist.all_to_all_single(torch.from_numpy(out), sent, [int(n) for n in sizes],
                                      [int(a.size) for a in sends], group=self._group,
                                      async_op=True)
        return [work], lambda: np.split(out, np.cumsum(sizes)[:-1])

    def ragged_all_to_all(self, send: np.ndarray, output: np.ndarray,
                          input_offsets: np.ndarray, send_sizes: np.ndarray,
                          output_offsets: np.ndarray, recv_sizes: np.ndarray,
                          op_name: str | None = None) -> Event[np.ndarray]:
        plan = RaggedPlan(send, output, input_offsets, send_sizes, output_offsets,
                          recv_sizes, self.num_ranks)

        def launch() -> Launched:
            sends, likes = plan.pieces()
            works, finish = self._exchange_bytes(sends, [like.size for like in likes])
            return works, lambda: plan.placed(finish())

        return self._run(op_name or "ragged-all-to-all", launch)

    def send(self, send: np.ndarray, peer: int, op_name: str | None = None) -> Event[None]:
        self._check_rank(peer, "peer")
        pair = (self.device, self.key.devices[peer])
        send = np.asarray(send)
        name = op_name or "send/recv"

        def launch() -> Launched:
            work = dist.isend(_bytes(send), self._world_ranks[peer], tag=self._tag(name, pair))
            return [work], lambda: None

        return self._run(f"{name} {pair[0]}->{pair[1]}", launch, pair, point_to_point=True)

    def recv(self, like: np.ndarray, peer: int, op_name: str | None = None) -> Event[np.ndarray]:
        self._check_rank(peer, "peer")
        like = np.asarray(like)
        pair = (self.key.devices[peer], self.device)
        name = op_name or "send/recv"

        def launch() -> Launched:
            out, tensor = _empty_like(like)
            work = dist.irecv(tensor, self._world_ranks[peer], tag=self._tag(name, pair))
            return [work], lambda: out

        return self._run(f"{name} {pair[0]}->{pair[1]}", launch, pair, point_to_point=True)

    def _tag(self, name: str, pair: tuple[int, int]) -> int:
        """gloo's tag for a transfer named ``name`` between ``pair`` (called in the launch,
        after ``_run`` counted it): a send meets only the recv of the same name and count."""
        text = f"{name} {pair[0]}->{pair[1]}"
        return zlib.crc32(f"{text}/{self._issued[text]}".encode()) & 0x7FFFFFFF

    def barrier(self, op_name: str | None = None) -> Event[None]:
        def launch() -> Launched:
            return [dist.barrier(group=self._group, async_op=True)], lambda: None

        return self._run(op_name or "barrier", launch)

    def split(self, color: int | None, key: int) -> Event[Communicator | None]:
        """Split by colour; on this backend the parent clique must be the whole world (every
        process creates every new group, as ``new_group`` requires)."""
        if sorted(self.key.devices) != sorted(self._factory.groups.world_rank):
            raise InvalidArgumentError(
                f"the torch backend splits only a clique of every device of the world, not "
                f"<{self.key}>"
            )

        def launch() -> Launched:
            mine = torch.tensor([0 if color is None else 1, color or 0, key], dtype=torch.int64)
            parts = [torch.empty_like(mine) for _ in range(self.num_ranks)]
            work = dist.all_gather(parts, mine, group=self._group, async_op=True)
            return [work], lambda: self._split_from(parts)

        return self._run("split", launch)

    def _split_from(self, parts: list[torch.Tensor]) -> Communicator | None:
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
    rank, ``timeout`` the rendezvous timeout in seconds (gloo's too, for the groups this
    factory creates). ``membership`` (see the module docstring): ``"clique"`` (default) meets
    in the store before a communicator's first operation and diagnoses a gloo timeout in the
    store; ``"operation"`` meets before every operation; ``"none"`` never meets (gloo matches
    by arrival order and a missing peer is gloo's own timeout error; the benchmark uses it to
    show what the check costs)."""

    def __init__(self, store: dist.Store, world_devices: Sequence[int], timeout: float,
                 membership: str = "clique") -> None:
        if membership not in MEMBERSHIP:
            raise InvalidArgumentError(
                f"membership {membership!r} is not one of {', '.join(MEMBERSHIP)}")
        self.groups = GroupCache(world_devices, timeout)
        self.rendezvous = StoreRendezvous(dist.PrefixStore("rv/", store), timeout)
        self.membership = membership

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

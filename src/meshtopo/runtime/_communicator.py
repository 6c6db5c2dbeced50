"""The ``Communicator`` interface (XLA's ``xla/core/collectives/communicator.h``) and ``Event``.

A communicator is one participant's handle on a clique: one instance per device. Every
operation returns an ``Event`` that means *launched*, as XLA's futures do; ``Event.wait()``
gives completion, returns the operation's result (or None) and raises what went wrong. Each
backend states when its events become ready: ``local`` launches without blocking (the event is
ready once every rank arrived and the result exists, GPU-like); ``torch`` completes the
operation before it returns (ready at once, CPU-like).

Ranks are clique ranks: positions in the clique key's device list. ``op_name`` names the
collective in rendezvous errors (an HLO instruction name, for example).
"""

from __future__ import annotations

import abc
import enum
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import numpy as np

from .._errors import InvalidArgumentError
from ..hlo import is_low_precision
from ._clique_key import CliqueKey

T = TypeVar("T")


class ReductionKind(enum.Enum):
    """XLA's ``ReductionKind`` of an all-reduce or reduce-scatter."""

    SUM = "sum"
    PRODUCT = "prod"
    MIN = "min"
    MAX = "max"

    @classmethod
    def parse(cls, value: ReductionKind | str) -> ReductionKind:
        """The kind named ``value`` (``"sum"``, ``"prod"``, ``"min"``, ``"max"``)."""
        if isinstance(value, ReductionKind):
            return value
        for kind in cls:
            if kind.value == value:
                return kind
        raise InvalidArgumentError(
            f"reduction {value!r} is not one of sum, prod, min, max (XLA's ReductionKind)"
        )


REDUCERS: dict[ReductionKind, Callable[..., np.ndarray]] = {
    ReductionKind.SUM: np.add,
    ReductionKind.PRODUCT: np.multiply,
    ReductionKind.MIN: np.minimum,
    ReductionKind.MAX: np.maximum,
}


def reduce_arrays(arrays: Sequence[np.ndarray], kind: ReductionKind) -> np.ndarray:
    """Combine ``arrays`` elementwise in rank order with ``kind`` (pred: sum is or, prod and).
    bf16 and f8 (ml_dtypes' types) are reduced in float32 and rounded once, as XLA's CPU
    collectives give them."""
    ufunc = REDUCERS[kind]
    dtype = arrays[0].dtype
    if dtype == np.bool_ and kind in (ReductionKind.SUM, ReductionKind.PRODUCT):
        ufunc = np.logical_or if kind is ReductionKind.SUM else np.logical_and
    wide = is_low_precision(dtype)
    out = np.array(arrays[0], dtype=np.float32 if wide else dtype, copy=True)
    for a in arrays[1:]:
        ufunc(out, a, out=out)
    return out.astype(dtype) if wide else out


def scatter_chunks_check(send: np.ndarray, axis: int, num_ranks: int) -> None:
    """Refuse a reduce-scatter buffer that does not split into ``num_ranks`` equal chunks
    along ``axis`` (``InvalidArgumentError``)."""
    if send.ndim == 0 or send.shape[axis] % num_ranks:
        raise InvalidArgumentError(
            f"reduce-scatter of shape {send.shape} along axis {axis} does not split into "
            f"{num_ranks} equal chunks"
        )


def check_out(send: np.ndarray, out: np.ndarray | None) -> None:
    """Refuse an ``out`` buffer that is not shaped and typed as ``send``."""
    if out is not None and (out.shape != send.shape or out.dtype != send.dtype):
        raise InvalidArgumentError(
            f"out buffer {out.dtype}{list(out.shape)} does not match the send buffer "
            f"{send.dtype}{list(send.shape)}"
        )


def into(out: np.ndarray | None, result: np.ndarray) -> np.ndarray:
    """``result`` written into ``out`` (returned), or ``result`` itself without ``out``."""
    if out is None:
        return result
    if out is not result:
        np.copyto(out, result)
    return out


def all_to_all_chunks_check(chunks: Sequence[object], num_ranks: int) -> None:
    """Refuse an all-to-all that does not give one chunk per rank (``InvalidArgumentError``)."""
    if len(chunks) != num_ranks:
        raise InvalidArgumentError(
            f"all-to-all on {num_ranks} ranks needs {num_ranks} chunks, got {len(chunks)}"
        )


class Event(Generic[T]):
    """A launched operation; ``wait()`` blocks until it completed and returns its result.

    Made ready by the backend with ``set_result`` or ``set_error``; ``waiter`` (when given)
    does the waiting itself (it is called with the timeout and returns the result)."""

    def __init__(self, waiter: Callable[[float | None], T] | None = None) -> None:
        self._done = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        self._waiter = waiter

    @classmethod
    def ready(cls, result: T) -> Event[T]:
        """An event for an operation that already completed with ``result``."""
        event: Event[T] = cls()
        event.set_result(result)
        return event

    def set_result(self, result: T) -> None:
        """Mark the operation complete with ``result``."""
        self._result = result
        self._done.set()

    def set_error(self, error: BaseException) -> None:
        """Mark the operation failed with ``error`` (raised by ``wait``)."""
        self._error = error
        self._done.set()

    def is_ready(self) -> bool:
        """True once the operation completed or failed."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> T:
        """Block until completion; return the result or raise the operation's error."""
        if self._waiter is not None and not self._done.is_set():
            try:
                self.set_result(self._waiter(timeout))
            except BaseException as error:  # the error belongs to whoever waits
                self.set_error(error)
        elif not self._done.wait(timeout):
            raise TimeoutError(f"operation not complete after {timeout} s")
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]


class Communicator(abc.ABC):
    """One participant of a clique; the collective operations of XLA's interface."""

    def __init__(self, key: CliqueKey, rank: int) -> None:
        self.key = key
        self._rank = rank

    @property
    def num_ranks(self) -> int:
        """The number of ranks in the clique."""
        return self.key.num_devices

    @property
    def current_rank(self) -> int:
        """This communicator's rank (its device's position in the clique key)."""
        return self._rank

    @property
    def device(self) -> int:
        """This communicator's global device id."""
        return self.key.devices[self._rank]

    def _check_rank(self, rank: int | None, what: str) -> None:
        if rank is not None and not 0 <= rank < self.num_ranks:
            raise InvalidArgumentError(
                f"{what} rank {rank} is out of range for a clique of {self.num_ranks} ranks"
            )

    @abc.abstractmethod
    def all_reduce(self, send: np.ndarray, reduction: ReductionKind | str = ReductionKind.SUM,
                   op_name: str | None = None, out: np.ndarray | None = None
                   ) -> Event[np.ndarray]:
        """Every rank gets the elementwise reduction of every rank's ``send``: a new array, or
        ``out`` (XLA's recv buffer, shaped and typed as ``send``; it may be ``send`` itself,
        in place) filled with it."""

    @abc.abstractmethod
    def all_gather(self, send: np.ndarray, axis: int = 0,
                   op_name: str | None = None) -> Event[np.ndarray]:
        """Every rank gets every rank's ``send`` concatenated along ``axis`` in rank order."""

    @abc.abstractmethod
    def reduce_scatter(self, send: np.ndarray, reduction: ReductionKind | str = ReductionKind.SUM,
                       axis: int = 0, op_name: str | None = None) -> Event[np.ndarray]:
        """Rank r gets chunk r (along ``axis``) of the reduction of every rank's ``send``."""

    @abc.abstractmethod
    def broadcast(self, send: np.ndarray, root: int,
                  op_name: str | None = None) -> Event[np.ndarray]:
        """Every rank gets rank ``root``'s ``send`` (the others' buffers give the shape)."""

    @abc.abstractmethod
    def collective_permute(self, send: np.ndarray, source_rank: int | None,
                           target_ranks: Sequence[int],
                           op_name: str | None = None) -> Event[np.ndarray]:
        """Send ``send`` to every rank in ``target_ranks``; get ``source_rank``'s buffer, or
        zeros of ``send``'s shape when there is no source."""

    @abc.abstractmethod
    def all_to_all(self, chunks: Sequence[np.ndarray],
                   op_name: str | None = None) -> Event[list[np.ndarray]]:
        """Chunk j goes to rank j; rank r gets, in rank order, every rank's chunk r."""

    @abc.abstractmethod
    def ragged_all_to_all(self, send: np.ndarray, output: np.ndarray,
                          input_offsets: np.ndarray, send_sizes: np.ndarray,
                          output_offsets: np.ndarray, recv_sizes: np.ndarray,
                          op_name: str | None = None) -> Event[np.ndarray]:
        """XLA's ragged all-to-all (see ``RaggedPlan``): ``output`` with the rows every rank
        sent to this one written in; ``output`` itself is not modified."""

    @abc.abstractmethod
    def send(self, send: np.ndarray, peer: int, op_name: str | None = None) -> Event[None]:
        """Send ``send`` to rank ``peer`` (matched by its ``recv``)."""

    @abc.abstractmethod
    def recv(self, like: np.ndarray, peer: int, op_name: str | None = None) -> Event[np.ndarray]:
        """Receive a buffer shaped and typed as ``like`` from rank ``peer``."""

    @abc.abstractmethod
    def barrier(self, op_name: str | None = None) -> Event[None]:
        """Complete once every rank reached the barrier."""

    @abc.abstractmethod
    def split(self, color: int | None, key: int) -> Event[Communicator | None]:
        """MPI/NCCL split, a collective over the clique (see ``split_ranks``)."""

    @abc.abstractmethod
    def abort(self) -> None:
        """Abandon pending operations: their waiters get an error."""

    @abc.abstractmethod
    def health_check(self) -> None:
        """Raise the error that made this communicator unusable, if any."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self._rank}, key=<{self.key}>)"


class Clique:
    """The communicators of one clique in this process, by rank, in rank order.

    Asking for a rank that exists but is not local returns None (normal on multi-host jobs:
    a 32-device clique with 8 communicators in each of 4 processes)."""

    def __init__(self, key: CliqueKey, communicators: dict[int, Communicator]) -> None:
        for rank, communicator in communicators.items():
            if not 0 <= rank < key.num_devices or communicator.current_rank != rank:
                raise InvalidArgumentError(
                    f"communicator {communicator!r} cannot be rank {rank} of clique <{key}>"
                )
        self.key = key
        self._communicators = dict(sorted(communicators.items()))

    def communicator(self, rank: int) -> Communicator | None:
        """The local communicator of ``rank``, or None when that rank lives elsewhere."""
        if not 0 <= rank < self.key.num_devices:
            raise InvalidArgumentError(
                f"rank {rank} is out of range for clique <{self.key}> of "
                f"{self.key.num_devices} ranks"
            )
        return self._communicators.get(rank)

    @property
    def num_communicators(self) -> int:
        """How many of the clique's ranks have a communicator in this process."""
        return len(self._communicators)

    def communicators(self) -> list[Communicator]:
        """The local communicators in rank order."""
        return list(self._communicators.values())

    def __str__(self) -> str:
        ranks = ",".join(str(r) for r in self._communicators)
        return f"Clique(key=<{self.key}>, local ranks=[{ranks}])"

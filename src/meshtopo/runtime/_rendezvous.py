"""Rendezvous: the participants of one collective agree on membership before data moves.

As XLA's ``xla/service/rendezvous.cc``: every participant joins a key; the *last* to arrive
runs the callback and every participant receives its result (or its error); the key is free
again as soon as the leader starts. Waiting has two phases: after ``warn_stuck`` seconds an
ERROR log in XLA's wording plus who has and has not arrived; after ``timeout`` seconds every
waiting participant gets a ``RendezvousError`` naming the collective, the clique and the
devices that never arrived (XLA aborts the process there; meshtopo raises instead).

Arrival never blocks (``arrive``); waiting is separate (``wait``), so one thread may launch a
collective on several communicators and then wait on each.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, cast

from .._errors import InvalidArgumentError, MeshtopoError

logger = logging.getLogger("meshtopo.runtime")

DEFAULT_TIMEOUT = 300.0
"""Seconds a participant waits for the others before a ``RendezvousError`` (XLA's CPU
collectives wait 30 minutes; a run that hangs for that long helps nobody here)."""


def warn_stuck_after(timeout: float) -> float:
    """When the stuck warning is logged: after 10 s (XLA's GPU clique value) or half the
    timeout, whichever is sooner."""
    return min(10.0, timeout / 2)


class RendezvousError(MeshtopoError):
    """A collective's participants did not all arrive within the timeout (or one failed).

    ``op_name`` is the collective, ``clique`` the clique key's text, ``missing`` and
    ``arrived`` the global device ids that did not and did arrive, ``waited`` the seconds the
    reporting participant waited (measured)."""

    def __init__(self, message: str, op_name: str, clique: str,
                 missing: Sequence[int], arrived: Sequence[int], waited: float = 0.0) -> None:
        super().__init__(message)
        self.op_name = op_name
        self.clique = clique
        self.missing = list(missing)
        self.arrived = list(arrived)
        self.waited = waited


def _ids(values: Sequence[int]) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


def stuck_message(participant: int, name: str, waited: float, expected: int,
                  arrived: Sequence[int], missing: Sequence[int]) -> str:
    """XLA's stuck warning, followed by the devices that have and have not arrived."""
    return (
        f"[id={participant}] This thread has been waiting for `{name}` for {waited:.0f} "
        f"seconds and may be stuck. Expected {expected} threads to join the rendezvous, but "
        f"not all of them arrived on time. Arrived: devices {_ids(arrived)}; not arrived: "
        f"devices {_ids(missing)}."
    )


def timeout_error(participant: int, op_name: str, clique: str, timeout: float,
                  arrived: Sequence[int], missing: Sequence[int], waited: float
                  ) -> RendezvousError:
    """The error every waiting participant gets once ``timeout`` passed."""
    expected = len(arrived) + len(missing)
    message = (
        f"rendezvous for collective `{op_name}` timed out after {timeout:g} s on device "
        f"{participant}: device(s) {_ids(missing)} never arrived (expected {expected} "
        f"participants, only {len(arrived)} arrived: {_ids(arrived)}); clique <{clique}>"
    )
    return RendezvousError(message, op_name, clique, missing, arrived, waited)


class Slot:
    """One meeting: the values of the participants so far, then the results for all."""

    def __init__(self, devices: Sequence[int], op_name: str, clique: str) -> None:
        self.devices = tuple(devices)
        self.op_name = op_name
        self.clique = clique
        self.values: list[Any] = [None] * len(devices)
        self.arrived = [False] * len(devices)
        self.count = 0
        self.condition = threading.Condition()
        self.results: list[Any] | None = None
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        """True once the leader stored the results or an error."""
        return self.results is not None or self.error is not None

    def fail(self, error: BaseException) -> None:
        """Give every participant still waiting ``error``."""
        with self.condition:
            if not self.done:
                self.error = error
            self.condition.notify_all()

    def arrived_and_missing(self) -> tuple[list[int], list[int]]:
        """The devices that did and did not arrive, in participant order."""
        arrived = [d for d, a in zip(self.devices, self.arrived, strict=True) if a]
        missing = [d for d, a in zip(self.devices, self.arrived, strict=True) if not a]
        return arrived, missing


class Rendezvous:
    """In-process meeting points for threads, keyed by any hashable key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[Hashable, Slot] = {}

    def arrive(self, key: Hashable, position: int, value: Any, devices: Sequence[int],
               op_name: str, clique: str,
               callback: Callable[[list[Any]], list[Any]]) -> Slot:
        """Record this participant's ``value``; the last arrival runs ``callback`` on every
        value (in position order), whose list gives each participant its result."""
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = Slot(devices, op_name, clique)
            if slot.arrived[position]:
                raise InvalidArgumentError(
                    f"device {slot.devices[position]} joined the rendezvous for `{op_name}` "
                    f"twice (clique <{clique}>)"
                )
            slot.values[position] = value
            slot.arrived[position] = True
            slot.count += 1
            leader = slot.count == len(slot.devices)
            if leader:
                del self._slots[key]
        if leader:
            try:
                results = callback(slot.values)
            except BaseException as error:  # every participant gets the callback's error
                slot.fail(error)
            else:
                with slot.condition:
                    slot.results = results
                    slot.condition.notify_all()
        return slot

    @staticmethod
    def wait(slot: Slot, position: int, timeout: float, warn_stuck: float | None = None,
             started: float | None = None) -> Any:
        """Block until ``slot`` completes and return this participant's result; log the
        stuck warning after ``warn_stuck`` s and raise ``RendezvousError`` after ``timeout``
        s, both counted from ``started`` (default now)."""
        start = time.monotonic() if started is None else started
        warn_at = start + (warn_stuck_after(timeout) if warn_stuck is None else warn_stuck)
        deadline = start + timeout
        warned = False
        device = slot.devices[position]
        with slot.condition:
            while not slot.done:
                now = time.monotonic()
                if now >= deadline:
                    arrived, missing = slot.arrived_and_missing()
                    raise timeout_error(device, slot.op_name, slot.clique, timeout, arrived,
                                        missing, now - start)
                if not warned and now >= warn_at:
                    warned = True
                    arrived, missing = slot.arrived_and_missing()
                    logger.error(stuck_message(device, slot.op_name, now - start,
                                               len(slot.devices), arrived, missing))
                slot.condition.wait(min(deadline, warn_at if not warned else deadline) - now)
        if slot.error is not None:
            raise slot.error
        if warned:
            logger.error("Thread is unstuck! Warning above was a false-positive. Perhaps the "
                         "timeout is too short.")
        return cast(list[Any], slot.results)[position]


def combined(errors: Sequence[RendezvousError]) -> RendezvousError:
    """One error for a run in which several devices timed out: every device's message (each
    names the instruction it waited in and who never came; a message several gave, once),
    the first one's fields."""
    first = errors[0]
    messages = list(dict.fromkeys(str(e) for e in errors))
    if len(messages) == 1:
        return first
    missing = sorted({d for e in errors for d in e.missing})
    message = f"{len(errors)} devices timed out in a rendezvous: " + " | ".join(messages)
    return RendezvousError(message, first.op_name, first.clique, missing, first.arrived,
                           max(e.waited for e in errors))

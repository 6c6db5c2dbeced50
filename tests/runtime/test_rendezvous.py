"""The rendezvous on the local backend: the stuck warning, then an error naming the collective
and the devices that never came, after waiting at least the timeout; a late arrival completes
the meeting; opposite-order collectives end in the error. Waits are on events, with generous
bounds; nothing asserts how long the machine took."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.runtime import CliqueKey, LocalFactory, RendezvousError

from ._faults import OPPOSITE_ORDER


@pytest.mark.timeout(30)
def test_missing_rank_warns_then_errors_within_timeout(caplog: pytest.LogCaptureFixture) -> None:
    factory = LocalFactory(timeout=2.0)
    communicators = factory.create_clique(CliqueKey((4, 6, 5, 7))).communicators()
    events = [c.all_reduce(np.ones(3), op_name="%grad_sum") for c in communicators[:3]]
    with caplog.at_level(logging.ERROR, logger="meshtopo.runtime"):
        with pytest.raises(RendezvousError) as caught:
            events[0].wait()
        for event in events[1:]:
            with pytest.raises(RendezvousError):
                event.wait()
    error = caught.value
    assert error.waited >= 2.0  # never gives up before the timeout
    assert error.missing == [7] and error.arrived == [4, 6, 5]
    assert error.op_name == "%grad_sum"
    assert "`%grad_sum` timed out after 2 s on device 4: device(s) [7] never arrived" in str(error)
    assert "clique <devices=[4,6,5,7]; is_p2p=0" in str(error)
    stuck = [r.getMessage() for r in caplog.records if "may be stuck" in r.getMessage()]
    assert stuck and stuck[0].startswith("[id=4] This thread has been waiting for `%grad_sum` for")
    assert "Expected 4 threads to join the rendezvous, but not all of them arrived on time." in stuck[0]
    assert stuck[0].endswith("Arrived: devices [4,6,5]; not arrived: devices [7].")


class _Seen(logging.Handler):
    """Sets ``event`` when a record containing ``text`` is logged."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.ERROR)
        self.text = text
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


@pytest.mark.timeout(60)
def test_late_arrival_completes_and_logs_unstuck(caplog: pytest.LogCaptureFixture) -> None:
    # The stuck warning comes at half the timeout; the second device arrives once it is seen,
    # with the other half (4 s) to spare.
    factory = LocalFactory(timeout=8.0)
    a, b = factory.create_clique(CliqueKey((0, 1))).communicators()
    stuck = _Seen("may be stuck")
    runtime_logger = logging.getLogger("meshtopo.runtime")
    runtime_logger.addHandler(stuck)
    first = a.all_gather(np.array([1]))
    gathered: list[list[int]] = []
    waiter = threading.Thread(target=lambda: gathered.append(first.wait().tolist()))
    try:
        with caplog.at_level(logging.ERROR, logger="meshtopo.runtime"):
            waiter.start()
            assert stuck.event.wait(30), "no stuck warning"
            second = b.all_gather(np.array([2]))
            assert second.wait().tolist() == [1, 2]
            waiter.join(30)
    finally:
        runtime_logger.removeHandler(stuck)
    assert not waiter.is_alive()
    assert gathered == [[1, 2]]
    assert any("Thread is unstuck!" in r.getMessage() for r in caplog.records)


def test_mismatched_operations_are_an_error_for_everyone() -> None:
    factory = LocalFactory(timeout=5.0)
    a, b = factory.create_clique(CliqueKey((0, 1))).communicators()
    events = [a.all_reduce(np.ones(2), op_name="op"), b.all_gather(np.ones(2), op_name="op")]
    for event in events:
        with pytest.raises(mt.InvalidArgumentError, match="issued different operations"):
            event.wait()


def test_abort_wakes_the_waiters() -> None:
    factory = LocalFactory(timeout=30.0)
    a, b = factory.create_clique(CliqueKey((0, 1))).communicators()
    event = a.barrier()
    a.abort()
    with pytest.raises(mt.MeshtopoError, match="was aborted"):
        event.wait()
    with pytest.raises(mt.MeshtopoError, match="was aborted"):
        a.health_check()
    b.health_check()


@pytest.mark.timeout(30)
def test_opposite_order_conditional_ends_in_the_rendezvous_error() -> None:
    module = mt.hlo.parse_module(OPPOSITE_ORDER)
    with pytest.raises(RendezvousError) as caught:
        mt.runtime.execute(module, timeout=1.5)
    assert caught.value.waited >= 1.5
    message = str(caught.value)
    assert "2 devices timed out" in message
    assert ("11:3: instruction %ar_a (all-reduce) on device 0: rendezvous for collective "
            "`channel_id=1#0` timed out after 1.5 s on device 0: device(s) [1] never arrived"
            ) in message
    assert ("17:3: instruction %ag_b (all-gather) on device 1: rendezvous for collective "
            "`channel_id=2#0` timed out after 1.5 s on device 1: device(s) [0] never arrived"
            ) in message

"""Schedules in the Chrome trace event format (Perfetto, ``chrome://tracing``).

One track per device (``tid`` = device id), one complete slice (``ph: X``) per collective from
its issue to its wait (a sync op spans one step; an async start..done its whole flight; one
that never completes runs to the end of the trace with ``args.blocked``), a flow (``s``/``f``)
joining the participants of each rendezvous shown, and an instant event (``ph: i``) per
finding on each involved device. Time is logical: 10 us per step.

Bound: O(arrivals of the devices shown); ``DEVICE_LIMIT`` devices at most per trace.
"""

from __future__ import annotations

from collections import defaultdict

from .._errors import LimitError
from ._report import Report

STEP_US = 10
DEVICE_LIMIT = 4096


def chrome_trace(report: Report, devices: list[int] | None = None) -> dict[str, object]:
    """The trace of ``devices`` (default: every device analysed) as a JSON-ready dict."""
    shown = report.devices.tolist() if devices is None else list(devices)
    if len(shown) > DEVICE_LIMIT:
        raise LimitError(f"a trace of {len(shown)} {report.unit}s is more than {DEVICE_LIMIT}; "
                         f"choose the {report.unit}s to show")
    events: list[dict[str, object]] = [
        {"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "meshtopo order"}}]
    schedules = {d: report.schedule(d, taken_only=True) for d in shown}
    horizon = 1 + max((max(a.step, a.end) for s in schedules.values() for a in s), default=0)
    rendezvous: dict[tuple[object, ...], list[tuple[int, int]]] = defaultdict(list)
    first_step: dict[tuple[int, str], int] = {}
    for device, schedule in schedules.items():
        events.append({"ph": "M", "pid": 0, "tid": device, "name": "thread_name",
                       "args": {"name": f"{report.unit} {device}"}})
        for arrival in schedule:
            entry = arrival.entry
            start = arrival.step if arrival.step >= 0 else horizon
            end = arrival.end if arrival.end >= 0 else horizon
            blocked = arrival.end < 0
            events.append({
                "ph": "X", "pid": 0, "tid": device, "name": entry.name, "cat": entry.stream,
                "ts": start * STEP_US, "dur": max(end - start, 1) * STEP_US,
                "args": {"opcode": entry.opcode, "clique": list(arrival.clique),
                         "rank": arrival.rank, "position": arrival.position,
                         "shape": entry.shape, "line": entry.line, "blocked": blocked},
            })  # fmt: skip
            first_step.setdefault((device, entry.name), start)
            if arrival.step >= 0:
                key = (entry.stream, entry.channel_id if entry.stream == "send-recv" else None,
                       arrival.clique, arrival.position)
                rendezvous[key].append((device, arrival.step))
    for number, members in enumerate(m for m in rendezvous.values() if len(m) > 1):
        (source, step), rest = members[0], members[1:]
        events.append({"ph": "s", "pid": 0, "tid": source, "id": number, "name": "rendezvous",
                       "cat": "rendezvous", "ts": step * STEP_US})
        events.extend({"ph": "f", "bp": "e", "pid": 0, "tid": device, "id": number,
                       "name": "rendezvous", "cat": "rendezvous", "ts": at * STEP_US}
                      for device, at in rest)
    for finding in report.findings:
        for device in finding.devices:
            if device not in schedules:
                continue
            at = min((first_step[(device, name)] for name in finding.instructions
                      if (device, name) in first_step), default=horizon)
            events.append({"ph": "i", "s": "t", "pid": 0, "tid": device, "name": finding.type,
                           "ts": at * STEP_US, "args": {"message": finding.message}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}

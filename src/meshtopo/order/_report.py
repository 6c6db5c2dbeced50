"""``Report``: what ``analyze`` and ``from_flight_recorder`` return."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._checks import is_int
from .._errors import InvalidArgumentError
from ._entry import Arrival, Finding


@dataclass
class Report:
    """The findings (``[]`` when clean), the devices analysed (global device ids, or ranks for
    Flight Recorder), the programs' entry counts, and each device's schedule on request.

    ``unit`` is ``device`` or ``rank``; ``spmd`` says whether one program ran everywhere (its
    schedules then share one sequence and are mapped to cliques per device on request).
    ``notes`` say how the input was read where it matters to the answer (e.g. group members
    recovered from Flight Recorder entries, or a conditional whose branch could not be told).
    """

    findings: list[Finding]
    devices: np.ndarray
    unit: str
    spmd: bool
    entry_counts: list[int]
    _schedule: Callable[[int], Sequence[Arrival]] = field(repr=False)
    notes: list[str] = field(default_factory=list)
    _taken_schedule: Callable[[int], Sequence[Arrival]] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """True when there are no findings."""
        return not self.findings

    def schedule(self, device: int, taken_only: bool = False) -> Sequence[Arrival]:
        """The collectives ``device`` issues, in issue order, each with its clique, rank and
        position on the clique: a read-only sequence of ``Arrival``. An SPMD program that
        shares one order gives a ``Schedule``, O(steps) numpy work for the device (after one
        pass over the steps and O(devices) per distinct group list, once per report), whose
        arrivals are made when read; a replayed program gives a list.

        An SPMD program that shares one order lists every branch of a conditional (positions
        counted over all of them) unless ``taken_only``: then only the branches the device
        takes where its selector can be evaluated, which is ``mt.order.issue_order``'s order
        and what the devices pair by arrival. A replayed program (MPMD, or SPMD with
        send/recv or overlapping groups) always lists only the branches taken."""
        self._check(device)
        if taken_only and self._taken_schedule is not None:
            return self._taken_schedule(int(device))
        return self._schedule(int(device))

    def schedule_head(self, device: int, limit: int,
                      taken_only: bool = False) -> tuple[list[Arrival], int]:
        """The first ``limit`` arrivals of ``schedule(device, taken_only)`` and the length of
        the whole schedule: what a view showing the start of a long schedule needs, without
        making every arrival (an SPMD program that shares one order makes only those
        shown, see ``schedule``)."""
        self._check(device)
        if not is_int(limit) or limit < 0:
            raise InvalidArgumentError(f"limit must be an int >= 0, got {limit!r}")
        arrivals = self.schedule(device, taken_only)
        return list(arrivals[:limit]), len(arrivals)

    def _check(self, device: int) -> None:
        at = int(np.searchsorted(self.devices, device)) if isinstance(
            device, int | np.integer) else -1
        if at < 0 or at >= self.devices.size or int(self.devices[at]) != int(device):
            raise InvalidArgumentError(
                f"{self.unit} {device!r} is not one of the {self.devices.size} {self.unit}s "
                f"analysed")

    def to_json(self, devices: list[int] | None = None,
                taken_only: bool = False) -> dict[str, object]:
        """JSON-ready answer (docs/cli-json.md): findings and, for ``devices``, schedules
        (``taken_only`` as for ``schedule``)."""
        shown = [] if devices is None else devices
        return {
            "unit": self.unit,
            "spmd": self.spmd,
            "devices": int(self.devices.size),
            "entries": self.entry_counts,
            "findings": [f.to_json() for f in self.findings],
            "notes": self.notes,
            "schedules": {str(d): [_arrival_json(a) for a in self.schedule(d, taken_only)]
                          for d in shown},
            "ok": self.ok,
        }


def _arrival_json(arrival: Arrival) -> dict[str, object]:
    entry = arrival.entry
    return {
        "name": entry.name, "opcode": entry.opcode, "stream": entry.stream,
        "clique": list(arrival.clique), "rank": arrival.rank, "position": arrival.position,
        "shape": entry.shape, "dtype": entry.dtype, "reduction": entry.reduction,
        "done": entry.done, "line": entry.line, "column": entry.column,
        "program": entry.program, "loops": [[n, t] for n, t in entry.loops],
        "branches": [[n, b] for n, b in entry.branches],
        "iteration": [[n, i] for n, i in arrival.iteration],
        "step": arrival.step, "end": arrival.end,
    }

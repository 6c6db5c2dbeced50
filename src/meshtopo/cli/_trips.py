"""How many times each collective is issued, as ``replay`` and ``inspect --cluster`` say it:
the order layer's run of the program (``IssueOrders.trip_counts``: loops for as many
iterations as the devices run them, ``known_trip_count`` where the condition is not known),
keyed by (computation, name)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import MeshtopoError
from ..groups._placement import DeviceAssignment

if TYPE_CHECKING:  # the HLO and order layers load only when counts are asked for
    from ..hlo import Module

TripCounts = dict[tuple[str, str], int | None]


def trip_counts(module: Module, assignment: DeviceAssignment | None = None
                ) -> tuple[TripCounts | None, str | None]:
    """Each collective's issues per device under ``assignment`` (None: the module's table),
    and None; or None and the reason, when the program cannot be run for its devices (the
    counts are then unknown)."""
    from ..order import issue_orders

    try:
        return issue_orders(module, None, assignment).trip_counts, None
    except MeshtopoError as error:
        return None, f"loop trip counts not worked out ({error}): each collective counted once"


def trip_text(count: int | None) -> str:
    """What a collective's count adds to its line: nothing for 1, ``x8 (loop trip count)``,
    ``x0 (no device issues it)``, or that a loop's data decides it (None)."""
    if count is None:
        return "trip count unknown (a loop around it runs as its data decides): counted once"
    if count == 0:
        return "x0 (no device issues it)"
    return "" if count == 1 else f"x{count} (loop trip count)"

"""The cells ``inspect`` prints, shared by the terminal table and the HTML report.

Sizes are per device. ``bytes`` is the payload buffer one device holds (see
``Collective.bytes``); ``wire_bytes`` is what one device sends over the links for it under the
bandwidth-optimal (ring) algorithm of its opcode, with n the group size:

====================================  =============================================
all-reduce                            2 (n-1)/n x payload (reduce-scatter + all-gather)
all-gather                            (n-1)/n x payload (the gathered result)
reduce-scatter                        (n-1)/n x payload (the full operand)
all-to-all                            (n-1)/n x payload (keeps its own 1/n)
collective-permute, send, recv        payload (a source sends its buffer once)
collective-broadcast                  payload (each device forwards it once)
ragged-all-to-all                     unknown (the sizes are data)
====================================  =============================================

A start or async-start counts as its operation; the -done and async-update/-done forms move
nothing more (``0``). A group of one device sends nothing. Sizes are rounded down to bytes.
"""

from __future__ import annotations

from ...hlo import base_opcode
from .._render import groups_text, plural
from ._rows import Pattern, Row

GROUPS_SHOWN = 4
"""Device groups written out per collective in the terminal table before ``...``."""
TEXT_WIDTH = 48
"""Longest groups text in a terminal table cell before it is cut with ``...``."""

_RING = {"all-gather": 1, "reduce-scatter": 1, "all-to-all": 1, "all-reduce": 2}
_WHOLE = frozenset({"collective-permute", "send", "recv", "collective-broadcast"})
_NO_TRAFFIC = frozenset({"async-update", "async-done", "send-done", "recv-done"})


def wire_bytes(row: Row) -> int | None:
    """Bytes one device sends for this collective (formula in the module docstring); None
    when the payload or the group size is unknown, or for ragged-all-to-all."""
    opcode = row.underlying_opcode
    if row.opcode.endswith("-done") or row.opcode in _NO_TRAFFIC:
        return 0
    if row.bytes is None or row.pattern.error is not None:
        return None
    base = base_opcode(opcode)
    if base in _WHOLE:
        return row.bytes
    factor = _RING.get(base)
    n = row.pattern.group_size
    if factor is None or n is None:
        return None
    if n <= 1:
        return 0
    return factor * (n - 1) * row.bytes // n


def short(text: str, width: int = TEXT_WIDTH) -> str:
    """``text`` cut to ``width`` characters with ``...`` when longer."""
    return text if len(text) <= width else text[: width - 3] + "..."


def device_groups_text(pattern: Pattern, full: bool = False) -> str:
    """The device groups, abbreviated after ``GROUPS_SHOWN`` groups and ``TEXT_WIDTH`` chars
    unless ``full``."""
    if pattern.error is not None:
        return "error"
    if full:
        return groups_text(pattern.device_groups, limit=max(1, len(pattern.device_groups)))
    return short(groups_text(pattern.device_groups, limit=GROUPS_SHOWN))


def shape_text(pattern: Pattern) -> str:
    """``4x2`` (group count x size), ``3 pairs``, ``4xragged``, or ``-`` after an error."""
    if pattern.error is not None:
        return "-"
    if pattern.is_pairs:
        return plural(pattern.group_count, "pair")
    size = "ragged" if pattern.group_size is None else str(pattern.group_size)
    return f"{pattern.group_count}x{size}"


def bytes_text(size: int | None) -> str:
    """``512 B``, ``4.0 KiB``, ``1.5 MiB``; ``-`` when unknown."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def flags_text(pattern: Pattern) -> str:
    """Space-separated flags: ``ids!=devices``, ``unsorted``, ``error``."""
    flags = []
    if pattern.ids_differ:
        flags.append("ids!=devices")
    if pattern.ascending is False:
        flags.append("unsorted")
    if pattern.error is not None:
        flags.append("error")
    return " ".join(flags)

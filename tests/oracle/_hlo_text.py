"""Collective attributes read from compiled HLO text, as written (text only).

A small regex extraction for the oracle tests; meshtopo's own HLO parser is what the tests
check, so this deliberately stays independent of it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

_COLLECTIVE_OPCODES = (
    "all-reduce-start",
    "all-reduce",
    "all-gather-start",
    "all-gather",
    "reduce-scatter",
    "collective-permute-start",
    "collective-permute",
    "all-to-all",
    "ragged-all-to-all",
    "collective-broadcast",
)


@dataclasses.dataclass(frozen=True)
class HloCollective:
    """One collective instruction as written in compiled HLO text (attribute text only)."""

    name: str
    opcode: str
    replica_groups: str | None  # the attribute's value text, e.g. "{{0,4},{1,5}}"; None if absent
    source_target_pairs: str | None
    channel_id: int | None
    use_global_device_ids: bool | None
    line: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------------------------
# HLO text extraction (attribute text only; the real parser lives in meshtopo.hlo)
# --------------------------------------------------------------------------------------------

_INSTR_RE = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*.*?\s(?P<opcode>"
    + "|".join(re.escape(op) for op in _COLLECTIVE_OPCODES)
    + r")\("
)
_IOTA_RE = re.compile(r"\[\d+(?:,\d+)*\]<=\[\d+(?:,\d+)*\](?:T\(\d+(?:,\d+)*\))?")


def _balanced(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket that closes the one at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced {open_}{close} in: {text[start : start + 200]}")


def _attribute_value(line: str, name: str) -> str | None:
    """The text of ``name=<value>`` in an HLO instruction line, for the three group forms."""
    key = f" {name}="
    at = line.find(key)
    if at < 0:
        return None
    start = at + len(key)
    if line.startswith("{", start):
        return line[start : _balanced(line, start, "{", "}")]
    if line.startswith("mesh[", start):
        end = _balanced(line, start + 4, "[", "]")
        if line.startswith(", device_ids=(", end):
            end = _balanced(line, end + len(", device_ids="), "(", ")")
        if line.startswith(" {", end):
            end = _balanced(line, end + 1, "{", "}")
        return line[start:end]
    match = _IOTA_RE.match(line, start)
    if match is None:
        raise ValueError(f"unrecognised {name}= value in: {line}")
    return match.group(0)


def extract_collectives(hlo_text: str) -> tuple[HloCollective, ...]:
    """Every collective instruction in ``hlo_text``, in text order, with its attribute text."""
    found = []
    for line in hlo_text.splitlines():
        match = _INSTR_RE.match(line)
        if match is None:
            continue
        channel = re.search(r"\bchannel_id=(\d+)", line)
        global_ids = re.search(r"\buse_global_device_ids=(true|false)", line)
        found.append(
            HloCollective(
                name=match.group("name"),
                opcode=match.group("opcode"),
                replica_groups=_attribute_value(line, "replica_groups"),
                source_target_pairs=_attribute_value(line, "source_target_pairs"),
                channel_id=int(channel.group(1)) if channel else None,
                use_global_device_ids=(global_ids.group(1) == "true") if global_ids else None,
                line=line.strip(),
            )
        )
    return tuple(found)


def header_counts(hlo_text: str) -> tuple[int, int]:
    """(replica_count, num_partitions) from the ``HloModule`` header line; 1 when absent."""
    header = next((ln for ln in hlo_text.splitlines() if ln.startswith("HloModule")), "")
    replicas = re.search(r"\breplica_count=(\d+)", header)
    partitions = re.search(r"\bnum_partitions=(\d+)", header)
    return (
        int(replicas.group(1)) if replicas else 1,
        int(partitions.group(1)) if partitions else 1,
    )


def parse_int_pairs(text: str) -> list[tuple[int, int]]:
    """``{{0,1},{1,2}}`` -> ``[(0, 1), (1, 2)]`` (source_target_pairs text)."""
    return [(int(a), int(b)) for a, b in re.findall(r"\{\s*(-?\d+)\s*,\s*(-?\d+)\s*\}", text)]

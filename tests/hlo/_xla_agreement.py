"""Agreement with XLA's own parser (jaxlib's ``hlo_module_from_text``), which the reader's
tests compare against: where XLA refuses a text and in what words, and what it reads of the
collectives of a text it takes."""

from __future__ import annotations

import io
import re

import pytest

import meshtopo as mt
from meshtopo import hlo

from ._text import ADD


def module_text(*lines: str) -> str:
    """A module whose entry ``%main`` holds ``%p = f32[8]{0} parameter(0)``, then ``lines``
    (its root among them), after the ``%add`` reduction."""
    body = "\n".join(f"  {line}" for line in lines)
    return (f"HloModule m\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
            f"  %p = f32[8]{{0}} parameter(0)\n{body}\n}}\n")


def xla_position(text: str) -> tuple[int, int] | None:
    """(line, column) of XLA's first parse error, or None when it reads ``text``."""
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    try:
        hlo_module_from_text(text)
    except Exception as error:  # jaxlib raises its own status error
        found = re.search(r"was parsing (\d+):(\d+)", str(error))
        assert found is not None, str(error)
        return int(found.group(1)), int(found.group(2))
    return None


# The collectives whose fields XLA prints on the instruction itself.
PRINTED_COLLECTIVES = frozenset({
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
    "collective-permute", "collective-broadcast", "all-reduce-start", "all-gather-start",
    "collective-permute-start",
})  # fmt: skip


def xla_collectives(text: str) -> dict[str, tuple[object, ...]]:
    """Each collective of the module XLA reads from ``text``, by name: its opcode, its
    groups as XLA prints them, its pairs, channel_id and use_global_device_ids."""
    from jaxlib._hlo import hlo_module_from_text

    found: dict[str, tuple[object, ...]] = {}
    for computation in hlo_module_from_text(text).computations():
        for instruction in computation.instructions():
            opcode = re.sub(r"(?<!^)(?=[A-Z])", "-", instruction.opcode.name[1:]).lower()
            if opcode not in PRINTED_COLLECTIVES:
                continue
            printed = instruction.to_string()
            groups = re.search(r"replica_groups=(\S+?)(?=, |$)", printed)
            pairs = re.search(r"source_target_pairs=(\S+?)(?=, |$)", printed)
            channel = re.search(r"channel_id=(-?[0-9]+)", printed)
            flag = re.search(r"use_global_device_ids=(true|false)", printed)
            found[instruction.name] = (
                opcode, groups.group(1) if groups else None,
                [int(n) for n in re.findall(r"-?[0-9]+", pairs.group(1))] if pairs else None,
                int(channel.group(1)) if channel else None, flag is not None and flag.group(1) == "true")
    return found


def collectives(module: hlo.Module) -> dict[str, tuple[object, ...]]:
    """``xla_collectives`` of what meshtopo reads."""
    return {c.name: (c.opcode, None if c.replica_groups is None else str(c.replica_groups),
                     None if c.source_target_pairs is None
                     else [n for pair in c.source_target_pairs for n in pair],
                     c.channel_id, bool(c.use_global_device_ids))
            for c in module.collectives if c.opcode in PRINTED_COLLECTIVES}


def agrees_with_xla(text: str) -> None:
    expected = xla_position(text)
    if expected is None:
        assert collectives(hlo.parse_module(text)) == xla_collectives(text)
        return
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert (info.value.line, info.value.column) == expected, info.value.message
    with pytest.raises(mt.HloParseError) as streamed:
        list(hlo.iter_collectives(io.StringIO(text), progress=False, block_size=64))
    assert (streamed.value.line, streamed.value.column) == expected, streamed.value.message


def xla_message(text: str) -> str:
    from jaxlib._hlo import hlo_module_from_text

    try:
        hlo_module_from_text(text)
    except Exception as error:  # jaxlib raises its own status error
        found = re.search(r"was parsing \d+:\d+: error: ([^\n]*)", str(error))
        assert found is not None, str(error)
        return found.group(1)
    raise AssertionError("XLA read it")


def agrees_in_xla_words(text: str) -> None:
    """``agrees_with_xla``, and where XLA refuses ``text``, in XLA's words (its first
    line)."""
    agrees_with_xla(text)
    if xla_position(text) is not None:
        with pytest.raises(mt.HloParseError) as info:
            hlo.parse_module(text)
        assert info.value.message.split("\n")[0] == xla_message(text)


def inferred_root_agrees(text: str) -> None:
    """The root of ``text``'s entry, written without its shape, has the shape XLA infers,
    layouts aside (XLA gives an inferred shape a layout; meshtopo keeps its first operand's,
    or none)."""
    from jaxlib._hlo import hlo_module_from_text

    ours = hlo.parse_module(text).entry.root
    xla = hlo.parse_module(hlo_module_from_text(text).to_string()).entry.root
    assert ours.shape_text, "not inferred"
    assert hlo.parse_shape(ours.shape_text).compatible(hlo.parse_shape(xla.shape_text))

"""Reading a module with the reader's one-line fast paths turned off, to compare with them on."""

from __future__ import annotations

import pytest

import meshtopo as mt
from meshtopo import hlo


def structure(module: hlo.Module) -> list[tuple[object, ...]]:
    """Every computation and instruction of ``module`` as the reader found it, positions,
    attributes and each collective's decoded fields included."""
    return [(c.name, c.is_entry, c.line, c.signature, c.execution_thread,
             [(i.name, i.opcode, i.shape_text, i.operands, i.line, i.column, i.is_root,
               i.text, i.attribute_list, i.called_computations, i.control_predecessors,
               i.inline_shapes, None if i.collective is None else collective_fields(i.collective))
              for i in c.instructions])
            for c in module.computations.values()]


def collective_fields(collective: hlo.Collective) -> tuple[object, ...]:
    """Everything ``collective`` decoded and linking set, the instruction's name and mode."""
    written = collective.decoded._replace(groups_text=collective.groups_text)
    return (collective.name, collective.opcode, written, collective.mode, collective.start,
            collective.wrapped_opcode)


def turn_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn off the fast paths for the rest of a test (``MESHTOPO_HLO_FAST_PATHS=0``, read
    when a read starts): the general reader reads every line."""
    monkeypatch.setenv("MESHTOPO_HLO_FAST_PATHS", "0")


def errors_both_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The error reading ``text`` gives with the fast paths on, then off (turned off after)."""
    errors = []
    for fast in (True, False):
        if not fast:
            turn_off(monkeypatch)
        with pytest.raises(mt.HloParseError) as error:
            hlo.parse_module(text)
        errors.append(str(error.value))
    return errors[0], errors[1]

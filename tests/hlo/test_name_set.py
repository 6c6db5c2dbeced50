"""The stream's bounded name set: the same answers as a set, past its merges."""

from __future__ import annotations

import io

import pytest

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo._name_set import NameSet

from ._text import entry_head


def test_answers_like_a_set_across_merges() -> None:
    names = NameSet()
    added = [f"%n.{i}" for i in range(3 * NameSet._MERGE + 17)]
    for name in added:
        assert name not in names
        names.add(name)
    assert all(name in names for name in added)
    assert not any(f"%m.{i}" in names for i in range(5000))


def test_stream_finds_a_duplicate_name_long_after_its_first_use() -> None:
    count = 2 * NameSet._MERGE + 5
    lines = [f"  %c.{i} = f32[8]{{0}} copy(%p)\n" for i in range(count)]
    lines.append("  %c.3 = f32[8]{0} copy(%p)\n")
    text = entry_head("HloModule m") + "".join(lines) + "}\n"
    with pytest.raises(mt.HloParseError, match=r"instruction already exists: c\.3") as info:
        list(hlo.iter_collectives(io.StringIO(text), progress=False, block_size=1 << 16))
    assert info.value.line == text.count("\n") - 1

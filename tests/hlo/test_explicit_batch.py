"""Long explicit replica-group lists checked by the fast pattern and converted on first use:
the same groups as the exact reader, the same errors at the same line:column, in text order."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo._explicit import explicit_list

from ._text import entry_head

HEAD = entry_head("HloModule m, num_partitions=2048")


def text_of(groups: list[list[int]]) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def line(name: str, groups: str, operand: str = "p") -> str:
    return (f"  %{name} = f32[8]{{0}} all-reduce(%{operand}), channel_id=1, replica_groups={groups}, "
            f"use_global_device_ids=true, to_apply=%add\n")


def module(groups: list[str]) -> str:
    lines = [line(f"ar{i}", g, "p" if i == 0 else f"ar{i - 1}") for i, g in enumerate(groups)]
    return HEAD + "".join(lines) + "}\n"


LONG = list(range(300))


@given(st.lists(st.lists(st.integers(0, 10**17), min_size=1, max_size=40), min_size=1,
                max_size=20))
@settings(max_examples=60, deadline=None)
def test_fast_lists_read_like_the_exact_reader(groups: list[list[int]]) -> None:
    texts = [text_of(groups), text_of([g[::-1] for g in groups]), text_of([[i for g in groups for i in g]])]
    for text in texts:
        found = explicit_list(text)
        assert found is not None
        assert found.replica_groups == mt.CollectiveDeviceList.parse(text).replica_groups


@pytest.mark.parametrize(
    "text",
    ["{{0,1},{}}", "{{1, 2}}", "{{1,,2}}", "{{,1}}", "{{1,}}", "{{1}{2}}", "{{1},,{2}}",
     "{{-1,2}}", "{{+1,2}}", "{{1},{{2}}", "{{}}", "{{1000000000000000000}}", "{{1\t,2}}",
     "{{0x1}}", "{{1;2}}", "{{é}}"],
)
def test_anything_else_is_left_to_the_exact_reader(text: str) -> None:
    assert explicit_list(text) is None


def test_module_of_distinct_long_lists() -> None:
    texts = [text_of([LONG[i:] + LONG[:i]]) for i in range(40)]
    texts += [text_of([LONG[:150], LONG[150:]])] * 3 + [text_of([[i, i + 1] for i in range(0, 400, 2)])]
    collectives = hlo.parse_module(module(texts)).collectives
    assert [c.groups_text for c in collectives] == texts
    for c, text in zip(collectives, texts, strict=True):
        assert c.replica_groups == mt.CollectiveDeviceList.parse(text)
    streamed = list(hlo.iter_collectives(io.StringIO(module(texts)), progress=False,
                                         block_size=4096))
    assert [c.replica_groups for c in streamed] == [c.replica_groups for c in collectives]


def test_errors_in_long_lists_keep_their_position_and_text_order() -> None:
    bad = "{{" + ",".join(map(str, LONG)) + ",,1}}"
    good = text_of([LONG])
    with pytest.raises(mt.HloParseError) as first:
        hlo.parse_module(module([good, bad, good]))
    assert first.value.line == 10
    column = line("ar1", bad, "ar0").index("{{") + 1
    with pytest.raises(mt.HloParseError) as exact:
        mt.CollectiveDeviceList.parse(bad, 10, column)
    # The same place; in a module, XLA's words (the groups layer's own words stand alone).
    assert (first.value.column, first.value.message) == (exact.value.column, "expects integer")
    # A later error of another kind does not hide the earlier list's.
    later = (HEAD + line("ar0", good) + line("ar1", bad, "ar0")
             + "  %r = f32[8]{0} all-reduce(%p), channel_id=1, channel_id=2, to_apply=%add\n}\n")
    with pytest.raises(mt.HloParseError) as both:
        hlo.parse_module(later)
    assert (both.value.line, both.value.column) == (10, first.value.column)


def test_long_list_past_the_device_limit() -> None:
    column = line("ar1", "", "ar0").index("replica_groups=") + len("replica_groups=") + 1
    with mt.device_limit(200), pytest.raises(mt.LimitError, match=f"^10:{column}: replica_groups"):
        hlo.parse_module(module([text_of([LONG[:150]]), text_of([LONG])]))


def test_empty_group_in_a_long_list_is_read_as_written() -> None:
    text = text_of([LONG, []])
    (c,) = hlo.parse_module(module([text])).collectives
    assert c.replica_groups.group_sizes.tolist() == [300, 0]


def test_a_list_converted_on_use_copies_before_and_after_conversion() -> None:
    text = text_of([LONG[:150], LONG[150:]])
    before = explicit_list(text)
    assert before is not None
    early = mt.CollectiveDeviceList(before)
    assert before.group_sizes.tolist() == [150, 150]
    late = mt.CollectiveDeviceList(before)
    assert early == late == before == mt.CollectiveDeviceList.parse(text)
    assert late.replica_groups == early.replica_groups == [LONG[:150], LONG[150:]]

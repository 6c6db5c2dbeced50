"""The compiled scanner of explicit groups in XLA's printed form, against the form written as a
regex, and the reader's fast path that cuts such groups off a line, against the general
reader with the fast path turned off."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshtopo import hlo
from meshtopo.hlo._explicit_scan import groups_arrays, groups_end

from ._fast_paths import errors_both_ways, structure, turn_off
from ._text import entry_head

# The form: groups of 1 to 18 digit numbers, no white space.
NUMBER = r"[0-9]{1,18}+"
GROUP = rf"\{{{NUMBER}(?:,{NUMBER})*+\}}"
FORM = re.compile(rf"\{{{GROUP}(?:,{GROUP})*+\}}")

texts = st.text(alphabet=st.sampled_from("0123456789,{}{}{},,, -é😀\x00"), max_size=60)
well_formed = st.lists(st.lists(st.integers(0, 10**18 - 1), min_size=1, max_size=8),
                       min_size=1, max_size=6).map(
    lambda groups: "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}")


def reference_end(text: str, pos: int) -> int:
    found = FORM.match(text, pos)
    return -1 if found is None else found.end()


@given(st.one_of(texts, well_formed, st.tuples(texts, well_formed, texts).map("".join)),
       st.integers(0, 70))
@settings(max_examples=400, deadline=None)
def test_groups_end_is_the_form(text: str, pos: int) -> None:
    pos = min(pos, len(text))
    assert groups_end(text, pos) == reference_end(text, pos)


# Long texts, checked 64 characters at a time in 1-byte strings: short numbers and numbers of
# 17 and 18 digits (runs of digits across those blocks, one digit more by an edit too long),
# edited anywhere, and at ',', '{' and '}'.
long_numbers = st.one_of(st.integers(0, 2047), st.integers(10**16, 10**18 - 1))
long_well_formed = st.lists(st.lists(long_numbers, min_size=1, max_size=40),
                            min_size=1, max_size=12).map(
    lambda groups: "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}")
edits = st.lists(st.tuples(st.integers(0, 1000), st.booleans(),
                           st.sampled_from("0123456789,{} x\x00é"),
                           st.sampled_from(["put", "insert", "delete"])), max_size=3)


def edited(text: str, changes: list[tuple[int, bool, str, str]]) -> str:
    """``text`` edited at each offset (or, with the flag, at that ',', '{' or '}')."""
    for at, at_punctuation, character, how in changes:
        punctuation = [k for k, c in enumerate(text) if c in ",{}"]
        at = punctuation[at % len(punctuation)] if at_punctuation and punctuation else at
        at = min(at, len(text))
        if how == "delete":
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + character + text[at + (how == "put"):]
    return text


@given(st.integers(0, 70), long_well_formed, edits, st.sampled_from(["", "}", ", x", "}}"]))
@settings(max_examples=1000, deadline=None)
def test_groups_end_of_long_texts_is_the_form(before: int, form: str,
                                              changes: list[tuple[int, bool, str, str]],
                                              after: str) -> None:
    text = "x" * before + edited(form, changes) + after
    end = reference_end(text, before)
    assert groups_end(text, before) == end
    assert groups_end(text + "\u0100", before) == end  # 2-byte text: read one by one
    if end >= 0:
        ids, sizes = groups_arrays(text, before, end)  # type: ignore[misc]
        groups = [[int(i) for i in g.split(",")] for g in text[before + 2:end - 2].split("},{")]
        assert np.frombuffer(ids, np.int64).tolist() == [i for g in groups for i in g]
        assert np.frombuffer(sizes, np.int64).tolist() == [len(g) for g in groups]


@pytest.mark.parametrize("digits", [18, 19])
def test_a_number_across_64_characters_is_at_most_18_digits(digits: int) -> None:
    for before in range(64 + digits):  # the number at every place across two blocks of 64
        text = "x" * before + "{{1,2," + "9" * digits + ",3}}"
        assert groups_end(text, before) == (len(text) if digits == 18 else -1)


@given(well_formed)
@settings(max_examples=200, deadline=None)
def test_groups_arrays_converts_the_form(text: str) -> None:
    groups = [[int(i) for i in g.split(",")] for g in text[2:-2].split("},{")]
    ids, sizes = groups_arrays(text, 0, len(text))  # type: ignore[misc]
    assert np.frombuffer(ids, np.int64).tolist() == [i for g in groups for i in g]
    assert np.frombuffer(sizes, np.int64).tolist() == [len(g) for g in groups]


@pytest.mark.parametrize(("text", "pos", "end"), [
    ("{{123456789012345678}}", 0, 22),  # 18 digits: the largest number of the form
    ("{{1234567890123456789}}", 0, -1),  # 19 may not fit in int64
    ("{{0,1},{2,3}}, next", 0, 13),
    ("é{{0,1}}", 1, 8), ("😀{{0,1}}😀", 1, 8), ("{{0,٣}}", 0, -1),  # non-ASCII digit
    ("{{0,1\x00}}", 0, -1), ("{{0,1", 0, -1), ("{{0,1}", 0, -1), ("", 0, -1),
    ("{{0}}", 5, -1), ("{{0}}", 6, -1), ("{{0}}", -1, -1),
])
def test_groups_end_at_the_edges(text: str, pos: int, end: int) -> None:
    assert groups_end(text, pos) == end


def test_groups_arrays_takes_exactly_the_span() -> None:
    assert groups_arrays("{{1}} ", 0, 6) is None and groups_arrays("{{1},{}}", 0, 8) is None
    assert groups_arrays("x{{1}} ", 1, 6) is not None and groups_arrays("{{1}}", 0, 9) is None
    with pytest.raises(TypeError):
        groups_arrays(b"{{1}}", 0, 5)  # type: ignore[arg-type]


LINES = [
    "channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add",
    # the same length as the line before, other ids: not taken for the repeated list
    "channel_id=2, replica_groups={{1,0},{3,2}}, use_global_device_ids=true, to_apply=%add",
    "channel_id=3, replica_groups={{1,0},{3,2}}, use_global_device_ids=true, to_apply=%add",
    "replica_groups={{0,1,2,3}}, to_apply=%add",
    "channel_id=4, replica_groups={{0,1},{2,3}}  , to_apply=%add, use_global_device_ids=true",
    "channel_id=5,replica_groups= {{0,2},{1,3}},to_apply=%add,use_global_device_ids=true",
    "channel_id=6, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add, "
    'metadata={op_name="a"}',
    "channel_id=7, replica_groups={{0,1},{}}, use_global_device_ids=true, to_apply=%add",
    "channel_id=8, replica_groups={{0, 1},{2,3}}, use_global_device_ids=true, to_apply=%add",
    "channel_id=9, to_apply=%add, replica_groups={{0,1},{2,3}}, use_global_device_ids=true",
    "channel_id=10, to_apply=%add, replica_groups={{0,1},{2,3}}",
    "channel_id=11, to_apply=%add, replica_groups={{0,1},{2,3}}   ",
]


def _module() -> str:
    lines = [f"  %ar{i} = f32[8]{{0}} all-reduce(%p), {attributes}\n"
             for i, attributes in enumerate(LINES)]
    lines.append("  ROOT %ag = f32[8]{0} all-gather(%p), replica_groups={{0,1},{2,3}}, "
                 "dimensions={0}\n")
    return entry_head("HloModule m, replica_count=4") + "".join(lines) + "}\n"


def test_groups_cut_off_a_line_read_as_the_general_reader_reads_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = _module()
    fast = structure(hlo.parse_module(text))
    groups = [c.groups_text for c in hlo.parse_module(text).collectives]
    assert groups[:3] == ["{{0,1},{2,3}}", "{{1,0},{3,2}}", "{{1,0},{3,2}}"]
    turn_off(monkeypatch)
    assert structure(hlo.parse_module(text)) == fast


def test_an_error_in_groups_cut_off_is_where_the_general_reader_puts_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = _module()[:-2] + ("  %cp = f32[8]{0} collective-permute(%p), channel_id=12, "
                             "replica_groups={{0,1}}, source_target_pairs={{0,1}}\n}\n")
    fast, general = errors_both_ways(text, monkeypatch)
    assert fast == general
    assert fast.startswith('22:58: unexpected attribute "replica_groups"')


def test_long_lists_alternating_keep_their_own_text_and_groups() -> None:
    first, second = list(range(200)), list(range(199, -1, -1))
    last_two_swapped = [*first[:-2], 199, 198]  # as long as the first, alike far into it
    lists = (first, second, first, first, last_two_swapped)
    texts = ["{{" + ",".join(map(str, ids)) + "}}" for ids in lists]
    lines = [f"  %ar{i} = f32[8]{{0}} all-reduce(%p), channel_id={i + 1}, replica_groups={t}, "
             "use_global_device_ids=true, to_apply=%add\n" for i, t in enumerate(texts)]
    module = hlo.parse_module(entry_head("HloModule m, num_partitions=200") + "".join(lines)
                              + "}\n")
    collectives = module.collectives
    assert [c.groups_text for c in collectives] == texts
    assert [c.replica_groups.replica_groups for c in collectives] == [[ids] for ids in lists]
    assert collectives[3].replica_groups is collectives[2].replica_groups  # repeated: shared
    assert [c.device_groups() for c in collectives] == [[ids] for ids in lists]


def test_groups_arrays_of_a_span_shorter_than_the_list_is_none() -> None:
    text = "{{" + ",".join(map(str, range(100_000))) + "}}"
    assert groups_arrays(text, 0, 5) is None and groups_arrays(text, 0, len(text) - 1) is None

"""Collectives that share one decoding are copies of its template, each with its own
instruction, channel id, callee and explicit groups, and read as a decoding of their own
would (the fast path turned off decodes each in full). Their attributes are a frozen record."""

from __future__ import annotations

import pytest

from meshtopo import hlo

from ._fast_paths import structure, turn_off

HEAD = "HloModule m, num_partitions=4\n"
REDUCTIONS = "".join(
    f"%{name} (x: f32[], y: f32[]) -> f32[] {{\n  %x = f32[] parameter(0)\n"
    f"  %y = f32[] parameter(1)\n  ROOT %r = f32[] {op}(%x, %y)\n}}\n"
    for name, op in (("sum", "add"), ("top", "maximum")))
# Lines in pairs and more that share a decoding but for what each copy has of its own.
BODY = [
    "%ar0 = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1},{2,3}}, "
    "use_global_device_ids=true, to_apply=%sum",
    "%ar1 = f32[8]{0} all-reduce(%ar0), channel_id=77, replica_groups={{0,2},{1,3}}, "
    "use_global_device_ids=true, to_apply=%top",
    "%ar2 = f32[8]{0} all-reduce(%ar1), channel_id=123456789012345678, "
    "replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=%sum",
    "%ar3 = f32[8]{0} all-reduce(%ar2), replica_groups=[2,2]<=[4], to_apply=%sum",
    "%ar4 = f32[8]{0} all-reduce(%ar3), replica_groups=[2,2]<=[4], to_apply=sum",
    "%ag0 = f32[16]{0} all-gather(%ar4), channel_id=3, replica_groups=[2,2]<=[2,2]T(1,0), "
    "dimensions={0}, use_global_device_ids=true",
    "%ag1 = f32[16]{0} all-gather(%ar4), channel_id=4, replica_groups=[2,2]<=[2,2]T(1,0), "
    "dimensions={0}, use_global_device_ids=true",
    "%cp0 = f32[8]{0} collective-permute(%ar4), channel_id=5, "
    "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}",
    "%cp1 = f32[8]{0} collective-permute(%cp0), channel_id=6, "
    "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}",
    "%start0 = f32[8]{0} all-reduce-start(%cp1), channel_id=7, replica_groups={{0,1,2,3}}, "
    "use_global_device_ids=true, to_apply=%sum",
    "%done0 = f32[8]{0} all-reduce-done(%start0)",
    "%start1 = f32[8]{0} all-reduce-start(%done0), channel_id=8, replica_groups={{0,1,2,3}}, "
    "use_global_device_ids=true, to_apply=%sum",
    "%done1 = f32[8]{0} all-reduce-done(%start1)",
    "%a0 = f32[8]{0} all-to-all(%done1), channel_id=9, replica_groups={{0,1},{2,3}}, "
    "dimensions={0}",
    "ROOT %a1 = f32[8]{0} all-to-all(%a0), channel_id=10, replica_groups={{0,1},{2,3}}, "
    "dimensions={0}",
]
TEXT = (HEAD + REDUCTIONS + "ENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
        + "".join(f"  {line}\n" for line in BODY) + "}\n")


def test_copies_read_as_their_own_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = hlo.parse_module(TEXT)
    turn_off(monkeypatch)
    assert structure(fast) == structure(hlo.parse_module(TEXT))


def test_each_copy_has_its_own_channel_callee_and_groups() -> None:
    by_name = hlo.parse_module(TEXT).collectives_by_name
    assert [by_name[n].channel_id for n in ("ar0", "ar1", "ar2")] == [1, 77, 123456789012345678]
    assert [by_name[n].to_apply for n in ("ar0", "ar1", "ar2", "ar3", "ar4")] == [
        "sum", "top", "sum", "sum", "sum"]
    assert [by_name[n].groups_text for n in ("ar0", "ar1")] == ["{{0,1},{2,3}}", "{{0,2},{1,3}}"]
    assert by_name["ar1"].replica_groups.replica_groups == [[0, 2], [1, 3]]
    assert [by_name[n].start for n in ("done0", "done1")] == ["start0", "start1"]
    assert all(by_name[n].instruction.collective is by_name[n] for n in by_name)


def test_copies_share_what_the_text_after_their_own_fields_decodes_to() -> None:
    by_name = hlo.parse_module(TEXT).collectives_by_name
    # ar1 and ar2 differ from ar0 in channel id, groups and callee only: one decoding of the
    # rest; ag0 and ag1 share their dimensions; cp0 and cp1 their pairs.
    assert by_name["ar1"].decoded.use_global_device_ids is True
    assert by_name["ag1"].dimensions is by_name["ag0"].dimensions
    assert by_name["cp1"].source_target_pairs is by_name["cp0"].source_target_pairs
    assert by_name["cp1"].source_target_pairs == [(0, 1), (1, 2), (2, 3), (3, 0)]


def test_an_instruction_the_general_reader_read_decodes_in_full() -> None:
    """Written across lines, a collective is decoded in full, as its own."""
    text = TEXT.replace("channel_id=77, ", "\n      channel_id=77, ")
    collective = hlo.parse_module(text).collectives_by_name["ar1"]
    assert (collective.channel_id, collective.to_apply, collective.groups_text) == (
        77, "top", "{{0,2},{1,3}}")


def test_collective_attributes_are_frozen() -> None:
    collective = hlo.parse_module(TEXT).collectives_by_name["ar1"]
    with pytest.raises(AttributeError):
        collective.decoded.channel_id = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        collective.channel_id = 5  # type: ignore[misc]
    assert collective.channel_id == 77
    again = hlo.parse_module(TEXT).collectives_by_name["ar1"]
    assert again.decoded == collective.decoded
    linked = hlo.parse_module(TEXT).collectives_by_name
    assert linked["done0"].decoded is linked["start0"].decoded  # a done carries its start's
    assert linked["done0"].channel_id == 7

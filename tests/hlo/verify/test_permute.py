"""Collective-permute checks (spec 5.4): in-place structure, ranges against R or P, and
duplicate sources and targets (N-fold for in-place permutes); cycles are allowed."""

from __future__ import annotations

import pytest

from ._modules import Case, assert_case

CP = "ROOT %cp = f32[8]{0} collective-permute(%p), @"
IN_PLACE_PARAMS = """%in = f32[8,8,128]{2,1,0} parameter(0)
%out = f32[8,8,128]{2,1,0} parameter(1)
%c0 = s32[] parameter(2)
%io = (s32[], s32[], s32[]) tuple(%c0, %c0, %c0)
%io2 = ((s32[], s32[], s32[]), (s32[], s32[], s32[])) tuple(%io, %io)
%bad = (s32[], s32[]) tuple(%c0, %c0)
%bad2 = ((s32[], s32[]), (s32[], s32[])) tuple(%bad, %bad)
%mixed = ((s32[], s32[], s32[]), s32[]) tuple(%io, %c0)
%p = f32[8]{0} parameter(3)"""
IN_PLACE = ("ROOT %cp = f32[8,8,128]{2,1,0} collective-permute(%in, %out, @), "
            "source_target_pairs={{0,1},{1,2},{2,3},{3,0},{0,3},{3,2},{2,1},{1,0}}, "
            "slice_sizes={{1,8,128},{1,8,128},{2,8,128},{2,8,128}}")
IN_PLACE_TWICE = ("ROOT %cp = f32[8,8,128]{2,1,0} collective-permute(%in, %out, %io2, %io2), "
                  "source_target_pairs=@, slice_sizes={{1,8,128},{1,8,128}}")

CASES = [
    Case("ok", CP.replace("@", "source_target_pairs={{0,1},{1,2},{2,3}}"), None, r=4),
    Case("cycle_allowed", CP.replace("@", "source_target_pairs={{0,1},{1,0}}"), None, r=2),
    Case("self_loop_allowed", CP.replace("@", "source_target_pairs={{0,0}}"), None, r=2),
    Case("same_source_twice", CP.replace("@", "source_target_pairs={{0,1},{0,2}}"),
         "Source 0 appears more than once in instruction's source-target pairs: {instr}", r=4),
    Case("same_target_twice_replica_count_1",
         CP.replace("@", "source_target_pairs={{0,1},{2,1}}"),
         "Target 1 appears more than once in instruction's source-target pairs: {instr}"),
    Case("source_negative", CP.replace("@", "source_target_pairs={{-1,0}}"),
         "Source -1 in the instruction's source-target pair must be >= 0 : {instr}", r=2),
    Case("target_negative", CP.replace("@", "source_target_pairs={{0,-3}}"),
         "Target -3 in the instruction's source-target pair must be >= 0 : {instr}", r=2),
    Case("source_past_replica_count", CP.replace("@", "source_target_pairs={{3,0}}"),
         "Source 3 in the instruction's source-target pair must be < 2 : {instr}", r=2, p=4),
    Case("target_past_replica_count", CP.replace("@", "source_target_pairs={{0,1},{1,4}}"),
         "Target 4 in the instruction's source-target pair must be < 4 : {instr}", r=4),
    Case("channel_limits_by_partitions",
         CP.replace("@", "channel_id=1, source_target_pairs={{0,3}}"),
         "Target 3 in the instruction's source-target pair must be < 2 : {instr}", r=4, p=2),
    Case("channel_ok_past_replica_count",
         CP.replace("@", "channel_id=1, source_target_pairs={{0,3}}"), None, r=2, p=4),
    Case("limit_1_skips_range", CP.replace("@", "source_target_pairs={{0,5},{5,0}}"), None),
    Case("source_checked_before_target", CP.replace("@", "source_target_pairs={{0,1},{0,1}}"),
         "Source 0 appears more than once in instruction's source-target pairs: {instr}", r=2),
    Case("duplicate_target_before_later_range",
         CP.replace("@", "source_target_pairs={{0,1},{2,1},{9,0}}"),
         "Target 1 appears more than once in instruction's source-target pairs: {instr}", r=4),
    Case("start_checked",
         "%cps = (f32[8]{0}, f32[8]{0}) collective-permute-start(%p), "
         "source_target_pairs={{0,1},{0,1}}\n"
         "ROOT %cpd = f32[8]{0} collective-permute-done(%cps)",
         "Source 0 appears more than once in instruction's source-target pairs: "
         "%cps = (f32[8]{0}, f32[8]{0}) collective-permute-start(%p), "
         "source_target_pairs={{0,1},{0,1}}", r=2),
    # In place: each id up to N times, N the offset tuples in operand 2.
    Case("in_place_multiple_read_write_ok", IN_PLACE.replace("@", "%io2, %io2"), None, r=4,
         params=IN_PLACE_PARAMS),
    Case("in_place_three_times",
         IN_PLACE_TWICE.replace("@", "{{0,1},{0,2},{0,3}}"),
         "Source 0 appears more than 2 times in instruction's source-target pairs: {instr}",
         r=4, params=IN_PLACE_PARAMS),
    Case("in_place_target_three_times",
         IN_PLACE_TWICE.replace("@", "{{1,0},{2,0},{3,0}}"),
         "Target 0 appears more than 2 times in instruction's source-target pairs: {instr}",
         r=4, params=IN_PLACE_PARAMS),
    Case("in_place_offset_not_tuple", IN_PLACE.replace("@", "%c0, %io2"),
         "Buffer offset is not tuple.", r=4, params=IN_PLACE_PARAMS),
    Case("in_place_offset_mixed", IN_PLACE.replace("@", "%mixed, %io2"),
         "Buffer offset should either be a tuple of arrays or  a tuple of tuples.", r=4,
         params=IN_PLACE_PARAMS),
    Case("in_place_offset_rank", IN_PLACE.replace("@", "%bad, %bad"),
         "Buffer offset index should have the same number of elements as the buffer's rank.",
         r=4, params=IN_PLACE_PARAMS),
    Case("in_place_tuple_offsets_rank", IN_PLACE.replace("@", "%io2, %bad2"),
         "Buffer offset index should have the same number of elements as the buffer's rank.",
         r=4, params=IN_PLACE_PARAMS),
    Case("in_place_buffers_unmatched",
         "ROOT %cp = f32[8,8,128]{2,1,0} collective-permute(%tin, %out, %io2, %io2), "
         "source_target_pairs={{0,1}}, slice_sizes={{1,8,128}}",
         "Unmatching input buffers and output buffers.", r=4,
         params=IN_PLACE_PARAMS + "\n%tin = (f32[8,8,128]{2,1,0}) tuple(%in)"),
    Case("in_place_tuple_buffers_input_offset",
         "ROOT %cp = (f32[8,8,128]{2,1,0}) collective-permute(%tin, %tout, %io, %tio), "
         "source_target_pairs={{0,1}}, slice_sizes={{1,8,128}}",
         "Unmatching input buffers and input offset.", r=4,
         params=IN_PLACE_PARAMS + "\n%tin = (f32[8,8,128]{2,1,0}) tuple(%in)\n"
         "%tout = (f32[8,8,128]{2,1,0}) tuple(%out)\n%tio = ((s32[], s32[], s32[])) tuple(%io)"),
    Case("in_place_tuple_buffers_output_offset",
         "ROOT %cp = (f32[8,8,128]{2,1,0}) collective-permute(%tin, %tout, %tio, %io2), "
         "source_target_pairs={{0,1}}, slice_sizes={{1,8,128}}",
         "Unmatching output buffers and output offset.", r=4,
         params=IN_PLACE_PARAMS + "\n%tin = (f32[8,8,128]{2,1,0}) tuple(%in)\n"
         "%tout = (f32[8,8,128]{2,1,0}) tuple(%out)\n%tio = ((s32[], s32[], s32[])) tuple(%io)"),
    Case("in_place_tuple_buffers_ok",
         "ROOT %cp = (f32[8,8,128]{2,1,0}) collective-permute(%tin, %tout, %tio2, %tio2), "
         "source_target_pairs={{0,1},{0,2}}, slice_sizes={{1,8,128},{1,8,128}}", None, r=4,
         params=IN_PLACE_PARAMS + "\n%tin = (f32[8,8,128]{2,1,0}) tuple(%in)\n"
         "%tout = (f32[8,8,128]{2,1,0}) tuple(%out)\n%tio2 = (((s32[], s32[], s32[]), "
         "(s32[], s32[], s32[]))) tuple(%io2)"),
    # Duplicate channel ids across collectives are allowed.
    Case("two_permutes_same_channel",
         "%a = f32[8]{0} collective-permute(%p), channel_id=1, source_target_pairs={{0,1}}\n"
         "ROOT %b = f32[8]{0} collective-permute(%a), channel_id=1, source_target_pairs={{1,0}}",
         None, p=2),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_permute(case: Case) -> None:
    assert_case(case)

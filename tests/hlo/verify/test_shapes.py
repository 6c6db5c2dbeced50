"""Shard counts, gather/scatter dimensions, all-to-all split counts, ragged-all-to-all operands
and the all-reduce channel id (spec 5.2, 5.5): accepted or rejected as XLA does."""

from __future__ import annotations

import pytest

from ._modules import Case, assert_case

RAGGED_PARAMS = """%in = f32[8]{0} parameter(0)
%out = f32[8]{0} parameter(1)
%io = s32[4]{0} parameter(2)
%ss = s32[4]{0} parameter(3)
%oo = s32[4]{0} parameter(4)
%rs = s32[4]{0} parameter(5)
%r3 = s32[2,2,1]{2,1,0} parameter(6)
%w = s32[8]{0} parameter(7)
%p = f32[8]{0} parameter(8)"""
RAGGED = ("ROOT %ra = f32[8]{0} ragged-all-to-all(%in, %out, @), replica_groups={{0,1,2,3}}")
SHARD = "shard_count = @, {instr}"

CASES = [
    # all-gather: shard_count = ceil(out / in) along the gather dimension.
    Case("all_gather_ok", "ROOT %ag = f32[32]{0} all-gather(%p), replica_groups={{0,1,2,3}}, "
         "dimensions={0}", None, r=4),
    Case("all_gather_groups_omitted_ok",
         "ROOT %ag = f32[32]{0} all-gather(%p), dimensions={0}", None, r=4),
    Case("all_gather_shard_count",
         "ROOT %ag = f32[16]{0} all-gather(%p), replica_groups={{0,1,2,3}}, dimensions={0}",
         SHARD.replace("@", "2, subgroup_size = 4"), r=4),
    Case("all_gather_shard_count_rounds_up",
         "ROOT %ag = f32[20]{0} all-gather(%p), replica_groups={{0,1},{2,3}}, dimensions={0}",
         SHARD.replace("@", "3, subgroup_size = 2"), r=4),
    Case("all_gather_subgroup_1_skipped",
         "ROOT %ag = f32[16]{0} all-gather(%p), dimensions={0}", None),
    Case("all_gather_cross_replica_and_partition_multiplies_partitions",
         "ROOT %ag = f32[16]{0} all-gather(%p), channel_id=1, replica_groups={{0,1}}, "
         "dimensions={0}", SHARD.replace("@", "2, subgroup_size = 4"), r=2, p=2),
    Case("all_gather_flattened_id_ok",
         "ROOT %ag = f32[16]{0} all-gather(%p), channel_id=1, replica_groups={{0,1},{2,3}}, "
         "dimensions={0}, use_global_device_ids=true", None, r=2, p=2),
    Case("all_gather_dimension_past_operand_rank",
         "ROOT %ag = f32[16]{0} all-gather(%p), replica_groups={{0,1}}, dimensions={1}",
         "ag->all_gather_dimension() < static_cast<int64_t>(ag->operand(i)->shape()"
         ".dimensions().size())", r=2),
    Case("all_gather_negative_dimension",
         "ROOT %ag = f32[16]{0} all-gather(%p), replica_groups={{0,1}}, dimensions={-1}",
         "ag->all_gather_dimension() >= 0", r=2),
    Case("all_gather_dimension_past_output_rank",
         "ROOT %ag = f32[16]{0} all-gather(%q), replica_groups={{0,1}}, dimensions={1}",
         "ag->all_gather_dimension() < static_cast<int64_t>(output_shape.dimensions().size())",
         r=2, params="%q = f32[8,2]{1,0} parameter(0)"),
    Case("all_gather_start_ok",
         "%ags = (f32[8]{0}, f32[16]{0}) all-gather-start(%p), replica_groups={{0,1}}, "
         "dimensions={0}\nROOT %agd = f32[16]{0} all-gather-done(%ags)", None, r=2),
    Case("all_gather_start_shard_count",
         "%ags = (f32[8]{0}, f32[8]{0}) all-gather-start(%p), replica_groups={{0,1}}, "
         "dimensions={0}\nROOT %agd = f32[8]{0} all-gather-done(%ags)",
         "shard_count = 1, subgroup_size = 2, %ags = (f32[8]{0}, f32[8]{0}) all-gather-start(%p),"
         " replica_groups={{0,1}}, dimensions={0}", r=2),
    Case("all_gather_tuple_ok",
         "ROOT %ag = (f32[16]{0}, f32[4]{0}) all-gather(%p, %q), replica_groups={{0,1}}, "
         "dimensions={0}", None, r=2,
         params="%p = f32[8]{0} parameter(0)\n%q = f32[2]{0} parameter(1)"),
    # reduce-scatter: shard_count = ceil(in / out) along the scatter dimension.
    Case("reduce_scatter_ok",
         "ROOT %rs = f32[2]{0} reduce-scatter(%p), replica_groups={{0,1,2,3}}, dimensions={0}, "
         "to_apply=%add", None, r=4),
    Case("reduce_scatter_shard_count",
         "ROOT %rs = f32[4]{0} reduce-scatter(%p), replica_groups={{0,1,2,3}}, dimensions={0}, "
         "to_apply=%add", SHARD.replace("@", "2, subgroup_size = 4"), r=4),
    Case("reduce_scatter_scatter_dimension",
         "ROOT %rs = f32[4]{0} reduce-scatter(%p), replica_groups={{0,1}}, dimensions={1}, "
         "to_apply=%add",
         "ars->scatter_dimension() < static_cast<int64_t>(ars->operand(i)->shape()"
         ".dimensions().size())", r=2),
    Case("reduce_scatter_uniform_groups",
         "ROOT %rs = f32[4]{0} reduce-scatter(%p), replica_groups={{0,1},{2}}, dimensions={0}, "
         "to_apply=%add", "Replica groups expected to be of uniform size", r=3),
    # all-to-all: split count = subgroup size.
    Case("all_to_all_split_dimension_ok",
         "ROOT %a = f32[8]{0} all-to-all(%p), replica_groups={{0,1,2,3}}, dimensions={0}", None,
         r=4),
    Case("all_to_all_tuple_ok",
         "ROOT %a = (f32[8]{0}, f32[8]{0}) all-to-all(%p, %p), replica_groups={{0,1},{2,3}}",
         None, r=4),
    Case("all_to_all_tuple_operand_count",
         "ROOT %a = (f32[8]{0}, f32[8]{0}) all-to-all(%p, %p), replica_groups={{0,1,2,3}}",
         "hlo->operand_count() == split_count", r=4),
    Case("all_to_all_split_dimension_needs_one_operand",
         "ROOT %a = (f32[8]{0}, f32[8]{0}) all-to-all(%p, %p), replica_groups={{0,1}}, "
         "dimensions={0}", "hlo->operand_count() == 1", r=2),
    Case("all_to_all_tuple_no_groups_uses_partition_count",
         "ROOT %a = (f32[8]{0}, f32[8]{0}) all-to-all(%p, %p), channel_id=1", None, r=4, p=2),
    # ragged-all-to-all: 6 operands; offsets and sizes rank 1 or 2 and all the same shape.
    Case("ragged_ok", RAGGED.replace("@", "%io, %ss, %oo, %rs"), None, r=4,
         params=RAGGED_PARAMS),
    Case("ragged_operand_count",
         "ROOT %ra = f32[8]{0} ragged-all-to-all(%in, %out, %io, %ss, %oo), "
         "replica_groups={{0,1,2,3}}", "hlo->operand_count() == kNumRaggedOperands", r=4,
         params=RAGGED_PARAMS),
    Case("ragged_rank", RAGGED.replace("@", "%io, %r3, %oo, %rs"),
         "RaggedAllToAll operands have different shapes (2, 3): {instr}", r=4,
         params=RAGGED_PARAMS),
    Case("ragged_rank_3", RAGGED.replace("@", "%r3, %r3, %r3, %r3"),
         "RaggedAllToAll operand 2 must be rank 1 or 2: {instr}", r=4, params=RAGGED_PARAMS),
    Case("ragged_different_shapes", RAGGED.replace("@", "%io, %ss, %oo, %w"),
         "RaggedAllToAll operands have different shapes (4, 5): {instr}", r=4,
         params=RAGGED_PARAMS),
    Case("ragged_groups_skipped_without_group_checks",
         "ROOT %ra = f32[8]{0} ragged-all-to-all(%in, %out, %io, %ss, %oo, %rs), "
         "replica_groups={{0,1}}", None, r=4, params=RAGGED_PARAMS, check_replica_groups=False),
    # The instruction verifier: an all-reduce channel id must be > 0 (short form appended).
    Case("all_reduce_channel_id_0",
         "ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=0, replica_groups={}, to_apply=%add",
         "All reduce channel id must be greater than 0 for %ar = f32[8]{0} all-reduce(%p)"),
    Case("all_reduce_channel_id_negative",
         "ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=-2, to_apply=%add",
         "All reduce channel id must be greater than 0 for %ar = f32[8]{0} all-reduce(%p)"),
    Case("shape_verifier_first",
         "ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=0, replica_groups={{0,0}}, "
         "to_apply=%add", "Replica 0 is repeated in instruction's replica-groups: {instr}"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_shapes(case: Case) -> None:
    assert_case(case)

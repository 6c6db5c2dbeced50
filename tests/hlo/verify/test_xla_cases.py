"""The collective cases of XLA's ``hlo_verifier_test.cc``, as modules written here: each is
accepted, or rejected with a message containing what XLA's test expects (newer XLA's wording
where it changed, e.g. "out of range" for a missing id, the mode spelled ``kCrossReplica``)."""

from __future__ import annotations

import pytest

import meshtopo.hlo as hlo

from ._modules import SUM

IN_PLACE_HEAD = """  %rid = u32[] replica-id()
  %b0 = u32[2,8,128]{2,1,0:T(2,128)} broadcast(u32[] %rid), dimensions={}
  %k = u32[] constant(1000)
  %b1 = u32[2,8,128]{2,1,0:T(2,128)} broadcast(u32[] %k), dimensions={}
  %b2 = u32[4,8,128]{2,1,0:T(2,128)} broadcast(u32[] %k), dimensions={}
  %zero = s32[] constant(0)
  %one = s32[] constant(1)
  %o0 = (s32[], s32[], s32[]) tuple(%zero, %zero, %zero)
  %o1 = (s32[], s32[], s32[]) tuple(%one, %zero, %zero)
  %offsets = ((s32[], s32[], s32[]), (s32[], s32[], s32[])) tuple(%o0, %o1)
  %outs = (u32[2,8,128]{2,1,0:T(2,128)}, u32[4,8,128]{2,1,0:T(2,128)}) tuple(%b1, %b2)
"""


def module(body: str, header: str = "") -> str:
    return f"HloModule test{header}\n{SUM}\nENTRY %entry {{\n{body}\n}}\n"


def all_reduce(groups: str, header: str = "", attrs: str = "") -> str:
    return module("  %p = f32[128]{0} parameter(0)\n"
                  f"  ROOT %crs = f32[128]{{0}} all-reduce(%p), to_apply=%add, "
                  f"replica_groups={groups}{attrs}", header)


def all_to_all(groups: str, header: str = "", attrs: str = "", operands: int = 2) -> str:
    names = ", ".join(["%p0", "%p1", "%p1"][:operands])
    shape = ", ".join(["f32[128]{0}"] * operands)
    return module("  %p0 = f32[128]{0} parameter(0)\n  %p1 = f32[128]{0} parameter(1)\n"
                  f"  ROOT %a2a = ({shape}) all-to-all({names}), replica_groups={groups}{attrs}",
                  header)


def permute(pairs: str, header: str = "", attrs: str = "") -> str:
    return module("  %p0 = f32[128]{0} parameter(0)\n"
                  f"  ROOT %permute = f32[128]{{0}} collective-permute(%p0), "
                  f"source_target_pairs={pairs}{attrs}", header)


def in_place(pairs: str, out: str = "%b1") -> str:
    return module(IN_PLACE_HEAD + "  ROOT %cp = u32[2,8,128]{2,1,0:T(2,128)} "
                  f"collective-permute(%b0, {out}, %offsets, %offsets), "
                  f"source_target_pairs={pairs}, slice_sizes={{{{1,8,128}},{{1,8,128}}}}")


def reduce_scatter(out: str, groups: str, dims: str = "{0}") -> str:
    return module("  %input = f32[8]{0} parameter(0)\n"
                  f"  ROOT %crs = {out} reduce-scatter(%input), replica_groups={groups}, "
                  f"to_apply=%add, dimensions={dims}")


SEND_AND_ALL_REDUCE = module("""  %input = f32[8,12]{1,0} parameter(0)
  %token0 = token[] after-all()
  %send = (f32[8,12]{1,0}, u32[], token[]) send(%input, %token0), channel_id=1
  %send-done = token[] send-done(%send), channel_id=1
  %crs = f32[8,12]{1,0} all-reduce(%input), replica_groups={}, to_apply=%add, channel_id=1
  ROOT %result = (f32[8,12]{1,0}, f32[8,12]{1,0}) tuple(%input, %crs)""")
PERMUTE_AND_ALL_REDUCE = module("""  %input = f32[8,12]{1,0} parameter(0)
  %permute = f32[8,12]{1,0} collective-permute(%input), source_target_pairs={{0,1},{1,0}}, channel_id=1
  %crs = f32[8,12]{1,0} all-reduce(%input), replica_groups={}, to_apply=%add, channel_id=1
  ROOT %result = (f32[8,12]{1,0}, f32[8,12]{1,0}) tuple(%permute, %crs)""")
LAYOUT_MIX = module("""  %input = f32[8,12]{0,1} parameter(0)
  %crs0 = f32[8,12]{0,1} all-reduce(%input), replica_groups={}, to_apply=%add
  %crs1 = f32[8,12]{0,1} all-reduce(%input), replica_groups={}, to_apply=%add, constrain_layout=true
  ROOT %result = (f32[8,12]{0,1}, f32[8,12]{0,1}) tuple(%crs0, %crs1)""")
START_TWO_DONES = module("""  %p0 = f32[2,3]{1,0} parameter(0)
  %start = (f32[2,3]{1,0}, f32[2,3]{1,0}, u32[], u32[]) collective-permute-start(%p0), source_target_pairs={{0,1},{1,0}}, channel_id=1
  %done1 = f32[2,3]{1,0} collective-permute-done(%start)
  ROOT %done2 = f32[2,3]{1,0} collective-permute-done(%start)""")
DONE_OF_TUPLE = module("""  %p0 = f32[2,3]{1,0} parameter(0)
  %p1 = u32[] parameter(1)
  %tuple = (f32[2,3]{1,0}, f32[2,3]{1,0}, u32[], u32[]) tuple(%p0, %p0, %p1, %p1)
  ROOT %done = f32[2,3]{1,0} @-done(%tuple)""")

CASES = [
    ("AllReduce_NoReplicaGroupsOK", all_reduce("{}"), None),
    ("AllReduce_DifferentGroupSizesOk",
     all_reduce("{{0}, {1,3}, {2}}", ", replica_count=4"), None),
    ("AllReduce_EmptyReplicaGroup", all_reduce("{{0}, {}}", ", replica_count=1"),
     "empty replica group"),
    ("AllReduce_RepeatedReplicaId",
     all_reduce("{{0,1}, {2,3}, {4,0}}", ", replica_count=6"), "Replica 0 is repeated"),
    ("AllReduce_MissingReplicaId",
     all_reduce("{{0,1}, {2,3}, {5,6}}", ", replica_count=6"),
     "Replica 6 is out of range (should be in [0, 6) range)"),
    ("AllReduce_NotEnougReplicasInGroupConfig", all_reduce("{{0,1}}", ", replica_count=8"),
     "In kCrossReplica mode, replica groups should contain 8 replicas, but found 2"),
    ("AllReduce_TooManyReplicasInGroupConfig",
     all_reduce("{{0,1}, {2,3}}", ", replica_count=2"),
     "In kCrossReplica mode, replica groups should contain 2 replicas, but found 4"),
    ("AllReduce_CrossReplicaAndPartition_Invalid",
     all_reduce("{{0,1}, {2,3}}", ", replica_count=2", ", channel_id=1"),
     "In kCrossReplicaAndPartition mode, replica groups should contain 2 replicas, "
     "but found 4"),
    ("AllReduce_CrossReplicaAndPartition_Valid",
     all_reduce("{{0,1}, {2,3}}", ", replica_count=4", ", channel_id=1"), None),
    ("AllReduce_FlattenedID_Invalid",
     all_reduce("{{0,1}, {2,3}}", ", num_partitions=2",
                ", channel_id=1, use_global_device_ids=true"),
     "In kFlattenedID mode, replica groups should contain 2 flattened IDs, but found 4"),
    ("AllReduce_FlattenedID_Valid",
     all_reduce("{{0,1}, {2,3}}", ", replica_count=2, num_partitions=2",
                ", channel_id=1, use_global_device_ids=true"), None),
    ("UseGlobalDeviceIdsEmptyReplicaGroup",
     all_reduce("{}", "", ", channel_id=1, use_global_device_ids=true"),
     "Replica groups must be specified in flattened-id mode"),
    ("AllReduceDoneWithoutStart", DONE_OF_TUPLE.replace("@", "all-reduce"),
     "The operand of a all-reduce-done instruction needs to be all-reduce-start, found tuple"),
    ("AllToAll_NoReplicaGroupsOK", all_to_all("{}", ", replica_count=2"), None),
    ("AllToAll_EmptyReplicaGroup", all_to_all("{{0,1}, {}}", ", replica_count=2"),
     "cannot have an empty replica group"),
    ("AllToAll_RepeatedReplicaId", all_to_all("{{0,1}, {2,3}, {4,0}}", ", replica_count=6"),
     "Replica 0 is repeated"),
    ("AllToAll_UniformSizeOfReplicasInGroup",
     all_to_all("{{0,1}, {2}, {3,4}}", ", replica_count=5"),
     "Replica groups expected to be of uniform size"),
    ("AllToAll_CrossPartition_Invalid",
     all_to_all("{{0,1}, {2,3}}", ", replica_count=1, num_partitions=2", ", channel_id=1"),
     "In kCrossPartition mode, replica groups should contain 2 partitions, but found 4"),
    ("AllToAll_CrossPartition_Valid",
     all_to_all("{{0,1}, {2,3}}", ", replica_count=1, num_partitions=4", ", channel_id=1"),
     None),
    ("AllToAll_OperandCountMismatchWithReplicaGroupSize",
     all_to_all("{{0,1}}", ", replica_count=2", operands=3),
     "hlo->operand_count() == split_count"),
    ("CollectivePermuteSameSourceTwice",
     permute("{{0,1}, {0,2}, {1,0}}", ", replica_count=3"), "Source 0 appears more than once"),
    ("CollectivePermuteSameTargetTwice", permute("{{0,2}, {1,2}, {2,0}}"),
     "Target 2 appears more than once"),
    ("CollectivePermuteSameSourceTooManyTimes",
     in_place("{{0,1},{1,2},{2,3},{3,0},{0,3},{0,2},{2,1},{1,0}}"),
     "Source 0 appears more than 2 times in instruction's source-target pairs:"),
    ("CollectivePermuteSameTargetTooManyTimes",
     in_place("{{0,1},{1,2},{2,3},{3,0},{0,3},{3,2},{2,3},{1,0}}"),
     "Target 3 appears more than 2 times in instruction's source-target pairs:"),
    ("CollectivePermuteUnmatchingSourceTarget",
     in_place("{{0,1},{1,2},{2,3},{3,0}}", out="%outs"),
     "Unmatching input buffers and output buffers"),
    ("CollectivePermuteCrossReplicaSourceOOR",
     permute("{{5,2}, {1,2}, {2,0}}", ", replica_count=3"),
     "Source 5 in the instruction's source-target pair must be < 3"),
    ("CollectivePermuteCrossReplicaTargetOOR",
     permute("{{0,1}, {1,2}, {2,7}}", ", replica_count=3"),
     "Target 7 in the instruction's source-target pair must be < 3"),
    ("CollectivePermuteCrossPartitionSourceOOR",
     permute("{{5,2}, {1,2}, {2,0}}", ", num_partitions=3", ", channel_id=1"),
     "Source 5 in the instruction's source-target pair must be < 3"),
    ("CollectivePermuteCrossPartitionTargetOOR",
     permute("{{0,2}, {1,7}, {2,0}}", ", num_partitions=3", ", channel_id=1"),
     "Target 7 in the instruction's source-target pair must be < 3"),
    ("CollectivePermuteStartAndMultipleDone", START_TWO_DONES,
     "collective-permute-start instruction requires one consumer, found 2"),
    ("CollectivePermuteDoneNoCollectivePermuteStart",
     DONE_OF_TUPLE.replace("@", "collective-permute"),
     "The operand of a collective-permute-done instruction needs to be "
     "collective-permute-start, found tuple"),
    ("AllReduceVerifier", LAYOUT_MIX, "mix of layout constrained and unconstrained AllReduce"),
    ("ChannelVerifier_send_and_all_reduce_share_a_channel", SEND_AND_ALL_REDUCE, None),
    ("CollectiveChannelVerifier_permute_and_all_reduce_share_a_channel",
     PERMUTE_AND_ALL_REDUCE, None),
    ("ReduceScatterInvalidOutputSize0", reduce_scatter("f32[8]{0}", "{{0,1}}"),
     "shard_count = 1, subgroup_size = 2"),
    ("ReduceScatterInvalidScatterDim", reduce_scatter("f32[4]{0}", "{{0,1}}", "{1}"),
     "ars->scatter_dimension() < static_cast<int64_t>(ars->operand(i)->shape()"
     ".dimensions().size())"),
    ("ReduceScatterNonUniformGroups", reduce_scatter("f32[4]{0}", "{{0,1}, {2,3,4}}"),
     "Replica groups expected to be of uniform size"),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_xla_verifier_case(text: str, expected: str | None) -> None:
    findings = hlo.verify(hlo.parse_module(text))
    if expected is None:
        assert findings == [], [f.message for f in findings]
    else:
        assert len(findings) == 1, [f.message for f in findings]
        assert expected in findings[0].message

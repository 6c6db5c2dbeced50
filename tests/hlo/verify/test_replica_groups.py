"""``CheckReplicaGroups`` (spec 5.2, 5.3, 5.7): each case accepted or rejected as XLA does,
with XLA's message."""

from __future__ import annotations

import pytest

from ._modules import Case, assert_case

AR = "ROOT %ar = f32[8]{0} all-reduce(%p), @, to_apply=%add"
AG = "ROOT %ag = f32[16]{0} all-gather(%p), @, dimensions={0}"
A2A = "ROOT %a2a = f32[8]{0} all-to-all(%p), @, dimensions={0}"
MODE_ERROR = ("Invalid combination of has_channel_id and use_global_device_ids: "
              "use_global_device_ids=true needs a channel_id")

CASES = [
    # Empty lists: legal except in flattened-id mode.
    Case("all_reduce_no_groups_ok", AR.replace("@", "replica_groups={}"), None, r=4),
    Case("all_reduce_groups_omitted_ok", "ROOT %ar = f32[8]{0} all-reduce(%p), to_apply=%add",
         None, r=4),
    Case("flattened_id_empty_groups",
         AR.replace("@", "channel_id=1, replica_groups={}, use_global_device_ids=true"),
         "Replica groups must be specified in flattened-id mode", r=2, p=2),
    Case("flattened_id_groups_omitted",
         AR.replace("@", "channel_id=1, use_global_device_ids=true"),
         "Replica groups must be specified in flattened-id mode", r=2, p=2),
    # Step 1: an empty group, found while summing sizes, before any id is looked at.
    Case("empty_group", AR.replace("@", "replica_groups={{0},{}}"),
         "Instruction cannot have an empty replica group: {instr}", r=2),
    Case("empty_group_before_bad_id", AR.replace("@", "replica_groups={{7},{}}"),
         "Instruction cannot have an empty replica group: {instr}", r=2),
    # Step 2: ids in [0, n), n the number of ids listed, no repeats; first failure in order.
    Case("repeated_id", AR.replace("@", "replica_groups={{0,1},{2,3},{4,0}}"),
         "Replica 0 is repeated in instruction's replica-groups: {instr}", r=6),
    Case("repeated_within_group", AR.replace("@", "replica_groups={{0,1},{2,2}}"),
         "Replica 2 is repeated in instruction's replica-groups: {instr}", r=4),
    Case("missing_id_is_out_of_range", AR.replace("@", "replica_groups={{0,1},{2,3},{5,6}}"),
         "Replica 6 is out of range (should be in [0, 6) range) in instruction's "
         "replica-groups: {instr}", r=6),
    Case("negative_id", AR.replace("@", "replica_groups={{-1,0}}"),
         "Replica -1 is out of range (should be in [0, 2) range) in instruction's "
         "replica-groups: {instr}", r=2),
    Case("out_of_range_before_later_repeat", AR.replace("@", "replica_groups={{0,9},{0,1}}"),
         "Replica 9 is out of range (should be in [0, 4) range) in instruction's "
         "replica-groups: {instr}", r=4),
    Case("repeat_before_later_out_of_range", AR.replace("@", "replica_groups={{0,0},{9,1}}"),
         "Replica 0 is repeated in instruction's replica-groups: {instr}", r=4),
    # Step 3: n against the mode's count, skipped when that count is 1.
    Case("too_few_replicas", AR.replace("@", "replica_groups={{0,1}}"),
         "In kCrossReplica mode, replica groups should contain 8 replicas, but found 2: {instr}",
         r=8),
    Case("too_many_replicas", AR.replace("@", "replica_groups={{0,1},{2,3}}"),
         "In kCrossReplica mode, replica groups should contain 2 replicas, but found 4: {instr}",
         r=2),
    Case("replica_count_1_skips_count", AR.replace("@", "replica_groups={{0,1},{2,3}}"), None),
    Case("cross_replica_and_partition_lists_replicas_only",
         AR.replace("@", "channel_id=1, replica_groups={{0,1}}"), None, r=2, p=4),
    Case("cross_replica_and_partition_count",
         AR.replace("@", "channel_id=1, replica_groups={{0,1}}"),
         "In kCrossReplicaAndPartition mode, replica groups should contain 4 replicas, but "
         "found 2: {instr}", r=4, p=2),
    Case("cross_replica_and_partition_flag_false",
         AR.replace("@", "channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=false"),
         "In kCrossReplicaAndPartition mode, replica groups should contain 2 replicas, but "
         "found 4: {instr}", r=2, p=2),
    Case("cross_partition_count", A2A.replace("@", "channel_id=1, replica_groups={{0,1}}"),
         "In kCrossPartition mode, replica groups should contain 4 partitions, but found 2: "
         "{instr}", r=2, p=4),
    Case("cross_partition_ok", A2A.replace("@", "channel_id=1, replica_groups={{0,1},{2,3}}"),
         None, r=2, p=4),
    Case("flattened_id_mismatch_partition_count",
         AR.replace("@", "channel_id=1, replica_groups={{1,3},{0,2}}, "
                         "use_global_device_ids=true"),
         "In kFlattenedID mode, replica groups should contain 8 flattened IDs, but found 4: "
         "{instr}", r=1, p=8),
    Case("flattened_id_mismatch_ignored_without_group_checks",
         AR.replace("@", "channel_id=1, replica_groups={{1,3},{0,2}}, "
                         "use_global_device_ids=true"),
         None, r=1, p=8, check_replica_groups=False),
    Case("flattened_id_ok",
         AR.replace("@", "channel_id=1, replica_groups={{0,1},{2,3}}, "
                         "use_global_device_ids=true"), None, r=2, p=2),
    # Step 4: uniform sizes, except for all-reduce.
    Case("all_reduce_non_uniform_ok", AR.replace("@", "replica_groups={{0},{1,3},{2}}"), None,
         r=4),
    Case("all_reduce_start_non_uniform_ok",
         "%ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0},{1,2}}, to_apply=%add\n"
         "ROOT %ard = f32[8]{0} all-reduce-done(%ars)", None, r=3),
    Case("all_gather_non_uniform", AG.replace("@", "replica_groups={{0,1},{2}}"),
         "Replica groups expected to be of uniform size", r=3),
    Case("all_to_all_non_uniform", A2A.replace("@", "replica_groups={{0,1},{2}}"),
         "Replica groups expected to be of uniform size", r=3),
    # Compact encodings are checked on the groups they stand for.
    Case("iota_ok", AR.replace("@", "replica_groups=[2,4]<=[4,2]T(1,0)"), None, r=8),
    Case("iota_count", AR.replace("@", "replica_groups=[2,2]<=[4]"),
         "In kCrossReplica mode, replica groups should contain 8 replicas, but found 4: {instr}",
         r=8),
    Case("mesh_axes_ok",
         AR.replace("@", "channel_id=1, replica_groups=mesh['a'=2,'b'=4] {'b'}, "
                         "use_global_device_ids=true"), None, r=1, p=8),
    Case("mesh_axes_count",
         AR.replace("@", "channel_id=1, replica_groups=mesh['a'=2,'b'=2] {'b'}, "
                         "use_global_device_ids=true"),
         "In kFlattenedID mode, replica groups should contain 8 flattened IDs, but found 4: "
         "{instr}", r=1, p=8),
    # collective-broadcast: groups are never validated.
    Case("collective_broadcast_groups_not_checked",
         "ROOT %cb = f32[8]{0} collective-broadcast(%p), replica_groups={{0,7},{7}}", None, r=2),
    # Mode errors (5.3): all-gather computes its mode in the verifier, even without group
    # checks; all-reduce and reduce-scatter only reach the verifier with mode= written.
    Case("all_gather_global_ids_without_channel",
         AG.replace("@", "replica_groups={{0,1}}, use_global_device_ids=true"), MODE_ERROR, r=2),
    Case("all_gather_global_ids_without_channel_no_group_checks",
         AG.replace("@", "replica_groups={{0,1}}, use_global_device_ids=true"), MODE_ERROR, r=2,
         check_replica_groups=False),
    Case("reduce_scatter_global_ids_without_channel_with_mode",
         "ROOT %rs = f32[4]{0} reduce-scatter(%p), replica_groups={{0,1}}, dimensions={0}, "
         "use_global_device_ids=true, mode=cross_replica, to_apply=%add", MODE_ERROR, r=2),
    Case("all_reduce_global_ids_without_channel_with_mode_no_group_checks",
         "ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, "
         "use_global_device_ids=true, mode=cross_replica, to_apply=%add", None, r=2,
         check_replica_groups=False),
    Case("all_reduce_global_ids_without_channel_with_mode",
         "ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, "
         "use_global_device_ids=true, mode=cross_replica, to_apply=%add", MODE_ERROR, r=2),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_replica_groups(case: Case) -> None:
    assert_case(case)

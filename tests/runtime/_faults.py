"""Modules whose devices cannot all meet: the opposite-order conditional and a missing peer."""

OPPOSITE_ORDER = """HloModule opposite, num_partitions=2

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}

%reduce_first (a: f32[4]) -> f32[8] {
  %a = f32[4] parameter(0)
  %ar_a = f32[4] all-reduce(%a), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%sum
  ROOT %ag_a = f32[8] all-gather(%ar_a), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=true, dimensions={0}
}

%gather_first (b: f32[4]) -> f32[8] {
  %b = f32[4] parameter(0)
  %ag_b = f32[8] all-gather(%b), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=true, dimensions={0}
  ROOT %ar_b = f32[8] all-reduce(%ag_b), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%sum
}

ENTRY %main (p: f32[4]) -> f32[8] {
  %p = f32[4] parameter(0)
  %pid = u32[] partition-id()
  %branch = s32[] convert(%pid)
  ROOT %c = f32[8] conditional(%branch, %p, %p), branch_computations={%reduce_first, %gather_first}
}
"""

# Many all-reduces in a loop: long enough to kill a process in the middle.
LONG_LOOP = """HloModule loop, num_partitions=4

%sum (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %r = s32[] add(%x, %y)
}

%cond (s: (s32[], s32[4])) -> pred[] {
  %s = (s32[], s32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(100000000)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], s32[4])) -> (s32[], s32[4]) {
  %s = (s32[], s32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = s32[4] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %r = s32[4] all-reduce(%v), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  ROOT %t = (s32[], s32[4]) tuple(%j, %r)
}

ENTRY %main (p: s32[4]) -> s32[4] {
  %p = s32[4] parameter(0)
  %z = s32[] constant(0)
  %init = (s32[], s32[4]) tuple(%z, %p)
  %w = (s32[], s32[4]) while(%init), condition=%cond, body=%body
  ROOT %v = s32[4] get-tuple-element(%w), index=1
}
"""

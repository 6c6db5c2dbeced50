"""HLO programs that exercise every executed collective, group mode and control-flow form.

Each ``Program`` is a module text and the device assignments it runs under; the tests execute
it with ``meshtopo.runtime`` and with XLA itself (``_xla_run``) and compare device by device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SUM = """%sum (x: {t}[], y: {t}[]) -> {t}[] {{
  %x = {t}[] parameter(0)
  %y = {t}[] parameter(1)
  ROOT %r = {t}[] add(%x, %y)
}}
"""
REDUCER = """%{name} (x: {t}[], y: {t}[]) -> {t}[] {{
  %x = {t}[] parameter(0)
  %y = {t}[] parameter(1)
  ROOT %r = {t}[] {op}(%x, %y)
}}
"""


def reducer(name: str, op: str, t: str) -> str:
    """A scalar reduction computation ``%name`` applying ``op`` to two ``t`` values."""
    return REDUCER.format(name=name, op=op, t=t)


@dataclass(frozen=True)
class Program:
    """A module's text and the ``[replica][partition]`` tables it is run with."""

    name: str
    text: str
    tables: tuple[tuple[tuple[int, ...], ...], ...]
    xla_text: str | None = None  # what XLA runs instead, where its CPU client cannot run text


def _column_major(r: int, p: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(v) for v in row) for row in np.arange(r * p).reshape(p, r).T)


def _row_major(r: int, p: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(v) for v in row) for row in np.arange(r * p).reshape(r, p))


def _permuted(r: int, p: int) -> tuple[tuple[int, ...], ...]:
    ids = np.random.default_rng(r * 10 + p).permutation(r * p)
    return tuple(tuple(int(v) for v in row) for row in ids.reshape(r, p))


def tables(r: int, p: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """XLA's default column-major table, the row-major one and a permuted one (distinct)."""
    found: list[tuple[tuple[int, ...], ...]] = []
    for table in (_column_major(r, p), _row_major(r, p), _permuted(r, p)):
        if table not in found:
            found.append(table)
    return tuple(found)


def _module(name: str, r: int, p: int, computations: str, entry: str) -> str:
    return f"HloModule {name}, replica_count={r}, num_partitions={p}\n\n{computations}\n{entry}"


PROGRAMS: list[Program] = [
    Program("all_reduce_cross_replica", _module("m", 2, 4, SUM.format(t="s32"), """
ENTRY %main (p: s32[6]) -> s32[6] {
  %p = s32[6] parameter(0)
  ROOT %ar = s32[6] all-reduce(%p), replica_groups={}, to_apply=%sum
}
"""), tables(2, 4)),
    Program("all_reduce_replica_and_partition_max", _module("m", 2, 2, reducer("mx", "maximum", "f32"), """
ENTRY %main (p: f32[3,2]) -> f32[3,2] {
  %p = f32[3,2] parameter(0)
  ROOT %ar = f32[3,2] all-reduce(%p), channel_id=1, replica_groups={{1,0}}, use_global_device_ids=false, to_apply=%mx
}
"""), tables(2, 2)),
    Program("all_reduce_flattened_min_prod", _module("m", 2, 4, reducer("mn", "minimum", "s32") + reducer("pr", "multiply", "s32"), """
ENTRY %main (p: s32[4]) -> (s32[4], s32[4]) {
  %p = s32[4] parameter(0)
  %a = s32[4] all-reduce(%p), channel_id=1, replica_groups={{0,5,2,7},{4,1,6,3}}, use_global_device_ids=true, to_apply=%mn
  %b = s32[4] all-reduce(%p), channel_id=2, replica_groups=[4,2]<=[2,4]T(1,0), use_global_device_ids=true, to_apply=%pr
  ROOT %t = (s32[4], s32[4]) tuple(%a, %b)
}
"""), tables(2, 4)),
    Program("all_gather_rank_order", _module("m", 1, 8, "", """
ENTRY %main (p: s32[2,3]) -> s32[2,12] {
  %p = s32[2,3] parameter(0)
  ROOT %ag = s32[2,12] all-gather(%p), channel_id=1, replica_groups={{6,4,2,0},{1,7,3,5}}, dimensions={1}, use_global_device_ids=true
}
"""), tables(1, 8)),
    Program("all_gather_cross_replica_r4", _module("m", 4, 2, "", """
ENTRY %main (p: f32[3]) -> f32[6] {
  %p = f32[3] parameter(0)
  ROOT %ag = f32[6] all-gather(%p), replica_groups={{3,1},{0,2}}, dimensions={0}
}
"""), tables(4, 2)),
    Program("reduce_scatter_cross_replica", _module("m", 8, 1, SUM.format(t="f32"), """
ENTRY %main (p: f32[8,2]) -> f32[2,2] {
  %p = f32[8,2] parameter(0)
  ROOT %rs = f32[2,2] reduce-scatter(%p), replica_groups={{0,1,2,3},{7,6,5,4}}, dimensions={0}, to_apply=%sum
}
"""), tables(8, 1)),
    Program("reduce_scatter_replica_and_partition", _module("m", 2, 4, SUM.format(t="s32"), """
ENTRY %main (p: s32[16]) -> s32[2] {
  %p = s32[16] parameter(0)
  ROOT %rs = s32[2] reduce-scatter(%p), channel_id=3, replica_groups={{0,1}}, use_global_device_ids=false, dimensions={0}, to_apply=%sum
}
"""), tables(2, 4)),
    Program("all_to_all_cross_partition", _module("m", 2, 4, "", """
ENTRY %main (p: s32[8]) -> s32[8] {
  %p = s32[8] parameter(0)
  ROOT %a2a = s32[8] all-to-all(%p), channel_id=1, replica_groups={{0,3},{2,1}}, dimensions={0}
}
"""), tables(2, 4)),
    Program("all_to_all_tuple_cross_replica", _module("m", 4, 2, "", """
ENTRY %main (p: s32[2], q: s32[2]) -> (s32[2], s32[2]) {
  %p = s32[2] parameter(0)
  %q = s32[2] parameter(1)
  ROOT %a2a = (s32[2], s32[2]) all-to-all(%p, %q), replica_groups={{0,1},{3,2}}
}
"""), tables(4, 2)),
    Program("collective_permute_cross_replica", _module("m", 4, 2, "", """
ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2] parameter(0)
  ROOT %cp = f32[2] collective-permute(%p), source_target_pairs={{0,1},{1,2},{2,3}}
}
"""), tables(4, 2)),
    Program("collective_permute_cross_partition", _module("m", 2, 4, "", """
ENTRY %main (p: s32[3]) -> s32[3] {
  %p = s32[3] parameter(0)
  ROOT %cp = s32[3] collective-permute(%p), channel_id=1, source_target_pairs={{0,3},{3,0},{1,2}}
}
"""), tables(2, 4)),
    Program("async_pairs", _module("m", 2, 4, SUM.format(t="s32"), """
ENTRY %main (p: s32[4]) -> (s32[4], s32[8], s32[4]) {
  %p = s32[4] parameter(0)
  %ars = s32[4] all-reduce-start(%p), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, to_apply=%sum
  %ard = s32[4] all-reduce-done(%ars)
  %ags = (s32[4], s32[8]) all-gather-start(%ard), channel_id=3, replica_groups={{0,4},{1,5},{2,6},{3,7}}, use_global_device_ids=true, dimensions={0}
  %agd = s32[8] all-gather-done(%ags)
  %cps = (s32[4], s32[4], u32[], u32[]) collective-permute-start(%p), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %cpd = s32[4] collective-permute-done(%cps)
  ROOT %t = (s32[4], s32[8], s32[4]) tuple(%ard, %agd, %cpd)
}
"""), tables(2, 4), xla_text=_module("m", 2, 4, SUM.format(t="s32"), """
ENTRY %main (p: s32[4]) -> (s32[4], s32[8], s32[4]) {
  %p = s32[4] parameter(0)
  %ard = s32[4] all-reduce(%p), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, to_apply=%sum
  %agd = s32[8] all-gather(%ard), channel_id=3, replica_groups={{0,4},{1,5},{2,6},{3,7}}, use_global_device_ids=true, dimensions={0}
  %cpd = s32[4] collective-permute(%p), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %t = (s32[4], s32[8], s32[4]) tuple(%ard, %agd, %cpd)
}
""")),
    Program("control_flow_and_elementwise", _module("m", 2, 4, SUM.format(t="s32") + """
%even (a: s32[4]) -> s32[4] {
  %a = s32[4] parameter(0)
  ROOT %ag = s32[4] all-reduce(%a), channel_id=5, replica_groups={{0,2},{4,6},{1,3},{5,7}}, use_global_device_ids=true, to_apply=%sum
}

%odd (b: s32[4]) -> s32[4] {
  %b = s32[4] parameter(0)
  %two = s32[] constant(2)
  %bt = s32[4] broadcast(%two), dimensions={}
  ROOT %m = s32[4] multiply(%b, %bt)
}

%cond (s: (s32[], s32[4])) -> pred[] {
  %s = (s32[], s32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], s32[4])) -> (s32[], s32[4]) {
  %s = (s32[], s32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = s32[4] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %r = s32[4] all-reduce(%v), replica_groups={}, to_apply=%sum
  %k = s32[4] constant({1, -2, 3, -4})
  %d = s32[4] divide(%r, %k)
  ROOT %t = (s32[], s32[4]) tuple(%j, %d)
}

%helper (h: s32[4]) -> s32[4] {
  %h = s32[4] parameter(0)
  ROOT %n = s32[4] negate(%h)
}
""", """
ENTRY %main (p: s32[4]) -> (s32[4], s32[4], f32[2,4], f32[2,2], s32[]) {
  %p = s32[4] parameter(0)
  %pid = u32[] partition-id(), sharding={manual}
  %rid = u32[] replica-id()
  %two = u32[] constant(2)
  %rem = u32[] remainder(%pid, %two)
  %branch = s32[] convert(%rem)
  %c = s32[4] conditional(%branch, %p, %p), branch_computations={%even, %odd}
  %z = s32[] constant(0)
  %init = (s32[], s32[4]) tuple(%z, %c)
  %w = (s32[], s32[4]) while(%init), condition=%cond, body=%body
  %wv = s32[4] get-tuple-element(%w), index=1
  %called = s32[4] call(%wv), to_apply=%helper
  %f = f32[4] convert(%called)
  %io = f32[4] iota(), iota_dimension=0
  %s = f32[2] slice(%f), slice={[1:4:2]}
  %sl2 = f32[2] slice(%io), slice={[0:2]}
  %cat = f32[4] concatenate(%s, %sl2), dimensions={0}
  %rs = f32[2,2] reshape(%cat)
  %tr = f32[2,2] transpose(%rs), dimensions={1,0}
  %b = f32[2,4] broadcast(%io), dimensions={1}
  %bt = f32[2,4] broadcast(%s), dimensions={0}
  %cmp = pred[2,4] compare(%b, %bt), direction=GT
  %sel = f32[2,4] select(%cmp, %b, %bt)
  %ridv = s32[] convert(%rid)
  ROOT %t = (s32[4], s32[4], f32[2,4], f32[2,2], s32[]) tuple(%c, %called, %sel, %tr, %ridv)
}
"""), tables(2, 4)[:2]),
]


def combined(replicas: int, partitions: int) -> str:
    """One module with every collective opcode XLA's CPU client runs from this text (all but
    collective-broadcast, which aborts it) in several group modes, for ``replicas x
    partitions`` devices (8 must divide by the device count)."""
    n = replicas * partitions
    everyone = ",".join(str(i) for i in reversed(range(n)))
    partitions_group = ",".join(str(i) for i in range(partitions))
    cycle = ",".join(f"{{{p},{(p + 1) % partitions}}}" for p in range(partitions))
    return _module("combined", replicas, partitions,
                   SUM.format(t="s32") + reducer("mx", "maximum", "s32"), f"""
ENTRY %main (p: s32[8]) -> (s32[8], s32[8], s32[{8 * n}], s32[{8 // n}], s32[8], s32[8]) {{
  %p = s32[8] parameter(0)
  %ar = s32[8] all-reduce(%p), replica_groups={{}}, to_apply=%sum
  %mx = s32[8] all-reduce(%p), channel_id=1, replica_groups={{{{{everyone}}}}}, use_global_device_ids=true, to_apply=%mx
  %ag = s32[{8 * n}] all-gather(%p), channel_id=2, replica_groups={{{{{everyone}}}}}, use_global_device_ids=true, dimensions={{0}}
  %rs = s32[{8 // n}] reduce-scatter(%p), channel_id=3, replica_groups={{}}, use_global_device_ids=false, dimensions={{0}}, to_apply=%sum
  %a2a = s32[8] all-to-all(%p), channel_id=4, replica_groups={{{{{partitions_group}}}}}, dimensions={{0}}
  %cp = s32[8] collective-permute(%p), channel_id=5, source_target_pairs={{{cycle}}}
  ROOT %t = (s32[8], s32[8], s32[{8 * n}], s32[{8 // n}], s32[8], s32[8]) tuple(%ar, %mx, %ag, %rs, %a2a, %cp)
}}
""")


PROGRAMS.append(Program("combined_2x4", combined(2, 4), tables(2, 4)))
PROGRAMS.append(Program("combined_4x2", combined(4, 2), tables(4, 2)[2:]))

# A scheduled dump with a fusion (not executed) and bf16 buffers: replayed, not run.
SCHEDULED = """HloModule sched, is_scheduled=true, num_partitions=4

%sum (x: bf16[], y: bf16[]) -> bf16[] {
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %r = bf16[] add(%x, %y)
}

%fused (a: bf16[1024]) -> bf16[1024] {
  %a = bf16[1024] parameter(0)
  ROOT %n = bf16[1024] negate(%a)
}

ENTRY %main (p: bf16[1024]) -> bf16[4096] {
  %p = bf16[1024] parameter(0)
  %f = bf16[1024] fusion(%p), kind=kLoop, calls=%fused
  %ars = bf16[1024] all-reduce-start(%f), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  %ard = bf16[1024] all-reduce-done(%ars)
  %cp = bf16[1024] collective-permute(%ard), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %ag = bf16[4096] all-gather(%cp), channel_id=3, replica_groups=[1,4]<=[4], use_global_device_ids=true, dimensions={0}
}
"""


PROGRAMS.append(Program("async_wrapped_all_reduce", _module("m", 4, 2, SUM.format(t="f32") + """
%wrapped (w: f32[4]) -> f32[4] {
  %w = f32[4] parameter(0)
  ROOT %ar = f32[4] all-reduce(%w), replica_groups={{0,2},{1,3}}, to_apply=%sum
}
""", """
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %start = ((f32[4]), f32[4]) async-start(%p), calls=%wrapped
  ROOT %done = f32[4] async-done(%start)
}
"""), tables(4, 2)[1:]))


def low_precision(element_type: str) -> str:
    """Every collective opcode on ``element_type`` (bf16 or an f8 type: ml_dtypes' arrays),
    on 2 replicas x 2 partitions (XLA's CPU collectives reduce these in float32 and round
    once)."""
    t = element_type
    return _module(f"low_{t}", 2, 2, SUM.format(t=t) + reducer("mx", "maximum", t), f"""
ENTRY %main (p: {t}[8]) -> ({t}[8], {t}[8], {t}[32], {t}[4], {t}[8], {t}[8], f32[8]) {{
  %p = {t}[8] parameter(0)
  %ar = {t}[8] all-reduce(%p), channel_id=1, replica_groups={{{{3,1,0,2}}}}, use_global_device_ids=true, to_apply=%sum
  %mx = {t}[8] all-reduce(%p), replica_groups={{}}, to_apply=%mx
  %ag = {t}[32] all-gather(%p), channel_id=2, replica_groups={{{{1,0}}}}, use_global_device_ids=false, dimensions={{0}}
  %rs = {t}[4] reduce-scatter(%p), channel_id=3, replica_groups={{{{0,1}},{{2,3}}}}, use_global_device_ids=true, dimensions={{0}}, to_apply=%sum
  %a2a = {t}[8] all-to-all(%p), channel_id=4, replica_groups={{{{1,0}}}}, dimensions={{0}}
  %cp = {t}[8] collective-permute(%p), channel_id=5, source_target_pairs={{{{0,1}}}}
  %wide = f32[8] convert(%ar)
  ROOT %t = ({t}[8], {t}[8], {t}[32], {t}[4], {t}[8], {t}[8], f32[8]) tuple(%ar, %mx, %ag, %rs, %a2a, %cp, %wide)
}}
""")


PROGRAMS.extend(Program(f"low_precision_{t}", low_precision(t), tables(2, 2)[2:])
                for t in ("bf16", "f8e4m3fn", "f8e5m2"))

"""Combiners: which collectives merge, why the others cannot, and that the merged module
computes what the original does (executed with mt.runtime and read back by jaxlib)."""

from __future__ import annotations

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.hlo.passes import run_combine_collectives

from ._xla import xla

pytestmark = pytest.mark.jax

TEXT = """HloModule m, replica_count=4
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %main (p: f32[8], q: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %q = f32[8]{0} parameter(1)
  %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,3}}, to_apply=%add
  %n = f32[8]{0} negate(%a)
  %b = f32[8]{0} all-reduce(%q), replica_groups={{0,1},{2,3}}, to_apply=%add
  %c = f32[8]{0} all-reduce(%a), replica_groups={{0,1},{2,3}}, to_apply=%add
  %d = f32[8]{0} all-reduce(%q), replica_groups={{0,2},{1,3}}, to_apply=%add
  %t0 = f32[8]{0} add(%n, %b)
  %t1 = f32[8]{0} add(%t0, %c)
  ROOT %t = f32[8]{0} add(%t1, %d)
}
"""


def _module() -> mt.hlo.Module:
    return mt.hlo.parse_module(TEXT)


def test_decisions_name_the_reason() -> None:
    result = run_combine_collectives(_module())
    assert [(d.instruction, d.action, d.reason) for d in result.decisions] == [
        ("a", "combined", "into %a.combined with %a, %b"),
        ("b", "combined", "into %a.combined with %a, %b"),
        ("c", "kept", "starts a new group: depends on %a, a member of its group"),
        ("d", "kept", "replica groups differ from %a: {{0,2},{1,3}} vs {{0,1},{2,3}}"),
    ]
    combined = result.module.entry.instruction("a.combined")
    assert (combined.opcode, combined.operands) == ("all-reduce", ("p", "q"))
    assert result.module.entry.instruction("b").opcode == "get-tuple-element"
    xla(result.module)


def test_threshold_keeps_apart() -> None:
    result = run_combine_collectives(_module(), threshold_bytes=40)
    assert ("b", "kept", "starts a new group: the group would hold 64 bytes > threshold 40") \
        in [(d.instruction, d.action, d.reason) for d in result.decisions]


def test_combined_module_computes_the_same() -> None:
    module = _module()
    combined = run_combine_collectives(module).module
    rng = np.random.default_rng(0)
    inputs = {d: [rng.standard_normal(8).astype(np.float32) for _ in range(2)]
              for d in range(4)}
    before = mt.runtime.execute(module, inputs, timeout=60)
    after = mt.runtime.execute(combined, inputs, timeout=60)
    for device in range(4):
        np.testing.assert_allclose(after[device], before[device], rtol=1e-6)


SPELLINGS = """HloModule m, num_partitions=8
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %explicit = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,4},{1,5},{2,6},{3,7}}, use_global_device_ids=true, to_apply=%add
  %iota = f32[8]{0} all-reduce(%p), channel_id=2, replica_groups=[4,2]<=[2,4]T(1,0), use_global_device_ids=true, to_apply=%add
  %mesh = f32[8]{0} all-reduce(%p), channel_id=3, replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_0'}, use_global_device_ids=true, to_apply=%add
  %reordered = f32[8]{0} all-reduce(%p), channel_id=4, replica_groups={{1,5},{0,4},{2,6},{3,7}}, use_global_device_ids=true, to_apply=%add
  %sum0 = f32[8]{0} add(%explicit, %iota)
  %sum1 = f32[8]{0} add(%sum0, %mesh)
  ROOT %sum2 = f32[8]{0} add(%sum1, %reordered)
}
"""


def test_one_group_list_in_three_spellings_combines() -> None:
    # XLA's combine keys hold replica_groups() expanded, in order (GetAllReduceKey): the three
    # spellings of {{0,4},{1,5},{2,6},{3,7}} are one key; the same groups in another order are
    # another.
    module = mt.hlo.parse_module(SPELLINGS)
    xla(module)  # XLA reads every spelling
    result = run_combine_collectives(module)
    assert [(d.instruction, d.action, d.reason) for d in result.decisions] == [
        ("explicit", "combined", "into %explicit.combined with %explicit, %iota, %mesh"),
        ("iota", "combined", "into %explicit.combined with %explicit, %iota, %mesh"),
        ("mesh", "combined", "into %explicit.combined with %explicit, %iota, %mesh"),
        ("reordered", "kept", "replica groups differ from %explicit: "
                              "{{1,5},{0,4},{2,6},{3,7}} vs {{0,4},{1,5},{2,6},{3,7}}"),
    ]
    xla(result.module)
    inputs = {d: [np.arange(8, dtype=np.float32) * (d + 1)] for d in range(8)}
    before = mt.runtime.execute(module, inputs, timeout=60)
    after = mt.runtime.execute(result.module, inputs, timeout=60)
    for device in range(8):
        np.testing.assert_array_equal(after[device], before[device])

"""XLA's async_collective_creator_test.cc cases, each judged by jaxlib reading the output."""

from __future__ import annotations

import pytest

import meshtopo as mt
from meshtopo.hlo.passes import async_collective_creator as create

from ._xla import entry, opcode, root, sequence, xla

pytestmark = pytest.mark.jax

ADD = """
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT add = f32[] add(x, y)
}
"""


def _module(body: str, header: str = "HloModule test", computations: str = "") -> mt.hlo.Module:
    return mt.hlo.parse_module(f"{header}\n{computations}\nENTRY entry {{\n{body}\n}}\n")


def _split(module: mt.hlo.Module, **options: object) -> tuple[object, object, object]:
    parsed = xla(create(module, **options))  # type: ignore[arg-type]
    done = root(parsed)
    assert len(done.operands()) == 1
    return parsed, done, done.operands()[0]


def test_splits_single_all_reduce_generic_at_threshold() -> None:
    module = _module("p0 = f32[1024] parameter(0)\nROOT ar = f32[1024] all-reduce(p0), "
                     "to_apply=add", computations=ADD)
    parsed, done, start = _split(module, convert={"all-reduce"}, all_reduce_min_bytes=4096,
                                 use_generic_async_start_done=True)
    assert len(entry(parsed).instructions()) == 3
    assert (opcode(done), opcode(start)) == ("kAsyncDone", "kAsyncStart")
    assert opcode(start.async_wrapped_root()) == "kAllReduce"


def test_below_threshold_split_only_when_size_check_ignored() -> None:
    module = _module("p0 = f32[100] parameter(0)\nROOT ar = f32[100] all-reduce(p0), "
                     "to_apply=add", computations=ADD)
    parsed, done, start = _split(module, convert={"all-reduce"}, all_reduce_min_bytes=4096,
                                 use_generic_async_start_done=True, ignore_size_check=True)
    assert len(entry(parsed).instructions()) == 3
    assert (opcode(done), opcode(start)) == ("kAsyncDone", "kAsyncStart")
    result = mt.hlo.passes.run_async_collective_creator(
        module, convert={"all-reduce"}, all_reduce_min_bytes=4096)
    assert not result.changed
    assert result.decisions[0].reason == "400 bytes < threshold 4096"
    parsed = xla(result.module)
    assert len(entry(parsed).instructions()) == 2
    assert opcode(root(parsed)) == "kAllReduce"


@pytest.mark.parametrize("generic", [True, False])
def test_splits_single_all_gather(generic: bool) -> None:
    module = _module("p0 = f32[1] parameter(0)\nROOT ag = f32[8] all-gather(p0), "
                     "dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}")
    parsed, done, start = _split(module, convert={"all-gather"},
                                 use_generic_async_start_done=generic)
    assert len(entry(parsed).instructions()) == 3
    expected = ("kAsyncDone", "kAsyncStart") if generic else ("kAllGatherDone",
                                                              "kAllGatherStart")
    assert (opcode(done), opcode(start)) == expected
    if not generic:
        assert "(f32[1]{0}, f32[8]{0}) all-gather-start(" in parsed.to_string()


def test_combined_collective_permute_default_config_converts_nothing() -> None:
    text = """HloModule test, entry_computation_layout={(f32[128]{0}, f32[128]{0})->f32[128]{0}}
ENTRY %entry (param0: f32[128], param1: f32[128]) -> f32[128] {
  %param0 = f32[128]{0} parameter(0), sharding={maximal device=0}
  %param1 = f32[128]{0} parameter(1), sharding={maximal device=1}
  %collective-permute = (f32[128]{0}, f32[128]{0}) collective-permute(f32[128]{0} %param0, f32[128]{0} %param1), channel_id=1, source_target_pairs={{0,1}, {1,0}}
  %get-tuple-element = f32[128]{0} get-tuple-element((f32[128]{0}, f32[128]{0}) %collective-permute), index=0, sharding={maximal device=1}
  %get-tuple-element.1 = f32[128]{0} get-tuple-element((f32[128]{0}, f32[128]{0}) %collective-permute), index=1, sharding={maximal device=1}
  ROOT %add.1 = f32[128]{0} add(f32[128]{0} %get-tuple-element, f32[128]{0} %get-tuple-element.1), sharding={maximal device=1}
}
"""
    module = mt.hlo.parse_module(text)
    out = create(module)
    assert xla(out).to_string() == xla(module).to_string()
    combined = create(module, convert={"collective-permute"})
    assert "((f32[128]{0}, f32[128]{0}), (f32[128]{0}, f32[128]{0})) collective-permute-start" \
        in xla(combined).to_string()


@pytest.mark.parametrize("scheduled", [False, True])
def test_splits_single_collective_permute(scheduled: bool) -> None:
    header = "HloModule test" + (", is_scheduled=true" if scheduled else "")
    module = _module("%p0 = bf16[8]{0} parameter(0)\nROOT %collective-permute.1 = bf16[8]{0} "
                     "collective-permute(bf16[8]{0} p0), source_target_pairs={{0,1},{1,2},{2,3}}, "
                     "channel_id=1", header)
    parsed, done, start = _split(module, convert={"collective-permute"})
    assert len(entry(parsed).instructions()) == 3
    assert (opcode(done), opcode(start)) == ("kCollectivePermuteDone", "kCollectivePermuteStart")
    if scheduled:
        assert sequence(parsed) == ["p0", "collective-permute.1-start", "collective-permute.1"]
        assert len(sequence(parsed)) == len(sequence(xla(module))) + 1


def test_splits_single_in_place_collective_permute() -> None:
    text = """HloModule module
ENTRY %module_spmd () -> f32[4,4,128] {
  %constant.8 = u32[] constant(0)
  %constant.5 = u32[] constant(2)
  %tuple.1 = (u32[], u32[], u32[]) tuple(u32[] %constant.8, u32[] %constant.8, u32[] %constant.8)
  %tuple = (u32[], u32[], u32[]) tuple(u32[] %constant.5, u32[] %constant.8, u32[] %constant.8)
  %custom-call = f32[4,4,128]{2,1,0:T(4,128)} custom-call(), custom_call_target="SomeCustomCall"
  ROOT %collective-permute = f32[4,4,128]{2,1,0:T(4,128)} collective-permute(f32[4,4,128]{2,1,0:T(4,128)} %custom-call, f32[4,4,128]{2,1,0:T(4,128)} %custom-call, (u32[], u32[], u32[]) %tuple, (u32[], u32[], u32[]) %tuple.1), channel_id=958, source_target_pairs={{0,4},{4,0},{1,5},{5,1},{2,6},{6,2},{3,7},{7,3}}, slice_sizes={{2,4,128}}
}
"""
    parsed, done, start = _split(mt.hlo.parse_module(text), convert={"collective-permute"})
    assert len(entry(parsed).instructions()) == 7
    assert (opcode(done), opcode(start)) == ("kCollectivePermuteDone", "kCollectivePermuteStart")


@pytest.mark.parametrize(("opcode_name", "body", "wrapped"), [
    ("collective-broadcast", "p0 = f32[8,16] parameter(0)\nROOT cb = f32[8,16] "
     "collective-broadcast(p0), replica_groups={{7,0,1,2,3,4,5,6}}", "kCollectiveBroadcast"),
    ("all-to-all", "p0 = f32[8,16] parameter(0)\nROOT ata = f32[8,16] all-to-all(p0), "
     "dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}", "kAllToAll"),
    ("reduce-scatter", "p0 = f32[8,16] parameter(0)\nROOT ata = f32[1,16] reduce-scatter(p0), "
     "dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=add", "kReduceScatter"),
])
def test_generic_wrappers(opcode_name: str, body: str, wrapped: str) -> None:
    module = _module(body, computations=ADD)
    parsed, done, start = _split(module, convert={opcode_name})
    assert len(entry(parsed).instructions()) == 3
    assert (opcode(done), opcode(start)) == ("kAsyncDone", "kAsyncStart")
    assert opcode(start.async_wrapped_root()) == wrapped


def test_splits_single_ragged_all_to_all() -> None:
    body = """input = f32[64,8,128]{2,1,0:T(8,128)} parameter(0)
c0 = f32[] constant(0)
output = f32[64,8,128]{2,1,0:T(8,128)S(1)} broadcast(c0), dimensions={}
input_offsets = s32[8]{0} parameter(1)
send_sizes = s32[8]{0} parameter(2)
output_offsets = s32[8]{0} parameter(3)
recv_sizes = s32[8]{0} parameter(4)
ROOT ra2a = f32[64,8,128]{2,1,0:T(8,128)S(1)} ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes), replica_groups={{0,1,2,3,4,5,6,7}}"""
    parsed, done, start = _split(_module(body, "HloModule RaggedAllToAll"),
                                 convert={"ragged-all-to-all"})
    assert len(entry(parsed).instructions()) == 9
    assert (opcode(done), opcode(start)) == ("kAsyncDone", "kAsyncStart")
    assert opcode(start.async_wrapped_root()) == "kRaggedAllToAll"


def test_control_predecessor_moves_to_start_successor_stays_with_done() -> None:
    module = _module("p0 = f32[128] parameter(0)\nag = f32[1024] all-gather(p0), dimensions={0}, "
                     "replica_groups={{0,1,2,3,4,5,6,7}}, control-predecessors={p0}\n"
                     "p1 = f32[128] parameter(1), control-predecessors={ag}\n"
                     "ROOT sum = f32[1024] add(ag, ag)")
    out = create(module, convert={"all-gather"}, all_gather_min_bytes=4096,
                 use_generic_async_start_done=True)
    parsed = xla(out)
    total = root(parsed)
    assert opcode(total) == "kAdd"
    done = total.operands()[1]
    start = done.operands()[0]
    assert (opcode(done), opcode(start)) == ("kAsyncDone", "kAsyncStart")
    assert out.entry.instruction(start.name).control_predecessors == ("p0",)
    assert out.entry.instruction(done.name).control_predecessors == ()
    assert out.entry.instruction("p1").control_predecessors == (done.name,)


@pytest.mark.parametrize(("opcode_name", "body"), [
    ("all-gather", "p0 = f32[128] parameter(0)\nROOT ag = f32[1024] all-gather(p0), "
     "dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}"),
    ("all-reduce", "p0 = f32[1024] parameter(0)\nROOT ar = f32[1024] all-reduce(p0), "
     "replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=add"),
    ("collective-permute", "p0 = f32[1024] parameter(0)\nROOT cp = f32[1024] "
     "collective-permute(p0), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}"),
    ("all-to-all", "p0 = f32[1024] parameter(0)\nROOT a2a = f32[1024] all-to-all(p0), "
     "replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}"),
])
def test_frontend_attributes_on_start_and_done(opcode_name: str, body: str) -> None:
    module = _module(body + ', frontend_attributes={_scheduling_group_id="0"}', computations=ADD)
    printed = xla(create(module, convert={opcode_name})).to_string()
    entry_block = printed[printed.index("\nENTRY"):]
    assert entry_block.count('_scheduling_group_id="0"') == 2


def test_splits_multi_operand_all_gather() -> None:
    module = _module("p0 = f32[1] parameter(0)\nROOT ag = (f32[8], f32[8]) all-gather(p0, p0), "
                     "dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}")
    parsed, done, start = _split(module, convert={"all-gather"}, use_generic_async_start_done=True)
    assert len(entry(parsed).instructions()) == 3
    assert (opcode(done), opcode(start)) == ("kAsyncDone", "kAsyncStart")
    assert len(start.operands()) == 2


def test_input_module_is_not_changed() -> None:
    module = _module("p0 = f32[1024] parameter(0)\nROOT ar = f32[1024] all-reduce(p0), "
                     "to_apply=add", computations=ADD)
    before = module.to_text()
    create(module, convert={"all-reduce"})
    assert module.to_text() == before
    assert [i.opcode for i in module.entry.instructions] == ["parameter", "all-reduce"]


def test_unknown_opcode_is_refused() -> None:
    module = _module("ROOT p0 = f32[1] parameter(0)")
    with pytest.raises(mt.InvalidArgumentError, match=r"convert names opcodes .*\['add'\]"):
        create(module, convert={"add"})


@pytest.mark.parametrize("generic", [False, True])
def test_converted_module_computes_the_same(generic: bool) -> None:
    """Every collective converted (and converted back): mt.runtime executes each module on 8
    devices to the original's values."""
    import numpy as np

    from .test_properties import OUTPUTS, _text

    ops = sorted(OUTPUTS)
    text = _text(ops, [False] * len(ops)).replace("  %t = ", "  ROOT %t = ").replace(
        "  ROOT %z = f32[] constant(0)\n", "").replace("%main (p: f32[64]) -> f32[]", "%main")
    module = mt.hlo.parse_module(text)
    split = create(module, convert=set(ops), use_generic_async_start_done=generic)
    back = mt.hlo.passes.convert_async_collectives_to_sync(split)
    assert sum(i.opcode.endswith("-done") for i in split.entry.instructions) == len(ops)
    xla(split)
    xla(back)
    inputs = {d: [np.arange(64, dtype=np.float32) * (d + 1)] for d in range(8)}
    expected = mt.runtime.execute(module, inputs, timeout=60)
    for out in (split, back):
        got = mt.runtime.execute(out, inputs, timeout=60)
        for device in range(8):
            for value, want in zip(got[device], expected[device], strict=True):
                np.testing.assert_array_equal(value, want)

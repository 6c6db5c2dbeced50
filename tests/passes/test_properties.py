"""Properties over generated modules: the creator's rule on each collective, jaxlib reading
every result, and converting back giving the module's instructions when nothing overlaps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo.hlo import passes

from ._xla import entry, xla

jax_hlo = pytest.importorskip("jaxlib._hlo")
pytestmark = pytest.mark.jax

OUTPUTS = {"all-reduce": ("f32[64]{0}", "to_apply=%add"),
           "all-gather": ("f32[512]{0}", "dimensions={0}"),
           "reduce-scatter": ("f32[8]{0}", "dimensions={0}, to_apply=%add"),
           "all-to-all": ("f32[64]{0}", "dimensions={0}"),
           "collective-permute": ("f32[64]{0}", "")}
GROUPS = "replica_groups={{0,1,2,3,4,5,6,7}}"


def _text(ops: list[str], work: list[bool]) -> str:
    lines = ["HloModule m, is_scheduled=true, replica_count=8",
             "%add (x: f32[], y: f32[]) -> f32[] {", "  %x = f32[] parameter(0)",
             "  %y = f32[] parameter(1)", "  ROOT %s = f32[] add(%x, %y)", "}",
             "ENTRY %main (p: f32[64]) -> f32[] {", "  %p = f32[64]{0} parameter(0)"]
    names = []
    for n, (op, busy) in enumerate(zip(ops, work, strict=True)):
        shape, extra = OUTPUTS[op]
        pairs = "source_target_pairs={{0,1},{1,0}}" if op == "collective-permute" else GROUPS
        attributes = ", ".join(a for a in (pairs, extra) if a)
        lines.append(f"  %k{n} = {shape} {op}(%p), {attributes}")
        if busy:
            lines.append(f"  %w{n} = f32[64]{{0}} add(%p, %p)")
        names.append(f"k{n}")
    lines.append(f"  %t = ({', '.join(OUTPUTS[o][0] for o in ops)}) tuple("
                 f"{', '.join('%' + n for n in names)})")
    lines.append("  ROOT %z = f32[] constant(0)")
    return "\n".join([*lines, "}", ""])


@settings(max_examples=25)
@given(st.lists(st.sampled_from(sorted(OUTPUTS)), min_size=1, max_size=6).flatmap(
    lambda ops: st.tuples(st.just(ops), st.lists(st.booleans(), min_size=len(ops),
                                                 max_size=len(ops)))),
       st.sets(st.sampled_from(sorted(OUTPUTS))), st.sampled_from([0, 32, 256, 4096]))
def test_creator_rule_and_way_back(case: tuple[list[str], list[bool]], convert: set[str],
                                   min_bytes: int) -> None:
    ops, work = case
    text = _text(ops, work)
    module = mt.hlo.parse_module(text)
    assert xla(module).to_string() == jax_hlo.hlo_module_from_text(text).to_string()
    result = passes.run_async_collective_creator(
        module, convert=convert, all_reduce_min_bytes=min_bytes,
        all_gather_min_bytes=min_bytes, reduce_scatter_min_bytes=min_bytes)
    sizes = {c.name: c.shape.byte_size for c in module.collectives}
    expected = [op in convert and (op not in ("all-reduce", "all-gather", "reduce-scatter")
                                   or (sizes[f"k{n}"] or 0) >= min_bytes)
                for n, op in enumerate(ops)]
    assert [d.action == "converted" for d in result.decisions] == expected
    parsed = xla(result.module)
    assert len(entry(parsed).instructions()) == len(module.entry.instructions) + sum(expected)
    back = passes.run_convert_async_collectives_to_sync(result.module)
    assert [d.action == "converted" for d in back.decisions] == [
        True for converted in expected if converted]  # each start sits right before its done
    xla(back.module)
    assert [(i.name, i.opcode, i.operands) for i in back.module.entry.instructions] == [
        (i.name, i.opcode, i.operands) for i in module.entry.instructions]

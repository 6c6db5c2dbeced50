"""Lines that differ only in the computation ``calls=`` or ``to_apply=`` names share what the
fast path checks once, and read as the general reader reads them."""

from __future__ import annotations

import pytest

from meshtopo import hlo

from ._fast_paths import errors_both_ways, structure, turn_off

HEAD = "HloModule m, num_partitions=4\n"


def _reduction(name: str, op: str) -> str:
    return (f"%{name} (x: f32[], y: f32[]) -> f32[] {{\n  %x = f32[] parameter(0)\n"
            f"  %y = f32[] parameter(1)\n  ROOT %r = f32[] {op}(%x, %y)\n}}\n")


def _fused(name: str) -> str:
    return (f"%{name} (a: f32[8]) -> f32[8] {{\n  %a = f32[8]{{0}} parameter(0)\n"
            f"  ROOT %n = f32[8]{{0}} negate(%a)\n}}\n")


def _module(body: list[str]) -> str:
    computations = (_reduction("sum", "add") + _reduction("top", "maximum")
                    + "".join(_fused(f"fused.{i}") for i in range(3)))
    lines = "".join(f"  {line}\n" for line in body)
    return (HEAD + computations + "ENTRY %main (p: f32[8]) -> f32[8] {\n"
            "  %p = f32[8]{0} parameter(0)\n" + lines + "}\n")


BODY = [
    '%f0 = f32[8]{0} fusion(%p), kind=kLoop, calls=%fused.0, metadata={op_name="a"}',
    '%f1 = f32[8]{0} fusion(%f0), kind=kLoop, calls=%fused.1, metadata={op_name="a"}',
    "%f2 = f32[8]{0} fusion(%f1), kind=kLoop, calls=fused.2",
    "%ar0 = f32[8]{0} all-reduce(%f2), channel_id=1, replica_groups=[1,4]<=[4], "
    "use_global_device_ids=true, to_apply=%sum",
    "%ar1 = f32[8]{0} all-reduce(%ar0), channel_id=2, replica_groups=[1,4]<=[4], "
    'use_global_device_ids=true, to_apply=%top, metadata={op_name="b"}',
    "ROOT %ar2 = f32[8]{0} all-reduce(%ar1), channel_id=3, replica_groups=[1,4]<=[4], "
    "use_global_device_ids=true, to_apply=%sum",
]


def test_each_line_keeps_its_own_callee(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _module(BODY)
    module = hlo.parse_module(text)
    entry = module.computations["main"]
    assert [i.called_computations for i in entry.instructions[1:4]] == [
        ("fused.0",), ("fused.1",), ("fused.2",)]
    assert [(c.to_apply, c.reduction) for c in module.collectives] == [
        ("sum", "sum"), ("top", "max"), ("sum", "sum")]
    assert entry.instructions[2].attributes["calls"] == "%fused.1"
    fast = structure(module)
    turn_off(monkeypatch)
    assert structure(hlo.parse_module(text)) == fast


@pytest.mark.parametrize(("line", "message"), [
    ("%f9 = f32[8]{0} fusion(%p), kind=kLoop, calls=%missing", "computation does not exist: missing"),
    ("%ar9 = f32[8]{0} all-reduce(%p), to_apply=%nothing", "computation does not exist: nothing"),
    ("%f9 = f32[8]{0} fusion(%p), kind=kLoop, calls=%fused.0, calls=%fused.1",
     "attribute calls already exists"),
    ("%f9 = f32[8]{0} fusion(%p), kind=kLoop, calls=%fused.0, to_apply=%sum",
     'unexpected attribute "to_apply". Allowed attributes: backend_config, calls,'),
    ("%c9 = f32[8]{0} copy(%p), channel_id=4, replica_groups={{0,1,2,3}}",
     'unexpected attribute "channel_id"'),
])
def test_errors_in_open_callees_are_the_general_readers(
        monkeypatch: pytest.MonkeyPatch, line: str, message: str) -> None:
    text = _module([*BODY[:-1], line, BODY[-1]])
    fast, general = errors_both_ways(text, monkeypatch)
    assert fast == general and message in fast

"""The reduce-scatter combiner key and the sets a combiner would merge."""

from __future__ import annotations

import pytest

import meshtopo as mt
from meshtopo import neuron
from meshtopo.hlo import parse_module

from ._modules import PARAMS, module, rs

MODEL = "[2,4]<=[8]"
DATA = "{{0,4},{1,5},{2,6},{3,7}}"
TUPLE2 = "(f32[2,4]{1,0}, f32[2,4]{1,0})"
TUPLE3 = "(f32[2,4]{1,0}, f32[2,4]{1,0}, f32[2,4]{1,0})"


def _sets(body: str, extra: str = "") -> list[tuple[str, ...]]:
    return [s.instructions for s in neuron.combinable_sets(parse_module(module(body, extra=extra)))]


def test_key_fields() -> None:
    body = PARAMS + rs("rs", "p", MODEL, 3, dim=1, apply="max").replace("  %rs", "  ROOT %rs")
    parsed = parse_module(module(body))
    assert parsed.entry.root is not None
    key = neuron.combiner_key(parsed.entry.root, parsed)
    assert key == neuron.CombinerKey(
        reduction="maximum", element_type="f32", scatter_dimension=1, has_channel_id=True,
        use_global_device_ids=True, replica_groups=((0, 1, 2, 3), (4, 5, 6, 7)),
    )
    no_channel = body.replace("channel_id=3, ", "").replace("use_global_device_ids=true, ", "")
    parsed = parse_module(module(no_channel))
    assert parsed.entry.root is not None
    key = neuron.combiner_key(parsed.entry.root, parsed)
    assert key is not None and (key.has_channel_id, key.use_global_device_ids) == (False, False)
    assert neuron.combiner_key(parsed.entry.instructions[0], parsed) is None  # a parameter


def test_independent_equal_keys_merge() -> None:
    body = (PARAMS + rs("a", "p", MODEL, 1) + rs("b", "q", MODEL, 2)
            + f"  ROOT %t = {TUPLE2} tuple(%a, %b)\n")
    sets = neuron.combinable_sets(parse_module(module(body)))
    assert [(s.computation, s.instructions) for s in sets] == [("main", ("a", "b"))]
    assert sets[0].key.replica_groups == ((0, 1, 2, 3), (4, 5, 6, 7))


@pytest.mark.parametrize(
    "change",
    [
        {"groups": DATA},
        {"dim": 1},
        {"apply": "max"},
        {"tail_replace": ("use_global_device_ids=true", "use_global_device_ids=false")},
        {"tail_replace": ("replica_groups=[2,4]<=[8]", "replica_groups={{4,5,6,7},{0,1,2,3}}")},
    ],
    ids=["groups", "dim", "reduction", "global-ids", "group-order"],
)
def test_any_key_difference_prevents_merging(change: dict[str, object]) -> None:
    second = rs("b", "q", str(change.get("groups", MODEL)), 2,
                dim=int(change.get("dim", 0)),  # type: ignore[call-overload]
                apply=str(change.get("apply", "add")))
    if "tail_replace" in change:
        old, new = change["tail_replace"]  # type: ignore[misc]
        second = second.replace(old, new)
    body = PARAMS + rs("a", "p", MODEL, 1) + second + f"  ROOT %t = {TUPLE2} tuple(%a, %b)\n"
    assert _sets(body) == []


def test_channel_id_is_part_of_the_key() -> None:
    a = rs("a", "p", MODEL, 1).replace("use_global_device_ids=true", "use_global_device_ids=false")
    b = rs("b", "q", MODEL, 2).replace("channel_id=2, ", "")
    b = b.replace("use_global_device_ids=true", "use_global_device_ids=false")
    body = PARAMS + a + b + f"  ROOT %t = {TUPLE2} tuple(%a, %b)\n"
    assert _sets(body) == []
    assert _sets(body.replace("channel_id=1, ", "")) == [("a", "b")]


def test_element_type_is_part_of_the_key() -> None:
    extra = ("%addh (x: f16[], y: f16[]) -> f16[] {\n  %x = f16[] parameter(0)\n"
             "  %y = f16[] parameter(1)\n  ROOT %s = f16[] add(%x, %y)\n}\n")
    body = (PARAMS + "  %h = f16[8,4]{1,0} convert(%q)\n" + rs("a", "p", MODEL, 1)
            + rs("b", "h", MODEL, 2, apply="addh", shape="f16[2,4]{1,0}")
            + "  ROOT %t = (f32[2,4]{1,0}, f16[2,4]{1,0}) tuple(%a, %b)\n")
    assert _sets(body, extra) == []


def test_dependent_reduce_scatters_do_not_merge() -> None:
    # b reads a's result, so they never merge; c is independent of a and b.
    body = (PARAMS + rs("a", "p", MODEL, 1)
            + "  %pad = f32[8,4]{1,0} pad(%a, %zero), padding=0_6x0_0\n"
            + rs("b", "pad", MODEL, 2) + rs("c", "q", MODEL, 3)
            + f"  ROOT %t = {TUPLE3} tuple(%a, %b, %c)\n")
    body = body.replace(PARAMS, PARAMS + "  %zero = f32[] constant(0)\n")
    # Post order: p, a, zero, pad, b, q, c, t. Round 1 takes a, stops at b (it depends on a);
    # round 2 takes b and c.
    assert _sets(body) == [("b", "c")]


def test_merged_sets_carry_their_dependencies_into_later_rounds() -> None:
    # Round 1 merges a0 and b (MODEL). c feeds b and a0 feeds d, so after the merge
    # c -> {a0,b} -> d: c and d (equal DATA keys, independent before) no longer merge.
    b_line = rs("b", "x", MODEL, 2)
    body = (PARAMS + "  %zero = f32[] constant(0)\n"
            + rs("a0", "p", MODEL, 1) + rs("c", "q", DATA, 3)
            + "  %padc = f32[8,4]{1,0} pad(%c, %zero), padding=0_6x0_0\n"
            + "  %x = f32[8,4]{1,0} add(%q, %padc)\n" + b_line
            + "  %pada = f32[8,4]{1,0} pad(%a0, %zero), padding=0_6x0_0\n"
            + rs("d", "pada", DATA, 4)
            + f"  ROOT %t = {TUPLE3} tuple(%a0, %b, %d)\n")
    parsed = parse_module(module(body))
    order = [i.name for i in neuron.post_order(parsed.entry)]
    assert order == ["p", "a0", "q", "c", "zero", "padc", "x", "b", "pada", "d", "t"]
    assert _sets(body) == [("a0", "b")]
    # Without the a0-b merge (b's groups differ), c and d stay independent and merge.
    other = rs("b", "x", "{{0,1},{2,3},{4,5},{6,7}}", 2)
    assert _sets(body.replace(b_line, other)) == [("c", "d")]


def test_non_trivial_reduction_has_no_key() -> None:
    extra = ("%add3 (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
             "  %y = f32[] parameter(1)\n  %n = f32[] negate(%y)\n"
             "  ROOT %s = f32[] add(%x, %n)\n}\n")
    body = (PARAMS + rs("a", "p", MODEL, 1, apply="add3") + rs("b", "q", MODEL, 2, apply="add3")
            + f"  ROOT %t = {TUPLE2} tuple(%a, %b)\n")
    parsed = parse_module(module(body, extra=extra))
    assert neuron.combiner_key(parsed.entry.instruction("a"), parsed) is None
    assert neuron.combinable_sets(parsed) == []


def test_reduce_scatter_without_its_reduction_is_refused_by_the_reader() -> None:
    body = PARAMS + rs("a", "p", MODEL, 1, apply="nowhere").replace("  %a", "  ROOT %a")
    with pytest.raises(mt.HloParseError, match="computation does not exist: nowhere"):
        parse_module(module(body))

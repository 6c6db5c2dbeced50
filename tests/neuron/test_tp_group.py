"""The TP group read from the partitioned graph in post order; exact group matching."""

from __future__ import annotations

import re

import pytest

import meshtopo as mt
from meshtopo import neuron
from meshtopo.hlo import parse_module

from ._modules import PARAMS, module, rs

MODEL = "[2,4]<=[8]"
DATA = "{{0,4},{1,5},{2,6},{3,7}}"
MODEL_GROUPS = [[0, 1, 2, 3], [4, 5, 6, 7]]
DATA_GROUPS = [[0, 4], [1, 5], [2, 6], [3, 7]]


def _names(order: list) -> list[str]:  # type: ignore[type-arg]
    return [instruction.name for instruction in order]


def test_post_order_differs_from_text_order() -> None:
    # Text order lists rs.b first; the root's first operand is rs.a, so post order starts there.
    body = (PARAMS + rs("rs.b", "q", DATA, 1) + rs("rs.a", "p", MODEL, 2)
            + "  ROOT %t = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(%rs.a, %rs.b)\n")
    parsed = parse_module(module(body))
    assert _names(neuron.post_order(parsed.entry)) == ["p", "rs.a", "q", "rs.b", "t"]
    assert neuron.tp_replica_group(parsed) == MODEL_GROUPS
    assert neuron.tp_replica_group(parsed.entry) == MODEL_GROUPS
    assert neuron.find_tp_collective(parsed).name == "rs.a"  # type: ignore[union-attr]


def test_control_predecessors_come_first() -> None:
    body = (PARAMS + rs("rs.a", "p", MODEL, 1)
            + rs("rs.b", "q", DATA, 2, tail=", control-predecessors={%rs.a}")
            + "  ROOT %t = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(%rs.b, %rs.a)\n")
    parsed = parse_module(module(body))
    assert _names(neuron.post_order(parsed.entry)) == ["p", "rs.a", "q", "rs.b", "t"]
    assert neuron.tp_replica_group(parsed) == MODEL_GROUPS
    without = parse_module(module(body.replace(", control-predecessors={%rs.a}", "")))
    assert _names(neuron.post_order(without.entry)) == ["q", "rs.b", "p", "rs.a", "t"]
    assert neuron.tp_replica_group(without) == DATA_GROUPS


def test_instructions_without_users_start_walks_in_text_order() -> None:
    body = (PARAMS + rs("rs.a", "p", DATA, 1) + rs("rs.b", "q", MODEL, 2)
            + "  ROOT %r = f32[8,4]{1,0} add(%p, %q)\n")
    parsed = parse_module(module(body))
    assert _names(neuron.post_order(parsed.entry)) == ["p", "rs.a", "q", "rs.b", "r"]
    assert neuron.tp_replica_group(parsed) == DATA_GROUPS


def test_ordering_by_shared_channel_is_a_version_flag() -> None:
    body = (PARAMS + rs("rs.a", "p", MODEL, 7) + rs("rs.b", "q", DATA, 7)
            + "  ROOT %t = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(%rs.b, %rs.a)\n")
    parsed = parse_module(module(body))
    assert _names(neuron.post_order(parsed.entry)) == ["q", "rs.b", "p", "rs.a", "t"]
    assert _names(neuron.post_order(parsed.entry, channel_dependencies=True)) == [
        "q", "p", "rs.a", "rs.b", "t"]


def test_module_form_scans_named_computations_in_text_order() -> None:
    extra = ("%inner (a: f32[8,4]) -> f32[2,4] {\n  %a = f32[8,4]{1,0} parameter(0)\n"
             + rs("rs.i", "a", DATA, 9).replace("  %rs.i", "  ROOT %rs.i") + "}\n")
    body = (PARAMS + "  %c = f32[2,4]{1,0} call(%p), to_apply=%inner\n"
            + rs("rs.m", "q", MODEL, 1)
            + "  ROOT %t = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(%c, %rs.m)\n")
    parsed = parse_module(module(body, extra=extra))
    assert neuron.tp_replica_group(parsed) == DATA_GROUPS  # %inner comes first in the text
    assert neuron.tp_replica_group(parsed, names={"main"}) == MODEL_GROUPS
    assert neuron.tp_replica_group(parsed, names=["inner", "main"]) == DATA_GROUPS
    assert neuron.tp_replica_group(parsed, names={"add"}) == []
    assert neuron.tp_replica_group(parsed, opcode="all-gather") == []
    with pytest.raises(mt.InvalidArgumentError,
                       match="module m has no computation nope; its computations are add, max"):
        neuron.tp_replica_group(parsed, names={"nope"})
    with pytest.raises(mt.InvalidArgumentError, match="opcode must be a collective"):
        neuron.tp_replica_group(parsed, opcode="add")
    with pytest.raises(mt.InvalidArgumentError, match="names filters the computations"):
        neuron.tp_replica_group(parsed.entry, names={"main"})
    with pytest.raises(mt.InvalidArgumentError, match="expects an HLO module or computation"):
        neuron.tp_replica_group("HloModule m")  # type: ignore[arg-type]


def test_malformed_graphs_are_refused_by_the_reader() -> None:
    """Undefined operands and cycles through operands never reach the rank model: XLA's
    parser, and so meshtopo's reader, refuses an operand defined after its use."""
    body = PARAMS + "  ROOT %r = f32[8,4]{1,0} add(%p, %nowhere)\n"
    with pytest.raises(mt.HloParseError, match="15:35: instruction does not exist: nowhere"):
        parse_module(module(body))
    cycle = (PARAMS + "  %a = f32[8,4]{1,0} add(%p, %b)\n  %b = f32[8,4]{1,0} add(%a, %q)\n"
             + "  ROOT %r = f32[8,4]{1,0} add(%p, %q)\n")
    with pytest.raises(mt.HloParseError, match="15:30: instruction does not exist: b"):
        parse_module(module(cycle))


def test_has_matching_replica_groups_is_exact() -> None:
    body = PARAMS + rs("rs", "p", MODEL, 1).replace("  %rs", "  ROOT %rs")
    parsed = parse_module(module(body))
    collective = parsed.collectives[0]
    instruction = parsed.entry.root
    assert instruction is not None
    for target in (collective, instruction):
        assert neuron.has_matching_replica_groups(target, MODEL_GROUPS)
        assert neuron.has_matching_replica_groups(target, "{{0,1,2,3},{4,5,6,7}}")
        assert neuron.has_matching_replica_groups(target, mt.CollectiveDeviceList.parse(MODEL))
        assert not neuron.has_matching_replica_groups(target, [[4, 5, 6, 7], [0, 1, 2, 3]])
        assert not neuron.has_matching_replica_groups(target, [[1, 0, 2, 3], [4, 5, 6, 7]])
        assert not neuron.has_matching_replica_groups(target, [[0, 1, 2, 3]])
        assert not neuron.has_matching_replica_groups(target, DATA_GROUPS)


def test_matching_a_permute_is_refused() -> None:
    body = (PARAMS + "  ROOT %cp = f32[8,4]{1,0} collective-permute(%p), channel_id=1, "
            "source_target_pairs={{0,1},{1,0}}\n")
    parsed = parse_module(module(body))
    with pytest.raises(mt.InvalidArgumentError,
                       match=re.escape("collective-permute cp (line 15) carries source_target_pairs")):
        neuron.has_matching_replica_groups(parsed.collectives[0], [[0, 1]])

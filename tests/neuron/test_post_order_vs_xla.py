"""Post order checked against XLA's own: the HLO printer of the XLA in jaxlib prints an
unscheduled computation in ``MakeInstructionPostOrder`` order, so parsing a module with XLA and
printing it back gives XLA's post order of the text's instruction list."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshtopo import neuron
from meshtopo.hlo import parse_module

from ._modules import PARAMS, module, rs

xla_client = pytest.importorskip("jax._src.lib").xla_client
if not hasattr(getattr(xla_client, "hlo", None), "hlo_module_from_text"):
    pytest.skip("this jaxlib has no hlo_module_from_text", allow_module_level=True)

pytestmark = pytest.mark.jax

MODEL = "[2,4]<=[8]"
DATA = "{{0,4},{1,5},{2,6},{3,7}}"
TUPLE2 = "(f32[2,4]{1,0}, f32[2,4]{1,0})"


def xla_post_order(text: str) -> list[str]:
    printed = xla_client.hlo.hlo_module_from_text(text).to_string()
    return [i.name for i in parse_module(printed).entry.instructions]


def ours(text: str) -> list[str]:
    return [i.name for i in neuron.post_order(parse_module(text).entry)]


@pytest.mark.parametrize(
    "body",
    [
        PARAMS + rs("rs.b", "q", DATA, 1) + rs("rs.a", "p", MODEL, 2)
        + f"  ROOT %t = {TUPLE2} tuple(%rs.a, %rs.b)\n",
        PARAMS + rs("rs.a", "p", MODEL, 1)
        + rs("rs.b", "q", DATA, 2, tail=", control-predecessors={%rs.a}")
        + f"  ROOT %t = {TUPLE2} tuple(%rs.b, %rs.a)\n",
        PARAMS + rs("rs.a", "p", MODEL, 7) + rs("rs.b", "q", DATA, 7)
        + f"  ROOT %t = {TUPLE2} tuple(%rs.b, %rs.a)\n",
        PARAMS + rs("rs.a", "p", DATA, 1) + rs("rs.b", "q", MODEL, 2)
        + "  ROOT %r = f32[8,4]{1,0} add(%p, %q)\n",
    ],
    ids=["operand-order", "control-predecessor", "shared-channel", "several-roots"],
)
def test_hand_written_orders_match_xla(body: str) -> None:
    text = module(body, result=TUPLE2 if "tuple(" in body else "f32[8,4]")
    assert ours(text) == xla_post_order(text)


@st.composite
def dags(draw: st.DrawFn) -> str:
    """A random computation in def-before-use text order: adds, negates, all-reduces (some
    sharing a channel id), control predecessors, and instructions left without users."""
    names = ["p0", "p1"]
    lines = ["  %p0 = f32[4]{0} parameter(0)\n", "  %p1 = f32[4]{0} parameter(1)\n"]
    for index in range(draw(st.integers(1, 12))):
        name = f"i{index}"
        kind = draw(st.sampled_from(["add", "negate", "all-reduce"]))
        first = draw(st.sampled_from(names))
        if kind == "add":
            line = f"  %{name} = f32[4]{{0}} add(%{first}, %{draw(st.sampled_from(names))})"
        elif kind == "negate":
            line = f"  %{name} = f32[4]{{0}} negate(%{first})"
        else:
            channel = draw(st.sampled_from(["", ", channel_id=1", ", channel_id=2"]))
            line = (f"  %{name} = f32[4]{{0}} all-reduce(%{first}){channel}, "
                    "replica_groups={}, to_apply=%add")
        controls = draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
        if controls:
            line += ", control-predecessors={" + ",".join(f"%{c}" for c in controls) + "}"
        lines.append(line + "\n")
        names.append(name)
    lines[-1] = lines[-1].replace(f"  %{names[-1]} =", f"  ROOT %{names[-1]} =")
    return (
        "HloModule m\n%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
        "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n"
        "ENTRY %main (p0: f32[4], p1: f32[4]) -> f32[4] {\n" + "".join(lines) + "}\n"
    )


@settings(max_examples=60, deadline=None)
@given(dags())
def test_random_graphs_match_xla(text: str) -> None:
    assert ours(text) == xla_post_order(text)

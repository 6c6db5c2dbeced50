"""What XLA's parser checks of an instruction against the computations it calls: a
conditional has one operand per branch after its branch index, a scan as many operands as
its ``to_apply`` has parameters; as jaxlib's ``hlo_module_from_text`` checks it."""

from __future__ import annotations

import pytest

import meshtopo as mt
import meshtopo.hlo as hlo

from ._text import conditional
from ._xla_agreement import agrees_in_xla_words

pytestmark = pytest.mark.jax


@pytest.mark.parametrize(("predicate", "operands", "attributes", "message"), [
    ("s32[]", "%p, %o, %o", ", branch_computations={%b}", (
        9, 1, "a conditional of 1 branch computations takes 2 operands (the branch index, "
              "then one for each branch), but has 3 operands")),
    ("pred[]", "%p, %o", ", true_computation=%b, false_computation=%b", (
        9, 1, "a conditional of 2 branch computations takes 3 operands (the branch index, "
              "then one for each branch), but has 2 operands")),
    ("s32[]", "%p", ", branch_computations={}", (
        9, 1, "a conditional needs at least one branch computation")),
])
def test_a_conditional_s_branches_match_its_operands(
        predicate: str, operands: str, attributes: str, message: tuple[int, int, str]) -> None:
    # XLA refuses these without a message (its parser returns no instruction).
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    text = conditional(predicate, attributes).replace("(%p, %o, %o)", f"({operands})")
    with pytest.raises(Exception, match="Syntax error when trying to parse the text"):
        hlo_module_from_text(text)
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert (info.value.line, info.value.column, info.value.message) == message


def test_a_conditional_without_operands_is_refused() -> None:
    # jaxlib 0.10.2 stops the process on it; XLA's newer parser refuses it so.
    text = conditional("s32[]", ", branch_computations={%b}").replace("(%p, %o, %o)", "()")
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert (info.value.line, info.value.column, info.value.message) == (
        8, 33, "conditional requires at least one operand")


_SCAN_BODY = """%body {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %sum = f32[] add(%a, %b)
  ROOT %t = (f32[], f32[]) tuple(%sum, %sum)
}
"""


@pytest.mark.parametrize(("operands", "attributes"), [
    ("%xs, %init", "dimensions={0}, num_carries=1"),
    ("%init", "dimensions={0}, num_carries=1"),  # fewer operands than the body's parameters
    ("%xs, %init", "dimensions={0,1}, num_carries=1"),
    ("%xs, %init", "dimensions={0}, num_carries=3"),
    (", %init", "dimensions={0}, num_carries=1"),  # an operand left out, read past
])
def test_a_scan_s_operands_match_its_body(operands: str, attributes: str) -> None:
    agrees_in_xla_words(
        f"HloModule m\n{_SCAN_BODY}ENTRY e {{\n  %xs = f32[4] parameter(0)\n"
        f"  %init = f32[] parameter(1)\n  %scan = (f32[4], f32[]) scan({operands}), "
        f"{attributes}, to_apply=%body\n"
        "  ROOT %out = f32[4] get-tuple-element(%scan), index=0\n}\n")

"""The attributes an instruction must have are asked for as XLA's parser (jaxlib's
``hlo_module_from_text``) asks for them: a conditional's by its predicate's type, in XLA's
order, after an operand it finds undefined (as is any error later in the instruction)."""

from __future__ import annotations

import pytest

from ._text import conditional
from ._xla_agreement import agrees_in_xla_words, agrees_with_xla

pytestmark = pytest.mark.jax



@pytest.mark.parametrize(("predicate", "attributes"), [
    ("pred[]", ""), ("pred[]", ", true_computation=%b"), ("pred[]", ", false_computation=%b"),
    ("pred[]", ", true_computation=%b false_computation=%b"),  # the list ends at the first
    ("s32[]", ""), ("s32[]", ", branch_computations={%b, %b}"),
    ("pred[]", ", true_computation=%b, false_computation=%b"),
])
def test_a_conditional_s_by_its_predicate(predicate: str, attributes: str) -> None:
    agrees_in_xla_words(conditional(predicate, attributes))


@pytest.mark.parametrize("operands", ["%q", "f32[4] %q", "%o, %q"])
def test_an_undefined_operand_comes_first(operands: str) -> None:
    agrees_with_xla("HloModule m\nENTRY e {\n  %o = f32[8] parameter(0)\n"
                     f"  ROOT %c = f32[8] all-gather({operands})\n}}\n")



@pytest.mark.parametrize("line", [
    "ROOT %c = f32[8] get-tuple-element(%q), index=",
    "ROOT %c = f32[8] copy(%o, %q), sharding={maximal}",
    "ROOT %c = f32[8] copy(%q), metadata={op_nam=\"x\"}",
    "ROOT %c = f32[8] negate(%q), foo=1",
])
def test_an_undefined_operand_comes_before_a_later_error(line: str) -> None:
    # XLA records the operand it cannot read and reads on: its error is the first.
    agrees_with_xla(f"HloModule m\nENTRY e {{\n  %o = f32[8] parameter(0)\n  {line}\n}}\n")

"""A binary op written without its shape has the shape XLA's ``InferBinaryOpShape`` gives
(a scalar or a dimension of 1 broadcast), and operands XLA cannot combine are refused in its
words, as jaxlib's ``hlo_module_from_text`` reads them."""

from __future__ import annotations

import pytest

from meshtopo import hlo

from ._xla_agreement import agrees_in_xla_words

pytestmark = pytest.mark.jax


def _module(lhs: str, rhs: str, op: str) -> str:
    return (f"HloModule m\nENTRY e {{\n  %a = {lhs} parameter(0)\n  %b = {rhs} parameter(1)\n"
            f"  ROOT %c = {op}\n}}\n")


_READ = [
    ("f32[]", "f32[4,1]", "add(%a, %b)"), ("f32[4,1]", "f32[]", "add(%a, %b)"),
    ("f32[4,1]", "f32[1,8]", "multiply(%a, %b)"), ("f32[4,8]{0,1}", "f32[4,8]", "add(%a, %b)"),
    ("s32[1,3]{0,1}", "s32[2,1]", "maximum(%a, %b)"), ("f32[]", "f32[4,1]", "compare(%a, %b), direction=LT"),
    ("pred[4]", "pred[]", "and(%a, %b)"), ("u8[4]", "u8[4]", "xor(%a, %b)"),
    ("f32[2]", "f32[2]", "atan2(%a, %b)"), ("s32[4]", "s32[1]", "shift-left(%a, %b)"),
]
_REFUSED = [
    ("f32[4]", "f32[8]", "multiply(%a, %b)"), ("f32[4]", "s32[4]", "add(%a, %b)"),
    ("f32[4]", "f32[4,4]", "add(%a, %b)"), ("f32[4,4]", "f32[4]", "subtract(%a, %b)"),
    ("pred[4]", "pred[4]", "subtract(%a, %b)"), ("f32[4]", "f32[4]", "and(%a, %b)"),
    ("s32[2]", "s32[2]", "atan2(%a, %b)"), ("(f32[4], f32[4])", "f32[4]", "add(%a, %b)"),
    ("f32[4]", "f32[8]", "compare(%a, %b)"),  # the direction is asked for first
    ("f32[4]", "token[]", "add(%a, %b)"),
]


@pytest.mark.parametrize(("lhs", "rhs", "op"), _READ + _REFUSED)
def test_as_xla_reads_it(lhs: str, rhs: str, op: str) -> None:
    agrees_in_xla_words(_module(lhs, rhs, op))


@pytest.mark.parametrize(("lhs", "rhs", "op"), _READ)
def test_the_shape_is_xla_s(lhs: str, rhs: str, op: str) -> None:
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    text = _module(lhs, rhs, op)
    ours = hlo.parse_module(text).entry.root
    xla = hlo.parse_module(hlo_module_from_text(text).to_string()).entry.root
    # Layouts aside: an inferred shape keeps its first operand's, or has none.
    assert hlo.parse_shape(ours.shape_text).compatible(hlo.parse_shape(xla.shape_text))

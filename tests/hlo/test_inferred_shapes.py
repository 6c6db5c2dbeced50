"""An instruction written without its shape has the shape XLA's shape inference gives it,
and operands XLA cannot combine are refused where XLA refuses them, as jaxlib's
``hlo_module_from_text`` reads them: a binary op (``InferBinaryOpShape``: a scalar or a
dimension of 1 broadcast), a dot (``InferDotOpShape``: batch dimensions, then each side's
other non-contracting ones) and a select (``InferSelectShape``: a predicate of the branches'
dimensions, or a scalar one)."""

from __future__ import annotations

import pytest

from ._xla_agreement import agrees_in_xla_words, agrees_with_xla, inferred_root_agrees

pytestmark = pytest.mark.jax


def _module(lhs: str, rhs: str, op: str) -> str:
    return (f"HloModule m\nENTRY e {{\n  %a = {lhs} parameter(0)\n  %b = {rhs} parameter(1)\n"
            f"  ROOT %c = {op}\n}}\n")


_DOT = "dot(%a, %b)"
_CONTRACT = f"{_DOT}, lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
_BATCHED = (f"{_DOT}, lhs_batch_dims={{0}}, rhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, "
            "rhs_contracting_dims={1}")
_READ = [
    ("f32[]", "f32[4,1]", "add(%a, %b)"), ("f32[4,1]", "f32[]", "add(%a, %b)"),
    ("f32[4,1]", "f32[1,8]", "multiply(%a, %b)"), ("f32[4,8]{0,1}", "f32[4,8]", "add(%a, %b)"),
    ("s32[1,3]{0,1}", "s32[2,1]", "maximum(%a, %b)"), ("f32[]", "f32[4,1]", "compare(%a, %b), direction=LT"),
    ("pred[4]", "pred[]", "and(%a, %b)"), ("u8[4]", "u8[4]", "xor(%a, %b)"),
    ("f32[2]", "f32[2]", "atan2(%a, %b)"), ("s32[4]", "s32[1]", "shift-left(%a, %b)"),
    ("f32[4,8]", "f32[8,16]", _CONTRACT), ("f32[2,4,8]", "f32[2,8,16]", _BATCHED),
    ("f32[4,8]", "f32[8,16]", _DOT), ("f32[?,8]", "f32[8,16]", _CONTRACT),
    ("f32[4,?]", "f32[8,16]", _CONTRACT), ("f32[4,8]{0,1}", "f32[8,16]", _CONTRACT),
    ("s8[3,2,5]", "s8[5,2]", f"{_DOT}, lhs_contracting_dims={{2,1}}, rhs_contracting_dims={{0,1}}"),
]
_REFUSED = [
    ("f32[4]", "f32[8]", "multiply(%a, %b)"), ("f32[4]", "s32[4]", "add(%a, %b)"),
    ("f32[4]", "f32[4,4]", "add(%a, %b)"), ("f32[4,4]", "f32[4]", "subtract(%a, %b)"),
    ("pred[4]", "pred[4]", "subtract(%a, %b)"), ("f32[4]", "f32[4]", "and(%a, %b)"),
    ("s32[2]", "s32[2]", "atan2(%a, %b)"), ("(f32[4], f32[4])", "f32[4]", "add(%a, %b)"),
    ("f32[4]", "f32[8]", "compare(%a, %b)"),  # the direction is asked for first
    ("f32[4]", "token[]", "add(%a, %b)"),
    ("f32[4,8]", "f32[7,16]", _CONTRACT),
    ("f32[4,8]", "f32[8,16]", f"{_DOT}, lhs_contracting_dims={{1}}"),
    ("f32[2,4,8]", "f32[3,8,16]", _BATCHED),
    ("f32[2,4,8]", "f32[2,8,16]", f"{_DOT}, lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, "
                                  "rhs_contracting_dims={1}"),
    ("(f32[4])", "f32[4]", _DOT), ("f32[4]", "token[]", _DOT),
]
# XLA's message prints a dot's dimension numbers as a protocol buffer, which jaxlib redacts.
_REFUSED_AT_XLA_S_TOKEN = [
    ("f32[4,8]", "f32[8,16]", f"{_DOT}, lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}"),
    ("f32[4,8]", "f32[8,16]", f"{_DOT}, lhs_contracting_dims={{1,1}}, "
                              "rhs_contracting_dims={0,0}"),
    ("f32[4,8]", "f32[8,16]", f"{_CONTRACT}, lhs_batch_dims={{1}}, rhs_batch_dims={{0}}"),
]


@pytest.mark.parametrize(("lhs", "rhs", "op"), _READ + _REFUSED)
def test_as_xla_reads_it(lhs: str, rhs: str, op: str) -> None:
    agrees_in_xla_words(_module(lhs, rhs, op))


@pytest.mark.parametrize(("lhs", "rhs", "op"), _REFUSED_AT_XLA_S_TOKEN)
def test_refused_where_xla_refuses_it(lhs: str, rhs: str, op: str) -> None:
    agrees_with_xla(_module(lhs, rhs, op))


@pytest.mark.parametrize(("lhs", "rhs", "op"), _READ)
def test_the_shape_is_xla_s(lhs: str, rhs: str, op: str) -> None:
    inferred_root_agrees(_module(lhs, rhs, op))


def _select(pred: str, on_true: str, on_false: str) -> str:
    return (f"HloModule m\nENTRY e {{\n  %p = {pred} parameter(0)\n  %t = {on_true} parameter(1)\n"
            f"  %f = {on_false} parameter(2)\n  ROOT %s = select(%p, %t, %f)\n}}\n")


_SELECT_READ = [("pred[4]", "s32[4]", "s32[4]"), ("pred[]", "f32[2,3]", "f32[2,3]"),
                ("pred[2,3]", "f32[2,3]{0,1}", "f32[2,3]")]
_SELECT_REFUSED = [("pred[5]", "s32[4]", "s32[4]"), ("s32[4]", "s32[4]", "s32[4]"),
                   ("pred[4]", "s32[4]", "f32[4]"), ("pred[4]", "s32[4]", "s32[2]"),
                   ("(pred[4])", "s32[4]", "s32[4]"), ("pred[4]", "(s32[4])", "(s32[4])"),
                   ("pred[4]", "s32[4]", "token[]"), ("pred[]", "f32[4]", "f16[4]{0}")]


@pytest.mark.parametrize(("pred", "on_true", "on_false"), _SELECT_READ + _SELECT_REFUSED)
def test_select_as_xla_reads_it(pred: str, on_true: str, on_false: str) -> None:
    agrees_in_xla_words(_select(pred, on_true, on_false))


@pytest.mark.parametrize(("pred", "on_true", "on_false"), _SELECT_READ)
def test_the_select_shape_is_xla_s(pred: str, on_true: str, on_false: str) -> None:
    inferred_root_agrees(_select(pred, on_true, on_false))

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


def _module(*case: str) -> str:
    """The operands' shapes (``%a``, ``%b``, ...), then the root's right side."""
    *shapes, op = case
    parameters = "".join(f"  %{chr(ord('a') + number)} = {shape} parameter({number})\n"
                         for number, shape in enumerate(shapes))
    return f"HloModule m\nENTRY e {{\n{parameters}  ROOT %r = {op}\n}}\n"


_DOT = "dot(%a, %b)"
_CONTRACT = f"{_DOT}, lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
_BATCHED = (f"{_DOT}, lhs_batch_dims={{0}}, rhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, "
            "rhs_contracting_dims={1}")
_READ: list[tuple[str, ...]] = [
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
_REFUSED: list[tuple[str, ...]] = [
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


_SELECT = "select(%a, %b, %c)"
_READ += [("pred[4]", "s32[4]", "s32[4]", _SELECT), ("pred[]", "f32[2,3]", "f32[2,3]", _SELECT),
          ("pred[2,3]", "f32[2,3]{0,1}", "f32[2,3]", _SELECT)]
_REFUSED += [(*shapes, _SELECT) for shapes in (
    ("pred[5]", "s32[4]", "s32[4]"), ("s32[4]", "s32[4]", "s32[4]"), ("pred[4]", "s32[4]", "f32[4]"),
    ("pred[4]", "s32[4]", "s32[2]"), ("(pred[4])", "s32[4]", "s32[4]"),
    ("pred[4]", "(s32[4])", "(s32[4])"), ("pred[4]", "s32[4]", "token[]"),
    ("pred[]", "f32[4]", "f16[4]{0}"))]


@pytest.mark.parametrize("case", _READ + _REFUSED, ids=" ".join)
def test_as_xla_reads_it(case: tuple[str, ...]) -> None:
    agrees_in_xla_words(_module(*case))


@pytest.mark.parametrize("case", _REFUSED_AT_XLA_S_TOKEN, ids=" ".join)
def test_refused_where_xla_refuses_it(case: tuple[str, ...]) -> None:
    agrees_with_xla(_module(*case))


@pytest.mark.parametrize("case", _READ, ids=" ".join)
def test_the_shape_is_xla_s(case: tuple[str, ...]) -> None:
    inferred_root_agrees(_module(*case))

"""A dot written without its shape has the shape XLA's ``InferDotOpShape`` gives (batch
dimensions, then each side's other non-contracting ones), and dimension numbers XLA cannot
use are refused where XLA refuses them, as jaxlib's ``hlo_module_from_text`` reads them."""

from __future__ import annotations

import pytest

from meshtopo import hlo

from ._xla_agreement import agrees_in_xla_words, agrees_with_xla

pytestmark = pytest.mark.jax

_CONTRACT = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
_BATCHED = "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, " \
           "rhs_contracting_dims={1}"


def _module(lhs: str, rhs: str, dimensions: str) -> str:
    attributes = f", {dimensions}" if dimensions else ""
    return (f"HloModule m\nENTRY e {{\n  %a = {lhs} parameter(0)\n  %b = {rhs} parameter(1)\n"
            f"  ROOT %c = dot(%a, %b){attributes}\n}}\n")


_READ = [
    ("f32[4,8]", "f32[8,16]", _CONTRACT), ("f32[2,4,8]", "f32[2,8,16]", _BATCHED),
    ("f32[4,8]", "f32[8,16]", ""), ("f32[?,8]", "f32[8,16]", _CONTRACT),
    ("f32[4,?]", "f32[8,16]", _CONTRACT), ("f32[4,8]{0,1}", "f32[8,16]", _CONTRACT),
    ("s8[3,2,5]", "s8[5,2]", "lhs_contracting_dims={2,1}, rhs_contracting_dims={0,1}"),
]
_REFUSED_IN_XLA_WORDS = [
    ("f32[4,8]", "f32[7,16]", _CONTRACT),
    ("f32[4,8]", "f32[8,16]", "lhs_contracting_dims={1}"),
    ("f32[2,4,8]", "f32[3,8,16]", _BATCHED),
    ("f32[2,4,8]", "f32[2,8,16]", "lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                                  "rhs_contracting_dims={1}"),
    ("(f32[4])", "f32[4]", ""), ("f32[4]", "token[]", ""),
]
# XLA's message prints the dimension numbers' protocol buffer, which jaxlib redacts.
_REFUSED = [
    ("f32[4,8]", "f32[8,16]", "lhs_contracting_dims={2}, rhs_contracting_dims={0}"),
    ("f32[4,8]", "f32[8,16]", "lhs_contracting_dims={1,1}, rhs_contracting_dims={0,0}"),
    ("f32[4,8]", "f32[8,16]", f"{_CONTRACT}, lhs_batch_dims={{1}}, rhs_batch_dims={{0}}"),
]


@pytest.mark.parametrize(("lhs", "rhs", "dimensions"), _READ + _REFUSED_IN_XLA_WORDS)
def test_as_xla_reads_it(lhs: str, rhs: str, dimensions: str) -> None:
    agrees_in_xla_words(_module(lhs, rhs, dimensions))


@pytest.mark.parametrize(("lhs", "rhs", "dimensions"), _REFUSED)
def test_refused_where_xla_refuses_it(lhs: str, rhs: str, dimensions: str) -> None:
    agrees_with_xla(_module(lhs, rhs, dimensions))


@pytest.mark.parametrize(("lhs", "rhs", "dimensions"), _READ)
def test_the_shape_is_xla_s(lhs: str, rhs: str, dimensions: str) -> None:
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    text = _module(lhs, rhs, dimensions)
    ours = hlo.parse_module(text).entry.root
    xla = hlo.parse_module(hlo_module_from_text(text).to_string()).entry.root
    assert ours.shape_text, "not inferred"
    # Layouts aside: XLA gives an inferred shape its default layout, meshtopo none.
    assert hlo.parse_shape(ours.shape_text).compatible(hlo.parse_shape(xla.shape_text))

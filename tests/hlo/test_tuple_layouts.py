"""A layout inside a tuple shape is checked as XLA checks a tuple shape
(``ValidateLayoutForShape``): the minor-to-major list a permutation of the dimensions, tiles
of positive sizes or '*', a positive tail padding, no index or pointer type, a non-negative
element size, split configs in range. XLA's parser refuses such a tuple without a message,
and takes the same layout on an array alone; jaxlib's ``hlo_module_from_text`` says which."""

from __future__ import annotations

import pytest

import meshtopo as mt
from meshtopo import hlo

from ._xla_agreement import agrees_in_xla_words

pytestmark = pytest.mark.jax


def _module(shape: str) -> str:
    return (f"HloModule m\nENTRY e {{\n  %a = {shape} parameter(0)\n"
            "  ROOT %c = s32[] constant(0)\n}\n")


_REFUSED = [
    ("((f32[2]{1}))", 16, "layout minor_to_major field has out-of-bounds value: {1}"),
    ("(b(f32[2]{1}))", 17, "layout minor_to_major field has out-of-bounds value: {1}"),
    ("(f32[2,2]{0,0})", 17, "layout minor_to_major field has duplicate values: {0, 0}"),
    ("(f32[2]{0:T()})", 15, "layout has invalid tiles"),
    ("(f32[2]{0:T(0)})", 15, "layout has invalid tiles"),
    ("(f32[2]{0:#(u32)})", 15, "layout has a index_primitive_type, but is not a sparse array"),
    ("(f32[2]{0:*(u32)})", 15,
     "layout has a pointer_primitive_type, but is not a sparse array"),
    ("(f32[2]{0:E(-1)})", 15, "layout element_size_in_bits field is negative: -1"),
    ("(f32[2]{0:SC(1:1)})", 15,
     "split config has an out-of-bounds or duplicate physical dimension: 1"),
    ("(f32[4]{0:SC(0:2,1)})", 15, "split config split indices must be strictly increasing, "
                                  "positive and below 4: {2, 1}"),
    ("(f32[4]{0:SC(0:4)})", 15, "split config split indices must be strictly increasing, "
                                "positive and below 4: {4}"),
    # The physical dimension 1 of a {1,0} layout is logical dimension 1, of size 2.
    ("(f32[4,2]{1,0:SC(1:3)})", 17, "split config split indices must be strictly "
                                    "increasing, positive and below 2: {3}"),
]
_READ = ["f32[2]{1}", "b(f32[2]{1})", "(f32[2]{0:T(*)})", "(f32[4]{0:SC(0:1,3)})",
         "(f32[4,2]{1,0:SC(0:1)})", "(f32[4]{0:S(-1)M(-2)})", "(f32[8,128]{0,1}, s32[])"]


@pytest.mark.parametrize(("shape", "column", "message"), _REFUSED)
def test_refused_in_a_tuple(shape: str, column: int, message: str) -> None:
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    text = _module(shape)
    with pytest.raises(Exception, match="Syntax error when trying to parse the text") as xla:
        hlo_module_from_text(text)
    assert "was parsing" not in str(xla.value)  # (no message, no position)
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert (info.value.line, info.value.column, info.value.message) == (3, column, message)


@pytest.mark.parametrize("shape", _READ)
def test_read_as_xla_reads_it(shape: str) -> None:
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    text = _module(shape)
    hlo_module_from_text(text)
    assert hlo.parse_module(text).entry.instructions[0].shape_text == shape


@pytest.mark.parametrize(("shape", "message"), [
    ("(f32[2]{0:L(0)})", "layout tail_padding_alignment_in_elements field is <= 0: {0}"),
    ("(f32[4]{0:T(-1)})", "layout has invalid tiles"),
])
def test_refused_where_jaxlib_stops_the_process(shape: str, message: str) -> None:
    # jaxlib 0.10.2 aborts on these (a failed check), so it is not asked.
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(_module(shape))
    assert info.value.message == message


def test_an_element_s_error_comes_before_the_tuple_s_check() -> None:
    # XLA checks the tuple once all its elements are read: a later element's error is first.
    agrees_in_xla_words(_module("(f32[2]{8}, (u8[], pred[1]{0S))"))

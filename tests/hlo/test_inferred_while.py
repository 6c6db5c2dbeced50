"""A while written without its shape has its init's, where XLA's ``InferWhileShape`` takes
the condition and the body; where it does not, the while is refused in XLA's words (the
computations' program shapes in its message), as jaxlib's ``hlo_module_from_text`` does."""

from __future__ import annotations

import pytest

from meshtopo import hlo

from ._xla_agreement import agrees_in_xla_words

pytestmark = pytest.mark.jax


def _module(condition: str, body: str, init: str = "(s32[], f32[4])") -> str:
    return (f"HloModule m\n%cond (c: (s32[], f32[4])) -> {condition} {{\n"
            f"  %c = (s32[], f32[4]) parameter(0)\n  ROOT %r = {condition} constant(0)\n}}\n"
            f"%body {body}\n"
            f"ENTRY e {{\n  %i = {init} parameter(0)\n"
            "  ROOT %w = while(%i), condition=%cond, body=%body\n}\n")


_BODY = "{\n  ROOT %b = (s32[], f32[4]) parameter(0)\n}"
_CASES = {
    "taken": _module("pred[]", _BODY),
    "a condition that is no boolean": _module("s32[]", _BODY),
    "an init of another shape": _module("pred[]", _BODY, "(s32[], f32[8])"),
    "a body of another result": _module(
        "pred[]", "{\n  %b = (s32[], f32[4]) parameter(0)\n"
        "  ROOT %x = s32[] get-tuple-element(%b), index=0\n}"),
    "a body of two parameters": _module(
        "pred[]", "{\n  %b = (s32[], f32[4]) parameter(0)\n  %z = s32[] parameter(1)\n"
        "  ROOT %t = (s32[], f32[4]) copy(%b)\n}"),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_as_xla_reads_it(name: str) -> None:
    agrees_in_xla_words(_CASES[name])


def test_the_shape_is_the_init_s() -> None:
    assert hlo.parse_module(_CASES["taken"]).entry.root.shape_text == "(s32[], f32[4])"

"""Statements refused in XLA's words at XLA's token, in XLA's order (jaxlib's
``hlo_module_from_text`` is the reference): a computation defined again is refused once it
is read (what is wrong inside it comes first), at its name, and so is a second ENTRY, at its
``ENTRY``; an opcode without its '(' in the words XLA uses for that opcode."""

from __future__ import annotations

import pytest

import meshtopo as mt
from meshtopo import hlo

from ._xla_agreement import agrees_in_xla_words

pytestmark = pytest.mark.jax

_COMP = "comp {\n  p = f32[] parameter(0)\n  ROOT c = f32[] copy(p)\n}\n\n"
_ENTRY = "ENTRY e {\n  ROOT x = f32[] constant(1)\n}\n"

TEXTS = {
    "a computation defined again": "HloModule m\n\n" + _COMP + _COMP + _ENTRY,
    "a computation defined again, a later name that does not exist": (
        "HloModule m\n\n" + _COMP + _COMP
        + "ENTRY e {\n  x = f32[] constant(1)\n  ROOT y = f32[] call(x), to_apply=no\n}\n"),
    "a computation defined again, an error inside it": (
        "HloModule m\n\n" + _COMP + _COMP.replace("copy(p)", "constant{1})") + _ENTRY),
    "a second entry": "HloModule m\n\n" + _ENTRY + _ENTRY.replace("e {", "f {"),
    "a second entry, an error inside it": (
        "HloModule m\n\n" + _ENTRY + _ENTRY.replace("f32[] constant", "[] constant")),
    "a second entry of the same name": "HloModule m\n\n" + _ENTRY + _ENTRY,
    "a second entry, its result not its root's": (
        "HloModule m\n\n" + _ENTRY + _ENTRY.replace("e {", "f () -> s32[] {")),
    "the entry named as a computation before it": (
        "HloModule m\n\n" + _COMP.replace("comp", "e") + _ENTRY),
    **{f"{value} without its '('": (
        f"HloModule m\n\nENTRY e {{\n  p = f32[] parameter(0)\n  ROOT c = {value}\n}}\n")
       for value in ("f32[] constant{1})", "f32[] constant 1", "f32[] copy p)", "f32[] copy",
                     "f32[] parameter 1", "f32[] add{p, p}", "(f32[]) tuple p")},
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_refused_as_xla_refuses(name: str) -> None:
    with pytest.raises(mt.HloParseError):  # XLA refuses every one
        hlo.parse_module(TEXTS[name])
    agrees_in_xla_words(TEXTS[name])

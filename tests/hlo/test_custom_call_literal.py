"""A custom call's ``literal=`` is read and refused as XLA's parser (jaxlib's
``hlo_module_from_text``) reads and refuses it, at its line and column in its words: a
shape and its literal, or a tuple ``( literal, ... )`` of them."""

from __future__ import annotations

import pytest

from ._xla_agreement import agrees_in_xla_words

pytestmark = pytest.mark.jax

_VALUES = [
    "( s32[4]{0} {4, 128, 128, 3}, pred[4]{0} {1, 0, 0, 0} )",
    "( s32[4]{0} {4, 128, 128, 3} pred[4]{0} {1, 0, 0, 0} )",  # ',' recorded, read on
    "( s32[4]{0} {4, 128, 128, 3}, )", "()", "(s32[] 1, (s32[] 2, f32[] 3.5))", "pred[] true",
    "( s32[4]{0} {4, 128, 128, 3}, pred[4]{0} {1, 0, 0, 0 0} )",
    "s32[4]{0} {4, 128, 128, 3 3}", "(s32[] 1,, s32[] 2)", "s32[2] {{1,2}}",
    "(f32[2] {1, 2}, s32[] 3)", "u8[] 300", "f32[] 1e500", "(s32[] 1 s32[] 2,, s32[] 3)",
    # The literal runs past the value: XLA's reader stands on the token after it.
    "f32[] x", "f32[] /* c */ x", "f32[2] {1,\n  2}",
]


@pytest.mark.parametrize("value", _VALUES)
def test_as_xla_reads_it(value: str) -> None:
    text = ("HloModule m\n\nENTRY e {\n  ROOT c = s32[] custom-call(), "
            f'custom_call_target="x", literal={value}\n}}\n')
    agrees_in_xla_words(text)

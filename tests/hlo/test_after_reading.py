"""XLA's checks of a whole module (no two async starts call one computation) come once every
statement is read, as in jaxlib's ``hlo_module_from_text``: an error in a later statement is
reported first."""

from __future__ import annotations

import pytest

import meshtopo as mt
import meshtopo.hlo as hlo

from ._xla_agreement import agrees_with_xla

pytestmark = pytest.mark.jax

_SHARED = """HloModule m

%wrapped (x: f32[4]) -> f32[4] {{
  %x = f32[4] parameter(0)
  ROOT %y = f32[4] negate(%x)
}}

ENTRY %e (p: f32[4]) -> f32[4] {{
  %p = f32[4] parameter(0)
  %start0 = ((f32[4]), f32[4], s32[]) async-start(%p), calls=%wrapped
  %done0 = f32[4] async-done(%start0)
  %start1 = ((f32[4]), f32[4], s32[]) async-start(%p), calls=%wrapped
  {last}
}}
"""


@pytest.mark.parametrize("last", [
    "%done1 ROOT = f32[4] async-done(%start1)",  # a syntax error after the second start
    "ROOT %done1 = f32[8] async-done(%start1)",  # a shape error after it
])
def test_an_error_in_a_later_statement_comes_first(last: str) -> None:
    agrees_with_xla(_SHARED.format(last=last))


def test_two_starts_calling_one_computation_are_refused_at_the_second() -> None:
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    text = _SHARED.format(last="ROOT %done1 = f32[4] async-done(%start1)")
    with pytest.raises(Exception, match="Computation wrapped is called by more than one "
                                        "async op"):
        hlo_module_from_text(text)
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert (info.value.line, info.value.column, info.value.message) == (
        13, 3, "Computation wrapped is called by more than one async op")

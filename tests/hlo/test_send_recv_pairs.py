"""A send's or recv's ``_xla_send_recv_source_target_pairs``: XLA's parser keeps any string
there, so a module with pairs it cannot read is read as jaxlib's ``hlo_module_from_text``
reads it; the pairs are XLA's ``SourceTargetPairs::FromString`` of the text, None where it
cannot read them."""

from __future__ import annotations

import pytest

import meshtopo.hlo as hlo

from ._xla_agreement import agrees_with_xla

_TEXT = """HloModule m, replica_count=4

ENTRY e {{
  %p = f32[8] parameter(0)
  %tok = token[] after-all()
  %recv = (f32[8], u32[], token[]) recv(%tok), channel_id=1, frontend_attributes={{_xla_send_recv_source_target_pairs="{pairs}"}}
  %recv-done = (f32[8], token[]) recv-done(%recv), channel_id=1
  %send = (f32[8], u32[], token[]) send(%p, %tok), channel_id=1, frontend_attributes={{_xla_send_recv_source_target_pairs="{{{{0,1}}}}"}}
  %send-done = token[] send-done(%send), channel_id=1
  ROOT %r = f32[8] get-tuple-element(%recv-done), index=0
}}
"""

_PAIRS = {
    "{{0,1},{1,2}}": [(0, 1), (1, 2)],
    " /* c */ {{0,1}} /* c */ ": [(0, 1)],
    "{}": [],
    "[2,2]<=[4]": [(0, 1), (2, 3)],
    "{{0,1,2}}": None,
    "{{0}}": None,
    "{{0,1},}": None,
    "{{0,1}{1,2}}": None,
    "{{0,1}} {{2,3}}": None,
    "{{0,1}": None,
    "abc": None,
    "": None,
}


@pytest.mark.jax
@pytest.mark.parametrize("pairs", list(_PAIRS))
def test_the_module_is_read_as_xla_reads_it(pairs: str) -> None:
    agrees_with_xla(_TEXT.format(pairs=pairs))


@pytest.mark.parametrize(("pairs", "expected"), list(_PAIRS.items()))
def test_the_pairs_are_xla_s(pairs: str, expected: list[tuple[int, int]] | None) -> None:
    module = hlo.parse_module(_TEXT.format(pairs=pairs))
    assert [c.source_target_pairs for c in module.collectives if c.opcode == "recv"] == [
        expected]

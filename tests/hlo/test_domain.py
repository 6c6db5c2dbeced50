"""A domain instruction's ``domain=`` is read and refused as XLA's parser (jaxlib's
``hlo_module_from_text``) reads and refuses it, at its line and column in its words: three
required sub-attributes, the kind ``sharding`` and two shardings."""

from __future__ import annotations

import pytest

from ._xla_agreement import agrees_in_xla_words

pytestmark = pytest.mark.jax

_VALUES = [
    '{kind="sharding", entry={maximal device=0}, exit={maximal device=1}}',
    '{kind="sharding" entry={maximal device=0} exit={replicated}}',
    '{exit={replicated}, entry={maximal device=0}, kind="sharding"}',
    '{kind=, entry={maximal device=0}, exit={maximal device=1}}',
    '{kind="sharding", {entry=maximal device=0}, exit={maximal device=1}}',
    '{kind="other", entry={maximal device=0}, exit={maximal device=1}}',
    '{kind="sharding", entry={maximal device=0}}', "{}",
    '{kind="sharding", entry={maximal device=0}, exit={maximal device=1}, x=1}',
    '{kind="sharding", entry={maximal device=0}, entry={maximal device=1}}',
    '{kind="sharding", entry={maximal device=0}, exit={maximal}}',
    '{kind="sharding", entry={devices=[2]0}, exit={maximal device=1}}',
]


@pytest.mark.parametrize("value", _VALUES)
def test_as_xla_reads_it(value: str) -> None:
    agrees_in_xla_words(
        "HloModule m\nENTRY %e (v: f32[]) -> f32[] {\n  %v = f32[] parameter(0)\n"
        f"  ROOT %d = f32[] domain(f32[] %v), domain={value}\n}}\n")

"""Mutated real dumps: only meshtopo's errors escape, and parse errors point into the input."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo import hlo

from ._dumps import dumps
from .test_errors import HEAD

pytestmark = pytest.mark.jax

HAND = HEAD.replace("-> f32[8] {", "-> f32[32] {") + """  %s = f32[8]{0} all-reduce-start(%p), channel_id=7, replica_groups=[2,2]<=[4], to_apply=%add
  %d = f32[8]{0} all-reduce-done(%s)
  %cp = f32[8]{0} collective-permute(%d), source_target_pairs={{0,1},{1,2}}
  ROOT %g = f32[32]{0} all-gather(%cp), replica_groups=mesh['a'=2,'b'=2] {'b'}, dimensions={0}
}
"""


def _texts() -> list[str]:
    return [HAND, *dumps().values()]


def exercise(text: str) -> None:
    """Parse, touch every field, build the structure, stream: only MeshtopoError may escape."""
    lines = text.split("\n")
    try:
        module = hlo.parse_module(text)
        for c in module.collectives:
            _ = (c.mode, c.replica_groups, c.shape, c.bytes, c.reduction, c.attributes,
                 c.operand_shapes, c.device_groups())
        _ = module.computations
    except mt.HloParseError as error:
        assert 0 < error.line <= len(lines), error
        assert 0 < error.column <= len(lines[error.line - 1]) + 2, error
    except mt.MeshtopoError:
        pass
    try:
        for c in hlo.iter_collectives(io.StringIO(text), progress=False, block_size=512):
            _ = c.replica_groups
    except mt.HloParseError as error:
        assert 0 < error.line <= len(lines), error
    except mt.MeshtopoError:
        pass


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(_texts()))
    kind = draw(st.sampled_from(["truncate", "swap", "number", "bytes", "delete", "duplicate"]))
    tokens = re.split(r"(\W)", text)
    if kind == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    if kind == "swap":
        i, j = draw(st.integers(0, len(tokens) - 1)), draw(st.integers(0, len(tokens) - 1))
        tokens[i], tokens[j] = tokens[j], tokens[i]
        return "".join(tokens)
    if kind == "number":
        numbers = [i for i, t in enumerate(tokens) if t.isdigit()]
        i = draw(st.sampled_from(numbers))
        tokens[i] = draw(st.sampled_from(["99999999999999999999999", "9223372036854775808",
                                          "0", "4294967296", "1" * 5000, "-1"]))
        return "".join(tokens)
    if kind == "bytes":
        at = draw(st.integers(0, len(text)))
        junk = draw(st.binary(min_size=1, max_size=40)).decode("latin-1")
        return text[:at] + junk + text[at:]
    if kind == "delete":
        at = draw(st.integers(0, len(text)))
        return text[:at] + text[at + draw(st.integers(1, 30)):]
    i = draw(st.integers(0, len(tokens) - 1))
    return "".join(tokens[:i] + [tokens[i]] * 2 + tokens[i:])


@settings(max_examples=int(__import__("os").environ.get("HLO_FUZZ_EXAMPLES", "300")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_dumps(text: str) -> None:
    with mt.device_limit(4096):
        exercise(text)


@pytest.mark.parametrize("index", range(5))
def test_unmutated_dumps_parse(index: int) -> None:
    text = _texts()[index]
    module = hlo.parse_module(text)
    assert module.collectives and module.computations

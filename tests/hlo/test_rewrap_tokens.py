"""XLA's text format is token based: white space and comments may stand between any two tokens.

Any module of XLA's test corpus, re-wrapped at random token boundaries (found by the
tokenizer) with spaces, newlines, tabs, ``/* */`` and ``//`` comments, is read by jaxlib as
before (checked on every example), and by meshtopo as before: the same accept or refuse, and
the same collectives (opcode, groups as printed, pairs, channel_id, use_global_device_ids).

Not re-wrapped: the boundaries next to an error token (there is no token to keep whole), and
the insides of ``backend_config={...}`` and ``frontend_attributes={...}``, which XLA's parser
reads as raw text (``LexJsonDict``), so that white space inside changes their value.

The same holds with the white space between two tokens taken out wherever XLA's lexer still
reads the same two tokens (``f32[8]{0} add(%p, %q)`` -> ``f32[8]{0}add(%p,%q)``): the tokens,
and so XLA's reading, are the same.

"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo._tokenize import json_dict_end, tokenize
from meshtopo.hlo._tokens import TokKind

from ._corpus import corpus
from .test_tokens import xla_accepts

pytestmark = pytest.mark.jax

K = TokKind
WHITE_SPACE = {
    "spaces": [" "],
    "newlines": ["\n", "\n      ", "\r\n"],
    "tabs": ["\t", " \t "],
    "mixed": [" ", "\n", "\t"],
}
COMMENTS = {
    "block comments": [" /* c */ ", "/**/", "\n/* a, b */\n "],
    "line comments": [" // note\n", "// x\r\n  "],
    "mixed": [" ", "\n", "\t", " /* c */ ", " // note\n"],
}
_RAW_VALUES = ("backend_config=", "frontend_attributes=")
MAX_CHARS = 20_000


def boundaries(text: str) -> list[tuple[int, int]]:
    """(end of a token, start of the next) wherever white space (and comments) may be put
    or changed."""
    tokens = tokenize(text)
    kinds, starts, ends = tokens.kinds, tokens.starts.tolist(), tokens.ends.tolist()
    raw = []
    for i in range(len(kinds) - 1):
        if kinds[i] == K.kAttributeName and kinds[i + 1] == K.kLbrace and \
                text[starts[i]:ends[i]] in _RAW_VALUES:
            end = json_dict_end(text, starts[i + 1])
            if end > 0:
                raw.append((starts[i + 1], end))
    out = []
    for i in range(len(kinds) - 1):
        if K.kError in (kinds[i], kinds[i + 1]) or kinds[i + 1] == K.kEof:
            continue
        if not any(start < ends[i] < end for start, end in raw):
            out.append((ends[i], starts[i + 1]))
    return out


def rewrap(text: str, rng: random.Random, separators: list[str], share: float) -> str:
    """``text`` with the white space and comments at about ``share`` of its token boundaries
    replaced by a separator from ``separators``."""
    pieces, at = [], 0
    for end, start in boundaries(text):
        if rng.random() < share:
            pieces += [text[at:end], rng.choice(separators)]
            at = start
    return "".join([*pieces, text[at:]])


def reading(text: str) -> tuple[str, object]:
    """meshtopo's verdict: ("accept", every collective's facts) or ("refuse", the error)."""
    try:
        module = hlo.parse_module(text)
    except mt.MeshtopoError as error:
        return "refuse", type(error).__name__
    return "accept", [
        (c.name, c.opcode, None if c.replica_groups is None else str(c.replica_groups),
         c.source_target_pairs, c.channel_id, c.use_global_device_ids)
        for c in module.collectives]


def _modules() -> list[tuple[str, str]]:
    return [(name, text) for name, text in corpus() if len(text) <= MAX_CHARS]


def _check(index: int, separators: list[str], seed: int, share: float) -> None:
    modules = _modules()
    name, text = modules[index % len(modules)]
    wrapped = rewrap(text, random.Random(seed), separators, share)
    # The same tokens in the same order, only the white space between them changed.
    assert tokenize(wrapped).kinds.tolist() == tokenize(text).kinds.tolist()
    assert xla_accepts(wrapped) == xla_accepts(text), name
    assert reading(wrapped) == reading(text), name


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1 << 30), st.sampled_from(sorted(WHITE_SPACE)), st.integers(0, 1 << 30),
       st.sampled_from([0.1, 0.5, 1.0]))
def test_white_space_anywhere_reads_the_same(index: int, style: str, seed: int,
                                             share: float) -> None:
    _check(index, WHITE_SPACE[style], seed, share)


def squeeze(text: str) -> str:
    """``text`` without the white space between two tokens wherever XLA's lexer reads the
    same two tokens without it (the insides of raw values kept)."""
    tokens = tokenize(text)
    kinds, starts, ends = tokens.kinds.tolist(), tokens.starts.tolist(), tokens.ends.tolist()
    pieces, at = [], 0
    for i in range(len(kinds) - 2):
        gap = text[ends[i]:starts[i + 1]]
        first, second = text[starts[i]:ends[i]], text[starts[i + 1]:ends[i + 1]]
        if (not gap or gap.strip(" \t\r\n") or first in _RAW_VALUES
                or K.kError in (kinds[i], kinds[i + 1])):
            continue
        if first[-1] in _BRACKETS or second[0] in _BRACKETS or _two_tokens(
                first + second, kinds[i], kinds[i + 1], len(first)):
            pieces.append(text[at:ends[i]])
            at = starts[i + 1]
    return "".join([*pieces, text[at:]])


_BRACKETS = frozenset("{}()[],")  # a token of its own whatever is written against it


def _two_tokens(text: str, first: int, second: int, end: int) -> bool:
    joined = tokenize(text)
    return joined.kinds.tolist() == [first, second, K.kEof] and int(joined.ends[0]) == end


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1 << 30))
def test_white_space_taken_out_between_tokens_reads_the_same(index: int) -> None:
    modules = _modules()
    name, text = modules[index % len(modules)]
    squeezed = squeeze(text)
    tokens, before = tokenize(squeezed), tokenize(text)
    assert tokens.kinds.tolist() == before.kinds.tolist()
    assert ([squeezed[s:e] for s, e in zip(tokens.starts, tokens.ends, strict=True)]
            == [text[s:e] for s, e in zip(before.starts, before.ends, strict=True)])
    # The same tokens are the same reading for XLA's parser, which reads tokens (jaxlib takes
    # seconds on some modules squeezed to one line, so its verdict is not asked here).
    assert reading(squeezed) == reading(text), name


def test_values_and_names_end_where_xla_s_tokens_do() -> None:
    """Taken out of every corpus module that has a module name, a value or a window written
    against what follows it (the cases squeezing found)."""
    for text in ("HloModule m%c{%x=f32[]parameter(0)ROOT%r=f32[]negate(%x)}"
                 "ENTRY%e{%p=f32[]parameter(0)ROOT%q=f32[]call(%p),to_apply=%c}",
                 "HloModule m\nENTRY e {\n  %p = f32[1,8,8,1]{3,2,1,0} parameter(0)\n"
                 "  %k = f32[3,3,1,1]{3,2,1,0} parameter(1)\n  ROOT %c = f32[1,8,8,1]{3,2,1,0} "
                 "convolution(%p, %k), window={size=3x3pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}"):
        assert xla_accepts(text)
        assert reading(text)[0] == "accept"


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1 << 30), st.sampled_from(sorted(COMMENTS)), st.integers(0, 1 << 30),
       st.sampled_from([0.1, 0.5, 1.0]))
def test_comments_reads_the_same(index: int, style: str, seed: int, share: float) -> None:
    _check(index, COMMENTS[style], seed, share)


def _known_module(line: str | None) -> str:
    """A module with computation ``t`` and ``line`` in its entry (with None: its header
    glued to ``t`` by a comment)."""
    return (("HloModule m/* c */" if line is None else "HloModule m\n\n")
            + "t {\n  a = f32[] parameter(0)\n  ROOT b = f32[] copy(a)\n}\n\n"
            "ENTRY e {\n  p = pred[] parameter(0)\n  x = f32[] parameter(1)\n"
            f"  {line or 'ROOT y = f32[] copy(x)'}\n}}\n")


def test_a_comment_in_an_empty_operand_list_is_white_space() -> None:
    text = _known_module("ROOT r = u32[] partition-id(/* c */)")
    without = text.replace("/* c */", " ")
    assert xla_accepts(text) and xla_accepts(without)
    assert reading(text) == reading(without)


def test_a_comment_glued_to_the_module_s_name_is_white_space() -> None:
    text = _known_module(None)
    without = text.replace("/* c */", " ")
    assert xla_accepts(text) and xla_accepts(without)
    assert reading(text) == reading(without)

"""The compiled tokenizer and the pure-Python one give the same tokens: on every module of
XLA's own tests, on real dumps, on random token sequences joined by random white space and
comments, and on random characters (error tokens, all three widths of Python strings).
Every token list is also well formed: kEof last, spans in order, and only white space and
comments between tokens."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshtopo.hlo._lexer import lex as native_lex
from meshtopo.hlo._pure_lexer import lex as pure_lex
from meshtopo.hlo._tokenize import tokenize
from meshtopo.hlo._tokens import IDENTIFIER, KEYWORDS, PRIMITIVE_TYPES, PUNCTUATION, TokKind

from ._corpus import corpus
from ._dumps import dumps

K = TokKind


def same_tokens(text: str, pos: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both tokenizers' tokens of ``text[pos:]``, asserted equal and well formed."""
    native = native_lex(text, pos)
    assert native == pure_lex(text, pos), repr(text[:200])
    kinds = np.frombuffer(native[0], np.uint8)
    starts, ends = np.frombuffer(native[1], np.int64), np.frombuffer(native[2], np.int64)
    assert kinds[-1] == K.kEof and (K.kEof not in kinds[:-1])
    assert starts[-1] == ends[-1] <= len(text)
    assert (starts[:-1] < ends[:-1]).all() and (ends[:-1] <= starts[1:]).all()
    assert starts[0] >= pos
    return kinds, starts, ends


def test_every_corpus_module() -> None:
    count = 0
    for _, text in corpus():
        count += len(same_tokens(text)[0])
    assert count > 500_000


@pytest.mark.jax
def test_real_dumps() -> None:
    for text in dumps().values():
        kinds, _, _ = same_tokens(text)
        assert K.kError not in kinds


# One token each, as XLA lexes it when white space surrounds it.
_SPELLINGS = st.one_of(
    st.sampled_from(sorted(PUNCTUATION)).map(lambda t: (t, PUNCTUATION[t])),
    st.sampled_from(sorted(KEYWORDS)).map(lambda t: (t, KEYWORDS[t])),
    st.sampled_from(sorted(PRIMITIVE_TYPES)).map(lambda t: (t, K.kPrimitiveType)),
    st.from_regex(IDENTIFIER, fullmatch=True).filter(
        lambda t: t not in KEYWORDS and t not in PRIMITIVE_TYPES and t != "nan"
        and not t.startswith(("b", "f"))).map(lambda t: (t, K.kIdent)),
    st.from_regex(IDENTIFIER, fullmatch=True).map(lambda t: ("%" + t, K.kName)),
    st.from_regex(IDENTIFIER, fullmatch=True).map(lambda t: (t + ":", K.kName)),
    st.from_regex(IDENTIFIER, fullmatch=True).map(lambda t: (t + "=", K.kAttributeName)),
    st.integers(-(1 << 63), (1 << 64) - 1).map(lambda n: (str(n), K.kInt)),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: (repr(x), K.kDecimal)),
    st.sampled_from([("nan", K.kDecimal), ("-nan(0x1F)", K.kDecimal), ("-inf", K.kNegInf),
                     ("inf", K.kw_inf), ("2x3", K.kDxD), ("0_1x-1_2_3", K.kPad),
                     ("b01f_01io->b01f", K.kDimLabels), ("??_??->??", K.kDimLabels)]),
    st.text(st.sampled_from('ab"\\{}/* \n\u00e9'), max_size=8).map(
        lambda t: ('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"', K.kString)),
)
_SEPARATORS = st.sampled_from([" ", "\n", "\t", "\r\n", " /* c */ ", "/**/", " // x\n",
                               "\n/* a\n b */\n"])
# Pieces that may glue to their neighbours, or make errors.
_PIECES = st.sampled_from(["", "/*", "*/", "//", "\0", "\\", "@", "<", ".", "..", "-", "?", "%",
                           '"', "(0x", "nan(", "x", "e5", "_", "->", "\u00e9", "\u0394",
                           "\U0001F600", "0x", "1", "\\x41", "\\u00", "b", "f", "io"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_SPELLINGS, _SEPARATORS), max_size=30))
def test_tokens_apart_are_their_own_kinds(pairs: list[tuple[tuple[str, int], str]]) -> None:
    text = "".join(spelling + separator for (spelling, _), separator in pairs)
    kinds, starts, ends = same_tokens(text)
    assert kinds[:-1].tolist() == [kind for (_, kind), _ in pairs]
    assert [text[s:e] for s, e in zip(starts[:-1], ends[:-1], strict=True)] == [
        spelling for (spelling, _), _ in pairs]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_SPELLINGS.map(lambda pair: pair[0]), _SEPARATORS, _PIECES),
                max_size=40), st.integers(0, 5))
def test_tokens_glued_together(pieces: list[str], pos: int) -> None:
    text = "".join(pieces)
    kinds, starts, ends = same_tokens(text, min(pos, len(text)))
    # Between tokens that are no errors there is only white space and comments.
    for i in np.flatnonzero(kinds[:-1] != K.kError):
        if i + 1 < len(kinds) and kinds[i + 1] != K.kError:
            assert tokenize(text[ends[i]:starts[i + 1]]).kinds.tolist() == [K.kEof]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_random_characters(text: str) -> None:
    same_tokens(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.sampled_from('0123456789-?.eE+_xbfio>"\\uU{}()a /*\n\0'), max_size=40))
def test_random_number_and_string_characters(text: str) -> None:
    same_tokens(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_SPELLINGS.map(lambda pair: pair[0]), _SEPARATORS, _PIECES),
                max_size=30), st.integers(0, 5), st.integers(1, 12))
def test_the_first_tokens_alone(pieces: list[str], pos: int, most: int) -> None:
    """``lex(text, pos, most)`` gives the first ``most`` tokens of ``lex(text, pos)``, both
    tokenizers alike (a cursor lexes a module's text a run at a time)."""
    text = "".join(pieces)
    pos = min(pos, len(text))
    every = native_lex(text, pos)
    count = min(most, len(every[0]))
    first = native_lex(text, pos, most)
    assert first == pure_lex(text, pos, most)
    assert first == (every[0][:count], every[1][:8 * count], every[2][:8 * count])

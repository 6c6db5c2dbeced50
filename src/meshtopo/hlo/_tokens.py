"""XLA's HLO tokens: the one table of token kinds, spellings and lexical rules.

Transcribed from ``xla/hlo/parser/hlo_lexer.h`` and ``hlo_lexer.cc`` of openxla/xla at commit
979658523138c91edf8d048f4b6315e2df2afc69 (no ``kSparsityDesc`` in that version), then checked
against jaxlib 0.10.2's parser, whose lexer is newer: it also reads single-quoted strings
(``mesh['x'=2]``) and reserves ``unreduced``, ``FileNames``, ``FunctionNames``,
``FileLocations`` and ``StackFrames`` (found by asking it; their ``kw_`` kinds follow
``kw_inf`` here, their place in XLA's newer enum not being known). ``TokKind`` keeps XLA's
names and, for the rest, its order. Both tokenizers are
built from this module: the pure-Python one (``_pure_lexer``) compiles its regular
expression from the rules below, and the C one (``_lexer.c``) includes ``_tokens.h``, which
``c_header()`` writes from them (``python -m meshtopo.hlo._tokens > src/meshtopo/hlo/_tokens.h``;
a test fails when the two differ).

Lexing, as XLA does it, from a token's first character:

- `` ``, ``\\t``, ``\\n``, ``\\r``, ``/* ... */`` and ``// ...`` (to the end of the line) are
  skipped; an unterminated ``/*`` is an error token at its ``/``, as is a NUL character
  inside a comment (a NUL ends every token and is an error token itself);
- ``PUNCTUATION`` spellings are tokens of their own; ``<`` without ``=``, ``.`` without
  ``..`` and a lone ``/`` are errors;
- ``[A-Za-z_]``: an identifier (``IDENTIFIER``) followed by ``:`` is a ``kName`` and by
  ``=`` a ``kAttributeName`` (the ``:`` or ``=`` is part of the token); else a word of
  ``PRIMITIVE_TYPES`` is a ``kPrimitiveType``, ``nan`` (with an optional payload
  ``NAN_PAYLOAD``) a ``kDecimal``, a word of ``KEYWORDS`` its keyword, text matching
  ``DIM_LABELS`` from the identifier's start a ``kDimLabels``, anything else a ``kIdent``;
- ``%`` then ``[A-Za-z_]`` and identifier characters: a ``kName`` (``%`` included);
- ``[0-9]``, ``-`` and ``?``: ``->`` is a ``kArrow``; else the first of ``NUMBER_RULES`` that
  matches, in order (an integer outside XLA's range is no match); a ``?`` that starts none of
  them is a ``kQuestionMark``;
- ``"`` or ``'``: a string, ``STRING`` (closed by the quote that opens it), whose escapes
  absl's ``CUnescape`` accepts (see ``_token_values.string_value``);
- anything else (another character, a non-ASCII one outside strings and comments) is an
  error token.

The lexer does not stop at an error token: it goes on where XLA's lexer leaves its position
(at least one character on), so a reader that re-reads a stretch of text its own way
(``LexJsonDict``) finds the tokens after it. The kEof token ends every token list.

>>> TokKind.kName, KEYWORDS["ROOT"].name, "f32" in PRIMITIVE_TYPES, "tuple" in PRIMITIVE_TYPES
(<TokKind.kName: 39>, 'kw_ROOT', True, False)
"""

from __future__ import annotations

import enum

# " \t\n\r": kept by the groups' scanner, the lowest layer that reads XLA's text.
from ..groups._text import WHITESPACE as WHITESPACE


class TokKind(enum.IntEnum):
    """XLA's ``TokKind``, in XLA's order (the values are the positions in that enum)."""

    kEof = 0
    kError = enum.auto()
    kEqual = enum.auto()
    kComma = enum.auto()
    kColon = enum.auto()
    kAsterisk = enum.auto()
    kQuestionMark = enum.auto()
    kOctothorp = enum.auto()
    kPlus = enum.auto()
    kTilde = enum.auto()
    kLsquare = enum.auto()
    kRsquare = enum.auto()
    kLbrace = enum.auto()
    kRbrace = enum.auto()
    kLparen = enum.auto()
    kRparen = enum.auto()
    kDots = enum.auto()
    kArrow = enum.auto()
    kLeq = enum.auto()
    kw_HloModule = enum.auto()
    kw_ENTRY = enum.auto()
    kw_ROOT = enum.auto()
    kw_true = enum.auto()
    kw_false = enum.auto()
    kw_maximal = enum.auto()
    kw_replicated = enum.auto()
    kw_manual = enum.auto()
    kw_last_tile_dim_replicate = enum.auto()
    kw_shard_as = enum.auto()
    kw_shard_like = enum.auto()
    kw_unknown = enum.auto()
    kw_inf = enum.auto()
    kw_unreduced = enum.auto()
    kw_FileNames = enum.auto()
    kw_FunctionNames = enum.auto()
    kw_FileLocations = enum.auto()
    kw_StackFrames = enum.auto()
    kNegInf = enum.auto()
    kPrimitiveType = enum.auto()
    kName = enum.auto()
    kAttributeName = enum.auto()
    kDimLabels = enum.auto()
    kDxD = enum.auto()
    kPad = enum.auto()
    kIdent = enum.auto()
    kString = enum.auto()
    kInt = enum.auto()
    kDecimal = enum.auto()


K = TokKind

# Tokens spelled by fixed text (``LexToken``'s switch).
PUNCTUATION: dict[str, TokKind] = {
    "=": K.kEqual, ",": K.kComma, ":": K.kColon, "*": K.kAsterisk, "?": K.kQuestionMark,
    "#": K.kOctothorp, "+": K.kPlus, "~": K.kTilde, "[": K.kLsquare, "]": K.kRsquare,
    "{": K.kLbrace, "}": K.kRbrace, "(": K.kLparen, ")": K.kRparen, "...": K.kDots,
    "->": K.kArrow, "<=": K.kLeq,
}

# Reserved words (``LexIdentifier``'s KEYWORD list): a whole identifier spelled so.
KEYWORDS: dict[str, TokKind] = {kind.name[3:]: kind for kind in TokKind
                                if kind.name.startswith("kw_")}

# ``primitive_util::IsPrimitiveTypeName``: xla.PrimitiveType's names in lower case, but
# ``tuple`` and ``buffer``, which the lexer leaves as identifiers.
PRIMITIVE_TYPES: frozenset[str] = frozenset({
    "pred", "s1", "s2", "s4", "s8", "s16", "s32", "s64", "u1", "u2", "u4", "u8", "u16", "u32",
    "u64", "f16", "f32", "bf16", "f64", "f4e2m1fn", "f8e3m4", "f8e4m3", "f8e4m3fn",
    "f8e4m3b11fnuz", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f8e8m0fnu", "c64", "c128", "token",
    "opaque",
})

IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_.\-]*"
# XLA's patterns (RE2, anchored at the token's start, first alternative first), with RE2's
# ``\d`` spelled ``[0-9]``.
FLOAT = (r"-?(?:[0-9]+|[0-9]+\.[0-9]*|[0-9]*\.[0-9]+)[eE][+\-]?[0-9]+"
         r"|-?(?:[0-9]+\.[0-9]*|[0-9]*\.[0-9]+)")
DIM_LABELS = r"[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}"
DXD = r"[0-9]+(?:x[0-9]+)+"
PAD = r"-?[0-9]+_-?[0-9]+(?:_[0-9]+)?(?:x-?[0-9]+_-?[0-9]+(?:_[0-9]+)?)*"
INT = r"-?[0-9]+"
NEG_INF = r"-inf"
NEG_NAN = r"-nan"
NAN_PAYLOAD = r"\(0x[0-9a-fA-F]+\)"
DOUBLE_QUOTED = r'"(?:[^"\\]|\\.)*+"'
STRING = DOUBLE_QUOTED + r"|'(?:[^'\\]|\\.)*'"
# A kInt is a decimal integer from int64's minimum to uint64's maximum (above int64's
# maximum it is read as the int64 of the same bits): ``groups._text.int64_value``.
# A NaN payload is 1 to 2**52 - 1 (the double's mantissa).
NAN_PAYLOAD_MAX = (1 << 52) - 1

# ``LexNumberOrPattern``: the rules tried in order at ``[0-9?-]``.
NUMBER_RULES: tuple[tuple[TokKind, str], ...] = (
    (K.kDecimal, FLOAT), (K.kDimLabels, DIM_LABELS), (K.kDxD, DXD), (K.kPad, PAD),
    (K.kInt, INT), (K.kNegInf, NEG_INF), (K.kDecimal, NEG_NAN),
)


def c_header() -> str:
    """The text of ``_tokens.h``: the kinds, spellings, keywords and primitive types for
    ``_lexer.c``, written from this table."""
    out = ["/* Written by `python -m meshtopo.hlo._tokens` from _tokens.py: do not edit. */",
           "#ifndef MESHTOPO_HLO_TOKENS_H", "#define MESHTOPO_HLO_TOKENS_H", "",
           "enum TokKind {"]
    out += [f"    {kind.name} = {kind.value}," for kind in TokKind]
    out += ["    TOK_KIND_COUNT", "};", "",
            "/* Every kind's name, by value. */", "static const char *const TOK_KIND_NAMES[] = {"]
    out += [f'    "{kind.name}",' for kind in TokKind]
    out += ["};", "", "/* Each one-character token's kind, by character (0: none). */",
            "static const unsigned char SINGLE_CHAR_KIND[128] = {"]
    out += [f"    ['{_c_char(text)}'] = {kind.name}," for text, kind in PUNCTUATION.items()
            if len(text) == 1]
    out += ["};", "", "/* Reserved words: each keyword and its kind. */",
            "static const struct { const char *word; unsigned char kind; } KEYWORDS[] = {"]
    out += [f'    {{"{word}", {kind.name}}},' for word, kind in KEYWORDS.items()]
    out += ["};", "", "/* Words lexed as kPrimitiveType. */",
            "static const char *const PRIMITIVE_TYPES[] = {"]
    out += [f'    "{word}",' for word in sorted(PRIMITIVE_TYPES)]
    out += ["};", "", f"#define NAN_PAYLOAD_MAX 0x{NAN_PAYLOAD_MAX:X}ULL", "",
            "#endif", ""]
    return "\n".join(out)


def _c_char(text: str) -> str:
    """``text`` (one character) inside a C character literal."""
    return "\\'" if text == "'" else text


if __name__ == "__main__":
    print(c_header(), end="")

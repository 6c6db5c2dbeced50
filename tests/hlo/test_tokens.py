"""XLA's tokens: the table, the compiled tokenizer built from it, and XLA's own answers.

The token rules are ``xla/hlo/parser/hlo_lexer.cc``'s (see ``hlo/_tokens.py``). Where jaxlib's
parser can tell (a string's escapes, reserved words, NaN payloads, integer range), the
lexer's verdict is checked against what jaxlib accepts; the other rules are checked token
by token on texts written from XLA's patterns.
"""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.hlo import _lexer, _tokens
from meshtopo.hlo._pure_lexer import lex as pure_lex
from meshtopo.hlo._token_values import decimal_value, int_value, name_value, string_value
from meshtopo.hlo._tokenize import Tokens, json_dict_end, tokenize
from meshtopo.hlo._tokens import KEYWORDS, PRIMITIVE_TYPES, PUNCTUATION, TokKind

K = TokKind
HEADER = Path(_tokens.__file__).with_name("_tokens.h")


def spelled(text: str) -> list[tuple[str, str]]:
    """(kind name, token text) of every token but the final kEof, by both tokenizers (which
    must agree)."""
    assert _lexer.lex(text, 0) == pure_lex(text, 0)
    tokens = tokenize(text)
    assert tokens.kinds[-1] == K.kEof
    return [(K(kind).name, text[start:end]) for kind, start, end
            in zip(tokens.kinds[:-1], tokens.starts[:-1], tokens.ends[:-1], strict=True)]


# ---- the table and the C side ----------------------------------------------------------------

def test_the_header_is_written_from_the_table() -> None:
    assert HEADER.read_text() == _tokens.c_header(), (
        "_tokens.h is stale: python -m meshtopo.hlo._tokens > src/meshtopo/hlo/_tokens.h")


def test_the_compiled_tokenizer_was_built_from_the_table() -> None:
    table = _lexer.TABLE
    assert table["kinds"] == tuple(kind.name for kind in TokKind)
    assert table["punctuation"] == {text: int(kind) for text, kind in PUNCTUATION.items()
                                    if len(text) == 1}
    assert table["keywords"] == {word: int(kind) for word, kind in KEYWORDS.items()}
    assert set(table["primitive_types"]) == PRIMITIVE_TYPES
    assert table["nan_payload_max"] == _tokens.NAN_PAYLOAD_MAX


def test_kinds_are_xla_s_enum_in_order() -> None:
    # hlo_lexer.h's TokKind, in declaration order (at the commit _tokens.py names).
    assert [kind.name for kind in TokKind] == [
        "kEof", "kError", "kEqual", "kComma", "kColon", "kAsterisk", "kQuestionMark",
        "kOctothorp", "kPlus", "kTilde", "kLsquare", "kRsquare", "kLbrace", "kRbrace", "kLparen",
        "kRparen", "kDots", "kArrow", "kLeq", "kw_HloModule", "kw_ENTRY", "kw_ROOT", "kw_true",
        "kw_false", "kw_maximal", "kw_replicated", "kw_manual", "kw_last_tile_dim_replicate",
        "kw_shard_as", "kw_shard_like", "kw_unknown", "kw_inf",
        # jaxlib 0.10.2's lexer reserves these too (see _tokens.py).
        "kw_unreduced", "kw_FileNames", "kw_FunctionNames", "kw_FileLocations", "kw_StackFrames",
        "kNegInf", "kPrimitiveType",
        "kName", "kAttributeName", "kDimLabels", "kDxD", "kPad", "kIdent", "kString", "kInt",
        "kDecimal"]
    assert [kind.value for kind in TokKind] == list(range(len(TokKind)))


# ---- XLA's rules, token by token ---------------------------------------------------------------

RULES = {
    "punctuation": ("= , : * ? # + ~ [ ] { } ( ) ... -> <=", [
        ("kEqual", "="), ("kComma", ","), ("kColon", ":"), ("kAsterisk", "*"),
        ("kQuestionMark", "?"), ("kOctothorp", "#"), ("kPlus", "+"), ("kTilde", "~"),
        ("kLsquare", "["), ("kRsquare", "]"), ("kLbrace", "{"), ("kRbrace", "}"),
        ("kLparen", "("), ("kRparen", ")"), ("kDots", "..."), ("kArrow", "->"), ("kLeq", "<=")]),
    "names and attribute names keep their marks": ("%a.1-b x: y= %z: ENTRY: f32=", [
        ("kName", "%a.1-b"), ("kName", "x:"), ("kAttributeName", "y="), ("kName", "%z"),
        ("kColon", ":"), ("kName", "ENTRY:"), ("kAttributeName", "f32=")]),
    "words": ("ROOT f32 tuple buffer token inf -inf nan true.1 s3", [
        ("kw_ROOT", "ROOT"), ("kPrimitiveType", "f32"), ("kIdent", "tuple"),
        ("kIdent", "buffer"), ("kPrimitiveType", "token"), ("kw_inf", "inf"),
        ("kNegInf", "-inf"), ("kDecimal", "nan"), ("kIdent", "true.1"), ("kIdent", "s3")]),
    "numbers": ("1 -2 1.5 1. -.5 1e5 1.5E-3 .5e1", [
        ("kInt", "1"), ("kInt", "-2"), ("kDecimal", "1.5"), ("kDecimal", "1."),
        ("kDecimal", "-.5"), ("kDecimal", "1e5"), ("kDecimal", "1.5E-3"), ("kError", "."),
        ("kDecimal", "5e1")]),
    "patterns": ("2x3 1x2x3x 0_1x-1_2_3 1_2_3_4 b01f_01io->b01f ??_??->?? 01_oi->01 bf_io->bfx", [
        ("kDxD", "2x3"), ("kDxD", "1x2x3"), ("kIdent", "x"), ("kPad", "0_1x-1_2_3"),
        ("kPad", "1_2_3"), ("kIdent", "_4"), ("kDimLabels", "b01f_01io->b01f"),
        ("kDimLabels", "??_??->??"), ("kDimLabels", "01_oi->01"), ("kDimLabels", "bf_io->bf"),
        ("kIdent", "x")]),
    "a number pattern's first match wins": ("1e5x2 12_34->56 3e", [
        ("kDecimal", "1e5"), ("kIdent", "x2"), ("kDimLabels", "12_34->56"), ("kInt", "3"),
        ("kIdent", "e")]),
    "integer range": ("18446744073709551615 -9223372036854775808 18446744073709551616", [
        ("kInt", "18446744073709551615"), ("kInt", "-9223372036854775808"), ("kError", "1"),
        ("kInt", "8446744073709551616")]),
    "NaN payloads": ("nan(0x1) -nan(0xFFFFFFFFFFFFF) nan(0x0) -nan(0x10000000000000) nan(1)", [
        ("kDecimal", "nan(0x1)"), ("kDecimal", "-nan(0xFFFFFFFFFFFFF)"), ("kError", "nan"),
        ("kLparen", "("), ("kDxD", "0x0"), ("kRparen", ")"), ("kError", "-nan"),
        ("kLparen", "("), ("kDxD", "0x10000000000000"), ("kRparen", ")"),
        ("kError", "nan"), ("kLparen", "("), ("kInt", "1"), ("kRparen", ")")]),
    "comments and white space": ("a/* b */c// d\r\ne\t\n/**/f/***/g", [
        ("kIdent", "a"), ("kIdent", "c"), ("kIdent", "e"), ("kIdent", "f"), ("kIdent", "g")]),
    "errors go on past themselves": ('.. < / @ % é "open', [
        ("kError", ".."), ("kError", "<"), ("kError", "/"), ("kError", "@"), ("kError", "%"),
        ("kError", "é"), ("kError", '"'), ("kIdent", "open")]),
    "an unterminated comment is an error at its '/'": ("a /* b", [
        ("kIdent", "a"), ("kError", "/"), ("kAsterisk", "*"), ("kIdent", "b")]),
    "a NUL in a comment is an error at the comment": ("a // b\0c", [
        ("kIdent", "a"), ("kError", "// b"), ("kError", "\0"), ("kIdent", "c")]),
    "strings": (r'"a" "\"}{" "b\x41" "\q" "x' + "\n" + r'y" "\u00e9\U0001F600"', [
        ("kString", '"a"'), ("kString", r'"\"}{"'), ("kString", r'"b\x41"'),
        ("kError", r'"\q"'), ("kString", '"x\ny"'), ("kString", r'"\u00e9\U0001F600"')]),
    "single quotes": ("mesh['x'=2] 'a\"b' 'c\\'d' \"e'f\" 'g", [
        ("kIdent", "mesh"), ("kLsquare", "["), ("kString", "'x'"), ("kEqual", "="),
        ("kInt", "2"), ("kRsquare", "]"), ("kString", "'a\"b'"), ("kString", "'c\\'d'"),
        ("kString", "\"e'f\""), ("kError", "'"), ("kIdent", "g")]),
    "no characters outside ASCII in tokens": ("\u00e9a \U0001F600b", [
        ("kError", "\u00e9"), ("kIdent", "a"), ("kError", "\U0001F600"), ("kIdent", "b")]),
}


@pytest.mark.parametrize("case", RULES)
def test_xla_s_rules(case: str) -> None:
    text, expected = RULES[case]
    assert spelled(text) == expected


def test_the_last_token_is_eof_after_trailing_comments() -> None:
    text = "x /* a */ // b\n "
    tokens = tokenize(text)
    assert (tokens.kinds.tolist(), tokens.starts.tolist(), tokens.ends.tolist()) == (
        [K.kIdent, K.kEof], [0, len(text)], [1, len(text)])
    assert len(tokenize("")) == 1


def test_tokenizing_from_an_offset() -> None:
    text = "skipped %a = f32[] parameter(0)"
    assert tokenize(text, 8).starts.tolist() == [8, 11, 13, 16, 17, 19, 28, 29, 30, 31]
    with pytest.raises(mt.InvalidArgumentError, match="pos 40 is outside the text"):
        tokenize(text, 40)


def test_columns_are_read_only_numpy_arrays() -> None:
    tokens = tokenize("a b")
    assert isinstance(tokens, Tokens) and len(tokens) == 3
    assert (tokens.kinds.dtype, tokens.starts.dtype, tokens.ends.dtype) == ("uint8", "int64",
                                                                            "int64")
    with pytest.raises(ValueError):
        tokens.starts[0] = 1


def test_values() -> None:
    text = r'%all-reduce.1 x: dims= -5 18446744073709551615 1.5e3 -inf "a\"b\x41\303\251"'
    tokens = tokenize(text)
    start, end = tokens.starts.tolist(), tokens.ends.tolist()
    assert [name_value(text, start[i], end[i]) for i in range(3)] == ["all-reduce.1", "x",
                                                                       "dims"]
    assert int_value(text, start[3], end[3]) == -5
    assert int_value(text, start[4], end[4]) == -1  # uint64's maximum, as int64 bits
    assert decimal_value(text, start[5], end[5]) == 1500.0
    assert string_value(text, start[7], end[7]) == 'a"bAé'


def test_nan_values_keep_their_sign_and_payload() -> None:
    for text, bits in [("nan", 0x7FF8000000000000), ("-nan", 0xFFF8000000000000),
                       ("nan(0x5)", 0x7FF0000000000005), ("-nan(0x8)", 0xFFF0000000000008)]:
        value = decimal_value(text, 0, len(text))
        assert math.isnan(value)
        assert struct.unpack("<Q", struct.pack("<d", value))[0] == bits, text


def test_json_dict_end() -> None:
    assert json_dict_end('x={"a": {"b": "}\\""}} , y', 2) == 21
    assert json_dict_end('{"a": 1', 0) == -1
    assert json_dict_end('{"a\n', 0) == -1
    assert json_dict_end("x", 0) == -1


# ---- against jaxlib's parser ---------------------------------------------------------------------

def xla_accepts(text: str) -> bool:
    """Whether jaxlib's parser reads ``text``."""
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    try:
        hlo_module_from_text(text)
    except Exception:  # jaxlib raises its own status error
        return False
    return True


def _module(line: str) -> str:
    return f"HloModule m\nENTRY e {{\n  {line}\n}}\n"


WORDS = sorted({*PRIMITIVE_TYPES, *KEYWORDS, "nan", "tuple", "buffer", "s3", "u3", "f8e4m3b11",
                "bf8", "invalid", "inf.1", "ROOT_", "Entry", "reduced", "FileName", "mesh"})


@pytest.mark.jax
@pytest.mark.parametrize("word", WORDS)
def test_reserved_words_are_what_xla_refuses_as_a_name(word: str) -> None:
    # An instruction's name is a kName or a kIdent; a reserved word is neither.
    [(kind, _)] = spelled(word)
    assert xla_accepts(_module(f"{word} = f32[] parameter(0)")) == (kind == "kIdent")


ESCAPES = [r"\x41B", r"\x100", r"\x0000000041", r"\x100000041", r"\X41", r"\u0041", r"\ud800",
           r"\u004", r"\U00110000", r"\U0001F600", r"\8", r"\400", r"\377", r"\0", r"\q", r"\e",
           r"\?", r"\a\b\f\n\r\t\v\\\'", r"\x", "\\\n", "a\nb", "\u00e9"]


@pytest.mark.jax
@pytest.mark.parametrize("quote", ['"', "'"])
@pytest.mark.parametrize("raw", ESCAPES)
def test_strings_are_what_xla_reads_as_strings(raw: str, quote: str) -> None:
    from jaxlib._hlo import hlo_module_from_text

    quoted = quote + raw + quote
    text = _module(f"ROOT p = f32[] parameter(0), metadata={{op_name={quoted}}}")
    is_string = spelled(quoted) == [("kString", quoted)]
    assert xla_accepts(text) == is_string
    if is_string:  # XLA prints the value escaped again: both read as the same value
        printed = hlo_module_from_text(text).to_string()
        found = re.search(r'op_name="((?:[^"\\]|\\.)*)"', printed)
        assert found is not None
        assert string_value(found.group(0)[8:], 0, len(found.group(0)) - 8) == string_value(
            quoted, 0, len(quoted))


@pytest.mark.jax
@pytest.mark.parametrize("value", ["nan", "-nan", "nan(0x1)", "-nan(0xFFFFFFFFFFFFF)",
                                   "nan(0x0)", "nan(0x10000000000000)", "nan(0x0000000000000000001)",
                                   "nan(0x10000000000000001)", "nan(1)"])
def test_nan_payloads_are_what_xla_reads(value: str) -> None:
    kinds = [kind for kind, _ in spelled(value)]
    assert xla_accepts(_module(f"ROOT c = f64[] constant({value})")) == (kinds == ["kDecimal"])


@pytest.mark.jax
@pytest.mark.parametrize("literal", ["u64[] constant(18446744073709551615)",
                                     "u64[] constant(18446744073709551616)",
                                     "u64[] constant(000000000000000000000018446744073709551615)",
                                     "s64[] constant(-9223372036854775808)",
                                     "s64[] constant(-9223372036854775809)"])
def test_integer_range_is_xla_s(literal: str) -> None:
    number = literal[literal.index("(") + 1:-1]
    kinds = [kind for kind, _ in spelled(number)]
    assert xla_accepts(_module(f"ROOT c = {literal}")) == (kinds == ["kInt"])

"""Attribute values XLA's parser reads as one name of a fixed set (``ParseComparisonDirection``,
``ParseFusionKind``, ``ParseFftType`` and their kind): one identifier token, the name looked
up (some without regard to case), refused in XLA's words at that token.

>>> check_comparison_direction("GT", 1, 40)
>>> check_comparison_direction("gt", 2, 40)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 2:40: expects comparison direction but sees: gt
>>> check_fusion_kind("kScatter", 3, 9)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:9: expects fusion kind but sees: kScatter, error: Unknown \
fusion kind: kScatter
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .._errors import HloParseError
from ._token_cursor import TokenCursor, read_value
from ._tokens import TokKind


class _Names(NamedTuple):
    """One kind of name: what XLA calls it in its messages, the names it takes (as it spells
    them, or lower-cased when it reads them without regard to case), and what XLA adds after
    ``, error: `` for a name it does not know (None: nothing; ``{}`` stands for the name)."""

    what: str
    names: frozenset[str]
    folded: bool = False
    unknown: str | None = None
    not_a_name: str | None = None  # XLA's words for a token that is no name, if not its own


_DIRECTION = _Names("comparison direction", frozenset({"EQ", "NE", "GE", "GT", "LE", "LT"}))
_COMPARISON_TYPE = _Names("comparison type",
                          frozenset({"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"}))
_FUSION_KIND = _Names("fusion kind", frozenset({"kLoop", "kInput", "kOutput", "kCustom"}),
                      unknown="Unknown fusion kind: {}")
_DISTRIBUTION = _Names("random distribution",
                       frozenset({"rng_invalid", "rng_uniform", "rng_normal"}), True,
                       "Unknown distribution")
_RANDOM_ALGORITHM = _Names("random algorithm",
                           frozenset({"rng_default", "rng_three_fry", "rng_philox"}), True,
                           "Unknown algorithm")
_FFT_TYPE = _Names("fft type", frozenset({"FFT", "IFFT", "RFFT", "IRFFT"}))
_PADDING_TYPE = _Names("padding type",
                       frozenset({"PADDING_INVALID", "PADDING_VALID", "PADDING_SAME"}))
_SCHEDULE = _Names("custom-call schedule",
                   frozenset({"schedule_none", "schedule_latest", "schedule_earliest"}), True,
                   "Unknown schedule")
# XLA's words for a precision that is no name are those of a random distribution.
_PRECISION = _Names("precision", frozenset({"default", "high", "highest"}), True,
                    "Unknown precision", "expects random distribution")
_DOT_ALGORITHM = _Names("algorithm", frozenset({
    "unset", "dot_any_f8_any_f8_f32", "dot_any_f8_any_f8_f32_fast_accum", "dot_f16_f16_f16",
    "dot_f16_f16_f32", "dot_bf16_bf16_bf16", "dot_bf16_bf16_f32", "dot_bf16_bf16_f32_x3",
    "dot_bf16_bf16_f32_x6", "dot_bf16_bf16_f32_x9", "dot_tf32_tf32_f32",
    "dot_tf32_tf32_f32_x3", "dot_f32_f32_f32", "dot_f64_f64_f64"}), True, "Unknown algorithm")


_GROUP_MODE = _Names("collective op group mode", frozenset({
    "cross_replica", "cross_partition", "cross_replica_and_partition", "flattened_id"}),
    unknown="Invalid collective op group mode: {}")
_CONVOLUTION_KIND = _Names("convolution kind", frozenset({"fprop", "dgrad", "wgrad"}))


def _name(c: TokenCursor, names: _Names) -> None:
    """Read one name of ``names`` at the cursor, as XLA's parser of that kind reads it."""
    if c.kind != TokKind.kIdent:
        raise c.error(names.not_a_name or f"expects {names.what}")
    written = c.word
    if (written.lower() if names.folded else written) not in names.names:
        detail = "" if names.unknown is None else f", error: {names.unknown.format(written)}"
        raise c.error(f"expects {names.what} but sees: {written}{detail}")
    c.lex()


def _check(names: _Names) -> Callable[[str, int, int], HloParseError | None]:
    def check(value: str, line: int, column: int) -> HloParseError | None:
        read_value(lambda c: _name(c, names), value, line, column)
        return None

    check.__doc__ = (f"Refuse ``value`` (a {names.what} written at ``line``/``column``) as "
                     "XLA's parser refuses it, at the token XLA points at.")
    return check


def _precision_list(c: TokenCursor) -> None:
    """XLA's ``ParsePrecisionList``: ``'{' [ precision ( ',' precision )* ] '}'``."""
    c.expect(TokKind.kLbrace, "expects a list starting with kLbrace")
    if c.kind != TokKind.kRbrace:
        while True:
            _name(c, _PRECISION)
            if not c.eat(TokKind.kComma):
                break
    c.expect(TokKind.kRbrace, "expects a list to end with kRbrace")


def check_enumeration(value: str, line: int, column: int) -> HloParseError | None:
    """Refuse a ``transpose_a`` value that is no identifier, as XLA's reader of an
    enumeration does (an identifier XLA does not know aborts its parser: not judged here)."""

    def read(c: TokenCursor) -> None:
        if c.kind != TokKind.kIdent:
            raise c.error("expects an enumeration value")
        c.lex()

    read_value(read, value, line, column)
    return None


def check_precision_list(value: str, line: int, column: int) -> HloParseError | None:
    """Refuse ``value`` (``operand_precision`` written at ``line``/``column``) as XLA's
    parser refuses it, at the token XLA points at."""
    read_value(_precision_list, value, line, column)
    return None


check_comparison_direction = _check(_DIRECTION)
check_fusion_kind = _check(_FUSION_KIND)

# The checks of each attribute read as one name, whatever the opcode, and on one opcode.
NAME_CHECKS = {
    "convolution_kind": _check(_CONVOLUTION_KIND),
    "fft_type": _check(_FFT_TYPE),
    "mode": _check(_GROUP_MODE),
    "operand_precision": check_precision_list,
    "padding_type": _check(_PADDING_TYPE),
    "schedule": _check(_SCHEDULE),
    "transpose_a": check_enumeration,
}
OPCODE_NAME_CHECKS = {
    ("compare", "direction"): check_comparison_direction,
    ("compare", "type"): _check(_COMPARISON_TYPE),
    ("fusion", "kind"): check_fusion_kind,
    ("rng", "distribution"): _check(_DISTRIBUTION),
    ("rng-bit-generator", "algorithm"): _check(_RANDOM_ALGORITHM),
    **dict.fromkeys([(opcode, "algorithm") for opcode in ("dot", "ragged-dot", "convolution")],
                    _check(_DOT_ALGORITHM)),
}

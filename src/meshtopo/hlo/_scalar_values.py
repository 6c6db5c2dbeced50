"""Attribute values XLA's parser reads as one scalar token, by the attribute's type in its
parser (``AttrTy``): an integer (``kInt64``, ``kInt32``), a float (``kFloat``), ``true`` or
``false`` (``kBool``), a
string (``kString``) or a convolution's dimension labels (``b01f_01io->b01f``, one token of
XLA's lexer); refused in XLA's words at XLA's token.

>>> check_int64("7", 1, 10)
>>> check_bool("yes", 2, 10)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 2:10: expects true or false
"""

from __future__ import annotations

from ._token_cursor import TokenCursor, read_value
from ._tokens import TokKind

K = TokKind

# The attributes XLA reads as each type, whatever their opcode (read off its parser).
INT64_ATTRIBUTES = frozenset({
    "batch_group_count", "channel_id", "delta", "exponent_bits", "feature_group_count",
    "feature_index", "index", "index_vector_dim", "inferred_dimension", "iota_dimension", "k",
    "mantissa_bits", "num_carries",
})  # fmt: skip
INT32_ATTRIBUTES = frozenset({"cross_program_prefetch_index"})
FLOAT_ATTRIBUTES = frozenset({"epsilon"})
BOOL_ATTRIBUTES = frozenset({
    "constrain_layout", "custom_call_has_side_effect", "indices_are_sorted", "is_associative",
    "is_composite", "is_host_transfer", "is_reverse", "is_stable", "largest", "left_side",
    "lower", "unique_indices", "unit_diagonal", "use_global_device_ids",
})  # fmt: skip
_FLOAT_MAX = 3.4028234663852886e38
STRING_ATTRIBUTES = frozenset({
    "async_execution_thread", "custom_call_target", "infeed_config", "outfeed_config",
})  # fmt: skip


def check_int64(value: str, line: int, column: int) -> None:
    """Refuse ``value`` unless it is one integer token (XLA's ``ParseInt64``)."""
    read_value(TokenCursor.integer, value, line, column)


def check_int32(value: str, line: int, column: int) -> None:
    """Refuse ``value`` unless it is one integer token within int32 (XLA's ``kInt32``)."""
    read_value(_int32, value, line, column)


def check_float(value: str, line: int, column: int) -> None:
    """Refuse ``value`` unless it is one number token within float's range (XLA's
    ``ParseDouble`` for a ``kFloat``; a NaN is one)."""
    read_value(_float, value, line, column)


def _int32(c: TokenCursor) -> None:
    at = c.start
    if not -(1 << 31) <= c.integer() < 1 << 31:
        raise c.error("value out of range for int32_t", at)


def _float(c: TokenCursor) -> None:
    if c.kind in (K.kw_inf, K.kNegInf) or (
            c.kind in (K.kDecimal, K.kInt) and "nan" not in c.word
            and abs(float(c.word)) > _FLOAT_MAX):
        raise c.error("value out of range for float")
    if c.kind not in (K.kDecimal, K.kInt):
        raise c.error("expects decimal or integer")
    c.lex()


def check_bool(value: str, line: int, column: int) -> None:
    """Refuse ``value`` unless it is ``true`` or ``false`` (XLA's ``ParseBool``)."""
    read_value(_bool, value, line, column)


def check_string(value: str, line: int, column: int) -> None:
    """Refuse ``value`` unless it is one string token (XLA's ``ParseString``)."""
    read_value(TokenCursor.string, value, line, column)


def check_dim_labels(value: str, line: int, column: int) -> None:
    """Refuse ``value`` unless it is one dimension-labels token (XLA's reading of
    ``dim_labels``: ``ParseConvolutionDimensionNumbers``)."""
    read_value(_dim_labels, value, line, column)


def _dim_labels(c: TokenCursor) -> None:
    """XLA's ``ParseConvolutionDimensionNumbers``: each side's labels unique ('?' aside),
    its spatial dimensions numbered below its count of labels, and as many on each side."""
    if c.kind != K.kDimLabels:
        raise c.error("expects dim labels pattern, e.g., 'bf0_0io->0bf'")
    lhs, _, rest = c.word.partition("_")
    rhs, _, out = rest.partition("->")
    spatial = []
    for side, labels, named in (("lhs", lhs, "bf"), ("rhs", rhs, "io"), ("output", out, "bf")):
        kept = labels.replace("?", "")
        if len(set(kept)) != len(kept):
            raise c.error(f"expects unique {side} dimension numbers, but sees {labels}")
        if any(label not in named and not "0" <= label < chr(ord("0") + len(labels))
               for label in kept):
            raise c.error(f"expects [0-{len(labels) - 1}{named}?] in {side} dimension numbers")
        spatial.append(sum(label not in named for label in kept))
    if len(set(spatial)) != 1:
        raise c.error("input, kernel, and output must have same number of spatial dimensions, "
                      "but got {}, {}, {}, respectively.".format(*spatial))
    c.lex()


def _bool(c: TokenCursor) -> None:
    if c.kind not in (K.kw_true, K.kw_false):
        raise c.error("expects true or false")

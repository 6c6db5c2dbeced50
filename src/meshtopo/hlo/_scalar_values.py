"""Attribute values XLA's parser reads as one scalar token, by the attribute's type in its
parser (``AttrTy``): an integer (``kInt64``), ``true`` or ``false`` (``kBool``), a
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
BOOL_ATTRIBUTES = frozenset({
    "constrain_layout", "custom_call_has_side_effect", "indices_are_sorted", "is_associative",
    "is_composite", "is_host_transfer", "is_reverse", "is_stable", "largest", "unique_indices",
    "use_global_device_ids",
})  # fmt: skip
STRING_ATTRIBUTES = frozenset({
    "async_execution_thread", "custom_call_target", "infeed_config", "outfeed_config",
})  # fmt: skip


def check_int64(value: str, line: int, column: int) -> None:
    """Refuse ``value`` unless it is one integer token (XLA's ``ParseInt64``)."""
    read_value(TokenCursor.integer, value, line, column)


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
    if c.kind != K.kDimLabels:
        raise c.error("expects dim labels pattern, e.g., 'bf0_0io->0bf'")
    c.lex()


def _bool(c: TokenCursor) -> None:
    if c.kind not in (K.kw_true, K.kw_false):
        raise c.error("expects true or false")

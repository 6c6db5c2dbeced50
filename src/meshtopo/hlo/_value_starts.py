"""What XLA's parser of a value wants at its first token, for values whose rest another
reader reads (the groups layer, ``_inline_computations``): a token nothing of that kind
starts with is refused here, in XLA's words, at that token.

- ``replica_groups`` (``ParseCollectiveDeviceList``): '{' (explicit groups, read here by the
  list-of-lists reader), ``mesh`` or else an iota list, whose first token is '['.
- ``backend_config`` (``kStringOrJsonDict``): a string or '{'; XLA says it cannot parse the
  attribute, at its name.

>>> check_replica_groups_start("[2,4]<=[8]", 1, 20)
>>> check_replica_groups_start("x", 4, 20)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 4:20: expected '[' to start sharding devices shape
"""

from __future__ import annotations

from ._token_cursor import TokenCursor, UnparsedAttribute, read_value
from ._tokens import TokKind
from ._values import check_int_lists, flat_value

K = TokKind


def check_replica_groups_start(value: str, line: int, column: int) -> None:
    """Refuse a ``replica_groups`` value no form of it starts like, and explicit groups,
    as XLA's parser does."""

    def first(c: TokenCursor) -> bool:
        if c.kind not in (K.kLbrace, K.kLsquare) and not (c.kind == K.kIdent
                                                           and c.word == "mesh"):
            raise c.error("expected '[' to start sharding devices shape")
        return c.kind == K.kLbrace

    if read_value(first, value, line, column):
        check_int_lists(value, line, column)


def check_backend_config_start(value: str, line: int, column: int) -> None:
    """Refuse a ``backend_config`` that is no string or '{', as XLA does: at the attribute's
    name (``UnparsedAttribute``)."""
    if TokenCursor(flat_value(value), line, column).kind not in (K.kString, K.kLbrace):
        raise UnparsedAttribute("backend_config", line, column)


VALUE_STARTS = {
    "backend_config": check_backend_config_start,
    "replica_groups": check_replica_groups_start,
}

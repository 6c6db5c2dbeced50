"""Values whose reading XLA's parser begins and another reader of meshtopo's finishes,
checked here as far as XLA's parser judges them, in its words at its token.

- ``replica_groups`` (``ParseCollectiveDeviceList``): explicit groups '{...}' (by the
  list-of-lists reader), an iota list or a mesh, read whole (the groups layer reads every
  form into groups, and refuses what it cannot expand).
- ``backend_config`` (``kStringOrJsonDict``): a string or '{'; XLA says it cannot parse the
  attribute, at its name.

>>> check_replica_groups("[2,4]<=[8]", 1, 20)
>>> check_replica_groups("x", 4, 20)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 4:20: expected '[' to start sharding devices shape
"""

from __future__ import annotations

import math

from .._errors import HloParseError
from ._int_lists import check_int_lists
from ._sharding_reader import bracketed_integers, read_axis, read_iota, read_list, read_mesh
from ._syntax import SyntaxFault
from ._token_cursor import GiveUp, TokenCursor, UnparsedAttribute, read_attribute
from ._tokens import TokKind
from ._values import flat_value

K = TokKind


def check_replica_groups(value: str, line: int, column: int) -> None:
    """Refuse a ``replica_groups`` value as XLA's ``ParseCollectiveDeviceList`` refuses it:
    explicit groups (by the list-of-lists reader), an iota list or a mesh
    (``_device_list``)."""

    def read(c: TokenCursor) -> bool:
        if c.kind == K.kLbrace:
            return True
        _device_list(c)
        return False

    if read_attribute("replica_groups", read, value, line, column):
        check_int_lists(value, line, column)


def device_list_end(text: str, start: int) -> int:
    """Where the iota list or mesh of replica groups at ``start`` ends, as XLA's reader of it
    stops (``[2,4]<=[8]`` takes no ``T(...)`` after it); a ``SyntaxFault`` at the offset
    where that reader refuses it. (Where XLA gives the attribute up, its check says so.)"""
    cursor = TokenCursor(text, 1, 0, start)
    try:
        _device_list(cursor)
    except GiveUp:
        pass
    except HloParseError as error:
        raise SyntaxFault(error.message, error.column) from None
    return cursor.previous_end


def _device_list(c: TokenCursor) -> None:
    """A mesh (``_mesh_groups``) or an iota list (``_iota_groups``)."""
    if c.kind == K.kIdent and c.word == "mesh":
        _mesh_groups(c)
    else:
        _iota_groups(c)


def _mesh_groups(c: TokenCursor) -> None:
    """``mesh[axes] [, device_ids=...] {'axis', ...}``: the sharding reader's mesh, then the
    names of the axes each group spans (one device per group, XLA refuses)."""
    axes, sizes, _ = read_mesh(c)
    spanned: list[tuple[int, int | None]] = []
    read_list(c, K.kLbrace, K.kRbrace, lambda: spanned.append(read_axis(c, axes)))
    if math.prod(sizes[axis] if size is None else size for axis, size in spanned) == 1:
        raise c.error("MeshAxesReplicaGroupList must have more than one device per group, "
                      "but got 1")


def _iota_groups(c: TokenCursor) -> None:
    """``[a,b]<=[dims]T(perm)``: the tile's dimensions, then the iota a sharding's is; two
    tile dimensions, or XLA gives the attribute up (``GiveUp``)."""
    tile = bracketed_integers(c, "devices shape")
    if c.kind != K.kLeq:
        raise c.error("Caller expected iota tile assignment when parsing, which should not "
                      "have any manual device entries.")
    c.lex()
    read_iota(c)
    if len(tile) != 2:
        raise GiveUp


def check_backend_config_start(value: str, line: int, column: int) -> None:
    """Refuse a ``backend_config`` that is no string or '{', as XLA does: at the attribute's
    name (``UnparsedAttribute``)."""
    if TokenCursor(flat_value(value), line, column).kind not in (K.kString, K.kLbrace):
        raise UnparsedAttribute("backend_config", line, column)


VALUE_STARTS = {
    "backend_config": check_backend_config_start,
    "replica_groups": check_replica_groups,
}

"""An instruction's ``sharding={...}`` read token by token as XLA's parser reads it
(``ParseSharding``, ``ParseSingleSharding``, ``ParseTileAssignment``, ``ParseMesh``), refused
in XLA's words at XLA's token: the one reader of a sharding's text.

Grammar (XLA's)::

    sharding := '{' single '}' | '{' [ '{' single '}' ( ',' '{' single '}' )* ] '}'
    single   := ( 'maximal' | 'replicated' | 'manual' | 'unknown' | 'unreduced'
                | 'device=' INT | 'devices=' tiles | 'metadata=' metadata
                | 'last_tile_dims=' '{' [ type ( ',' type )* ] '}'
                | 'last_tile_dim_replicate' | ( 'shard_as' | 'shard_like' ) INT )*
              | named
    tiles    := '[' INT ( ',' INT )* ']' ( '<=' iota | INT ( ',' INT )* )
    iota     := '[' INT ']' | '[' INT ( ',' INT )+ ']' 'T' '(' INT ( ',' INT )* ')'
    named    := 'maximal_mesh' '[' 'device_id=' INT ']' [ ',' 'metadata=' metadata ]
              | 'mesh' '[' [ STRING '=' INT ( ',' STRING '=' INT )* ] ']'
                [ ',' 'device_ids=' '(' ( iota | [ INT ( ',' INT )* ] ) ')' ] [ ',' ]
                ( ( 'replicated' | 'unreduced' | 'manual' ) [ ',' 'metadata=' metadata ]
                | '[' dims ']' ( ',' ( 'replicated=' | 'unreduced=' | 'manual=' ) axes
                               | ',' 'metadata=' metadata )* )

then the checks XLA makes of what was read (a replicated sharding names no device, a maximal
one exactly one, a tiled one its tile dimensions and more than one device or an iota). Where
XLA's parser stops the process instead (a CHECK: an axis that is not the mesh's, a
``device_ids`` count that is not the mesh's size, both ``last_tile_dims`` and
``last_tile_dim_replicate``, an iota with listed devices), the text is refused with the
CHECK's words; the axes of a sharding over a named mesh are not checked against each other
(XLA's ``VerifyNamedSharding``, another CHECK). Whether the sharding fits the instruction's
shape is XLA's verifier's, not its parser's.

>>> read_sharding("{devices=[2,1,2]<=[4] last_tile_dim_replicate metadata={op_name=\\"a\\"}}")
Sharding(kind='tiled', tile_dimensions=(2, 1, 2), devices=(), iota_reshape=(4,), \
iota_permutation=(0,), sharding_types=('replicated',))
>>> check_sharding("{replicated device=1}", 3, 10)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:11: replicated shardings should not have any devices assigned
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .._errors import HloParseError
from ._metadata import read_metadata
from ._token_cursor import GiveUp, TokenCursor, UnparsedAttribute
from ._tokens import TokKind
from ._values import flat_value, relocate

K = TokKind
_KIND_WORDS = frozenset({K.kw_maximal, K.kw_replicated, K.kw_manual, K.kw_unknown,
                         K.kw_unreduced})  # a sharding's kind, the word itself
_SHARDING_TYPES = frozenset({K.kw_maximal, K.kw_replicated, K.kw_manual, K.kw_unreduced})
_NAMED_EMPTY = frozenset({K.kw_replicated, K.kw_unreduced, K.kw_manual})
_AXIS_LISTS = frozenset({"replicated", "unreduced", "manual"})
_ATOI = re.compile(r"\s*[+-]?[0-9]+\s*")  # absl::SimpleAtoi's integers
_INT64 = 2**63


@dataclass(frozen=True)
class Sharding:
    """One sharding as written: its ``kind`` (``replicated``, ``maximal``, ``manual``,
    ``unknown``, ``unreduced``, ``tiled``, or ``named`` for one over a named mesh, whose
    fields are not kept), its tile assignment's dimensions and either its listed
    ``devices`` (a maximal one's device) or its iota's reshape and permutation, and the
    sharding types of its last tile dimensions (``replicated`` for
    ``last_tile_dim_replicate``)."""

    kind: str
    tile_dimensions: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    iota_reshape: tuple[int, ...] = ()
    iota_permutation: tuple[int, ...] = ()
    sharding_types: tuple[str, ...] = ()


def read_sharding(value: str, line: int = 1, column: int = 1
                  ) -> Sharding | tuple[Sharding, ...]:
    """The sharding ``value`` (a ``sharding`` attribute's text written at ``line:column``)
    holds, or a tuple sharding's elements; an ``HloParseError`` where XLA's parser refuses
    it."""
    return _read(value, line, column)[0]


def check_sharding(value: str, line: int, column: int) -> HloParseError | None:
    """Refuse ``value`` (a ``sharding`` written at ``line``/``column``) as XLA's parser
    refuses it, with an ``HloParseError`` at the token XLA points at; when XLA takes it, the
    error its parser recorded while reading on (reported if the text is refused later), or
    None."""
    return _read(value, line, column)[1]


def _read(value: str, line: int, column: int
          ) -> tuple[Sharding | tuple[Sharding, ...], HloParseError | None]:
    cursor = TokenCursor(flat_value(value), line, column)
    try:
        found = sharding_value(cursor)
    except GiveUp:  # XLA says so at the attribute's name
        if cursor.recorded is None:
            raise UnparsedAttribute("sharding", line, column) from None
        raise relocate(cursor.recorded, value, line, column) from None
    except HloParseError as error:
        raise relocate(error, value, line, column) from None
    recorded = cursor.recorded
    return found, None if recorded is None else relocate(recorded, value, line, column)


def sharding_value(c: TokenCursor) -> Sharding | tuple[Sharding, ...]:
    """XLA's ``ParseSharding`` at the cursor's ``{``: one sharding, or a tuple's; ``GiveUp``
    where XLA gives the attribute up without words of its own."""
    c.expect(K.kLbrace, "expected '{' to start sharding attribute")
    if c.kind not in (K.kLbrace, K.kRbrace):
        return _single(c)
    found: list[Sharding] = []
    if c.kind != K.kRbrace:  # a tuple's shardings
        while True:
            c.expect(K.kLbrace, "expected '{' to start sharding attribute")
            found.append(_single(c))
            if not c.eat(K.kComma):
                break
    c.expect(K.kRbrace, "expected '}' to end sharding attribute")
    return tuple(found)


@dataclass
class _Read:
    """What one sharding names so far (XLA's vectors, appended to as read)."""

    kinds: set[str] = field(default_factory=set)
    devices: list[int] = field(default_factory=list)
    tile_dimensions: list[int] = field(default_factory=list)
    iota_reshape: list[int] = field(default_factory=list)
    iota_permutation: list[int] = field(default_factory=list)
    sharding_types: list[str] = field(default_factory=list)
    last_tile_dim_replicate: bool = False


def _single(c: TokenCursor) -> Sharding:
    """One sharding, after its '{', through its '}'."""
    if c.kind == K.kIdent and c.word in ("mesh", "maximal_mesh"):
        _named(c)
        return Sharding("named")
    at = c.start
    read = _Read()
    while c.kind != K.kRbrace:
        kind = c.kind
        if kind in _KIND_WORDS:
            read.kinds.add(c.word)
        elif kind == K.kw_last_tile_dim_replicate:
            read.last_tile_dim_replicate = True
        elif kind in (K.kw_shard_as, K.kw_shard_like):
            c.lex()
            c.integer()
            continue
        elif kind == K.kAttributeName:
            _attribute(c, read)
            continue
        else:
            raise c.error("unexpected token")
        c.lex()
    found = _judged(c, read, at)
    c.lex()
    return found


def _attribute(c: TokenCursor, read: _Read) -> None:
    name = c.word[:-1]
    if name == "device":
        c.lex()
        if c.kind != K.kInt:
            raise c.error("device= attribute must be an integer")
        read.devices = [c.integer()]
    elif name == "devices":
        c.lex()
        _tile_assignment(c, read)
    elif name == "metadata":
        c.lex()
        _metadata(c)
    elif name == "last_tile_dims":
        c.lex()
        c.expect(K.kLbrace, "expected '{' to start sharding type list")
        if c.kind != K.kRbrace:
            while True:
                if c.kind not in _SHARDING_TYPES:
                    raise GiveUp
                read.sharding_types.append(c.word)
                c.lex()
                if not c.eat(K.kComma):
                    break
        c.expect(K.kRbrace, "expected '}' to end sharding type list")
    else:
        raise c.error("unknown attribute in sharding: expected device=, devices= metadata= "
                      "or last_tile_dims= ")


def _judged(c: TokenCursor, read: _Read, at: int) -> Sharding:
    """The sharding read, after XLA's checks of it (at its first token, ``at``)."""
    for kind in ("replicated", "maximal", "manual", "unknown", "unreduced"):
        if kind in read.kinds:
            if kind == "maximal" and len(read.devices) != 1:
                raise c.error("maximal shardings should have exactly one device assigned", at)
            if kind != "maximal" and read.devices:
                raise c.error(f"{kind} shardings should not have any devices assigned", at)
            return Sharding(kind, devices=tuple(read.devices))
    if not read.tile_dimensions:
        raise c.error("non-maximal shardings must have a tile assignment list including "
                      "dimensions", at)
    if len(read.iota_permutation) != len(read.iota_reshape):
        raise c.error("iota_transpose_perm should have the same rank as iota_reshape_dims : "
                      f"expected {len(read.iota_reshape)}, saw {len(read.iota_permutation)}.",
                      at)
    if read.last_tile_dim_replicate:
        if read.sharding_types:  # a CHECK in XLA
            raise c.error("last_tile_dim_replicate and last_tile_dims cannot both be given",
                          at)
        read.sharding_types.append("replicated")
    if read.iota_reshape:
        if read.devices:  # a CHECK in XLA
            raise c.error("an iota tile assignment cannot also list devices", at)
    elif len(read.devices) <= 1:
        raise c.error("non-maximal shardings must have more than one device assigned", at)
    return Sharding("tiled", tuple(read.tile_dimensions), tuple(read.devices),
                    tuple(read.iota_reshape), tuple(read.iota_permutation),
                    tuple(read.sharding_types))


def bracketed_integers(c: TokenCursor, what: str) -> list[int]:
    """XLA's ``'[' INT ( ',' INT )* ']'`` of a sharding's (or device list's) ``what``."""
    c.expect(K.kLsquare, f"expected '[' to start sharding {what}")
    found: list[int] = []
    while True:
        found.append(c.integer())
        if not c.eat(K.kComma):
            break
    c.expect(K.kRsquare, f"expected ']' to end sharding {what}")
    return found


def _tile_assignment(c: TokenCursor, read: _Read) -> None:
    read.tile_dimensions += bracketed_integers(c, "devices shape")
    if c.eat(K.kLeq):
        reshape, permutation = read_iota(c)
        read.iota_reshape += reshape
        read.iota_permutation += permutation
        return
    while True:
        read.devices.append(c.integer())
        if not c.eat(K.kComma):
            break


def read_iota(c: TokenCursor) -> tuple[list[int], list[int]]:
    """XLA's ``ParseIotaTileAssignmentArray``: the reshape dimensions and permutation of
    ``[d, ...]T(p, ...)``."""
    reshape = bracketed_integers(c, "iota_reshape_dims")
    dimensions = len(reshape)
    if dimensions == 1:
        return reshape, [0]
    message = "expected 'T(' to start sharding devices iota_transpose_perm"
    if c.kind != K.kIdent or c.word != "T":
        raise c.error(message)
    c.lex()
    c.expect(K.kLparen, message)
    permutation: list[int] = []
    while True:
        value = c.integer()
        if not 0 <= value < dimensions:  # compared unsigned: a negative one is out of range
            raise c.error(f"Out of range iota minor_to_major value {value}, expecting value "
                          f"in range [0, {dimensions})")
        permutation.append(value)
        if not c.eat(K.kComma):
            break
    c.expect(K.kRparen, "expected ')' to end sharding devices iota_transpose_perm")
    return reshape, permutation


def _metadata(c: TokenCursor) -> None:
    """XLA's ``ParseSingleOrListMetadata``: one ``{...}`` or a braced list of them."""
    if c.kind == K.kLbrace and c.look_ahead() == K.kLbrace:
        c.lex()
        if c.kind != K.kRbrace:
            while True:
                read_metadata(c)
                if not c.eat(K.kComma):
                    break
        c.expect(K.kRbrace, "expected '}' to end metadata list")
        return
    read_metadata(c)


def _named(c: TokenCursor) -> None:
    """A sharding over a named mesh (``ParseSingleSharding`` of a ``NamedSharding``)."""
    axes, _, maximal = read_mesh(c)

    def metadata_if_present() -> None:
        if c.eat(K.kComma):
            if c.attribute_name() != "metadata":
                raise GiveUp
            _metadata(c)

    if maximal:
        metadata_if_present()
        c.expect(K.kRbrace, "expected '}' to end sharding attribute")
        return
    c.eat(K.kComma)
    if c.kind in _NAMED_EMPTY:
        c.lex()
        metadata_if_present()
        c.expect(K.kRbrace, "expected '}' to end sharding attribute")
        return
    read_list(c, K.kLsquare, K.kRsquare, lambda: _dimension_sharding(c, axes))
    while c.kind != K.kRbrace:
        c.expect(K.kComma, "expected ',' before next attribute")
        name = c.attribute_name()
        if name in _AXIS_LISTS:
            read_list(c, K.kLbrace, K.kRbrace, lambda: read_axis(c, axes))
        elif name == "metadata":
            _metadata(c)
        else:
            raise c.error("unknown attribute in named sharding: expected replicated, "
                          "unreduced, manual or metadata")
    c.expect(K.kRbrace, "expected '}' to end sharding attribute")


def read_mesh(c: TokenCursor) -> tuple[list[str], list[int], bool]:
    """XLA's ``ParseMesh``: the mesh's axis names and sizes, and whether it is a maximal
    mesh."""
    kind = c.word
    c.lex()
    if kind == "maximal_mesh":
        c.expect(K.kLsquare, "expected '[' after maximal_mesh")
        if c.attribute_name() != "device_id":
            raise c.error("expected device_id= attribute in maximal_mesh")
        c.integer()
        c.expect(K.kRsquare, "expected ']' to end maximal_mesh")
        return [], [], True
    c.expect(K.kLsquare, "expected '[' after mesh")
    axes: list[str] = []
    sizes: list[int] = []
    if c.kind != K.kRsquare:
        while True:
            axes.append(c.string())
            c.expect(K.kEqual, "expects '=' after axis name")
            sizes.append(c.integer())
            if not c.eat(K.kComma):
                break
    c.expect(K.kRsquare, "expected ']' to end mesh axes")
    if not axes or not c.eat(K.kComma):
        return axes, sizes, False
    if c.kind != K.kAttributeName:  # XLA records this and reads the mesh as an iota
        c.record("expects attribute name")
        return axes, sizes, False
    if c.attribute_name() != "device_ids":
        return axes, sizes, False
    c.expect(K.kLparen, "expected '(' for device_ids")
    if c.kind == K.kLsquare:
        read_iota(c)
        c.expect(K.kRparen, "expected ')' to end device_ids")
        return axes, sizes, False
    count = 0
    if c.kind != K.kRparen:
        while True:
            c.integer()
            count += 1
            if not c.eat(K.kComma):
                break
    c.expect(K.kRparen, "expected ')' to end device_ids")
    if count != math.prod(sizes):  # a CHECK in XLA
        raise c.error(f"Expected {math.prod(sizes)} device_ids based on mesh axes, but got "
                      f"{count}")
    return axes, sizes, False


def read_list(c: TokenCursor, start: int, end: int, item: Callable[[], object]) -> None:
    """XLA's ``ParseList``: ``start`` [ item ( ',' item )* ] ``end``."""
    c.expect(start, f"expects a list starting with {K(start).name}")
    if c.kind != end:
        while True:
            item()
            if not c.eat(K.kComma):
                break
    c.expect(end, f"expects a list to end with {K(end).name}")


def _dimension_sharding(c: TokenCursor, axes: list[str]) -> None:
    open_seen = False

    def item() -> None:
        nonlocal open_seen
        if open_seen:
            raise c.error("Saw axis ref after '?'")
        if c.eat(K.kQuestionMark):
            open_seen = True
            return
        read_axis(c, axes)

    read_list(c, K.kLbrace, K.kRbrace, item)


def read_axis(c: TokenCursor, axes: list[str]) -> tuple[int, int | None]:
    """XLA's ``ParseAxisRef``: an axis by name or index, with an optional ``:(pre)size``;
    the axis's index, and the sub-axis's size if one is written."""
    name = c.string()
    if name in axes:
        number = axes.index(name)
    else:
        found = int(name) if _ATOI.fullmatch(name) else None
        if found is None or not -_INT64 <= found < _INT64:  # a CHECK in XLA
            raise c.error(f"axis '{name}' is not a valid axis name or index in the mesh")
        if not 0 <= found < len(axes):  # a CHECK in XLA
            raise c.error(f"axis index {found} is out of bounds for a mesh of {len(axes)} "
                          "axes")
        number = found
    if not c.eat(K.kColon):
        return number, None
    c.expect(K.kLparen, "expected '(' before pre_size in sub axis")
    c.integer()
    c.expect(K.kRparen, "expected ')' after pre_size in sub axis")
    return number, c.integer()

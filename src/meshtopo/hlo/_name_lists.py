"""The names an attribute's value lists, read token by token as XLA's parser reads them: the
one reader of each kind, refusing in XLA's words at XLA's token.

- a computation (``to_apply``, ``calls``, ... ``ParseHloComputation``): one name, or a
  computation written inline (``{...}``, which the reader reads and names first);
- a list of computations (``branch_computations``, ``called_computations``,
  ``ParseHloComputationList``): '{', names joined by ',' (maybe none), '}';
- control predecessors (``ParseInstructionNames``): '{', one or more names joined by ',', '}'.

>>> names_in("branch_computations", "{%a, b}", 1, 1)
['a', 'b']
>>> named_in("control-predecessors", "{a, %b}")
[('a', 2), ('b', 6)]
>>> names_in("control-predecessors", "{a b}", 3, 30)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:33: expects '}' at the end of instruction name list
"""

from __future__ import annotations

from collections.abc import Callable, Container

from ._token_cursor import TokenCursor, read_value
from ._tokens import TokKind
from ._values import flat_value

K = TokKind
# XLA's kHloComputation attributes and its kBracedHloComputationList ones.
COMPUTATION_ATTRIBUTES = frozenset({
    "calls", "to_apply", "body", "condition", "true_computation", "false_computation",
    "select", "scatter", "comparator",
})  # fmt: skip
COMPUTATION_LIST_ATTRIBUTES = frozenset({"branch_computations", "called_computations"})
# Every attribute whose value lists names.
NAME_LIST_ATTRIBUTES = (COMPUTATION_ATTRIBUTES | COMPUTATION_LIST_ATTRIBUTES
                        | {"control-predecessors"})


class _Named(list[tuple[str, int]]):
    """Each name read, with the offset of the token after it (where XLA reports an
    instruction the name does not define); ``known``, the computations or instructions
    that exist (None: not looked up)."""

    def __init__(self, known: Container[str] | None = None) -> None:
        super().__init__()
        self.known = known


def _computation(c: TokenCursor, named: _Named) -> None:
    """``ParseHloComputation``: a name, or a computation written inline. The reader reads
    and names one that starts as an instruction list does; here, the start of one that does
    not is refused as XLA's ``ParseInstruction`` refuses it (``[ROOT] name '='``), and the
    rest is stepped over. A name is looked up as it is read, as XLA does, when the
    computations that exist are given."""
    if c.kind != K.kLbrace:
        at = c.start
        name = c.name()
        if named.known is not None and name not in named.known:
            raise c.error(f"computation does not exist: {name}", at)
        named.append((name, c.start))
        return
    c.lex()
    c.eat(K.kw_ROOT)
    c.name()
    c.expect(K.kEqual, "expects '=' in instruction")
    _skip_group(c, depth=1)


def _computation_list(c: TokenCursor, named: _Named) -> None:
    c.expect(K.kLbrace, "expects a list starting with kLbrace")
    if c.kind != K.kRbrace:
        _computation(c, named)
        while c.eat(K.kComma):
            _computation(c, named)
    c.expect(K.kRbrace, "expects a list to end with kRbrace")


def _instruction_list(c: TokenCursor, named: _Named) -> None:
    """``ParseInstructionNames``: '{', names joined by ',', '}'; each name looked up as it
    is read, when the instructions defined are given."""
    c.expect(K.kLbrace, "expects '{' at the beginning of instruction name list")
    while True:
        name = c.name()
        if named.known is not None and name not in named.known:
            raise c.error(f"instruction '{name}' is not defined")
        named.append((name, c.start))
        if not c.eat(K.kComma):
            break
    c.expect(K.kRbrace, "expects '}' at the end of instruction name list")


def _skip_group(c: TokenCursor, depth: int) -> None:
    """Step over the rest of a bracketed group ``depth`` brackets deep."""
    while True:
        if c.kind in (K.kLbrace, K.kLparen, K.kLsquare):
            depth += 1
        elif c.kind in (K.kRbrace, K.kRparen, K.kRsquare):
            depth -= 1
        elif c.kind == K.kEof:
            raise c.error("expects '}' at the end of instruction list.")
        c.lex()
        if depth == 0:
            return


_READERS: dict[str, Callable[[TokenCursor, _Named], None]] = {
    **dict.fromkeys(COMPUTATION_ATTRIBUTES, _computation),
    **dict.fromkeys(COMPUTATION_LIST_ATTRIBUTES, _computation_list),
    "control-predecessors": _instruction_list,
}


def names_in(key: str, value: str | None, line: int, column: int,
             known: Container[str] | None = None) -> list[str]:
    """The names attribute ``key``'s ``value`` (written at ``line:column``; None when not
    written: none) lists; an ``HloParseError`` where XLA's parser refuses it (an empty value
    is refused as XLA refuses the end of the text), or (given the computations, or for
    control predecessors the instructions, that exist, ``known``) names one that does not
    exist."""
    if value is None:
        return []
    read = _READERS[key]

    def names(c: TokenCursor) -> list[str]:
        named = _Named(known)
        read(c, named)
        return [name for name, _ in named]

    return read_value(names, value, line, column)


def named_in(key: str, value: str) -> list[tuple[str, int]]:
    """Each name attribute ``key``'s ``value`` lists (one XLA's parser takes) and the offset
    in ``value`` of the token after it."""
    named = _Named()
    _READERS[key](TokenCursor(flat_value(value), 1, 0), named)
    return named

"""A shape's text checked token by token as XLA's parser reads it (``ParseShape``), so that
a shape XLA refuses is refused when it is read, in XLA's words at XLA's token.

``read_shape(text, start, stop)`` reads the shape at ``start`` (white space and comments
allowed between any two tokens) and says where it ends and XLA's message and the offset in
``text`` it points at, if it refuses it; ``shape_error`` checks a shape text the fast path
cut out, matching shapes in XLA's printed form with one pattern first. A layout's
minor-to-major list must name as many dimensions as the array has (checked at the token after
the layout, as XLA does); what follows a layout's ``:`` is checked for its form (letters,
each with bracketed arguments), its ``D(...)`` dimension level types, and no physical shape
``P(...)`` (which XLA takes on sparse arrays alone; the fast pattern leaves both to the
reader). Tuples nest at most as deep as any value (``MAX_DEPTH``). A
buffer shape ``b(f32[16])`` holds one array shape.

``parse_shape`` reads a whole text as one shape value, with the same rules:

>>> s = parse_shape("(f32[8,128]{1,0:T(8,128)}, s32[<=4], token[])")
>>> [leaf.element_type for leaf in s.leaves()], s.tuple_shapes[1].dynamic
(['f32', 's32', 'token'], (True,))
>>> s.is_dynamic, s.byte_size
(True, 4112)
"""

from __future__ import annotations

import functools
import re

from .._errors import HloParseError
from ._layout_items import UNSIGNED_TYPES, LayoutItems, layout_items, layout_problem
from ._shape import ELEMENT_BITS, Shape
from ._syntax import MAX_DEPTH, skip
from ._token_cursor import TokenCursor
from ._tokens import TokKind
from ._values import flat_value, relocate

K = TokKind

# A shape as XLA prints it, which the reader takes as it is (``shape_error``): a layout's
# items after ':' in XLA's order (``_layout_items``) without white space, integers of at most
# 18 digits, and no ``D(...)`` or ``P(...)``, which the reader checks; anything else is read
# token by token.
_INT = r"-?[0-9]{1,18}"
_UNSIGNED = "(?:" + "|".join(sorted(UNSIGNED_TYPES, key=len, reverse=True)) + ")"
_ITEMS = (rf"(?:T(?:\((?:(?:{_INT}|\*)(?:,(?:{_INT}|\*))*)?\))+)?(?:L\({_INT}\))?"
          rf"(?:#\({_UNSIGNED}\))?(?:\*\({_UNSIGNED}\))?(?:E\({_INT}\))?(?:S\({_INT}\))?"
          rf"(?:SC(?:\({_INT}:(?:{_INT}(?:,{_INT})*)?\))+)?(?:M\({_INT}\))?")
_PRINTED = re.compile(r"([a-z][a-z0-9]*)\[((?:<=)?[0-9]{1,18}(?:,(?:<=)?[0-9]{1,18})*)?\]"
                      r"(?:\{([0-9]{1,9}(?:,[0-9]{1,9})*)?(?::" + _ITEMS + r")?\})?")
# An array shape as XLA prints it that XLA takes, as one pattern: an element type, and a
# layout (if any) naming as many dimensions as the array has (ranks 1 to 8, each dimension
# read once: after it, the list ends or goes on; anything else is left to ``shape_error``).


def _prefix_tree(words: list[str]) -> str:
    """A pattern that matches each of ``words`` (non-empty), branching letter by letter:
    Python's ``re`` tries an alternation's branches in turn, and a branch per first letter
    makes that a few tries, not one per word."""
    heads: dict[str, list[str]] = {}
    for word in words:
        heads.setdefault(word[0], []).append(word[1:])
    branches = []
    for head, tails in heads.items():
        longer = [tail for tail in tails if tail]
        branch = re.escape(head)
        if longer:
            inner = _prefix_tree(longer)
            branch += f"(?:{inner})?" if len(longer) < len(tails) else inner
        branches.append(branch)
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


_ELEMENT = _prefix_tree([t for t in ELEMENT_BITS if t != "token"])
_DIM = r"(?:<=)?[0-9]{1,18}"


def _after_dimensions(rank: int) -> str:
    """What may follow the ``rank``-th dimension of a printed array: ``]`` and a layout of
    ``rank`` dimensions, or (below rank 8) one more dimension."""
    close = (rf"\](?:\{{[0-9]{{1,9}}(?:,[0-9]{{1,9}}){{{rank - 1}}}(?::{_ITEMS})?\}})?")
    return close if rank == 8 else rf"(?:{close}|,{_DIM}{_after_dimensions(rank + 1)})"


PRINTED_ARRAY = _ELEMENT + r"\[(?:\]|" + _DIM + _after_dimensions(1) + ")"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def shape_error(text: str, start: int, stop: int) -> tuple[str, int] | None:
    """XLA's refusal of the shape ``text[start:stop]`` (an instruction's) and where it
    points, or the first error XLA records reading it, or None."""
    if _taken_as_printed(_PRINTED.fullmatch(text, start, stop)):
        return None
    recorded: list[tuple[str, int]] = []
    end, refused = read_shape(text, start, stop, recorded=recorded)
    if refused is None and (end := skip(text, end)) < stop:
        return "expects opcode", end  # a '{' that is no layout
    return refused or next(iter(recorded), None)


@functools.lru_cache(maxsize=4096)
def _printed_array(written: str) -> Shape:
    """The array shape ``written`` as XLA prints it, a whole match of ``_PRINTED`` that XLA
    takes (``_taken_as_printed``; remembered: a dump repeats a few)."""
    printed = _PRINTED.fullmatch(written)
    assert printed is not None
    dims = printed.group(2).split(",") if printed.group(2) else []
    brace = written.find("{")
    return Shape(printed.group(1), tuple(int(d.removeprefix("<=")) for d in dims),
                 tuple(d.startswith("<=") for d in dims),
                 written[brace + 1:-1] if brace >= 0 else None)


def _printed_at(text: str, pos: int, stop: int) -> re.Match[str] | None:
    """The array shape as XLA prints it at ``pos`` (before ``stop``) that XLA takes, ended
    there (by ``stop``, ',' or ')'), or None."""
    printed = _PRINTED.match(text, pos, stop)
    if printed is not None and _taken_as_printed(printed) and (
            printed.end() == stop or text[printed.end()] in ",)"):
        return printed
    return None


@functools.lru_cache(maxsize=4096)
def _checked_in_a_tuple(written: str) -> bool:
    """Whether the layout of array ``written`` as XLA prints it (a whole match of
    ``_PRINTED``) in a tuple is for the token reader to check (``layout_problem``): one with
    items after ':', or whose minor-to-major list is no permutation of the dimensions
    (remembered: a dump repeats a few)."""
    printed = _PRINTED.fullmatch(written)
    assert printed is not None
    minor_to_major = printed.group(3)
    if minor_to_major is None:
        return False
    return ":" in written[written.find("{"):] or sorted(
        int(d) for d in minor_to_major.split(",")) != list(range(minor_to_major.count(",") + 1))


def _taken_as_printed(printed: re.Match[str] | None) -> bool:
    """Whether a match of ``_PRINTED`` is a shape XLA takes: an element type's array whose
    layout names as many dimensions as it has (a scalar's braces are no layout to XLA)."""
    if printed is None or printed.group(1) not in ELEMENT_BITS or printed.group(1) == "token":
        return False
    dims, layout = printed.group(2), printed.group(3)
    return printed.group(0).find("{") < 0 or bool(dims and _count(dims) == _count(layout))


def read_shape(text: str, start: int, stop: int, signature: bool = False,
               recorded: list[tuple[str, int]] | None = None
               ) -> tuple[int, tuple[str, int] | None]:
    """Where the shape at ``start`` ends (at most ``stop``) and XLA's refusal of it, if any
    (in a computation's ``signature`` a shape is required: no other token may stand for
    it). The first error XLA's parser records in a shape it takes and reads on past (in a
    layout's items) is appended to ``recorded`` when given; a shape refused after one is
    refused with it, as XLA reports the first error it records."""
    if (printed := _printed_at(text, start, stop)) is not None:
        return printed.end(), None  # an array as XLA prints it: no shape to make
    c = TokenCursor(text, 1, 0, start)  # (an error's column is its offset in ``text``)
    try:
        shape_at(c, nested=signature)
    except HloParseError as refused:
        return start, (refused.message, refused.column)
    if c.previous_end > stop:
        return start, ("expects a shape", stop)
    if c.recorded is not None and recorded is not None:
        recorded.append((c.recorded.message, c.recorded.column))
    return c.previous_end, None


def check_shape(value: str, line: int, column: int) -> HloParseError | None:
    """Refuse an attribute's shape ``value`` (``outfeed_shape``, written at
    ``line:column``) as XLA's ``ParseShape`` refuses it; the first error XLA records in it
    (reported if the text is refused later), or None."""
    flat = flat_value(value)
    recorded: list[tuple[str, int]] = []
    _, refused = read_shape(flat, 0, len(flat), signature=True, recorded=recorded)
    found = refused or next(iter(recorded), None)
    if found is None:
        return None
    error = relocate(HloParseError(found[0], line, column + found[1]), value, line, column)
    if refused is not None:
        raise error
    return error


def parse_shape(text: str, line: int = 1, column: int = 1) -> Shape:
    """The shape ``text`` holds (white space and comments allowed between its tokens), read
    and refused as XLA's ``ParseShape`` reads it; a refusal is an ``HloParseError`` at the
    offending token, counted from ``line`` and ``column`` where ``text`` starts. Each distinct
    text is read once."""
    try:
        return _shape_of(text)
    except HloParseError as refused:
        offset = refused.column
        lines_before = text.count("\n", 0, offset)
        at_column = (column + offset if not lines_before
                     else offset - text.rfind("\n", 0, offset))
        raise HloParseError(refused.message, line + lines_before, at_column) from None


@functools.lru_cache(maxsize=4096)
def _shape_of(text: str) -> Shape:
    """The shape of the whole of ``text``; an ``HloParseError`` whose column is the offset
    in ``text`` (not cached) where XLA refuses it."""
    c = TokenCursor(text, 1, 0)
    shape = shape_at(c, nested=True)
    if c.kind != K.kEof:
        raise c.error("Extra content after shape")
    return shape


def _count(items: str | None) -> int:
    return 0 if not items else items.count(",") + 1


def shape_at(c: TokenCursor, nested: bool, depth: int = 0,
             problems: list[tuple[str, int]] | None = None) -> Shape:
    """XLA's ``ParseShape`` at the cursor (``depth`` tuples or buffers deep): the shape, the
    cursor moved to the token after it; refused as XLA refuses it. Outside a tuple, where
    an instruction's shape may be left out (not ``nested``), a token that starts no shape is
    the opcode XLA then expects. In a tuple, what XLA's check of a tuple shape finds wrong
    with a layout (``layout_problem``) is added to ``problems``: the tuple is refused with
    the first once its elements are read, before its ')' (XLA refuses it without words, so
    the words are ours)."""
    text = c.text
    if c.kind == K.kIdent and c.word == "b" and c.look_ahead() == K.kLparen:  # a buffer
        if depth >= MAX_DEPTH:
            raise c.error(f"values nested more than {MAX_DEPTH} deep")
        c.lex()
        c.lex()
        inner = c.start
        array = shape_at(c, nested=True, depth=depth + 1, problems=problems)
        if array.tuple_shapes is not None or array.is_buffer or array.element_type == "token":
            raise c.error("element_shape must be an array shape to create a buffer shape.",
                          inner)
        c.expect(K.kRparen, "expects ')' at the end of buffer shape.")
        return Shape(array.element_type, array.dimensions, array.dynamic, array.layout,
                     is_buffer=True)
    if c.kind == K.kLparen:  # a tuple
        if depth >= MAX_DEPTH:
            raise c.error(f"values nested more than {MAX_DEPTH} deep")
        c.lex()
        parts: list[Shape] = []
        found: list[tuple[str, int]] = []
        if c.kind != K.kRparen:
            parts.append(shape_at(c, nested=True, depth=depth + 1, problems=found))
            while c.eat(K.kComma):
                parts.append(shape_at(c, nested=True, depth=depth + 1, problems=found))
        if found:
            raise c.error(*found[0])
        c.expect(K.kRparen, "expects ')' at the end of tuple.")
        return Shape("tuple", tuple_shapes=tuple(parts))
    if (printed := _printed_at(text, c.start, len(text))) is not None and not (
            problems is not None and _checked_in_a_tuple(printed.group())):
        c.jump(printed.end())  # a tuple's elements, mostly
        return _printed_array(printed.group())
    if c.kind != K.kPrimitiveType:
        if nested:
            raise c.error(f"expected primitive type, saw {TokKind(c.kind).name}")
        word = _WORD.match(text, c.start)
        seen = word.group() if word else text[c.start:c.start + 1]
        raise c.error(f"expects opcode but sees: {seen}, error: Unknown opcode: {seen}")
    element = c.word
    c.lex()
    sizes, dynamic = _dimensions(c)
    if not (c.kind == K.kLbrace and c.look_ahead() in (K.kInt, K.kColon)):
        return Shape(element, sizes, dynamic)  # a '{' that follows is not the shape's
    opened = c.start
    minor_to_major, items = _layout(c)
    if len(minor_to_major) != len(sizes):
        raise c.error(f"Dimensions size is {len(sizes)}, but minor to major size is "
                      f"{len(minor_to_major)}.")
    written = text[opened + 1:c.previous_end - 1]
    if items.physical:
        raise c.error("Layout has physical shape, but is not for a sparse array: "
                      f"{{{_printed_layout(written)}}}")
    if problems is not None and (problem := layout_problem(minor_to_major, items,
                                                           sizes)) is not None:
        problems.append((problem, opened))
    return Shape(element, sizes, dynamic, written)


def _dimensions(c: TokenCursor) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """XLA's ``ParseDimensionSizes`` at the cursor (a list in ``[]``): the sizes (a bound
    for ``<=N``, -1 for ``?``) and which are dynamic, the cursor moved past the ``]``."""
    sizes: list[int] = []
    dynamic: list[bool] = []
    written: list[tuple[int, int]] = []  # each integer size and its offset
    c.expect(K.kLsquare, "expects a list starting with kLsquare")
    if c.eat(K.kRsquare):
        return (), ()
    while True:
        if c.eat(K.kQuestionMark):
            sizes.append(-1)
            dynamic.append(True)
        else:
            dynamic.append(c.eat(K.kLeq))
            at = c.start
            sizes.append(c.integer())
            written.append((sizes[-1], at))
        if not c.eat(K.kComma):
            break
    c.expect(K.kRsquare, "expects a list to end with kRsquare")
    for size, at in written:
        if size < 0:  # (XLA refuses it once the list is read, without words)
            raise c.error(f"a dimension's size is negative: {size}", at)
    return tuple(sizes), tuple(dynamic)


def _layout(c: TokenCursor) -> tuple[list[int], LayoutItems]:
    """XLA's ``ParseLayout`` at the cursor's ``{``: the minor-to-major list and the items
    after ':', the cursor moved past the ``}``; the first error the layout's items record
    is recorded."""
    c.lex()
    minor_to_major: list[int] = []
    if c.kind == K.kInt:
        minor_to_major.append(c.integer())
        while c.eat(K.kComma):
            minor_to_major.append(c.integer())
    items = LayoutItems()
    if c.kind == K.kColon:
        end, recorded, items = layout_items(c.text, c.end, read_shape)
        c.jump(end)
        if recorded is not None:
            c.record(*recorded)
    c.expect(K.kRbrace, "expects layout to end with kRbrace")
    return minor_to_major, items


def _printed_layout(written: str) -> str:
    """A layout as XLA prints it in its messages: without white space or ``D(...)``, the
    physical shape with its default layout."""
    flat = re.sub(r"\s+|(?<![A-Z])D\([^()]*\)", "", written)
    inner = re.search(r"P\(([a-z][a-z0-9]*)\[([^\]]*)\]\)", flat)
    if inner is None:
        return flat
    rank = len(inner.group(2).split(",")) if inner.group(2) else 0
    default = ",".join(str(d) for d in reversed(range(rank)))
    return f"{flat[:inner.end() - 1]}{{{default}}}{flat[inner.end() - 1:]}"

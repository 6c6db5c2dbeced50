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
from ._layout_items import UNSIGNED_TYPES, layout_items
from ._pure_lexer import next_token
from ._shape import ELEMENT_BITS, Shape
from ._syntax import MAX_DEPTH, SKIP, SyntaxFault, int64_at, skip
from ._tokens import TokKind
from ._values import flat_value, relocate

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
_ELEMENT = "(?:" + "|".join(sorted((t for t in ELEMENT_BITS if t != "token"),
                                   key=len, reverse=True)) + ")"
_DIM = r"(?:<=)?[0-9]{1,18}"


def _after_dimensions(rank: int) -> str:
    """What may follow the ``rank``-th dimension of a printed array: ``]`` and a layout of
    ``rank`` dimensions, or (below rank 8) one more dimension."""
    close = (rf"\](?:\{{[0-9]{{1,9}}(?:,[0-9]{{1,9}}){{{rank - 1}}}(?::{_ITEMS})?\}})?")
    return close if rank == 8 else rf"(?:{close}|,{_DIM}{_after_dimensions(rank + 1)})"


PRINTED_ARRAY = _ELEMENT + r"\[(?:\]|" + _DIM + _after_dimensions(1) + ")"
_TYPE = re.compile(r"[a-z][a-z0-9]*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# A physical shape in a layout (``P(f32[10,10])``), which XLA takes on sparse arrays alone.
_PHYSICAL = re.compile(r"(?<![A-Z])P" + SKIP.pattern + r"\(")
# XLA's token names.
class _Refused(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message, self.offset = message, offset


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


def _printed_array(printed: re.Match[str]) -> Shape:
    """The array shape a match of ``_PRINTED`` that XLA takes (``_taken_as_printed``) is."""
    dims = printed.group(2).split(",") if printed.group(2) else []
    written = printed.group(0)
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
    reader = _Shape(text, stop)
    try:
        end = reader.shape(reader.next(start), nested=signature)[0]
    except _Refused as refused:
        return start, reader.recorded or (refused.message, refused.offset)
    if reader.recorded is not None and recorded is not None:
        recorded.append(reader.recorded)
    return end, None


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
    except (_Refused, SyntaxFault) as refused:
        offset = refused.offset
        lines_before = text.count("\n", 0, offset)
        at_column = (column + offset if not lines_before
                     else offset - text.rfind("\n", 0, offset))
        raise HloParseError(refused.message, line + lines_before, at_column) from None


@functools.lru_cache(maxsize=4096)
def _shape_of(text: str) -> Shape:
    """The shape of the whole of ``text``; ``_Refused`` (not cached) where XLA refuses it."""
    reader = _Shape(text, len(text))
    end, shape = reader.shape(reader.next(0), nested=True)
    if (after := reader.next(end)) < len(text):
        raise _Refused("Extra content after shape", after)
    return shape


def _count(items: str | None) -> int:
    return 0 if not items else items.count(",") + 1


class _Shape:
    """The reader of one shape's tokens, up to ``stop``."""

    def __init__(self, text: str, stop: int) -> None:
        self.text, self.stop = text, stop
        self.recorded: tuple[str, int] | None = None  # the first error read on past

    def next(self, pos: int) -> int:
        return min(skip(self.text, pos), self.stop) if pos < self.stop else pos

    def at(self, pos: int, token: str) -> bool:
        return pos < self.stop and self.text.startswith(token, pos)

    def shape(self, pos: int, nested: bool, depth: int = 0) -> tuple[int, Shape]:
        """Past the shape at ``pos`` (a token, ``depth`` tuples deep), and the shape; refuses
        as XLA does."""
        text = self.text
        if self.at(pos, "("):
            if depth >= MAX_DEPTH:
                raise _Refused(f"values nested more than {MAX_DEPTH} deep", pos)
            at = self.next(pos + 1)
            parts: list[Shape] = []
            if self.at(at, ")"):
                return at + 1, Shape("tuple", tuple_shapes=())
            while True:
                end, part = self.shape(at, nested=True, depth=depth + 1)
                parts.append(part)
                at = self.next(end)
                if self.at(at, ","):
                    at = self.next(at + 1)
                    continue
                if self.at(at, ")"):
                    return at + 1, Shape("tuple", tuple_shapes=tuple(parts))
                raise _Refused("expects ')' at the end of tuple.", at)
        if self.at(pos, "b") and self.at(after := self.next(pos + 1), "("):  # a buffer
            if depth >= MAX_DEPTH:
                raise _Refused(f"values nested more than {MAX_DEPTH} deep", pos)
            inner = self.next(after + 1)
            if self.at(inner, "(") or self.at(inner, "b") or self.at(inner, "token"):
                raise _Refused("element_shape must be an array shape to create a buffer "
                               "shape.", inner)
            end, array = self.shape(inner, nested=True, depth=depth + 1)
            at = self.next(end)
            if not self.at(at, ")"):
                raise _Refused("expects ')' at the end of buffer shape.", at)
            return at + 1, Shape(array.element_type, array.dimensions, array.dynamic,
                                 array.layout, is_buffer=True)
        if (printed := _printed_at(text, pos, self.stop)) is not None:
            return printed.end(), _printed_array(printed)  # a tuple's elements, mostly
        element = _TYPE.match(text, pos, self.stop)
        if element is None or element.group() not in ELEMENT_BITS:
            if nested:
                kind = TokKind(next_token(text, pos)[0]).name  # XLA's TokKindToString
                raise _Refused(f"expected primitive type, saw {kind}", pos)
            word = _WORD.match(text, pos, self.stop)
            seen = word.group() if word else text[pos:pos + 1]
            raise _Refused(f"expects opcode but sees: {seen}, error: Unknown opcode: {seen}",
                           pos)
        at = self.next(element.end())
        if not self.at(at, "["):
            raise _Refused("expects '[' to start the dimensions of the shape", at)
        sizes, dynamic, at = self.dimensions(self.next(at + 1))
        layout = self.next(at)
        array = Shape(element.group(), sizes, dynamic)
        if not self.at(layout, "{"):
            return at, array
        first = self.next(layout + 1)
        if not (int64_at(text, first, self.stop) or self.at(first, ":")):
            return at, array  # no layout: XLA reads the '{' as what follows the shape
        minor_to_major, end = self.layout(first)
        if minor_to_major != len(sizes):
            raise _Refused(f"Dimensions size is {len(sizes)}, but minor to major size is "
                           f"{minor_to_major}.", skip(text, end))
        written = text[layout + 1:end - 1]
        if _PHYSICAL.search(written):
            raise _Refused("Layout has physical shape, but is not for a sparse array: "
                           f"{{{_printed_layout(written)}}}", skip(text, end))
        return end, Shape(element.group(), sizes, dynamic, written)

    def dimensions(self, at: int) -> tuple[tuple[int, ...], tuple[bool, ...], int]:
        """The sizes (a bound for ``<=N``, -1 for ``?``), which are dynamic, and the offset
        past ``]`` of the dimensions starting at ``at``."""
        sizes: list[int] = []
        dynamic: list[bool] = []
        if self.at(at, "]"):
            return (), (), at + 1
        while True:
            if self.at(at, "?"):
                sizes.append(-1)
                dynamic.append(True)
                at = self.next(at + 1)
            else:
                bounded = self.at(at, "<=")
                if bounded:
                    at = self.next(at + 2)
                size, end = self.integer(at, least=0)
                sizes.append(size)
                dynamic.append(bounded)
                at = self.next(end)
            if self.at(at, ","):
                at = self.next(at + 1)
                continue
            if self.at(at, "]"):
                return tuple(sizes), tuple(dynamic), at + 1
            raise _Refused("expects a list to end with kRsquare", at)

    def integer(self, at: int, least: int | None = None) -> tuple[int, int]:
        """The int64 token at ``at`` and the offset past it (at least ``least``)."""
        found = int64_at(self.text, at, self.stop)
        if found is None:
            raise _Refused("expects integer", at)
        if least is not None and found[0] < least:
            raise _Refused(f"a dimension's size is negative: {found[0]}", at)
        return found

    def layout(self, at: int) -> tuple[int, int]:
        """The minor-to-major count and the offset past ``}`` of the layout whose first
        token is at ``at``."""
        count = 0
        if not self.at(at, ":"):
            while True:
                at = self.next(self.integer(at)[1])
                count += 1
                if not self.at(at, ","):
                    break
                at = self.next(at + 1)
        recorded = None
        if self.at(at, ":"):
            at, recorded = layout_items(self.text, at + 1, read_shape)
        if not self.at(at, "}"):
            raise _Refused(*(recorded or ("expects layout to end with kRbrace", at)))
        if self.recorded is None:
            self.recorded = recorded
        return count, at + 1


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

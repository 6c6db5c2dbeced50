"""Where the complete top-level statements of an HLO text end, found on XLA's tokens.

A module's text is a sequence of top-level statements (``_reader`` has the grammar):

- the module header, ``HloModule name, key=value, ...``;
- each computation's head, ``[ENTRY] name [(parameters) -> shape, ...] {``;
- each instruction inside a computation's braces, ``[ROOT] name = [shape] opcode(operands),
  key=value, ...``;
- a computation's closing ``}`` with what XLA allows after it (``, execution_thread="x"``).

``statements_end(text, in_body)`` takes a text that starts where a statement starts (inside a
computation's braces when ``in_body``) and may be cut anywhere, and gives the offset where its
last confirmed statement ends: the start of the first token of the statement after it (white
space and comments before that token stay with the statement before). A statement is
confirmed when the tokens after it show that it ended whatever text comes next: the next
statement's first token has two more tokens after it (so that no token it depends on can be
cut), and no cut string or comment comes before it (a text cut inside a string or a comment
ends in an error token, and what follows that token in the text is no token at all). An
instruction is confirmed as ended only after its operand list, at a value followed by a token
that neither continues it nor is a ``,`` (the rule the reader ends an instruction by), so
that a reader of the text up to the offset sees every statement whole and reads the same as
it would with the whole text. ``statement_pieces`` joins blocks of text and cuts them there,
for the streaming reader.

Where the tokens do not show a statement's end (text XLA refuses, or a module that is one
instruction), no offset is given there: the text waits for more, up to the whole rest of the
input. The reader ends groups, values and strings (in either quote) where these tokens do
(``_extents``), so a cut between statements is a cut between the reader's statements too.

>>> text = "HloModule m\\n\\nENTRY e {\\n  p = f32[] parameter(0)\\n  ROOT n = f32[] negate(p)\\n}\\n"
>>> end, in_body = statements_end(text[:60])
>>> text[:end], in_body
('HloModule m\\n\\nENTRY e {\\n  p = f32[] parameter(0)\\n  ', True)
>>> [len(piece) for piece in statement_pieces([text[:30], text[30:60], text[60:]])]
[25, 25, 27]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from ._tokenize import Tokens, tokenize
from ._tokens import TokKind as K

# Each token kind's change of the bracket depth.
_DEPTH = np.zeros(256, dtype=np.int8)
_DEPTH[[K.kLbrace, K.kLparen, K.kLsquare]] = 1
_DEPTH[[K.kRbrace, K.kRparen, K.kRsquare]] = -1
_NAMES = (K.kName, K.kIdent)  # an instruction's or computation's name (kName: with '%')


def _kinds(*kinds: int) -> np.ndarray:
    """A table of 256 booleans, true at ``kinds`` (``_kinds(...)[k]`` asks for many k)."""
    table = np.zeros(256, dtype=bool)
    table[list(kinds)] = True
    return table


# A statement's first token: inside a computation's braces, ROOT, a name or the closing brace;
# outside, ENTRY or a name.
_INNER_FIRST = _kinds(K.kw_ROOT, K.kRbrace, *_NAMES)
_OUTER_FIRST = _kinds(K.kw_ENTRY, *_NAMES)
_KEYWORDS = _kinds(K.kw_ROOT, K.kw_ENTRY)
_NAME = _kinds(*_NAMES)
# Candidates tried from the end before the text waits for more.
_TRIES = 64
# The tokens looked at first, near where a search starts (a statement has fewer, mostly).
_WINDOW = 1 << 12
# The most text tokenized at once: blocks are cut to this (the tokens take about four times
# the memory of their text).
SLICE = 1 << 20


class _Text:
    """The tokens of one text, with the bracket depth before and after each."""

    def __init__(self, text: str, tokens: Tokens, in_body: bool) -> None:
        self.text = text
        self.kinds = tokens.kinds
        self.starts = tokens.starts
        self.ends = tokens.ends
        change = _DEPTH[self.kinds]
        self.after = np.cumsum(change, dtype=np.int32)
        self.after += int(in_body)
        self.before = self.after - change
        self.in_body = in_body

    def kind(self, i: int) -> int:
        return int(self.kinds[i])

    def word(self, i: int) -> str:
        return self.text[self.starts[i]:self.ends[i]]

    def gap(self, i: int) -> bool:
        """True when white space or a comment comes before token ``i``."""
        return i == 0 or int(self.starts[i]) > int(self.ends[i - 1])

    def level(self, start: int, stop: int, depth: int) -> list[int]:
        """The tokens of ``[start, stop)`` at bracket ``depth``: those outside any bracket
        opened there, the brackets that open and close at that depth included."""
        inside = np.minimum(self.before[start:stop], self.after[start:stop]) == depth
        return (np.flatnonzero(inside) + start).tolist()

    def opener(self, i: int) -> int:
        """The bracket at depth 0 that token ``i`` (deeper) is inside: its index, or -1 when
        it was opened before the text (``in_body``), or -2 when there is none."""
        low = max(0, i - _WINDOW)  # near i first, then all before it
        for start, stop in ((low, i), (0, low)):
            outside = np.flatnonzero(self.before[start:stop] == 0)
            if outside.size:
                return start + int(outside[-1])
        return -1 if self.in_body else -2

    def starts_instruction(self, i: int) -> bool:
        """True when token ``i`` can start an instruction: ROOT, or a name then '='."""
        kind = self.kind(i)
        if kind == K.kw_ROOT:
            return True
        return kind in _NAMES and self.kind(i + 1) == K.kEqual and (
            kind == K.kIdent or self.text.startswith("%", int(self.starts[i])))

    def previous_instruction(self, start: int, stop: int) -> int:
        """The last token of ``[start, stop)`` at depth 1 that can start an instruction, or
        -1 (looked for near ``stop`` first)."""
        middle = max(start, stop - _WINDOW)
        for low, high in ((middle, stop), (start, middle)):
            kinds = self.kinds[low:high]
            can = (self.before[low:high] == 1) & (
                (kinds == K.kw_ROOT) | (_NAME[kinds] & (self.kinds[low + 1:high + 1] == K.kEqual)))
            for j in (np.flatnonzero(can)[::-1] + low).tolist():
                if self.starts_instruction(j):
                    return j
        return -1

    def is_body(self, brace: int) -> bool:
        """True when the '{' at depth 0 at ``brace`` opens a computation's instructions (-1:
        the braces the text starts in): no attribute value, and an instruction comes first."""
        if brace == -1:
            return True
        if brace <= 0 or self.kind(brace) != K.kLbrace or self.kind(brace - 1) in (
                K.kAttributeName, K.kEqual, K.kComma):
            return False
        return self.starts_instruction(brace + 1)


def statements_end(text: str, in_body: bool = False) -> tuple[int, bool]:
    """The offset where the last confirmed statement of ``text`` ends (0 when none is), and
    whether that offset is inside a computation's braces. ``text`` starts where a statement
    starts, inside a computation's braces when ``in_body``; it may be cut anywhere."""
    tokens = tokenize(text)
    kinds = tokens.kinds
    stop = len(kinds) - 1  # the first token no confirmed statement may reach: kEof, or ...
    for i in np.flatnonzero(kinds == int(K.kError)).tolist():
        if text[int(tokens.starts[i])] in "\"'/":  # ... a string or a comment cut, or a '/'
            stop = i
            break
    limit = stop - 3  # the next statement's first token has two tokens after it
    if limit <= 0:
        return 0, in_body
    t = _Text(text, tokens, in_body)
    # The statements near the end first, then all of them.
    low = max(1, limit - _WINDOW)
    found = _last_end(t, low, limit)
    if found is None and low > 1:
        found = _last_end(t, 1, low)
    return found or (0, in_body)


def _last_end(t: _Text, low: int, limit: int) -> tuple[int, bool] | None:
    """The last confirmed statement end at a token from ``low`` to ``limit``, and whether it
    is inside a computation's braces; None when there is none."""
    head = t.kinds[low:limit + 1]
    depth = t.before[low:limit + 1]
    # The first token of a statement: a name or ROOT inside a computation's braces, or the
    # brace that closes them; a name or ENTRY outside. (A name after ROOT or ENTRY is not:
    # the keyword is.)
    inner = (depth == 1) & _INNER_FIRST[head]
    outer = (depth == 0) & _OUTER_FIRST[head]
    candidates = np.flatnonzero((inner | outer) & ~_KEYWORDS[t.kinds[low - 1:limit]]) + low
    for i in candidates[::-1][:_TRIES].tolist():
        if t.before[i] == 1 and _ends_in_body(t, i):
            return int(t.starts[i]), True
        if t.before[i] == 0 and _ends_outside(t, i):
            return int(t.starts[i]), False
    return None


def _ends_in_body(t: _Text, i: int) -> bool:
    """True when a statement inside a computation's braces ends before token ``i`` (an
    instruction's first token, or the closing brace)."""
    if t.kind(i) != K.kRbrace and not t.starts_instruction(i):
        return False
    brace = t.opener(i)
    if not t.is_body(brace):
        return False
    start = t.previous_instruction(brace + 1, i)
    if start < 0:  # the first statement in the braces: the head before them has ended
        return brace >= 0 and brace == i - 1
    return (t.gap(i) or t.kind(i) == K.kRbrace) and _instruction_ended(t, start, i)


def _instruction_ended(t: _Text, start: int, stop: int) -> bool:
    """True when tokens ``[start, stop)`` are an instruction up to a value that ends it:
    ``[ROOT] name = ... opcode(...)`` then ``, key=value`` attributes."""
    top = t.level(start, stop, 1)
    at = 1 if t.kind(top[0]) == K.kw_ROOT else 0
    if at + 1 >= len(top) or t.kind(top[at + 1]) != K.kEqual:
        return False
    # The operand list: the first '(' after an identifier (``b(`` is a buffer shape).
    at += 3
    while at < len(top) and not (t.kind(top[at]) == K.kLparen and t.kind(
            top[at - 1]) == K.kIdent and t.word(top[at - 1]) != "b"):
        at += 1
    if at + 1 >= len(top) or t.kind(top[at + 1]) != K.kRparen:
        return False
    return _attributes_ended(t, top[at + 2:])


def _attributes_ended(t: _Text, top: list[int]) -> bool:
    """True when ``top`` (tokens at one depth) are ``, key=value`` attributes, each with a
    value (or none at all)."""
    at = 0
    while at < len(top):
        if (t.kind(top[at]) != K.kComma or at + 2 >= len(top)
                or t.kind(top[at + 1]) != K.kAttributeName or t.kind(top[at + 2]) == K.kComma):
            return False
        at += 3
        while at < len(top) and t.kind(top[at]) != K.kComma:
            at += 1
    return True


def _ends_outside(t: _Text, i: int) -> bool:
    """True when a statement outside computations ends before token ``i`` (ENTRY or a name
    that starts a computation's head): the module header, or a computation's closing brace
    and the attributes after it."""
    if not t.gap(i) or (t.word(i) == "T" and t.kind(i + 1) == K.kLparen):
        return False  # a value's continuation (an iota's T(...))
    top = t.level(0, i, 0)
    for at in range(len(top) - 1, -1, -1):
        kind = t.kind(top[at])
        if kind == K.kRbrace and t.is_body(t.opener(top[at])):
            return _attributes_ended(t, top[at + 1:])
        if kind == K.kw_HloModule:  # the header: its name is one token
            name = at + 1
            return top[at] == 0 and name < len(top) and (
                top[name] + 1 == i or t.kind(top[name] + 1) == K.kComma or t.gap(top[name] + 1)
            ) and _attributes_ended(t, top[name + 1:])
    return False


def statement_pieces(blocks: Iterable[str]) -> Iterator[str]:
    """The text of ``blocks`` (a module's text in order, cut anywhere) in pieces that each
    end where a statement ends (``statements_end``), the last at the end of the text; the
    pieces join to the text. Blocks are looked at ``SLICE`` characters at a time. A
    statement longer than that waits for as many as it takes: once a text shows no end, it is
    looked at again only when it has doubled, so that each character is tokenized a bounded
    number of times."""
    parts: list[str] = []
    held = 0  # the characters in parts
    wanted = 1  # look again when held reaches this
    in_body = False
    for block in blocks:
        for at in range(0, len(block), SLICE):
            part = block[at:at + SLICE] if len(block) > SLICE else block
            parts.append(part)
            held += len(part)
            if held < wanted:
                continue
            buffer = parts[0] if len(parts) == 1 else "".join(parts)
            parts.clear()
            end, inside = statements_end(buffer, in_body)
            if end > 0:
                yield buffer[:end]
                buffer, in_body = buffer[end:], inside
                wanted = 1
            else:
                wanted = 2 * held
            parts, held = [buffer], len(buffer)
    buffer = "".join(parts)
    if buffer:
        yield buffer

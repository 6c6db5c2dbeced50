"""The pairs of a send or recv: XLA's ``SourceTargetPairs::FromString`` of the frontend
attribute ``_xla_send_recv_source_target_pairs``.

XLA's parser keeps the attribute as any string; what reads it later (the deadlock checker,
the send/recv thunks) reads it with the replica group reader (``ParseReplicaGroupsOnly``:
any encoding, then the end of the text) and takes each group as a pair. A text it cannot
read is its error, in its words (``pairs_problem``):

>>> send_recv_pairs("{{0,1},{1,2}}"), send_recv_pairs("[2,2]<=[4]")
([(0, 1), (1, 2)], [(0, 1), (2, 3)])
>>> send_recv_pairs("{{0,1,2}}"), pairs_problem("{{0,1,2}}")
(None, 'Incorrect element size : {{0,1,2}}')
>>> print(pairs_problem("{{0,1},}"))
Syntax error:
was parsing 1:7: error: expects a list to end with kRbrace
{{0,1},}
      ^
>>> print(pairs_problem("{{0,1}} {{2,3}}"))
Syntax error:
Extra content after replica groups
"""

from __future__ import annotations

import re

from .._errors import HloParseError
from ._extents import group_end, value_end
from ._replica_groups import decode_groups
from ._syntax import SyntaxFault, skip

SEND_RECV_PAIRS = "_xla_send_recv_source_target_pairs"
_NOT_A_LINE_BREAK = re.compile(r"[^\n]")


def send_recv_pairs(text: str) -> list[tuple[int, int]] | None:
    """The pairs ``text`` (the attribute's value) names, in order; None when XLA cannot read
    them (``pairs_problem`` says why)."""
    pairs, _ = _read(text)
    return pairs


def pairs_problem(text: str) -> str | None:
    """XLA's message for a pairs attribute ``text`` it cannot read; None when it can."""
    _, problem = _read(text)
    return problem


def pairs_problem_line(text: str) -> str:
    """``pairs_problem`` of a ``text`` XLA cannot read, on one line: what is wrong and where,
    without the source line and caret."""
    return " ".join((pairs_problem(text) or "").split("\n")[:2])


def _read(text: str) -> tuple[list[tuple[int, int]] | None, str | None]:
    start = skip(text, 0)
    try:  # where the groups end: an explicit list's braces, or an iota list's tokens
        end = group_end(text, start) if text.startswith("{", start) else value_end(text, start)
    except SyntaxFault:
        end = len(text)  # the reader says what is wrong
    if skip(text, end) < len(text):
        return None, "Syntax error:\nExtra content after replica groups"
    try:
        # The groups alone, the comments around them blanked (positions kept).
        blank = _NOT_A_LINE_BREAK.sub(" ", text[:start])
        groups = decode_groups(blank + text[start:end], 1, 1).replica_groups
    except HloParseError as error:
        return None, _syntax_error(text, error.message, _offset(text, error.line, error.column))
    if any(len(group) != 2 for group in groups):
        return None, f"Incorrect element size : {text}"
    return [(source, target) for source, target in groups], None


def _offset(text: str, line: int, column: int) -> int:
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return start + column - 1


def _syntax_error(text: str, message: str, offset: int) -> str:
    """``ParseReplicaGroupsOnly``'s status message for an error at ``offset``
    (``HloParserImpl::Error``): where, what, the line, and a caret one column left of the
    column. XLA's lexer counts the first line's columns from 0 and later lines' from 1; the
    line of an error at the end of the text is ``LINE OUT OF RANGE``."""
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line = text.count("\n", 0, offset) + 1
    column = offset - line_start + (line > 1)
    source_line = ("LINE OUT OF RANGE" if offset >= len(text)
                   else text[line_start:None if line_end < 0 else line_end])
    caret = "" if column == 0 else " " * (column - 1) + "^"
    return f"Syntax error:\nwas parsing {line}:{column}: error: {message}\n{source_line}\n{caret}"

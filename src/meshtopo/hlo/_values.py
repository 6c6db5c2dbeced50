"""Typed readers of attribute values and operand lists, on the raw text the reader kept.

A value's text may hold line breaks and comments (XLA reads them as white space):
``flat_value`` turns them into spaces of the same length before a typed reader runs, and
``relocate`` moves an error's column back to the physical line. Errors are ``HloParseError``
with the 1-based line and column of the offending character.

>>> parse_int_lists("{{0,1},{2,3}}", "source_target_pairs", 1, 1)
[[0, 1], [2, 3]]
>>> split_operands("f32[8]{0} %x, /*index=1*/ %y")
[('x', 'f32[8]{0}', 0), ('y', None, 26)]
"""

from __future__ import annotations

import re

from .._errors import HloParseError
from ._syntax import NAME, STRING, SyntaxFault, atoms_end, skip, value_end

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_STRING = re.compile(STRING)
_KEY = re.compile(r"[ \t]*([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*")
# A comment, or a string (quoted as XLA's lexer quotes them), in which no comment starts.
_COMMENT_OR_STRING = re.compile(STRING + r"|'[^'\n]*'|/\*(?:[^*]|\*(?!/))*\*/|//[^\n\r]*")
_INT = re.compile(r"[ \t]*(-?[0-9]+)[ \t]*")
_SPACES = re.compile(r"[ \t\r\n]*")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "0": "\0"}


# An operand list as XLA prints it with operand shapes: array shapes with a plain layout (or a
# tuple of them) and names, items joined by ", " with an optional "/*index=N*/" comment; read
# in one match.
_ARRAY = r"[a-z][a-z0-9]*\[[0-9,]*\](?:\{[0-9,]*\})?"
_NEXT = r", (?:/\*index=[0-9]+\*/)?"
_PRINTED_OPERAND = re.compile(
    r"(?:(" + _ARRAY + r"|\((?:" + _ARRAY + r"(?:" + _NEXT + _ARRAY + r")*)?\)) )?"
    r"(%[A-Za-z0-9_.\-]+)")
_PRINTED_OPERANDS = re.compile(
    _PRINTED_OPERAND.pattern + "(?:" + _NEXT + _PRINTED_OPERAND.pattern + ")*")


def split_operands(text: str) -> list[tuple[str, str | None, int]]:
    """``(name without %, inline shape text or None, offset where the operand starts)`` of
    each operand of an operand list's text (``f32[8]{0} %x, %y``); comments and line breaks
    are white space. Errors are ``SyntaxFault`` at offsets of ``text``."""
    if _PRINTED_OPERANDS.fullmatch(text) is not None:
        return [(found.group(2)[1:], found.group(1), found.start())
                for found in _PRINTED_OPERAND.finditer(text)]
    operands: list[tuple[str, str | None, int]] = []
    pos = skip(text, 0)
    while True:
        atoms: list[tuple[int, int]] = []
        at = pos
        while (end := atoms_end(text, at)) > at:
            atoms.append((at, end))
            at = skip(text, end)
        if not atoms:
            raise SyntaxFault("empty operand", at)
        name = text[atoms[-1][0]:atoms[-1][1]]
        if NAME.fullmatch(name) is None:
            raise SyntaxFault(f"expects an operand name but found {name[:30]!r}", atoms[-1][0])
        shape = " ".join(text[a:b] for a, b in atoms[:-1]) or None
        operands.append((name.lstrip("%"), shape, pos))
        if at >= len(text):
            return operands
        if text[at] != ",":
            raise SyntaxFault(f"unexpected '{text[at]}' in the operand list", at)
        pos = skip(text, at + 1)


def flat_value(text: str) -> str:
    """``text`` with comments and line breaks turned into spaces of the same length, so that
    the typed readers below see one line and their offsets still count into ``text``."""
    if "\n" not in text and "/" not in text and "\r" not in text:
        return text
    return without_comments(text, True).replace("\n", " ").replace("\r", " ")


def without_comments(text: str, same_length: bool) -> str:
    """``text`` with each comment outside strings (``"a//b"`` holds none) replaced by spaces
    of its length (``same_length``) or by one space."""
    if "/" not in text:
        return text

    def blank(found: re.Match[str]) -> str:
        written = found.group()
        if written[0] in "\"'":
            return written
        return " " * len(written) if same_length else " "

    return _COMMENT_OR_STRING.sub(blank, text)


def relocate(error: HloParseError, text: str, line: int, column: int) -> HloParseError:
    """``error`` raised at a column of ``text`` read as one line starting at ``line:column``,
    moved to the physical line and column where its offset falls."""
    offset = min(max(error.column - column, 0), len(text))
    newlines = text.count("\n", 0, offset)
    if newlines == 0 or error.line != line:
        return error
    return HloParseError(error.message, line + newlines, offset - text.rfind("\n", 0, offset),
                         error.source)


def parse_int(text: str, what: str, line: int, column: int) -> int:
    """A decimal int64; anything else is an ``HloParseError`` naming ``what``."""
    match = _INT.fullmatch(text)
    if match is None:
        raise HloParseError(f"expected an integer for {what} but found {text[:40]!r}", line, column)
    return _checked(match.group(1), what, line, column)


def parse_bool(text: str, what: str, line: int, column: int) -> bool:
    """``true`` or ``false``."""
    if text in ("true", "false"):
        return text == "true"
    raise HloParseError(f"expected true or false for {what} but found {text[:40]!r}", line, column)


def parse_int_list(text: str, what: str, line: int, column: int) -> list[int]:
    """``{1,2,3}`` (braces required, may be empty) as a list of int64."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        raise HloParseError(f"expected '{{' to start the list for {what}", line, column)
    body = stripped[1:-1]
    if not body.strip():
        return []
    offset = column + text.find("{") + 1
    values: list[int] = []
    for part in body.split(","):
        if _INT.fullmatch(part) is None:
            raise HloParseError(
                f"expected an integer in {what} but found {part.strip()[:40]!r}", line, offset)
        values.append(_checked(part.strip(), what, line, offset))
        offset += len(part) + 1
    return values


def parse_int_lists(text: str, what: str, line: int, column: int) -> list[list[int]]:
    """``{{0,1},{2,3}}`` as a list of int64 lists (XLA's ``kBracedInt64ListList``), read as
    XLA's ``ParseList`` reads it: ``'{' [list (',' list)*] '}'``, where any other token in
    place of a list or the end (``{{0,1}{1,2}}``, ``{,{0,1}}``, ``{{0,1},}``) is refused at
    that token in XLA's words."""
    pos = _SPACES.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("{", pos):
        raise HloParseError(f"expected '{{' to start the list of lists for {what}", line,
                            column + pos)
    lists: list[list[int]] = []
    pos = _SPACES.match(text, pos + 1).end()  # type: ignore[union-attr]
    if text.startswith("}", pos):
        return lists
    while True:
        if not text.startswith("{", pos):
            raise HloParseError("expects a list to end with kRbrace", line, column + pos)
        close = text.find("}", pos)
        if close < 0:
            raise HloParseError(f"inner list of {what} is never closed", line, column + pos)
        lists.append(parse_int_list(text[pos:close + 1], what, line, column + pos))
        pos = _SPACES.match(text, close + 1).end()  # type: ignore[union-attr]
        if text.startswith(",", pos):
            pos = _SPACES.match(text, pos + 1).end()  # type: ignore[union-attr]
        elif text.startswith("}", pos):
            return lists
        else:
            raise HloParseError("expects a list to end with kRbrace", line, column + pos)


def parse_name_list(text: str, what: str, line: int, column: int) -> list[str]:
    """``{%a, %b}`` (or a single ``%a``) as names without ``%`` (comments are white space)."""
    stripped = without_comments(text, same_length=False).strip()
    if stripped.startswith("{"):
        if not stripped.endswith("}"):
            raise HloParseError(f"expected '}}' to end the names of {what}", line, column)
        stripped = stripped[1:-1]
    return [part.strip().lstrip("%") for part in stripped.split(",") if part.strip()]


def unquote(text: str) -> str:
    """The value of a quoted string (C escapes decoded); unquoted text is returned as is."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text

    def decode(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] == "x":
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        return _SIMPLE_ESCAPES.get(code, code)

    return _ESCAPE.sub(decode, text[1:-1])


def parse_dictionary(text: str, line: int, column: int) -> dict[str, str]:
    """``{key=value key2="v"}`` (metadata; space or comma separated) or ``{k="v",k2="w"}``
    (frontend attributes) as a dict of unquoted values."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return {}
    body = stripped[1:-1]
    result: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        key = _KEY.match(body, pos)
        if key is None:
            pos += 1
            continue
        begin = key.end()
        end = begin
        if body.startswith('"', begin):
            string = _STRING.match(body, begin)
            if string is None:
                raise HloParseError("unterminated string", line, column + begin + 1)
            end = string.end()
        else:
            end = _dictionary_value_end(body, begin, line, column + 1)
            space = body.find(" ", begin, end)
            end = space if space >= 0 else end
        result[key.group(1)] = unquote(body[begin:end].strip())
        pos = end + 1
    return result


def _dictionary_value_end(body: str, pos: int, line: int, column: int) -> int:
    try:
        return value_end(body, pos)
    except SyntaxFault as fault:
        raise HloParseError(fault.message, line, column + fault.offset) from None


def _checked(digits: str, what: str, line: int, column: int) -> int:
    if len(digits.lstrip("-")) > 19:
        raise HloParseError(f"integer {digits[:24]}... in {what} does not fit in int64", line, column)
    value = int(digits)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise HloParseError(f"integer {digits} in {what} does not fit in int64", line, column)
    return value

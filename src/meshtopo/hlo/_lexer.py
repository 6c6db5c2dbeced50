"""Tokens of one HLO instruction line: balanced values, attribute lists, operand lists, ints.

Everything here works on one line of text (``line`` is its 1-based number in the input) and
reports errors as ``HloParseError`` with the 1-based column inside that line. Values are kept
as the exact substring written; helpers turn the ones meshtopo interprets into Python values.

>>> [(a.key, a.value) for a in split_attributes(
...     'x, replica_groups={{0,1}}, metadata={op_name="a, b"}, to_apply=%add', 1, 1)]
[('replica_groups', '{{0,1}}'), ('metadata', '{op_name="a, b"}'), ('to_apply', '%add')]
>>> parse_int_lists("{{0,1},{2,3}}", "source_target_pairs", 1, 1)
[[0, 1], [2, 3]]
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .._errors import HloParseError

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SPECIAL_TOP = re.compile(r'[{}()\[\]",]')
_SPECIAL_NESTED = re.compile(r'[{}()\[\]"]')
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_KEY = re.compile(r"[ \t]*([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*")
_DEVICE_IDS = re.compile(r",[ \t]*device_ids[ \t]*=")
_COMMENT = re.compile(r"/\*.*?\*/")
_INT = re.compile(r"[ \t]*(-?[0-9]+)[ \t]*")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)")
_CLOSER = {"{": "}", "(": ")", "[": "]"}
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "0": "\0"}


class Attribute(NamedTuple):
    """``key=value`` as written; ``column`` is the 1-based column where the value starts."""

    key: str
    value: str
    column: int


def value_end(text: str, pos: int, line: int, column: int = 1) -> int:
    """The offset just past the value starting at ``pos``: up to a comma or closer at depth 0.

    Braces, brackets and parentheses must balance and strings must close; ``column`` is the
    column of ``text[0]`` for error positions.
    """
    stack: list[str] = []
    while True:
        match = (_SPECIAL_NESTED if stack else _SPECIAL_TOP).search(text, pos)
        if match is None:
            if stack:
                opener = stack[-1]
                raise HloParseError(
                    f"'{opener}' is never closed (expected '{_CLOSER[opener]}')", line,
                    column + len(text))
            return len(text)
        char, at = match.group(), match.start()
        if char == '"':
            string = _STRING.match(text, at)
            if string is None:
                raise HloParseError("unterminated string", line, column + at)
            pos = string.end()
        elif char in "{([":
            if len(stack) >= 256:
                raise HloParseError("values nested more than 256 deep", line, column + at)
            stack.append(char)
            pos = at + 1
        elif char == "," or not stack:
            return at
        elif _CLOSER[stack[-1]] != char:
            raise HloParseError(
                f"expected '{_CLOSER[stack[-1]]}' but found '{char}'", line, column + at)
        else:
            stack.pop()
            pos = at + 1


def split_attributes(text: str, line: int, column: int, start: int = 0) -> list[Attribute]:
    """The ``, key=value`` attributes of an instruction, from offset ``start`` of ``text``.

    Text before the first comma (the rest of an operand list) is skipped. A mesh-axes value
    ``mesh[...], device_ids=(...) {...}`` is one value despite its inner comma.
    """
    attributes: list[Attribute] = []
    pos = text.find(",", start)
    while 0 <= pos < len(text):
        key = _KEY.match(text, pos + 1)
        if key is None:
            raise HloParseError(
                f"expected 'name=value' after ',' but found {text[pos + 1:pos + 20].strip()!r}",
                line, column + pos + 1)
        begin = key.end()
        end = value_end(text, begin, line, column)
        if text.startswith("mesh", begin) and _DEVICE_IDS.match(text, end):
            end = value_end(text, _DEVICE_IDS.match(text, end).end(), line, column)  # type: ignore[union-attr]
        if end < len(text) and text[end] != ",":
            raise HloParseError(f"unexpected '{text[end]}' after attribute {key.group(1)}",
                                line, column + end)
        attributes.append(Attribute(key.group(1), text[begin:end].strip(), column + begin))
        pos = end
    return attributes


def split_operands(text: str, line: int, column: int) -> list[tuple[str, int]]:
    """The comma-separated operands inside an operand list, with their columns.

    ``/*index=5*/`` comments are dropped; an operand may carry an inline shape
    (``f32[8]{0} %x``).
    """
    text = _COMMENT.sub(lambda m: " " * len(m.group()), text)
    operands: list[tuple[str, int]] = []
    pos = 0
    while pos < len(text):
        end = value_end(text, pos, line, column)
        if end < len(text) and text[end] != ",":
            raise HloParseError(f"unexpected '{text[end]}' in the operand list", line, column + end)
        item = text[pos:end]
        if item.strip():
            operands.append((item.strip(), column + pos + len(item) - len(item.lstrip())))
        elif end < len(text) or operands:
            raise HloParseError("empty operand", line, column + pos)
        pos = end + 1
    return operands


def operand_name(operand: str) -> tuple[str, str | None]:
    """``(name, inline shape text or None)`` of one operand, with the ``%`` removed."""
    head, _, name = operand.rpartition(" ")
    return name.lstrip("%"), (head.strip() or None)


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
    """``{{0,1},{2,3}}`` as a list of int64 lists (XLA's ``kBracedInt64ListList``)."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        raise HloParseError(f"expected '{{' to start the list of lists for {what}", line, column)
    lists: list[list[int]] = []
    pos = text.find("{") + 1
    inner = text[: text.rfind("}")]
    while True:
        while pos < len(inner) and inner[pos] in " \t,":
            pos += 1
        if pos >= len(inner):
            return lists
        if inner[pos] != "{":
            raise HloParseError(
                f"expected '{{' to start an inner list of {what}", line, column + pos)
        close = inner.find("}", pos)
        if close < 0:
            raise HloParseError(f"inner list of {what} is never closed", line, column + pos)
        lists.append(parse_int_list(inner[pos:close + 1], what, line, column + pos))
        pos = close + 1


def parse_name_list(text: str, what: str, line: int, column: int) -> list[str]:
    """``{%a, %b}`` (or a single ``%a``) as names without ``%``."""
    stripped = text.strip()
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
            end = value_end(body, begin, line, column + 1)
            space = body.find(" ", begin, end)
            end = space if space >= 0 else end
        result[key.group(1)] = unquote(body[begin:end].strip())
        pos = end + 1
    return result


def remap_error(error: HloParseError, logical: str, line: int) -> HloParseError:
    """``error`` raised on ``logical`` read as one line (its newlines as spaces), moved to
    the physical line and column where its offset falls (``logical`` starts on ``line``)."""
    offset = min(max(error.column - 1, 0), len(logical))
    before = logical[:offset]
    newlines = before.count("\n")
    column = offset + 1 if newlines == 0 else offset - before.rfind("\n")
    return HloParseError(error.message, line + newlines, column, error.source)


def _checked(digits: str, what: str, line: int, column: int) -> int:
    if len(digits.lstrip("-")) > 19:
        raise HloParseError(f"integer {digits[:24]}... in {what} does not fit in int64", line, column)
    value = int(digits)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise HloParseError(f"integer {digits} in {what} does not fit in int64", line, column)
    return value

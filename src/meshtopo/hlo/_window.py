"""``window={...}`` and a pad's ``padding=``: checked token by token as XLA's parser reads them
(``ParseWindow``, ``ParseWindowPad``, ``ParsePaddingConfig``), refused in XLA's words at XLA's
token.

Grammar: a window is ``'{' ( KEY '=' VALUE )* '}'``, KEY one of ``size``, ``stride``,
``lhs_dilate``, ``rhs_dilate``, ``rhs_reversal`` (an integer or ``NxM...``) and ``pad`` (a
pad token ``low_high`` per dimension joined by ``x``), each given for as many dimensions as
``size``. A padding config is one pad token of ``low_high`` or ``low_high_interior`` per
dimension. XLA's lexer reads a pad token of two or three numbers per dimension, so
``pad=1_1_0`` is one token that the window then refuses.

>>> check_window("{size=3x3 pad=0_0x1_1}", 1, 1)
>>> check_window("{size=3 pad=1_1_0}", 2, 10)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 2:22: expects padding_low and padding_high separated by '_'
>>> check_padding("0_0_1x2_2", 1, 1)
"""

from __future__ import annotations

import re

from .._errors import HloParseError
from ._syntax import skip
from ._tokens import DXD, INT, PAD
from ._values import flat_value, relocate

# XLA's lexer (its token table, ``_tokens``): ``name=`` is one token; a pad token; a DxD
# token or an integer.
_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)=")
_PAD = re.compile(f"(?:{PAD})(?![0-9A-Za-z_])")
_DXD = re.compile(f"{DXD}|{INT}")
_DXD_FIELDS = ("size", "stride", "lhs_dilate", "rhs_dilate", "rhs_reversal")


def check_window(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (a ``window`` written at ``line``/``column``) as XLA's parser refuses
    it, with an ``HloParseError`` at the token XLA points at."""
    try:
        _window(flat_value(value), line, column)
    except HloParseError as error:
        raise relocate(error, value, line, column) from None


def check_padding(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (a pad's ``padding`` written at ``line``/``column``) as XLA refuses
    it: one pad token of two or three numbers per dimension."""
    text = flat_value(value)
    at = skip(text, 0)
    if _PAD.match(text, at) is None:
        raise relocate(HloParseError("expects padding config, e.g., '0_0_0x3_3_1'", line,
                                     column + at), value, line, column)


def _window(text: str, line: int, column: int) -> None:
    def refuse(message: str, at: int) -> HloParseError:
        return HloParseError(message, line, column + at)

    start = at = skip(text, 0)
    if not text.startswith("{", at):
        raise refuse("expected '{' to start window attribute", at)
    at = skip(text, at + 1)
    counts: dict[str, int] = {}
    while not text.startswith("}", at):
        name = _NAME.match(text, at)
        if name is None:
            raise refuse("expects attribute name", at)
        field, at = name.group(1), skip(text, name.end())
        if field not in _DXD_FIELDS and field != "pad":
            raise refuse(f"unexpected attribute name: {field}", name.start())
        if field in counts:
            raise refuse(f"sub-attribute '{field}=' already exists", at)
        token = (_PAD if field == "pad" else _DXD).match(text, at)
        if token is None:
            raise refuse("expects window pad pattern, e.g., '0_0x3_3'" if field == "pad"
                         else "expects token type kInt or kDxD", at)
        dims = token.group().split("x")
        if field == "pad" and any(d.count("_") != 1 for d in dims):
            raise refuse("expects padding_low and padding_high separated by '_'", at)
        counts[field] = len(dims)
        at = skip(text, token.end())
    size = counts.get("size", 0)
    for field in ("stride", "lhs_dilate", "rhs_dilate", "pad", "rhs_reversal"):
        if counts.get(field, size) != size:
            raise refuse(f"expects '{field}=' has the same size as 'size='", start)

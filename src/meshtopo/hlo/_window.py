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

from .._errors import HloParseError
from ._pure_lexer import next_token
from ._syntax import skip
from ._tokens import TokKind
from ._values import flat_value, relocate

# What XLA's lexer must give after each field's ``name=`` (a pad token; a DxD or an integer).
_PAD_KINDS = frozenset({TokKind.kPad})
_DXD_KINDS = frozenset({TokKind.kDxD, TokKind.kInt})
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
    if next_token(text, at)[0] != TokKind.kPad:
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
        kind, name_start, name_end, _ = next_token(text, at)
        if kind != TokKind.kAttributeName:
            raise refuse("expects attribute name", at)
        field, at = text[name_start:name_end - 1], skip(text, name_end)
        if field not in _DXD_FIELDS and field != "pad":
            raise refuse(f"unexpected attribute name: {field}", name_start)
        if field in counts:
            raise refuse(f"sub-attribute '{field}=' already exists", at)
        kind, _, end, _ = next_token(text, at)
        if kind not in (_PAD_KINDS if field == "pad" else _DXD_KINDS):
            raise refuse("expects window pad pattern, e.g., '0_0x3_3'" if field == "pad"
                         else "expects token type kInt or kDxD", at)
        dims = text[at:end].split("x")
        if field == "pad" and any(d.count("_") != 1 for d in dims):
            raise refuse("expects padding_low and padding_high separated by '_'", at)
        counts[field] = len(dims)
        at = skip(text, end)
    size = counts.get("size", 0)
    for field in ("stride", "lhs_dilate", "rhs_dilate", "pad", "rhs_reversal"):
        if counts.get(field, size) != size:
            raise refuse(f"expects '{field}=' has the same size as 'size='", start)

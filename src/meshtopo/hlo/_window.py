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

from ._token_cursor import TokenCursor, value_check
from ._tokens import TokKind

K = TokKind
# What XLA's lexer must give after each field's ``name=`` (a pad token; a DxD or an integer).
_PAD_KINDS = frozenset({K.kPad})
_DXD_KINDS = frozenset({K.kDxD, K.kInt})
_DXD_FIELDS = ("size", "stride", "lhs_dilate", "rhs_dilate", "rhs_reversal")


def _window(c: TokenCursor) -> None:
    """XLA's ``ParseWindow`` at the cursor."""
    start = c.start
    c.expect(K.kLbrace, "expected '{' to start window attribute")
    counts: dict[str, int] = {}
    while c.kind != K.kRbrace:
        name_start = c.start
        field = c.attribute_name()
        if field not in _DXD_FIELDS and field != "pad":
            raise c.error(f"unexpected attribute name: {field}", name_start)
        if field in counts:
            raise c.error(f"sub-attribute '{field}=' already exists")
        if c.kind not in (_PAD_KINDS if field == "pad" else _DXD_KINDS):
            raise c.error("expects window pad pattern, e.g., '0_0x3_3'" if field == "pad"
                          else "expects token type kInt or kDxD")
        dims = c.word.split("x")
        if field == "pad" and any(d.count("_") != 1 for d in dims):
            raise c.error("expects padding_low and padding_high separated by '_'")
        counts[field] = len(dims)
        c.lex()
    size = counts.get("size", 0)
    for field in ("stride", "lhs_dilate", "rhs_dilate", "pad", "rhs_reversal"):
        if counts.get(field, size) != size:
            raise c.error(f"expects '{field}=' has the same size as 'size='", start)


def _padding(c: TokenCursor) -> None:
    """XLA's ``ParsePaddingConfig`` at the cursor: one pad token."""
    if c.kind != K.kPad:
        raise c.error("expects padding config, e.g., '0_0_0x3_3_1'")


check_window = value_check(_window, "a window")
check_padding = value_check(_padding, "a pad's padding")

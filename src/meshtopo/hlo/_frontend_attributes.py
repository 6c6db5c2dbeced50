"""``frontend_attributes={...}`` read by XLA's tokens as ``ParseFrontendAttributes`` reads
it, the one reader of it: ``{`` then ``name=`` (one token) and a string (its value decoded)
or a JSON dictionary (its text, XLA's ``LexJsonDict``), joined by ``,``, then ``}``; a name
written twice keeps its last value. What XLA refuses is an ``HloParseError`` in its words at
its token; a value that is neither a string nor a dictionary, ``error parsing attribute
frontend_attributes`` at the attribute.

>>> frontend_attributes('{a="1", b={"x": "}"}, a="\\\\x41", c=\\'}\\'}', 1, 1)
{'a': 'A', 'b': '{"x": "}"}', 'c': '}'}
"""

from __future__ import annotations

from .._errors import HloParseError
from ._token_cursor import GiveUp, TokenCursor, read_attribute, to_the_end
from ._tokenize import json_dict_end
from ._tokens import TokKind

K = TokKind


def frontend_attributes(value: str, line: int, column: int) -> dict[str, str]:
    """The attributes ``value`` (a ``frontend_attributes`` value written from
    ``line:column``) holds."""
    return read_attribute("frontend_attributes", _WHOLE, value, line, column)


def check_frontend_attributes(value: str, line: int, column: int) -> None:
    """Refuse ``value`` as XLA refuses a ``frontend_attributes`` value
    (``frontend_attributes``)."""
    frontend_attributes(value, line, column)


def frontend_attributes_end(text: str, start: int) -> int | None:
    """Where the frontend attributes at ``start`` end, as XLA's reader of them stops (past
    their '}', whatever brackets their values hold), or None where it refuses them."""
    c = TokenCursor(text, 1, 0, start)
    try:
        _attributes(c)
    except (HloParseError, GiveUp):
        return None
    return c.previous_end


def _attributes(c: TokenCursor) -> dict[str, str]:
    """XLA's ``ParseFrontendAttributes`` at the cursor, which it leaves past the ``}``."""
    c.expect(K.kLbrace, "expected '{' to start frontend attributes")
    found: dict[str, str] = {}
    if c.kind != K.kRbrace:
        while True:
            name = c.attribute_name()
            if c.kind == K.kString:
                found[name] = c.string()
            elif c.kind == K.kLbrace:  # XLA's ParseJsonDict
                if (end := json_dict_end(c.text, c.start)) < 0:
                    raise c.error("expects JSON dict")
                found[name] = c.text[c.start:end]
                c.jump(end)
            else:
                raise GiveUp
            if not c.eat(K.kComma):
                break
    c.expect(K.kRbrace, "expects '}' at the end of frontend attributes")
    return found


_WHOLE = to_the_end(_attributes, "expects the frontend attributes to end at their '}'")

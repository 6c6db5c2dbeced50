"""HLO text as XLA's tokens: three columns of kinds and spans, for a parser to walk.

``tokenize`` runs the compiled tokenizer where it was built, else the pure-Python one (the
same tokens; ``_native.TOKENIZER`` says which). A token is its kind (``TokKind``) and its span
``text[start:end]``; values are decoded from the span when asked (``_token_values``). The
span is all the text XLA's lexer consumed for the token: a kName's ``%`` or ``:``, a
kAttributeName's ``=`` and a kString's quotes are in it. An error token spans what XLA's
lexer consumed before failing (at least one character); XLA reports the error at its start.

>>> text = "ROOT %r = f32[8]{0} add(%p, q), x=-1 /* c */"
>>> tokens = tokenize(text)
>>> [TokKind(kind).name for kind in tokens.kinds[:5]], tokens.text(text, 1)
(['kw_ROOT', 'kName', 'kEqual', 'kPrimitiveType', 'kLsquare'], '%r')
>>> [text[s:e] for s, e in zip(tokens.starts[-3:], tokens.ends[-3:])], int(tokens.starts[-1])
(['x=', '-1', ''], 44)
>>> json_dict_end('{"a": {"b": "}"}}, x', 0)
17
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidArgumentError
from . import _native
from ._tokens import DOUBLE_QUOTED, TokKind

__all__ = ["TokKind", "Tokens", "json_dict_end", "tokenize"]


@dataclass(frozen=True, eq=False)
class Tokens:
    """The tokens of a text, in text order, the last one kEof: ``kinds`` (uint8, TokKind
    values), ``starts`` and ``ends`` (int64 offsets into the text), read-only arrays of one
    length."""

    kinds: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.kinds)

    def text(self, text: str, index: int) -> str:
        """The text of token ``index`` (``text`` is the text tokenized)."""
        return text[self.starts[index]:self.ends[index]]


def tokenize(text: str, pos: int = 0) -> Tokens:
    """The tokens of ``text`` from offset ``pos`` on, XLA's lexer's (``hlo_lexer.cc``):
    white space and comments skipped, error tokens where XLA's lexer fails, kEof last."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"tokenize: text must be a str, not {type(text).__name__}")
    if not 0 <= pos <= len(text):
        raise InvalidArgumentError(f"tokenize: pos {pos} is outside the text (0 to {len(text)})")
    kinds, starts, ends = _native.lex(text, pos, 0)
    return Tokens(np.frombuffer(kinds, np.uint8), np.frombuffer(starts, np.int64),
                  np.frombuffer(ends, np.int64))


@functools.cache
def _json_parts() -> re.Pattern[str]:
    """A brace, or a string as XLA's lexer reads one, or a '"' that starts none."""
    return re.compile(r'[{}]|' + DOUBLE_QUOTED + r'|"')


def json_dict_end(text: str, pos: int) -> int:
    """XLA's ``LexJsonDict``: the offset just past the braces opening at ``text[pos]``, where
    braces inside double-quoted strings do not count (no comment is skipped); -1 when no
    ``{`` is there, the braces never close, or a ``"`` opens no string."""
    if not text.startswith("{", pos):
        return -1
    depth = 0
    for part in _json_parts().finditer(text, pos):
        token = part.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return part.end()
        elif token == '"':
            return -1
    return -1

"""The pure-Python tokenizer: one regular expression compiled from the token table's rules.

``lex`` has the signature and answers of the compiled ``_lexer.lex``: the tokens of
``text`` from ``pos`` on, ending with kEof, as three columns of bytes (kinds, one byte each;
starts and ends, native int64). The expression is compiled on first use, so importing the
package does not pay for it.
"""

from __future__ import annotations

import functools
import re
from array import array

from ..groups._text import int64_value
from ._token_values import nan_payload, unescape
from ._tokens import (
    DIM_LABELS,
    DXD,
    FLOAT,
    IDENTIFIER,
    INT,
    KEYWORDS,
    NAN_PAYLOAD,
    NEG_INF,
    NEG_NAN,
    PAD,
    PRIMITIVE_TYPES,
    PUNCTUATION,
    STRING,
    WHITESPACE,
    TokKind,
)

K = TokKind
# White space and comments, as many as follow (a comment holding a NUL is not skipped).
_SKIP = r"(?>[" + WHITESPACE + r"]++|/\*(?:[^*\0]|\*(?!/))*+\*/|//[^\n\r\0]*+(?!\0))*+"
_BLOCK_BODY = r"/\*(?:[^*\0]|\*(?!/))*+"
# Each alternative is one group; the group's number says which rule matched. Order is
# XLA's: identifiers, %names, the number rules at [0-9?-], punctuation, strings, errors.
_RULES: tuple[tuple[str, str], ...] = (
    ("word", IDENTIFIER + r"[:=]?"),
    ("percent", "%" + IDENTIFIER),
    ("arrow", "->"),
    ("float", r"(?=[0-9\-])(?:" + FLOAT + ")"),
    ("dim_labels", r"(?=[0-9?])" + DIM_LABELS),
    ("dxd", DXD),
    ("pad", PAD),
    ("int", INT),
    ("neg_inf", NEG_INF),
    ("neg_nan", NEG_NAN),
    ("dots", re.escape("...")),
    ("leq", "<="),
    ("single", "[" + re.escape("".join(t for t in PUNCTUATION if len(t) == 1)) + "]"),
    ("string", f"(?:{STRING})"),
    ("comment_nul", "(?://[^\\n\\r\\0]*+|" + _BLOCK_BODY + ")(?=\\0)"),
    ("dot_dot", r"\.\."),
    ("other", r"(?s:.)"),
)
_GROUP = {index: name for index, (name, _) in enumerate(_RULES, start=1)}


@functools.cache
def _expressions() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The master expression (white space and comments, then one token), the skip alone, and
    the NaN payload; compiled once, on first use."""
    alternatives = "|".join(f"({pattern})" for _, pattern in _RULES)
    return (re.compile(_SKIP + "(?:" + alternatives + ")"), re.compile(_SKIP),
            re.compile(NAN_PAYLOAD))


@functools.cache
def _words() -> tuple[dict[str, TokKind], re.Pattern[str]]:
    """Reserved words with their kinds, and the dim-labels pattern."""
    words = {word: K.kPrimitiveType for word in PRIMITIVE_TYPES}
    words.update(KEYWORDS)
    return words, re.compile(DIM_LABELS)


def lex(text: str, pos: int, most: int = 0, /) -> tuple[bytes, bytes, bytes]:
    """The tokens of ``text[pos:]``: kinds (one byte each), starts and ends (native int64
    bytes), the last token kEof at the end of the text (with ``most`` > 0, the first
    ``most`` of them)."""
    kinds = bytearray()
    starts = array("q")
    ends = array("q")
    while True:
        kind, start, end, pos = next_token(text, pos)
        kinds.append(kind)
        starts.append(start)
        ends.append(end)
        if kind == K.kEof or len(kinds) == most:
            break
    return bytes(kinds), starts.tobytes(), ends.tobytes()


def next_token(text: str, pos: int, /) -> tuple[int, int, int, int]:
    """The token after white space and comments at ``pos``: its kind, start and end, and
    where lexing resumes after it (its end, or one past the start of a too-long integer);
    kEof, spanning nothing, where only white space and comments are left."""
    master, skip, payload = _expressions()
    found = master.match(text, pos)
    if found is None:  # only white space and comments are left
        start = skip.match(text, pos).end()  # type: ignore[union-attr]
        return K.kEof, start, start, start
    group: int = found.lastindex  # type: ignore[assignment]
    start, end = found.span(group)
    rule = _GROUP[group]
    kind: int
    resume = end
    if rule == "word":
        last = text[end - 1]
        if last == ":":
            kind = K.kName
        elif last == "=":
            kind = K.kAttributeName
        else:
            words, dim_labels = _words()
            word = text[start:end]
            kind = words.get(word, K.kIdent)
            if word == "nan":
                kind, end = _nan(text, end, payload)
                resume = end
            elif kind == K.kIdent and text[start] in "bf":
                labels = dim_labels.match(text, start)
                if labels is not None:
                    kind, end = K.kDimLabels, labels.end()
                    resume = end
    elif rule == "percent":
        kind = K.kName
    elif rule == "int":
        kind = K.kInt if end - start < 19 or int64_value(text[start:end]) is not None \
            else K.kError
        if kind == K.kError:
            end = resume = start + 1
    elif rule == "neg_nan":
        kind, end = _nan(text, end, payload)
        resume = end
    elif rule == "single":
        kind = PUNCTUATION[text[start]]
    elif rule == "string":
        kind = K.kString if "\\" not in text[start:end] or unescape(
            text[start + 1:end - 1]) is not None else K.kError
    elif rule in ("comment_nul", "dot_dot"):
        kind = K.kError
    elif rule == "other":
        kind = K.kQuestionMark if text[start] == "?" else K.kError
    else:
        kind = _FIXED[rule]
    return kind, start, end, resume


_FIXED = {"arrow": K.kArrow, "float": K.kDecimal, "dim_labels": K.kDimLabels, "dxd": K.kDxD,
          "pad": K.kPad, "neg_inf": K.kNegInf, "dots": K.kDots, "leq": K.kLeq}


def _nan(text: str, end: int, payload: re.Pattern[str]) -> tuple[int, int]:
    """(kind, end) of ``nan`` or ``-nan`` ending at ``end``: a kDecimal, with the payload
    ``(0x...)`` that follows; an error where a ``(`` follows that is no valid payload."""
    if not text.startswith("(", end):
        return K.kDecimal, end
    found = payload.match(text, end)
    if found is None or nan_payload(found.group()[3:-1]) is None:
        return K.kError, end
    return K.kDecimal, found.end()

"""Literals as XLA's parser reads them: the one reader of a ``constant(...)`` value.

``read_literal(text, shape)`` reads the literal of ``shape`` written in ``text`` as XLA's
``ParseLiteral`` does (tuples, nested arrays of the shape's rank, ``...`` for elided values,
complex ``(re, im)``, ``nan``, ``nan(0x<payload>)``, ``inf``, ``-inf``) and returns its values
in row-major order, or None where they were elided. It refuses what XLA refuses, in XLA's
words, with the offset of XLA's token (``SyntaxFault``): values out of their type's range
(a cast that overflows, as XLA checks it), NaN payloads a type cannot hold, nesting that does
not match the rank, and counts that do not match the dimensions. As in XLA, the message is
the first problem met, even where XLA reads on past it and fails only later. A value past
the finite range of ``bf16`` or an 8- or 4-bit float is cast to the type as ml_dtypes and
Eigen cast a double (``_cast``) to see whether it rounds back into range.

>>> from meshtopo.hlo import parse_shape
>>> read_literal("{ {1, 2}, {3, -4} }", parse_shape("s32[2,2]"))
[1, 2, 3, -4]
>>> read_literal("-inf", parse_shape("f32[]"))
[-inf]
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import numpy as np

from .._errors import HloParseError, InvalidArgumentError
from ..groups._text import int64_value
from ._element_types import is_float
from ._shape import Shape
from ._shape_syntax import parse_shape, read_shape
from ._syntax import SyntaxFault
from ._token_cursor import TokenCursor
from ._tokens import TokKind
from ._values import flat_value, relocate

K = TokKind
# The tokens that are a scalar value: numbers (``nan`` and ``-nan`` are decimals), infinities
# and booleans.
_NUMBERS = frozenset({K.kDecimal, K.kInt, K.kw_inf, K.kNegInf})
_SCALARS = _NUMBERS | {K.kw_true, K.kw_false}
_PAYLOAD = re.compile(r"-?nan\(0x([0-9a-fA-F]+)\)")
_INTEGRAL_BITS = {f"{sign}{bits}": bits for sign in "su" for bits in (1, 2, 4, 8, 16, 32, 64)}
_NUMPY_FLOATS: dict[str, type[np.floating[Any]]] = {"f16": np.float16, "f32": np.float32,
                                                   "f64": np.float64}
# Mantissa bits of the float types numpy lacks (ml_dtypes' and Eigen's).
_MANTISSA_BITS = {
    "bf16": 7, "f8e3m4": 4, "f8e4m3": 3, "f8e4m3fn": 3, "f8e4m3b11fnuz": 3, "f8e4m3fnuz": 3,
    "f8e5m2": 2, "f8e5m2fnuz": 2, "f8e8m0fnu": 0, "f4e2m1fn": 1,
}  # fmt: skip
# (lowest, highest) finite values of the types numpy lacks (ml_dtypes' finfo).
_ML_RANGES = {
    "bf16": (-3.3895313892515355e38, 3.3895313892515355e38), "f8e3m4": (-15.5, 15.5),
    "f8e4m3": (-240.0, 240.0), "f8e4m3fn": (-448.0, 448.0), "f8e4m3b11fnuz": (-30.0, 30.0),
    "f8e4m3fnuz": (-240.0, 240.0), "f8e5m2": (-57344.0, 57344.0),
    "f8e5m2fnuz": (-57344.0, 57344.0), "f8e8m0fnu": (5.877471754111438e-39, 1.7014118346046923e38),
    "f4e2m1fn": (-6.0, 6.0),
}  # fmt: skip
# Mantissa bits of the types whose NaNs carry a payload (those with infinities, as IEEE's).
_PAYLOAD_BITS = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52, "f8e5m2": 2, "f8e4m3": 3,
                 "f8e3m4": 4}
_COMPONENT = {"c64": "f32", "c128": "f64"}
_QUIET = 1 << 51  # a double's quiet NaN without payload
_DOUBLE_MAX = "1.79769e+308"


class _Failed(Exception):
    """Reading stopped: the first recorded problem is the error."""


class _Reader:
    """One literal's tokens (a cursor over them, ``c``) and XLA's error list: the first
    problem recorded is reported."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.c = TokenCursor(text, 1, 0)  # (offsets in ``text`` as its columns)
        self.problems: list[tuple[str, int]] = []

    def problem(self, message: str, at: int | None = None) -> None:
        self.problems.append((message, self.c.start if at is None else at))

    def fail(self, message: str, at: int | None = None) -> _Failed:
        self.problem(message, at)
        return _Failed()


def read_literal(text: str, shape: Shape, recorded: list[tuple[str, int]] | None = None
                 ) -> list[Any] | None:
    """The values of the literal of ``shape`` written in ``text``, row-major (a tuple's
    leaves one after another), or None where ``...`` elides them; ``SyntaxFault`` at XLA's
    token where XLA refuses it. The first error XLA's parser records in a literal it takes
    (an array's value written without its braces, a tuple's missing ',') is appended to
    ``recorded`` when given, with its offset in ``text``."""
    values, problem = _read(text, shape)
    if problem is not None and recorded is not None:
        recorded.append(problem)
    return values


def check_shaped_literal(value: str, line: int, column: int) -> HloParseError | None:
    """Refuse ``value`` (a custom call's ``literal``, written at ``line``/``column``) as
    XLA's ``ParseLiteral`` refuses it: a shape and its literal, or a tuple of such
    ``( literal, ... )`` (a ',' between elements, its absence recorded and read on past);
    the first error XLA records in a literal it takes (reported if the text is refused
    later), or None."""
    text = flat_value(value)
    reader = _Reader(text)
    try:
        _shaped(reader)
    except _Failed:
        raise relocate(HloParseError(reader.problems[0][0], line,
                                     column + reader.problems[0][1]), value, line, column
                       ) from None
    if not reader.problems:
        return None
    message, at = reader.problems[0]
    return relocate(HloParseError(message, line, column + at), value, line, column)


def _shaped(reader: _Reader) -> None:
    """One literal with its shape written first, or a tuple of them."""
    c = reader.c
    if c.eat(K.kLparen):
        while c.kind != K.kRparen:
            try:
                _shaped(reader)
            except _Failed:
                raise reader.fail("Fails when parsing tuple element") from None
            if not c.eat(K.kComma) and c.kind != K.kRparen:
                reader.problem("expects ',' to separate tuple elements")
        c.lex()
        return
    recorded: list[tuple[str, int]] = []
    end, refused = read_shape(reader.text, c.start, len(reader.text), signature=True,
                              recorded=recorded)
    reader.problems += recorded
    if refused is not None:
        raise reader.fail(*refused)
    shape = parse_shape(reader.text[c.start:end])
    c.jump(end)
    _literal(reader, shape)


@functools.lru_cache(maxsize=4096)
def _read(text: str, shape: Shape) -> tuple[list[Any] | None, tuple[str, int] | None]:
    reader = _Reader(text)
    try:
        values = _literal(reader, shape)
        if reader.c.kind != K.kEof:
            raise reader.fail("expects ')' after constant literal")
    except _Failed:
        message, at = reader.problems[0]
        raise SyntaxFault(message, at) from None
    return values, next(iter(reader.problems), None)


def _literal(reader: _Reader, shape: Shape) -> list[Any] | None:
    if shape.tuple_shapes is None:
        return _dense(reader, shape)
    c = reader.c
    if not c.eat(K.kLparen):
        raise reader.fail("expects '(' in front of tuple elements")
    values: list[Any] | None = []
    if c.kind != K.kRparen:
        for index, element in enumerate(shape.tuple_shapes):
            if index > 0 and not c.eat(K.kComma):
                reader.problem("expects ',' to separate tuple elements")
            try:
                part = _literal(reader, element)
            except _Failed:
                raise reader.fail(f"expects the {index}th element") from None
            values = None if values is None or part is None else values + part
    if c.kind != K.kRparen:
        raise reader.fail(f"expects ')' at the end of the tuple with "
                          f"{len(shape.tuple_shapes)}elements")
    c.lex()
    return values


def _dense(reader: _Reader, shape: Shape) -> list[Any] | None:
    """XLA's ``ParseDenseLiteral``: braces nested to the rank, values counted per
    dimension."""
    dims, rank = shape.dimensions, len(shape.dimensions)
    kind = shape.element_type
    seen = [0] * rank
    values: list[Any] = []
    elided = False
    nest = 0

    def index_text(dim: int) -> str:
        return "[" + ",".join(str(n - 1) for n in seen[:dim]) + "]"

    def one_more() -> bool:
        if rank == 0:
            return True
        if nest != rank:
            reader.problem(f"expects nested array in rank {rank}, but sees {nest}")
            return False
        seen[rank - 1] += 1
        if seen[rank - 1] > dims[rank - 1]:
            reader.problem(f"expects {dims[rank - 1]} elements on the minor-most dimension, "
                           "but sees more")
            return False
        return True

    c = reader.c
    while True:
        token = c.kind
        if token == K.kLbrace:
            nest += 1
            if nest > rank:
                raise reader.fail(f"expects nested array in rank {rank}, but sees larger")
            if nest > 1:
                seen[nest - 2] += 1
                if seen[nest - 2] > dims[nest - 2]:
                    raise reader.fail(f"expects {dims[nest - 2]} elements in the "
                                      f"{index_text(nest - 2)}th element, but sees more")
            c.lex()
        elif token == K.kRbrace:
            if nest == 0:
                raise reader.fail("unexpected '}' token")
            nest -= 1
            if seen[nest] != dims[nest]:
                raise reader.fail(f"expects {dims[nest]} elements in the {index_text(nest)}th "
                                  f"element, but sees {seen[nest]}")
            seen[nest] = 0
            c.lex()
        elif token == K.kLparen:
            if kind not in _COMPONENT:
                raise reader.fail("unexpected '(' in literal. Parens are only valid for "
                                  "complex literals")
            at = c.start
            if not one_more():
                raise _Failed()
            values.append(_complex(reader, kind, shape, len(values), at))
        elif token == K.kDots:
            if nest != 1:
                raise reader.fail(f"expects `...` at nest level 1, but sees it at nest level "
                                  f"{nest}")
            seen[0] = dims[0]
            elided = True
            c.lex()
        elif token == K.kComma:
            c.lex()
        elif token in _SCALARS:
            one_more()
            values.append(_element(reader, shape, len(values)))
            c.lex()
        else:
            raise reader.fail("unexpected token type in a literal")
        if nest == 0:
            return None if elided else values


def _lexed_integer(token: str) -> int | None:
    """The integer XLA's lexer makes of an integer token (``groups._text.int64_value``): in
    int64, or past it as uint64's bits (kept here as the unsigned value); None past uint64 or
    below int64, where the lexer makes an error token."""
    value = int64_value(token)
    if value is None or token.startswith("-"):
        return value
    return value % (1 << 64)


def _element(reader: _Reader, shape: Shape, index: int) -> object:
    """The value of the scalar token at the cursor, checked as XLA's ``SetValueInLiteral``
    checks it."""
    c = reader.c
    kind, token, at = shape.element_type, c.kind, c.start
    integer = _lexed_integer(c.word) if token == K.kInt else None
    if token in (K.kw_true, K.kw_false):
        if kind != "pred":  # XLA stops the process here; refuse instead
            raise reader.fail(f"{kind.upper()} is not PRED type", at)
        value: object = token == K.kw_true
    elif kind == "pred" or kind in _INTEGRAL_BITS:
        if integer is None:
            reader.problem("expects integer", at)
            raise reader.fail(f"expects integer for primitive type: {kind.upper()}", at)
        value = integer
        if value >= 1 << 63:  # XLA's lexer keeps an integer past int64 as uint64's bits
            value -= 1 << 64
        if kind == "pred":
            return value != 0
        _check_integer(reader, value, kind, at)
    elif kind in _NUMPY_FLOATS or kind in _MANTISSA_BITS:
        value = _double(reader, kind)
        _check_float(reader, value, kind, shape, index, at, _payload(c.word))
    else:
        raise reader.fail(f"unsupported primitive type {kind.upper()}", at)
    return value


def _check_integer(reader: _Reader, value: int, kind: str, at: int) -> None:
    bits = _INTEGRAL_BITS[kind]
    if kind[0] == "u":
        upper = (1 << bits) - 1
        if value % (1 << 64) > upper:
            raise reader.fail(f"value {value} is out of range for literal's primitive type "
                              f"{kind.upper()} namely [0, {upper}].", at)
    elif not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise reader.fail(f"value {value} is out of range for literal's primitive type "
                          f"{kind.upper()} namely [{-(1 << (bits - 1))}, "
                          f"{(1 << (bits - 1)) - 1}].", at)


def _double(reader: _Reader, kind: str) -> float:
    """XLA's ``ParseDouble`` of the number token at the cursor (a decimal past a double's
    range is refused)."""
    c = reader.c
    written = c.word
    if c.kind == K.kw_inf:
        return math.inf
    if c.kind == K.kNegInf:
        return -math.inf
    if "nan" in written:
        return -math.nan if written.startswith("-") else math.nan
    value = float(written)
    if math.isinf(value):
        reader.problem(f"Constant is out of range for double (+/-{_DOUBLE_MAX}) and so is "
                       "unparsable.", c.start)
        raise reader.fail(f"expect floating point value for primitive type: {kind.upper()}",
                          c.start)
    return value


def _payload(written: str) -> int | None:
    """The NaN payload of a token written ``nan(0x...)``, or None (another token, or a
    quiet NaN without one)."""
    found = _PAYLOAD.fullmatch(written)
    return None if found is None else int(found.group(1), 16)


def _finite_range(kind: str) -> tuple[float, float]:
    """(lowest, highest) finite values of a float type, as XLA's range check uses them."""
    if kind in _NUMPY_FLOATS:
        info = np.finfo(_NUMPY_FLOATS[kind])
        return float(info.min), float(info.max)
    return _ML_RANGES[kind]


def _cast(value: float, kind: str) -> float:
    """``value``, a double past ``kind``'s finite range, cast to the float type and back as
    XLA's range check casts it (numpy's types by numpy; the others as ml_dtypes and Eigen do:
    ``bf16`` through ``f32``, then rounded to nearest, ties to even): onto the largest finite
    magnitude, or past it (inf or NaN). ``f4e2m1fn``, with neither, saturates;
    ``f8e8m0fnu``, unsigned and without zero, takes any positive value below its least as
    its least and has no value for the others."""
    if kind in _NUMPY_FLOATS:
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.array(value).astype(_NUMPY_FLOATS[kind]))
    low, high = _ML_RANGES[kind]
    if kind == "f4e2m1fn":
        return min(max(value, low), high)
    if kind == "f8e8m0fnu" and value < high:
        return low if value > 0 else math.nan
    if kind == "bf16":
        with np.errstate(over="ignore"):
            value = float(np.float32(value))
    unit = math.ldexp(1.0, math.frexp(high)[1] - 1 - _MANTISSA_BITS[kind])  # at ``high``
    halfway = high + unit / 2
    magnitude = abs(value)
    if magnitude < halfway or (magnitude == halfway and high / unit % 2 == 0):
        return math.copysign(high, value)
    return math.copysign(math.inf, value)


def _check_float(reader: _Reader, value: float, kind: str, shape: Shape, index: int,
                 at: int, payload: int | None) -> None:
    """XLA's range check (a value past the finite range is out of range unless its cast to
    the type rounds back into it) and NaN payload check."""
    low, high = _finite_range(kind)
    if math.isfinite(value) and not low <= value <= high:
        converted = _cast(value, kind)
        if math.isfinite(converted):
            value = converted
        if value > high or value < low:
            raise reader.fail(f"value {value:.6g} is out of range for literal's primitive "
                              f"type {kind.upper()} namely [{low:.6g}, {high:.6g}].", at)
    if payload is None or not math.isnan(value):
        return
    where = f"to a literal in shape {shape.human_string} at linear index {index}"
    if kind in _PAYLOAD_BITS:
        largest = (1 << _PAYLOAD_BITS[kind]) - 1
        if payload != _QUIET and payload > largest:
            raise reader.fail(f"tries to set NaN payload {payload:#x} {where}, but the NaN "
                              f"payload is out of range ({largest:#x})", at)
    elif payload != _QUIET:
        raise reader.fail(f"tries to set NaN payload {payload:#x} {where}, but {kind} does "
                          "not support payloads", at)


def _complex(reader: _Reader, kind: str, shape: Shape, index: int, at: int) -> complex:
    """``(re, im)`` at the cursor's ``(``: each part a double, range-checked against the
    component type."""
    c = reader.c
    parts: list[float] = []
    c.lex()
    for closing, refusal in ((K.kComma, "expect comma after real part of complex literal"),
                             (K.kRparen, "expect ')' after complex number")):  # XLA's words
        if c.kind not in _NUMBERS:
            raise reader.fail("expects decimal or integer")
        parts.append(_double(reader, kind))
        c.lex()
        if not c.eat(closing):
            raise reader.fail(refusal)
    low, high = _finite_range(_COMPONENT[kind])
    for name, part in zip(("real", "imaginary"), parts, strict=True):
        if math.isfinite(part) and not low <= part <= high:
            raise reader.fail(f"{name} part {part:.6g} is out of range for literal's "
                              f"primitive type {kind.upper()}, namely [{low:.6g}, {high:.6g}].",
                              at)
    return complex(parts[0], parts[1])


def literal_array(text: str, dtype: np.dtype, dimensions: tuple[int, ...]) -> np.ndarray:
    """The array a ``constant(...)`` literal writes, of ``dimensions`` and ``dtype`` (read by
    ``read_literal``); ``InvalidArgumentError`` when it holds another number of values or
    elides them."""
    kind = ("pred" if dtype == np.bool_ else "f64" if is_float(dtype)
            else "c128" if dtype.kind == "c" else "s64" if dtype.kind == "i" else "u64")
    shape = Shape(kind, tuple(dimensions), (False,) * len(dimensions))
    size = int(np.prod(dimensions, dtype=np.int64))
    try:
        values = read_literal(text, shape)
    except SyntaxFault as fault:
        raise InvalidArgumentError(f"literal {text!r}: {fault.message}") from None
    if values is None or len(values) != size:
        count = "elided" if values is None else len(values)
        raise InvalidArgumentError(
            f"literal {text!r} has {count} values, its shape {list(dimensions)} needs {size}")
    return np.array(values).astype(dtype).reshape(dimensions)


"""A token's value, decoded from its span of the text when asked (never stored per token).

Each function takes the text and the token's ``start`` and ``end`` and returns the value XLA's
lexer holds for that token kind (``GetStrVal``, ``GetInt64Val``, ``GetDecimalVal``).

>>> name_value("%add.1 = ", 0, 6), name_value("x: f32[]", 0, 2), int_value("[-12]", 1, 4)
('add.1', 'x', -12)
>>> string_value(r'"a\\x41\\u00e9\\101"', 0, 17), int_value("18446744073709551615", 0, 20)
('aAéA', -1)
"""

from __future__ import annotations

import re
import struct

from .._errors import InvalidArgumentError
from ..groups._text import int64_value
from ._tokens import NAN_PAYLOAD_MAX

_SIMPLE = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "?": 63,
           "'": 39, '"': 34}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"
_QUIET_NAN = 1 << 51


def unescape(raw: str) -> bytes | None:
    """``raw`` (a string token's text between its quotes) with its C escapes decoded, as
    absl's ``CUnescape`` decodes them, or None where ``CUnescape`` fails (an unknown escape,
    an octal or ``\\x`` value past 0xff, ``\\u`` without 4 hex digits, ``\\U`` past
    0x10FFFF, a surrogate)."""
    out = bytearray()
    end = len(raw)
    at = 0
    while True:
        slash = raw.find("\\", at)
        if slash < 0:
            out += raw[at:].encode("utf-8", "surrogateescape")
            return bytes(out)
        out += raw[at:slash].encode("utf-8", "surrogateescape")
        p = slash + 1
        if p >= end:
            return None
        char = raw[p]
        if char in _SIMPLE:
            out.append(_SIMPLE[char])
        elif char in _OCTAL:
            last = p
            while last < end - 1 and last < p + 2 and raw[last + 1] in _OCTAL:
                last += 1
            value = int(raw[p:last + 1], 8)
            if value > 0xFF:
                return None
            out.append(value)
            p = last
        elif char in "xX":
            if p >= end - 1 or raw[p + 1] not in _HEX:
                return None
            value = 0
            while p < end - 1 and raw[p + 1] in _HEX:
                p += 1
                value = ((value << 4) + int(raw[p], 16)) & 0xFFFFFFFF
            if value > 0xFF:
                return None
            out.append(value)
        elif char in "uU":
            digits = 4 if char == "u" else 8
            if p + digits >= end:
                return None
            rune = 0
            for _ in range(digits):
                if raw[p + 1] not in _HEX:
                    return None
                p += 1
                rune = (rune << 4) + int(raw[p], 16)
                if rune > 0x10FFFF:
                    return None
            if 0xD800 <= rune <= 0xDFFF:
                return None
            out += chr(rune).encode("utf-8")
        else:
            return None
        at = p + 1


def string_value(text: str, start: int, end: int) -> str:
    """The value of the kString token ``text[start:end]``: its escapes decoded; bytes that
    are no UTF-8 (``"\\377"``) come back as surrogate escapes, so nothing is lost."""
    value = unescape(text[start + 1:end - 1])
    if value is None:
        raise InvalidArgumentError(f"{text[start:end]!r} is not a kString token (an escape "
                                   "CUnescape refuses)")
    return value.decode("utf-8", "surrogateescape")


def name_value(text: str, start: int, end: int) -> str:
    """The name of a kName (``%add.1``, ``x:``) or kAttributeName (``dimensions=``) token,
    without its ``%``, ``:`` or ``=``."""
    if text[start] == "%":
        return text[start + 1:end]
    return text[start:end - 1] if text[end - 1] in ":=" else text[start:end]


def int_value(text: str, start: int, end: int) -> int:
    """XLA's int64 value of the kInt token ``text[start:end]``: a decimal past int64's
    maximum (up to uint64's) is the int64 of the same bits."""
    value = int64_value(text[start:end])
    if value is None:
        raise InvalidArgumentError(f"{text[start:end]!r} is not a kInt token (out of int64's "
                                   "minimum to uint64's maximum)")
    return value


_NAN = re.compile(r"(-?)nan(?:\(0x([0-9a-fA-F]+)\))?")


def nan_payload(hex_digits: str) -> int | None:
    """The payload of ``nan(0x<hex_digits>)``, or None when it is out of 1 to 2**52 - 1."""
    value = int(hex_digits, 16)
    return value if 0 < value <= NAN_PAYLOAD_MAX else None


def decimal_value(text: str, start: int, end: int) -> float:
    """The value of the kDecimal token ``text[start:end]``: a decimal, or ``nan``/``-nan``
    with its payload (a quiet NaN without one)."""
    token = text[start:end]
    found = _NAN.fullmatch(token)
    if found is None:
        return float(token)
    payload = _QUIET_NAN if found.group(2) is None else nan_payload(found.group(2))
    if payload is None:
        raise InvalidArgumentError(f"{token!r} is not a kDecimal token (a NaN payload "
                                   "out of 1 to 2**52 - 1)")
    bits = (1 << 63 if found.group(1) else 0) | 0x7FF << 52 | payload
    value: float = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return value

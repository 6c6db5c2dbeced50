"""Quantities written by people: sizes (``1GiB``), bandwidths (``400Gb/s``), times (``3.4us``).

Everything inside the topology package is in bytes, bytes per second and seconds; these readers
turn text (or plain numbers, taken as already in those units) into floats.

>>> parse_size("64MiB"), parse_bandwidth("400Gb/s"), parse_seconds("3.4us")
(67108864, 50000000000.0, 3.4e-06)
"""

from __future__ import annotations

import math
import re

from .._errors import InvalidArgumentError

_NUMBER = r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*"
_SIZE_UNITS = {
    "": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "k": 2**10, "m": 2**20, "g": 2**30,
}  # fmt: skip
_RATE_UNITS = {
    "b/s": 1.0, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
    "bit/s": 1 / 8, "kbit/s": 1e3 / 8, "mbit/s": 1e6 / 8, "gbit/s": 1e9 / 8, "tbit/s": 1e12 / 8,
    "gbps": 1e9 / 8, "mbps": 1e6 / 8, "tbps": 1e12 / 8,
}  # fmt: skip
_TIME_DIVISORS = {"s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "ns": 1e9}


def _split(text: str, what: str) -> tuple[float, str]:
    match = re.fullmatch(_NUMBER + r"([A-Za-zµ/]*)\s*", text)
    if not match:
        raise InvalidArgumentError(f"{what}: expected a number with a unit, got {text!r}")
    return float(match.group(1)), match.group(2)


def _checked(value: float, what: str, text: object) -> float:
    if not math.isfinite(value) or value < 0:
        raise InvalidArgumentError(f"{what} must be a finite non-negative number, got {text!r}")
    return value


def parse_size(text: str | int | float, what: str = "size") -> int:
    """Bytes from ``1GiB``, ``64MiB``, ``4e9``, ``512`` (decimal units kB..TB, binary KiB..TiB;
    a bare ``K``/``M``/``G`` is binary, as nccl-tests' ``-b``/``-e`` read it)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return int(_checked(float(text), what, text))
    value, unit = _split(str(text), what)
    scale = _SIZE_UNITS.get(unit.lower())
    if scale is None:
        raise InvalidArgumentError(f"{what}: unknown size unit {unit!r} in {text!r}")
    return int(_checked(value * scale, what, text))


def parse_bandwidth(text: str | int | float, what: str = "bandwidth") -> float:
    """Bytes per second from ``900GB/s`` (bytes), ``400Gb/s`` or ``400Gbps`` (bits), or a
    plain number of bytes per second. A capital ``B`` is bytes, a small ``b`` bits."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return _checked(float(text), what, text)
    value, unit = _split(str(text), what)
    key = unit.lower()
    if key.endswith("b/s") and not key.endswith("bit/s") and unit[-3] == "b":
        key = key[:-3] + "bit/s"  # 400Gb/s is bits
    scale = _RATE_UNITS.get(key)
    if scale is None:
        raise InvalidArgumentError(f"{what}: unknown bandwidth unit {unit!r} in {text!r}")
    return _checked(value * scale, what, text)


def parse_seconds(text: str | int | float, what: str = "latency") -> float:
    """Seconds from ``3.4us``, ``1ms``, ``2e-6`` (a plain number is seconds)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return _checked(float(text), what, text)
    value, unit = _split(str(text), what)
    divisor = _TIME_DIVISORS.get(unit.lower() if unit != "µs" else unit)
    if divisor is None:
        raise InvalidArgumentError(f"{what}: unknown time unit {unit!r} in {text!r}")
    return _checked(value / divisor, what, text)


def format_size(size: float) -> str:
    """``512 B``, ``64.0 MiB``, ``1.50 GiB``: binary units, as nccl-tests sizes are."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} TiB"


def format_seconds(value: float) -> str:
    """``1.23 ms``, ``45.6 us``, ``2.000 s``; ``-`` for NaN (a model that does not apply)."""
    if math.isnan(value):
        return "-"
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} us"

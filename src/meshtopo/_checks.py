"""What counts as an int taken from a caller: a Python or numpy integer, never a bool.

``True`` is an ``int`` to Python, never a count, id or size to meshtopo. Every check of an
int from input reads ``is_int`` or ``as_int`` here.

>>> is_int(3), is_int(np.int32(3)), is_int(True), is_int(3.0)
(True, True, False, False)
>>> as_int(np.int64(4), "replica_count", minimum=1)
4
>>> as_int(0, "replica_count", minimum=1)
Traceback (most recent call last):
...
meshtopo._errors.InvalidArgumentError: replica_count must be a positive int, got 0
"""

from __future__ import annotations

from typing import TypeGuard

import numpy as np

from ._errors import InvalidArgumentError


def is_int(value: object) -> TypeGuard[int | np.integer]:
    """True for a Python or numpy integer that is not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _rule(minimum: int | None) -> str:
    if minimum is None:
        return "an int"
    if minimum == 0:
        return "a non-negative int"
    if minimum == 1:
        return "a positive int"
    return f"an int >= {minimum}"


def as_int(value: object, what: str, minimum: int | None = None) -> int:
    """``value`` as a Python int when ``is_int(value)`` and it is at least ``minimum`` (when
    given); else ``InvalidArgumentError`` "<what> must be <a positive int, a non-negative int,
    an int >= minimum or an int>, got <value>"."""
    if not is_int(value) or (minimum is not None and value < minimum):
        raise InvalidArgumentError(f"{what} must be {_rule(minimum)}, got {value!r}")
    return int(value)

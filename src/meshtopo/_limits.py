"""The limits on sizes taken from input, checked before anything is allocated.

Every count that comes from text or from a caller (devices in a tile, ids in a group list,
replicas x partitions) passes through ``check_size`` first, so ``[1000000000,1000000000]<=[...]``
is refused at once instead of exhausting memory. The default is 2**26 devices.

The collective limit bounds how many collectives one program may issue in the order layer's
walk (loops and calls expanded); the default is 1,000,000.

>>> with device_limit(16):
...     check_size(32, "the tile [4,8]")
Traceback (most recent call last):
...
meshtopo._errors.LimitError: the tile [4,8] has 32 elements, more than the device limit of 16; raise it with meshtopo.set_device_limit(n) or meshtopo.device_limit(n)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator

from ._checks import is_int
from ._errors import LimitError

DEFAULT_DEVICE_LIMIT = 2**26
DEFAULT_COLLECTIVE_LIMIT = 1_000_000
_device_limit = DEFAULT_DEVICE_LIMIT
_collective_limit = DEFAULT_COLLECTIVE_LIMIT


def _positive(limit: int, what: str) -> int:
    if not is_int(limit) or limit < 1:
        raise LimitError(f"{what} must be a positive int, got {limit!r}")
    return int(limit)


def get_device_limit() -> int:
    """The largest number of devices (elements) an input may ask for."""
    return _device_limit


def set_device_limit(limit: int) -> None:
    """Set the device limit for the whole process; ``limit`` must be a positive int."""
    global _device_limit
    _device_limit = _positive(limit, "device limit")


@contextlib.contextmanager
def device_limit(limit: int) -> Iterator[None]:
    """Use ``limit`` as the device limit inside a ``with`` block, restoring the old one after."""
    previous = _device_limit
    set_device_limit(limit)
    try:
        yield
    finally:
        set_device_limit(previous)


def get_collective_limit() -> int:
    """The largest number of collectives one program may issue in ``mt.order``'s walk
    (``LimitError`` past it)."""
    return _collective_limit


def set_collective_limit(limit: int) -> None:
    """Set the collective limit for the whole process; ``limit`` must be a positive int."""
    global _collective_limit
    _collective_limit = _positive(limit, "collective limit")


@contextlib.contextmanager
def collective_limit(limit: int) -> Iterator[None]:
    """Use ``limit`` as the collective limit inside a ``with`` block, restoring the old one
    after."""
    previous = _collective_limit
    set_collective_limit(limit)
    try:
        yield
    finally:
        set_collective_limit(previous)


def check_size(count: int, what: str) -> int:
    """Return ``count`` if it is within the device limit, else raise ``LimitError`` naming ``what``."""
    if count > _device_limit:
        raise LimitError(
            f"{what} has {count} elements, more than the device limit of {_device_limit}; "
            "raise it with meshtopo.set_device_limit(n) or meshtopo.device_limit(n)"
        )
    return count


def checked_product(sizes: Iterable[int], what: str) -> int:
    """The product of ``sizes`` as a Python int, refused with ``LimitError`` past the limit."""
    return check_size(math.prod(sizes), what)

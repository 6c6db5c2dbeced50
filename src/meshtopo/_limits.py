"""The limits on sizes taken from input, checked before anything is allocated.

Every count that comes from text or from a caller (devices in a tile, ids in a group list,
replicas x partitions) passes through ``check_size`` first, so ``[1000000000,1000000000]<=[...]``
is refused at once instead of exhausting memory. The default is 2**26 devices.

The collective limit bounds how many collectives one program may issue in the order layer's
walk (loops and calls expanded); the default is 1,000,000. The trip limit bounds how many
iterations of one loop the walk counts past those it expands (a loop still running then has an
unknown trip count); the default is 100,000.

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
DEFAULT_TRIP_LIMIT = 100_000


class _Limit:
    """One process-wide limit: its current ``value`` (a positive int) and what it is called in
    errors."""

    def __init__(self, default: int, what: str) -> None:
        self.value = default
        self.what = what

    def set(self, limit: int) -> None:
        """Make ``limit`` the value; ``LimitError`` unless it is a positive int."""
        if not is_int(limit) or limit < 1:
            raise LimitError(f"{self.what} must be a positive int, got {limit!r}")
        self.value = int(limit)

    @contextlib.contextmanager
    def within(self, limit: int) -> Iterator[None]:
        """``limit`` as the value inside a ``with`` block, the old one restored after."""
        previous = self.value
        self.set(limit)
        try:
            yield
        finally:
            self.set(previous)


_DEVICES = _Limit(DEFAULT_DEVICE_LIMIT, "device limit")
_COLLECTIVES = _Limit(DEFAULT_COLLECTIVE_LIMIT, "collective limit")
_TRIPS = _Limit(DEFAULT_TRIP_LIMIT, "trip limit")


def get_device_limit() -> int:
    """The largest number of devices (elements) an input may ask for."""
    return _DEVICES.value


def set_device_limit(limit: int) -> None:
    """Set the device limit for the whole process; ``limit`` must be a positive int."""
    _DEVICES.set(limit)


def device_limit(limit: int) -> contextlib.AbstractContextManager[None]:
    """Use ``limit`` as the device limit inside a ``with`` block, restoring the old one after."""
    return _DEVICES.within(limit)


def get_collective_limit() -> int:
    """The largest number of collectives one program may issue in ``mt.order``'s walk
    (``LimitError`` past it)."""
    return _COLLECTIVES.value


def set_collective_limit(limit: int) -> None:
    """Set the collective limit for the whole process; ``limit`` must be a positive int."""
    _COLLECTIVES.set(limit)


def collective_limit(limit: int) -> contextlib.AbstractContextManager[None]:
    """Use ``limit`` as the collective limit inside a ``with`` block, restoring the old one
    after."""
    return _COLLECTIVES.within(limit)


def get_trip_limit() -> int:
    """The most iterations of one loop ``mt.order``'s walk counts: a loop that runs past the
    iterations the walk expands is counted on until its condition ends it or this many
    iterations have run, and one still running then has an unknown trip count."""
    return _TRIPS.value


def set_trip_limit(limit: int) -> None:
    """Set the trip limit for the whole process; ``limit`` must be a positive int."""
    _TRIPS.set(limit)


def trip_limit(limit: int) -> contextlib.AbstractContextManager[None]:
    """Use ``limit`` as the trip limit inside a ``with`` block, restoring the old one after."""
    return _TRIPS.within(limit)


def check_size(count: int, what: str) -> int:
    """Return ``count`` if it is within the device limit, else raise ``LimitError`` naming ``what``."""
    limit = _DEVICES.value
    if count > limit:
        raise LimitError(
            f"{what} has {count} elements, more than the device limit of {limit}; "
            "raise it with meshtopo.set_device_limit(n) or meshtopo.device_limit(n)"
        )
    return count


def checked_product(sizes: Iterable[int], what: str) -> int:
    """The product of ``sizes`` as a Python int, refused with ``LimitError`` past the limit."""
    return check_size(math.prod(sizes), what)

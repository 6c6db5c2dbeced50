"""The cyclic garbage collector while many long-lived objects are made.

Reading a 10 MB module makes some 200,000 objects that live as long as the module; a Flight
Recorder dump or a pass makes as many. With the collector running as usual, every young
collection walks them again as they age, and the full collections their growing number sets
off walk the whole heap. Paused without more, they are all left young, and the first
collection after the work walks them all at once, long out of the cache: on a real
``jit(grad)`` dump that walk alone was a third of the reading time.

``paused()`` pauses the collector and gives ``settle``, which the work calls between its
pieces: once more than ``BATCH`` objects are young, it collects the young generations while
they are still in the cache, which moves what survives to the old generation. A caller who
had the collector off keeps it off: ``settle`` then does nothing.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

BATCH = 20_000


def _settle() -> None:
    if gc.get_count()[0] > BATCH:
        gc.collect(1)


def _stay_off() -> None:
    pass


@contextlib.contextmanager
def paused() -> Iterator[Callable[[], None]]:
    """Pause the cyclic garbage collector for the block and give ``settle`` (see the module
    docstring); the collector's state is restored afterwards, whatever the block raises."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield _settle if enabled else _stay_off
    finally:
        if enabled:
            gc.enable()

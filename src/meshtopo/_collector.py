"""The cyclic garbage collector paused while many long-lived objects are made.

Reading a 10 MB module makes some 200,000 objects that live as long as the module; a Flight
Recorder dump or a pass makes as many. With the collector running, its young collections
walk them again and again as they age, and the full collections their growing number sets
off walk the whole heap: on a real ``jit(grad)`` dump that made reading about 40% slower.
Paused, they are walked once, by the first collection after the work.

Collecting them in batches while they are made, still in the cache, does not pay: each
batch moved to the old generation brings the next full collection nearer, and on that dump
the one it set off right after the read cost as much as the batches saved.
"""

from __future__ import annotations

import gc
from types import TracebackType


class paused:  # lower case: used as ``with paused():``, as a function would be
    """Pause the cyclic garbage collector for the block; a collector that was on is turned
    back on afterwards, whatever the block raises, and one that was off stays off (a class,
    not a generator: it is entered once per computation read on use)."""

    __slots__ = ("_enabled",)

    def __enter__(self) -> None:
        self._enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._enabled:
            gc.enable()

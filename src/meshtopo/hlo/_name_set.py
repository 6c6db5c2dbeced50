"""The names of a computation's instructions read so far, in bounded memory (the stream)."""

from __future__ import annotations

import numpy as np


class NameSet:
    """The names of a computation's instructions read so far, for XLA's checks between them,
    as 64-bit hashes: all but the recent ones are merged into a sorted numpy array (8 bytes a
    name), so that memory grows by 8 bytes per instruction of the largest computation, not by
    its text. Once names have been merged, a one-byte-a-slot filter of their hashes (8 MB)
    answers most lookups of a name never seen without searching the array. The stream keeps
    no instructions and uses it; a whole text uses a ``set``."""

    _MERGE = 1 << 12
    _FILTER_BITS = 23

    def __init__(self) -> None:
        self._recent: set[int] = set()
        self._merged = np.empty(0, dtype=np.int64)
        self._filter: bytearray | None = None

    def __contains__(self, name: str) -> bool:
        key = hash(name)
        if key in self._recent:
            return True
        seen = self._filter
        if seen is None or not seen[key & ((1 << self._FILTER_BITS) - 1)]:
            return False
        merged = self._merged
        at = int(merged.searchsorted(key))
        return at < merged.size and int(merged[at]) == key

    def add(self, name: str) -> None:
        """Remember ``name``."""
        self._recent.add(hash(name))
        if len(self._recent) >= self._MERGE:
            added = np.sort(np.fromiter(self._recent, dtype=np.int64, count=len(self._recent)))
            merged = np.concatenate((self._merged, added))
            merged.sort(kind="stable")  # two sorted runs: a linear merge
            self._merged = merged
            if self._filter is None:
                self._filter = bytearray(1 << self._FILTER_BITS)
            seen = np.frombuffer(self._filter, dtype=np.uint8)
            seen[added & ((1 << self._FILTER_BITS) - 1)] = 1
            self._recent = set()

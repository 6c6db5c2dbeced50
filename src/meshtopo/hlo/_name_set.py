"""The names of a computation's instructions read so far, for XLA's checks between them."""

from __future__ import annotations

import numpy as np


class NameSet:
    """The names of a computation's instructions read so far. ``compact`` (the stream, which
    keeps no instructions) holds 64-bit hashes instead and merges all but the recent ones into
    a sorted numpy array (8 bytes a name), so that its memory grows by 8 bytes per instruction
    of its largest computation, not by its text."""

    _MERGE = 1 << 12

    def __init__(self, compact: bool) -> None:
        self._compact = compact
        self._names: set[str] = set()
        self._recent: set[int] = set()
        self._merged = np.empty(0, dtype=np.int64)

    def __contains__(self, name: str) -> bool:
        if not self._compact:
            return name in self._names
        key = hash(name)
        if key in self._recent:
            return True
        merged = self._merged
        if not merged.size:
            return False
        at = int(np.searchsorted(merged, key))
        return at < merged.size and int(merged[at]) == key

    def add(self, name: str) -> None:
        if not self._compact:
            self._names.add(name)
            return
        self._recent.add(hash(name))
        if len(self._recent) >= self._MERGE:
            added = np.sort(np.fromiter(self._recent, dtype=np.int64, count=len(self._recent)))
            merged = np.concatenate((self._merged, added))
            merged.sort(kind="stable")  # two sorted runs: a linear merge
            self._merged = merged
            self._recent = set()

"""The names of a computation's instructions read so far, in bounded memory (the stream)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class NameSet:
    """The names of a computation's instructions read so far, for XLA's checks between them,
    as 64-bit hashes: all but the recent ones are merged into a sorted numpy array (8 bytes a
    name), so that memory grows by about 10 bytes per instruction of the largest computation,
    not by its text. A one-bit-a-slot filter of the merged hashes, 16 slots a name, answers
    most lookups of a name never seen without searching the array. The stream keeps no
    instructions and uses it; a whole text uses a ``set``."""

    _MERGE = 1 << 12

    def __init__(self) -> None:
        self._recent: set[int] = set()
        self._merged = np.empty(0, dtype=np.int64)
        self._filter = bytearray(1)
        self._mask = 7  # slots - 1

    def __contains__(self, name: object) -> bool:
        key = hash(name)
        if key in self._recent:
            return True
        slot = key & self._mask
        if not self._filter[slot >> 3] >> (slot & 7) & 1:
            return False
        merged = self._merged
        at = int(merged.searchsorted(key))
        return at < merged.size and int(merged[at]) == key

    def issuperset(self, names: Iterable[str]) -> bool:
        """True when every one of ``names`` is here (as ``set.issuperset``)."""
        return all(name in self for name in names)

    def add(self, name: str) -> None:
        """Remember ``name``."""
        self._recent.add(hash(name))
        if len(self._recent) < self._MERGE:
            return
        added = np.sort(np.fromiter(self._recent, dtype=np.int64, count=len(self._recent)))
        merged = np.concatenate((self._merged, added))
        merged.sort(kind="stable")  # two sorted runs: a linear merge
        self._merged = merged
        self._recent = set()
        if 8 * len(self._filter) < 16 * merged.size:  # grow, and mark every merged hash again
            self._filter = bytearray(1 << int(2 * merged.size - 1).bit_length())
            self._mask = 8 * len(self._filter) - 1
            added = merged
        slots = added & self._mask
        np.bitwise_or.at(np.frombuffer(self._filter, dtype=np.uint8), slots >> 3,
                         np.left_shift(1, slots & 7).astype(np.uint8))

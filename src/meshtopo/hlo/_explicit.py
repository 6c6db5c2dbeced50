"""Explicit replica-group lists in XLA's printed form: checked when read, converted on use.

XLA prints explicit groups as ``{{0,1,2,3},{4,5,6,7}}``: numbers of 1 to 18 digits joined by
commas, groups joined by ``},{``, no spaces. A dump that names thousands of devices per
collective repeats such texts (often each one different). ``_explicit_scan`` (compiled) is
the one scanner of that form: ``groups_end`` finds where such groups end (the reader's fast
path cuts them off a line with it) and ``groups_arrays`` converts them. ``explicit_list``
checks a whole text and returns a device list converted on first use: every id of a text in
the form is an integer XLA reads, so reading the module refuses nothing that conversion
could refuse later.

A text in any other form (spaces, comments, signs, empty groups, numbers of 19 digits or more,
non-ASCII digits) or naming more ids than the device limit gets None: the exact reader then
reads it and reports what is wrong with line and column, so this module only decides how
fast a list is read.

>>> explicit_list("{{0,1},{2,3}}").replica_groups
[[0, 1], [2, 3]]
>>> explicit_list("{{0,1},{}}"), explicit_list("{{1, 2}}")
(None, None)
"""

from __future__ import annotations

import numpy as np

from .._limits import get_device_limit
from ..groups._device_list import CollectiveDeviceList
from ._native import groups_arrays, groups_end


def explicit_list(text: str, checked: bool = False,
                  span: tuple[int, int] | None = None) -> CollectiveDeviceList | None:
    """The device list of ``text`` (of ``text[start:stop]`` for a ``span``) in XLA's printed
    explicit form, or None (see the module docstring); ``checked`` says it is already known
    to be in that form. The list keeps ``text`` to convert it from on first use."""
    start, stop = (0, len(text)) if span is None else span
    if not checked and groups_end(text, start) != stop:
        return None
    limit = get_device_limit()
    if ((stop - start) // 2 > limit
            and text.count(",", start, stop) - text.count("},{", start, stop) + 1 > limit):
        return None
    return CollectiveDeviceList.from_written(text, start, stop, _arrays)


def _arrays(text: str, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """(all ids, each group's size) of ``text[start:stop]``, in XLA's printed explicit form."""
    ids, sizes = groups_arrays(text, start, stop)  # type: ignore[misc]
    return np.frombuffer(ids, dtype=np.int64), np.frombuffer(sizes, dtype=np.int64)

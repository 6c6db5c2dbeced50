"""Explicit replica-group lists in XLA's printed form: checked by one regex, converted on use.

XLA prints explicit groups as ``{{0,1,2,3},{4,5,6,7}}``: digits and commas, groups joined by
``},{``, no spaces. A dump that names thousands of devices per collective repeats such texts
(often each one different). ``explicit_list`` checks a text against ``EXPLICIT_GROUPS`` (the
reader's fast path matches the same pattern as it reads a line) and returns a device list
whose ids numpy converts on first use: every id of a text that matches is an integer XLA
reads, so reading the module refuses nothing that conversion could refuse later.

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

import re
from functools import partial

import numpy as np

from .._device_list import CollectiveDeviceList
from .._limits import get_device_limit
from ._syntax import EXPLICIT_GROUPS

_EXPLICIT_GROUPS = re.compile(EXPLICIT_GROUPS)


def explicit_list(text: str, checked: bool = False) -> CollectiveDeviceList | None:
    """The device list of ``text`` in XLA's printed explicit form, or None (see the module
    docstring); ``checked`` says ``text`` already matched ``EXPLICIT_GROUPS``."""
    if not checked and _EXPLICIT_GROUPS.fullmatch(text) is None:
        return None
    limit = get_device_limit()
    if len(text) // 2 > limit and text.count(",") - text.count("},{") + 1 > limit:
        return None
    return CollectiveDeviceList.deferred(partial(_arrays, text))


def _arrays(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(all ids, each group's size) of a text that matched ``EXPLICIT_GROUPS``."""
    body = text[2:-2]
    if "}" not in body:
        flat = np.fromstring(body, dtype=np.int64, sep=",")
        return flat, np.array([flat.size], dtype=np.int64)
    sizes = np.array([group.count(",") + 1 for group in body.split("},{")], dtype=np.int64)
    return np.fromstring(body.replace("},{", ","), dtype=np.int64, sep=","), sizes

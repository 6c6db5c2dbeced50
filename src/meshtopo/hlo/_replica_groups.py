"""The one reader of a ``replica_groups`` value, in any of XLA's encodings (an explicit list
of lists, an iota list, a mesh): XLA's ``ParseCollectiveDeviceListBase``.

>>> decode_groups("[2,2]<=[4]", 1, 1).replica_groups
[[0, 1], [2, 3]]
>>> decode_groups("{{0,1},}", 3, 20)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:27: expects a list to end with kRbrace
"""

from __future__ import annotations

from .._errors import HloParseError, InvalidArgumentError, LimitError
from ..groups._device_list import CollectiveDeviceList
from ..groups._text import WHITESPACE
from ._explicit import explicit_list
from ._int_lists import parse_int_lists


def decode_groups(text: str, line: int, column: int) -> CollectiveDeviceList:
    """``replica_groups=`` in any encoding, ``text`` (no comments: ``flat_value``) starting
    at ``line``:``column``; errors point into the input. An explicit list is read by the one
    reader of a list of integer lists (``parse_int_lists``, in XLA's words), an iota list or
    a mesh by ``CollectiveDeviceList.parse``."""
    groups = explicit_list(text) if len(text) > 256 else None
    if groups is not None:
        return groups
    try:
        if text.lstrip(WHITESPACE).startswith("{"):
            return CollectiveDeviceList(parse_int_lists(text, line, column))
        return CollectiveDeviceList.parse(text, line, column)
    except LimitError as error:
        raise LimitError(f"{line}:{column}: replica_groups: {error}") from None
    except InvalidArgumentError as error:
        raise HloParseError(
            f"error parsing attribute replica_groups: {error}", line, column) from None

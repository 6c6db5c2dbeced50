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

import re

from .._errors import HloParseError, InvalidArgumentError, LimitError
from ..groups._device_list import CollectiveDeviceList
from ._explicit import explicit_list
from ._values import parse_int_lists

_LONG_NUMBER = re.compile(r"[0-9]{20,}")


def decode_groups(text: str, line: int, column: int) -> CollectiveDeviceList:
    """``replica_groups=`` in any encoding, ``text`` starting at ``line``:``column``; errors
    point into the input."""
    groups = explicit_list(text) if len(text) > 256 else None
    if groups is not None:
        return groups
    try:
        return CollectiveDeviceList.parse(text, line, column)
    except LimitError as error:
        raise LimitError(f"{line}:{column}: replica_groups: {error}") from None
    except HloParseError as error:
        if text.lstrip().startswith("{"):  # XLA's words: its reader of a list of lists
            try:
                parse_int_lists(text, line, column)
            except HloParseError as xla_words:
                if (xla_words.line, xla_words.column) == (error.line, error.column):
                    raise xla_words from None
        raise
    except InvalidArgumentError as error:
        raise HloParseError(
            f"error parsing attribute replica_groups: {error}", line, column) from None
    except ValueError:  # an integer too long for int() to convert
        found = _LONG_NUMBER.search(text)
        at = column + (found.start() if found else 0)
        raise HloParseError("an integer in replica groups does not fit in int64", line,
                            at) from None

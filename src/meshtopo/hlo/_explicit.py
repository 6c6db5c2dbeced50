"""Long explicit replica-group lists decoded with numpy, many at a time.

XLA prints explicit groups as ``{{0,1,2,3},{4,5,6,7}}``: digits and commas, groups joined by
``},{``, no spaces. A dump that names thousands of devices per collective repeats such texts
(often each one different); the decoder reads each long one here:

- a list of one group is checked with a few string searches (its edges are digits, nothing
  numpy would skip or read as a sign) and converted by ``np.fromstring``, which refuses
  anything else (``,,``, letters);
- lists of several groups are joined and checked at once on their bytes (each brace part of a
  ``d},{d``), converted by one ``np.fromstring`` and split back into one
  ``CollectiveDeviceList`` per text, so a dump of many small groups costs a few numpy calls.

A text in any other form (spaces, signs, empty groups, numbers of 19 digits or more, more ids
than the device limit, non-ASCII) gets None: the exact reader then reads it and reports what
is wrong with line and column, so this module only decides how fast a list is read.

>>> [d.replica_groups for d in decode_explicit_lists(["{{0,1},{2,3}}", "{{3,2,1}}"])]
[[[0, 1], [2, 3]], [[3, 2, 1]]]
>>> decode_explicit_lists(["{{0,1},{}}", "{{1, 2}}"])
[None, None]
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from .._device_list import CollectiveDeviceList
from .._limits import get_device_limit

_QUIET_FROMSTRING = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
_LARGEST = 10**18  # numbers of 19 digits may not fit int64: the exact reader decides
_COMMA, _OPEN, _CLOSE = 44, 123, 125
_BRACES_TO_SPACES = str.maketrans("{}", "  ")


def decode_explicit_lists(texts: Sequence[str]) -> list[CollectiveDeviceList | None]:
    """The device list of each ``{{...},...}`` text, or None where the exact reader must
    read it (see the module docstring)."""
    results: list[CollectiveDeviceList | None] = [None] * len(texts)
    chosen: list[int] = []
    bodies: list[str] = []
    for i, text in enumerate(texts):
        if len(text) > 4 and text[:2] == "{{" and text[-2:] == "}}" and text.isascii():
            body = text[2:-2]
            if "}" in body or "{" in body:
                chosen.append(i)
                bodies.append(body)
            else:  # one group: numpy reads it directly
                results[i] = _one_group(body)
    if not chosen:
        return results
    read = _read_bodies(bodies)
    if read is None:  # some text is not in XLA's form: find which, one by one
        if len(chosen) > 1:
            for i in chosen:
                results[i] = decode_explicit_lists([texts[i]])[0]
        return results
    flat, counts, sizes, rows = read
    too_big = (np.maximum.reduceat(flat, np.cumsum(counts) - counts) >= _LARGEST
               if flat.size and flat.max() >= _LARGEST else np.zeros(counts.size, dtype=bool))
    limit = get_device_limit()
    first = row = 0
    for i, count, rows_i, big in zip(chosen, counts.tolist(), rows.tolist(), too_big.tolist(),
                                     strict=True):
        if not big and count <= limit:
            results[i] = CollectiveDeviceList.from_flat(
                flat[first:first + count], sizes[row:row + rows_i])
        first += count
        row += rows_i
    return results


def _one_group(body: str) -> CollectiveDeviceList | None:
    """``{{body}}`` for a body of digits and commas, or None."""
    if not (body[:1].isdigit() and body[-1:].isdigit()) or _unexpected(body):
        return None
    # numpy refuses ",," and other characters; the edges are digits, so nothing is dropped.
    flat = _numbers(body)
    if flat is None or flat.max() >= _LARGEST or flat.size > get_device_limit():
        return None
    return CollectiveDeviceList(flat.reshape(1, -1))


def _unexpected(text: str) -> bool:
    """True when ``text`` holds what numpy's reader would skip or read as a sign (the lists
    XLA prints have none of it): a sign, white space, or any non-ASCII character, since
    numpy reads other Unicode digits as numbers and XLA reads only [0-9])."""
    return (not text.isascii() or "-" in text or " " in text or "+" in text or "\t" in text
            or "\r" in text or "\x0b" in text or "\x0c" in text)


def _read_bodies(
    bodies: list[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(all numbers, numbers per body, every group's size, groups per body) of the bodies
    (the texts without their outer braces), or None unless every body is well formed: digits
    and commas, groups joined by "},{", each group and number non-empty."""
    # Every body starts and ends with a digit (so no group is empty at an edge, and no
    # "},{" spans two bodies).
    if not all(body[:1].isdigit() and body[-1:].isdigit() for body in bodies):
        return None
    joined = ",".join(bodies)
    if _unexpected(joined):
        return None
    counts = np.array([body.count(",") + 1 for body in bodies], dtype=np.int64)
    if "}" not in joined and "{" not in joined:
        flat = _numbers(joined)
        # numpy refuses ",," and other characters; a trailing comma shows in the count.
        if flat is None or flat.size != int(counts.sum()):
            return None
        return flat, counts, counts, np.ones(counts.size, dtype=np.int64)
    data = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    closing = np.flatnonzero(data == _CLOSE)
    opening = np.flatnonzero(data == _OPEN)
    # Each brace is part of "d},{d": a group closes after a number, the next opens before one.
    if not (opening.size == closing.size and np.array_equal(opening, closing + 2)
            and _digits(data[closing - 1]) and (data[closing + 1] == _COMMA).all()
            and _digits(data[opening + 1])):
        return None
    flat = _numbers(joined.translate(_BRACES_TO_SPACES))
    if flat is None or flat.size != int(counts.sum()):
        return None
    # The number before a "}" is the k-th of all numbers, k = the commas before it.
    group_ends = np.searchsorted(np.flatnonzero(data == _COMMA), closing) + 1
    lengths = np.array([len(body) for body in bodies], dtype=np.int64)
    starts = np.cumsum(lengths + 1) - (lengths + 1)
    owner = np.searchsorted(starts, closing, side="right") - 1
    rows = np.bincount(owner, minlength=counts.size).astype(np.int64) + 1
    bounds = np.sort(np.concatenate([np.cumsum(counts) - counts, group_ends]))
    sizes = np.diff(np.append(bounds, flat.size))
    return flat, counts, sizes, rows


def _digits(values: np.ndarray) -> bool:
    return bool(((values >= 48) & (values <= 57)).all())


def _numbers(text: str) -> np.ndarray | None:
    """The comma-separated numbers of ``text``; None if numpy cannot read it to its end."""
    try:
        if _QUIET_FROMSTRING:
            return np.fromstring(text, dtype=np.int64, sep=",")
        with warnings.catch_warnings():  # numpy 1.x warns instead of raising
            warnings.simplefilter("ignore")
            return np.fromstring(text, dtype=np.int64, sep=",")
    except ValueError:
        return None

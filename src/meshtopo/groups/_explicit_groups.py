"""Explicit replica groups (``{{0,1},{2,3}}``): the two forms a device list holds them in, and
their readers.

``ExplicitArrays`` holds all ids concatenated and each group's size as read-only int64 arrays;
``WrittenGroups`` holds the text a reader already checked, converted on first use.

>>> explicit_text_arrays("{{0,1},{2}}")
ExplicitArrays(flat=array([0, 1, 2]), sizes=array([2, 1]))
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .._checks import is_int
from .._errors import InvalidArgumentError
from .._limits import check_size
from ._text import WHITESPACE, Scanner

# An explicit list of int lists with numbers of at most 18 digits (so they fit in int64),
# with the scanner's white space: what ``read_explicit`` reads to the same lists.
_S = f"[{WHITESPACE}]*"
_GROUP = rf"\{{{_S}(?:-?[0-9]{{1,18}}{_S}(?:,{_S}-?[0-9]{{1,18}}{_S})*)?\}}"
_EXPLICIT = re.compile(rf"\{{{_S}(?:{_GROUP}{_S}(?:,{_S}{_GROUP}{_S})*)?\}}{_S}\Z")
_GROUP_BODY = re.compile(r"\{([^{}]*)\}")
_DIGITS = re.compile(r"[0-9]+")


# (all ids concatenated, each group's size) from explicit groups written in ``text[start:stop]``.
Converter = Callable[[str, int, int], "tuple[np.ndarray, np.ndarray]"]


class ExplicitArrays(NamedTuple):
    """Explicit groups: all ids concatenated and each group's size (read-only int64)."""

    flat: np.ndarray
    sizes: np.ndarray


class WrittenGroups(NamedTuple):
    """Explicit groups as written in ``text[start:stop]``, already checked well formed by a
    reader, that ``convert(text, start, stop)`` turns into ``ExplicitArrays``' two arrays."""

    text: str
    start: int
    stop: int
    convert: Converter


def read_only(array: np.ndarray) -> np.ndarray:
    """``array`` (made here, shared with no caller) marked read-only."""
    array.setflags(write=False)
    return array


def read_only_copy(array: np.ndarray) -> np.ndarray:
    """``array`` when already read-only, else a read-only copy (a caller's array stays
    writable and cannot change the list)."""
    return array if not array.flags.writeable else read_only(array.copy())


def explicit_arrays(groups: object) -> tuple[np.ndarray, np.ndarray]:
    """(flat ids, sizes) from a list of int lists or a 2-D int array, validated."""
    if isinstance(groups, np.ndarray):
        if groups.ndim != 2 or not np.issubdtype(groups.dtype, np.integer):
            raise InvalidArgumentError(
                f"replica groups as an array must be 2-D ints, got shape {list(groups.shape)} "
                f"of {groups.dtype}"
            )
        check_size(int(groups.size), "the replica groups")
        flat = read_only(groups.astype(np.int64).reshape(-1))  # astype copies
        return flat, read_only(np.full(groups.shape[0], groups.shape[1], dtype=np.int64))
    if isinstance(groups, str | bytes) or not hasattr(groups, "__iter__"):
        raise InvalidArgumentError(
            f"replica groups must be a list of int lists, got {groups!r}; "
            "use CollectiveDeviceList.parse for text"
        )
    parts: list[list[object] | tuple[object, ...]] = []
    for group in groups:  # type: ignore[attr-defined,unused-ignore]
        if isinstance(group, str | bytes) or not hasattr(group, "__iter__"):
            raise InvalidArgumentError(f"each replica group must be a list of ints, got {group!r}")
        parts.append(group if isinstance(group, list | tuple) else list(group))
    sizes = [len(ids) for ids in parts]
    total = check_size(sum(sizes), "the replica groups")
    # One pass over the element types (in C), not an isinstance per id.
    if not all(kind is int or (kind is not bool and issubclass(kind, np.integer))
               for kind in set(map(type, itertools.chain.from_iterable(parts)))):
        for ids in parts:
            for value in ids:
                if not is_int(value):
                    raise InvalidArgumentError(
                        f"replica group {list(ids)!r} must hold ints, got {value!r}")
    try:
        flat = np.fromiter(itertools.chain.from_iterable(parts), dtype=np.int64, count=total)
    except OverflowError:
        raise InvalidArgumentError(f"replica group ids must fit in int64, got {groups!r}") from None
    return read_only(flat), read_only(np.array(sizes, dtype=np.int64))


def read_explicit(scanner: Scanner) -> list[list[int]]:
    """Read ``{{a,b},{c}}`` with exact error positions (the slow path for unusual text)."""
    scanner.expect("{")
    groups: list[list[int]] = []
    total = 0
    if scanner.accept("}"):
        return groups
    while True:
        if not scanner.peek("{"):
            raise scanner.error(
                f"expected '{{' to start a replica group but found {scanner.describe_next()}"
            )
        groups.append(scanner.integer_list("{", "}"))
        total += len(groups[-1])
        check_size(total, "the replica groups")
        if scanner.accept("}"):
            return groups
        scanner.expect(",")


def is_explicit_text(text: str) -> bool:
    """True when ``text`` (stripped) is well-formed explicit groups ``{{0,1},{2,3}}`` whose ids
    fit in int64, which ``explicit_text_arrays`` converts in one pass."""
    return text.startswith("{") and _EXPLICIT.match(text) is not None


def explicit_text_arrays(text: str) -> ExplicitArrays:
    """The arrays of well-formed explicit text (``is_explicit_text``): one regex pass, then
    numpy conversion."""
    bodies = _GROUP_BODY.findall(text[1:-1] if text.endswith("}") else text)
    sizes = np.fromiter(
        (body.count(",") + 1 if _DIGITS.search(body) else 0 for body in bodies),
        dtype=np.int64,
        count=len(bodies),
    )
    total = check_size(int(sizes.sum()), "the replica groups")
    joined = ",".join(body for body, size in zip(bodies, sizes, strict=True) if size)
    flat = np.array(joined.split(","), dtype=np.int64) if total else np.empty(0, np.int64)
    return ExplicitArrays(read_only(flat), read_only(sizes))

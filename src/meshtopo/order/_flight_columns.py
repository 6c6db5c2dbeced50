"""A Flight Recorder dump read into columns: of each entry only the fields matching reads and
the one frame the report names, as ids into the dump's distinct values.

``Columns.ids[e, c]`` is the id in ``Columns.values`` of entry ``e``'s field ``FIELDS[c]``
(-1 when the entry lacks it); columns ``FILENAME`` and ``LINE`` hold the ``filename`` and
``line`` (0 when absent) of the entry's user frame: the first of its ``frames`` (innermost
first) outside ``torch/distributed``, -1 when it has none. A value's id is given on first
sight, an entry's fields in ``FIELDS`` order, a list's or tuple's items before it; two values
share an id when they are equal and of the same types throughout (``1``, ``True`` and ``1.0``
do not). The matcher converts each distinct value once, not each entry's.

A pickle is read by a decoder that builds no object but these values (``_flight_scan.c``):
the frames' dicts and the fields matching does not read are walked over, never made. It reads
the pickles torch writes (protocol 2, and the protocols 2 to 5 Python writes for dicts, lists,
tuples, strings, numbers, booleans and None), and declines anything else: then, or where it
was not built (``MESHTOPO_PURE_PYTHON=1`` chooses this on purpose), Python's unpickler reads the
dump, restricted to those plain values (it refuses every opcode that would import or call
anything, which ``pickle.load`` does not), and ``columns`` extracts the same ids. Either way a
dump that is not one is refused with one message naming the file: both readers take the same
dumps and give the same columns, and the refusals are the unpickler's and ``columns``'s.

Bound: O(bytes) to decode; memory O(bytes) for one dump at a time. The compiled decoder
keeps no tree: it walks the opcodes once, keeping only the memo entries a later opcode fetches
(shared strings and frames), a record of 4 bytes a column for each entry, and the distinct
values, so decoding one torch dump peaks near 1.5x its bytes, the bytes included
(``benchmarks._fr_memory`` measures it).
"""

from __future__ import annotations

import io
import json
import pickle
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InvalidArgumentError
from .._pure_python import chosen, compiled

FIELDS = ("process_group", "profiling_name", "is_p2p", "collective_seq_id", "p2p_seq_id",
          "pg_id", "state", "input_sizes", "input_dtypes", "output_sizes")
FILENAME = len(FIELDS)
LINE = FILENAME + 1
WIDTH = LINE + 1
MAX_DEPTH = 32  # how deeply a field's value may nest lists and tuples
_LIBRARY = "torch/distributed"  # frames in this path are torch's own, never the user's

_scan: Callable[[bytes, tuple[str, ...], str, int], tuple[list[Any], bytes, Any, Any] | None
                ] | None
_scan = compiled(f"{__package__}._flight_scan", "scan")
DECODER = "pure Python" if _scan is None else "native"


@dataclass(frozen=True)
class Columns:
    """One rank's entries as ids into ``values`` (module docstring), and its dump's
    ``pg_config`` and ``pg_status`` (None when absent)."""

    values: list[Any]
    ids: np.ndarray
    pg_config: Any
    pg_status: Any


def read_dump(file: Path) -> Columns:
    """One dump, pickle or JSON, as columns; a file that is not one is refused naming it."""
    data = file.read_bytes()
    if data[:1] != b"\x80":
        try:
            dump = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise InvalidArgumentError(
                f"{file}: not a Flight Recorder dump (pickle or JSON): {error}") from None
        return columns(dump, file)
    if _scan is not None and not chosen():
        found = _scan(data, FIELDS, _LIBRARY, MAX_DEPTH)
        if found is not None:
            values, ids, config, status = found
            return Columns(values, np.frombuffer(ids, dtype=np.int32).reshape(-1, WIDTH),
                           config, status)
    return columns(_unpickle(data, file), file)


class _PlainValues(pickle.Unpickler):
    """Python's unpickler building only dicts, lists, tuples, strings, numbers, booleans and
    None: every opcode that names a class or function to import comes here and is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(
            f"it names {module}.{name}, and a dump holds only dicts, lists, tuples, strings, "
            f"numbers, booleans and None")


def _unpickle(data: bytes, file: Path) -> Any:
    try:
        return _PlainValues(io.BytesIO(data)).load()
    except Exception as error:  # any failure of the unpickler on these bytes is a refusal
        raise InvalidArgumentError(
            f"{file}: not a Flight Recorder dump (pickle or JSON): {error}") from None


class _Distinct:
    """Ids of distinct values, given on first sight (module docstring)."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._ids: dict[tuple[object, ...], int] = {}

    def id(self, value: Any, depth: int = 0) -> int:
        kind = type(value)
        if kind is list or kind is tuple:
            if depth == MAX_DEPTH:
                raise _Refused(f"nests lists and tuples more than {MAX_DEPTH} deep")
            key: tuple[object, ...] = (kind, tuple(self.id(v, depth + 1) for v in value))
        elif kind is float:
            key = (kind, struct.pack(">d", value))
        elif kind is str or kind is int or kind is bool or value is None:
            key = (kind, value)
        else:
            raise _Refused(f"holds a {kind.__name__} (a field's value is made of strings, "
                           f"numbers, booleans, None, lists and tuples)")
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.values)
            self.values.append(value)
        return found


class _Refused(Exception):
    """A value ``columns`` refuses; the caller says where."""


def columns(dump: Any, source: object) -> Columns:
    """The columns of a dump read as Python values (a pickle's or JSON's): a dict with
    ``entries``, a list of dicts. O(entries x fields)."""
    if type(dump) is not dict or "entries" not in dump:
        raise InvalidArgumentError(f"{source}: not a Flight Recorder dump (no 'entries')")
    entries = dump["entries"] or []
    if type(entries) is not list:
        raise InvalidArgumentError(
            f"{source}: not a Flight Recorder dump ('entries' is a "
            f"{type(entries).__name__}, not a list)")
    distinct = _Distinct()
    ids = np.full((len(entries), WIDTH), -1, dtype=np.int32)
    for index, entry in enumerate(entries):
        if type(entry) is not dict:
            raise InvalidArgumentError(
                f"{source}: entry {index} is a {type(entry).__name__}, not a dict")
        row = ids[index]
        field = ""
        try:
            for column, field in enumerate(FIELDS):
                if field in entry:
                    row[column] = distinct.id(entry[field])
            field = "frames"
            frame = _user_frame(entry.get("frames"))
            if frame is not None:
                row[FILENAME] = distinct.id(frame[0])
                row[LINE] = distinct.id(frame[1])
        except _Refused as error:
            raise InvalidArgumentError(f"{source}: entry {index}: {field} {error}") from None
    return Columns(distinct.values, ids, dump.get("pg_config"), dump.get("pg_status"))


def _user_frame(frames: Any) -> tuple[str, Any] | None:
    """The ``filename`` and ``line`` (0 when absent) of the first frame outside
    ``torch/distributed``; None when there is none."""
    if not frames:
        return None
    if type(frames) is not list:
        raise _Refused(f"is a {type(frames).__name__}, not a list")
    for frame in frames:
        if type(frame) is not dict:
            raise _Refused(f"holds a {type(frame).__name__}, not a dict")
        filename = frame.get("filename", "")
        if type(filename) is not str:
            raise _Refused(f"holds a filename that is a {type(filename).__name__}, not a "
                           f"string")
        if _LIBRARY not in filename:
            return filename, frame.get("line", 0)
    return None

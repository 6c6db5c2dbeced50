"""``collective_events``: the events of a PyTorch profiler trace that ``_traces`` reads, without
building the rest of the trace.

A trace holds every operator, kernel and memory event of the profiled steps; the collectives
are a small part of it. The events kept are the complete (``"ph": "X"``) events whose ``args``
carry ``Collective name`` (``record_param_comms`` and the GPU kernels of the same collectives)
and, in a trace that has none of these, the ``gloo:<op>`` events (torch writes a collective's
arguments for NCCL; on gloo it records only the op, ``_traces``); when any kept collective
event is a GPU one (``cat`` ``kernel`` or ``gpu_user_annotation``), the CPU ones are not kept
(``_traces`` prefers the GPU span).

Each such event is found by its marker in the text (``"Collective name"``, a ``"name"`` whose
value starts ``"gloo:``) and cut out between the braces around it: an event is an object whose
fields before ``args`` are scalars and whose ``args`` are flat (strings, numbers, lists), as
torch's Chrome trace writer lays them out. Where the events cut are less than ``1/CUT_WHEN``
of the text (a real training step's operators and kernels around them), they are decoded by
one ``json.loads`` and the trace's ``distributedInfo`` and ``host_name`` where they stand.
Otherwise (a trace of collectives alone), and where the text is laid out otherwise (an event
that does not decode, a marker inside a string, a kept event that is not ``"ph": "X"``), the
whole trace is parsed and the same events taken from it: the answer is the same either way,
only the time differs. A text that does not end its top-level object (a cut file) is refused
as the full parse refuses it.

The events go to the caller as columns (``TraceEvents``): of each kept event, the id of its
value of each of ``KEYS`` (``EVENT_KEYS`` and its ``args``' ``ARG_KEYS``) among the trace's
distinct values, which are decoded once each. A native scanner (``_trace_scan.c``) finds and
reads them from the file's bytes, never decoding the text, as the cut does, and returns only
numbers: the ids, and per distinct value where its text lies, its kind and an integer's value;
the strings, floats (numpy, from their text) and lists are decoded here. It declines (and the
text is read here) wherever its reading could differ: a byte outside ASCII, an escape in a
kept event, a number beyond int64, or anything the cut would not take.
``MESHTOPO_PURE_PYTHON=1``, or a build without it, reads here always; the answers are the
same.

Bound: O(bytes) of searching (``str.find``, no per-byte Python) plus the decoding of the kept
events (the whole trace's decoding on a trace of collectives, or on the fallback); natively,
O(distinct values) of Python and numpy over the kept events.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InvalidArgumentError
from .._pure_python import compiled

GPU_CATEGORIES = ("kernel", "gpu_user_annotation")
# Cut events out only when they are less than this fraction of the text: cutting one costs
# about what parsing one to three events does, so a trace that is mostly collectives parses
# faster whole.
CUT_WHEN = 4
_GZIP = b"\x1f\x8b"
_OPEN = re.compile(r"\s*\{")
_CLOSE = re.compile(r"\}\s*\Z")
_COMMS = '"Collective name"'
_GLOO = '"gloo:'
_CATEGORY = re.compile(r'"cat":\s*"([^"\\]*)"')
_DECODER = json.JSONDecoder()
EVENT_KEYS = ("name", "ph", "cat", "ts", "dur")
ARG_KEYS = ("Collective name", "Process Group Name", "Process Group Ranks", "Seq",
            "In msg nelems", "Out msg nelems", "dtype", "Input Dims", "Input type")
KEYS = EVENT_KEYS + ARG_KEYS
INT, FLOAT, OTHER = 1, 2, 3  # kinds of a value: an integer within int64, another number, else
_STRING = 0  # the native scanner's kind of a string without escapes (OTHER once decoded)
_INT64 = (-(2**63), 2**63)


class _Absent:
    """The value of a key an event lacks."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
_Spans = tuple[int, int] | None
_scan: Callable[[bytes | memoryview, tuple[str, ...], tuple[str, ...], int],
                tuple[int, bytes, bytes, bytes, bytes, _Spans, _Spans] | None] | None
_scan = compiled(f"{__package__}._trace_scan", "scan")
SCANNER = "pure Python" if _scan is None else "native"


@dataclass(frozen=True)
class TraceEvents:
    """The kept events of one trace (in file order) as columns: ``ids[e, k]`` is the index in
    ``values`` of event ``e``'s value of ``KEYS[k]``, -1 where the event lacks the key (values
    written alike share an id; equal values written otherwise may not). Per value, ``kinds``
    says whether it is an integer within int64 (``INT``; ``integers`` holds it), another
    number (``FLOAT``) or anything else (``OTHER``), and ``numbers`` holds either kind of
    number as a float (NaN for ``OTHER``). Also the trace's ``distributedInfo`` ({} when
    absent) and ``host_name`` ("" when absent)."""

    ids: np.ndarray
    values: list[Any]
    kinds: np.ndarray
    integers: np.ndarray
    numbers: np.ndarray
    info: dict[str, Any]
    host: str

    def column(self, key: str) -> list[Any]:
        """Each event's value of ``key`` (one of ``KEYS``), ``ABSENT`` where it lacks it."""
        values = [*self.values, ABSENT]
        return [values[i] for i in self.ids[:, KEYS.index(key)].tolist()]


class TraceReader:
    """Reads traces one after another through one buffer, which grows to the largest file:
    a plain file's bytes are copied into it from the page cache, not into new memory each
    time (a gzip file is decompressed into new memory)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def read(self, file: Path) -> TraceEvents:
        """The kept events of the trace ``file`` (``collective_events``)."""
        data = self._contents(file)
        scanned = _scanned(data)
        if scanned is not None:
            return scanned
        return _read_text(file, bytes(data))

    def _contents(self, file: Path) -> bytes | memoryview:
        """The file's bytes (decompressed), a plain file's in the buffer."""
        try:
            with open(file, "rb", buffering=0) as handle:
                size = os.fstat(handle.fileno()).st_size
                if len(self._buffer) <= size:  # grown by an eighth more: traces differ little
                    self._buffer = bytearray(size + size // 8 + 1)
                view = memoryview(self._buffer)
                got = 0
                while got < len(view):
                    count = handle.readinto(view[got:])
                    if not count:
                        break
                    got += count
                data: bytes | memoryview = view[:got]
                if got == len(view):  # the file grew after its size was read
                    data = bytes(data) + handle.read()
            return gzip.decompress(data) if data[:2] == _GZIP else data
        except OSError as error:
            raise InvalidArgumentError(
                f"{file}: cannot be read: {error.strerror or error}") from None
        except (EOFError, gzip.BadGzipFile) as error:
            raise InvalidArgumentError(f"{file}: truncated gzip: {error}") from None


def collective_events(file: Path) -> TraceEvents:
    """The kept events of the trace ``file`` (plain or gzip; module docstring), refused with
    the file's name when it is not a profiler trace."""
    return TraceReader().read(file)


def _read_text(file: Path, data: bytes) -> TraceEvents:
    """The kept events of the trace whose bytes are ``data``, read in Python."""
    text = _text(file, data)
    fast = _cut(text)
    if fast is not None:
        return fast
    trace = _parse(file, text)
    events = [e for e in trace["traceEvents"] if _kept(e)]
    if any("Collective name" in e["args"] for e in events):
        events = [e for e in events if "Collective name" in e["args"]]
    if any(_on_gpu(e) for e in events if "Collective name" in e["args"]):
        events = [e for e in events if "Collective name" not in e["args"] or _on_gpu(e)]
    info = trace.get("distributedInfo")
    return dataclasses.replace(_columns(events), info=info if isinstance(info, dict) else {},
                               host=str(trace.get("host_name") or ""))


def _bytes(file: Path) -> bytes:
    """The file's bytes (decompressed)."""
    return bytes(TraceReader()._contents(file))


def _text(file: Path, data: bytes | None = None) -> str:
    try:
        return (_bytes(file) if data is None else data).decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidArgumentError(f"{file}: not a profiler trace (JSON): {error}") from None


def _scanned(data: bytes | memoryview) -> TraceEvents | None:
    """The native scanner's reading of ``data``; None where it declines (module docstring)."""
    found = None if _scan is None else _scan(data, EVENT_KEYS, ARG_KEYS, CUT_WHEN)
    if found is None:
        return None
    count, id_bytes, kind_bytes, span_bytes, integer_bytes, info_span, host_span = found
    try:
        info = {} if info_span is None else json.loads(bytes(data[slice(*info_span)]))
        host = "" if host_span is None else json.loads(bytes(data[slice(*host_span)]))
    except ValueError:
        return None
    if not isinstance(info, dict):
        return None
    kinds = np.frombuffer(kind_bytes, dtype=np.int8)
    spans = np.frombuffer(span_bytes, dtype=np.int64).reshape(-1, 2)
    integers = np.frombuffer(integer_bytes, dtype=np.int64)
    numbers = integers.astype(np.float64)
    floats = np.flatnonzero(kinds == FLOAT)
    numbers[floats] = _parsed_floats(data, spans[floats])
    values = np.empty(kinds.size, dtype=object)
    values[kinds == INT] = integers[kinds == INT].tolist()
    values[floats] = numbers[floats].tolist()
    for kind, decode in ((_STRING, lambda text: str(text[1:-1], "ascii")),
                         (OTHER, json.loads)):
        chosen = np.flatnonzero(kinds == kind)
        for index, (a, b) in zip(chosen.tolist(), spans[chosen].tolist(), strict=True):
            values[index] = decode(bytes(data[a:b]))  # one object each, lists included
    kinds = np.where(kinds == _STRING, OTHER, kinds).astype(np.int8)
    ids = np.frombuffer(id_bytes, dtype=np.int32).reshape(count, len(KEYS))
    return TraceEvents(ids, values.tolist(), kinds, integers, numbers, info, str(host or ""))


def _parsed_floats(data: bytes | memoryview, spans: np.ndarray) -> np.ndarray:
    """The numbers whose JSON texts lie at ``spans`` of ``data``, parsed by numpy (as
    ``float`` parses them: correctly rounded; overflow gives infinity, as json's does)."""
    if not spans.size:
        return np.zeros(0)
    lengths = spans[:, 1] - spans[:, 0]
    width = int(lengths.max())
    offsets = np.arange(width)
    text = np.frombuffer(data, dtype=np.uint8)[
        np.minimum(spans[:, :1] + offsets, len(data) - 1)]
    text[offsets >= lengths[:, None]] = 0
    with np.errstate(over="ignore"):
        return text.view(f"S{width}").ravel().astype(np.float64)


def _columns(events: list[dict[str, Any]]) -> TraceEvents:
    """Kept events (each ``_kept``) as ``TraceEvents`` (without info or host): values equal
    and of the same type share an id."""
    ids: dict[tuple[object, ...], int] = {}
    values: list[Any] = []

    def id_of(value: Any) -> int:
        kind = type(value)
        key = (kind, value) if kind in (str, int, bool) or value is None else (kind, repr(value))
        found = ids.get(key)
        if found is None:
            found = ids[key] = len(values)
            values.append(value)
        return found

    rows = [[id_of(e[k]) if k in e else -1 for k in EVENT_KEYS]
            + [id_of(e["args"][k]) if k in e["args"] else -1 for k in ARG_KEYS]
            for e in events]
    kinds = np.array([INT if type(v) is int and _INT64[0] <= v < _INT64[1] else
                      FLOAT if type(v) is float else OTHER for v in values], dtype=np.int8)
    integers = np.array([v if k == INT else 0 for v, k in zip(values, kinds.tolist(), strict=True)],
                        dtype=np.int64)
    numbers = np.array([float(v) if k != OTHER else np.nan
                        for v, k in zip(values, kinds.tolist(), strict=True)], dtype=np.float64)
    return TraceEvents(np.array(rows, dtype=np.int32).reshape(len(events), len(KEYS)), values,
                       kinds, integers, numbers, {}, "")


def _parse(file: Path, text: str) -> dict[str, Any]:
    """The whole trace, as JSON."""
    try:
        trace = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidArgumentError(f"{file}: not a profiler trace (JSON): {error}") from None
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise InvalidArgumentError(f"{file}: not a profiler trace (no 'traceEvents' list)")
    return trace


def _cut(text: str) -> TraceEvents | None:
    """The kept events cut out of the text and decoded together; None where they are not
    less than ``1/CUT_WHEN`` of it or the text is not laid out as the module docstring says
    (the caller then parses all of it)."""
    events_at = text.find('"traceEvents"')
    if _OPEN.match(text) is None or _CLOSE.search(text, max(0, len(text) - 4096)) is None \
            or events_at < 0:
        return None
    spans: list[tuple[int, int]] = []
    kinds: list[str] = []  # "gloo", "gpu" or "cpu" (a collective's CPU record)
    markers = [(at, False) for at in _found(text, _COMMS)]
    if not markers:
        markers = [(at, True) for at in _found(text, _GLOO)
                   if text[max(0, at - 64):at].rstrip().endswith('"name":')]
    for at, gloo in markers:
        if gloo:
            start = text.rfind("{", 0, at)
            args = text.find('"args"', at)
            args_open = text.find("{", args)
            kind = "gloo"
        else:
            args_open = text.rfind("{", 0, at)
            start = text.rfind("{", 0, args_open)
            category = _CATEGORY.search(text, start, args_open)
            kind = "gpu" if category is not None and category.group(1).lower() in \
                GPU_CATEGORIES else "cpu"
        args_close = text.find("}", args_open)
        end = text.find("}", args_close + 1)
        if min(start, args_open, args_close, end) < 0:
            return None
        if spans and spans[-1] == (start, end + 1):
            continue  # one event, two markers
        spans.append((start, end + 1))
        kinds.append(kind)
    if "gpu" in kinds:
        spans = [span for span, kind in zip(spans, kinds, strict=True) if kind != "cpu"]
    if CUT_WHEN * sum(b - a for a, b in spans) >= len(text):
        return None
    try:
        events = json.loads("[" + ",".join(text[a:b] for a, b in spans) + "]")
        outside = (spans[-1][1] if spans else events_at, events_at)
        info = _field(text, "distributedInfo", {}, outside)
        host = _field(text, "host_name", "", outside)
    except (json.JSONDecodeError, ValueError):
        return None
    if not all(_kept(e) for e in events) or not isinstance(info, dict):
        return None
    return dataclasses.replace(_columns(events), info=info, host=str(host or ""))


def _found(text: str, marker: str) -> Iterator[int]:
    """Where ``marker`` occurs in ``text``, in order."""
    at = text.find(marker)
    while at >= 0:
        yield at
        at = text.find(marker, at + len(marker))


def _field(text: str, key: str, default: Any, outside: tuple[int, int]) -> Any:
    """The value of the top-level ``key`` (its last occurrence: torch writes these after or
    before the events, never inside one), ``default`` when absent. ``outside`` is (where the
    last event cut ends, where ``traceEvents`` starts): the key is looked for after the first,
    else before the second, so the events between are not searched."""
    after, before = outside
    at = text.rfind(f'"{key}"', after)
    if at < 0:
        at = text.rfind(f'"{key}"', 0, before)
    if at < 0:
        return default
    colon = text.index(":", at) + 1
    while text[colon] in " \t\r\n":
        colon += 1
    return _DECODER.raw_decode(text, colon)[0]


def _kept(event: Any) -> bool:
    if not isinstance(event, dict) or event.get("ph") != "X":
        return False
    args = event.get("args")
    if not isinstance(args, dict):
        return False
    name = event.get("name")
    return "Collective name" in args or (isinstance(name, str) and name.startswith("gloo:"))


def _on_gpu(event: dict[str, Any]) -> bool:
    return str(event.get("cat", "")).lower() in GPU_CATEGORIES

"""``collective_events``: the events of a PyTorch profiler trace that ``_traces`` reads, without
building the rest of the trace.

A trace holds every operator, kernel and memory event of the profiled steps; the collectives
are a small part of it. The events kept are the complete (``"ph": "X"``) events whose ``args``
carry ``Collective name`` (``record_param_comms`` and the GPU kernels of the same collectives)
and the ``gloo:<op>`` events; when any kept collective event is a GPU one (``cat`` ``kernel``
or ``gpu_user_annotation``), the CPU ones are not kept (``_traces`` prefers the GPU span).

Where the trace holds more than ``CUT_WHEN`` events per collective event (a real training
step's operators and kernels), each such event is found by its marker in the text
(``"Collective name"``, ``"gloo:``) and cut out between the braces around it: an event is an
object whose fields before ``args`` are scalars and whose ``args`` are flat (strings, numbers,
lists), as torch's Chrome trace writer lays them out. The events cut are decoded by one
``json.loads``; the trace's ``distributedInfo`` and ``host_name`` are decoded where they
stand. Otherwise, and where the text is laid out otherwise (an event that does not decode, a
marker inside a string, a kept event that is not ``"ph": "X"``), the whole trace is parsed
and the same events taken from it: the answer is the same either way, only the time differs.
A text that does not end its top-level object (a cut file) is refused as the full parse
refuses it.

Bound: O(bytes) of searching plus the decoding of the kept events (the whole trace's decoding
on a trace of collectives, or on the fallback).
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InvalidArgumentError

GPU_CATEGORIES = ("kernel", "gpu_user_annotation")
# Cut events out only when the trace has more than this many events per collective event:
# cutting one costs about what parsing one to three events does, so a trace that is mostly
# collectives parses faster whole.
CUT_WHEN = 4
_GZIP = b"\x1f\x8b"
_OPEN = re.compile(r"\s*\{")
_CLOSE = re.compile(r"\}\s*\Z")
_COMMS = re.compile('"Collective name"')
_GLOO = re.compile(r'"name":\s*"gloo:')
_CATEGORY = re.compile(r'"cat":\s*"([^"\\]*)"')
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class TraceEvents:
    """The kept events of one trace (in file order), its ``distributedInfo`` ({} when absent)
    and ``host_name`` ("" when absent)."""

    events: list[dict[str, Any]]
    info: dict[str, Any]
    host: str


def collective_events(file: Path) -> TraceEvents:
    """The kept events of the trace ``file`` (plain or gzip; module docstring), refused with
    the file's name when it is not a profiler trace."""
    text = _text(file)
    marked = text.count('"Collective name"') + text.count('"gloo:')
    fast = _cut(text) if marked * CUT_WHEN < text.count('"ph"') else None
    if fast is not None:
        return fast
    trace = _parse(file, text)
    events = [e for e in trace["traceEvents"] if _kept(e)]
    if any(_on_gpu(e) for e in events if "Collective name" in e["args"]):
        events = [e for e in events if "Collective name" not in e["args"] or _on_gpu(e)]
    info = trace.get("distributedInfo")
    return TraceEvents(events, info if isinstance(info, dict) else {},
                       str(trace.get("host_name") or ""))


def _text(file: Path) -> str:
    try:
        data = file.read_bytes()
        if data[:2] == _GZIP:
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except OSError as error:
        raise InvalidArgumentError(f"{file}: cannot be read: {error.strerror or error}") from None
    except (EOFError, gzip.BadGzipFile) as error:
        raise InvalidArgumentError(f"{file}: truncated gzip: {error}") from None
    except UnicodeDecodeError as error:
        raise InvalidArgumentError(f"{file}: not a profiler trace (JSON): {error}") from None


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
    """The kept events cut out of the text and decoded together; None where the text is not
    laid out as the module docstring says (the caller then parses all of it)."""
    if _OPEN.match(text) is None or _CLOSE.search(text, max(0, len(text) - 4096)) is None \
            or '"traceEvents"' not in text:
        return None
    spans: list[tuple[int, int]] = []
    kinds: list[str] = []  # "gloo", "gpu" or "cpu" (a collective's CPU record)
    markers = sorted([*((m.start(), False) for m in _COMMS.finditer(text)),
                      *((m.start(), True) for m in _GLOO.finditer(text))])
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
            continue  # a gloo event that also names its collective
        spans.append((start, end + 1))
        kinds.append(kind)
    if "gpu" in kinds:
        spans = [span for span, kind in zip(spans, kinds, strict=True) if kind != "cpu"]
    try:
        events = json.loads("[" + ",".join(text[a:b] for a, b in spans) + "]")
        info = _field(text, "distributedInfo", {})
        host = _field(text, "host_name", "")
    except (json.JSONDecodeError, ValueError):
        return None
    if not all(_kept(e) for e in events) or not isinstance(info, dict):
        return None
    return TraceEvents(events, info, str(host or ""))


def _field(text: str, key: str, default: Any) -> Any:
    """The value of the top-level ``key`` (its last occurrence: torch writes these after or
    before the events, never inside one), ``default`` when absent."""
    at = text.rfind(f'"{key}"')
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

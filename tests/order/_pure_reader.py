"""The trace reading with the pure-Python stand-ins, for comparing with the native scanner:
run with ``MESHTOPO_PURE_PYTHON=1``; reads one trace path a line from stdin and answers each
with one JSON line, the reading (``events_text``) or its refusal (as ``test_traces`` writes them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import meshtopo as mt
from meshtopo.order import _trace_events


def events_text(events: _trace_events.TraceEvents) -> str:
    """What ``TraceEvents`` say of each event: its values by key (``repr``: types count), and
    the trace's info and host."""
    return repr(([events.column(key) for key in _trace_events.KEYS], events.info, events.host))


def reading(file: Path) -> str:
    """What ``collective_events`` gives for ``file`` (``events_text``), or its refusal."""
    try:
        return events_text(_trace_events.collective_events(file))
    except mt.MeshtopoError as error:
        return f"refused: {error}"


def main() -> None:
    assert _trace_events.SCANNER == "pure Python", "run with MESHTOPO_PURE_PYTHON=1"
    for line in sys.stdin:
        print(json.dumps(reading(Path(line.rstrip("\n")))), flush=True)


if __name__ == "__main__":
    main()

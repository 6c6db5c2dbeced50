"""The trace reading with the pure-Python stand-ins, for comparing with the native scanner:
run with ``MESHTOPO_PURE_PYTHON=1``; reads one trace path a line from stdin and answers each
with one JSON line, the reading's ``repr`` or its refusal (as ``test_traces`` writes them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import meshtopo as mt
from meshtopo.order import _trace_events


def reading(file: Path) -> str:
    """What ``collective_events`` gives for ``file``: its ``repr``, or its refusal."""
    try:
        return repr(_trace_events.collective_events(file))
    except mt.MeshtopoError as error:
        return f"refused: {error}"


def main() -> None:
    assert _trace_events.SCANNER == "pure Python", "run with MESHTOPO_PURE_PYTHON=1"
    for line in sys.stdin:
        print(json.dumps(reading(Path(line.rstrip("\n")))), flush=True)


if __name__ == "__main__":
    main()

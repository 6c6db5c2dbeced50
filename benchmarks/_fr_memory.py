"""Peak memory of ``from_flight_recorder`` on one directory of dumps, split into its parts;
run in a fresh process (``python -m benchmarks._fr_memory DIR``), it prints one JSON object.

- ``dump``: the bytes of the largest dump.
- ``decode``: the peak of Python's allocations (``tracemalloc``, which sees the decoder's too)
  while one dump is read into columns, its bytes included, less the columns it leaves.
- ``rows``: what reading every rank leaves for matching (the rank-by-rank rows);
  ``read_peak``: the peak of that reading over what was held before it.
- ``matcher``: the peak of the matching over the rows.
- ``rss``: the rise of the process's high-water resident size over the whole call, measured
  first and without ``tracemalloc``: ``VmHWM`` of ``/proc/self/status`` where there is one
  (``getrusage``'s ``ru_maxrss`` keeps the high-water of the process that forked this one),
  else ``ru_maxrss``.
"""

from __future__ import annotations

import contextlib
import json
import resource
import sys
import tracemalloc
from pathlib import Path

import meshtopo as mt
from meshtopo._collector import paused
from meshtopo.order import _flight
from meshtopo.order._flight_columns import read_dump


def _high_water() -> int:
    """The high-water resident size of this process, in bytes."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(directory: Path) -> dict[str, float]:
    """The parts above, in bytes, of reading and matching the dumps in ``directory``."""
    files = sorted(p for p in directory.iterdir() if p.is_file())
    largest = max(files, key=lambda p: p.stat().st_size)
    before = _high_water()
    mt.order.from_flight_recorder(directory)
    rss = _high_water() - before
    tracemalloc.start()
    with paused():
        tracemalloc.reset_peak()
        columns = read_dump(largest)
        left, peak = tracemalloc.get_traced_memory()
        del columns
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        dumps = _flight._read(directory)
        rows, read_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        _flight._from_dumps(dumps)
        matcher = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"dump": largest.stat().st_size, "decode": peak - left, "rows": rows - start,
            "read_peak": read_peak - start, "matcher": matcher - rows, "rss": rss}


if __name__ == "__main__":
    print(json.dumps(measure(Path(sys.argv[1]))))

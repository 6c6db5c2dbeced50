"""Run torch's Flight Recorder analyzer (``torch.distributed.flight_recorder.fr_trace``) on a
dump directory with the files listed in a chosen order (the order ``os.walk`` would give).

Usage: python _torch_analyzer.py DIR PREFIX RANK,RANK,... ; prints what the analyzer prints.
"""

from __future__ import annotations

import os
import sys

from torch.distributed.flight_recorder import fr_trace


def main() -> None:
    directory, prefix, order = sys.argv[1], sys.argv[2], sys.argv[3]
    names = [f"{prefix}{rank}" for rank in order.split(",")]
    real_walk = os.walk

    def walk(top: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        for root, dirs, files in real_walk(top):
            listed = [n for n in names if n in files] + [f for f in files if f not in names]
            yield root, dirs, listed

    os.walk = walk  # type: ignore[assignment]
    fr_trace.main([directory, "--prefix", prefix])


if __name__ == "__main__":
    main()

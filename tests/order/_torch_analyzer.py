"""Run torch's Flight Recorder analyzer (``torch.distributed.flight_recorder.fr_trace``) on
dump directories, each with its files listed in a chosen order (the order ``os.walk`` would
give), from one process that imported the analyzer once: each analysis is a fork of it.

Usage: python _torch_analyzer.py OUT DIR PREFIX RANK,RANK,... [OUT DIR PREFIX RANKS ...];
what the analyzer prints (stdout and stderr, a traceback where it fails) for DIR goes to the
file OUT, and the file OUT.done is written once it is over. The analyses run one after
another.
"""

from __future__ import annotations

import os
import sys
import traceback


def main() -> None:
    from torch.distributed.flight_recorder import fr_trace

    jobs = sys.argv[1:]
    for out, directory, prefix, order in zip(jobs[::4], jobs[1::4], jobs[2::4], jobs[3::4],
                                             strict=True):
        pid = os.fork()
        if pid == 0:
            _analyze(fr_trace, out, directory, prefix, order)
        os.waitpid(pid, 0)


def _analyze(fr_trace: object, out: str, directory: str, prefix: str, order: str) -> None:
    """In a fork: the analyzer on ``directory``, its output to ``out``; never returns."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    names = [f"{prefix}{rank}" for rank in order.split(",")]
    real_walk = os.walk

    def walk(top: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        for root, dirs, files in real_walk(top):
            listed = [n for n in names if n in files] + [f for f in files if f not in names]
            yield root, dirs, listed

    os.walk = walk  # type: ignore[assignment]
    try:
        fr_trace.main([directory, "--prefix", prefix])  # type: ignore[attr-defined]
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        open(out + ".done", "w").close()
        os._exit(0)


if __name__ == "__main__":
    main()

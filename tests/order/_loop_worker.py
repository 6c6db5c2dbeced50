"""One rank of a gloo job that runs a loop of all_reduces, as the shard_map program of
``test_triage_join`` does on each device: ``TRIPS`` (comma-separated, one per rank) says how
many iterations each rank runs, so a rank with fewer leaves the others' last all_reduce
without it. Every rank profiles its collectives with torch.profiler, and after gloo's timeout
(``TIMEOUT_SECONDS``) writes its trace (``OUT_DIR/rank<RANK>.pt.trace.json``) and its Flight
Recorder dump (``OUT_DIR/fr_rank_<RANK>``).

Usage: python _loop_worker.py RANK PORT OUT_DIR TRIPS
"""

from __future__ import annotations

import datetime
import os
import sys
import time

import torch
import torch._inductor  # a dump's first stack traces import it: imported once, here
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

TIMEOUT_SECONDS = 10  # long enough for a loaded machine to start every rank's profiler


def main() -> None:
    rank, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    trips = [int(t) for t in sys.argv[4].split(",")]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=len(trips),
                            timeout=datetime.timedelta(seconds=TIMEOUT_SECONDS))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        x = torch.ones(1)
        try:
            for _ in range(trips[rank]):
                dist.all_reduce(x)
                x *= 0.5
        except RuntimeError:
            pass  # the others' last all_reduce times out without the rank that left the loop
        if trips[rank] < max(trips):
            time.sleep(TIMEOUT_SECONDS + 2)
    with open(os.path.join(out, f"fr_rank_{rank}"), "wb") as handle:
        handle.write(torch._C._distributed_c10d._dump_fr_trace())
    prof.export_chrome_trace(os.path.join(out, f"rank{rank}.pt.trace.json"))
    os._exit(0)


if __name__ == "__main__":
    main()

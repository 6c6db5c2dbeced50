"""One rank of a 3-process gloo job that profiles its collectives with torch.profiler and
writes its trace (``OUT_DIR/rank<RANK>.pt.trace.json``, gzipped for rank 1) and its Flight
Recorder dump (``OUT_DIR_fr/fr_rank_<RANK>``).

Usage: python _trace_worker.py RANK PORT OUT_DIR SCENARIO. Rank 2 enters the second
all_reduce late (it sleeps after the first, which every rank leaves at about one moment). In "skip", rank 2 never issues the last all_reduce: it waits until the
others' collective has timed out (gloo's timeout is TIMEOUT_SECONDS), then every rank writes
its trace. In "groups", every rank also runs an all_reduce on a second process group (of the
same ranks) at the end.
"""

from __future__ import annotations

import datetime
import gzip
import os
import shutil
import sys
import time

import torch
import torch._inductor  # a dump's first stack traces import it: imported once, here
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

TIMEOUT_SECONDS = 3
LATE_SECONDS = 0.5


def main() -> None:
    rank, port, out, scenario = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=3, timeout=datetime.timedelta(seconds=TIMEOUT_SECONDS))
    pair = dist.new_group([0, 1, 2]) if scenario == "groups" else None
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        x = torch.ones(1000)
        try:
            dist.all_reduce(x)
            if rank == 2:
                time.sleep(LATE_SECONDS)
            dist.all_reduce(x)
            dist.broadcast(x, 0)
            gathered = [torch.zeros(1000) for _ in range(3)]
            dist.all_gather(gathered, x)
            if scenario != "skip" or rank != 2:
                dist.all_reduce(x)
            if scenario == "groups":
                dist.all_reduce(x, group=pair)
        except RuntimeError:
            pass  # the others' all_reduce times out in "skip"
        if scenario == "skip" and rank == 2:
            time.sleep(TIMEOUT_SECONDS + 2)
    os.makedirs(out + "_fr", exist_ok=True)
    with open(os.path.join(out + "_fr", f"fr_rank_{rank}"), "wb") as handle:
        handle.write(torch._C._distributed_c10d._dump_fr_trace())
    path = os.path.join(out, f"rank{rank}.pt.trace.json")
    prof.export_chrome_trace(path)
    if rank == 1:
        with open(path, "rb") as source, gzip.open(path + ".gz", "wb") as target:
            shutil.copyfileobj(source, target)
        os.remove(path)
    os._exit(0)


if __name__ == "__main__":
    main()

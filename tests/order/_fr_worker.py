"""One rank of a 4-process gloo job (a 2x2 mesh: tp groups {0,1},{2,3}, dp groups {0,2},{1,3})
that runs one scenario and writes its Flight Recorder dump.

Usage: python _fr_worker.py RANK PORT OUT_DIR SCENARIO. gloo never dumps on its own, so a
watchdog thread takes the dump (pickle to OUT_DIR/fr_rank_RANK, JSON twin to
OUT_DIR_json/fr_rank_RANK.json) when the scenario finishes or after HANG_SECONDS, then ends
the process once every rank has written its dump. Mismatch scenarios dump right after enqueueing (gloo aborts a rank that
receives a buffer of another size or dtype, so the culprit enqueues its odd collective only
once the others have written theirs). In "absent", rank 3 leaves no dump: it stops after the
third world all-reduce and ends once the others, blocked at the fourth, have written theirs.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import torch
import torch._inductor  # a dump's first stack traces import it: imported once, here
import torch.distributed as dist

HANG_SECONDS = 4.0
# SENDS[s][r]: the rows rank s sends rank r in the uneven all_to_all_single of "moe" (every
# rank sends and receives its own amounts; what r receives from s is what s sends r).
SENDS = [[1, 2, 3, 4], [2, 0, 1, 5], [3, 3, 1, 1], [0, 2, 2, 2]]


def entries() -> int:
    import pickle

    return len(pickle.loads(torch._C._distributed_c10d._dump_fr_trace())["entries"])


def dump(out: str, rank: int) -> None:
    os.makedirs(out + "_json", exist_ok=True)
    os.makedirs(out + "_marks", exist_ok=True)
    with open(os.path.join(out, f"fr_rank_{rank}"), "wb") as handle:
        handle.write(torch._C._distributed_c10d._dump_fr_trace())
    data = torch._C._distributed_c10d._dump_fr_trace_json()
    with open(os.path.join(out + "_json", f"fr_rank_{rank}.json"), "wb") as handle:
        handle.write(data if isinstance(data, bytes) else data.encode())


def main() -> None:
    rank, port, out, scenario = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=4)
    tp = [dist.new_group([0, 1]), dist.new_group([2, 3])][rank // 2]
    dp = [dist.new_group([0, 2]), dist.new_group([1, 3])][rank % 2]
    done = threading.Event()

    hangs = scenario in ("opposite", "cycle", "skip", "absent")
    dumping = [0, 1, 2] if scenario == "absent" else [0, 1, 2, 3]

    def watchdog() -> None:
        done.wait(HANG_SECONDS if hangs else 30.0)
        if rank not in dumping:
            wait_for(out, dumping)  # the absent rank ends without a dump once the others wrote
            os._exit(0)
        dump(out, rank)
        open(os.path.join(out + "_marks", f"written_{rank}"), "w").close()
        wait_for(out, dumping)  # peers leave only once every rank has dumped
        os._exit(0)

    thread = threading.Thread(target=watchdog, daemon=True)
    thread.start()
    x = torch.ones(8)
    # Every rank records each of its groups once first (raw gloo dumps name no members, so
    # membership is read from the entries), as a job that ran for a while before it hung.
    dist.all_reduce(x, group=tp)
    dist.all_reduce(x, group=dp)
    dist.all_reduce(x)
    if scenario == "clean":
        for _ in range(2):
            dist.all_reduce(x, group=tp)
            dist.all_reduce(x, group=tp)
            dist.reduce_scatter_tensor(torch.empty(4), x, group=dp)
            dist.all_reduce(x)
    elif scenario == "batch":  # a ring of sends and recvs in one batch, twice
        y = torch.empty(8)
        for _ in range(2):
            ops = [dist.P2POp(dist.isend, x, (rank + 1) % 4),
                   dist.P2POp(dist.irecv, y, (rank - 1) % 4)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
            dist.all_reduce(x)
    elif scenario == "opposite":  # ranks 0 and 1 issue tp and world in opposite orders
        order = [x, None] if rank != 1 else [None, x]
        for step in order:
            dist.all_reduce(x, group=tp) if step is not None else dist.all_reduce(x)
    elif scenario == "cycle":  # 0 and 3 go tp first, 1 and 2 dp first: 0->1->3->2->0
        first, second = (tp, dp) if rank in (0, 3) else (dp, tp)
        dist.all_reduce(x, group=first)
        dist.all_reduce(x, group=second)
    elif scenario == "skip":  # rank 2 skips the second tp all-reduce
        dist.all_reduce(x, group=tp)
        if rank != 2:
            dist.all_reduce(x, group=tp)
        dist.all_reduce(x, group=dp)
        dist.all_reduce(x)
    elif scenario == "moe":  # uneven exchanges that agree, on the world and the tp group
        exchange(SENDS, rank, None, 4)
        exchange([[2, 5], [1, 0]], rank % 2, tp, 3)  # group ranks; 3 columns a row
        dist.all_to_all([torch.empty(2) for _ in range(2)], [x[:2] * r for r in range(2)],
                        group=dp)  # the list form: gloo takes equal tensors only
        dist.all_reduce(x)
    elif scenario == "absent":  # every rank runs two world all-reduces; rank 3 then stops
        dist.all_reduce(x)
        dist.all_reduce(x)
        if rank == 3:
            done.set()
            thread.join(60)
            os._exit(0)
        dist.all_reduce(x)
    else:  # size / dtype / type / moe_bad / list_bad: one rank differs on the world group
        culprit = {"size": 2, "dtype": 3, "type": 1, "moe_bad": 2, "list_bad": 1}[scenario]
        dist.all_reduce(x)
        if rank != culprit:
            if scenario == "moe_bad":
                exchange(SENDS, rank, None, 1, async_op=True)
            elif scenario == "list_bad":
                dist.all_to_all([torch.empty(2) for _ in range(4)],
                                [torch.ones(2) for _ in range(4)], async_op=True)
            else:
                dist.all_reduce(x, async_op=True)
            return finish(out, rank, done, thread)
        # gloo aborts the rank that receives a buffer of another size or dtype: the culprit
        # enqueues only once every other rank has written its dump.
        wait_for(out, [r for r in range(4) if r != culprit])
        if scenario == "moe_bad":  # rank 2 expects 4 rows from rank 1, which sends it 1
            received = [SENDS[s][rank] for s in range(4)]
            received[1] = 4
            dist.all_to_all_single(torch.empty(sum(received), 1),
                                   torch.ones(sum(SENDS[rank]), 1), received, SENDS[rank],
                                   async_op=True)
        elif scenario == "list_bad":  # rank 1 sends and expects 3 elements a peer, others 2
            dist.all_to_all([torch.empty(3) for _ in range(4)],
                            [torch.ones(3) for _ in range(4)], async_op=True)
        elif scenario == "size":
            dist.all_reduce(torch.ones(16), async_op=True)
        elif scenario == "dtype":
            dist.all_reduce(torch.ones(8, dtype=torch.float64), async_op=True)
        else:
            dist.broadcast(x, src=0, async_op=True)
        # The entry is recorded as the op is enqueued; dump at once, before gloo can abort
        # this rank too, once the dump holds it.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and entries() < 5:
            time.sleep(0.01)
    finish(out, rank, done, thread)


def exchange(sends: list[list[int]], rank: int, group: dist.ProcessGroup | None,
             columns: int, async_op: bool = False) -> None:
    """An all_to_all_single in which group rank ``rank`` sends ``sends[rank][r]`` rows of
    ``columns`` elements to group rank ``r`` and receives ``sends[s][rank]`` from ``s``."""
    received = [row[rank] for row in sends]
    dist.all_to_all_single(torch.empty(sum(received), columns),
                           torch.ones(sum(sends[rank]), columns), received, sends[rank],
                           group=group, async_op=async_op)


def finish(out: str, rank: int, done: threading.Event, thread: threading.Thread) -> None:
    done.set()
    thread.join(HANG_SECONDS + 30)
    os._exit(0)


def wait_for(out: str, ranks: list[int], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(
            os.path.exists(os.path.join(out + "_marks", f"written_{r}")) for r in ranks):
        time.sleep(0.05)



if __name__ == "__main__":
    main()

"""One process of the membership test: ``_membership_worker.py RANK PORT OUT [LATE]``.

Two gloo processes, one ``TorchFactory`` with the default membership (met once per clique):
an in-place all-reduce (``out=`` the send buffer), an all-reduce of a type gloo carries
widened, then the two ranks diverge (rank 0 an all-reduce, rank 1 an all-gather, the second
operation of the clique, which no store rendezvous precedes): each must get the
``RendezvousError`` naming the other, from gloo's timeout diagnosed in the store (rank 1
starting its operation LATE seconds after rank 0, rank 0 times out first and closes the pair,
which rank 1 sees instead of its own timeout). Writes what it saw to OUT/<rank>.json, then
ends once the other has written its own."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch.distributed as dist

from meshtopo.runtime import CliqueKey, RendezvousError
from meshtopo.runtime._torch import TorchFactory

TIMEOUT = 3.0


def main(rank: int, port: int, out: Path, late: float = 0.0) -> None:
    """Run rank ``rank`` (see the module docstring)."""
    logging.basicConfig(stream=sys.stderr)
    store = dist.TCPStore("127.0.0.1", port, 2, is_master=rank == 0,
                          timeout=timedelta(seconds=60))
    dist.init_process_group("gloo", store=dist.PrefixStore("pg/", store), rank=rank,
                            world_size=2, timeout=timedelta(seconds=60))
    factory = TorchFactory(store, [0, 1], TIMEOUT)
    key = CliqueKey((1, 0))
    factory.groups.create_all([key.devices])
    [communicator] = factory.create_communicators(key, None, [(rank, key.rank(rank) or 0)])
    buffer = np.arange(4, dtype=np.float32) + rank
    reduced = communicator.all_reduce(buffer, out=buffer).wait()
    widened = communicator.all_reduce(np.array([rank, 300], np.int16), "max").wait()
    seen: dict[str, object] = {"in_place": reduced is buffer, "reduced": buffer.tolist(),
                               "widened": widened.tolist(), "dtype": str(widened.dtype)}
    try:
        if rank == 0:
            communicator.all_reduce(np.ones(4, np.float32), op_name="first").wait()
        else:
            time.sleep(late)
            communicator.all_gather(np.ones(4, np.float32), op_name="second").wait()
    except RendezvousError as error:
        seen.update(error=str(error), missing=error.missing, waited=error.waited)
    written = out / f"{rank}.json.part"
    written.write_text(json.dumps(seen))
    written.rename(out / f"{rank}.json")
    # Stay (60 s at most) until the other has written too: a process that ends closes its
    # gloo connection, which the other, still waiting, would see instead of its timeout.
    deadline = time.monotonic() + 60
    while not (out / f"{1 - rank}.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]))
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the interpreter's teardown, as the runtime's own workers do: gloo's thread still
    # blocked in the operation that timed out can abort it ("terminate called without an
    # active exception") once what the rank saw is written.
    os._exit(0)

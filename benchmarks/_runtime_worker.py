"""One process of the torch-backend benchmark: ``python -m benchmarks._runtime_worker RANK
WORLD PORT OUT``.

Joins a gloo world of WORLD processes on 127.0.0.1:PORT, creates the process groups of a 2x4
mesh through ``GroupCache`` (counting creations), then times, on this rank's 4-device 'model'
group, raw ``torch.distributed.all_reduce`` (in place on a tensor) against
``TorchCommunicator.all_reduce`` (numpy in, numpy out, membership rendezvous first, and once
more without it) for each size, interleaved, best of several rounds. The default call returns
a new array, so it is also timed against raw on a fresh clone (``raw_clone``: the one copy the
contract needs). Rank 0 writes the figures as JSON to OUT: best per variant and the median
over rounds of each variant's time over raw's (and of ``copy`` over ``raw_clone``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

import meshtopo as mt
from meshtopo.runtime import CliqueKey
from meshtopo.runtime._torch import TorchFactory

SIZES = [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26]


def _rounds(size: int) -> int:
    """Rounds per size: enough at 16 and 64 MiB for a paired median that a few disturbed
    rounds on a shared machine do not move."""
    return 20 if size <= 1 << 18 else (15 if size <= 1 << 22 else (12 if size <= 1 << 24 else 11))


def _variants(communicators: dict[str, Any], array: np.ndarray, tensor: torch.Tensor,
              group: Any) -> dict[str, Callable[[], object]]:
    """The all-reduces timed side by side (see the module docstring)."""
    return {
        "raw": lambda: dist.all_reduce(tensor, group=group),
        "raw_clone": lambda: dist.all_reduce(tensor.clone(), group=group),
        "meshtopo": lambda: communicators["clique"].all_reduce(array, out=array).wait(),
        "copy": lambda: communicators["clique"].all_reduce(array).wait(),
        "operation": lambda: communicators["operation"].all_reduce(array, out=array).wait(),
        "unchecked": lambda: communicators["none"].all_reduce(array, out=array).wait(),
    }


def main(rank: int, world: int, port: int, out: Path) -> None:
    """Run the benchmark as ``rank`` (see the module docstring)."""
    store = dist.TCPStore("127.0.0.1", port, world, is_master=rank == 0,
                          timeout=timedelta(seconds=120))
    dist.init_process_group("gloo", store=dist.PrefixStore("pg/", store), rank=rank,
                            world_size=world, timeout=timedelta(seconds=120))
    mesh = mt.Mesh({"data": 2, "model": 4})
    groups = [tuple(g) for axis in ("data", "model")
              for g in mesh.replica_groups(over=axis).replica_groups]
    factory = TorchFactory(store, list(range(world)), timeout=120)
    started = time.perf_counter()
    factory.groups.create_all(groups)
    setup = time.perf_counter() - started
    model = next(g for g in mesh.replica_groups(over="model").replica_groups if rank in g)
    key = CliqueKey(tuple(model))
    me = [(rank, key.devices.index(rank))]
    communicators: dict[str, Any] = {}
    for membership in ("clique", "operation", "none"):
        variant = TorchFactory(store, list(range(world)), timeout=120, membership=membership)
        variant.groups = factory.groups
        [communicators[membership]] = variant.create_communicators(key, None, me)
    group = factory.groups.group(key.devices)
    figures = []
    for size in SIZES:
        array = np.ones(size // 4, dtype=np.float32)
        tensor = torch.from_numpy(array.copy())
        timed = _variants(communicators, array, tensor, group)
        samples: dict[str, list[float]] = {name: [] for name in timed}
        names = list(timed)
        for round_number in range(_rounds(size)):
            # Each round starts with another variant, so no variant always follows raw.
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                function = timed[name]
                dist.barrier(group=group)
                t = time.perf_counter()
                function()
                samples[name].append(time.perf_counter() - t)
        raw = np.array(samples["raw"])
        paired = {name: float(np.median(np.array(v) / raw))
                  for name, v in samples.items() if name != "raw"}
        paired["copy_vs_clone"] = float(np.median(np.array(samples["copy"])
                                                  / np.array(samples["raw_clone"])))
        spread = {name: float(np.percentile(np.array(v) / raw, 75)
                              - np.percentile(np.array(v) / raw, 25))
                  for name, v in samples.items() if name != "raw"}
        figures.append({"bytes": size, **{name: min(v) for name, v in samples.items()},
                        "paired": paired, "spread": spread})
    if rank == 0:
        out.write_text(json.dumps({"created": factory.groups.created, "groups": len(set(groups)),
                                   "setup": setup, "figures": figures}))
    store.set(f"done/{rank}", "1")
    store.wait([f"done/{r}" for r in range(world)], timedelta(seconds=120))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))

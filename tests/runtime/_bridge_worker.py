"""One process of the DeviceMesh bridge test: ``_bridge_worker.py RANK WORLD PORT OUT``.

Builds a 2x2 ``Mesh`` with a custom device order, its torch ``DeviceMesh`` and meshtopo's
process groups over 'model'; all-gathers each rank's id in its group; splits the world
communicator by colour rank % 2 with key -rank and all-gathers in the new communicator;
writes what it saw."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

import meshtopo as mt
from meshtopo.runtime import CliqueKey
from meshtopo.runtime._bridge import (
    device_mesh_from_torch,
    device_mesh_to_torch,
    mesh_process_groups,
)
from meshtopo.runtime._torch import TorchFactory


def main(rank: int, world: int, port: int, out: Path) -> None:
    store = dist.TCPStore("127.0.0.1", port, world, is_master=rank == 0,
                          timeout=timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    mesh = mt.Mesh({"data": 2, "model": 2}, devices=[[3, 1], [0, 2]])
    torch_mesh = device_mesh_to_torch(mesh)
    back = device_mesh_from_torch(torch_mesh)
    groups = mesh_process_groups(mesh, "model", world)
    mine = next(g for g in groups if rank in g)
    seen = [torch.zeros(1, dtype=torch.int64) for _ in mine]
    dist.all_gather(seen, torch.tensor([rank]), group=groups[mine])
    torch_group = torch_mesh.get_group("model")
    torch_seen = [torch.zeros(1, dtype=torch.int64) for _ in mine]
    dist.all_gather(torch_seen, torch.tensor([rank]), group=torch_group)
    factory = TorchFactory(store, list(range(world)), timeout=30)
    factory.groups.create_all([tuple(range(world))])
    [parent] = factory.create_communicators(CliqueKey(tuple(range(world))), None, [(rank, rank)])
    child = parent.split(rank % 2, -rank).wait()
    split_gathered = child.all_gather(np.array([rank])).wait().tolist() if child else None
    (out / f"{rank}.json").write_text(json.dumps({
        "split_devices": list(child.key.devices) if child else None,
        "split_gathered": split_gathered,
        "group": list(mine), "gathered": [int(t) for t in seen],
        "torch_gathered": [int(t) for t in torch_seen],
        "round_trip": back == mesh,
        "local_rank": torch_mesh.get_local_rank("model"),
    }))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))

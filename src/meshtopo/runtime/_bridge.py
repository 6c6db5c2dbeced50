"""A bridge between ``meshtopo.Mesh`` and torch's ``DeviceMesh``, with the same groups in the
same rank order.

World rank = device id: the mesh's device ids are the torch ranks (a mesh over ranks
0..n-1). ``device_mesh_to_torch`` builds torch's ``DeviceMesh`` (its dimension groups are
torch's own, created with ``sort_ranks=True``: rank order inside them, and ``get_local_rank``,
are ascending, whatever the mesh says: on devices ``[[3,1],[0,2]]`` device 3 is local rank 1
of its 'model' group, where meshtopo's rank is 0); ``mesh_process_groups`` creates, once each, the groups meshtopo computes for
``over`` with ``sort_ranks=False``, so a group's rank r is the r-th device of meshtopo's group
(a custom device order survives). ``device_mesh_from_torch`` reads a ``DeviceMesh`` back as a
``Mesh``. All need ``torch.distributed`` initialised; group creation is collective over the
world (every process calls, in the same order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.distributed.device_mesh import DeviceMesh

from ..groups._device_list import Mesh
from ._torch import GroupCache


def device_mesh_to_torch(mesh: Mesh, device_type: str = "cpu") -> DeviceMesh:
    """torch's ``DeviceMesh`` with ``mesh``'s axis names and device ids as ranks."""
    return DeviceMesh(device_type, torch.from_numpy(np.array(mesh.devices, dtype=np.int64)),
                      mesh_dim_names=mesh.axis_names)


def device_mesh_from_torch(device_mesh: DeviceMesh) -> Mesh:
    """The ``Mesh`` of a torch ``DeviceMesh``: its dimension names (``axis_<i>`` where it has
    none) and sizes, its ranks as device ids."""
    ranks = device_mesh.mesh.cpu().numpy().astype(np.int64)
    names = device_mesh.mesh_dim_names or tuple(f"axis_{i}" for i in range(ranks.ndim))
    return Mesh(dict(zip(names, ranks.shape, strict=True)), devices=ranks)


def mesh_process_groups(mesh: Mesh, over: str | Sequence[str], world_size: int,
                        cache: GroupCache | None = None) -> dict[tuple[int, ...], Any]:
    """A gloo process group per group of ``mesh.replica_groups(over=over)``, keyed by the
    group's devices in meshtopo's rank order, created once each (through ``cache`` when given,
    so repeated calls reuse the groups). Every process of the world must call it."""
    groups = [tuple(g) for g in mesh.replica_groups(over=over).replica_groups]
    cache = GroupCache(list(range(world_size))) if cache is None else cache
    cache.create_all(groups)
    return {g: cache.group(g) for g in groups}

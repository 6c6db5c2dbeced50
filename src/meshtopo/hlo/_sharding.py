"""What an instruction's ``sharding`` says about which partitions hold the same data.

XLA's ``HloSharding`` text: ``{replicated}``, ``{maximal device=N}``, ``{manual}``, or a
tiled ``{devices=[d0,...,dk]<tile assignment>}`` whose tile assignment is iota
(``<=[N]``, ``<=[a,b]T(1,0)``) or explicit (``0,2,1,3``), optionally with
``last_tile_dim_replicate`` or ``last_tile_dims={...}`` (each ``replicated`` dimension
holds copies). Partitions at the same index of every other dimension hold the same piece.

>>> same_data_labels("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 4).tolist()
[0, 0, 1, 1]
>>> same_data_labels("{replicated}", 4).tolist()
[0, 0, 0, 0]
>>> same_data_labels("{devices=[4]<=[4]}", 4) is None
True
"""

from __future__ import annotations

import functools
import re

import numpy as np

from .._errors import MeshtopoError
from ..groups._iota import IotaTileAssignment

_TILED = re.compile(r"^\{\s*devices=\[([0-9,\s]+)\]\s*(<=\s*\[[0-9,\s]+\](?:\s*T\s*\([0-9,\s]+\))?"
                    r"|[0-9,\s]+?)\s*(last_tile_dim_replicate|last_tile_dims=\{([^}]*)\})?"
                    r"(?:\s+metadata=.*)?\s*\}$")


@functools.lru_cache(maxsize=256)
def same_data_labels(text: str, num_partitions: int) -> np.ndarray | None:
    """For each partition id, a label equal on the partitions that hold the same data under
    sharding ``text`` (a read-only array, shared by equal calls); None when every partition
    may hold its own (a tiled sharding without replication, ``{manual}``, a tuple sharding or
    a text not read here)."""
    labels = _labels(text, num_partitions)
    if labels is not None:
        labels.flags.writeable = False
    return labels


def _labels(text: str, num_partitions: int) -> np.ndarray | None:
    flat = " ".join(text.split())
    if flat in ("{replicated}",) or flat.startswith("{maximal device="):
        return np.zeros(num_partitions, dtype=np.int64)
    found = _TILED.match(flat)
    if found is None:
        return None
    dims = [int(d) for d in found.group(1).replace(" ", "").split(",") if d]
    tiles = found.group(2).replace(" ", "")
    try:
        if tiles.startswith("<="):
            table = IotaTileAssignment.parse(f"[{','.join(map(str, dims))}]{tiles}").to_array()
        else:
            table = np.array([int(t) for t in tiles.split(",") if t],
                             dtype=np.int64).reshape(dims)
    except (MeshtopoError, ValueError):
        return None
    if found.group(3) is None:
        return None
    kinds = (["replicated"] if found.group(4) is None
             else [k.strip().lower() for k in found.group(4).split(",")])
    copies = [table.ndim - len(kinds) + i for i, kind in enumerate(kinds)
              if kind == "replicated"]
    if not copies or table.size != num_partitions or table.min() < 0 or \
            table.max() >= num_partitions:
        return None
    pieces = np.moveaxis(table, copies, list(range(table.ndim - len(copies), table.ndim)))
    pieces = pieces.reshape(-1, int(np.prod([table.shape[c] for c in copies])))
    labels = np.empty(num_partitions, dtype=np.int64)
    labels[pieces] = np.arange(pieces.shape[0])[:, None]
    return labels

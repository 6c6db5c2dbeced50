"""What an instruction's ``sharding`` says about which partitions hold the same data.

XLA's ``HloSharding`` text (read by the one reader of it, ``_sharding_reader``):
``{replicated}``, ``{maximal device=N}``, ``{manual}``, or a tiled ``{devices=[d0,...,dk]<tile
assignment>}`` whose tile assignment is iota (``<=[N]``, ``<=[a,b]T(1,0)``) or explicit
(``0,2,1,3``), optionally with ``last_tile_dim_replicate`` or ``last_tile_dims={...}`` (each
``replicated`` dimension holds copies). Partitions at the same index of every other dimension
hold the same piece.

>>> same_data_labels("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 4).tolist()
[0, 0, 1, 1]
>>> same_data_labels("{replicated}", 4).tolist()
[0, 0, 0, 0]
>>> same_data_labels("{devices=[4]<=[4]}", 4) is None
True
"""

from __future__ import annotations

import functools

import numpy as np

from .._errors import MeshtopoError
from ..groups._iota import IotaTileAssignment
from ._sharding_reader import read_sharding


@functools.lru_cache(maxsize=256)
def same_data_labels(text: str, num_partitions: int) -> np.ndarray | None:
    """For each partition id, a label equal on the partitions that hold the same data under
    sharding ``text`` (a read-only array, shared by equal calls); None when every partition
    may hold its own (a tiled sharding without replication, ``{manual}``, a tuple sharding or
    a text XLA does not read)."""
    labels = _labels(text, num_partitions)
    if labels is not None:
        labels.flags.writeable = False
    return labels


def _labels(text: str, num_partitions: int) -> np.ndarray | None:
    try:
        sharding = read_sharding(text)
    except MeshtopoError:
        return None
    if isinstance(sharding, tuple):
        return None
    if sharding.kind in ("replicated", "maximal"):
        return np.zeros(num_partitions, dtype=np.int64)
    if sharding.kind != "tiled" or not sharding.sharding_types:
        return None
    dims = sharding.tile_dimensions
    try:
        if sharding.iota_reshape:
            table = IotaTileAssignment(dims, sharding.iota_reshape,
                                       sharding.iota_permutation).to_array()
        else:
            table = np.array(sharding.devices, dtype=np.int64).reshape(dims)
    except (MeshtopoError, ValueError):
        return None
    kinds = sharding.sharding_types
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

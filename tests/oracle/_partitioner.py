"""Collectives the SPMD partitioner inserts from shardings, measured by execution.

This is where XLA writes iota lists (``[2,4]<=[2,2,2]T(1,0,2)``) and mesh-axes lists
(``mesh['axis_0'=4,'axis_1'=2], device_ids=([2,4]T(1,0)) {'axis_0'}``) in compiled HLO.
Each program here compiles to a single collective whose effect on the outputs says which
devices met; the tests check ``collectives`` to be sure of that.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._decode import decode_gathered, decode_sets
from ._measure import (
    Measurement,
    _compiled_facts,
    _jax,
    _jax_mesh,
    _normalise_mesh,
    _outputs_by_device,
    _per_device_array,
    _shard_map_assignment,
)


@functools.cache
def _measure_partitioner_cached(
    kind: str,
    shape: tuple[tuple[str, int], ...],
    device_ids: tuple[int, ...],
    axes: tuple[str, ...],
) -> Measurement:
    jax = _jax()
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = _jax_mesh(shape, device_ids)
    sizes = dict(shape)
    size = int(np.prod([sizes[a] for a in axes]))
    n = len(device_ids)
    replicated = NamedSharding(mesh, PartitionSpec())
    if kind == "sum":
        # x: [S, N] sharded over `axes` on dim 0; each device's [1, N] shard is onehot(d).
        spec = PartitionSpec(axes)
        x = _per_device_array(mesh, spec, lambda d: np.eye(n, dtype=np.int32)[d][None], (size, n))
        fn = jax.jit(lambda v: v.sum(0), out_shardings=replicated)
    elif kind == "gather":
        # x: [S] sharded over `axes`; each device's [1] shard is its id; output replicated.
        spec = PartitionSpec(axes)
        x = _per_device_array(mesh, spec, lambda d: np.array([d], dtype=np.int32), (size,))
        fn = jax.jit(lambda v: v, out_shardings=replicated)
    else:
        raise ValueError(f"unknown partitioner kind {kind!r}; expected 'sum' or 'gather'")
    compiled = fn.lower(x).compile()
    outputs = _outputs_by_device(compiled(x))
    groups = decode_sets(outputs) if kind == "sum" else decode_gathered(outputs)
    collective = "psum" if kind == "sum" else "all_gather"
    return _group_measurement(compiled, collective, shape, device_ids, axes, groups, kind == "gather")


def measure_partitioner(
    kind: str,
    shape: Mapping[str, int] | Sequence[tuple[str, int]],
    axes: str | Sequence[str],
    device_ids: Any = None,
) -> Measurement:
    """Let the partitioner insert a collective over ``axes``: ``kind="sum"`` reduces an array
    sharded over ``axes`` to a replicated one (all-reduce), ``kind="gather"`` replicates it
    (all-gather, rank order revealed). Cached per argument tuple."""
    items, ids = _normalise_mesh(shape, device_ids)
    axes_t = (axes,) if isinstance(axes, str) else tuple(axes)
    return _measure_partitioner_cached(kind, items, ids, axes_t)


@functools.cache
def _measure_reshard_cached(
    shape: tuple[tuple[str, int], ...],
    device_ids: tuple[int, ...],
    in_axes: tuple[str, ...],
    out_axes: tuple[str, ...],
) -> Measurement:
    jax = _jax()
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = _jax_mesh(shape, device_ids)
    n = len(device_ids)
    if sorted(in_axes) != sorted(name for name, _ in shape):
        raise ValueError(f"in_axes {in_axes} must order every axis of the mesh {shape}")
    # x: [N] with one element per device, its id; every shard is distinct, nothing replicated.
    x = _per_device_array(
        mesh, PartitionSpec(in_axes), lambda d: np.array([d], dtype=np.int32), (n,)
    )
    out_spec = PartitionSpec(out_axes) if out_axes else PartitionSpec()
    fn = jax.jit(lambda v: v, out_shardings=NamedSharding(mesh, out_spec))
    compiled = fn.lower(x).compile()
    axes = tuple(a for a in in_axes if a not in out_axes)
    groups = decode_gathered(_outputs_by_device(compiled(x)))
    return _group_measurement(compiled, "all_gather", shape, device_ids, axes, groups, True)


def measure_reshard(
    shape: Mapping[str, int] | Sequence[tuple[str, int]],
    in_axes: Sequence[str],
    out_axes: Sequence[str],
    device_ids: Any = None,
) -> Measurement:
    """Reshard a 1-D array with one element per device (its id) from ``P(in_axes)``, which
    names every mesh axis, to ``P(out_axes)``, a prefix of it (empty: replicated).

    The partitioner does this with one all-gather over the remaining axes (written as an
    iota or mesh-axes list); each device's output lists its group in rank order, which is
    what ``groups`` holds, as long as the compiled module has that single collective (check
    ``collectives``). ``axes`` is the remaining axes, in order. Cached per argument tuple.
    """
    items, ids = _normalise_mesh(shape, device_ids)
    return _measure_reshard_cached(items, ids, tuple(in_axes), tuple(out_axes))


def _group_measurement(
    compiled: Any,
    collective: str,
    shape: Any,
    device_ids: tuple[int, ...],
    axes: tuple[str, ...],
    groups: Any,
    ordered: bool,
) -> Measurement:
    """A group collective's measurement with the compiled program's facts."""
    text, collectives, replicas, partitions = _compiled_facts(compiled)
    return Measurement(
        collective=collective,
        mesh_shape=shape,
        device_ids=device_ids,
        axes=axes,
        groups=groups,
        ordered=ordered,
        pairs=None,
        permutation=None,
        hlo_text=text,
        collectives=collectives,
        replica_count=replicas,
        num_partitions=partitions,
        device_assignment=_shard_map_assignment(compiled),
    )

"""Measure which devices XLA puts together, by executing programs on CPU devices.

Every measurement runs a real program and decodes its outputs; nothing here reads group
membership from text. Each device's input is built so that its contribution is recognisable
(a one-hot at its device id, its device id itself, or ``id * S + chunk``), so the outputs say
exactly which devices met and, where the collective reveals it, in which rank order.

Alongside the measured answer each result carries what XLA wrote: the compiled HLO text, the
attribute text of every collective in it (``replica_groups=``, ``source_target_pairs=``,
``channel_id``, ``use_global_device_ids``), the header's replica and partition counts, and the
device assignment the executable ran with (``[replica][partition]`` device ids).

Three ways in:

* :func:`measure` runs ``jax.jit(shard_map(...))`` over a ``jax.sharding.Mesh`` built from a
  mesh shape and a device-id array (any order), for psum, all_gather, psum_scatter, ppermute
  and all_to_all over one or several named axes.
* ``_partitioner.measure_partitioner`` and ``_partitioner.measure_reshard`` let the SPMD
  partitioner insert the collective from shardings (this is where XLA writes iota and
  mesh-axes groups such as ``mesh['axis_0'=2,'axis_1'=4] {'axis_0'}``).
* ``_raw.measure_raw`` compiles StableHLO text with any replica count, partition count,
  device assignment, channel id and ``use_global_device_ids`` (JAX cannot make
  ``replica_count > 1`` programs, XLA's client can), so every group mode runs for real.

:func:`measure_in_subprocess` runs a batch of :func:`measure` cases in a fresh interpreter with
its own device count (e.g. 16) and returns their JSON form.

The process running these functions needs ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
set before JAX is imported; ``tests/conftest.py`` sets it to 8.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._decode import (
    decode_all_to_all,
    decode_gathered,
    decode_pairs,
    decode_scattered,
    decode_sets,
    default_permutation,
)
from ._hlo_text import HloCollective, extract_collectives, header_counts

COLLECTIVES = ("psum", "all_gather", "psum_scatter", "ppermute", "all_to_all")
"""The shard_map collectives :func:`measure` knows how to run and decode."""

OPCODE_FOR = {
    "psum": "all-reduce",
    "all_gather": "all-gather",
    "psum_scatter": "reduce-scatter",
    "ppermute": "collective-permute",
    "all_to_all": "all-to-all",
}
"""The HLO opcode each collective compiles to on CPU."""

_SUBPROCESS_TIMEOUT_S = 240.0


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Measurement:
    """What one executed program revealed, and what XLA wrote for it.

    ``groups`` are device-id groups. Where the collective reveals rank order
    (all_gather, psum_scatter, all_to_all; ppermute via the pairs) each group is in rank
    order and ``ordered`` is true; for psum each group is sorted and ``ordered`` is false.
    The list of groups is sorted by first element (the order of groups is not observable).
    ``pairs`` (ppermute only) are the measured (source device, target device) pairs, sorted.
    ``device_assignment`` is ``[replica][partition]`` device ids; for a jitted shard_map it is
    ``[mesh device ids in mesh.devices.flat order]``.
    """

    collective: str
    mesh_shape: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...]  # the mesh's devices, flattened in mesh order
    axes: tuple[str, ...]
    groups: tuple[tuple[int, ...], ...]
    ordered: bool
    pairs: tuple[tuple[int, int], ...] | None
    permutation: tuple[tuple[int, int], ...] | None  # ppermute's perm over in-group indices
    hlo_text: str
    collectives: tuple[HloCollective, ...]
    replica_count: int
    num_partitions: int
    device_assignment: tuple[tuple[int, ...], ...]

    @property
    def mesh_devices(self) -> np.ndarray:
        """The mesh's device-id array, in mesh shape."""
        shape = tuple(size for _, size in self.mesh_shape)
        return np.asarray(self.device_ids, dtype=np.int64).reshape(shape)

    def collective_named(self, opcode: str) -> HloCollective:
        """The single collective with this opcode (``-start`` forms count); error if not one."""
        found = [c for c in self.collectives if c.opcode in (opcode, opcode + "-start")]
        if len(found) != 1:
            raise ValueError(
                f"expected exactly one {opcode} in the compiled HLO, found {len(found)}:\n"
                + "\n".join(c.line for c in self.collectives)
            )
        return found[0]

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["collectives"] = [c.to_json() for c in self.collectives]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Measurement:
        def pairs_or_none(v: Any) -> tuple[tuple[int, int], ...] | None:
            return None if v is None else tuple((int(a), int(b)) for a, b in v)

        return cls(
            collective=data["collective"],
            mesh_shape=tuple((str(n), int(s)) for n, s in data["mesh_shape"]),
            device_ids=tuple(int(d) for d in data["device_ids"]),
            axes=tuple(data["axes"]),
            groups=tuple(tuple(int(d) for d in g) for g in data["groups"]),
            ordered=bool(data["ordered"]),
            pairs=pairs_or_none(data["pairs"]),
            permutation=pairs_or_none(data["permutation"]),
            hlo_text=data["hlo_text"],
            collectives=tuple(HloCollective(**c) for c in data["collectives"]),
            replica_count=int(data["replica_count"]),
            num_partitions=int(data["num_partitions"]),
            device_assignment=tuple(
                tuple(int(d) for d in row) for row in data["device_assignment"]
            ),
        )


# --------------------------------------------------------------------------------------------
# JAX programs
# --------------------------------------------------------------------------------------------


def _jax() -> Any:
    import jax

    return jax


@functools.cache
def _devices_by_id() -> dict[int, Any]:
    return {d.id: d for d in _jax().devices()}


def _jax_mesh(shape: tuple[tuple[str, int], ...], device_ids: tuple[int, ...]) -> Any:
    from jax.sharding import Mesh

    by_id = _devices_by_id()
    missing = [d for d in device_ids if d not in by_id]
    if missing:
        raise RuntimeError(
            f"devices {missing} do not exist: JAX has {len(by_id)} devices; set "
            "XLA_FLAGS=--xla_force_host_platform_device_count=N before importing jax"
        )
    sizes = tuple(size for _, size in shape)
    array = np.array([by_id[d] for d in device_ids], dtype=object).reshape(sizes)
    return Mesh(array, tuple(name for name, _ in shape))


def _per_device_array(mesh: Any, spec: Any, block: Any, global_shape: tuple[int, ...]) -> Any:
    """A global array whose shard on device d is ``block(d)`` (replicated shards may differ:
    they are distinct on purpose, to tell devices apart)."""
    jax = _jax()
    from jax.sharding import NamedSharding

    sharding = NamedSharding(mesh, spec)
    shards = [jax.device_put(block(d.id), d) for d in mesh.devices.flat]
    return jax.make_array_from_single_device_arrays(global_shape, sharding, shards)


def _outputs_by_device(result: Any) -> dict[int, np.ndarray]:
    return {shard.device.id: np.asarray(shard.data) for shard in result.addressable_shards}


def _collective_fn(collective: str, axes: tuple[str, ...], size: int, perm: Any) -> Any:
    lax = _jax().lax
    axis = axes if len(axes) > 1 else axes[0]
    if collective == "psum":
        return lambda x: lax.psum(x, axis)
    if collective == "all_gather":
        return lambda x: lax.all_gather(x, axis, tiled=True)
    if collective == "psum_scatter":
        return lambda x: lax.psum_scatter(x, axis, scatter_dimension=0, tiled=True)
    if collective == "ppermute":
        return lambda x: lax.ppermute(x, axis, perm=list(perm))
    if collective == "all_to_all":
        return lambda x: lax.all_to_all(x, axis, 0, 0, tiled=True)
    raise ValueError(f"unknown collective {collective!r}; expected one of {COLLECTIVES}")


def _block_for(collective: str, n: int, size: int) -> Any:
    """The device-local input block, as a function of the device id."""
    if collective == "psum":
        return lambda d: np.eye(n, dtype=np.int32)[d]
    if collective == "all_gather":
        return lambda d: np.array([d], dtype=np.int32)
    if collective == "psum_scatter":
        return lambda d: np.concatenate(
            [(j + 1) * np.eye(n, dtype=np.int32)[d] for j in range(size)]
        )
    if collective == "ppermute":
        return lambda d: np.array([d + 1], dtype=np.int32)
    if collective == "all_to_all":
        return lambda d: np.arange(size, dtype=np.int32) + d * size
    raise ValueError(f"unknown collective {collective!r}")


def _compiled_facts(compiled: Any) -> tuple[str, tuple[HloCollective, ...], int, int]:
    text = compiled.as_text()
    replicas, partitions = header_counts(text)
    return text, extract_collectives(text), replicas, partitions


def _shard_map_assignment(compiled: Any) -> tuple[tuple[int, ...], ...]:
    """The executable's device assignment as JAX compiled it: one replica, partitions in
    ``mesh.devices.flat`` order.

    Read from the compiled input sharding's device assignment, and checked against the
    devices of the loaded XLA executable (``local_devices()``, in logical-id order). Whether
    XLA really ran logical id i on that device is what the resolution tests establish: they
    map the written logical ids through this table and compare with the measured groups.
    """
    jax_view = tuple(int(d.id) for d in compiled.input_shardings[0][0]._device_assignment)
    executable = compiled._executable.xla_extension_executable()
    xla_view = tuple(int(d.id) for d in executable.local_devices())
    if jax_view != xla_view:
        raise AssertionError(f"JAX's device assignment {jax_view} != the executable's {xla_view}")
    return (jax_view,)


@functools.cache
def _measure_cached(
    collective: str,
    shape: tuple[tuple[str, int], ...],
    device_ids: tuple[int, ...],
    axes: tuple[str, ...],
    perm: tuple[tuple[int, int], ...] | None,
) -> Measurement:
    jax = _jax()
    from jax.sharding import PartitionSpec

    mesh = _jax_mesh(shape, device_ids)
    sizes = dict(shape)
    unknown = [a for a in axes if a not in sizes]
    if unknown or not axes or len(set(axes)) != len(axes):
        raise ValueError(f"axes {axes} must be distinct names from the mesh {sizes}")
    size = int(np.prod([sizes[a] for a in axes]))
    n = len(device_ids)
    if collective == "ppermute" and perm is None:
        perm = default_permutation(size)
    block = _block_for(collective, n, size)
    block_len = int(block(0).shape[0])
    spec = PartitionSpec(tuple(name for name, _ in shape))
    x = _per_device_array(mesh, spec, block, (n * block_len,))
    fn = jax.jit(
        jax.shard_map(
            _collective_fn(collective, axes, size, perm),
            mesh=mesh,
            in_specs=spec,
            out_specs=spec,
            check_vma=False,
        )
    )
    compiled = fn.lower(x).compile()
    outputs = _outputs_by_device(compiled(x))
    pairs = None
    if collective == "psum":
        groups, ordered = decode_sets(outputs), False
    elif collective == "all_gather":
        groups, ordered = decode_gathered(outputs), True
    elif collective == "psum_scatter":
        groups, ordered = decode_scattered(outputs), True
    elif collective == "all_to_all":
        groups, ordered = decode_all_to_all(outputs, size), True
    else:
        pairs = decode_pairs(outputs)
        groups, ordered = (), False
    text, collectives, replicas, partitions = _compiled_facts(compiled)
    return Measurement(
        collective=collective,
        mesh_shape=shape,
        device_ids=device_ids,
        axes=axes,
        groups=groups,
        ordered=ordered,
        pairs=pairs,
        permutation=perm,
        hlo_text=text,
        collectives=collectives,
        replica_count=replicas,
        num_partitions=partitions,
        device_assignment=_shard_map_assignment(compiled),
    )


def _normalise_mesh(
    shape: Mapping[str, int] | Sequence[tuple[str, int]], device_ids: Any
) -> tuple[tuple[tuple[str, int], ...], tuple[int, ...]]:
    items = tuple(shape.items()) if isinstance(shape, Mapping) else tuple(shape)
    items = tuple((str(name), int(size)) for name, size in items)
    count = int(np.prod([size for _, size in items]))
    ids = tuple(range(count)) if device_ids is None else tuple(int(d) for d in np.ravel(device_ids))
    if len(ids) != count or len(set(ids)) != count:
        raise ValueError(f"device_ids {ids} must list {count} distinct devices for mesh {items}")
    return items, ids


def measure(
    collective: str,
    shape: Mapping[str, int] | Sequence[tuple[str, int]],
    axes: str | Sequence[str],
    device_ids: Any = None,
    perm: Sequence[tuple[int, int]] | None = None,
) -> Measurement:
    """Run ``jax.jit(shard_map(collective over axes))`` on a mesh and decode who met.

    ``shape`` is ``{"data": 2, "model": 4}`` (major to minor); ``device_ids`` the mesh's device
    ids in mesh order (nested or flat; default ``0..N-1``); ``axes`` one name or several, in the
    order the collective names them; ``perm`` (ppermute only) pairs of in-group indices,
    default :func:`default_permutation`. Results are cached per argument tuple.
    """
    items, ids = _normalise_mesh(shape, device_ids)
    axes_t = (axes,) if isinstance(axes, str) else tuple(axes)
    perm_t = None if perm is None else tuple((int(a), int(b)) for a, b in perm)
    return _measure_cached(collective, items, ids, axes_t, perm_t)


# --------------------------------------------------------------------------------------------
# Subprocess with its own device count
# --------------------------------------------------------------------------------------------


def measure_in_subprocess(
    cases: Sequence[Mapping[str, Any]], device_count: int, timeout: float = _SUBPROCESS_TIMEOUT_S
) -> list[Measurement]:
    """Run :func:`measure` for each case (a dict of its keyword arguments: collective, shape,
    axes, device_ids, perm) in one fresh interpreter with ``device_count`` CPU devices.
    Returns the measurements in case order. Raises ``RuntimeError`` with the child's stderr
    when it fails, and ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
    payload = [_case_json(c) for c in cases]
    return [Measurement.from_json(m) for m in run_child("_measure", payload, device_count, timeout)]


def run_child(module: str, payload: Any, device_count: int, timeout: float) -> Any:
    """Run ``<this package>.<module>.main()`` in a fresh interpreter with ``device_count``
    CPU devices, JSON ``payload`` on its stdin; return its JSON stdout. A crash or non-zero
    exit is a ``RuntimeError`` carrying the child's stderr; a hang ends after ``timeout``."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={device_count}"])
    env["JAX_PLATFORMS"] = "cpu"
    package_dir = os.path.dirname(os.path.abspath(__file__))
    program = (
        f"import sys; sys.path.insert(0, {os.path.dirname(package_dir)!r}); "
        f"from {os.path.basename(package_dir)}.{module} import main; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"measuring subprocess failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    return json.loads(proc.stdout)


def _case_json(case: Mapping[str, Any]) -> dict[str, Any]:
    shape = case["shape"]
    items = list(shape.items()) if isinstance(shape, Mapping) else [list(i) for i in shape]
    device_ids = case.get("device_ids")
    return {
        "collective": case["collective"],
        "shape": items,
        "axes": [case["axes"]] if isinstance(case["axes"], str) else list(case["axes"]),
        "device_ids": None if device_ids is None else [int(d) for d in np.ravel(device_ids)],
        "perm": None if case.get("perm") is None else [list(p) for p in case["perm"]],
    }


def main() -> None:
    """Subprocess entry point: JSON cases on stdin, JSON measurements on stdout."""
    cases = json.load(sys.stdin)
    results = []
    for case in cases:
        m = measure(
            case["collective"],
            [tuple(i) for i in case["shape"]],
            case["axes"],
            device_ids=case["device_ids"],
            perm=None if case["perm"] is None else [tuple(p) for p in case["perm"]],
        )
        results.append(m.to_json())
    json.dump(results, sys.stdout)

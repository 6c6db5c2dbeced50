"""Run one collective written in StableHLO with any replica count, partition count, device
assignment and group mode, and measure which devices met.

JAX's jit cannot make ``replica_count > 1`` programs; XLA's client can, given compile options
with an explicit ``DeviceAssignment``. So every group mode (cross_replica,
cross_partition, cross_replica_and_partition, flattened_id) runs for real here.

Facts measured with jaxlib 0.10.2 on CPU, relied on below:

* the executable takes one buffer per (replica, partition), in row-major device-assignment
  order (``table.flat``); ``local_devices()`` only echoes the device list passed in;
* without an explicit assignment the CPU client places row-major, ``DA[r][p] = r*P + p`` over
  its addressable devices (``TfrtCpuClient::GetDefaultDeviceAssignment``); its source falls
  back to ``ComputationPlacer::AssignDevices`` (``DA[r][c] = c*R + r``) only when ``R*P``
  exceeds them, which cannot run here (that table names devices that do not exist);
* if XLA placed the program differently from the table the inputs were laid out by, the
  client crashes the process (SIGSEGV) instead of raising, hence the child-process runner.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._decode import decode_gathered, decode_pairs, decode_sets
from ._hlo_text import HloCollective, extract_collectives, header_counts
from ._measure import _devices_by_id, _jax, run_child

RAW_OPS = ("all_reduce", "all_gather", "collective_permute")


def _dense_groups(groups: Sequence[Sequence[int]]) -> str:
    rows = [list(g) for g in groups]
    if not rows:
        return "dense<> : tensor<0x0xi64>"
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise ValueError(f"groups {rows} must all have the same size for a dense attribute")
    body = ",".join("[" + ",".join(str(v) for v in r) + "]" for r in rows)
    return f"dense<[{body}]> : tensor<{len(rows)}x{width}xi64>"


def _raw_module(
    op: str,
    replica_count: int,
    partition_count: int,
    groups: Sequence[Sequence[int]],
    channel_id: int | None,
    use_global_device_ids: bool,
    width: int,
    out_width: int,
) -> str:
    channel = (
        f"channel_handle = #stablehlo.channel_handle<handle = {channel_id}, type = 1>, "
        if channel_id is not None
        else ""
    )
    global_ids = ", use_global_device_ids" if use_global_device_ids else ""
    t_in, t_out = f"tensor<{width}xi32>", f"tensor<{out_width}xi32>"
    if op == "all_reduce":
        body = (
            f'%0 = "stablehlo.all_reduce"(%arg0) ({{\n'
            "      ^bb0(%a: tensor<i32>, %b: tensor<i32>):\n"
            "        %s = stablehlo.add %a, %b : tensor<i32>\n"
            "        stablehlo.return %s : tensor<i32>\n"
            f"    }}) {{{channel}replica_groups = {_dense_groups(groups)}{global_ids}}}"
            f" : ({t_in}) -> {t_out}"
        )
    elif op == "all_gather":
        body = (
            f'%0 = "stablehlo.all_gather"(%arg0) {{all_gather_dim = 0 : i64, {channel}'
            f"replica_groups = {_dense_groups(groups)}{global_ids}}} : ({t_in}) -> {t_out}"
        )
    elif op == "collective_permute":
        body = (
            f'%0 = "stablehlo.collective_permute"(%arg0) {{{channel}'
            f"source_target_pairs = {_dense_groups(groups)}}} : ({t_in}) -> {t_out}"
        )
    else:
        raise ValueError(f"unknown raw op {op!r}; expected one of {RAW_OPS}")
    return (
        f"module @oracle attributes {{mhlo.num_replicas = {replica_count} : i32, "
        f"mhlo.num_partitions = {partition_count} : i32}} {{\n"
        f"  func.func public @main(%arg0: {t_in}) -> {t_out} {{\n"
        f"    {body}\n"
        f"    return %0 : {t_out}\n"
        "  }\n}\n"
    )


@dataclasses.dataclass(frozen=True)
class RawMeasurement:
    """A raw program's measured groups (device ids) and what XLA compiled.

    ``groups``: all_reduce -> sorted device sets; all_gather -> rank-ordered device lists.
    ``pairs``: collective_permute -> measured (source device, target device) pairs, sorted.
    """

    op: str
    device_assignment: tuple[tuple[int, ...], ...]
    groups: tuple[tuple[int, ...], ...]
    pairs: tuple[tuple[int, int], ...] | None
    hlo_text: str
    collectives: tuple[HloCollective, ...]
    replica_count: int
    num_partitions: int

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["collectives"] = [c.to_json() for c in self.collectives]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RawMeasurement:
        return cls(
            op=data["op"],
            device_assignment=tuple(tuple(int(d) for d in r) for r in data["device_assignment"]),
            groups=tuple(tuple(int(d) for d in g) for g in data["groups"]),
            pairs=None
            if data["pairs"] is None
            else tuple((int(a), int(b)) for a, b in data["pairs"]),
            hlo_text=data["hlo_text"],
            collectives=tuple(HloCollective(**c) for c in data["collectives"]),
            replica_count=int(data["replica_count"]),
            num_partitions=int(data["num_partitions"]),
        )


@functools.cache
def _measure_raw_cached(
    op: str,
    device_assignment: tuple[tuple[int, ...], ...],
    groups: tuple[tuple[int, ...], ...],
    channel_id: int | None,
    use_global_device_ids: bool,
    group_size: int,
    pass_assignment: bool,
) -> RawMeasurement:
    jax = _jax()
    from jax._src.lib import xla_client as xc
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    table = np.asarray(device_assignment, dtype=np.int64)
    replicas, partitions = table.shape
    by_id = _devices_by_id()
    n = max(by_id) + 1
    width = {"all_reduce": n, "all_gather": 1, "collective_permute": 1}[op]
    out_width = width * group_size if op == "all_gather" else width
    text = _raw_module(
        op, replicas, partitions, groups, channel_id, use_global_device_ids, width, out_width
    )
    options = xc.CompileOptions()
    options.num_replicas = replicas
    options.num_partitions = partitions
    options.executable_build_options.use_spmd_partitioning = partitions > 1
    if pass_assignment:
        options.device_assignment = xc.DeviceAssignment.create(table)
    # The executable takes one buffer per (replica, partition), in row-major table order
    # (when the assignment is not passed, a wrong guess fails with INVALID_ARGUMENT).
    order = [by_id[int(d)] for d in table.flat]
    client = order[0].client
    executable = client.compile_and_load(
        text, executable_devices=xc.DeviceList(tuple(order)), compile_options=options
    )
    if op == "all_reduce":
        inputs = [np.eye(n, dtype=np.int32)[d.id] for d in order]
    else:
        inputs = [np.array([d.id + 1], dtype=np.int32) for d in order]
    mesh = Mesh(np.array(order, dtype=object), ("flat",))
    shards = [jax.device_put(v, d) for v, d in zip(inputs, order, strict=True)]
    arg = jax.make_array_from_single_device_arrays(
        (len(order) * width,), NamedSharding(mesh, PartitionSpec("flat")), shards
    )
    results = executable.execute_sharded([arg]).disassemble_into_single_device_arrays()[0]
    outputs = {next(iter(r.devices())).id: np.asarray(r) for r in results}
    pairs = None
    if op == "all_reduce":
        measured = decode_sets(outputs)
    elif op == "all_gather":
        measured = decode_gathered({d: out - 1 for d, out in outputs.items()})
    else:
        measured = ()
        pairs = decode_pairs(outputs)
    compiled_text = executable.hlo_modules()[0].to_string()
    r, p = header_counts(compiled_text)
    return RawMeasurement(
        op=op,
        device_assignment=device_assignment,
        groups=measured,
        pairs=pairs,
        hlo_text=compiled_text,
        collectives=extract_collectives(compiled_text),
        replica_count=r,
        num_partitions=p,
    )


def measure_raw(
    op: str,
    device_assignment: Any,
    groups: Sequence[Sequence[int]],
    *,
    channel_id: int | None = None,
    use_global_device_ids: bool = False,
    group_size: int | None = None,
    pass_assignment: bool = True,
) -> RawMeasurement:
    """Compile and run one collective written in StableHLO, with an explicit device assignment
    (``[replica][partition]`` device ids) and groups as written (or, for
    ``collective_permute``, source-target pairs of logical ids).

    ``channel_id`` and ``use_global_device_ids`` choose the group mode exactly as in HLO.
    ``group_size`` (all_gather only) is the number of devices per resolved group, which sets
    the output width; default: the size of the first written group. With
    ``pass_assignment=False`` the table is not given to XLA, which then places the program
    itself; the table is the caller's claim of that placement (inputs are laid out by it, and
    execution fails if XLA placed otherwise). Cached per arguments.
    """
    table = tuple(tuple(int(d) for d in row) for row in np.asarray(device_assignment))
    groups_t = tuple(tuple(int(v) for v in g) for g in groups)
    size = group_size if group_size is not None else (len(groups_t[0]) if groups_t else 1)
    return _measure_raw_cached(
        op, table, groups_t, channel_id, use_global_device_ids, size, pass_assignment
    )


def measure_raw_in_subprocess(
    cases: Sequence[Mapping[str, Any]], device_count: int = 8, timeout: float = 120.0
) -> list[RawMeasurement]:
    """Run :func:`measure_raw` for each case (a dict of its arguments) in a fresh interpreter.

    Use this where a wrong guess could crash the process: when XLA is left to place the
    program (``pass_assignment=False``) and its placement differs from the table given,
    jaxlib 0.10.2 segfaults rather than raising."""
    payload = [
        {
            "op": c["op"],
            "device_assignment": np.asarray(c["device_assignment"]).tolist(),
            "groups": [list(g) for g in c["groups"]],
            "channel_id": c.get("channel_id"),
            "use_global_device_ids": bool(c.get("use_global_device_ids", False)),
            "group_size": c.get("group_size"),
            "pass_assignment": bool(c.get("pass_assignment", True)),
        }
        for c in cases
    ]
    return [RawMeasurement.from_json(m) for m in run_child("_raw", payload, device_count, timeout)]


def main() -> None:
    """Subprocess entry point: JSON raw cases on stdin, JSON measurements on stdout."""
    import json
    import sys

    results = []
    for case in json.load(sys.stdin):
        op = case.pop("op")
        table = case.pop("device_assignment")
        groups = case.pop("groups")
        results.append(measure_raw(op, table, groups, **case).to_json())
    json.dump(results, sys.stdout)

"""Execute HLO modules through XLA on CPU devices, in a child process, for comparison.

The text is read by XLA's own HLO parser (``hlo_module_from_text``), converted to StableHLO
and compiled with the module's replica and partition counts and an explicit device assignment,
so ``replica_count > 1`` modules and every group mode run for real (as ``tests/oracle/_raw``
does for StableHLO). The executable takes one buffer per (replica, partition) in row-major
table order; results come back per device id.

Run as a script: ``_xla_run.py CASES.npz RESULTS.npz``; each case ``i`` stores ``i/text``,
``i/table`` and ``i/<device>/<parameter>``; results are ``i/<device>`` (tuple roots:
``i/<device>/<index>``), or ``i/error``. ``.npz`` cannot hold ml_dtypes' arrays (bf16, f8), so
each travels as its bits with its type's name under ``dtype/<its key>``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

DEVICE_COUNT = 8


def _pack(payload: dict[str, np.ndarray], key: str, array: np.ndarray) -> None:
    """Store ``array`` under ``key``, with its ml_dtypes type's name when it has one."""
    payload[key] = np.asarray(array)
    if array.dtype.type.__module__.startswith("ml_dtypes"):
        payload[key] = array.view(f"u{array.itemsize}")
        payload[f"dtype/{key}"] = np.array(array.dtype.name)


def _unpack(data: Mapping[str, np.ndarray], key: str) -> np.ndarray:
    """The array stored by ``_pack`` under ``key``, in its type."""
    array = data[key]
    if f"dtype/{key}" in data:
        import ml_dtypes

        array = array.view(getattr(ml_dtypes, str(data[f"dtype/{key}"])))
    return array


def _run_case(text: str, table: np.ndarray, inputs: Mapping[int, Sequence[np.ndarray]]
              ) -> dict[int, list[np.ndarray]]:
    import jax
    import jaxlib._hlo as hlo
    from jax._src.lib import _jax
    from jax._src.lib import xla_client as xc
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    replicas, partitions = table.shape
    module = hlo.hlo_module_from_text(text)
    mlir = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    options = xc.CompileOptions()
    options.num_replicas = replicas
    options.num_partitions = partitions
    options.executable_build_options.use_spmd_partitioning = partitions > 1
    options.device_assignment = xc.DeviceAssignment.create(table)
    by_id = {d.id: d for d in jax.devices()}
    order = [by_id[int(d)] for d in table.flat]
    executable = order[0].client.compile_and_load(
        mlir, executable_devices=xc.DeviceList(tuple(order)), compile_options=options)
    mesh = Mesh(np.array(order, dtype=object), ("flat",))
    arguments = []
    for k in range(len(inputs[int(table.flat[0])])):
        shards = [jax.device_put(inputs[d.id][k], d) for d in order]
        shape = (len(order) * shards[0].shape[0], *shards[0].shape[1:])
        arguments.append(jax.make_array_from_single_device_arrays(
            shape, NamedSharding(mesh, PartitionSpec("flat")), shards))
    results = executable.execute_sharded(arguments).disassemble_into_single_device_arrays()
    outputs: dict[int, list[np.ndarray]] = {}
    for element in results:
        for shard in element:
            device = next(iter(shard.devices())).id
            outputs.setdefault(device, []).append(np.asarray(shard))
    return outputs


def main() -> None:
    """Script entry point: run every case of CASES.npz, write RESULTS.npz."""
    cases_path, results_path = sys.argv[1], sys.argv[2]
    results: dict[str, np.ndarray] = {}
    with np.load(cases_path) as stored:
        data = {name: stored[name] for name in stored.files}
        count = int(data["count"])
        for i in range(count):
            table = data[f"{i}/table"]
            text = str(data[f"{i}/text"])
            inputs = {int(d): [_unpack(data, f"{i}/{d}/{k}")
                               for k in range(int(data[f"{i}/params"]))]
                      for d in table.flat}
            try:
                outputs = _run_case(text, table, inputs)
            except Exception as error:  # reported per case to the parent
                results[f"{i}/error"] = np.array(str(error)[:2000])
                continue
            for device, values in outputs.items():
                for j, value in enumerate(values):
                    _pack(results, f"{i}/{device}/{j}", value)
    np.savez(results_path, **results)


def run_in_xla(cases: Sequence[tuple[str, np.ndarray, Mapping[int, Sequence[np.ndarray]]]],
               timeout: float = 240.0) -> list[dict[int, list[np.ndarray]] | str]:
    """Each case's per-device outputs (a list: one array, or the tuple root's elements), or
    XLA's error text, from one child process with 8 CPU devices."""
    with tempfile.TemporaryDirectory() as tmp:
        cases_path, results_path = Path(tmp, "cases.npz"), Path(tmp, "results.npz")
        payload: dict[str, np.ndarray] = {"count": np.array(len(cases))}
        for i, (text, table, inputs) in enumerate(cases):
            payload[f"{i}/text"] = np.array(text)
            payload[f"{i}/table"] = np.asarray(table, dtype=np.int64)
            first = next(iter(inputs.values()))
            payload[f"{i}/params"] = np.array(len(first))
            for d, arrays in inputs.items():
                for k, array in enumerate(arrays):
                    _pack(payload, f"{i}/{d}/{k}", np.asarray(array))
        np.savez(cases_path, **payload)
        env = dict(os.environ, JAX_PLATFORMS="cpu",
                   XLA_FLAGS=f"--xla_force_host_platform_device_count={DEVICE_COUNT}")
        subprocess.run([sys.executable, __file__, str(cases_path), str(results_path)],
                       env=env, check=True, timeout=timeout, capture_output=True)
        out: list[dict[int, list[np.ndarray]] | str] = []
        with np.load(results_path) as stored:
            data = {name: stored[name] for name in stored.files}
            for i in range(len(cases)):
                if f"{i}/error" in data:
                    out.append(str(data[f"{i}/error"]))
                    continue
                found: dict[int, dict[int, np.ndarray]] = {}
                for name in data:
                    parts = name.split("/")
                    if len(parts) == 3 and parts[0] == str(i):
                        found.setdefault(int(parts[1]), {})[int(parts[2])] = _unpack(data, name)
                out.append({d: [v[j] for j in sorted(v)] for d, v in sorted(found.items())})
        return out


if __name__ == "__main__":
    main()

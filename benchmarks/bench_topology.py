"""Speed of meshtopo's topology layer against numpy, timed side by side in the same process.

Goal (figure / anchor, best of several interleaved samples after a warm-up; reported, never
asserted):

1. Tiers and bytes for every group of a 65,536-device mesh over each axis (``group_tiers``
   then ``slowest_link_bytes`` for a 1 GiB all-reduce): within 5x of numpy writing the
   per-device arrays such an answer is read from, one ``np.take`` per property table: host
   and domain of every device of every group, and on a torus its coordinates. Two clusters:
   8,192 H100 servers, and one TPU v5p slice of 16x64x64 chips.

The anchor's arrays (512 KiB each) sit right at glibc's mmap threshold: depending on the
allocator's state it takes ~80 us (heap) or ~450 us (fresh pages) on this kind of machine, and
the ratio moves with it. ``MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456
python -m benchmarks --only topology`` pins the fast state, where the ratios are largest.
"""

from __future__ import annotations

import os

import numpy as np

import meshtopo as mt
from benchmarks._timing import Comparison, comparison_table, console, measure_all, summary
from meshtopo.topology import Cluster, group_tiers, preset
from meshtopo.topology._cost import slowest_link_bytes

MESH = {"pp": 16, "dp": 64, "fsdp": 8, "tp": 8}
CLUSTERS = (("8,192 x 8 H100", ("h100-8x",), {"hosts": 8192}),
            ("v5p 16x64x64", ("tpu-v5p",), {"shape": (16, 64, 64)}))  # fmt: skip


def _compare(rows: list[Comparison], label: str, cluster: Cluster, axis: str, groups: np.ndarray) -> None:
    flat = groups.reshape(-1)
    tables = [cluster.device_hosts, cluster.device_domains]

    def ours() -> object:
        return slowest_link_bytes(cluster, group_tiers(cluster, groups), "all-reduce", 2**30)

    def anchor() -> object:
        written = [np.take(table, flat) for table in tables]
        if cluster.device_coords is not None:
            written.append(np.take(cluster.device_coords, flat, axis=0))
        return written

    timing = measure_all({"ours": ours, "anchor": anchor})
    shape = "x".join(map(str, groups.shape))
    rows.append(Comparison("1", f"{label}, over {axis} ({shape})", timing["ours"].best,
                           "np.take per table", timing["anchor"].best, 5.0))  # fmt: skip


def bench_tiers(rows: list[Comparison]) -> None:
    mesh = mt.Mesh(MESH)
    for label, args, kwargs in CLUSTERS:
        cluster = preset(*args, **kwargs)
        cluster.host_index, cluster.coord_index  # noqa: B018 - build the cached tables first
        for axis in mesh.axis_names:
            _compare(rows, label, cluster, axis, mesh.group_array(axis))


def main() -> None:
    """Run the goal and print the comparison table and a summary paragraph."""
    rows: list[Comparison] = []
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    console.print(f"[dim]{os.cpu_count()} CPUs, load average {load} at the start[/dim]")
    console.print("[bold]1: tiers and bytes per group of a 65,536-device mesh, every axis[/bold]")
    bench_tiers(rows)
    console.print(comparison_table("meshtopo topology vs numpy (ratio = meshtopo / anchor)", rows))
    console.print(summary(rows))


if __name__ == "__main__":
    main()

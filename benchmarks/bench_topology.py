"""Speed of meshtopo's topology layer against numpy, timed side by side in the same process.

Goal (figure / anchor, best of several interleaved samples after a warm-up; reported, never
asserted):

1. Tiers and bytes for every group of a 65,536-device mesh over each axis (``group_tiers``
   then ``slowest_link_bytes`` for a 1 GiB all-reduce): within 5x of numpy writing the
   per-device arrays such an answer is read from, one ``np.take`` per property table: host
   and domain of every device of every group, and on a torus its coordinates. Two clusters:
   8,192 H100 servers, and one TPU v5p slice of 16x64x64 chips; the mesh's devices in
   order, and shuffled (a job's hosts in the scheduler's order, not the rack's).
2. ``plan`` (every axis x its default opcodes) within 5x of
   numpy writing the same tables for every axis.

Each comparison interleaves the two sides in every round and prints the best of each and
the median over rounds of the within-round ratio with its spread (``measure_paired``). A
side's turn in a round repeats its call for at least ``ROUND_SECONDS`` (the anchor of one
axis takes a few hundred microseconds, which one scheduler tick on a shared machine would
otherwise swamp), and its figure is per call.

The anchor's arrays (512 KiB each) sit right at glibc's mmap threshold: depending on the
allocator's state it takes ~80 us (heap) or ~450 us (fresh pages) on this kind of machine, and
the ratio moves with it. ``MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456
python -m benchmarks --only topology`` pins the fast state, where the ratios are largest.
"""

from __future__ import annotations

import os

import numpy as np

import meshtopo as mt
from benchmarks._timing import Comparison, comparison_table, console, measure_paired, summary
from meshtopo.topology import PLAN_OPCODES, Cluster, group_tiers, plan, preset
from meshtopo.topology._cost import slowest_link_bytes

MESH = {"pp": 16, "dp": 64, "fsdp": 8, "tp": 8}
CLUSTERS = (("8,192 x 8 H100", ("h100-8x",), {"hosts": 8192}),
            ("v5p 16x64x64", ("tpu-v5p",), {"shape": (16, 64, 64)}))  # fmt: skip
ROUNDS = 30
ROUND_SECONDS = 0.02


def _anchor(cluster: Cluster, flat: np.ndarray) -> list[np.ndarray]:
    """numpy writing the per-device tables of ``flat``: host, domain (and torus coords)."""
    written = [np.take(cluster.device_hosts, flat), np.take(cluster.device_domains, flat)]
    if cluster.device_coords is not None:
        written.append(np.take(cluster.device_coords, flat, axis=0))
    return written


def _compare(rows: list[Comparison], label: str, cluster: Cluster, axis: str, groups: np.ndarray) -> None:
    flat = groups.reshape(-1)

    def ours() -> object:
        return slowest_link_bytes(cluster, group_tiers(cluster, groups), "all-reduce", 2**30)

    paired = measure_paired(ours, lambda: _anchor(cluster, flat), ROUNDS, ROUND_SECONDS)
    shape = "x".join(map(str, groups.shape))
    rows.append(Comparison("1", f"{label}, over {axis} ({shape})", paired.first,
                           "np.take per table", paired.second, 5.0,
                           f"paired median {paired.median_ratio:.2f}, spread "
                           f"{paired.low_ratio:.2f}-{paired.high_ratio:.2f}"))  # fmt: skip


def bench_tiers(rows: list[Comparison]) -> None:
    mesh = mt.Mesh(MESH)
    shuffled = np.random.default_rng(0).permutation(mesh.size)
    for label, args, kwargs in CLUSTERS:
        cluster = preset(*args, **kwargs)
        cluster.host_index, cluster.coord_index  # noqa: B018 - build the cached tables first
        for axis in mesh.axis_names:
            groups = mesh.group_array(axis)
            _compare(rows, label, cluster, axis, groups)
            _compare(rows, f"{label}, shuffled devices", cluster, axis, shuffled[groups])


def bench_plan(rows: list[Comparison]) -> None:
    mesh = mt.Mesh(MESH)
    for label, args, kwargs in CLUSTERS:
        cluster = preset(*args, **kwargs)
        cluster.host_index, cluster.coord_index  # noqa: B018 - build the cached tables first
        flats = [mesh.group_array(axis).reshape(-1) for axis in mesh.axis_names]
        paired = measure_paired(
            lambda c=cluster: plan(c, mesh, 2**30),
            lambda c=cluster, f=flats: [_anchor(c, flat) for flat in f], ROUNDS, ROUND_SECONDS)
        rows.append(Comparison("2", f"plan, {label}, {len(flats)} axes x {len(PLAN_OPCODES)} "
                               "opcodes", paired.first, "np.take per table, every axis",
                               paired.second, 5.0,
                               f"paired median {paired.median_ratio:.2f}, spread "
                               f"{paired.low_ratio:.2f}-{paired.high_ratio:.2f}"))


def main() -> None:
    """Run the goal and print the comparison table and a summary paragraph."""
    rows: list[Comparison] = []
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    console.print(f"[dim]{os.cpu_count()} CPUs, load average {load} at the start[/dim]")
    console.print("[bold]1: tiers and bytes per group of a 65,536-device mesh, every axis[/bold]")
    bench_tiers(rows)
    console.print("[bold]2: plan of a 65,536-device mesh[/bold]")
    bench_plan(rows)
    console.print(comparison_table("meshtopo topology vs numpy (ratio = meshtopo / anchor)", rows))
    console.print(summary(rows))


if __name__ == "__main__":
    main()

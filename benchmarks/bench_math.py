"""Speed of meshtopo's math layer against anchors timed side by side in the same process.

Goals (figure / anchor, best of several runs after a warm-up; reported, never asserted):

1. ``IotaTileAssignment.to_array()`` and ``IotaReplicaGroupList.flattened_replica_groups()``
   of 2**24 devices: at least 4x faster than jaxlib's C++
   ``HloSharding.iota_tile(...).tile_assignment_devices()``, and within 1.3x of numpy's own
   materialisation ``np.ascontiguousarray(np.arange(N).reshape(r).transpose(p))``.
2. ``CollectiveDeviceList(explicit).compact()`` of 2**20 ids: within 5x of expanding the
   same groups from their iota form (``IotaReplicaGroupList.flattened_replica_groups()``).
3. ``participating_device_groups_array`` resolving 65,536 devices in each group mode: within
   5x of writing the output with one numpy gather ``np.take(table, index)`` of the same size.
4. ``group_of`` on an iota list: per-query time independent of N and O(number of axes).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from functools import partial

import numpy as np
from rich.table import Table

import meshtopo as mt
from benchmarks._timing import (
    Comparison,
    comparison_table,
    console,
    measure,
    measure_all,
    seconds,
    summary,
)

N_TILE = 2**24
TILE_CASES = (
    ("T(1,0)", (4096, 4096), (4096, 4096), (1, 0)),
    ("6-D", (4096, 4096), (16,) * 6, (5, 3, 1, 0, 2, 4)),
)
COMPACT_CASES = (
    ("T(1,0)", (1024, 1024), (1, 0)),
    ("4-D", (32, 32, 32, 32), (3, 1, 0, 2)),
)
Mode = mt.CollectiveOpGroupMode
REPLICAS = PARTITIONS = 256
MODE_CASES = (
    (
        Mode.CROSS_REPLICA,
        "[16,16]<=[16,16]T(1,0) over 256 replicas x 256 partitions",
        (16, 16, (16, 16), (1, 0)),
    ),
    (
        Mode.CROSS_PARTITION,
        "[16,16]<=[16,16]T(1,0) over 256 partitions x 256 replicas",
        (16, 16, (16, 16), (1, 0)),
    ),
    (
        Mode.CROSS_REPLICA_AND_PARTITION,
        "[16,16]<=[16,16]T(1,0) x 256 partitions",
        (16, 16, (16, 16), (1, 0)),
    ),
    (Mode.FLATTENED_ID, "[256,256]<=[256,256]T(1,0) flattened ids", (256, 256, (256, 256), (1, 0))),
)
BATCH = 65_536


def _xla_client() -> object | None:
    try:
        from jax._src.lib import xla_client
    except Exception as error:  # jax is optional: the anchor is then reported missing
        console.print(
            f"[yellow]jaxlib's xla_client is unavailable ({error}); skipping that anchor[/yellow]"
        )
        return None
    return xla_client


def bench_tiles(rows: list[Comparison]) -> None:
    """Goal 1: materialising 2**24-device iota tiles.

    ``to_array()`` may hand back a strided view of an iota (for a pure 2-D transpose the final
    reshape is free), which is not yet the materialised array the anchors write; the goal rows
    therefore time ``np.ascontiguousarray(tile.to_array())`` (no extra work when the result is
    already C-contiguous) and the raw call is printed alongside.
    """
    xla_client = _xla_client()
    for label, dims, reshape, perm in TILE_CASES:
        tile = mt.IotaTileAssignment(dims, reshape, perm)
        groups = mt.IotaReplicaGroupList(dims[0], dims[1], reshape, perm)
        console.print(f"  {label}: {tile}")
        expected = _numpy_transpose(N_TILE, reshape, perm)
        contiguous = tile.to_array().flags.c_contiguous
        same = np.array_equal(tile.to_array().reshape(-1), expected.reshape(-1)) and np.array_equal(
            groups.flattened_replica_groups(), expected.reshape(-1)
        )
        del expected
        timings = measure_all(
            {
                "raw": tile.to_array,
                "to_array": partial(_contiguous, tile),
                "flat": groups.flattened_replica_groups,
                "numpy": partial(_numpy_transpose, N_TILE, reshape, perm),
            }
        )
        raw, to_array, flat, numpy = (timings[key] for key in ("raw", "to_array", "flat", "numpy"))
        console.print(
            f"    values equal numpy's: {same}; to_array() alone {seconds(raw.best)}, "
            f"C-contiguous: {contiguous}"
        )
        name = "to_array()" if contiguous else "to_array() made contiguous"
        if xla_client is not None:
            sharding = xla_client.HloSharding.iota_tile(list(dims), list(reshape), list(perm))  # type: ignore[attr-defined]
            xla = measure(sharding.tile_assignment_devices, repeat=3)
            agrees = np.array_equal(
                np.asarray(sharding.tile_assignment_devices(), dtype=np.int64),
                tile.to_array().reshape(-1),
            )
            console.print(
                f"    jaxlib tile_assignment_devices(): best {seconds(xla.best)}, cold first call "
                f"{seconds(xla.first)} (a Python list of {N_TILE} ints); agrees with meshtopo: {agrees}"
            )
            rows.append(
                Comparison("1", f"{label} {name}", to_array.best, "jaxlib C++", xla.best, 0.25)
            )
            rows.append(
                Comparison(
                    "1",
                    f"{label} flattened_replica_groups()",
                    flat.best,
                    "jaxlib C++",
                    xla.best,
                    0.25,
                )
            )
        rows.append(
            Comparison("1", f"{label} {name}", to_array.best, "numpy transpose", numpy.best, 1.3)
        )
        rows.append(
            Comparison(
                "1",
                f"{label} flattened_replica_groups()",
                flat.best,
                "numpy transpose",
                numpy.best,
                1.3,
            )
        )


def bench_compact(rows: list[Comparison]) -> None:
    """Goal 2: recognising 2**20 explicit ids as an iota list."""
    for label, reshape, perm in COMPACT_CASES:
        iota = mt.IotaReplicaGroupList(1024, 1024, reshape, perm)
        explicit = np.ascontiguousarray(iota.to_array(), dtype=np.int64)
        device_list = mt.CollectiveDeviceList(explicit)
        found = device_list.compact().iota
        timings = measure_all(
            {
                "compact": device_list.compact,
                "with_construction": partial(_construct_and_compact, explicit),
                "expand": iota.flattened_replica_groups,
            }
        )
        compact, with_construction, expand = (
            timings[key] for key in ("compact", "with_construction", "expand")
        )
        console.print(
            f"  {label}: {iota} as an explicit [1024,1024] int64 array; compact() finds {found} "
            f"(equal to the source: {found == iota}); with construction "
            f"CollectiveDeviceList(array).compact() {seconds(with_construction.best)}"
        )
        rows.append(
            Comparison("2", f"{label} compact()", compact.best, "iota expansion", expand.best, 5.0)
        )


def _contiguous(tile: mt.IotaTileAssignment) -> np.ndarray:
    return np.ascontiguousarray(tile.to_array())


def _numpy_transpose(total: int, reshape: tuple[int, ...], perm: tuple[int, ...]) -> np.ndarray:
    """numpy's own materialisation of the iota transpose (the anchor for goal 1)."""
    return np.ascontiguousarray(np.arange(total, dtype=np.int64).reshape(reshape).transpose(perm))


def _construct_and_compact(explicit: np.ndarray) -> mt.CollectiveDeviceList:
    return mt.CollectiveDeviceList(explicit).compact()


def _fresh_call(
    function: Callable[..., object],
    fresh: Callable[[], mt.CollectiveDeviceList],
    mode: mt.CollectiveOpGroupMode,
    assignment: mt.DeviceAssignment,
) -> object:
    """``function(fresh(), mode, assignment)``: a new device list per call, so nothing cached
    from the previous call is reused."""
    return function(fresh(), mode, assignment)


def _mode_inputs(
    groups: tuple[int, int, tuple[int, ...], tuple[int, ...]],
) -> Callable[[], mt.CollectiveDeviceList]:
    count, size, reshape, perm = groups
    return lambda: mt.CollectiveDeviceList(mt.IotaReplicaGroupList(count, size, reshape, perm))


def bench_modes(rows: list[Comparison]) -> None:
    """Goal 3: multiplying replica groups out into device groups, all four modes."""
    assignment = mt.DeviceAssignment.default(REPLICAS, PARTITIONS)
    table = np.ascontiguousarray(assignment.array).reshape(-1)
    position_of = np.empty(table.size, dtype=np.int64)
    position_of[table] = np.arange(table.size, dtype=np.int64)
    info: list[tuple[str, list[int], float, float, float]] = []
    for mode, label, groups in MODE_CASES:
        fresh = _mode_inputs(groups)
        result = mt.participating_device_groups_array(fresh(), mode=mode, device_assignment=assignment)
        index = position_of[result]
        timings = measure_all(
            {
                "array": partial(
                    _fresh_call, mt.participating_device_groups_array, fresh, mode, assignment
                ),
                "lists": partial(
                    _fresh_call, mt.participating_device_groups, fresh, mode, assignment
                ),
                "gather": partial(np.take, table, index),
            }
        )
        as_array, as_lists, gather = (timings[key] for key in ("array", "lists", "gather"))
        console.print(f"  {mode}: {label} -> {list(result.shape)}")
        rows.append(
            Comparison("3", f"{mode} array", as_array.best, "np.take gather", gather.best, 5.0)
        )
        info.append((str(mode), list(result.shape), as_array.best, as_lists.best, gather.best))
    console.print(
        "  anchor: np.take(table, index) with a precomputed int64 index of the output's size: one "
        "vectorised gather writing the same 65,536 device ids; each meshtopo call gets a freshly "
        "built iota CollectiveDeviceList (so its expansion is timed, not cached)"
    )
    for mode_name, shape, array_time, lists_time, gather_time in info:
        console.print(
            f"  {mode_name} {shape}: participating_device_groups (lists) {seconds(lists_time)}, "
            f"{lists_time / gather_time:.1f}x the gather (for information; the array form "
            f"{seconds(array_time)})"
        )


def _axes_case(axes: int, total: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Reshape dims of ``axes`` powers of two multiplying to ``total``, under the reversing perm
    (no two axes merge, so the canonical form keeps ``axes`` dims)."""
    bits = int(math.log2(total))
    sizes = [bits // axes + (1 if i < bits % axes else 0) for i in range(axes)]
    return tuple(2**s for s in sizes), tuple(reversed(range(axes)))


def _group_of_case(reshape: tuple[int, ...], perm: tuple[int, ...], total: int) -> dict[str, float]:
    side = math.isqrt(total)
    iota = mt.IotaReplicaGroupList(side, total // side, reshape, perm)
    device_list = mt.CollectiveDeviceList(iota)
    rng = np.random.default_rng(0)
    batch = rng.integers(0, total, size=BATCH, dtype=np.int64)
    single = int(batch[0])
    group, rank = iota.group_of(batch)
    values = iota.to_array()[group, rank]
    if not np.array_equal(values, batch):
        console.print(f"[red]group_of disagrees with the expanded groups for {iota}[/red]")
    singles = measure_all(
        {
            "iota_single": partial(iota.group_of, single),
            "list_single": partial(device_list.group_of, single),
        }
    )
    batches = measure_all(
        {
            "iota_batch": partial(iota.group_of, batch),
            "list_batch": partial(device_list.group_of, batch),
        }
    )
    return {
        "canonical": len(iota.reshape_dims),
        **{key: timing.best for key, timing in singles.items()},
        **{key: timing.best / BATCH for key, timing in batches.items()},
    }


def bench_group_of(rows: list[Comparison]) -> None:
    """Goal 4: which group holds device d, answered without expanding."""
    table = Table(title="4: group_of per query (batch = 65,536 random ids)", title_justify="left")
    for column in (
        "N",
        "reshape dims",
        "axes",
        "iota single",
        "list single",
        "iota batch/query",
        "list batch/query",
    ):
        table.add_column(column, justify="right" if column != "reshape dims" else "left")
    by_axes: dict[int, dict[str, float]] = {}
    by_size: dict[int, dict[str, float]] = {}
    for axes in range(1, 7):
        reshape, perm = _axes_case(axes, N_TILE)
        by_axes[axes] = figures = _group_of_case(reshape, perm, N_TILE)
        _add_group_of_row(table, N_TILE, reshape, perm, figures)
    for bits in (12, 16, 20, 24):
        reshape, perm = _axes_case(2, 2**bits)
        by_size[bits] = figures = _group_of_case(reshape, perm, 2**bits)
        _add_group_of_row(table, 2**bits, reshape, perm, figures)
    console.print(table)
    console.print(
        "  iota = IotaReplicaGroupList.group_of, list = CollectiveDeviceList(iota).group_of; "
        "single = one Python int per call, batch/query = one call on 65,536 ids divided by 65,536"
    )
    for key, name in (
        ("iota_single", "iota list, single id"),
        ("list_single", "device list, single id"),
        ("iota_batch", "iota list, batch/query"),
        ("list_batch", "device list, batch/query"),
    ):
        rows.append(
            Comparison(
                "4", f"{name}, N=2^24", by_size[24][key], "same, N=2^12", by_size[12][key], 1.5
            )
        )
    for key, name in (
        ("iota_single", "iota list, single id"),
        ("iota_batch", "iota list, batch/query"),
    ):
        rows.append(
            Comparison(
                "4", f"{name}, 6 axes", by_axes[6][key], "same, 1 axis", by_axes[1][key], 6.0
            )
        )


def _add_group_of_row(
    table: Table,
    total: int,
    reshape: tuple[int, ...],
    perm: tuple[int, ...],
    figures: dict[str, float],
) -> None:
    table.add_row(
        f"2^{int(math.log2(total))}",
        f"{list(reshape)} T{tuple(perm)}",
        str(int(figures["canonical"])),
        seconds(figures["iota_single"]),
        seconds(figures["list_single"]),
        seconds(figures["iota_batch"]),
        seconds(figures["list_batch"]),
    )


def main() -> None:
    """Run the four goals and print a table of every comparison, then a summary paragraph."""
    rows: list[Comparison] = []
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    console.print(
        f"[dim]{os.cpu_count()} CPUs, load average {load} at the start (other work on the machine "
        "slows the memory-bound 2^24 cases most)[/dim]"
    )
    for title, bench in (
        ("1: materialising iota tiles of 2^24 devices", bench_tiles),
        ("2: compact() of 2^20 explicit ids", bench_compact),
        ("3: participating_device_groups_array over 65,536 devices", bench_modes),
        ("4: group_of on iota lists", bench_group_of),
    ):
        console.print(f"[bold]{title}[/bold]")
        start = time.perf_counter()
        bench(rows)
        console.print(f"[dim]  ({time.perf_counter() - start:.1f} s)[/dim]")
    console.print(
        comparison_table("meshtopo math layer vs anchors (ratio = meshtopo / anchor)", rows)
    )
    console.print(summary(rows))


if __name__ == "__main__":
    main()

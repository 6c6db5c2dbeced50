"""``plan`` and ``calibrate``: a mesh's collectives on a physical cluster, and a cluster fitted
from an nccl-tests log; and the columns ``inspect --cluster`` adds.

The ``--json`` schemas are documented in docs/cli-json.md and are stable.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..._errors import InvalidArgumentError
from ...groups._device_list import Mesh
from ...topology import (
    MODELS,
    PLAN_OPCODES,
    PRESETS,
    Cluster,
    GroupTiers,
    PlanRow,
    calibrated,
    compare,
    fit_nccl_tests,
    fit_tiers,
    group_costs,
    group_tiers,
    load_cluster,
    plan,
    save_cluster,
)
from ...topology._units import format_seconds, format_size, parse_size
from .._inputs import device_limit_option, module_option
from .._math import _mesh_payload, parse_mesh
from .._options import DecimalRange
from .._options import int_list as _int_list
from .._render import plain_table, plural
from .._trips import TripCounts, trip_text

if TYPE_CHECKING:  # inspect --cluster hands its result in; plan reads HLO for --program only
    from ...hlo import Module
    from .._inspect._rows import Inspection
    from ._program import Program

CLUSTER_HELP = (
    f"A preset ({', '.join(PRESETS)}; name:HOSTS or name:AxB[xC][:SLICES]), or a TOML, JSON or "
    "NCCL topology XML file."
)


def _cluster(spec: str, hosts: int | None, devices: int) -> Cluster:
    """``--cluster``: an NCCL XML dump describes one host, repeated ``hosts`` times or, without
    ``hosts``, as many times as ``devices`` devices need; presets and files are as given."""
    try:
        cluster = load_cluster(spec, hosts=hosts or 1)
        if hosts is None and cluster.source == "NCCL topology XML" and cluster.num_devices < devices:
            cluster = load_cluster(spec, hosts=-(-devices // cluster.devices_per_host))
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"--cluster: {error}") from None
    return cluster


def _against(spec: str, mesh: Mesh) -> Mesh:
    """``--against``: a mesh spec (``tp=8,dp=4``) or a device order for the same axes."""
    if "=" in spec:
        return parse_mesh(spec, None)
    return Mesh(list(zip(mesh.axis_names, mesh.axis_sizes, strict=True)), _int_list(spec, "--against"))


def _row_cells(row: PlanRow) -> list[str]:
    torus = "-" if row.axes is None else f"{row.axes} / {row.ring_hops}"
    return [
        row.axis,
        row.opcode,
        f"{row.groups}x{row.group_size}",
        str(row.tier),
        str(row.hosts),
        torus,
        format_size(row.link_bytes),
        *(format_seconds(row.times[model]) for model in MODELS),
        row.nccl_algorithm or "-",
    ]


_HEADERS = ["axis", "opcode", "groups", "tier", "hosts", "axes / hops", "slowest link",
            *MODELS, "nccl algorithm"]  # fmt: skip


def _describe(cluster: Cluster) -> str:
    torus = ""
    if cluster.torus is not None:
        shape = "x".join(map(str, cluster.torus.shape))
        wraps = "".join("w" if w else "-" for w in cluster.torus.wraparound)
        torus = f", slices {shape} (wraparound {wraps})"
    return (
        f"{cluster.name}: {plural(cluster.num_hosts, 'host')} x "
        f"{plural(cluster.devices_per_host, 'device')}, "
        f"{cluster.host_link.kind} {cluster.host_link.bandwidth / 1e9:g} GB/s per device, "
        f"{cluster.nics_per_host} x {cluster.network.kind} {cluster.network.bandwidth / 1e9:g} GB/s "
        f"per host{torus}"
    )


@click.command(name="plan")
@click.option("--cluster", "cluster_spec", required=True, help=CLUSTER_HELP)
@click.option("--mesh", "mesh_spec", required=True, help="Axes major to minor, e.g. dp=4,tp=8.")
@click.option("--devices", help="Device ids in mesh order (default 0..n-1; with --program, the "
                                "order of its device table).")
@click.option("--size", default="1GiB", show_default=True,
              help="Collective size as nccl-tests counts it (1GiB, 64MiB, 4e9).")  # fmt: skip
@click.option("--opcode", "opcodes", multiple=True,
              help=f"Collective to price (repeatable); default {', '.join(PLAN_OPCODES)}.")  # fmt: skip
@click.option("--against", help="A second layout: another mesh spec (tp=8,dp=4) or device order.")
@click.option("--hosts", type=DecimalRange(min=1),
              help="Hosts when --cluster is an NCCL XML dump of one host (default: as many as the mesh needs).")  # fmt: skip
@click.option("--channels", type=DecimalRange(min=1, max=64),
              help="Force the nccl model's ring channels (default: NCCL's own graph search).")  # fmt: skip
@click.option("--sm", type=DecimalRange(min=60, max=999),
              help="GPU compute capability (90 Hopper, 100 Blackwell) for NCCL's NVLink figures, "
                   "tables and NVLS (default: the cluster's, else 90).")  # fmt: skip
@click.option("--program", "program_file",
              help="Also price a program's collectives (an HLO module or dump directory): "
                   "each over the mesh axes its groups span, at its own bytes, times how many "
                   "times a device issues it (loop trip counts).")
@module_option
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@device_limit_option
def plan_command(
    cluster_spec: str, mesh_spec: str, devices: str | None, size: str, opcodes: tuple[str, ...],
    against: str | None, hosts: int | None, channels: int | None, sm: int | None,
    program_file: str | None, module_choice: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Per mesh axis and collective: tier, hosts per group, bytes on the slowest link, each
    cost model's time (busbw, hierarchical alpha-beta, NCCL's tuner) and the algorithm NCCL
    picks, from the real order (one collective of --size each). With --program, the
    program's own collectives too, each counted as often as a device issues it."""
    if module_choice is not None and program_file is None:
        raise click.UsageError("--module picks a module of --program's dump directory")
    module = None if program_file is None else _read_program(program_file, module_choice)
    mesh = parse_mesh(mesh_spec, devices)
    if module is not None:
        mesh = _over_program(mesh, module, devices is not None)
    devices_from = "given" if devices is not None else "default" if module is None else "program"
    cluster = _cluster(cluster_spec, hosts, mesh.size)
    chosen = list(opcodes) or list(PLAN_OPCODES)
    nbytes = parse_size(size, "--size")
    rows = plan(cluster, mesh, nbytes, chosen, channels=channels, sm=sm)
    other = _against(against, mesh) if against is not None else None
    other_rows = plan(cluster, other, nbytes, chosen, channels=channels, sm=sm) if other else None
    if other is not None and set(other.axis_names) != set(mesh.axis_names):
        raise InvalidArgumentError(
            f"--against has axes {list(other.axis_names)}, the mesh {list(mesh.axis_names)}"
        )
    program = None if module is None else _program(module, cluster, mesh, other, channels, sm)
    if as_json:
        payload: dict[str, object] = {
            "cluster": {k: v for k, v in cluster.to_dict().items() if k != "placement"},
            "mesh": _mesh_payload(mesh),
            "devices_from": devices_from,
            "size": nbytes,
            "rows": [row.to_dict() for row in rows],
        }
        if other is not None and other_rows is not None:
            payload["against"] = {
                "mesh": _mesh_payload(other),
                "rows": [row.to_dict() for row in other_rows],
                "ratios": [diff.ratios for diff in compare(rows, other_rows)],
            }
        if program is not None:
            payload["program"] = program.to_dict()
        click.echo(json.dumps(payload, indent=2, allow_nan=False))
        return
    click.echo(_describe(cluster))
    click.echo(f"{mesh}, {format_size(nbytes)} per collective")
    if devices_from == "program":
        click.echo("mesh devices in the order of the program's device table (--devices sets "
                   "another)")
    plain_table(_HEADERS, [_row_cells(row) for row in rows])
    if other is not None and other_rows is not None:
        click.echo(f"\nagainst {other}")
        plain_table(_HEADERS, [_row_cells(row) for row in other_rows])
        click.echo("\nratio against / mesh")
        headers = ["axis", "opcode", "tier", *MODELS]
        cells = [
            [d.a.axis, d.a.opcode, f"{d.a.tier} -> {d.b.tier}",
             *(f"{r:.2f}x" if r == r else "-" for r in d.ratios.values())]
            for d in compare(rows, other_rows)
        ]  # fmt: skip
        plain_table(headers, cells)
    if program is not None:
        program.print(other)


def _read_program(file: str, module_choice: str | None) -> Module:
    """``--program``'s module; the HLO layer is imported only then."""
    from ...hlo import load
    from .._inputs import one_module_file

    return load(one_module_file(file, module_choice))


def _over_program(mesh: Mesh, module: Module, devices_given: bool) -> Mesh:
    """``mesh`` laid over ``module``'s devices: in the order of the module's device table
    (as JAX compiles a program for a mesh: its devices, flattened) unless ``--devices`` gave
    an order; a mesh of another size is refused."""
    table = module.device_assignment.array
    if table.size != mesh.size:
        raise InvalidArgumentError(
            f"--program {module.source or module.name} runs on {plural(table.size, 'device')} "
            f"({plural(module.replica_count, 'replica')} x "
            f"{plural(module.num_partitions, 'partition')}); {mesh} has {mesh.size}"
        )
    if devices_given:
        return mesh
    return Mesh(list(zip(mesh.axis_names, mesh.axis_sizes, strict=True)), table.reshape(-1))


def _program(module: Module, cluster: Cluster, mesh: Mesh, other: Mesh | None,
             channels: int | None, sm: int | None) -> Program:
    """``--program``: the module's collectives priced (``_program``); the order layer is
    imported only then."""
    from .._trips import trip_counts
    from ._program import Program

    counts, note = trip_counts(module)
    return Program.of(module, counts, note, cluster, mesh, other, channels, sm)


@click.command(name="calibrate")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--cluster", "cluster_spec", required=True,
              help=f"{CLUSTER_HELP} Its host tier splits multi-host logs (a saved calibration works).")  # fmt: skip
@click.option("--opcode", default="all-reduce", show_default=True,
              help="The collective the logs measure (all_reduce_perf: all-reduce).")  # fmt: skip
@click.option("--ranks", type=DecimalRange(min=2), help="Ranks, when a log has no '# Rank' lines.")
@click.option("--hosts", type=DecimalRange(min=1), help="Hosts, when a log has no '# Rank' lines.")
@click.option("--save", "save_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the calibrated cluster as JSON (reusable as --cluster).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
def calibrate_command(
    logs: tuple[str, ...], cluster_spec: str, opcode: str, ranks: int | None, hosts: int | None,
    save_path: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Fit t = alpha + beta * size to nccl-tests logs and split it over the tiers each test
    crossed: a one-host log sets the host link's per-step latency and bandwidth, a multi-host
    log keeps the host tier and fits the network's (one-host logs are applied first, whatever
    the order given). Shows per size the four terms and which dominates."""
    fits = [fit_nccl_tests(Path(log).read_text(encoding="utf-8"), opcode, ranks, hosts)
            for log in logs]  # fmt: skip
    fits.sort(key=lambda fit: fit.hosts > 1)
    widest = max(fit.hosts for fit in fits)
    cluster = _cluster(cluster_spec, None, max(fit.ranks for fit in fits))
    if cluster.num_hosts < widest and cluster.torus is None:
        cluster = replace(cluster, num_hosts=widest)  # a preset named without its host count
    tiers = []
    for fit in fits:
        tiers.append(fit_tiers(cluster, fit))
        cluster = calibrated(cluster, fit)
    if save_path is not None:
        save_cluster(cluster, save_path)
    if as_json:
        click.echo(json.dumps({
            "fits": [{"opcode": fit.opcode, "ranks": fit.ranks, "hosts": fit.hosts,
                      "alpha": fit.alpha, "beta": fit.beta, "bus_bandwidth": fit.bus_bandwidth,
                      "fit_error": fit.fit_error, "warnings": list(tier.warnings),
                      "sizes": [{**total, "terms": {k: v for k, v in split.items() if k in _TERMS},
                                 "dominant_term": split["dominant"]}
                                for total, split in zip(fit.terms(), tier.terms(), strict=True)],
                      "tiers": tier.to_dict()} for fit, tier in zip(fits, tiers, strict=True)],
            "cluster": cluster.to_dict(),
        }, indent=2))  # fmt: skip
        return
    for fit, tier in zip(fits, tiers, strict=True):
        click.echo(
            f"{fit.opcode} over {plural(fit.ranks, 'rank')} on {plural(fit.hosts, 'host')}: alpha "
            f"{format_seconds(fit.alpha)}, bus bandwidth {fit.bus_bandwidth / 1e9:.1f} GB/s, "
            f"fit error {fit.fit_error:.0%} (root mean square of the residuals)"
        )
        click.echo(f"  host: {format_seconds(tier.host_alpha)} per step x {tier.steps - tier.inter_steps}, "
                   f"{tier.host_bandwidth / 1e9:.1f} GB/s per device")  # fmt: skip
        if tier.network_bandwidth is not None:
            click.echo(f"  network: {format_seconds(tier.network_alpha or 0.0)} per step x "
                       f"{tier.inter_steps}, {tier.network_bandwidth / 1e9:.1f} GB/s per device")  # fmt: skip
        plain_table(
            ["size", "measured", "fitted", "residual", *(name.replace("_", " ") for name in _TERMS),
             "dominant"],
            [[format_size(t["size"]),  # type: ignore[arg-type]
              format_seconds(t["measured"]), format_seconds(t["fitted"]),  # type: ignore[arg-type]
              f"{total['residual']:+.0%}",
              *(format_seconds(t[k]) for k in _TERMS),  # type: ignore[arg-type]
              str(t["dominant"]).replace("_", " ")]
             for total, t in zip(fit.terms(), tier.terms(), strict=True)],
        )  # fmt: skip
        for warning in tier.warnings:
            click.echo(f"warning: {warning}", err=True)
    click.echo(_describe(cluster))
    if save_path is not None:
        click.echo(f"calibrated cluster written to {save_path}")


_TERMS = ("host_latency", "host_bandwidth", "network_latency", "network_bandwidth")


def topology_columns(result: Inspection, cluster_spec: str, trip_counts: TripCounts | None
                     ) -> list[dict[str, object] | None]:
    """``inspect --cluster``: each row's ``group_costs`` (None where its groups are in error),
    tiers computed once per distinct device-group pattern, with its ``trip_count`` (from
    ``trip_counts``, keyed by (computation, name): 0 where the program never reaches it;
    None when unknown, and for every row when ``trip_counts`` is None) and ``seconds`` per
    model multiplied by it (``seconds_each``: one issue; an unknown count counts once). An
    NCCL XML dump is repeated over as many hosts as the dump's devices need."""
    needed = int(result.assignment.array.max()) + 1 if result.assignment.array.size else 1
    cluster = _cluster(cluster_spec, None, needed)
    tiers: dict[int, GroupTiers] = {}
    columns: list[dict[str, object] | None] = []
    for row in result.rows:
        pattern = row.pattern
        if pattern.error is not None or not pattern.device_groups:
            columns.append(None)
            continue
        if pattern.index not in tiers:
            tiers[pattern.index] = group_tiers(cluster, pattern.device_groups)
        cost = group_costs(cluster, tiers[pattern.index], row.opcode, row.bytes)
        count = None if trip_counts is None else trip_counts.get(
            (row.computation or "", row.name), 0)
        each = cost["seconds"]
        times = 1 if count is None else count
        cost["trip_count"] = count
        cost["seconds_each"] = each
        cost["seconds"] = None if not isinstance(each, dict) else {
            model: None if value is None else value * times for model, value in each.items()}
        columns.append(cost)
    return columns


def print_topology_columns(result: Inspection, costs: list[dict[str, object] | None],
                           trips_note: str | None = None) -> None:
    """The ``--cluster`` table under inspect's: per collective its trip count, tier, hosts
    per group, bytes on the slowest link and each model's predicted time over its issues;
    ``trips_note`` says why trip counts are unknown, when they could not be worked out."""
    if not result.rows:
        return
    click.echo("")
    cells = []
    for row, cost in zip(result.rows, costs, strict=True):
        if cost is None:
            cells.append([row.name, "-", "error", "-", "-", *("-" for _ in MODELS)])
            continue
        seconds = cost["seconds"] if isinstance(cost["seconds"], dict) else {}
        link = cost["link_bytes"]
        count = cost["trip_count"]
        cells.append([
            row.name, trip_text(count if isinstance(count, int) else None) or "1",
            str(cost["tier"]), str(cost["hosts"]),
            format_size(link) if isinstance(link, float) else "-",
            *(format_seconds(v) if isinstance(v := seconds.get(m), float) else "-" for m in MODELS),
        ])  # fmt: skip
    plain_table(["name", "issues", "tier", "hosts", "slowest link", *MODELS], cells)
    click.echo("times: one issue's, multiplied by the collective's issues per device (its "
               "loops' trip counts, as the devices run them)")
    if trips_note is not None:
        click.echo(trips_note)

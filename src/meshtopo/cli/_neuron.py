"""``neuron``: Neuron's 3-D rank model of an HLO module.

Prints the ``[topology][group][rank]`` envelope, the CC world size, the physical cores of each
rank at the given LNC, the TP group read from the graph and the reduce-scatters a Neuron-style
combiner could merge. An envelope with more than one topology is MPMD: a finding about valid
input, printed with exit 1. Text that does not parse, or a permute carrying replica groups, is
bad input (exit 2). The ``--json`` schema is in docs/cli-json.md.
"""

from __future__ import annotations

import click
import numpy as np
from rich.text import Text

from ..groups._device_list import CollectiveDeviceList
from ..hlo import Module
from ..neuron import (
    GROUP_OPCODES,
    MpmdError,
    RankModel,
    cc_rank_world_size,
    combinable_sets,
    find_tp_collective,
    instruction_groups,
    source_target_pairs,
)
from ._inputs import (
    FILES_HELP,
    all_option,
    assignment_option,
    device_limit_option,
    folded_line,
    input_files,
    is_single_file,
    load_placed,
    module_option,
)
from ._options import DecimalRange
from ._render import console, emit_json, groups_text, plural


def _core_groups(model: RankModel, lnc: int) -> list[list[int]]:
    """The physical cores of each group of topology 0: rank r holds cores r*lnc .. r*lnc+lnc-1."""
    if model.num_topologies == 0:
        return []
    topology = model.topologies[0]
    flat = topology.flattened_replica_groups()
    cores = (flat[:, None] * lnc + np.arange(lnc, dtype=np.int64)).reshape(-1)
    sizes = topology.group_sizes * lnc
    return [part.tolist() for part in np.split(cores, np.cumsum(sizes)[:-1])] if sizes.size else []


def _carriers(module: Module, model: RankModel) -> list[list[str]]:
    """Per topology, the collectives whose groups it is (the issuing forms, text order)."""
    index = {topology: i for i, topology in enumerate(model.topologies)}
    carriers: list[list[str]] = [[] for _ in model.topologies]
    keys: dict[int, int | None] = {}  # the parser shares one device list per distinct text
    for collective in module.collectives:
        groups = collective.replica_groups
        if not collective.is_start or collective.is_host_transfer or groups is None:
            continue
        if id(groups) not in keys:
            keys[id(groups)] = index.get(CollectiveDeviceList(groups).to_explicit())
        found = keys[id(groups)]
        if found is not None:
            carriers[found].append(collective.name)
    return carriers


def _payload(module: Module, lnc: int, tp_opcode: str) -> dict[str, object]:
    model = RankModel.from_module(module)
    carriers = _carriers(module, model)
    pairs = source_target_pairs(module)
    world_size: int | None
    mpmd: str | None = None
    try:
        world_size = cc_rank_world_size(model, source_target_pairs=pairs)
    except MpmdError as error:
        world_size, mpmd = None, str(error)
    tp = find_tp_collective(module, opcode=tp_opcode)
    return {
        "file": module.source,
        "replica_count": module.replica_count,
        "device_assignment_source": module.device_assignment_source,
        "num_partitions": module.num_partitions,
        "lnc": lnc,
        "num_cores": module.num_partitions * lnc,
        "num_topologies": model.num_topologies,
        "topologies": [
            {
                "text": str(topology.compact()),
                "num_replica_groups": model.group_count(index),
                "num_devices_per_group": model.group_size(index),
                "replica_groups": topology.replica_groups,
                "collectives": carriers[index],
            }
            for index, topology in enumerate(model.topologies)
        ],
        "source_target_pairs": [list(pair) for pair in pairs],
        "world_size": world_size,
        "mpmd": mpmd,
        "core_groups": None if mpmd else _core_groups(model, lnc),
        "tp": None if tp is None else {
            "opcode": tp.opcode,
            "instruction": tp.name,
            "computation": tp.computation,
            "line": tp.line,
            "replica_groups": instruction_groups(tp).replica_groups,
        },
        "combinable_sets": [
            {
                "computation": found.computation,
                "instructions": list(found.instructions),
                "key": {
                    "reduction": found.key.reduction,
                    "element_type": found.key.element_type,
                    "scatter_dimension": found.key.scatter_dimension,
                    "has_channel_id": found.key.has_channel_id,
                    "use_global_device_ids": found.key.use_global_device_ids,
                    "replica_groups": [list(g) for g in found.key.replica_groups],
                },
            }
            for found in combinable_sets(module)
        ],
        "ok": mpmd is None,
    }


@click.command(help=f"""Neuron's 3-D rank model of HLO modules.

{FILES_HELP}

Prints the [topology][group][rank] envelope (one topology per distinct group list, with the
collectives that carry it), the CC world size, each rank's physical cores, the TP group and
the combinable reduce-scatters. Exits 1 when an envelope is MPMD (more than one topology), 0
otherwise.""")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--lnc", type=DecimalRange(min=1), default=2, show_default=True,
              help="Physical cores per logical core (rank = core // lnc).")
@click.option("--tp-opcode", type=click.Choice(sorted(GROUP_OPCODES)), default="reduce-scatter",
              show_default=True, help="The collective whose groups name the TP group.")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@assignment_option
@module_option
@all_option
@device_limit_option
def neuron(files: tuple[str, ...], lnc: int, tp_opcode: str, as_json: bool,
           assignment_spec: str, module_choice: str | None, show_all: bool) -> int:
    paths = input_files(files, module_choice)
    modules = [load_placed(path, assignment_spec) for path in paths]
    payloads = [_payload(module, lnc, tp_opcode) for module in modules]
    ok = all(payload["ok"] for payload in payloads)
    if as_json:
        emit_json(payloads[0] if is_single_file(files, paths, module_choice) else
                  {"modules": payloads, "ok": ok})
        return 0 if ok else 1
    fold = not (show_all or is_single_file(files, paths, module_choice))
    folded = [path for path, module in zip(paths, modules, strict=True)
              if fold and not module.collectives]
    for payload, module in zip(payloads, modules, strict=True):
        if not (fold and not module.collectives):
            _print(payload, tp_opcode)
    if folded:
        click.echo(folded_line(folded))
    return 0 if ok else 1


_MPMD_RULE = (
    "Neuron's rank model (getCCRankWorldSize) gives a program one world size from one "
    "[group][rank] topology; each distinct group list of the module is a topology, and "
    "topologies with different ranks per group fail its worker-count check, so Neuron's "
    "compiler refuses the module as MPMD. An SPMD program whose collectives span mesh axes of "
    "different sizes (a 2 x 4 mesh's groups of 2 and of 4) always has such topologies; it "
    "compiles for Neuron once every collective uses groups of one size.")


def _geometry(topology: dict[str, object]) -> str:
    """``4 groups x 2 ranks`` (singular where one)."""
    groups: int = topology["num_replica_groups"]  # type: ignore[assignment]
    ranks: int = topology["num_devices_per_group"]  # type: ignore[assignment]
    return f"{plural(groups, 'group')} x {plural(ranks, 'rank')}"


def _print(payload: dict[str, object], tp_opcode: str) -> None:
    out = console()
    topologies: list[dict[str, object]] = payload["topologies"]  # type: ignore[assignment]
    count = len(topologies)
    out.print(Text(f"{payload['file']}: {plural(count, 'topology', 'topologies')} "
                   f"[topology][group][rank] (replica_count={payload['replica_count']}, "
                   f"num_partitions={payload['num_partitions']})", style="bold"))
    for index, topology in enumerate(topologies):
        groups: list[list[int]] = topology["replica_groups"]  # type: ignore[assignment]
        out.print(f"  topology {index}: {_geometry(topology)}  {topology['text']}"
                  + ("" if topology["text"] == groups_text(groups) else
                     f"  = {groups_text(groups, limit=16)}"))
    pairs: list[list[int]] = payload["source_target_pairs"]  # type: ignore[assignment]
    if pairs:
        out.print(f"  source_target_pairs: {groups_text(pairs, limit=16)}")
    if payload["mpmd"] is not None:
        out.print(Text(f"MPMD: {payload['mpmd']}", style="bold red"))
        out.print(Text(f"  why: {_MPMD_RULE}"))
        out.print(f"  {plural(count, 'distinct group geometry', 'distinct group geometries')}:")
        for index, topology in enumerate(topologies):
            carried: list[str] = topology["collectives"]  # type: ignore[assignment]
            shown = ", ".join("%" + n for n in carried[:8])
            more = f" and {len(carried) - 8} more" if len(carried) > 8 else ""
            out.print(f"    topology {index} ({_geometry(topology)}, {topology['text']}): "
                      f"carried by {plural(len(carried), 'collective')}: {shown}{more}")
    else:
        alone = "" if topologies or pairs else (
            " (no collective with replica groups or pairs: each rank is a world of its own)")
        out.print(Text(f"world size: {payload['world_size']}{alone}", style="bold green"))
        core_groups: list[list[int]] = payload["core_groups"]  # type: ignore[assignment]
        if core_groups:
            out.print(f"  cores at LNC {payload['lnc']} (rank = core // {payload['lnc']}): "
                      f"{groups_text(core_groups, limit=16)}")
    tp: dict[str, object] | None = payload["tp"]  # type: ignore[assignment]
    if tp is None:
        out.print(f"TP group: none (no {tp_opcode} in the module; the TP group is "
                  "read from the first collective of --tp-opcode, e.g. --tp-opcode all-gather)")
    else:
        tp_groups: list[list[int]] = tp["replica_groups"]  # type: ignore[assignment]
        out.print(f"TP group: {groups_text(tp_groups, limit=16)}  from {tp['opcode']} "
                  f"%{tp['instruction']} in {tp['computation']} (line {tp['line']})")
    sets: list[dict[str, object]] = payload["combinable_sets"]  # type: ignore[assignment]
    if not sets:
        out.print("combinable reduce-scatters: none")
    for found in sets:
        key: dict[str, object] = found["key"]  # type: ignore[assignment]
        names: list[str] = found["instructions"]  # type: ignore[assignment]
        out.print(f"combinable reduce-scatters in {found['computation']}: "
                  f"{', '.join('%' + n for n in names)}  (key: {key['reduction']}, "
                  f"{key['element_type']}, dim {key['scatter_dimension']}, channel "
                  f"{key['has_channel_id']}, global ids {key['use_global_device_ids']})")

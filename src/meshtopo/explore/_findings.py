"""The checks shown next to a dialed collective, in XLA's words.

Two sources: the library's own errors while reading the mode and multiplying the groups out,
and the HLO verifier (``meshtopo.hlo.verify``) run over a one-instruction module built from the
dial (``module_text``), so the messages are XLA's. ``findings`` and ``pair_findings`` are the
seams the groups endpoint calls.
"""

from __future__ import annotations

from typing import Any

import meshtopo as mt
from meshtopo import hlo


def findings(
    module: str, mode_error: str | None, expansion_error: str | None
) -> list[dict[str, Any]]:
    """Every finding for the dial written as the one-collective ``module`` (``module_text``),
    each ``{"source", "message"}``; ``[]`` when all is well.

    ``source`` is ``"mode"`` (the two fields do not form a mode; nothing else is checked then),
    ``"verifier"`` (XLA's collective checks on the dial written as one HLO instruction, when
    the library has a verifier) or ``"expansion"`` (the library could not multiply the groups
    out on this grid).
    """
    if mode_error:
        return [{"source": "mode", "message": mode_error}]
    out: list[dict[str, Any]] = []
    try:
        results: list[Any] = hlo.verify(hlo.parse_module(module), check_replica_groups=True)
    except mt.MeshtopoError as error:
        results = [error]
    for finding in results:
        out.append({"source": "verifier", "message": str(getattr(finding, "message", finding))})
    if expansion_error:
        out.append({"source": "expansion", "message": expansion_error})
    return out


def pair_findings(
    pairs: list[tuple[int, int]],
    replicas: int,
    partitions: int,
    has_channel: bool,
    mode_error: str | None,
    expansion_error: str | None,
) -> list[dict[str, Any]]:
    """Findings for a collective-permute dial: XLA's source-target checks
    (``mt.pair_problems``, range R without a channel and P with one) plus the library's errors.
    """
    out: list[dict[str, Any]] = []
    if mode_error:
        out.append({"source": "mode", "message": mode_error})
    limit = partitions if has_channel else replicas
    for problem in mt.pair_problems(pairs, limit):
        out.append({"source": "verifier", "message": problem})
    if expansion_error:
        out.append({"source": "expansion", "message": expansion_error})
    return out


def module_text(
    replicas: int,
    partitions: int,
    opcode: str,
    has_channel: bool,
    global_ids: bool | None,
    written: mt.CollectiveDeviceList,
) -> str:
    """A one-collective HLO module for the dial, shaped so that only the groups can fail.

    Shapes follow the subgroup size the verifier derives (``mt.subgroup_size``), so that
    all-gather's shard count and reduce-scatter's and all-to-all's split counts agree with the
    groups whatever they are. Start forms are checked as their synchronous op, and
    ragged-all-to-all as all-to-all (the same group checks, without its six operands); for
    collective-permute the written groups are read as the source-target pairs.
    """
    sync = {
        "all-reduce-start": "all-reduce",
        "all-gather-start": "all-gather",
        "collective-permute-start": "collective-permute",
        "ragged-all-to-all": "all-to-all",
    }.get(opcode, opcode)
    attrs = ["channel_id=1"] if has_channel else []
    if sync == "collective-permute":
        attrs.append(f"source_target_pairs={written.to_text(full=True)}")
    else:
        attrs.append(f"replica_groups={written}")
    if sync in {"all-gather", "reduce-scatter", "all-to-all"}:
        attrs.append("dimensions={0}")
    if global_ids and sync in {"all-reduce", "all-gather", "reduce-scatter"}:
        attrs.append("use_global_device_ids=true")
    body = ", ".join(attrs)
    try:
        mode = mt.group_mode_for_opcode(sync, has_channel, global_ids)
        size = max(1, mt.subgroup_size(written, mode, replicas, partitions))
    except mt.MeshtopoError:
        size = 1
    header = f"HloModule explore, replica_count={replicas}, num_partitions={partitions}\n\n"
    add = (
        "%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
        "  %y = f32[] parameter(1)\n  ROOT %sum = f32[] add(f32[] %x, f32[] %y)\n}\n\n"
    )
    n, m = 4, 4 * size
    if sync == "all-reduce":
        return header + add + _entry(n, n, f"all-reduce(@), {body}, to_apply=%add")
    if sync == "reduce-scatter":
        return header + add + _entry(m, n, f"reduce-scatter(@), {body}, to_apply=%add")
    if sync == "all-gather":
        return header + _entry(n, m, f"all-gather(@), {body}")
    if sync == "all-to-all":
        return header + _entry(m, m, f"all-to-all(@), {body}")
    return header + _entry(n, n, f"{sync}(@), {body}")


def _entry(operand: int, result: int, instruction: str) -> str:
    """The entry computation: parameter ``%p`` of f32[operand] fed to the collective (whose
    operand list is written ``@`` in ``instruction``)."""
    call = instruction.replace("(@)", f"(f32[{operand}]{{0}} %p)", 1)
    return (
        f"ENTRY %main (p: f32[{operand}]) -> f32[{result}] {{\n"
        f"  %p = f32[{operand}]{{0}} parameter(0)\n"
        f"  ROOT %collective = f32[{result}]{{0}} {call}\n}}\n"
    )


def instruction_text(module: str) -> str:
    """The collective's line of ``module_text``'s module, as XLA would print it."""
    line = next(x for x in module.splitlines() if "%collective =" in x)
    return line.strip().removeprefix("ROOT ")

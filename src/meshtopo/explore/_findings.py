"""The checks shown next to a dialed collective, in XLA's words.

Two sources: the library's own errors while reading the mode and multiplying the groups out,
and the HLO verifier (``meshtopo.hlo.verify``) run over a one-instruction module built from the
dial. ``findings`` is the single seam the groups endpoint calls.
"""

from __future__ import annotations

import importlib
from typing import Any

import meshtopo as mt


def _verifier() -> tuple[Any, Any] | None:
    """``(parse_module, verify)`` from ``meshtopo.hlo``, or None where that layer is absent."""
    try:
        hlo = importlib.import_module("meshtopo.hlo")
    except ImportError:
        return None
    parse, verify = getattr(hlo, "parse_module", None), getattr(hlo, "verify", None)
    if parse is None or verify is None:
        return None
    return parse, verify


def findings(
    replicas: int,
    partitions: int,
    opcode: str,
    has_channel: bool,
    global_ids: bool | None,
    written: Any,
    mode_error: str | None,
    expansion_error: str | None,
) -> list[dict[str, Any]]:
    """Every finding for the dial, each ``{"source", "message"}``; ``[]`` when all is well.

    ``source`` is ``"mode"`` (the two fields do not form a mode), ``"expansion"`` (the library
    could not multiply the groups out on this grid) or ``"verifier"`` (XLA's collective checks).
    """
    out: list[dict[str, Any]] = []
    if mode_error:
        out.append({"source": "mode", "message": mode_error})
    if expansion_error:
        out.append({"source": "expansion", "message": expansion_error})
    tools = _verifier()
    if tools is None:
        return out
    text = module_text(replicas, partitions, opcode, has_channel, global_ids, str(written))
    parse, verify = tools
    try:
        module = parse(text)
        results = verify(module, check_replica_groups=True)
    except mt.MeshtopoError as error:
        out.append({"source": "verifier", "message": str(error)})
        return out
    for finding in results:
        message = str(getattr(finding, "message", finding))
        if mode_error and message.startswith(mode_error.split(":")[0]):
            continue
        out.append({"source": "verifier", "message": message})
    return out


def module_text(
    replicas: int,
    partitions: int,
    opcode: str,
    has_channel: bool,
    global_ids: bool | None,
    groups_text: str,
) -> str:
    """A one-collective HLO module for the dial, shaped so that only the groups can fail.

    Shapes follow the subgroup size the verifier derives, so that all-gather's shard count,
    reduce-scatter's and all-to-all's split count agree with the groups whatever they are.
    """
    attrs = []
    if has_channel:
        attrs.append("channel_id=1")
    if opcode.startswith("collective-permute"):
        attrs.append("source_target_pairs={}")
    else:
        attrs.append(f"replica_groups={groups_text}")
    if global_ids is not None and opcode in {
        "all-reduce",
        "all-reduce-start",
        "all-gather",
        "all-gather-start",
        "reduce-scatter",
    }:
        attrs.append(f"use_global_device_ids={'true' if global_ids else 'false'}")
    header = f"HloModule explore, replica_count={replicas}, num_partitions={partitions}\n\n"
    add = (
        "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
        "  ROOT sum = f32[] add(x, y)\n}\n\n"
    )
    body = ", ".join(attrs)
    if opcode in {"all-reduce", "all-reduce-start"}:
        instr = f"ROOT c = f32[8] {opcode}(p), {body}, to_apply=add"
        return header + add + _entry(instr)
    if opcode == "reduce-scatter":
        instr = f"ROOT c = f32[8] reduce-scatter(p), {body}, dimensions={{0}}, to_apply=add"
        return header + add + _entry(instr)
    if opcode in {"all-gather", "all-gather-start"}:
        return header + _entry(f"ROOT c = f32[8] {opcode}(p), {body}, dimensions={{0}}")
    if opcode == "all-to-all":
        return header + _entry(f"ROOT c = f32[8] all-to-all(p), {body}, dimensions={{0}}")
    return header + _entry(f"ROOT c = f32[8] {opcode}(p), {body}")


def _entry(instruction: str) -> str:
    return f"ENTRY main {{\n  p = f32[8] parameter(0)\n  {instruction}\n}}\n"

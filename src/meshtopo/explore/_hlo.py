"""``POST /api/hlo``: an HLO dump read by the library's parser, its collectives listed.

Each collective comes back with the fields the groups endpoint takes, so the page (or any
client) can send one of them straight to ``POST /api/groups`` to see its grid.
"""

from __future__ import annotations

from typing import Any

import meshtopo as mt
from meshtopo import hlo

from ._schema import OPCODES, Fields
from ._table import TABLE_FIELDS, given_table

HLO_FIELDS = ("text", "replica_count", "num_partitions", *TABLE_FIELDS)


def hlo_response(body: dict[str, Any], max_text: int, device_limit: int) -> dict[str, Any]:
    """Answer one ``POST /api/hlo`` body: ``{"text", "replica_count"?, "num_partitions"?}``
    plus the module's device table as ``compile_options`` text or a ``device_assignment``
    table (``_table``)."""
    fields = Fields(body)
    fields.check_known(HLO_FIELDS)
    text = fields.string("text", max_length=max_text)
    replicas = fields.integer("replica_count") if fields.has("replica_count") else None
    partitions = fields.integer("num_partitions") if fields.has("num_partitions") else None
    given = given_table(fields, max_text, device_limit)
    return module_response(given.parse(text, replicas, partitions), given.origin)


def module_response(module: hlo.Module, origin: str | None = None) -> dict[str, Any]:
    """The ``/api/hlo`` answer for a module read by the library: its counts and device
    assignment (the table, where ``load`` found it, and a sentence saying so, ``origin`` when
    the request gave the table), its collectives and the verifier's findings."""
    collectives = [_collective_json(c) for c in module.collectives]
    findings = [
        {
            "message": finding.message,
            "instruction": finding.instruction,
            "line": finding.line,
            "column": finding.column,
        }
        for finding in hlo.verify(module, check_replica_groups=True)
    ]
    return {
        "module": {
            "name": module.name,
            "replica_count": module.replica_count,
            "num_partitions": module.num_partitions,
            "device_assignment": _assignment_json(module, origin),
        },
        "collectives": collectives,
        "findings": findings,
    }


def _assignment_json(module: hlo.Module, origin: str | None) -> dict[str, Any]:
    """``{"source", "table", "origin"}``: ``source`` as ``Module.device_assignment_source``,
    ``table`` ``[replica][partition] -> device id``, ``origin`` one sentence for the page
    (``given`` when the request gave one)."""
    source = module.device_assignment_source
    if source == "default":
        origin = ("the groups use XLA's default placement, DA[r][p] = p·R + r: no "
                  "compile_options.textproto came with this module; give it (open the dump's "
                  "directory) or paste the device table if the job placed devices otherwise")
    elif origin is None:
        origin = hlo.describe_placement(source, module.compile_options)
    return {
        "source": source,
        "table": module.device_assignment.array.tolist(),
        "origin": origin,
    }


def _collective_json(c: hlo.Collective) -> dict[str, Any]:
    """One collective: where it is, how it reads its groups, and a ready ``/api/groups`` body.

    Permutes and send/recv carry pairs instead of groups; their ``groups_request`` writes the
    pairs as two-member groups, which multiply out to exactly the device pairs XLA forms.
    """
    try:
        mode: str | None = str(c.mode)
        mode_error = None
    except mt.MeshtopoError as error:
        mode, mode_error = None, str(error)
    pairs = c.source_target_pairs
    groups = c.replica_groups
    if groups is not None:
        groups_text = hlo.printed_groups(c.groups_text) if c.groups_text else str(groups)
    elif pairs is not None:
        groups_text = "{" + ",".join(f"{{{s},{t}}}" for s, t in pairs) + "}"
    else:
        groups_text = "{}"
    underlying = c.underlying_opcode
    if underlying in ("send", "recv"):
        underlying = "collective-permute"
    return {
        "name": c.name,
        "opcode": c.opcode,
        "underlying_opcode": underlying,
        "line": c.line,
        "column": c.column,
        "is_done": c.is_done,
        "start": c.start,
        "mode": mode,
        "mode_error": mode_error,
        "channel_id": c.channel_id,
        "use_global_device_ids": c.use_global_device_ids,
        "replica_groups": None if groups is None else groups_text,
        "source_target_pairs": None if pairs is None else [list(p) for p in pairs],
        "groups_request": {
            "opcode": underlying if underlying in OPCODES else None,
            "channel_id": c.channel_id is not None,
            "use_global_device_ids": c.use_global_device_ids,
            "groups": groups_text,
            "shapes": _shapes(c),
        },
    }


def _shapes(c: hlo.Collective) -> dict[str, Any] | None:
    """The collective's one array operand and array result as ``/api/groups`` ``shapes``, so
    the dial checks the dump's instruction as written; None for other forms (tuples, several
    operands, async pieces), which the dial writes with shapes fitted to the groups."""
    if c.is_async or len(c.operands) != 1:
        return None
    try:
        result, operands = c.shape, c.operand_shapes
    except mt.MeshtopoError:
        return None
    operand = operands[0]
    if operand is None or operand.tuple_shapes is not None or result.tuple_shapes is not None:
        return None
    dimensions = c.dimensions
    return {
        "operand": list(operand.dimensions),
        "result": list(result.dimensions),
        "dimension": dimensions[0] if dimensions else 0,
    }

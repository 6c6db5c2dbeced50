"""``POST /api/hlo``: an HLO dump read by the library's parser, its collectives listed.

Each collective comes back with the fields the groups endpoint takes, so the page (or any
client) can send one of them straight to ``POST /api/groups`` to see its grid.
"""

from __future__ import annotations

import importlib
from typing import Any

import meshtopo as mt

from ._schema import OPCODES, Fields, RequestError

HLO_FIELDS = ("text", "replica_count", "num_partitions")


def _hlo_layer() -> Any:
    """The ``meshtopo.hlo`` module, or a 501 when this build has no HLO parser yet."""
    try:
        hlo = importlib.import_module("meshtopo.hlo")
    except ImportError:
        hlo = None
    if hlo is None or getattr(hlo, "parse_module", None) is None:
        raise RequestError(501, "this build of meshtopo has no HLO parser", kind="NotAvailable")
    return hlo


def hlo_response(body: dict[str, Any], max_text: int) -> dict[str, Any]:
    """Answer one ``POST /api/hlo`` body: ``{"text", "replica_count"?, "num_partitions"?}``."""
    fields = Fields(body)
    fields.check_known(HLO_FIELDS)
    text = fields.string("text", max_length=max_text)
    overrides: dict[str, int] = {}
    for key in ("replica_count", "num_partitions"):
        if fields.has(key):
            overrides[key] = fields.integer(key)
    hlo = _hlo_layer()
    module = hlo.parse_module(text, **overrides)
    collectives = [_collective_json(c) for c in module.collectives]
    verify = getattr(hlo, "verify", None)
    findings: list[dict[str, Any]] | None = None
    if verify is not None:
        findings = []
        try:
            for finding in verify(module, check_replica_groups=True):
                findings.append(
                    {
                        "message": str(finding.message),
                        "instruction": _opt_str(getattr(finding, "instruction", None)),
                        "line": getattr(finding, "line", None),
                        "column": getattr(finding, "column", None),
                    }
                )
        except mt.MeshtopoError as error:
            findings.append(
                {"message": str(error), "instruction": None, "line": None, "column": None}
            )
    return {
        "module": {
            "name": getattr(module, "name", None),
            "replica_count": module.replica_count,
            "num_partitions": module.num_partitions,
        },
        "collectives": collectives,
        "findings": findings,
    }


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "name", value))


def _collective_json(c: Any) -> dict[str, Any]:
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
        groups_text = getattr(c, "groups_text", None) or str(groups)
    elif pairs is not None:
        groups_text = "{" + ",".join(f"{{{s},{t}}}" for s, t in pairs) + "}"
    else:
        groups_text = "{}"
    underlying = getattr(c, "underlying_opcode", c.opcode)
    if underlying in ("send", "recv"):
        underlying = "collective-permute"
    return {
        "name": c.name,
        "opcode": c.opcode,
        "underlying_opcode": underlying,
        "line": c.line,
        "column": c.column,
        "is_done": bool(getattr(c, "is_done", False)),
        "start": getattr(c, "start", None),
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
        },
    }

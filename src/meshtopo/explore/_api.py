"""The explorer's JSON API, in one screen (the full schema is in docs/explorer-api.md).

``GET  /api/info``    version, limits, the opcodes, the four modes with the fields that
                      select them, and the cluster preset names.
``POST /api/groups``  a grid (``replicas`` x ``partitions``, or a named ``mesh``), a
                      ``device_assignment``, the mode fields (``opcode``, ``channel_id``,
                      ``use_global_device_ids``) and the written groups (``groups`` text in any
                      encoding, or ``over`` mesh axes; a named mesh defaults to JAX's
                      fields), optionally a dump's ``shapes`` and a ``cluster`` preset -> the
                      mode, the device groups, per-cell arrays (with a cluster, each device's
                      host and domain), the compact form, the findings, the expansion steps,
                      the four modes side by side, and with a cluster each group's tier.
``POST /api/hlo``     ``{"text": ...}`` -> the module's replica and partition counts, its
                      collectives (each with a ready ``/api/groups`` body) and verifier findings.
``POST /api/order``   one module (``text``) or several with their devices (``programs``) -> the
                      order layer's schedules as lanes (at most 64), the rendezvous joining
                      them, its findings with the collectives where devices block, and the
                      run frame by frame. The one module may be the body itself
                      (``text/plain``), the other fields then in the query string as JSON.
``GET  /api/dump``    the dump named on the command line, with its ``/api/hlo`` answer.

Errors are ``{"error": {"kind", "message", ...}}`` with a 4xx status: 400 for malformed input
(HLO text errors add ``line`` and ``column``), 403 for a foreign ``Host`` on loopback, 404/405
for wrong paths or methods (every method but GET, HEAD and POST is a JSON 405; HEAD answers as
GET), 411 for chunked bodies, 413 for bodies or grids above the limits. A POST sent with the
header ``X-Meshtopo-Refusal: body`` (as the page sends its own) gets a refusal as a 200 with
the same body plus ``error.status``, the 4xx it stands for: a browser logs every 4xx it loads
as a console error, and a refused dial is an answer the page shows, not a failed load.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import meshtopo as mt

from ._schema import OPCODES

API_VERSION = 2


def _version() -> str:
    try:
        return metadata.version("meshtopo")
    except metadata.PackageNotFoundError:
        return "unknown"


def info_response(device_limit: int, max_body: int) -> dict[str, Any]:
    """Answer ``GET /api/info``."""
    selectors: dict[str, dict[str, bool | None]] = {
        "kCrossReplica": {"channel_id": False, "use_global_device_ids": None},
        "kCrossPartition": {"channel_id": True, "use_global_device_ids": None},
        "kCrossReplicaAndPartition": {"channel_id": True, "use_global_device_ids": False},
        "kFlattenedID": {"channel_id": True, "use_global_device_ids": True},
    }
    return {
        "api_version": API_VERSION,
        "meshtopo_version": _version(),
        "limits": {"devices": device_limit, "body_bytes": max_body},
        "opcodes": list(OPCODES),
        "modes": [{"name": str(mode), **selectors[str(mode)]} for mode in mt.CollectiveOpGroupMode],
        "cluster_presets": list(mt.topology.PRESETS),
    }

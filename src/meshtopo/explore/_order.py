"""``POST /api/order``: the order layer's report on a dump, shaped for lanes on screen.

One module every device runs (``text``, SPMD) or several (``programs``: ``[{"text",
"devices"}]``, MPMD) go to ``meshtopo.order.analyze``; the one module is placed by the device
table the request gives (``compile_options`` or ``device_assignment``, read by ``_table``). The answer has one lane per shown device
(at most ``LANE_LIMIT``: the devices the findings name first, then the lowest ids) holding its
arrivals in schedule order (``ARRIVAL_BUDGET`` shared evenly among the lanes: every one of 500
collectives on 8 devices, 128 a lane on 64), each distinct clique of those arrivals once
(``cliques``: arrivals and rendezvous name theirs by index; 8,192 arrivals of a 1,024-device
module name 342 cliques), the rendezvous joining them
across lanes, each finding with the arrivals where its devices block (a deadlock's in cycle
order), and a timeline of arrivals and completions by logical time (at most
``FRAME_LIMIT`` frames). The answer is bounded whatever the module's device count.

A lane holds what its device issues (``Report.schedule_head(device, limit,
taken_only=True)``: the arrivals shown and their count, without making the rest): the branch it
takes at each conditional and each iteration of each loop, as the order layer runs
the program for it; every arrival is ``taken``.
"""

from __future__ import annotations

from typing import Any

import meshtopo as mt
from meshtopo import hlo

from ._schema import Fields, RequestError, int_list
from ._table import TABLE_FIELDS, given_table

ORDER_FIELDS = ("text", "replica_count", "num_partitions", "programs", "lanes", *TABLE_FIELDS)
PROGRAM_FIELDS = ("text", "devices")
LANE_LIMIT = 64
ARRIVAL_BUDGET = 8192
FRAME_LIMIT = 400
PROGRAM_LIMIT = 64


def order_response(body: dict[str, Any], max_text: int, device_limit: int) -> dict[str, Any]:
    """Answer one ``POST /api/order`` body (schema in docs/explorer-api.md). Text that does not
    parse is a 400; a module the order layer refuses is an answer whose ``error`` says why."""
    fields = Fields(body)
    fields.check_known(ORDER_FIELDS)
    if fields.has("programs") == fields.has("text"):
        raise RequestError(400, "give either 'text' (one module, SPMD) or 'programs' (MPMD)")
    wanted = (int_list(fields.raw("lanes"), "lanes", LANE_LIMIT) if fields.has("lanes")
              else None)
    programs = _programs(fields, max_text, device_limit)
    names = [{"name": m.name, "devices": d} for m, d in programs]
    try:
        report = (mt.order.analyze(programs[0][0]) if fields.has("text")
                  else mt.order.analyze([(m, d or []) for m, d in programs]))
    except mt.LimitError:
        raise
    except mt.MeshtopoError as error:
        return {"programs": names, "error": f"{type(error).__name__}: {error}", "ok": False}
    return {"programs": names, "error": None, **_shaped(report, wanted)}


def _programs(fields: Fields, max_text: int,
              device_limit: int) -> list[tuple[hlo.Module, list[int] | None]]:
    if fields.has("text"):
        text = fields.string("text", max_length=max_text)
        replicas = fields.integer("replica_count") if fields.has("replica_count") else None
        partitions = fields.integer("num_partitions") if fields.has("num_partitions") else None
        given = given_table(fields, max_text, device_limit)
        return [(given.parse(text, replicas, partitions), None)]
    for key in ("replica_count", "num_partitions", *TABLE_FIELDS):
        if fields.has(key):
            raise RequestError(400, f"field {key!r} goes with 'text' (one module); each "
                                    "program's header gives its own counts")
    raw = fields.raw("programs")
    if not isinstance(raw, list) or not raw or len(raw) > PROGRAM_LIMIT:
        raise RequestError(400, "field 'programs' must be an array of 1 to "
                                f"{PROGRAM_LIMIT} objects {{\"text\", \"devices\"}}")
    programs: list[tuple[hlo.Module, list[int] | None]] = []
    for index, item in enumerate(raw):
        where = f"programs[{index}]"
        if not isinstance(item, dict):
            raise RequestError(400, f"field {where!r} must be an object {{\"text\", \"devices\"}}")
        program = Fields(item, f"{where}.")
        program.check_known(PROGRAM_FIELDS)
        text = program.string("text", max_length=max_text)
        devices = int_list(program.raw("devices"), f"{where}.devices", device_limit)
        programs.append((hlo.parse_module(text), devices))
    return programs


def _shaped(report: mt.order.Report, wanted: list[int] | None) -> dict[str, Any]:
    """Lanes, rendezvous, findings and timeline of ``report`` for the devices shown."""
    every = [int(d) for d in report.devices.tolist()]
    analysed = set(every)
    if wanted is not None:
        missing = [d for d in wanted if d not in analysed]
        if missing:
            raise RequestError(400, f"field 'lanes' names device {missing[0]}, which is not one "
                                    f"of the {len(every)} devices analysed")
        shown = sorted(set(wanted))
    else:
        shown = _default_lanes(report, every)
    per_lane = ARRIVAL_BUDGET // max(len(shown), 1)
    clique_of: dict[tuple[int, ...], int] = {}
    lanes = [_lane(report, device, per_lane, clique_of) for device in shown]
    cliques = [list(clique) for clique in clique_of]
    lane_of = {device: index for index, device in enumerate(shown)}
    rendezvous = _rendezvous(lanes, cliques)
    findings = [_finding(f, lanes, lane_of, rendezvous) for f in report.findings]
    cycles = [f["cycle"] for f in findings if f["cycle"]]
    frames, truncated = _timeline(lanes, rendezvous, cycles, cliques)
    return {
        "unit": report.unit,
        "spmd": report.spmd,
        "devices": len(every),
        "lanes": lanes,
        "shown": len(shown),
        "capped": len(shown) < len(every),
        "note": _lane_note(len(shown), len(every), wanted is not None),
        "cliques": cliques,
        "rendezvous": rendezvous,
        "findings": findings,
        "timeline": frames,
        "timeline_truncated": truncated,
        "timeline_note": None,
        "notes": list(report.notes),
        "ok": report.ok,
    }


def _default_lanes(report: mt.order.Report, every: list[int]) -> list[int]:
    """The devices the findings name (cycle members first), then the lowest ids, up to
    ``LANE_LIMIT``, in id order."""
    chosen: dict[int, None] = {}
    for finding in report.findings:
        for device in (*finding.devices, *finding.waiting):
            if len(chosen) < LANE_LIMIT:
                chosen.setdefault(int(device), None)
    for device in every:
        if len(chosen) >= LANE_LIMIT:
            break
        chosen.setdefault(device, None)
    return sorted(chosen)


def _lane_note(shown: int, total: int, asked: bool) -> str | None:
    if shown == total:
        return None
    which = ("the devices asked for" if asked
             else "the devices the findings name first, then the lowest ids")
    return (f"showing {shown} of {total} devices ({which}); lanes are capped at {LANE_LIMIT}, "
            "so rendezvous with devices not shown are drawn only between the lanes present")


def _lane(report: mt.order.Report, device: int, limit: int,
          clique_of: dict[tuple[int, ...], int]) -> dict[str, Any]:
    """One device's lane: the first ``limit`` collectives it issues, in order, and their count.
    Each arrival names its clique by index in ``clique_of`` (a clique not in it yet is added
    at the end)."""
    shown, count = report.schedule_head(device, limit, taken_only=True)
    return {
        "device": device,
        "program": shown[0].entry.program if shown else None,
        "arrivals": [_arrival(a, clique_of.setdefault(a.clique, len(clique_of)))
                     for a in shown],
        "count": count,
        "truncated": count > len(shown),
    }


def _arrival(a: mt.order.Arrival, clique: int) -> dict[str, Any]:
    """``a`` as JSON, its clique given by its index ``clique`` in the answer's ``cliques``."""
    entry = a.entry
    return {
        "name": entry.name, "opcode": entry.opcode, "stream": entry.stream,
        "channel_id": entry.channel_id, "clique": clique, "rank": a.rank,
        "position": a.position, "line": entry.line, "step": a.step, "end": a.end,
        "branches": [[name, index] for name, index in entry.branches],
        "iteration": [[name, number] for name, number in a.iteration],
        # Issued but never completed: the device waits here forever.
        "blocked": a.step >= 0 and a.end < 0,
        "issued": a.step >= 0,
        "taken": True,
        "rendezvous": -1,
    }


def _rendezvous(lanes: list[dict[str, Any]], cliques: list[list[int]]) -> list[dict[str, Any]]:
    """Group the shown arrivals into rendezvous: the same stream (and channel for send/recv),
    clique (an index in ``cliques``) and position on it, as the runtime matches them; each
    arrival gets its index."""
    index_of: dict[tuple[Any, ...], int] = {}
    meetings: list[dict[str, Any]] = []
    for lane_index, lane in enumerate(lanes):
        for index, arrival in enumerate(lane["arrivals"]):
            channel = arrival["channel_id"] if arrival["stream"] == "send-recv" else None
            key = (arrival["stream"], channel, arrival["clique"], arrival["position"])
            if key not in index_of:
                index_of[key] = len(meetings)
                meetings.append({
                    "clique": arrival["clique"], "stream": arrival["stream"],
                    "position": arrival["position"], "members": [], "names": [],
                    "arrived": 0, "needed": len(cliques[arrival["clique"]]), "complete": True,
                })
            meeting = meetings[index_of[key]]
            arrival["rendezvous"] = index_of[key]
            meeting["members"].append([lane_index, index])
            if arrival["name"] not in meeting["names"]:
                meeting["names"].append(arrival["name"])
            meeting["arrived"] += int(arrival["issued"])
            meeting["complete"] = meeting["complete"] and arrival["end"] >= 0
    # A shown member that does not take the collective leaves its rendezvous incomplete.
    devices = {lane["device"] for lane in lanes}
    for meeting in meetings:
        if len(meeting["members"]) < len(devices.intersection(cliques[meeting["clique"]])):
            meeting["complete"] = False
    return meetings


def _stuck_at(lane: dict[str, Any]) -> int | None:
    """Index of the first arrival the lane's device issues and never sees complete."""
    return next((i for i, a in enumerate(lane["arrivals"]) if a["blocked"]), None)


def _finding(finding: mt.order.Finding, lanes: list[dict[str, Any]],
             lane_of: dict[int, int], meetings: list[dict[str, Any]]) -> dict[str, Any]:
    """The finding as the order layer writes it, plus where it sits in the lanes: ``lanes``
    (the shown lanes of its devices), ``blocks`` (``[lane, index]`` of the arrivals where they
    block or that it names), for a deadlock ``cycle``: each cycle member's blocking arrival in
    cycle order (empty when a member's lane is not shown), and for a mismatch ``rendezvous``:
    the shown rendezvous it pairs wrongly (every shown lane of its devices a member, every
    member one of the instructions it names)."""
    devices = list(dict.fromkeys((*finding.devices, *finding.waiting)))
    shown = [lane_of[d] for d in devices if d in lane_of]
    blocks: list[list[int]] = []
    for lane in shown:
        stuck = _stuck_at(lanes[lane])
        named = [i for i, a in enumerate(lanes[lane]["arrivals"])
                 if a["name"] in finding.instructions]
        blocks.extend([lane, i] for i in ([stuck] if stuck is not None else named))
    cycle: list[list[int]] = []
    if finding.type == "deadlock" and all(d in lane_of for d in finding.devices):
        for device in finding.devices:
            stuck = _stuck_at(lanes[lane_of[device]])
            if stuck is None:
                cycle = []
                break
            cycle.append([lane_of[device], stuck])
    paired: list[int] = []
    if finding.type == "mismatch":
        instructions = set(finding.instructions)
        for number, meeting in enumerate(meetings):
            members = {lane for lane, _ in meeting["members"]}
            if set(shown) <= members and set(meeting["names"]) <= instructions:
                paired.append(number)
    return {**finding.to_json(), "lanes": shown, "blocks": blocks, "cycle": cycle,
            "rendezvous": paired}


def _timeline(lanes: list[dict[str, Any]], meetings: list[dict[str, Any]],
              cycles: list[list[list[int]]],
              cliques: list[list[int]]) -> tuple[list[dict[str, Any]], bool]:
    """Frames in logical-time order: each arrival of a shown device, each rendezvous that
    completes, and, when devices stay blocked, a last frame saying nobody can move. At most
    ``FRAME_LIMIT`` frames (the flag says when more were left out); the last frame spells out
    each waits-for cycle in ``cycles``. Frames name cliques by their devices (``cliques``
    holds those of the arrivals' indices)."""
    events: list[tuple[int, int, int, int]] = []
    for lane_index, lane in enumerate(lanes):
        for index, arrival in enumerate(lane["arrivals"]):
            if arrival["issued"]:
                events.append((arrival["step"], 0, lane_index, index))
    done: dict[tuple[int, int], list[list[int]]] = {}
    for number, meeting in enumerate(meetings):
        if meeting["complete"]:
            lane_index, index = meeting["members"][0]
            end = lanes[lane_index]["arrivals"][index]["end"]
            done[(end, number)] = meeting["members"]
    events.extend((end, 1, number, 0) for end, number in done)
    events.sort()
    arrived = [0] * len(meetings)
    frames: list[dict[str, Any]] = []
    for time, kind, first, second in events:
        if len(frames) >= FRAME_LIMIT:
            return frames, True
        if kind == 0:
            lane, arrival = lanes[first], lanes[first]["arrivals"][second]
            meeting = arrival["rendezvous"]
            arrived[meeting] += 1
            text = (f"device {lane['device']} arrives at {arrival['name']} on clique "
                    f"{_ids(cliques[arrival['clique']])} as rank {arrival['rank']}: "
                    f"{arrived[meeting]} of {meetings[meeting]['needed']} there")
            frames.append({"time": time, "kind": "arrive", "members": [[first, second]],
                           "rendezvous": meeting, "text": text})
        else:
            meeting = meetings[first]
            text = (f"{' / '.join(meeting['names'])} on clique "
                    f"{_ids(cliques[meeting['clique']])} "
                    "completes: all its members go on")
            frames.append({"time": time, "kind": "complete", "members": meeting["members"],
                           "rendezvous": first, "text": text})
    stuck = [[lane, at] for lane in range(len(lanes)) if (at := _stuck_at(lanes[lane])) is not None]
    if stuck and len(frames) < FRAME_LIMIT:
        waits = ", ".join(f"device {lanes[lane]['device']} in "
                          f"{lanes[lane]['arrivals'][at]['name']}" for lane, at in stuck[:8])
        more = f" and {len(stuck) - 8} more" if len(stuck) > 8 else ""
        loops = "".join(
            "; the waits-for cycle: " + ", ".join(
                f"device {lanes[lane]['device']} waits for device "
                f"{lanes[cycle[(k + 1) % len(cycle)][0]]['device']}"
                for k, (lane, _) in enumerate(cycle))
            for cycle in cycles)
        frames.append({"time": max((e[0] for e in events), default=0) + 1, "kind": "hang",
                       "members": stuck, "rendezvous": -1,
                       "text": f"no device can move; each waits forever: {waits}{more}{loops}"})
    return frames, False


def _ids(ids: list[int]) -> str:
    return "[" + ",".join(map(str, ids)) + "]"

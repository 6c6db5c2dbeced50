"""What ``order --traces`` adds to ``order``'s answer (each collective's straggler skew and
achieved bandwidth, with the topology models' prediction under ``--cluster``) and ``order
--logs`` (the hang logs' account per process group, communicator and rendezvous)."""

from __future__ import annotations

from rich.text import Text

from ...order import CollectiveTiming, LogReport, Timeline
from ...topology import MODELS, estimate
from .._plan._command import _cluster
from .._render import console, emit_json, plural

SHOWN = 20  # rows of each timing table in text (--json carries every collective)


def predictions(line: Timeline, cluster_spec: str) -> list[dict[str, float] | None]:
    """Per timing, each model's predicted seconds on the cluster (None for a collective the
    models do not price); computed once per distinct (kind, bytes, ranks)."""
    needed = 1 + max((max(t.ranks) for t in line.timings), default=0)
    cluster = _cluster(cluster_spec, None, needed)
    cache: dict[tuple[str, int, tuple[int, ...]], dict[str, float]] = {}
    out: list[dict[str, float] | None] = []
    for timing in line.timings:
        if timing.kind is None:
            out.append(None)
            continue
        key = (timing.kind, timing.bytes, timing.ranks)
        if key not in cache:
            cache[key] = estimate(cluster, [list(timing.ranks)], timing.kind,
                                  timing.bytes).times()
        out.append(cache[key])
    return out


def timings_json(line: Timeline, predicted: list[dict[str, float] | None] | None
                 ) -> dict[str, object]:
    """``timings`` and ``clock_offsets_us`` of ``order --traces --json``."""
    rows = []
    for index, timing in enumerate(line.timings):
        row = timing.to_json()
        if predicted is not None:
            row["predicted_seconds"] = predicted[index]
        rows.append(row)
    return {"clock_offsets_us": {str(r): o for r, o in sorted(line.offsets.items())},
            "timings": rows}


def print_timings(line: Timeline, predicted: list[dict[str, float] | None] | None) -> None:
    """The collectives with the largest straggler skew, then achieved bandwidth per collective
    (beside each model's predicted time under ``--cluster``), ``SHOWN`` rows each."""
    out = console()
    if not line.timings:
        out.print(Text("no collective was recorded by every member of its group",
                       style="dim"))
        return
    shifted = {r: o for r, o in line.offsets.items() if o}
    if shifted:
        out.print(Text("clocks aligned by matched collectives (rank: microseconds subtracted): "
                       + ", ".join(f"{r}: {o:.1f}" for r, o in sorted(shifted.items())),
                       style="dim"))
    by_skew = sorted(range(len(line.timings)), key=lambda i: -line.timings[i].skew_us)
    out.print(Text("straggler skew (the member that entered last, after the first):",
                   style="bold"))
    for index in by_skew[:SHOWN]:
        timing = line.timings[index]
        out.print(f"  {_name(timing):<28} rank {timing.last_rank} last, "
                  f"{timing.skew_us / 1e3:.3f} ms after the first")
    out.print(Text("achieved bandwidth (from the last entry to the last end):", style="bold"))
    for index, timing in enumerate(line.timings[:SHOWN]):
        text = (f"  {_name(timing):<28} {plural(len(timing.ranks), 'rank')}, "
                f"{timing.bytes} bytes in {timing.time_us / 1e3:.3f} ms: "
                f"algbw {_gbps(timing.algbw)}, busbw {_gbps(timing.busbw)}")
        guess = None if predicted is None else predicted[index]
        if guess is not None:
            text += "; predicted " + ", ".join(
                f"{model} {guess[model] * 1e3:.3f} ms" for model in MODELS
                if guess.get(model) == guess.get(model))
        out.print(text)
    if len(line.timings) > SHOWN:
        out.print(Text(f"{len(line.timings) - SHOWN} more collectives in --json", style="dim"))


def _name(timing: CollectiveTiming) -> str:
    return f"{timing.opcode}#{timing.seq}@pg{timing.group}"


def _gbps(value: float) -> str:
    return "-" if value != value else f"{value / 1e9:.3f} GB/s"


def log_lines(report: LogReport) -> list[str]:
    """The logs' account as lines: per process group and communicator the ranks' counts, who
    is behind, what they block in and where they first disagree; per rendezvous who waits."""
    lines = []
    for group in report.groups:
        name = f"process group {group.pg_id}" + (f" ({group.desc})" if group.desc else "")
        lines.append(f"{name}: {plural(len(group.ranks), 'rank')} logged")
        for rank, status in sorted(group.ranks.items()):
            where = f"rank {rank}" + ("" if status.global_rank is None else
                                      f" (global {status.global_rank})")
            counts = (f"last enqueued {_count(status.enqueued)}, last completed "
                      f"{_count(status.completed)}")
            blocked = ("" if status.blocked_seq is None else
                       f"; blocked in {status.blocked_op or '?'} #{status.blocked_seq}"
                       + ("" if status.numel_in is None else f" ({status.numel_in} elements)"))
            lines.append(f"  {where}: {counts}{blocked}")
        lines.extend(_disagreement(group.behind, group.first_disagreement,
                                   group.disagreement_op, "#"))
    for comm in report.comms:
        lines.append(f"NCCL communicator {comm.comm_id}: {comm.nranks} ranks, "
                     f"{len(comm.members)} seen")
        for rank, member in sorted(comm.members.items()):
            where = "" if member.global_rank is None else f" = global rank {member.global_rank}"
            last = ("no operation logged" if member.op_count is None else
                    f"last {member.op} opCount {member.op_count}")
            lines.append(f"  rank {rank}{where} on {member.host} device {member.device} "
                         f"(pid {member.pid}): {last}")
        unseen = sorted(set(range(comm.nranks)) - set(comm.members))
        if unseen:
            lines.append(f"  ranks {unseen} logged no Init COMPLETE")
        lines.extend(_disagreement(comm.behind, comm.first_disagreement, comm.disagreement_op,
                                   "opCount "))
    for wait in report.rendezvous:
        expected = "" if wait.expected is None else f", {wait.expected} threads expected"
        ranks = f", waiting: ranks {wait.ranks}" if wait.ranks else ""
        stuck = "; all arrived, the leader is stuck" if wait.leader_stuck else ""
        lines.append(f"XLA rendezvous `{wait.name}`: {plural(wait.reports, 'warning')}"
                     f"{expected}{ranks}{stuck}")
    return lines


def _disagreement(behind: list[int], first: int | None, op: str | None,
                  unit: str) -> list[str]:
    """The line naming the ranks behind and where the ranks first disagree, if they do."""
    if first is None:
        return []
    return [f"  ranks {behind} are behind; the ranks first disagree at {unit}{first}"
            + (f" ({op})" if op else "")]


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def order_logs(report: LogReport, as_json: bool) -> int:
    """``order --logs``: exit 1 when the logs show ranks that disagree or wait, else 0."""
    stuck = (any(g.first_disagreement is not None or any(s.blocked_seq is not None
                                                         for s in g.ranks.values())
                 for g in report.groups)
             or any(c.first_disagreement is not None for c in report.comms)
             or bool(report.rendezvous))
    if as_json:
        emit_json({**report.to_json(), "ok": not stuck})
        return 1 if stuck else 0
    out = console()
    for line in log_lines(report):
        out.print(line, highlight=False)
    summary = (f"{plural(len(report.sources), 'file')}, {plural(report.lines, 'line')}, "
               f"{report.recognised} of the watchdog, NCCL and rendezvous families")
    out.print(Text(summary, style="bold red" if stuck else "bold green"))
    return 1 if stuck else 0

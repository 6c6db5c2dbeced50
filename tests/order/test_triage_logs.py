"""``triage`` sets HLO programs beside hang logs rank by rank, and reads MPMD sets.

The programs are real: JAX compiles them with ``--xla_dump_to`` on CPU devices. One is
``test_triage_join``'s shard_map loop whose trip count XLA computes from ``partition-id`` on a
permuted mesh (the device running the last partition issues one all-reduce fewer); the others
are two pipeline stages whose psums over the whole mesh and over its ``b`` axis come in
opposite orders. The logs are written from torch's documented line formats (watchdog timeouts,
exception, dump-signal and periodic status lines) in the shapes real reports show: per-host
files, launcher prefixes, timestamps, ranks interleaved, a line cut short. What each rank
logs is what torch reports for ranks that run those devices: a group's sequence numbers
count its collectives from 1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ._jobs import run_ranks
from .test_triage_join import HERE, ISSUED, SHORT, TRIPS, _dump, _triage

pytestmark = [pytest.mark.jax, pytest.mark.timeout(300)]

_STAMP = "[{level}1201 10:10:0{second}.178116623 ProcessGroupNCCL.cpp:{line}]"


def _head(rank: int, level: str, second: int, line: int, pg: int = 0,
          desc: str = "default_pg", group_rank: int | None = None) -> str:
    """The start of a ProcessGroupNCCL log line of ``rank`` about process group ``pg``."""
    stamp = _STAMP.format(level=level, second=second, line=line)
    return (f"[rank{rank}]:{stamp} [PG ID {pg} PG GUID {pg}({desc}) Rank "
            f"{rank if group_rank is None else group_rank}]")


def _timeout(rank: int, seq: int, op: str, numel_in: int, numel_out: int, pg: int = 0,
             desc: str = "default_pg", group_rank: int | None = None) -> str:
    head = _head(rank, "E", 1, 632, pg, desc, group_rank)
    return (f"{head} Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
            f"OpType={op}, NumelIn={numel_in}, NumelOut={numel_out}, Timeout(ms)=600000) ran "
            f"for 600012 milliseconds before timing out.")


def _exception(rank: int, enqueued: int, completed: int, pg: int = 0,
               desc: str = "default_pg", group_rank: int | None = None) -> str:
    head = _head(rank, "E", 1, 1785, pg, desc, group_rank)
    return (f"{head} Exception (either an error or timeout) detected by watchdog at work: "
            f"{enqueued}, last enqueued NCCL work: {enqueued}, last completed NCCL work: "
            f"{completed}.")


def _status(rank: int, enqueued: int, completed: int, pg: int = 0, desc: str = "default_pg",
            group_rank: int | None = None) -> str:
    head = _head(rank, "I", 0, 1700, pg, desc, group_rank)
    return (f"{head} NCCL Work update periodically: last enqueued NCCL work: {enqueued}, last "
            f"completed NCCL work: {completed}.")


def _dump_signal(rank: int, enqueued: int, completed: int) -> str:
    head = _head(rank, "E", 2, 1987)
    return (f"{head} Received a dump signal due to a collective timeout from  rank 0 and we "
            f"will try our best to dump the debug info. Last enqueued NCCL work: {enqueued}, "
            f"last completed NCCL work: {completed}.This is most likely caused by incorrect "
            f"usages")


def _write_logs(folder: Path, logs: dict[str, list[str]]) -> Path:
    """``folder``, made, holding a log file per name with those lines."""
    folder.mkdir()
    for name, lines in logs.items():
        (folder / name).write_text("\n".join(lines) + "\n")
    return folder


def _loop_logs(folder: Path, op: dict[int, tuple[str, int, int]] | None = None) -> Path:
    """The loop job's logs: ranks run devices 0-3, rank SHORT leaves the loop one iteration
    early, the others time out in their last all_reduce (``op`` overrides a rank's logged
    OpType and sizes)."""
    lines: dict[int, list[str]] = {}
    for rank in range(4):
        if ISSUED[rank] < TRIPS:
            lines[rank] = [_status(rank, ISSUED[rank], ISSUED[rank]),
                           _dump_signal(rank, ISSUED[rank], ISSUED[rank])]
        else:
            kind, numel_in, numel_out = (op or {}).get(rank, ("ALLREDUCE", 1, 1))
            lines[rank] = [_timeout(rank, TRIPS, kind, numel_in, numel_out),
                           _exception(rank, TRIPS, TRIPS - 1)]
    host0 = ["2026-12-01T10:00:00.000Z step 0 loss 2.31", *[
        line for pair in zip(lines[0], lines[1], strict=True) for line in pair]]
    host1 = [f"node1: {line}" for pair in zip(lines[2], lines[3], strict=True) for line in pair]
    host1[1] = host1[1][:host1[1].index("NumelOut=")]  # cut short: sizes lost, SeqNum kept
    return _write_logs(folder, {"node0.log": host0, "node1.log": host1})


@pytest.fixture(scope="module")
def loop_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("loop")
    _dump(root / "dump")
    (module,) = sorted((root / "dump").glob("*jit_body*after_optimizations.txt"))
    return module


def _instructions(module: Path, opcode: str) -> list[tuple[str, str, str, str]]:
    """The ``opcode`` instructions of the module's text in text order: name, shape,
    computation and replica groups (read from XLA's text, not from meshtopo)."""
    computation = ""
    found = []
    for line in module.read_text().splitlines():
        head = re.match(r"^(?:ENTRY )?%?([\w.\-]+) ", line)
        if head and line.rstrip().endswith("{"):
            computation = head.group(1)
        hit = re.match(rf"\s*(?:ROOT )?%?([\w.\-]+) = (\S+) {opcode}\(", line)
        if hit:
            groups = re.search(r"replica_groups=(\{[\d,{}]*\})", line)
            found.append((hit.group(1), hit.group(2), computation,
                          groups.group(1) if groups else ""))
    return found


def _instruction(module: Path, opcode: str) -> tuple[str, str, str]:
    """The one ``opcode`` instruction of the module's text: name, shape, computation."""
    (found,) = _instructions(module, opcode)
    return found[:3]


def test_logged_sequence_numbers_are_the_programs_collectives(
        loop_module: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ranks 0, 2 and 3 time out in #3, their devices' third all-reduce (the loop's third
    iteration); rank SHORT stopped at #2, and the program explains it: its device runs the
    loop once fewer."""
    logs = _loop_logs(tmp_path / "logs")
    name, shape, computation = _instruction(loop_module, "all-reduce")
    assert shape.startswith("f32[1]")
    code, out = _triage([str(loop_module), str(logs), "--json"], capsys)
    assert code == 1
    answer = json.loads(out)
    (joined,) = answer["log_joins"]
    assert (joined["program"], joined["runtime"], joined["assumed"], joined["skipped"]) == (
        str(loop_module), "logs (2 files)", True, [])
    (group,) = joined["groups"]
    assert (group["pg_id"], group["desc"], group["devices"], group["unplaced"]) == (
        "0", "default_pg", [0, 1, 2, 3], [])
    ranks = {r["rank"]: r for r in group["ranks"]}
    assert sorted(ranks) == [0, 1, 2, 3]
    for rank in (0, 2, 3):
        assert {k: ranks[rank][k] for k in ("device", "seq", "at", "counted", "name",
                                             "opcode", "computation", "op_type", "op_agrees",
                                             "agrees")} == {
            "device": rank, "seq": TRIPS, "at": "timed out in", "counted": TRIPS, "name": name,
            "opcode": "all-reduce", "computation": computation, "op_type": "ALLREDUCE",
            "op_agrees": True, "agrees": True}
        assert [n for _, n in ranks[rank]["iteration"]] == [TRIPS - 1]
    assert (ranks[0]["numel_in"], ranks[0]["numel_out"], ranks[0]["program_numel_in"],
            ranks[0]["program_numel_out"], ranks[0]["numel_agrees"]) == (1, 1, 1, 1, True)
    assert (ranks[3]["numel_in"], ranks[3]["numel_out"], ranks[3]["numel_agrees"]) == (
        1, None, True)  # the line cut before NumelOut
    assert {k: ranks[SHORT][k] for k in ("seq", "at", "counted", "name", "op_type",
                                         "agrees")} == {
        "seq": TRIPS - 1, "at": "last enqueued", "counted": TRIPS - 1, "name": name,
        "op_type": None, "agrees": True}
    (behind,) = group["behind"]
    assert {k: behind[k] for k in ("rank", "device", "seq", "counted", "ahead",
                                   "ahead_devices", "explained")} == {
        "rank": SHORT, "device": SHORT, "seq": TRIPS, "counted": TRIPS - 1, "ahead": TRIPS,
        "ahead_devices": [0, 2, 3], "explained": True}
    assert [(m, t) for _, m, t in behind["loops"]] == [(TRIPS - 1, TRIPS)]
    head = f"hlo ({loop_module}) beside logs (2 files) (rank r taken to run device r)"
    assert f"{head}: process group 0: the program explains rank {SHORT} behind at #{TRIPS}: " \
           f"its device {SHORT} issues {TRIPS - 1} collectives on the group where devices " \
           f"[0, 2-3] issue {TRIPS}; {behind['loops'][0][0]} runs {TRIPS - 1} times on device " \
           f"{SHORT} and {TRIPS} times on the others" in answer["agreements"]
    assert not [line for line in answer["contradictions"] if "beside logs" in line]


def test_ranks_placed_elsewhere_and_wrong_op_types_contradict(
        loop_module: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same logs with ranks 1 and 2 placed on each other's devices: rank 2 timed out in
    #3 where its device issues 2, and rank 1, behind, runs a device that issues 3 like the
    others (the program does not explain it). Rank 0 logs an all-gather of other sizes."""
    logs = _loop_logs(tmp_path / "logs", {0: ("ALLGATHER", 1, 4)})
    name, _, computation = _instruction(loop_module, "all-reduce")
    code, out = _triage([str(loop_module), str(logs), "--rank-devices", "0,2,1,3"], capsys)
    assert code == 1
    assert f"  from {logs}/: node0.log, node1.log" in out.splitlines()  # one line per folder
    head = (f"contradict: hlo ({loop_module}) beside logs (2 files) (ranks placed on devices "
            f"as given): process group 0")
    lines = [line for line in out.splitlines() if line.startswith(head)]
    assert lines == [
        f"{head}: rank 0 timed out in #3 ALLGATHER (NumelIn 1, NumelOut 4), which the program "
        f"has its device 0 issue as {name} (all-reduce, in {computation}, iteration 3 of "
        + lines[0].split("iteration 3 of ")[1].split(")")[0]
        + "); the log's ALLGATHER is not all-reduce; the program's operands hold 1 elements "
          "and its result 1",
        f"{head}: rank 2 timed out in #3 ALLREDUCE (NumelIn 1, NumelOut 1), but the program "
        f"has its device 1 issue only 2 collectives on the group",
        f"{head}: the program does not explain rank 1 behind at #3: it has device 2 issue 3 "
        f"collectives on the group, and devices [0-1, 3] 3: look outside this program "
        f"(control flow on data, or a rank that ran another program or skipped a step)"]


_STAGES = textwrap.dedent("""
    import numpy as np, jax, jax.numpy as jnp
    from jax import lax
    from jax.sharding import Mesh, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))
    def preamble(x):  # tp ({0,1},{2,3}), dp ({0,2},{1,3}), then the world
        return lax.psum(lax.psum(lax.psum(x, "b") * 0.5, "a") * 0.5, ("a", "b")) * 0.5
    def world_first(x):
        return lax.psum(lax.psum(preamble(x), ("a", "b")) * 0.5, "b")
    def tp_first(x):
        return lax.psum(lax.psum(preamble(x), "b") * 0.5, ("a", "b"))
    for f in (world_first, tp_first):
        g = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P(("a", "b")),
                                  out_specs=P(("a", "b")), check_vma=False))
        g.lower(jnp.arange(32.0)).compile()
""")
TP, WORLD = "{{0,1},{2,3}}", "{{0,1,2,3}}"


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(world_first, tp_first, the job's Flight Recorder dumps): two stages that run a tp, a
    dp and a world psum, then a world and a tp psum in opposite orders; and the gloo job
    whose rank 1 issues the world all_reduce first and the others the tp one
    (``_fr_worker.py``'s "opposite": the same collectives on 8 floats a rank)."""
    root = tmp_path_factory.mktemp("stages")
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=(
        f"--xla_force_host_platform_device_count=8 --xla_dump_to={root / 'dump'}"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        ran = pool.submit(run_ranks, HERE / "_fr_worker.py", 4, root / "fr", "opposite")
        done = subprocess.run([sys.executable, "-c", _STAGES], env=env, capture_output=True,
                              text=True, timeout=240, check=False)
        ran.result()
    assert done.returncode == 0, done.stderr[-2000:]
    (world_first,) = sorted((root / "dump").glob("*jit_world_first*after_optimizations.txt"))
    (tp_first,) = sorted((root / "dump").glob("*jit_tp_first*after_optimizations.txt"))
    assert sorted(p.name for p in (root / "fr").iterdir()) == [f"fr_rank_{r}" for r in range(4)]
    return world_first, tp_first, root / "fr"


def _stage_logs(folder: Path) -> Path:
    """The watchdogs of a job whose rank 1 runs world_first and ranks 0, 2, 3 tp_first: on
    the world group (PG 0) ranks 1-3 time out in #2 and rank 0 enqueued 1; on the tp group of
    ranks 0 and 1 (PG 1) rank 0 times out in #2 and rank 1 enqueued 1; on the tp group of
    ranks 2 and 3 (PG 2) both completed 2."""
    world = [_timeout(r, 2, "ALLREDUCE", 8, 8) for r in (1, 2, 3)]
    world += [_exception(r, 2, 1) for r in (1, 2, 3)]
    world.append(_status(0, 1, 1))
    tp = [_timeout(0, 2, "ALLREDUCE", 8, 8, pg=1, desc="undefined", group_rank=0),
          _exception(0, 2, 1, pg=1, desc="undefined", group_rank=0),
          _status(1, 1, 1, pg=1, desc="undefined", group_rank=1),
          *(_status(r, 2, 2, pg=2, desc="undefined", group_rank=r - 2) for r in (2, 3))]
    return _write_logs(folder, {"job.log": [*world[:3], *tp, *world[3:]]})


def test_mpmd_stages_joined_each_with_its_program(
        stages: tuple[Path, Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """world_first@1 tp_first@0,2,3: the set deadlocks (device 0 waits in the tp all-reduce,
    device 1 in the world's). Each rank is joined with its own stage's schedule: the Flight
    Recorder dumps of the gloo job entered exactly what each device issues up to where the
    program blocks it, the logs' sequence numbers are each group's collectives, the ranks
    behind are explained, and the logs blame the ranks the program's deadlock names."""
    world_first, tp_first, fr = stages
    logs = _stage_logs(tmp_path / "logs")
    ops = {(stage, groups): [name for name, _, _, g in _instructions(module, "all-reduce")
                             if g == groups]
           for stage, module in (("world_first", world_first), ("tp_first", tp_first))
           for groups in (TP, WORLD)}
    assert all(len(names) == 2 for names in ops.values())
    code, out = _triage([f"{world_first}@1", f"{tp_first}@0,2,3", str(fr), str(logs),
                         "--json"], capsys)
    assert code == 1
    answer = json.loads(out)
    (hlo,) = [s for s in answer["sources"] if s["kind"] == "hlo"]
    assert hlo["paths"] == [f"{world_first}@1", f"{tp_first}@0,2,3"]
    assert hlo["found"] and hlo["findings"][0].startswith("deadlock: devices [")
    (joined,) = answer["joins"]
    assert [(r["rank"], r["device"], r["issued"], r["entered"], r["agrees"])
            for r in joined["ranks"]] == [(0, 0, 4, 4, True), (1, 1, 4, 4, True),
                                          (2, 2, 5, 5, True), (3, 3, 5, 5, True)]
    assert [r["unreached"] for r in joined["ranks"]] == [1, 1, 0, 0]
    (log_joined,) = answer["log_joins"]
    world, tp01, tp23 = log_joined["groups"]
    assert [(g["pg_id"], g["devices"]) for g in log_joined["groups"]] == [
        ("0", [0, 1, 2, 3]), ("1", [0, 1]), ("2", [2, 3])]
    assert [(r["rank"], r["seq"], r["at"], r["name"], r["agrees"]) for r in world["ranks"]] == [
        (0, 1, "last enqueued", ops["tp_first", WORLD][0], True),
        (1, 2, "timed out in", ops["world_first", WORLD][1], True),
        (2, 2, "timed out in", ops["tp_first", WORLD][1], True),
        (3, 2, "timed out in", ops["tp_first", WORLD][1], True)]
    assert [(r["numel_in"], r["program_numel_in"], r["numel_agrees"])
            for r in world["ranks"][1:]] == [(8, 8, True)] * 3
    assert [(b["rank"], b["counted"], b["ahead"], b["explained"]) for b in world["behind"]] == [
        (0, 1, 2, True)]
    assert [(r["rank"], r["seq"], r["name"], r["agrees"]) for r in tp01["ranks"]] == [
        (0, 2, ops["tp_first", TP][1], True), (1, 1, ops["world_first", TP][0], True)]
    assert [(b["rank"], b["counted"], b["ahead"], b["explained"]) for b in tp01["behind"]] == [
        (1, 1, 2, True)]
    assert [(r["rank"], r["seq"], r["name"], r["agrees"]) for r in tp23["ranks"]] == [
        (2, 2, ops["tp_first", TP][1], True), (3, 2, ops["tp_first", TP][1], True)]
    assert tp23["behind"] == []
    assert (f"hlo (MPMD set {world_first.name}@1 {tp_first.name}@0,2,3)'s own findings name "
            f"devices [0-1], run by ranks [0-1]; flight recorder (4 files), logs "
            f"({logs / 'job.log'}) blame the same ranks" in answer["agreements"])
    assert not [line for line in answer["contradictions"] if "beside" in line]


def test_several_programs_without_a_set_say_how_to_give_one(
        stages: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    world_first, tp_first, _ = stages
    code, out = _triage([str(world_first), str(tp_first)], capsys)
    assert code == 0
    assert ("note: several HLO programs issue collectives, each read as a program on its own; "
            "if different ranks run different programs, give each as FILE@DEVICES (e.g. "
            "stage0.hlo@0,1 stage1.hlo@2,3) to analyse them as one MPMD set and join each "
            "rank with its own program") in out


def _side_files(dump: Path) -> int:
    """Files XLA's dump writes besides the after-optimizations text of its 3 modules."""
    return sum(1 for p in dump.rglob("*") if p.is_file()) - 3


def test_a_dump_directory_reads_on_one_screen(
        stages: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A dump directory: the after-optimizations modules are read, the one without
    collectives counted on one line, the files XLA writes beside them counted on one;
    --verbose names them."""
    forward, _, _ = stages
    code, out = _triage([str(forward.parent)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert sum(line.startswith("hlo: HLO module") for line in lines) == 2
    assert [line for line in lines if line.startswith("hlo: ") and "more module" in line] == [
        "hlo: 1 more module without collectives, no findings (--verbose names them)"]
    assert [line.split(": ", 1)[0] for line in lines if line.startswith("unread")] == [
        f"unread ({_side_files(forward.parent)} files)"]
    assert len(lines) <= 25
    code, verbose = _triage([str(forward.parent), "--verbose"], capsys)
    assert sum(line.startswith("hlo: HLO module") for line in verbose.splitlines()) == 3

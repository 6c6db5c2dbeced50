"""Flight Recorder dumps made here by real 4-process gloo jobs (torch 2.13, 127.0.0.1, a 2x2
mesh of tp and dp groups), read by ``from_flight_recorder`` in both formats and compared with
torch's own analyzer on the same files."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.order import _flight_columns as fc

from ._jobs import run_jobs, torch_analyses

HERE = Path(__file__).resolve().parent
SCENARIOS = ("clean", "batch", "opposite", "cycle", "skip", "size", "dtype", "type", "moe",
             "moe_bad", "list_bad", "absent")
GROUPS = {"0": [0, 1, 2, 3], "1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("flight_recorder")
    paths = {scenario: root / scenario for scenario in SCENARIOS}
    run_jobs(HERE / "_fr_worker.py", 4, paths)
    for scenario, path in paths.items():
        written = sorted(p.name for p in path.iterdir() if p.is_file())
        dumped = range(3) if scenario == "absent" else range(4)  # rank 3 leaves no dump
        assert written == [f"fr_rank_{r}" for r in dumped], (scenario, written)
    return paths


def _both(path: Path) -> list[mt.order.Report]:
    """The pickle dumps and their JSON twins (which carry no stack frames, so no lines)."""
    return [mt.order.from_flight_recorder(path),
            mt.order.from_flight_recorder(path.with_name(path.name + "_json"))]


def _unlined(message: str) -> str:
    return re.sub(r" \(line \d+\)", "", message)


def _worker_line(text: str) -> int:
    """The line of ``_fr_worker.py`` that holds ``text`` (what the dumps' frames name)."""
    lines = (HERE / "_fr_worker.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def _summary(report: mt.order.Report) -> list[tuple[object, ...]]:
    return [(f.type, f.devices, f.instructions, f.culprits) for f in report.findings]


def test_clean_run(dumps: dict[str, Path]) -> None:
    for report in _both(dumps["clean"]):
        assert report.findings == []
        assert report.notes[0].startswith(
            "pg_config names no members for process groups 0, 1, 2, 3, 4 (as raw gloo dumps")
        assert report.devices.tolist() == [0, 1, 2, 3]
        cliques = [a.clique for a in report.schedule(1)]
        # warm-up tp, dp, world, then twice [tp, tp, dp (reduce_scatter, recorded as it is
        # lowered), world]
        assert cliques == [(0, 1), (1, 3), (0, 1, 2, 3)] + [
            (0, 1), (0, 1), (1, 3), (0, 1, 2, 3)] * 2


def test_batched_sends_and_recvs_leave_no_entries_in_gloo_dumps(dumps: dict[str, Path]) -> None:
    # gloo records no send or recv, batched or not: each batch's send and recv leave a gap
    # in the world group's op_id only, and what is recorded (the all-reduces) matches cleanly.
    entries = pickle.loads((dumps["batch"] / "fr_rank_1").read_bytes())["entries"]
    assert [(e["profiling_name"], e["is_p2p"], e["op_id"]) for e in entries[2:]] == [
        ("gloo:all_reduce", False, 1), ("gloo:all_reduce", False, 4),
        ("gloo:all_reduce", False, 7)]
    for report in _both(dumps["batch"]):
        assert report.findings == []
        assert [a.clique for a in report.schedule(1)] == [
            (0, 1), (1, 3), (0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)]


def test_two_ranks_in_opposite_order(dumps: dict[str, Path]) -> None:
    for report in _both(dumps["opposite"]):
        assert _summary(report) == [
            ("deadlock", (0, 1), ("all_reduce#2@pg1", "all_reduce#2@pg0"), ())]
        assert _unlined(report.findings[0].message) == (
            "a waits-for cycle across 2 cliques: rank 0 waits in all_reduce#2@pg1 "
            "on clique [0,1] for rank 1; rank 1 waits in all_reduce#2@pg0 on clique [0,1,2,3] "
            "for rank 0. None of them can go on: the job hangs. 2 more ranks only wait behind "
            "it.")
    line = _worker_line("if step is not None else")
    assert f"all_reduce#2@pg1 (line {line})" in mt.order.from_flight_recorder(
        dumps["opposite"]).findings[0].message


def test_four_rank_cycle_across_tp_and_dp(dumps: dict[str, Path]) -> None:
    for report in _both(dumps["cycle"]):
        assert _summary(report) == [(
            "deadlock", (0, 1, 3, 2),
            ("all_reduce#2@pg1", "all_reduce#2@pg4", "all_reduce#2@pg2", "all_reduce#2@pg3"),
            ())]
        assert "across 4 cliques" in report.findings[0].message


def test_rank_that_skips_a_collective(dumps: dict[str, Path]) -> None:
    for report in _both(dumps["skip"]):
        # rank 3 waits for the tp all-reduce rank 2 skipped; rank 2 went past it (it completed
        # its dp all-reduce) and waits at the world group: rank 2 is missing, not in a cycle.
        assert [(f.type, f.devices, f.instructions, f.waiting) for f in report.findings] == [
            ("missing", (2,), ("all_reduce#3@pg2",), (3,))]
        assert _unlined(report.findings[0].message) == (
            "rank 2 never arrives at all_reduce#3@pg2 (all_reduce, Float [[8]]); rank 3 waits "
            "there forever. Rank 2 skipped it rather than issuing it later: since "
            "all_reduce#2@pg2, the last collective both completed, rank 3 issued this one, "
            "while rank 2 completed 1 other collective and now waits in all_reduce#2@pg0. "
            "3 more ranks only wait behind it.")
    line = _worker_line("if rank != 2:") + 1
    assert f"at all_reduce#3@pg2 (line {line})" in mt.order.from_flight_recorder(
        dumps["skip"]).findings[0].message


@pytest.mark.parametrize(("scenario", "culprit", "field"),
                         [("size", 2, "size"), ("dtype", 3, "dtype"), ("type", 1, "type")])
def test_mismatch_names_the_culprit(dumps: dict[str, Path], scenario: str, culprit: int,
                                    field: str) -> None:
    for report in _both(dumps[scenario]):
        assert len(report.findings) == 1
        finding = report.findings[0]
        assert (finding.type, finding.devices, finding.culprits) == (
            "mismatch", (0, 1, 2, 3), (culprit,))
        assert f"they differ in {field}," in finding.message
        assert finding.message.endswith(f"Off the majority: ranks [{culprit}].")


def _filled(source: Path, target: Path) -> Path:
    """The dumps with ``pg_config`` filled in as torch's analyzer needs it."""
    target.mkdir()
    for file in source.iterdir():
        dump = pickle.loads(file.read_bytes())
        dump["pg_config"] = {name: {"name": name, "desc": "undefined", "ranks": str(ranks)}
                             for name, ranks in GROUPS.items()}
        (target / file.name).write_bytes(pickle.dumps(dump))
    return target


# What torch's analyzer is run on: (scenario, pg_config filled in, the ranks whose files it
# lists first). All of them run in one process that imports the analyzer once.
ANALYSES = [("size", False, "0,1,2,3"), ("size", True, "0,1,2,3"), ("size", True, "2,0,1,3"),
            ("opposite", True, "0,1,2,3"), ("skip", True, "0,1,2,3"), ("moe", True, "0,1,2,3"),
            ("moe_bad", True, "0,1,2,3"), ("list_bad", True, "0,1,2,3"),
            ("absent", True, "0,1,2")]
Analysis = tuple[str, bool, str]


@pytest.fixture(scope="module")
def filled(dumps: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The dumps of the scenarios torch's analyzer reads with ``pg_config`` filled in."""
    root = tmp_path_factory.mktemp("filled")
    return {scenario: _filled(dumps[scenario], root / scenario)
            for scenario in sorted({scenario for scenario, fill, _ in ANALYSES if fill})}


@pytest.fixture(scope="module")
def torch_says(dumps: dict[str, Path], filled: dict[str, Path],
               tmp_path_factory: pytest.TempPathFactory) -> dict[Analysis, str]:
    """What torch's analyzer prints for each of ``ANALYSES``."""
    runs = [((filled if fill else dumps)[scenario], "fr_rank_", order)
            for scenario, fill, order in ANALYSES]
    outputs = torch_analyses(runs, tmp_path_factory.mktemp("torch") / "out")
    return dict(zip(ANALYSES, outputs, strict=True))


def test_torch_analyzer_crashes_on_raw_gloo_dumps(dumps: dict[str, Path],
                                                  torch_says: dict[Analysis, str]) -> None:
    assert "KeyError" in torch_says[("size", False, "0,1,2,3")]
    assert mt.order.from_flight_recorder(dumps["size"]).findings[0].culprits == (2,)


def test_torch_analyzer_blames_by_directory_order(filled: dict[str, Path],
                                                  torch_says: dict[Analysis, str]) -> None:
    assert "Culprit rank 2;" in torch_says[("size", True, "0,1,2,3")]
    culprit_first = torch_says[("size", True, "2,0,1,3")]
    assert "Culprit rank 2;" not in culprit_first
    assert all(f"Culprit rank {r};" in culprit_first for r in (0, 1, 3))
    # meshtopo reads ranks from the file names and blames by majority, whatever the order.
    assert mt.order.from_flight_recorder(filled["size"]).findings[0].culprits == (2,)


def test_torch_analyzer_reports_a_deadlock_as_missing_ranks(
        filled: dict[str, Path], torch_says: dict[Analysis, str]) -> None:
    output = torch_says[("opposite", True, "0,1,2,3")]
    assert "missing ranks: {0}" in output and "missing ranks: {1}" in output
    assert "cycle" not in output.lower()
    report = mt.order.from_flight_recorder(filled["opposite"])
    assert [(f.type, f.devices) for f in report.findings] == [("deadlock", (0, 1))]


def test_torch_analyzer_weighs_a_skip_like_its_knock_on_waits(
        dumps: dict[str, Path], torch_says: dict[Analysis, str]) -> None:
    output = torch_says[("skip", True, "0,1,2,3")]
    # Three "Not all ranks joining" reports at equal weight: the cause (rank 2 on pg 2,
    # sequence number 3) and the waits behind it (world group, dp group 4).
    assert re.findall(r"missing ranks: (\{[\d, ]+\})", output) == ["{1, 3}", "{3}", "{2}"]
    assert [(f.type, f.devices) for f in mt.order.from_flight_recorder(
        dumps["skip"]).findings] == [("missing", (2,))]


def _recorded(path: Path, rank: int, opcode: str) -> list[tuple[object, ...]]:
    entries = pickle.loads((path / f"fr_rank_{rank}").read_bytes())["entries"]
    return [(e["process_group"][0], e["input_sizes"], e["output_sizes"]) for e in entries
            if e["profiling_name"] == f"gloo:{opcode}"]


def test_uneven_all_to_all_splits_are_clean(dumps: dict[str, Path],
                                           torch_says: dict[Analysis, str]) -> None:
    # all_to_all_single records its tensors' sizes only (rank 1 sends 8 rows of 4 and
    # receives 7 on the world group, 1 row of 3 and receives 5 on tp); the list form records
    # one tensor per peer. Every rank's amounts differ, and the exchanges agree.
    assert _recorded(dumps["moe"], 1, "all_to_all") == [
        ("0", [[8, 4]], [[7, 4]]), ("1", [[1, 3]], [[5, 3]]), ("4", [[2], [2]], [[2], [2]])]
    for report in _both(dumps["moe"]):
        assert report.findings == []
        assert [a.clique for a in report.schedule(1)][3:] == [
            (0, 1, 2, 3), (0, 1), (1, 3), (0, 1, 2, 3)]
    output = torch_says[("moe", True, "0,1,2,3")]
    assert "mismatch" not in output.lower() and "Traceback" not in output


def test_uneven_all_to_all_with_a_wrong_receive_split(dumps: dict[str, Path],
                                                      torch_says: dict[Analysis, str]) -> None:
    # rank 2 expects 4 rows from rank 1, which sends it 1: the group sends 32 rows, receives 35.
    for report in _both(dumps["moe_bad"]):
        assert _summary(report) == [("mismatch", (0, 1, 2, 3), ("all_to_all#3@pg0",), ())]
        message = report.findings[0].message
        assert message.startswith("Position 2 on clique [0,1,2,3]: ")
        assert "(all_to_all, Float); the group sends 32 elements in all but receives 35: " \
               "ranks 0, 1, 2, 3 send 10, 8, 8, 6 and receive 6, 7, 10, 12" in message
        assert message.endswith("which rank's splits are wrong cannot be told.")
    line = _worker_line("rank 2 expects 4 rows from rank 1")
    assert f"rank 2 issues all_to_all#3@pg0 (line {line + 3})" in mt.order.from_flight_recorder(
        dumps["moe_bad"]).findings[0].message
    output = torch_says[("moe_bad", True, "0,1,2,3")]
    assert "total input numel: 32" in output and "total output numel: 35" in output


def test_all_to_all_lists_are_checked_per_peer(dumps: dict[str, Path],
                                               torch_says: dict[Analysis, str]) -> None:
    # rank 1 sends and expects 3 elements a peer, the others 2: the totals agree (36), the
    # per-peer tensors do not, and rank 1 disagrees with every peer.
    assert _recorded(dumps["list_bad"], 1, "all_to_all") == [("0", [[3]] * 4, [[3]] * 4)]
    for report in _both(dumps["list_bad"]):
        assert _summary(report) == [("mismatch", (0, 1, 2, 3), ("all_to_all#3@pg0",), (1,))]
        message = report.findings[0].message
        assert "the splits disagree: rank 0 expects 2 elements from rank 1, which sends it 3; " \
               "rank 1 expects 3 elements from rank 0, which sends it 2;" in message
        assert message.endswith("Off the majority: ranks [1].")
    # torch's analyzer sums each rank's first tensor only, so it sees nothing wrong.
    output = torch_says[("list_bad", True, "0,1,2,3")]
    assert "mismatch" not in output.lower() and "Traceback" not in output


def test_rank_without_a_dump_is_missing_where_the_others_block(
        dumps: dict[str, Path], filled: dict[str, Path], torch_says: dict[Analysis, str]) -> None:
    # All four ranks completed world all-reduces 1 to 3 (pg_status says so); rank 3 then
    # stopped and left no dump, and ranks 0, 1, 2 block at the fourth.
    report = mt.order.from_flight_recorder(filled["absent"])
    assert [(f.type, f.devices, f.instructions, f.waiting) for f in report.findings] == [
        ("missing", (3,), ("all_reduce#4@pg0",), (0, 1, 2))]
    assert _unlined(report.findings[0].message) == (
        "rank 3 never arrives at all_reduce#4@pg0 (all_reduce, Float [[8]]); ranks "
        "[0, 1, 2] wait there forever. Rank 3 left no dump: it is placed where the others "
        "block, having taken part in every collective the dumps show completed on its "
        "groups, and none shows this one completed.")
    assert report.notes[0].startswith("ranks [3] are members of recorded process groups but "
                                      "left no dump")
    assert "Missing dump files from ranks {3}" in torch_says[("absent", True, "0,1,2")]
    # The raw gloo dumps of this 2x2 job name no members anywhere and no group size. What they
    # do say: on the default group every rank with a dump enqueued a collective that none
    # completed, and every rank below the highest left a dump, so the world holds a rank
    # above them, the next one, and it left no dump.
    for raw, (statuses, blocked_at) in zip(_both(dumps["absent"]), _default_group_status(
            dumps["absent"]), strict=True):
        dumped = sorted(statuses)
        assert dumped == list(range(len(dumped)))
        seq = max(done for _, done in statuses.values()) + 1
        assert all(enqueued >= seq for enqueued, _ in statuses.values())
        assert {r: at[seq] for r, at in blocked_at.items()} == {
            r: ("gloo:all_reduce", "scheduled") for r in dumped}
        absent = len(dumped)
        assert [(f.type, f.devices, f.instructions, f.waiting) for f in raw.findings] == [
            ("missing", (absent,), (f"all_reduce#{seq}@pg0",), tuple(dumped))]
        assert f"Rank {absent} left no dump:" in raw.findings[0].message
        assert raw.devices.tolist() == dumped
        assert any(f"so rank {absent} exists and left no dump; whether ranks above it exist "
                   f"the dumps do not say" in note for note in raw.notes)


def _default_group_status(path: Path) -> list[tuple[dict[int, tuple[int, int]],
                                                    dict[int, dict[int, tuple[str, str]]]]]:
    """For the pickle dumps and their JSON twins: per rank, the default group's
    (last_enqueued, last_completed) from pg_status, and its entries on that group by sequence
    number (profiling name, state)."""
    out = []
    for folder, load in ((path, lambda f: pickle.loads(f.read_bytes())),
                         (path.with_name(path.name + "_json"),
                          lambda f: json.loads(f.read_text()))):
        statuses: dict[int, tuple[int, int]] = {}
        blocked_at: dict[int, dict[int, tuple[str, str]]] = {}
        for file in folder.iterdir():
            rank = int(re.search(r"(\d+)", file.name).group(1))  # type: ignore[union-attr]
            dump = load(file)
            world = [e for e in dump["entries"] if e["process_group"][0] == "0"]
            status = dump["pg_status"][str(world[0]["pg_id"])]
            statuses[rank] = (int(status["last_enqueued_collective"]),
                              int(status["last_completed_collective"]))
            blocked_at[rank] = {int(e["collective_seq_id"]): (e["profiling_name"], e["state"])
                                for e in world}
        out.append((statuses, blocked_at))
    return out


@pytest.mark.skipif(fc.DECODER != "native", reason="the decoder was not built")
def test_decoders_agree(dumps: dict[str, Path]) -> None:
    """torch's own pickles: the compiled decoder reads every one, to the columns Python's
    restricted unpickler and ``columns`` give."""
    for path in dumps.values():
        for file in sorted(path.iterdir()):
            data = file.read_bytes()
            assert fc._scan is not None
            found = fc._scan(data, fc.FIELDS, fc._LIBRARY, fc.MAX_DEPTH)
            assert found is not None, file
            values, ids, config, status = found
            theirs = fc.columns(fc._unpickle(data, file), file)
            assert values == theirs.values
            assert [type(v) for v in values] == [type(v) for v in theirs.values]
            assert ids == theirs.ids.astype("int32").tobytes()
            assert (config, status) == (theirs.pg_config, theirs.pg_status)
            line = theirs.values[theirs.ids[0, fc.LINE]]
            assert theirs.values[theirs.ids[0, fc.FILENAME]] == str(HERE / "_fr_worker.py")
            assert line == _worker_line("dist.all_reduce(x, group=tp)")

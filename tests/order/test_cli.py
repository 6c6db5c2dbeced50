"""``meshtopo order`` (text, JSON, ``--trace``, ``--flight-recorder``) and ``meshtopo check``
running the order analysis."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from meshtopo.cli import main

from ._cases import ADD, all_reduce
from .test_findings import CONDITIONAL

ALL = "{{0,1,2,3}}"
PAIRS = "{{0,1},{2,3}}"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def _module(body: str) -> str:
    return (f"HloModule m, num_partitions=4\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
            f"  %p = f32[8]{{0}} parameter(0)\n{body}  ROOT %out = f32[8]{{0}} copy(%p)\n}}\n")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    texts = {
        "forward": _module(all_reduce("a", ALL) + all_reduce("b", PAIRS, channel=2)),
        "backward": _module(all_reduce("b", PAIRS, channel=2) + all_reduce("a", ALL)),
        "diverge": CONDITIONAL.replace("PREDICATE", "copy(%first)"),
    }
    out = {}
    for name, text in texts.items():
        (tmp_path / f"{name}.hlo").write_text(text)
        out[name] = str(tmp_path / f"{name}.hlo")
    return out


def test_clean_spmd_module(capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> None:
    code, out, err = run(capsys, "order", files["forward"], "--devices", "2")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "device 2"
    assert "a                        all-reduce           clique [0,1,2,3] rank 2 #0" in out
    assert out.splitlines()[-1].endswith(": 4 devices, 2 collectives, no findings")


@pytest.mark.parametrize(("partitions", "summary", "hidden"), [
    (4, "4 devices, 1 collective, no findings", None),
    (5, "5 devices, 1 collective, no findings",
     "timeline of device 4 not shown (the first 4 are); show it with --devices 4"),
], ids=["four", "five"])
def test_counts_of_one_are_singular(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                    partitions: int, summary: str, hidden: str | None) -> None:
    path = tmp_path / "one.hlo"
    groups = "{{" + ",".join(map(str, range(partitions))) + "}}"
    path.write_text(_module(all_reduce("a", groups)).replace(
        "num_partitions=4", f"num_partitions={partitions}"))
    code, out, err = run(capsys, "order", str(path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[-1] == f"{path}: {summary}"
    assert (lines[-2] if hidden else None) == hidden


def test_mpmd_deadlock_text_and_excerpt(capsys: pytest.CaptureFixture[str],
                                        files: dict[str, str]) -> None:
    code, out, err = run(capsys, "order", f"{files['forward']}@0,2,3",
                         f"{files['backward']}@1")
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[0] == "deadlock: devices [0, 1] at a, b"
    assert lines[1].startswith("  a waits-for cycle across 2 cliques: device 0 waits in a")
    assert lines[2] == "  device 0:"
    assert lines[3].startswith("  > a ") and lines[3].endswith("blocked here")
    assert "1 finding in the collective order of 4 devices" in lines[-1]


def test_missing_guest_excerpt(capsys: pytest.CaptureFixture[str], files: dict[str, str],
                               tmp_path: Path) -> None:
    empty = tmp_path / "empty.hlo"
    empty.write_text(_module(""))
    code, out, _ = run(capsys, "order", f"{files['forward']}@0,1,2", f"{empty}@3", "--json")
    finding = json.loads(out)["findings"][0]
    assert (code, finding["type"], finding["devices"], finding["waiting"]) == (
        1, "missing", [3], [0, 1, 2])
    code, out, _ = run(capsys, "order", f"{files['forward']}@0,1,2", f"{empty}@3")
    lines = out.splitlines()
    assert lines[:4] == [
        "missing: devices [3] at a",
        "  device 3 never arrives at a (line 9) (all-reduce, f32[8]{0}, sum); devices "
        "[0, 1, 2] wait there forever.",
        "  device 3 (never issues a; no collectives at all):",
        "  device 0:"]


def test_json_schema(capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> None:
    code, out, _ = run(capsys, "order", f"{files['forward']}@0,2,3", f"{files['backward']}@1",
                       "--json", "--devices", "1")
    answer = json.loads(out)
    assert code == 1
    assert sorted(answer) == ["devices", "entries", "findings", "notes", "ok", "schedules",
                              "source", "spmd", "unit"]
    assert answer["notes"] == []
    assert (answer["unit"], answer["spmd"], answer["devices"], answer["entries"],
            answer["ok"]) == ("device", False, 4, [2, 2], False)
    finding = answer["findings"][0]
    assert (finding["type"], finding["devices"], finding["instructions"]) == (
        "deadlock", [0, 1], ["a", "b"])
    first = answer["schedules"]["1"][0]
    assert sorted(first) == ["branches", "clique", "column", "done", "dtype", "end",
                             "iteration", "line", "loops", "name", "opcode", "position",
                             "program", "rank", "reduction", "shape", "step", "stream"]
    assert (first["name"], first["clique"], first["rank"], first["end"]) == ("b", [0, 1], 1, -1)


def test_trace_in_chrome_trace_event_format(capsys: pytest.CaptureFixture[str],
                                            files: dict[str, str], tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    code, _, _ = run(capsys, "order", f"{files['forward']}@0,2,3", f"{files['backward']}@1",
                     "--trace", str(trace))
    assert code == 1
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert sorted({e["tid"] for e in slices}) == [0, 1, 2, 3]
    assert {(e["tid"], e["name"], e["args"]["blocked"]) for e in slices} >= {
        (0, "a", True), (1, "b", True), (2, "a", True)}
    starts = [e for e in events if e["ph"] == "s"]
    ends = [e for e in events if e["ph"] == "f"]
    assert starts and len(ends) >= len(starts)
    assert {e["id"] for e in ends} == {e["id"] for e in starts}
    instants = [e for e in events if e["ph"] == "i"]
    assert {(e["tid"], e["name"]) for e in instants} == {(0, "deadlock"), (1, "deadlock")}


def test_flight_recorder_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def entry(seq: int, sizes: list[list[int]]) -> dict[str, object]:
        return {"process_group": ("0", "default_pg"), "collective_seq_id": seq,
                "profiling_name": "gloo:all_reduce", "input_sizes": sizes,
                "output_sizes": sizes, "input_dtypes": ["Float"], "is_p2p": False}

    for rank in range(3):
        sizes = [[16]] if rank == 1 else [[8]]
        dump = {"entries": [entry(1, [[8]]), entry(2, sizes)], "pg_config": {}, "version": "2.10"}
        (tmp_path / f"trace_{rank}").write_bytes(pickle.dumps(dump))
    code, out, err = run(capsys, "order", "--flight-recorder", str(tmp_path), "--json")
    answer = json.loads(out)
    assert (code, err, answer["unit"]) == (1, "", "rank")
    assert [(f["type"], f["devices"], f["culprits"]) for f in answer["findings"]] == [
        ("mismatch", [0, 1, 2], [1])]
    assert answer["notes"][0].startswith("pg_config names no members for process groups 0 ")


def test_check_runs_the_order_analysis(capsys: pytest.CaptureFixture[str],
                                       files: dict[str, str]) -> None:
    code, out, _ = run(capsys, "check", files["diverge"])
    assert code == 1
    assert out.splitlines()[0] == (
        f"{files['diverge']}:9: order missing: devices [1, 2, 3] never arrive at ar (line 9, "
        "branch 0 of c) (all-reduce, f32[8]{0}, sum); device 0 waits there forever.")
    code, out, _ = run(capsys, "check", files["diverge"], "--json")
    answer = json.loads(out)
    assert (code, answer["findings"], answer["ok"]) == (1, [], False)
    assert [f["type"] for f in answer["order_findings"]] == ["missing"]
    code, out, _ = run(capsys, "check", files["forward"], "--json")
    assert (code, json.loads(out)["order_findings"]) == (0, [])


@pytest.mark.parametrize(("args", "message"), [
    ((), "meshtopo: error: order needs an HLO FILE (or FILE@DEVICES per program) or "
         "--flight-recorder DIR\n"),
    (("a.hlo@0", "b.hlo"), "meshtopo: error: with several programs each FILE names its "
                           "devices as FILE@0,1,...; got 'b.hlo'\n"),
])
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                               message: str) -> None:
    code, out, err = run(capsys, "order", *args)
    assert (code, out, err) == (2, "", message)


def test_unknown_device_is_one_line(capsys: pytest.CaptureFixture[str],
                                    files: dict[str, str]) -> None:
    code, _, err = run(capsys, "order", files["forward"], "--devices", "9")
    assert code == 2
    assert err == "meshtopo: error: device 9 is not one of the 4 devices analysed\n"


def test_mpmd_devices_outside_the_programs_assignment_are_refused(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "a.hlo"
    path.write_text(_module(all_reduce("a", "{{0,1}}")).replace("num_partitions=4",
                                                                  "num_partitions=2"))
    for devices, outside in (("5,7", "[5, 7]"), ("0,1,2", "[2]")):
        code, out, err = run(capsys, "order", f"{path}@{devices}")
        assert (code, out) == (2, "")
        assert err == (f"meshtopo: error: program 0 (m) lists devices {outside} that are not in "
                       f"its device assignment: it runs on 2 devices (replica_count=1 x "
                       f"num_partitions=2), devices 0..1\n")
    assert run(capsys, "order", f"{path}@0,1")[0] == 0
    assert "replica_count x num_partitions" in " ".join(run(capsys, "order", "--help")[1].split())


def test_every_cycle_of_a_deadlock_is_reported(capsys: pytest.CaptureFixture[str],
                                               files: dict[str, str]) -> None:
    # Devices 0,2 run forward (all 4, then pairs), 1,3 backward: 0<->1 and 2<->3 wait on each
    # other; nobody only waits behind a cycle.
    code, out, err = run(capsys, "order", f"{files['forward']}@0,2", f"{files['backward']}@1,3")
    assert (code, err) == (1, "")
    assert "wait behind" not in out
    heads = [line for line in out.splitlines() if line.startswith("deadlock:")]
    assert heads == ["deadlock: devices [0, 1] at a, b", "deadlock: devices [2, 3] at a, b"]
    assert ("a waits-for cycle across 2 cliques: device 2 waits in a (line 9) on clique "
            "[0,1,2,3] for device 3; device 3 waits in b (line 9) on clique [2,3] for device 2. "
            "None of them can go on: the job hangs.") in out


def test_bad_groups_are_refused_with_their_position(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(_module(all_reduce("a", "{{0,9},{2,3}}")))
    # XLA's verifier runs first, as check runs it, and refuses the module.
    code, out, err = run(capsys, "order", str(path))
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"{path}:9:3: a: Replica 9 is out of range (should be in [0, 4) range) in "
        "instruction's replica-groups: %a = f32[8]{0} all-reduce(%p), channel_id=1, "
        "replica_groups={{0,9},{2,3}}, use_global_device_ids=true, to_apply=%add",
        f"{path}: 1 finding of XLA's verifier; the order analysis runs on a module the "
        "verifier accepts"]
    code, out, _ = run(capsys, "order", str(path), "--json")
    answer = json.loads(out)
    assert (code, answer["ok"], answer["findings"]) == (1, False, [])
    assert [(f["file"], f["instruction"], f["line"], f["column"], f["check"])
            for f in answer["verifier_findings"]] == [(str(path), "a", 9, 3, "replica_groups")]
    inspected = run(capsys, "inspect", str(path))[1]
    assert f"{path}:9:3: a: replica group id 9 is out of range" in inspected


def test_timelines_not_shown_are_named(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    path = tmp_path / "eight.hlo"
    path.write_text(_module(all_reduce("a", "{{0,1,2,3,4,5,6,7}}")).replace(
        "num_partitions=4", "num_partitions=8"))
    code, out, _ = run(capsys, "order", str(path))
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("device ")] == [
        "device 0", "device 1", "device 2", "device 3"]
    assert out.splitlines()[-2] == ("timelines of devices 4..7 not shown (the first 4 are); "
                                    "show them with --devices 4,5,6,7")
    assert "timelines of" not in run(capsys, "order", str(path), "--devices", "5")[1]
    assert "default: the timelines of the first 4" in " ".join(
        run(capsys, "order", "--help")[1].split())

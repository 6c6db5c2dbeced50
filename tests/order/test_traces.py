"""Profiler traces made here by real 3-process gloo jobs (torch 2.13 on CPU, torch.profiler
around the collectives), read by ``from_profiler_traces`` and ``order --traces``."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.cli._main import main

from ._jobs import run_jobs
from ._pure_reader import events_text

HERE = Path(__file__).resolve().parent
SCENARIOS = ("clean", "skip", "groups")
pytestmark = pytest.mark.timeout(300)


def _native_scan() -> object:
    from meshtopo.order import _trace_events

    return _trace_events._scan


def _events(events: object) -> str:
    """``events_text`` of ``TraceEvents`` (what the pure-Python reader answers with)."""
    from meshtopo.order import _trace_events

    assert isinstance(events, _trace_events.TraceEvents)
    return events_text(events)


def _columns(events: object) -> str:
    """Each event's values by key (``repr``), of ``TraceEvents``."""
    from meshtopo.order import _trace_events

    assert isinstance(events, _trace_events.TraceEvents)
    return repr([events.column(key) for key in _trace_events.KEYS])


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("traces")
    paths = {scenario: root / scenario for scenario in SCENARIOS}
    run_jobs(HERE / "_trace_worker.py", 3, paths)
    for path in paths.values():
        assert sorted(p.name for p in path.iterdir()) == [
            "rank0.pt.trace.json", "rank1.pt.trace.json.gz", "rank2.pt.trace.json"]
    return paths


def test_what_torch_writes_for_gloo(traces: dict[str, Path]) -> None:
    """torch 2.13 on CPU writes no record_param_comms for gloo: a gloo:<op> event per
    collective, the rank and the groups in distributedInfo."""
    trace = json.loads((traces["clean"] / "rank0.pt.trace.json").read_text())
    names = [e.get("name") for e in trace["traceEvents"]]
    assert "record_param_comms" not in names
    assert [n for n in names if str(n).startswith("gloo:")].count("gloo:all_reduce") == 3
    assert trace["distributedInfo"]["rank"] == 0
    assert trace["distributedInfo"]["pg_config"][0]["ranks"] == [0, 1, 2]


def test_gloo_trace_of_two_groups_is_refused(traces: dict[str, Path],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A rank in two gloo groups: nothing in its trace says which group ran a collective (the
    gloo events' args name none, the c10d operator leaves the group blank, the worker threads
    are named alike), so the trace is refused, pointing to Flight Recorder dumps."""
    trace = json.loads((traces["groups"] / "rank0.pt.trace.json").read_text())
    assert len(trace["distributedInfo"]["pg_config"]) == 2
    gloo = [e for e in trace["traceEvents"] if str(e.get("name")).startswith("gloo:")]
    assert gloo
    assert {key for e in gloo for key in e["args"]} == {
        "External id", "Record function id", "Concrete Inputs", "Input type", "Input Strides",
        "Input Dims", "Ev Idx"}
    threads: dict[int, set[str]] = {}
    for event in trace["traceEvents"]:
        if event.get("name") == "thread_name" and event.get("ph") == "M":
            threads.setdefault(event["tid"], set()).add(event["args"]["name"].split(" (")[1])
    assert all("pt_gloo_runloop)" in threads[e["tid"]] for e in gloo)
    file = traces["groups"] / "rank0.pt.trace.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["order", "--traces", str(file)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        f"meshtopo: error: {file}: rank 0 is a member of process groups 0, 1 (distributedInfo."
        f"pg_config), and torch's gloo backend records each collective only as a gloo:<op> "
        f"event with its inputs, on a worker thread named for no group: no process group, no "
        f"sequence number (no record_param_comms event, as NCCL writes). Which group ran each "
        f"collective cannot be told: read the job's Flight Recorder dumps instead (order "
        f"--flight-recorder DIR; torch keeps them with TORCH_FR_BUFFER_SIZE set), which name "
        f"both, or profile on NCCL\n")


def test_clean_run(traces: dict[str, Path]) -> None:
    report, ranks = mt.order.from_profiler_traces([traces["clean"]])
    assert report.findings == []
    assert [t.rank for t in ranks] == [0, 1, 2]
    assert [(c.opcode, c.seq) for c in ranks[1].collectives] == [
        ("all_reduce", 1), ("all_reduce", 2), ("broadcast", 3), ("all_gather", 4),
        ("all_reduce", 5)]
    line = mt.order.timeline(ranks)
    assert [t.seq for t in line.timings] == [1, 2, 3, 4, 5]
    late = line.timings[1]
    assert (late.opcode, late.ranks, late.last_rank) == ("all_reduce", (0, 1, 2), 2)
    gather = line.timings[3]
    assert (gather.kind, gather.bytes) == ("all-gather", 3 * 1000 * 4)
    assert all(t.bytes == 4000 for t in line.timings if t.opcode != "all_gather")
    assert line.offsets == {0: 0.0, 1: 0.0, 2: 0.0}


def test_skipped_collective_is_missing(traces: dict[str, Path]) -> None:
    report, ranks = mt.order.from_profiler_traces(
        sorted(traces["skip"].iterdir()))
    assert [(f.type, f.devices, f.instructions, f.waiting) for f in report.findings] == [
        ("missing", (2,), ("all_reduce#5@pg0",), (0, 1))]
    timings = mt.order.timeline(ranks).timings
    assert [t.seq for t in timings] == [1, 2, 3, 4]  # #5: rank 2 never recorded it


def test_cli_traces_json_and_merged_trace(traces: dict[str, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    merged = tmp_path / "merged.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["order", "--traces", str(traces["skip"]), "--json", "--trace", str(merged),
              "--cluster", "h100-8x"])
    assert exit_info.value.code == 1
    answer = json.loads(capsys.readouterr().out)
    assert [f["type"] for f in answer["findings"]] == ["missing"]
    late = answer["timings"][1]
    assert late["last_rank"] == 2 and late["kind"] == "all-reduce"
    assert set(late["predicted_seconds"]) == set(mt.topology.MODELS)
    events = json.loads(merged.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert sorted({e["tid"] for e in slices}) == [0, 1, 2]
    assert len(slices) == 5 + 5 + 4
    flows = [e for e in events if e["ph"] == "s"]
    assert flows[1]["tid"] == 2  # the second collective's last to enter
    assert len(flows) == 4


def test_cli_text(traces: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["order", "--traces", str(traces["clean"])])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "straggler skew" in out and "all_reduce#2@pg0             rank 2 last" in out


def test_garbled_trace_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "rank0.pt.trace.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(SystemExit) as exit_info:
        main(["order", "--traces", str(bad)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"meshtopo: error: {bad}: not a profiler trace (JSON)")
    assert err.count("\n") == 1


def test_triage_joins_traces_and_flight_recorder(traces: dict[str, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """One folder of one job's traces and Flight Recorder dumps: each recognised by content,
    and both blame rank 2."""
    for source in (traces["skip"], traces["skip"].with_name("skip_fr")):
        for file in source.iterdir():
            shutil.copy(file, tmp_path / file.name)
    with pytest.raises(SystemExit) as exit_info:
        main(["triage", str(tmp_path), "--json"])
    assert exit_info.value.code == 1
    answer = json.loads(capsys.readouterr().out)
    kinds = {s["kind"]: s for s in answer["sources"]}
    assert sorted(kinds) == ["flight_recorder", "profiler_trace"]
    assert kinds["flight_recorder"]["suspects"] == kinds["profiler_trace"]["suspects"] == [2]
    assert answer["unread"] == [] and answer["contradictions"] == []
    assert answer["agreements"] == [
        "flight recorder (3 files) and profiler trace (3 files) both blame ranks [2]"]


def test_clocks_of_another_host_are_aligned(traces: dict[str, Path]) -> None:
    """Rank 2's trace moved to another host whose clock runs 5 s ahead: its offset grows by
    exactly 5 s and the timings stay those of one clock."""
    _, ranks = mt.order.from_profiler_traces([traces["clean"]])

    def moved(shift: float) -> list[mt.order.RankTrace]:
        return [dataclasses.replace(t, host="elsewhere", collectives=tuple(
            dataclasses.replace(c, start=c.start + shift, end=c.end + shift)
            for c in t.collectives)) if t.rank == 2 else t for t in ranks]

    here, ahead = mt.order.timeline(moved(0.0)), mt.order.timeline(moved(5e6))
    assert here.offsets[0] == here.offsets[1] == 0.0
    assert ahead.offsets[2] - here.offsets[2] == pytest.approx(5e6, abs=1e-3)
    assert [t.last_rank for t in ahead.timings] == [t.last_rank for t in here.timings]
    assert ahead.timings[1].last_rank == 2


def test_events_cut_from_the_text_are_those_of_the_full_parse(traces: dict[str, Path],
                                                              tmp_path: Path) -> None:
    """Every real trace is read by cutting its collectives' events out of the text, and they
    are exactly the events a full JSON parse finds; a layout the cut does not expect (a brace
    in an argument's text) falls back to the full parse, with the same answer."""
    from meshtopo.order import _trace_events

    def parsed(file: Path) -> list[dict[str, object]]:
        text = _trace_events._text(file)
        events = json.loads(text)["traceEvents"]
        return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and (
            "Collective name" in e.get("args", {}) or str(e.get("name")).startswith("gloo:"))]

    for file in sorted(p for scenario in SCENARIOS for p in traces[scenario].iterdir()):
        assert _trace_events._cut(_trace_events._text(file)) is not None, file
        assert _columns(_trace_events.collective_events(file)) == _columns(
            _trace_events._columns(parsed(file))), file
    original = traces["clean"] / "rank0.pt.trace.json"
    text = original.read_text().replace('"Concrete Inputs": [""]', '"Concrete Inputs": ["}"]', 1)
    odd = tmp_path / "rank0.pt.trace.json"
    odd.write_text(text)
    assert _trace_events._cut(text) is None
    assert [(c.opcode, c.seq) for c in mt.order.from_profiler_traces([odd])[1][0].collectives] \
        == [(c.opcode, c.seq) for c in mt.order.from_profiler_traces([original])[1][0].collectives]
    assert _columns(_trace_events._columns(parsed(odd))) == _columns(
        _trace_events.collective_events(odd))


def test_distributed_info_after_the_events_is_found(traces: dict[str, Path],
                                                    tmp_path: Path) -> None:
    """A writer that puts ``distributedInfo`` after ``traceEvents`` (not torch's order) is read
    alike: the key is looked for before and after the events, never inside them."""
    from meshtopo.order import _trace_events

    original = traces["clean"] / "rank1.pt.trace.json.gz"
    trace = json.loads(_trace_events._text(original))
    info = trace.pop("distributedInfo")
    moved = tmp_path / "rank7.pt.trace.json"
    moved.write_text(json.dumps({**trace, "distributedInfo": info}))
    assert _trace_events._cut(moved.read_text()) is not None
    assert _trace_events.collective_events(moved).info == info
    [read] = mt.order.from_profiler_traces([moved])[1]
    assert read.rank == 1
    assert [(c.opcode, c.seq) for c in read.collectives] == [
        ("all_reduce", 1), ("all_reduce", 2), ("broadcast", 3), ("all_gather", 4),
        ("all_reduce", 5)]


def test_gloo_events_are_kept_only_without_collective_arguments(traces: dict[str, Path],
                                                                tmp_path: Path) -> None:
    """A trace with an event carrying ``Collective name`` is read by those events alone: its
    gloo:<op> events are kept neither by the cut nor by the full parse."""
    from meshtopo.order import _trace_events

    trace = json.loads(_trace_events._text(traces["clean"] / "rank0.pt.trace.json"))
    comms = {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1,
             "ts": 1.0, "dur": 2.0,
             "args": {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 8,
                      "Out msg nelems": 8, "Process Group Name": "0",
                      "Process Group Ranks": "[0, 1, 2]", "Seq": 1}}
    trace["traceEvents"].append(comms)
    text = json.dumps(trace)
    assert _trace_events._cut(text) is not None
    assert _columns(_trace_events._cut(text)) == _columns(_trace_events._columns([comms]))
    comms["args"]["Process Group Description"] = "}"  # the cut cannot take it: a full parse
    braced = tmp_path / "rank0.pt.trace.json"
    braced.write_text(json.dumps(trace))
    assert _trace_events._cut(braced.read_text()) is None
    assert _columns(_trace_events.collective_events(braced)) == _columns(
        _trace_events._columns([comms]))


def test_trace_columns_are_those_of_the_entries_they_stand_for(traces: dict[str, Path]) -> None:
    """A rank's collectives go to the matcher as columns built directly, with the values and
    ids ``_flight_columns.columns`` gives the Flight Recorder entries they stand for."""
    import numpy as np

    from meshtopo.order._flight_columns import columns
    from meshtopo.order._traces import read_rank_trace, trace_columns

    for file in sorted(p for scenario in ("clean", "skip") for p in traces[scenario].iterdir()):
        trace = read_rank_trace(file)
        entries = [{"process_group": [c.group, ""], "pg_id": c.group,
                    "profiling_name": f"{trace.backend}:{c.opcode}",
                    "collective_seq_id": c.seq, "is_p2p": False,
                    "input_sizes": [[c.numel_in]], "output_sizes": [[c.numel_out]],
                    "input_dtypes": [c.dtype], "state": "completed"}
                   for c in trace.collectives]
        config = {g: {"ranks": list(m)} for g, m in trace.groups.items()}
        expected = columns({"entries": entries, "pg_config": config}, file)
        built = trace_columns(trace)
        assert built.values == expected.values, file
        assert list(map(type, built.values)) == list(map(type, expected.values)), file
        assert np.array_equal(built.ids, expected.ids), file
        assert (built.pg_config, built.pg_status) == (config, None), file


class _PureReader:
    """A child process reading traces with the pure-Python stand-ins (``_pure_reader``): one
    process for every comparison, ended and reaped on close."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(HERE.parents[1] / "src"),
               "MESHTOPO_PURE_PYTHON": "1"}
        self.process = subprocess.Popen([sys.executable, str(HERE / "_pure_reader.py")],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)

    def reading(self, file: Path) -> str:
        """The pure-Python reading of ``file`` (its repr, or ``refused: MESSAGE``)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{file}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, "the pure-Python reader ended"
        return str(json.loads(answer))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=30)


def _reading(file: Path) -> str:
    """What ``collective_events`` gives for ``file`` here (the native scanner where it reads):
    its columns, info and host (``repr``: types count), or its refusal."""
    from meshtopo.order import _trace_events

    try:
        return _events(_trace_events.collective_events(file))
    except mt.MeshtopoError as error:
        return f"refused: {error}"


@pytest.mark.skipif(_native_scan() is None, reason="the native trace scanner is not built")
def test_native_scanner_reads_as_python(traces: dict[str, Path], tmp_path: Path) -> None:
    """The native scanner reads every real trace (torch's, and the benchmark's NCCL layout)
    itself, to the columns the Python reading gives; on damaged copies (cut short, a byte
    changed to a brace, quote, backslash, control or non-ASCII character, or a number made
    huge) it gives the Python reading's answer or refusal, declining where it cannot. The
    Python reading is that of a process started with ``MESHTOPO_PURE_PYTHON=1``."""
    from meshtopo.order import _trace_events

    root = HERE.parents[1]
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                    "sys.path.insert(0, sys.argv[1]); "
                    "from benchmarks.bench_traces import write_traces; "
                    "write_traces(Path(sys.argv[2]), 2, 30)", str(root), str(tmp_path)],
                   check=True, timeout=120, env={**os.environ, "PYTHONPATH": str(root / "src")})
    files = [*sorted(p for s in SCENARIOS for p in traces[s].iterdir()),
             tmp_path / "rank0.pt.trace.json", tmp_path / "rank1.pt.trace.json"]
    pure = _PureReader()
    try:
        for file in files:
            assert _trace_events._scanned(_trace_events._bytes(file)) is not None, file
            assert _reading(file) == pure.reading(file), file
        damaged = tmp_path / "damaged" / "rank3.pt.trace.json"
        damaged.parent.mkdir()
        for file in (traces["clean"] / "rank0.pt.trace.json", tmp_path / "rank1.pt.trace.json"):
            data = _trace_events._bytes(file)
            marker = data.find(b'"Collective name"')
            marker = data.find(b'"gloo:') if marker < 0 else marker
            near = [marker + step for step in range(-300, 300, 7)]
            changes = [data[:at] for at in (len(data) // 3, len(data) - 3, marker + 40)]
            changes += [data[:at] + byte + data[at + 1:] for at in near
                        for byte in (b"}", b"{", b'"', b"\\", b"\x07", b"\xc3\xa9", b"9")]
            changes.append(data.replace(b'"Seq": ', b'"Seq": 1234567890123456789012', 1))
            changes.append(data.replace(b'"ts": ', b'"ts": NaN, "t": ', 1))
            for change in changes:
                damaged.write_bytes(change)
                assert _reading(damaged) == pure.reading(damaged)
    finally:
        pure.close()


def test_an_event_without_a_numeric_duration_is_one_line(
        traces: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A collective event (gloo's, as torch writes it) whose ``dur`` is JSON ``null`` is
    refused naming the file."""
    from meshtopo.order import _trace_events

    trace = json.loads(_trace_events._text(traces["clean"] / "rank1.pt.trace.json.gz"))
    event = next(e for e in trace["traceEvents"] if str(e.get("name")).startswith("gloo:"))
    event["dur"] = None
    bad = tmp_path / "rank1.pt.trace.json"
    bad.write_text(json.dumps(trace))
    with pytest.raises(SystemExit) as exit_info:
        main(["order", "--traces", str(bad)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"meshtopo: error: {bad}: a ")
    assert "event has a ts or dur that is not a number (ts " in err
    assert err.endswith(", dur None)\n")
    assert err.count("\n") == 1

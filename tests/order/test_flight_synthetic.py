"""Flight Recorder reading rules on small dumps written here: ranks from file names, the ring
buffer's window, ties, recorded group members, and bad files."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import meshtopo as mt

from ._jobs import torch_analyses


def _entry(seq: int, group: str = "0", sizes: tuple[int, ...] = (8,),
           dtype: str = "Float") -> dict[str, object]:
    return {"process_group": (group, "undefined"), "collective_seq_id": seq,
            "profiling_name": "nccl:all_reduce", "input_sizes": [list(sizes)],
            "output_sizes": [list(sizes)], "input_dtypes": [dtype], "is_p2p": False}


def _write(directory: Path, dumps: dict[int, list[dict[str, object]]],
           config: dict[str, object] | None = None) -> Path:
    directory.mkdir(exist_ok=True)
    for rank, entries in dumps.items():
        dump = {"entries": entries, "pg_config": config or {}, "version": "2.10"}
        (directory / f"host_{rank}").write_bytes(pickle.dumps(dump))
    return directory


def test_ring_buffer_window_aligns_positions(tmp_path: Path) -> None:
    # rank 0 kept only its last two entries; the others still hold all four.
    full = [_entry(seq) for seq in range(1, 5)]
    report = mt.order.from_flight_recorder(_write(tmp_path, {0: full[2:], 1: full, 2: full}))
    assert report.findings == []
    assert [a.position for a in report.schedule(1)] == [0, 1]


def test_a_tie_blames_nobody(tmp_path: Path) -> None:
    dumps = {r: [_entry(1, sizes=(16,) if r >= 2 else (8,))] for r in range(4)}
    finding = mt.order.from_flight_recorder(_write(tmp_path, dumps)).findings[0]
    assert (finding.type, finding.culprits) == ("mismatch", ())
    assert finding.message.endswith("It is a tie: no majority to blame.")


def test_recorded_members_win_over_the_entries(tmp_path: Path) -> None:
    # pg "7" lists ranks 0..2, but rank 2 never recorded an entry on it: it is missing.
    config = {"7": {"name": "7", "desc": "tp", "ranks": "[0, 1, 2]"}}
    dumps = {0: [_entry(1, "7")], 1: [_entry(1, "7")], 2: []}
    report = mt.order.from_flight_recorder(_write(tmp_path, dumps, config))
    assert [(f.type, f.devices) for f in report.findings] == [("missing", (2,))]


def test_json_twin_reads_the_same(tmp_path: Path) -> None:
    dumps = {r: [_entry(1, dtype="Double" if r == 0 else "Float")] for r in range(3)}
    for rank, entries in dumps.items():
        text = json.dumps({"entries": entries, "pg_config": {}, "version": "2.10"})
        (tmp_path / f"rank{rank}.json").write_text(text)
    finding = mt.order.from_flight_recorder(tmp_path).findings[0]
    assert (finding.type, finding.culprits) == ("mismatch", (0,))


def test_bad_directories(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(mt.InvalidArgumentError, match="no Flight Recorder dumps"):
        mt.order.from_flight_recorder(tmp_path / "empty")
    twice = _write(tmp_path / "twice", {0: [_entry(1)]})
    (twice / "copy_0.json").write_text('{"entries": []}')
    with pytest.raises(mt.InvalidArgumentError, match="are both dumps of rank 0"):
        mt.order.from_flight_recorder(twice)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "rank_1").write_bytes(b"not a dump")
    with pytest.raises(mt.InvalidArgumentError, match="not a Flight Recorder dump"):
        mt.order.from_flight_recorder(tmp_path / "junk")


def _pipeline(directory: Path, skip_last_recv_of: int | None = None) -> Path:
    """A 0 -> 1 -> 2 -> 3 pipeline of two micro-batches as NCCL records it: sends and recvs
    named in group ranks, numbered by ``p2p_seq_id`` (``collective_seq_id`` stays 0)."""
    ops: dict[int, list[str]] = {r: [] for r in range(4)}
    for batch in range(2):
        for r in range(4):
            if r > 0 and not (batch == 1 and r == skip_last_recv_of):
                ops[r].append(f"nccl:recv {r}<-{r - 1}")
            if r < 3:
                ops[r].append(f"nccl:send {r}->{r + 1}")
    directory.mkdir()
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}}
    for rank, names in ops.items():
        entries = [{"record_id": i, "pg_id": 0, "process_group": ("0", "default_pg"),
                    "collective_seq_id": 0, "p2p_seq_id": i + 1, "op_id": i + 1,
                    "profiling_name": name, "time_created_ns": i, "duration_ms": None,
                    "input_sizes": [[8]], "input_dtypes": ["Float"], "output_sizes": [[8]],
                    "output_dtypes": ["Float"], "state": "completed",
                    "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
                    "retired": True, "timeout_ms": 600000, "is_p2p": True, "frames": [],
                    "thread_id": "1", "thread_name": "python"} for i, name in enumerate(names)]
        dump = {"entries": entries, "pg_config": config, "pg_status": {}, "version": "2.10"}
        (directory / f"rank_{rank}").write_bytes(pickle.dumps(dump))
    return directory


def test_send_recv_pipeline_is_clean_where_torch_reports_missing_ranks(
        tmp_path: Path, torch_says: dict[str, str]) -> None:
    directory = _pipeline(tmp_path / "pipeline")
    report = mt.order.from_flight_recorder(directory)
    assert report.findings == []
    assert [(a.entry.name, a.clique) for a in report.schedule(1)] == [
        ("recv#1@pg0", (0, 1)), ("send#2@pg0", (1, 2)), ("recv#3@pg0", (0, 1)),
        ("send#4@pg0", (1, 2))]
    assert "missing ranks: {0, 3}" in torch_says["pipeline"]


def test_send_without_its_recv_in_a_trace(tmp_path: Path) -> None:
    report = mt.order.from_flight_recorder(_pipeline(tmp_path / "pipeline", 2))
    assert [(f.type, f.devices, f.instructions, f.waiting) for f in report.findings] == [
        ("missing", (2,), ("send#4@pg0",), (1,))]


def _p2p(name: str, seq: int, record: int) -> dict[str, object]:
    """A point-to-point entry as NCCL records it (``collective_seq_id`` stays 0; the
    ``coalesced`` entry that closes a batch holds no tensors)."""
    tensors = "coalesced" not in name
    return {"record_id": record, "pg_id": 0, "process_group": ("0", "default_pg"),
            "collective_seq_id": 0, "p2p_seq_id": seq, "op_id": record + 1,
            "profiling_name": name, "time_created_ns": record,
            "input_sizes": [[8]] if tensors else [], "output_sizes": [[8]] if tensors else [],
            "input_dtypes": ["Float"] if tensors else [],
            "output_dtypes": ["Float"] if tensors else [], "state": "scheduled",
            "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
            "retired": True, "timeout_ms": 600000, "is_p2p": True, "frames": [],
            "thread_id": "1", "thread_name": "python"}


def _ring_batches(directory: Path, without_recv_of: int | None = None) -> Path:
    """Two ``batch_isend_irecv`` rings over 4 ranks as NCCL records them: each rank's send to
    the next and recv from the previous share one ``p2p_seq_id``, closed by ``coalesced``; a
    world all-reduce between them. ``without_recv_of`` leaves that rank's second recv out."""
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}}
    dumps = {}
    for rank in range(4):
        entries: list[dict[str, object]] = []
        for seq in (1, 2):
            ops = [f"nccl:send {rank}->{(rank + 1) % 4}"]
            if not (seq == 2 and rank == without_recv_of):
                ops.append(f"nccl:recv {rank}<-{(rank - 1) % 4}")
            for name in [*ops, "nccl:coalesced"]:
                entries.append(_p2p(name, seq, len(entries)))
            if seq == 1:
                entries.append({**_p2p("nccl:all_reduce", 1, len(entries)),
                                "collective_seq_id": 1, "is_p2p": False})
        dumps[rank] = entries
    return _write(directory, dumps, config)


def test_batched_send_recv_ring_is_clean(tmp_path: Path, torch_says: dict[str, str]) -> None:
    directory = _ring_batches(tmp_path / "ring")
    report = mt.order.from_flight_recorder(directory)
    assert report.findings == []
    # Each batch's send and recv arrive (rounds 0 and 1) before either is waited for (1, 2).
    assert [(a.entry.name, a.clique, a.step, a.end) for a in report.schedule(1)] == [
        ("send#1@pg0", (1, 2), 0, 1), ("recv#1@pg0", (0, 1), 1, 2),
        ("all_reduce#1@pg0", (0, 1, 2, 3), 3, 3),
        ("send#2@pg0", (1, 2), 4, 5), ("recv#2@pg0", (0, 1), 5, 6)]
    # torch's analyzer looks for a batch end named "..._coalesced" (NCCL writes
    # "nccl:coalesced") and calls the clean batch a mismatch.
    output = torch_says["ring"]
    assert "Rank 1 does not have a coalesced end." in output and "MISMATCH" in output


@pytest.fixture(scope="module")
def torch_says(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What torch's analyzer prints for the clean pipeline and the clean ring of batches, both
    run by one process."""
    root = tmp_path_factory.mktemp("torch")
    runs = [(_pipeline(root / "pipeline"), "rank_", "0,1,2,3"),
            (_ring_batches(root / "ring"), "host_", "0,1,2,3")]
    return dict(zip(("pipeline", "ring"), torch_analyses(runs, root / "out"), strict=True))


def test_batched_send_without_its_recv(tmp_path: Path) -> None:
    report = mt.order.from_flight_recorder(_ring_batches(tmp_path / "ring", without_recv_of=2))
    assert [(f.type, f.devices, f.instructions, f.waiting) for f in report.findings] == [
        ("missing", (2,), ("send#2@pg0",), (1,))]
    assert report.findings[0].message == (
        "rank 2 never arrives at send#2@pg0 (send, Float [[8]]); rank 1 waits there "
        "forever.")


def test_a_rank_that_went_past_a_collective_skipped_it(tmp_path: Path) -> None:
    # Rank 0 waits at a on pg 1 ({0,1}); rank 1 completed c on pg 2 ({1,2}) with rank 2 and
    # waits at b on the world group, which rank 0 has not reached.
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"},
              "1": {"name": "1", "desc": "a", "ranks": "[0, 1]"},
              "2": {"name": "2", "desc": "c", "ranks": "[1, 2]"}}

    def dumps(first: int) -> dict[int, list[dict[str, object]]]:
        return {0: [_entry(s, "0") for s in range(1, first)] + [_entry(1, "1")],
                1: [_entry(s, "0") for s in range(1, first)] + [_entry(1, "2"),
                                                                _entry(first, "0")],
                2: [_entry(s, "0") for s in range(1, first)] + [_entry(1, "2"),
                                                                _entry(first, "0")]}

    # After a world all-reduce all three completed, rank 0 issued one collective (a) and
    # rank 1 completed one (c) without it: it went past a's place, so it skipped a.
    report = mt.order.from_flight_recorder(_write(tmp_path / "warm", dumps(2), config))
    assert [(f.type, f.devices, f.instructions, f.waiting) for f in report.findings] == [
        ("missing", (1,), ("all_reduce#1@pg1",), (0,))]
    assert report.findings[0].message == (
        "rank 1 never arrives at all_reduce#1@pg1 (all_reduce, Float [[8]]); rank 0 waits "
        "there forever. Rank 1 skipped it rather than issuing it later: since "
        "all_reduce#1@pg0, the last collective both completed, rank 0 issued this one, while "
        "rank 1 completed 1 other collective and now waits in all_reduce#2@pg0. 2 more ranks "
        "only wait behind it.")
    # With no rendezvous both completed, nothing shows where a stands in rank 1's order: it
    # may come after b, and the two wait for each other.
    report = mt.order.from_flight_recorder(_write(tmp_path / "cold", dumps(1), config))
    assert [(f.type, f.devices) for f in report.findings] == [("deadlock", (0, 1))]


def test_a_group_blocked_for_a_member_no_dump_shows(tmp_path: Path) -> None:
    # Raw dumps (no pg_config): ranks 0 and 1 wait at world collective 2 for rank 2, which
    # waits at collective 2 of group "5", where it is the only rank recorded, and pg_status
    # says it never completed there: the group has a member no dump shows, rank unknown.
    def tagged(seq: int, group: str, pg_id: int) -> dict[str, object]:
        return {**_entry(seq, group), "pg_id": pg_id}

    dumps = {r: [tagged(1, "0", 0), tagged(2, "0", 0)] for r in (0, 1)}
    dumps[2] = [tagged(1, "5", 1), tagged(1, "0", 0), tagged(2, "5", 1)]
    for rank, entries in dumps.items():
        status = {"0": {"last_enqueued_collective": len(dumps[rank]) if rank < 2 else 1,
                        "last_completed_collective": 1},
                  "1": {"last_enqueued_collective": 2, "last_completed_collective": 1}}
        dump = {"entries": entries, "pg_config": {}, "pg_status": status, "version": "2.10"}
        (tmp_path / f"host_{rank}").write_bytes(pickle.dumps(dump))
    report = mt.order.from_flight_recorder(tmp_path)
    assert [(f.type, f.devices, f.instructions, f.waiting) for f in report.findings] == [
        ("missing", (), ("all_reduce#2@pg5",), (2,))]
    assert "which rank that is the dumps do not say" in report.findings[0].message
    assert report.findings[0].message.endswith("2 more ranks only wait behind it.")
    assert [a.clique for a in report.schedule(2)] == [(2,), (0, 1, 2), (2,)]
    # Had it completed there, rank 2 would be missing at the world collective instead.
    done = pickle.loads((tmp_path / "host_2").read_bytes())
    done["pg_status"]["1"]["last_completed_collective"] = 2
    (tmp_path / "host_2").write_bytes(pickle.dumps(done))
    assert [(f.type, f.devices, f.instructions) for f in mt.order.from_flight_recorder(
        tmp_path).findings] == [("missing", (2,), ("all_reduce#2@pg0",))]

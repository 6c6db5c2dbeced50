"""The Flight Recorder decoder: the compiled walker of pickle opcodes (``_flight_scan``) gives
the columns Python's restricted unpickler and ``columns`` give, or declines; hostile dumps are
refused with one line naming the file, the same with the decoder as without it.

The real torch dumps are checked in ``test_flight_recorder`` (``test_decoders_agree``)."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.order import _flight_columns as fc

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(fc.DECODER != "native", reason="the decoder was not built")]


def native(data: bytes) -> fc.Columns | None:
    """The compiled decoder's columns, or None where it declines."""
    assert fc._scan is not None
    found = fc._scan(data, fc.FIELDS, fc._LIBRARY, fc.MAX_DEPTH)
    if found is None:
        return None
    values, ids, config, status = found
    return fc.Columns(values, np.frombuffer(ids, dtype=np.int32).reshape(-1, fc.WIDTH),
                      config, status)


def fallback(data: bytes, file: Path) -> fc.Columns:
    return fc.columns(fc._unpickle(data, file), file)


def assert_same(ours: fc.Columns, theirs: fc.Columns) -> None:
    assert ours.values == theirs.values
    assert [type(v) for v in ours.values] == [type(v) for v in theirs.values]
    assert ours.ids.tolist() == theirs.ids.tolist()
    assert (ours.pg_config, ours.pg_status) == (theirs.pg_config, theirs.pg_status)


def refusal(path: Path, decoder: Any) -> str:
    """What ``from_flight_recorder`` says of ``path`` with ``decoder`` as the compiled one."""
    saved = fc._scan
    fc._scan = decoder
    try:
        with pytest.raises(mt.InvalidArgumentError) as error:
            mt.order.from_flight_recorder(path)
    finally:
        fc._scan = saved
    return str(error.value)


@pytest.fixture(scope="module")
def bench_dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Dumps as ``bench_order`` writes them (torch's form), 8 ranks x 40 entries."""
    out = tmp_path_factory.mktemp("bench_dumps")
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                    "sys.path.insert(0, sys.argv[1]); "
                    "from benchmarks.bench_order import write_dumps; "
                    "write_dumps(Path(sys.argv[2]), 8, 40)", str(ROOT), str(out)],
                   check=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return out


def test_decoders_agree_on_the_benchmark_dumps(bench_dumps: Path) -> None:
    for file in sorted(bench_dumps.iterdir()):
        data = file.read_bytes()
        ours = native(data)
        assert ours is not None, file
        assert_same(ours, fallback(data, file))
    columns = fallback((bench_dumps / "rank_0").read_bytes(), bench_dumps / "rank_0")
    assert columns.ids.shape == (40, fc.WIDTH)
    first = columns.ids[0]
    assert [columns.values[i] for i in first[[fc.FILENAME, fc.LINE]]] == [
        "model/block_0.py", 10]  # the first frame outside torch/distributed
    assert columns.values[first[fc.FIELDS.index("process_group")]] == ("1", "undefined")


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_protocol_python_writes(tmp_path: Path, protocol: int) -> None:
    frame = {"name": "f", "filename": "a.py", "line": 3}
    entries = [{"process_group": ("0", ""), "profiling_name": "nccl:all_reduce",
                "collective_seq_id": seq, "is_p2p": False, "input_sizes": [[8, 2**40]],
                "input_dtypes": ["Float"], "output_sizes": [[-1]], "state": "completed",
                "duration_ms": 0.5 * seq, "pg_id": 0, "frames": [frame] * 3, "x": {"é": None}}
               for seq in range(300)]
    data = pickle.dumps({"entries": entries, "pg_config": {"0": {"ranks": "[0]"}},
                         "pg_status": {"0": {"last_completed_collective": 299}}},
                        protocol=protocol)
    ours = native(data)
    assert ours is not None
    assert_same(ours, fallback(data, tmp_path / "rank_0"))


def _hostile() -> dict[str, object]:
    """Dumps that are not dumps, each refused by ``columns`` or the unpickler."""
    good = {"process_group": ("0", ""), "profiling_name": "nccl:all_reduce",
            "collective_seq_id": 1, "is_p2p": False, "frames": []}
    return {
        "no_entries": {"version": "2.10"},
        "entries_a_dict": {"entries": {"a": 1}},
        "entry_a_list": {"entries": [[1, 2]]},
        "seq_a_string": {"entries": [{**good, "collective_seq_id": "1"}]},
        "p2p_an_int": {"entries": [{**good, "is_p2p": 1}]},
        "frames_a_string": {"entries": [{**good, "frames": "x.py"}]},
        "frame_a_list": {"entries": [{**good, "frames": [["x.py", 3]]}]},
        "filename_an_int": {"entries": [{**good, "frames": [{"filename": 3, "line": 1}]}]},
        "line_a_dict": {"entries": [{**good, "frames": [{"filename": "a", "line": {}}]}]},
        "sizes_a_dict": {"entries": [{**good, "input_sizes": {"a": 1}}]},
        "sizes_too_deep": {"entries": [{**good, "input_sizes": _nested(40)}]},
        "no_profiling_name": {"entries": [{k: v for k, v in good.items()
                                           if k != "profiling_name"}]},
        "group_a_string": {"entries": [{**good, "process_group": "0"}]},
        "config_a_list": {"entries": [good], "pg_config": [1]},
        "an_object": {"entries": [good], "path": Path("x")},
    }


def _nested(depth: int) -> list[Any]:
    value: list[Any] = [8]
    for _ in range(depth):
        value = [value]
    return value


MESSAGES = {
    "no_entries": "not a Flight Recorder dump (no 'entries')",
    "entries_a_dict": "not a Flight Recorder dump ('entries' is a dict, not a list)",
    "entry_a_list": "entry 0 is a list, not a dict",
    "seq_a_string": "entry 0: collective_seq_id is '1', not an integer of 64 bits",
    "p2p_an_int": "entry 0: is_p2p is 1, not a boolean",
    "frames_a_string": "entry 0: frames is a str, not a list",
    "frame_a_list": "entry 0: frames holds a list, not a dict",
    "filename_an_int": "entry 0: frames holds a filename that is a int, not a string",
    "line_a_dict": "entry 0: frames holds a dict (a field's value is made of strings, "
                   "numbers, booleans, None, lists and tuples)",
    "sizes_a_dict": "entry 0: input_sizes holds a dict (a field's value is made of strings, "
                    "numbers, booleans, None, lists and tuples)",
    "sizes_too_deep": "entry 0: input_sizes nests lists and tuples more than 32 deep",
    "no_profiling_name": "entry 0: profiling_name is absent",
    "group_a_string": "entry 0: process_group is not a list of the group's name and "
                      "description",
    "config_a_list": "pg_config is a list, not a dict",
    "an_object": "not a Flight Recorder dump (pickle or JSON): it names pathlib.PosixPath, "
                 "and a dump holds only dicts, lists, tuples, strings, numbers, booleans and "
                 "None",
}


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_hostile_dumps_are_refused_alike(tmp_path: Path, name: str) -> None:
    path = tmp_path / "rank_0"
    path.write_bytes(pickle.dumps(_hostile()[name], protocol=2))
    with_decoder = refusal(path, fc._scan)
    assert with_decoder == refusal(path, None)
    assert with_decoder == f"{path}: {MESSAGES[name]}"


def test_truncated_dumps_are_refused_alike(bench_dumps: Path, tmp_path: Path) -> None:
    data = (bench_dumps / "rank_3").read_bytes()
    for cut in (1, 2, 3, 50, len(data) // 2, len(data) - 1):
        path = tmp_path / "rank_3"
        path.write_bytes(data[:cut])
        assert native(data[:cut]) is None
        message = refusal(path, fc._scan)
        assert message == refusal(path, None)
        assert message.startswith(f"{path}: not a Flight Recorder dump (pickle or JSON): ")
        assert "\n" not in message


def test_mutated_dumps_decode_alike_or_are_declined(bench_dumps: Path) -> None:
    """Random byte changes: where the compiled decoder reads a dump, the unpickler and
    ``columns`` read it to the same columns."""
    data = (bench_dumps / "rank_5").read_bytes()
    chance = random.Random(7)
    read = 0
    for _ in range(400):
        mutated = bytearray(data)
        for _ in range(chance.randint(1, 3)):
            mutated[chance.randrange(len(data))] = chance.randrange(256)
        ours = native(bytes(mutated))
        if ours is None:
            continue
        read += 1
        assert_same(ours, fallback(bytes(mutated), Path("rank_5")))
    assert read > 50  # most single changes land in values the decoder reads through

"""The Flight Recorder decoder: the compiled walker of pickle opcodes (``_flight_scan``) gives
the columns Python's restricted unpickler and ``columns`` give, or declines; hostile dumps are
refused with one line naming the file, the same with the decoder as without it.

The real torch dumps are checked in ``test_flight_recorder`` (``test_decoders_agree``)."""

from __future__ import annotations

import contextlib
import os
import pickle
import random
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
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


@contextlib.contextmanager
def decoding(pure: bool) -> Iterator[None]:
    """Read with the pure-Python decoder (``pure``) or the compiled one, as
    ``MESHTOPO_PURE_PYTHON`` chooses when a read starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MESHTOPO_PURE_PYTHON", "1" if pure else "0")
        yield


def refusal(path: Path, pure: bool) -> str:
    """What ``from_flight_recorder`` says of ``path`` read by the pure-Python decoder or not."""
    with decoding(pure), pytest.raises(mt.InvalidArgumentError) as error:
        mt.order.from_flight_recorder(path)
    return str(error.value)


def written_dumps(tmp_path_factory: pytest.TempPathFactory, ranks: int, entries: int) -> Path:
    """Dumps as ``bench_order`` writes them (torch's form), ``ranks`` x ``entries``."""
    out = tmp_path_factory.mktemp("bench_dumps")
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                    "sys.path.insert(0, sys.argv[1]); "
                    "from benchmarks.bench_order import write_dumps; "
                    f"write_dumps(Path(sys.argv[2]), {ranks}, {entries})", str(ROOT), str(out)],
                   check=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return out


@pytest.fixture(scope="module")
def bench_dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 ranks x 40 entries."""
    return written_dumps(tmp_path_factory, 8, 40)


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
    with_decoder = refusal(path, False)
    assert with_decoder == refusal(path, True)
    assert with_decoder == f"{path}: {MESSAGES[name]}"


def test_truncated_dumps_are_refused_alike(bench_dumps: Path, tmp_path: Path) -> None:
    data = (bench_dumps / "rank_3").read_bytes()
    for cut in (1, 2, 3, 50, len(data) // 2, len(data) - 1):
        path = tmp_path / "rank_3"
        path.write_bytes(data[:cut])
        assert native(data[:cut]) is None
        message = refusal(path, False)
        assert message == refusal(path, True)
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


class _Writer:
    """A pickle of plain values written with opcodes chosen by ``chance`` among those the
    unpickler reads for each container, as Python's pickler never varies them: a dict by
    SETITEMS, by one SETITEM a key or by DICT; a list by APPENDS, by one APPEND an item or by
    LIST; a tuple by TUPLE1-3 or TUPLE. Every string and container is memoized (BINPUT,
    LONG_BINPUT or MEMOIZE) and fetched again where the same object recurs."""

    def __init__(self, chance: random.Random, protocol: int) -> None:
        self.chance = chance
        self.protocol = protocol
        self.out = bytearray(b"\x80" + bytes([protocol]))
        self.memo: dict[int, int] = {}
        self.kept: list[Any] = []  # the objects memoized stay alive: their ids stay theirs

    def dump(self, value: Any) -> bytes:
        self.value(value)
        return bytes(self.out + b".")

    def put(self, value: Any) -> None:
        index = self.memo[id(value)] = len(self.memo)
        self.kept.append(value)
        if self.protocol >= 4 and self.chance.random() < 0.5:
            self.out += b"\x94"
        elif index < 256 and self.chance.random() < 0.8:
            self.out += b"q" + bytes([index])
        else:
            self.out += b"r" + index.to_bytes(4, "little")

    def value(self, value: Any) -> None:
        out, style = self.out, self.chance.randrange(3)
        if id(value) in self.memo:
            index = self.memo[id(value)]
            out += (b"h" + bytes([index]) if index < 256 else
                    b"j" + index.to_bytes(4, "little"))
        elif value is None or type(value) is bool:
            out += {None: b"N", True: b"\x88", False: b"\x89"}[value]
        elif type(value) is int:
            if 0 <= value < 256:
                out += b"K" + bytes([value])
            elif -2**31 <= value < 2**31:
                out += b"J" + value.to_bytes(4, "little", signed=True)
            else:
                raw = value.to_bytes(9, "little", signed=True).rstrip(
                    b"\xff" if value < 0 else b"\x00")
                raw += b"" if (raw[-1] >= 0x80) == (value < 0) else (
                    b"\xff" if value < 0 else b"\x00")
                out += b"\x8a" + bytes([len(raw)]) + raw
        elif type(value) is float:
            out += b"G" + struct.pack(">d", value)
        elif type(value) is str:
            raw = value.encode("utf-8", "surrogatepass")
            out += (b"\x8c" + bytes([len(raw)]) if self.protocol >= 4 and len(raw) < 256
                    else b"X" + len(raw).to_bytes(4, "little")) + raw
            self.put(value)
        elif type(value) is dict:
            self.container(value, b"}", b"(", b"u", b"s", b"d", style,
                           [x for pair in value.items() for x in pair], 2)
        elif type(value) is list:
            self.container(value, b"]", b"(", b"e", b"a", b"l", style, value, 1)
        elif len(value) <= 3 and style:
            for item in value:
                self.value(item)
            out += b")" if not value else bytes([0x84 + len(value)])
            self.put(value)
        else:
            out += b"("
            for item in value:
                self.value(item)
            out += b"t"
            self.put(value)

    def container(self, value: Any, empty: bytes, mark: bytes, batch: bytes, one: bytes,
                  whole: bytes, style: int, items: list[Any], step: int) -> None:
        if style == 2:  # DICT or LIST over a mark
            self.out += mark
            for item in items:
                self.value(item)
            self.out += whole
            self.put(value)
            return
        self.out += empty
        self.put(value)
        for start in range(0, len(items), step * 3 if style == 0 else step):
            if style == 0:
                self.out += mark
            for item in items[start:start + (step * 3 if style == 0 else step)]:
                self.value(item)
            self.out += batch if style == 0 else one


def test_every_way_the_unpickler_reads_containers(tmp_path: Path) -> None:
    """Dumps written with the opcodes Python's pickler never varies (``_Writer``), the top
    dict's keys in any order: the compiled decoder reads each to the columns the unpickler and
    ``columns`` give."""
    chance = random.Random(11)
    frames = [{"name": f"f{i}", "filename": name, "line": i}
              for i, name in enumerate(["torch/distributed/c10d.py", "model.py", "train.py"])]
    for case in range(120):
        entries = [{"process_group": ("0", "default_pg"), "profiling_name": "nccl:all_reduce",
                    "collective_seq_id": seq, "is_p2p": False, "p2p_seq_id": -1,
                    "input_sizes": [[8, 2**40 + seq]], "input_dtypes": ["Float"],
                    "output_sizes": [[8, -2**35]], "state": chance.choice(["completed", "x"]),
                    "duration_ms": 0.25 * seq, "pg_id": seq % 2,
                    "frames": chance.sample(frames, chance.randint(0, 3)), "x": {"é": None}}
                   for seq in range(chance.randint(0, 12))]
        parts = [("version", "2.10"), ("entries", entries),
                 ("pg_config", {"0": {"name": "0", "ranks": "[0, 1]", "x": [1, (2.5, "0")]}}),
                 ("pg_status", {"0": {"last_completed_collective": 3}, "1": {}})]
        chance.shuffle(parts)
        data = _Writer(chance, chance.choice([2, 3, 4, 5])).dump(dict(parts))
        ours = native(data)
        assert ours is not None, case
        assert_same(ours, fallback(data, tmp_path / "rank_0"))


def test_frames_are_read_as_the_unpickler_reads_a_file(tmp_path: Path) -> None:
    """A FRAME buffers its bytes; a read that starts inside them and ends past them makes the
    unpickler drop the rest and read on after them. Every shorter FRAME length: the compiled
    decoder gives the unpickler's columns or declines (where a read would straddle the frame's
    end), and ``from_flight_recorder`` says the same either way."""
    entries = [{"process_group": ("0", ""), "profiling_name": "nccl:all_reduce",
                "collective_seq_id": seq, "frames": []} for seq in range(4)]
    data = pickle.dumps({"entries": entries, "pg_status": {"0": {"a": 1}}}, protocol=4)
    assert data[2] == 0x95  # the first FRAME's length at 3:11
    length = int.from_bytes(data[3:11], "little")
    declined = 0
    for cut in range(1, length):
        mutated = data[:3] + (length - cut).to_bytes(8, "little") + data[11:]
        ours = native(mutated)
        declined += ours is None
        if ours is not None:
            assert_same(ours, fallback(mutated, tmp_path / "rank_0"))
        path = tmp_path / "rank_0"
        path.write_bytes(mutated)
        assert refusal_or_report(path, False) == refusal_or_report(path, True)
    assert 0 < declined < length - 1  # frames that end between two opcodes read on alike


def refusal_or_report(path: Path, pure: bool) -> str:
    """What ``from_flight_recorder`` says of ``path`` read by the pure-Python decoder or not:
    its refusal, or its report's findings."""
    with decoding(pure):
        try:
            return repr(mt.order.from_flight_recorder(path).findings)
        except mt.InvalidArgumentError as error:
            return str(error)


@pytest.fixture(scope="module")
def long_dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 ranks x 1,000 entries (about 0.3 MB each)."""
    return written_dumps(tmp_path_factory, 8, 1000)


def test_one_dump_decodes_within_twice_its_size(long_dumps: Path) -> None:
    """The compiled decoder streams: what decoding allocates at its peak, the dump's bytes
    included, less the columns it leaves, stays within twice the dump's size (a torch dump
    with realistic stacks; ``benchmarks._fr_memory`` measures the same)."""
    file = long_dumps / "rank_2"
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        columns = fc.read_dump(file)
        left, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert columns.ids.shape[0] == 1000
    assert peak - left <= 2 * file.stat().st_size

"""Model hooks: a module placed on a device assignment, the stream's header counts, each
collective's text as written and a -done's own channel id."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest

import meshtopo as mt
from meshtopo import hlo

from ._text import entry_head

TEXT = entry_head("HloModule m, replica_count=2, num_partitions=2") + """  %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %cp = f32[8]{0} collective-permute(%ar), source_target_pairs={{0,1}}
  %start = f32[8]{0} all-reduce-start(%cp), channel_id=7,
      replica_groups={{0,1}}, to_apply=%add
  ROOT   %done = f32[8]{0} all-reduce-done(%start)
}
"""
TABLE = [[3, 1], [0, 2]]


@pytest.mark.parametrize("given", [mt.DeviceAssignment(TABLE), TABLE, np.array(TABLE)],
                         ids=["DeviceAssignment", "list", "array"])
def test_device_assignment_is_the_default_placement(given: object) -> None:
    module = hlo.parse_module(TEXT, device_assignment=given)
    assert module.device_assignment == mt.DeviceAssignment(TABLE)
    ar, cp = module.collectives[:2]
    # Flattened ids 0..3 are cells (0,0), (0,1), (1,0), (1,1): devices 3, 1, 0, 2.
    assert ar.device_groups() == [[3, 1], [0, 2]]
    # A permute without channel runs in every partition: pair (replica 0 -> 1) per column.
    assert sorted(cp.device_pairs()) == [(1, 2), (3, 0)]
    default = mt.DeviceAssignment.default(2, 2)
    assert ar.device_groups(default) == [[0, 2], [1, 3]]


def test_without_a_table_the_placement_is_xla_default() -> None:
    module = hlo.parse_module(TEXT)
    assert module.device_assignment == mt.DeviceAssignment.default(2, 2)
    assert module.collectives[0].device_groups() == [[0, 2], [1, 3]]


def test_load_takes_a_device_assignment(tmp_path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(TEXT)
    module = hlo.load(path, device_assignment=TABLE)
    assert module.collectives[0].device_groups() == [[3, 1], [0, 2]]


@pytest.mark.parametrize(
    ("table", "kwargs", "message"),
    [
        ([[0, 1, 2, 3]], {}, "device_assignment is 1 x 4 (replicas x partitions) but module m "
                             "has replica_count=2, num_partitions=2"),
        ([[0, 1], [2, 3]], {"num_partitions": 1}, "device_assignment is 2 x 2 (replicas x "
                                                  "partitions) but module m has replica_count=2, "
                                                  "num_partitions=1"),
        ([0, 1, 2, 3], {}, "device_assignment: a device assignment must be a 2-D int table"),
        ([[0, 1], [1, 2]], {}, "device_assignment: device 1 appears more than once"),
    ],
    ids=["shape", "shape-after-override", "not-2d", "repeated"],
)
def test_bad_device_assignment(table: object, kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(mt.InvalidArgumentError) as error:
        hlo.parse_module(TEXT, device_assignment=table, **kwargs)
    assert str(error.value).startswith(message)


def test_stream_tells_the_header_counts() -> None:
    stream = hlo.iter_collectives(io.StringIO(TEXT), num_partitions=4, progress=False)
    assert (stream.header, stream.replica_count, stream.num_partitions) == (None, None, None)
    first = next(stream)
    assert stream.header is not None and stream.header.name == "m"
    assert (stream.replica_count, stream.num_partitions) == (2, 4)
    assert (first.replica_count, first.num_partitions) == (2, 4)
    assert [c.name for c in stream] == ["cp", "start", "done"]


NO_COLLECTIVES = "HloModule e, replica_count=3\nENTRY main {\n  ROOT p = f32[] parameter(0)\n}\n"


def test_stream_without_collectives_still_reads_the_header() -> None:
    stream = hlo.iter_collectives(io.StringIO(NO_COLLECTIVES), progress=False)
    assert list(stream) == []
    assert (stream.replica_count, stream.num_partitions) == (3, 1)


def test_a_header_without_computations_is_refused_as_xla_refuses_it() -> None:
    with pytest.raises(mt.HloParseError, match="2:1: expects a computation"):
        list(hlo.iter_collectives(io.StringIO("HloModule e, replica_count=3\n"), progress=False))


def test_inspect_from_stdin_without_collectives_reports_the_header_grid() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "meshtopo", "inspect", "-"],
        input=NO_COLLECTIVES.replace("replica_count=3", "replica_count=2, num_partitions=4"),
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("<stdin>: 0 collectives on 2 replicas x 4 partitions")


EXPECTED_TEXT = {
    "ar": "%ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1},{2,3}}, "
          "use_global_device_ids=true, to_apply=%add",
    "cp": "%cp = f32[8]{0} collective-permute(%ar), source_target_pairs={{0,1}}",
    "start": "%start = f32[8]{0} all-reduce-start(%cp), channel_id=7, "
             "replica_groups={{0,1}}, to_apply=%add",
    "done": "%done = f32[8]{0} all-reduce-done(%start)",
}


def test_text_is_the_instruction_as_written() -> None:
    parsed = {c.name: c.text for c in hlo.parse_module(TEXT).collectives}
    streamed = {c.name: c.text for c in hlo.iter_collectives(io.StringIO(TEXT), progress=False)}
    assert parsed == streamed == EXPECTED_TEXT


def test_done_takes_its_start_s_channel_id_and_writes_none() -> None:
    module = hlo.parse_module(TEXT)
    start, done = module.collectives[2:]
    assert (start.channel_id, start.written_channel_id) == (7, 7)
    assert (done.channel_id, done.written_channel_id, done.start) == (7, None, "start")
    assert done.attributes == {}
    assert module.collectives[1].written_channel_id is None
    # XLA's parser refuses a channel_id written on the -done itself.
    with pytest.raises(mt.HloParseError, match=r'unexpected attribute "channel_id"\. Allowed'):
        hlo.parse_module(TEXT.replace("all-reduce-done(%start)",
                                      "all-reduce-done(%start), channel_id=9"))

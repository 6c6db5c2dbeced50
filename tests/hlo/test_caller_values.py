"""Caller-given counts and placements, and digits: every HLO entry point accepts and refuses
the same things (integral counts of any int type, tables as arrays or lists of rows checked
against the module's grid; ASCII digits only, as XLA's lexer)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo._explicit import explicit_list

from ._text import entry_head

TEXT = entry_head("HloModule m, replica_count=2, num_partitions=2") + """  %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
  ROOT %cp = f32[8]{0} collective-permute(%ar), channel_id=2, source_target_pairs={{0,1}}
}
"""


@pytest.mark.parametrize("count", [np.int64(2), np.int32(2), np.uint8(2), 2])
def test_counts_take_any_integral_type(count: object) -> None:
    module = hlo.parse_module(TEXT, replica_count=count, num_partitions=count)
    assert (module.replica_count, module.num_partitions) == (2, 2)
    assert type(module.replica_count) is int
    assert module.collectives[0].device_groups() == [[0, 2]]


@pytest.mark.parametrize("count", [True, np.bool_(True), 2.0, "2", np.int64(0), -1])
def test_counts_refuse_bools_non_integers_and_non_positive(count: object) -> None:
    with pytest.raises(mt.InvalidArgumentError,
                       match=re.escape(f"replica_count must be a positive int, got {count!r}")):
        hlo.parse_module(TEXT, replica_count=count)


def test_iter_collectives_takes_numpy_counts(tmp_path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(TEXT)
    stream = hlo.iter_collectives(path, replica_count=np.int64(1), num_partitions=np.int64(4),
                                  progress=False)
    first = next(stream)
    assert (first.replica_count, first.num_partitions) == (1, 4)
    stream.close()


@pytest.mark.parametrize("table", [[[0, 2], [1, 3]], np.array([[0, 2], [1, 3]]),
                                   mt.DeviceAssignment([[0, 2], [1, 3]])])
def test_device_groups_take_a_list_of_rows_like_parse_module(table: object) -> None:
    given = hlo.parse_module(TEXT).collectives
    placed = hlo.parse_module(TEXT, device_assignment=table).collectives
    assert given[0].device_groups(table) == placed[0].device_groups() == [[0, 2]]
    assert given[1].device_pairs(table) == placed[1].device_pairs() == [(0, 2), (1, 3)]


@pytest.mark.parametrize("method", ["device_groups", "device_pairs"])
@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([[0, 1, 2, 3]], "device_assignment is 1 x 4 (replicas x partitions) but the module of "
         "{op} (line {line}) has replica_count=2, num_partitions=2; give a table with one row "
         "per replica and one column per partition"),
        (mt.DeviceAssignment.default(4, 1), "device_assignment is 4 x 1 (replicas x partitions)"),
        ([0, 1, 2, 3], "device_assignment: a device assignment must be a 2-D int table"),
        ([[0, 1], [1, 2]], "device_assignment: device 1 appears more than once"),
    ],
)
def test_collective_placement_is_checked_against_the_module(
    method: str, table: object, message: str
) -> None:
    module = hlo.parse_module(TEXT)
    collective = module.collectives[0 if method == "device_groups" else 1]
    op = f"{collective.opcode} {collective.name}"
    with pytest.raises(mt.InvalidArgumentError) as info:
        getattr(collective, method)(table)
    assert str(info.value).startswith(message.format(op=op, line=collective.line))


def _module(attributes: str) -> str:
    return TEXT.replace("channel_id=1, replica_groups={{0,1}}", attributes)


def test_non_ascii_digits_are_not_a_channel_id() -> None:
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(_module("channel_id=\u0661, replica_groups={{0,1}}"))
    assert (info.value.message, info.value.line, info.value.column) == (
        "expects integer", 9, 46)  # XLA's words


def test_non_ascii_digits_are_not_read_together_with_numpy() -> None:
    arabic = "{{" + ",".join(["\u0661"] * 200) + "}}"
    mixed = "{" + ",".join(["{0,\u0661}"] * 100) + "}"
    superscript = "{{" + ",".join(["1"] * 199 + ["\u00b2"]) + "}}"
    assert [explicit_list(t) for t in (arabic, mixed, superscript)] == [None, None, None]


def test_non_ascii_digits_are_not_a_packed_element_size() -> None:
    from meshtopo.hlo import parse_shape

    assert parse_shape("s4[8]{0:E(4)}", 1, 1).byte_size == 4
    with pytest.raises(mt.HloParseError) as info:  # XLA: 'expects integer' at the digit
        parse_shape("s4[8]{0:E(\u0664)}", 1, 1)
    assert (info.value.message, info.value.column) == ("expects integer", 11)


@pytest.mark.parametrize(
    ("groups", "offset"),
    [
        ("{{\u0660,\u0661}}", 2),
        ("{{0,\u0661}}", 4),
        ("{{" + ",".join(["\u0661"] * 200) + "}}", 2),
        ("{" + ",".join(["{0,\u0661}"] * 100) + "}", 4),
        ("[\u0662]<=[\u0662]", 1),
        ("{{1,\u00b2}}", 4),
    ],
)
def test_non_ascii_digits_are_not_replica_group_ids(groups: str, offset: int) -> None:
    # The fast scanner, the batch reader and the exact reader all refuse them, as XLA does,
    # in its words.
    text = TEXT.replace("replica_groups={{0,1}}", f"replica_groups={groups}")
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    column = text.split("\n")[8].index("replica_groups=") + len("replica_groups=") + 1
    assert (info.value.message, info.value.line, info.value.column) == (
        "expects integer", 9, column + offset)

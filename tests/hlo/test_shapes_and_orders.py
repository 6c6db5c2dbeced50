"""Shapes as XLA prints them, and collectives whose text the fast path does not read."""

from __future__ import annotations

import io

import pytest

import meshtopo as mt
from meshtopo import hlo

from .test_parse import ADD


@pytest.mark.parametrize(
    ("text", "leaves", "size"),
    [
        ("f32[8,128]{1,0}", [("f32", (8, 128))], 4096),
        ("f32[8,128]{1,0:T(8,128)}", [("f32", (8, 128))], 4096),
        ("bf16[<=8,4]", [("bf16", (8, 4))], 64),
        ("token[]", [("token", ())], 0),
        ("(f32[2], s32[])", [("f32", (2,)), ("s32", ())], 12),
        ("((f32[2]{0}), (pred[3], (u8[4])))", [("f32", (2,)), ("pred", (3,)), ("u8", (4,))], 15),
        ("s4[16]{0:E(4)}", [("s4", (16,))], 8),
        ("()", [], 0),
    ],
)
def test_shapes(text: str, leaves: list[tuple[str, tuple[int, ...]]], size: int) -> None:
    shape = hlo.parse_shape(text)
    assert [(leaf.element_type, leaf.dimensions) for leaf in shape.leaves()] == leaves
    assert shape.byte_size == size


@pytest.mark.parametrize("text", ["f33[8]", "f32[8", "f32[a]", "(f32[8]", "f32[99999999999999999999]"])
def test_bad_shapes(text: str) -> None:
    with pytest.raises(mt.HloParseError):
        hlo.parse_shape(text)


def test_dynamic_unbounded_size_is_unknown() -> None:
    assert hlo.parse_shape("f32[?,4]").byte_size is None


BODY = """ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
{}
}}
"""


@pytest.mark.parametrize(
    ("line", "groups"),
    [
        # attributes out of XLA's order, metadata first, mesh groups with device ids
        ("  ROOT %ar = f32[8]{0} all-reduce(%p), metadata={op_name=\"x, y={{0}}\"}, to_apply=%add, "
        "replica_groups=mesh['a'=2,'b'=2], device_ids=([2,2]T(1,0)) {'a'}, channel_id=4, "
        "use_global_device_ids=true", [[0, 1], [2, 3]]),
        # spaces inside the lists, a sharding with nested braces, frontend attributes
        ("  ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=4, replica_groups={ {0, 2}, {1, 3} }, "
        "use_global_device_ids=true, to_apply=%add, sharding={{replicated}, {maximal device=0}}, "
        "frontend_attributes={_scheduling_group_id=\"1\"}", [[0, 2], [1, 3]]),
    ],
    ids=["reordered", "spaced"],
)
def test_general_reader_agrees(line: str, groups: list[list[int]]) -> None:
    text = "HloModule m, num_partitions=4\n" + ADD + BODY.format(line)
    (c,) = hlo.parse_module(text).collectives
    assert (c.channel_id, c.use_global_device_ids, c.to_apply) == (4, True, "add")
    assert c.replica_groups is not None and c.replica_groups.replica_groups == groups
    assert c.device_groups() == groups and (c.line, c.column) == (14, 8)
    (s,) = hlo.iter_collectives(io.StringIO(text), progress=False)
    assert s.groups_text == c.groups_text and s.line == c.line


def test_streaming_links_async_wrappers_across_blocks() -> None:
    wrapped = "\n".join(
        f"%w{i} (a: f32[8]) -> f32[8] {{\n  %a = f32[8]{{0}} parameter(0)\n"
        f"  ROOT %x{i} = f32[8]{{0}} all-to-all(%a), replica_groups={{{{0,1}}}}, dimensions={{0}}\n}}"
        for i in range(20))
    calls = "\n".join(
        f"  %st{i} = ((f32[8]{{0}}), f32[8]{{0}}) async-start(%p), calls=%w{i}\n"
        f"  %d{i} = f32[8]{{0}} async-done(%st{i}), calls=%w{i}" for i in range(20))
    text = ("HloModule m, replica_count=2\n" + wrapped + "\nENTRY %main (p: f32[8]) -> f32[8] {\n"
            "  %p = f32[8]{0} parameter(0)\n" + calls + "\n  ROOT %r = f32[8]{0} copy(%p)\n}\n")
    loaded = [(c.name, c.opcode, c.wrapped_opcode, c.start, c.line) for c in hlo.parse_module(text).collectives]
    streamed = [(c.name, c.opcode, c.wrapped_opcode, c.start, c.line)
                for c in hlo.iter_collectives(io.StringIO(text), progress=False, block_size=200)]
    assert streamed == loaded and len(loaded) == 60
    assert loaded[20][1:] == ("async-start", "all-to-all", None, 84)


def test_lines_the_fast_regex_cannot_place_are_still_read() -> None:
    deep = "(((((f32[8]{0}), s32[]), u32[]), token[]), pred[])"
    text = ("HloModule m\n" + ADD + "ENTRY %main (p: f32[8]) -> f32[8] {\n"
            "  %p = f32[8]{0} parameter(0), metadata={op_name=\"an all-reduce(x) in a name\"}\n"
            f"  %t = {deep} all-to-all(%p), replica_groups={{{{0}}}}\n"
            "  ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply=%add\n}\n")
    module = hlo.parse_module(text)
    assert [(c.name, c.line, c.shape_text) for c in module.collectives] == [
        ("t", 14, deep), ("ar", 15, "f32[8]{0}")]
    streamed = list(hlo.iter_collectives(io.StringIO(text), progress=False))
    assert [(c.name, c.line) for c in streamed] == [("t", 14), ("ar", 15)]


def test_buffer_shape() -> None:
    """``b(f32[8])`` is a buffer of an array: its size is the array's; it prints as written."""
    shape = hlo.parse_shape("b( f32[8]{0} )")
    assert (shape.is_buffer, shape.element_type, shape.dimensions, shape.byte_size) == (
        True, "f32", (8,), 32)
    assert str(shape) == "b(f32[8]{0})" and shape.human_string == "b(f32[8])"
    assert not shape.compatible(hlo.parse_shape("f32[8]"))
    pair = hlo.parse_shape("(b(f32[8]), s32[])")
    assert pair.tuple_shapes is not None and pair.tuple_shapes[0].compatible(shape)
    with pytest.raises(mt.HloParseError):
        hlo.parse_shape("b((f32[8]))")


@pytest.mark.parametrize("element", [
    "f32[8]{0}", "f32[8,128]{1,0:T(8,128)(2,1)}", "bf16[<=4,2]{0,1}", "pred[]", "u8[3,3]",
    "s4[8]{0:E(4)}", "f32[8]{0:S(1)}", "f32[2,2]{0,1:T(2)L(4)E(4)S(1)SC(0:1)M(8)}",
])
def test_a_tuple_s_printed_elements_read_as_each_alone(element: str) -> None:
    """A tuple's elements written as XLA prints them are read by the printed pattern; each
    is the shape the reader makes of it alone (followed by white space, which the pattern
    leaves to the token-by-token reader)."""
    from meshtopo.hlo import parse_shape

    tuple_shape = parse_shape(f"({element}, ({element}))")
    alone = parse_shape(f"{element} ")
    assert tuple_shape.tuple_shapes == (alone, parse_shape(f"({element} )"))
    assert tuple_shape.tuple_shapes[1].tuple_shapes == (alone,)

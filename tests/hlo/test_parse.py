"""Hand-written modules: every collective field, start/done and async pairing, call graph."""

from __future__ import annotations

import gzip
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo import hlo

ADD = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
%and (a: pred[], b: pred[]) -> pred[] {
  %a = pred[] parameter(0)
  %b = pred[] parameter(1)
  ROOT %r = pred[] and(%a, %b)
}
"""


def module(body: str, header: str = "HloModule m", params: str = "p: f32[8]") -> hlo.Module:
    text = f"{header}\n{ADD}ENTRY %main ({params}) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n{body}\n}}\n"
    return hlo.parse_module(text)


def only(body: str, **kwargs: str) -> hlo.Collective:
    (c,) = module(body, **kwargs).collectives
    return c


# Spec 6.4 round-trip examples: the groups each text means.
@pytest.mark.parametrize(
    ("groups", "replicas", "expected"),
    [
        ("{}", 1, []),
        ("{{0,1},{2,3}}", 4, [[0, 1], [2, 3]]),
        ("{{1,2},{3,0}}", 4, [[1, 2], [3, 0]]),
        ("[2,10]<=[20]", 20, [list(range(10)), list(range(10, 20))]),
        ("[3,10]<=[6,5]T(1,0)", 30, [[0, 5, 10, 15, 20, 25, 1, 6, 11, 16],
                                     [21, 26, 2, 7, 12, 17, 22, 27, 3, 8],
                                     [13, 18, 23, 28, 4, 9, 14, 19, 24, 29]]),
        ("[2,4]<=[4,2]T(1,0)", 8, [[0, 2, 4, 6], [1, 3, 5, 7]]),
        ("mesh['x'=2,'y'=4] {'y'}", 8, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("mesh['a'=2,'b'=4], device_ids=([2,2,2]T(1,0,2)) {'b':(2)2}", 8,
         [[0, 1], [4, 5], [2, 3], [6, 7]]),
    ],
    ids=["empty", "explicit", "order-kept", "iota", "iota-T", "iota-2x4", "mesh", "mesh-subaxis"],
)
def test_spec_examples(groups: str, replicas: int, expected: list[list[int]]) -> None:
    c = only(f"  ROOT %ar = f32[8]{{0}} all-reduce(%p), replica_groups={groups}, to_apply=%add",
             header=f"HloModule m, replica_count={replicas}")
    assert c.groups_text == groups
    assert c.replica_groups == mt.CollectiveDeviceList.parse(groups)
    assert c.replica_groups.replica_groups == expected
    assert c.mode is mt.CollectiveOpGroupMode.CROSS_REPLICA
    assert (c.line, c.column) == (14, 8)


def test_fields_of_an_all_reduce() -> None:
    c = only("  %ar.1 = f32[8]{0} all-reduce(f32[8]{0} %p), channel_id=3, "
             "replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add, "
             'metadata={op_name="a, b" source_file="x.py"}, backend_config={"k":1}',
             header="HloModule m, replica_count=2, num_partitions=2")
    assert (c.name, c.opcode, c.channel_id, c.use_global_device_ids) == ("ar.1", "all-reduce", 3, True)
    assert c.mode is mt.CollectiveOpGroupMode.FLATTENED_ID
    assert c.reduction == "sum" and c.bytes == 32 and c.computation == "main"
    assert str(c.shape) == "f32[8]{0}" and [str(s) for s in c.operand_shapes] == ["f32[8]{0}"]
    assert c.metadata == {"op_name": "a, b", "source_file": "x.py"}
    assert c.attributes["backend_config"] == '{"k":1}'
    assert list(c.attributes)[:3] == ["channel_id", "replica_groups", "use_global_device_ids"]
    # Flattened ids 0..3 on R=2, P=2 land on devices [[0,2],[1,3]] by default placement.
    assert c.device_groups() == [[0, 2], [1, 3]]
    da = mt.DeviceAssignment([[0, 1], [2, 3]])
    assert c.device_groups(da) == [[0, 1], [2, 3]]


def test_modes_per_opcode_rule() -> None:
    m = module(
        "  %a = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={}, to_apply=%add\n"
        "  %b = f32[8]{0} all-to-all(%p), channel_id=2, replica_groups={{0,1}}, dimensions={0}\n"
        "  %c = f32[16]{0} all-gather(%p), replica_groups={}, dimensions={0}\n"
        "  %d = f32[8]{0} collective-broadcast(%p), replica_groups={{0,1}}\n"
        "  %e = pred[8]{0} all-reduce(%p), replica_groups={}, to_apply=%and\n"
        "  %f = f32[4]{0} reduce-scatter(%p), channel_id=5, replica_groups={{0,1}}, "
        "use_global_device_ids=false, dimensions={0}, to_apply=%add\n"
        "  ROOT %r = f32[8]{0} copy(%p)",
        header="HloModule m, replica_count=2, num_partitions=2")
    modes = {c.name: str(c.mode) for c in m.collectives}
    assert modes == {"a": "kCrossReplicaAndPartition", "b": "kCrossPartition",
                     "c": "kCrossReplica", "d": "kCrossReplica", "e": "kCrossReplica",
                     "f": "kCrossReplicaAndPartition"}
    by = m.collectives_by_name
    assert by["e"].reduction == "min" and by["f"].bytes == 32 and by["c"].bytes == 64
    assert by["b"].dimensions == (0,) and by["f"].use_global_device_ids is False
    assert by["a"].use_global_device_ids is None


def test_permute_pairs_and_in_place() -> None:
    m = module(
        "  %cp = f32[8]{0} collective-permute(%p), channel_id=1, "
        "source_target_pairs={{0,1},{1,0}}\n"
        "  %c0 = s32[] constant(0)\n"
        "  ROOT %ip = f32[8]{0} collective-permute(%p, %p, %c0, %c0), "
        "source_target_pairs={{0,1},{1,0}}, slice_sizes={{4},{4}}",
        header="HloModule m, replica_count=2, num_partitions=2")
    cp, ip = m.collectives
    assert cp.source_target_pairs == [(0, 1), (1, 0)] and cp.replica_groups is None
    assert str(cp.mode) == "kCrossPartition"
    assert cp.device_pairs() == [(0, 2), (2, 0), (1, 3), (3, 1)]
    assert ip.slice_sizes == [(4,), (4,)] and str(ip.mode) == "kCrossReplica"
    assert ip.device_pairs() == [(0, 1), (1, 0), (2, 3), (3, 2)]


def test_start_done_pairs() -> None:
    m = module(
        "  %s = f32[8]{0} all-reduce-start(%p), channel_id=7, replica_groups={{0,1}}, to_apply=%add\n"
        "  %d = f32[8]{0} all-reduce-done(%s)\n"
        "  %gs = (f32[8]{0}, f32[16]{0}) all-gather-start(%d), replica_groups={{0,1}}, dimensions={0}\n"
        "  %gd = f32[16]{0} all-gather-done(%gs)\n"
        "  %ps = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(%p), "
        "source_target_pairs={{0,1},{1,0}}\n"
        "  ROOT %pd = f32[8]{0} collective-permute-done(%ps)",
        header="HloModule m, is_scheduled=true, replica_count=2")
    assert m.is_scheduled
    names = [(c.opcode, c.is_async, c.is_done, c.start) for c in m.collectives]
    assert names == [
        ("all-reduce-start", True, False, None), ("all-reduce-done", True, True, "s"),
        ("all-gather-start", True, False, None), ("all-gather-done", True, True, "gs"),
        ("collective-permute-start", True, False, None),
        ("collective-permute-done", True, True, "ps"),
    ]
    d = m.collectives[1]
    assert d.channel_id == 7 and d.replica_groups.replica_groups == [[0, 1]]
    assert str(d.mode) == "kCrossReplicaAndPartition" and d.reduction == "sum"
    assert [c.bytes for c in m.collectives] == [32, 32, 64, 64, 32, 32]
    assert m.collectives[5].source_target_pairs == [(0, 1), (1, 0)]


def test_async_wrapped_collective_and_send_recv() -> None:
    text = f"""HloModule m, num_partitions=4
{ADD}%wrapped (w: f32[8]) -> f32[8] {{
  %w = f32[8]{{0}} parameter(0)
  ROOT %a2a = f32[8]{{0}} all-to-all(%w), replica_groups={{{{0,1}},{{2,3}}}}, dimensions={{0}}
}}
%fused (q: f32[8]) -> f32[8] {{
  %q = f32[8]{{0}} parameter(0)
  ROOT %n = f32[8]{{0}} negate(%q)
}}
ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %as = ((f32[8]{{0}}), f32[8]{{0}}) async-start(%p), calls=%wrapped
  %ad = f32[8]{{0}} async-done(%as), calls=%wrapped
  %fs = ((f32[8]{{0}}), f32[8]{{0}}) async-start(%ad), calls=%fused
  %fd = f32[8]{{0}} async-done(%fs), calls=%fused
  %t = token[] after-all()
  %r = (f32[8]{{0}}, u32[], token[]) recv(%t), channel_id=2, frontend_attributes={{_xla_send_recv_source_target_pairs="{{{{0,1}},{{1,2}}}}"}}
  %rd = (f32[8]{{0}}, token[]) recv-done(%r), channel_id=2
  %s = (f32[8]{{0}}, u32[], token[]) send(%fd, %t), channel_id=3, is_host_transfer=true
  %sd = token[] send-done(%s), channel_id=3
  ROOT %out = f32[8]{{0}} get-tuple-element(%rd), index=0
}}
"""
    m = hlo.parse_module(text)
    got = [(c.name, c.opcode, c.wrapped_opcode, c.computation) for c in m.collectives]
    assert got == [
        ("a2a", "all-to-all", None, "wrapped"),
        ("as", "async-start", "all-to-all", "main"), ("ad", "async-done", "all-to-all", "main"),
        ("r", "recv", None, "main"), ("rd", "recv-done", None, "main"),
        ("s", "send", None, "main"), ("sd", "send-done", None, "main"),
    ]
    by = m.collectives_by_name
    assert str(by["as"].mode) == "kCrossReplica" and by["ad"].start == "as"
    assert by["as"].replica_groups.replica_groups == [[0, 1], [2, 3]] and by["as"].bytes == 32
    assert by["r"].source_target_pairs == [(0, 1), (1, 2)] and by["rd"].start == "r"
    assert by["r"].device_pairs() == [(0, 1), (1, 2)] and by["rd"].bytes == 32
    assert by["s"].is_host_transfer and not by["r"].is_host_transfer
    # The wrapper of a fusion is no collective: neither it nor its done names one.
    assert m.entry.by_name["fs"].collective is None and m.entry.by_name["fd"].collective is None
    assert m.entry.by_name["as"].collective is by["as"]


def test_call_graph() -> None:
    text = f"""HloModule m
{ADD}%cond (c: (s32[], f32[8])) -> pred[] {{
  %c = (s32[], f32[8]{{0}}) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %k = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %k), direction=LT
}}
%body (b: (s32[], f32[8])) -> (s32[], f32[8]) {{
  %b = (s32[], f32[8]{{0}}) parameter(0)
  %v = f32[8]{{0}} get-tuple-element(%b), index=1
  %ar = f32[8]{{0}} all-reduce(%v), replica_groups={{}}, to_apply=%add
  %j = s32[] get-tuple-element(%b), index=0
  ROOT %t = (s32[], f32[8]{{0}}) tuple(%j, %ar)
}}
%yes (y: f32[8]) -> f32[8] {{
  ROOT %y = f32[8]{{0}} parameter(0)
}}
%no (z: f32[8]) -> f32[8] {{
  ROOT %z = f32[8]{{0}} parameter(0)
}}
ENTRY %main (p: f32[8], q: pred[]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %q = pred[] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{{0}}) tuple(%zero, %p)
  %w = (s32[], f32[8]{{0}}) while(%init), condition=%cond, body=%body
  %g = f32[8]{{0}} get-tuple-element(%w), index=1
  %cd = f32[8]{{0}} conditional(%q, %g, %g), true_computation=%yes, false_computation=%no, control-predecessors={{%w}}
  ROOT %c2 = f32[8]{{0}} call(%cd), to_apply=%yes
}}
"""
    m = hlo.parse_module(text)
    assert m.entry_name == "main" and list(m.computations) == ["add", "and", "cond", "body", "yes", "no", "main"]
    entry = m.entry
    assert entry.called_computations == ["cond", "body", "yes", "no"]
    w = entry.instruction("w")
    assert w.called_computations == ("cond", "body") and w.operands == ("init",)
    assert entry.instruction("cd").control_predecessors == ("w",)
    assert entry.root is not None and entry.root.name == "c2"
    (ar,) = m.collectives
    assert ar.computation == "body" and m.computations["body"].instruction("ar").collective is ar


def test_header_and_overrides() -> None:
    text = ("HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8]{0})->f32[8]{0}}, "
            "replica_count=2, num_partitions=4, frontend_attributes={x=\"1\"}, alias_passthrough_params=true\n"
            "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
            "ENTRY main {\n  p = f32[8]{0} parameter(0)\n"
            "  ROOT ar = f32[8]{0} all-reduce(p), replica_groups={{0,1}}, to_apply=add\n}\n")
    m = hlo.parse_module(text)
    assert (m.name, m.is_scheduled, m.replica_count, m.num_partitions) == ("jit_f", True, 2, 4)
    assert m.entry_computation_layout == "{(f32[8]{0})->f32[8]{0}}"
    assert m.header_attributes["alias_passthrough_params"] == "true"
    assert hlo.parse_module(text, replica_count=8).replica_count == 8
    (c,) = m.collectives
    assert (c.name, c.operands, c.to_apply, c.column) == ("ar", ("p",), "add", 8)
    assert hlo.parse_module(text.split("\n", 1)[1]).replica_count == 1


def test_load_gzip_and_stream(tmp_path: object) -> None:
    text = f"HloModule m, num_partitions=2\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n"
    text += "".join(f"  %a{i} = f32[8]{{0}} all-reduce(%p), channel_id={i + 1}, replica_groups={{}}, to_apply=%add\n"
                    for i in range(50))
    text += "  ROOT %r = f32[8]{0} copy(%p)\n}\n"
    path = tmp_path / "m.hlo.gz"  # type: ignore[operator]
    path.write_bytes(gzip.compress(text.encode()))
    loaded = hlo.load(path)
    streamed = list(hlo.iter_collectives(path, block_size=256, progress=False))
    key = [(c.name, c.line, c.column, c.channel_id, c.bytes, c.reduction, str(c.mode)) for c in loaded.collectives]
    assert key == [(c.name, c.line, c.column, c.channel_id, c.bytes, c.reduction, str(c.mode)) for c in streamed]
    assert len(key) == 50 and key[0][1] == 14


@pytest.mark.timeout(60)
def test_a_statement_of_many_blocks_streams_in_linear_time() -> None:
    # A 4 MB metadata line and a list of 100,000 groups, read in blocks of 64 characters:
    # the reader asks for as much again as it holds unread, not one block at a time (which
    # read the line again 60,000 times).
    groups = "{" + "{0,1},{2,3}," * 50_000 + "{0,1}}"
    text = (f"HloModule m, replica_count=4\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
            f"  %p = f32[8]{{0}} parameter(0)\n"
            f'  %c = f32[8]{{0}} copy(%p), metadata={{op_name="{"x" * 4_000_000}"}}\n'
            f"  ROOT %r = f32[8]{{0}} all-reduce(%c), replica_groups={groups}, to_apply=%add\n}}\n")
    streamed = list(hlo.iter_collectives(io.StringIO(text), block_size=64, progress=False))
    assert [c.replica_groups for c in streamed] == [c.replica_groups for c in
                                                    hlo.parse_module(text).collectives]
    assert len(streamed[0].replica_groups) == 100_001  # type: ignore[arg-type]


@pytest.mark.parametrize("block_size", [1, 7, 64])
def test_streamed_columns_count_from_the_line_not_the_block(block_size: int) -> None:
    # Two instructions on one line: the stream's block may start in the middle of it.
    text = (f"HloModule m, replica_count=2\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
            "  %p = f32[8]{0} parameter(0)  %ar = f32[8]{0} all-reduce(%p), "
            "replica_groups={{0,1}}, to_apply=%add\n  ROOT %n = f32[8]{0} negate(%ar)\n}\n")
    streamed = hlo.iter_collectives(io.StringIO(text), block_size=block_size, progress=False)
    assert [(c.line, c.column) for c in streamed] == [
        (c.line, c.column) for c in hlo.parse_module(text).collectives] == [(13, 32)]
    with pytest.raises(mt.HloParseError) as error:
        list(hlo.iter_collectives(io.StringIO("HloModule m"), block_size=block_size,
                                  progress=False))
    assert (error.value.line, error.value.column) == (1, 12)


def test_multi_line_instruction_and_comments() -> None:
    c = only("  ROOT %ar = f32[8]{0} all-reduce(%p /*index=0*/),\n      replica_groups={{0,1}},\n"
             "      to_apply=%add", header="HloModule m, replica_count=2")
    assert c.replica_groups.replica_groups == [[0, 1]] and c.to_apply == "add" and c.line == 14


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-5, 2**40), min_size=1, max_size=60), min_size=1, max_size=8),
       st.sampled_from(["", "0", "-", "00", " ", "99999999999999999999", "{}", ",,"]))
def test_long_explicit_lists_read_like_the_math_layer(groups: list[list[int]], junk: str) -> None:
    """The numpy reading of long explicit lists agrees with CollectiveDeviceList.parse."""
    from meshtopo.hlo._decode import decode_groups

    text = "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
    text = text.replace("}}", junk + "}}") if junk and len(groups[0]) > 3 else text
    try:
        expected = mt.CollectiveDeviceList.parse(text)
    except mt.MeshtopoError:
        with pytest.raises(mt.MeshtopoError):
            decode_groups(text, 1, 1)
        return
    got = decode_groups(text, 1, 1)
    assert got.replica_groups == expected.replica_groups


def test_spec_permute_and_flattened_examples() -> None:
    m = module(
        "  %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, "
        "use_global_device_ids=true, to_apply=%add\n"
        "  %cp = f32[8]{0} collective-permute(%ar), source_target_pairs={{0,1},{1,2},{2,3}}\n"
        "  %c = s32[] constant(0)\n"
        "  %o = (s32[], s32[], s32[]) tuple(%c, %c, %c)\n"
        "  ROOT %ip = f32[8]{0} collective-permute(%cp, %cp, %o, %o), channel_id=2, "
        "source_target_pairs={{0,1},{1,2},{2,3},{3,0},{0,3},{3,2},{2,1},{1,0}}, "
        "slice_sizes={{1,8,128},{1,8,128},{2,8,128},{2,8,128}}",
        header="HloModule m, replica_count=4, num_partitions=1")
    ar, cp, ip = m.collectives
    assert ar.mode is mt.CollectiveOpGroupMode.FLATTENED_ID and ar.device_groups() == [[0, 1]]
    assert cp.source_target_pairs == [(0, 1), (1, 2), (2, 3)] and str(cp.mode) == "kCrossReplica"
    assert ip.slice_sizes == [(1, 8, 128), (1, 8, 128), (2, 8, 128), (2, 8, 128)]
    assert len(ip.source_target_pairs or []) == 8 and ip.operands == ("cp", "cp", "o", "o")


def test_load_stdin_and_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    text = ("HloModule m, replica_count=2\n" + ADD + "ENTRY %main (p: f32[8]) -> f32[8] {\n"
            "  %p = f32[8]{0} parameter(0)\n"
            "  ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, to_apply=%add\n}\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert [c.name for c in hlo.load("-").collectives] == ["ar"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert [c.name for c in hlo.iter_collectives("-", progress=True)] == ["ar"]


def test_one_instruction_alone_is_a_module() -> None:
    """XLA reads a text that is one instruction as a module of it, and so does meshtopo."""
    module = hlo.parse_module("%r = f32[8]{0} negate(f32[8]{0} %p)\n")
    assert [(i.name, i.opcode) for i in module.entry.instructions] == [
        ("p", "parameter"), ("r", "negate")]


@pytest.mark.parametrize("where", ["signature", "instruction"])
def test_tuple_shapes_nest_at_most_as_deep_as_values(where: str) -> None:
    shape = "(" * 5000 + "f32[8]" + ")" * 5000
    result = shape if where == "signature" else "f32[8]"
    kept = shape if where == "instruction" else "f32[8]{0}"
    text = (f"HloModule m\nENTRY %main (p: f32[8]) -> {result} {{\n"
            f"  %q = {kept} parameter(0)\n  ROOT %r = f32[8]{{0}} copy(%q)\n}}\n")
    with pytest.raises(mt.HloParseError) as error:
        hlo.parse_module(text)
    assert error.value.message == "values nested more than 256 deep"


def test_operands_written_as_xla_prints_them_are_the_written_names() -> None:
    """The names between the parentheses, in order, whether asked for first or after the
    operand text, and kept when the text, the operand text or where the attributes start is
    changed afterwards."""
    body = "  %q = f32[8]{0} negate(%p)\n  ROOT %z = f32[8]{0} add(%p, %q), metadata={op_name=\"a(b)\"}"
    assert module(body).entry.instruction("z").operands == ("p", "q")
    z = module(body).entry.instruction("z")
    assert z.operand_text == "%p, %q"
    assert z.operands == ("p", "q")
    for change in ("operand_text", "text", "attribute_at"):
        z = module(body).entry.instruction("z")
        setattr(z, change, {"operand_text": "%q, %p", "text": "z = f32[8]{0} add(%q, %p)",
                            "attribute_at": 3}[change])
        assert z.operands == ("p", "q"), change

"""Binary HLO as XLA writes it: ``--xla_dump_hlo_as_proto`` next to the text of the same
compilation, on a mesh whose devices are permuted.

A child process compiles and runs shard_map programs and the ``jit(grad)`` of a small model
sharded over the mesh with ``NamedSharding`` (whose collectives XLA writes with iota,
mesh-axes and explicit groups) with ``--xla_dump_hlo_as_text --xla_dump_hlo_as_proto
--xla_dump_hlo_snapshots``: each module is then both
``*.after_optimizations.txt`` and ``*.after_optimizations.hlo.pb`` (an ``HloProto``), and
``compile_options.pb`` replaces ``compile_options.textproto``. The proto must read to the
same module as the text, collective by collective, with the groups execution shows
(``oracle._measure.measure`` runs the same programs and decodes who met).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from google.protobuf.message import Message

import meshtopo as mt
from meshtopo.cli import main
from meshtopo.hlo._proto_schema import message_class
from oracle._expect import as_measured
from oracle._measure import measure

from ._xla_dump import ORDERS

pytestmark = pytest.mark.jax
jax = pytest.importorskip("jax")

PERMUTED = ORDERS["permuted"]

_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import jax, jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    order = [int(d) for d in sys.argv[1].split(",")]
    mesh = Mesh(np.array(jax.devices())[order].reshape(2, 4), ("x", "y"))
    def mixed(a):
        a = jax.lax.psum(a, "y")
        b = jax.lax.all_gather(a, "x", tiled=True)
        c = jax.lax.ppermute(a, "y", [(i, (i + 1) % 4) for i in range(4)])
        d = jax.lax.psum_scatter(b, "x", scatter_dimension=0, tiled=True)
        e = jax.lax.all_to_all(c, "y", 0, 0, tiled=True)
        def body(i, v):
            return jax.lax.psum(v, "x") * 0.5
        f = jax.lax.fori_loop(0, jnp.int32(jax.lax.axis_index("y")) + 2, body, d)
        return f + e
    def psum(a):
        return jax.lax.psum(a, "y")
    def all_gather(a):
        return jax.lax.all_gather(a, "x", tiled=True)
    def double(a):
        return a * 2
    for body in (psum, all_gather, mixed):
        fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"),
                                   out_specs=P("x", "y"), check_vma=False))
        jax.block_until_ready(fn(jnp.arange(64.0).reshape(8, 8)))
    jax.block_until_ready(jax.jit(double)(jnp.arange(4.0)))  # one device: a snapshot
    def loss(x, w1, w2):
        return ((jax.nn.gelu(x @ w1) @ w2) ** 2).mean()
    def put(a, spec):
        return jax.device_put(a, NamedSharding(mesh, spec))
    x = put(jnp.ones((8, 16)), P("x", None))
    w1, w2 = put(jnp.full((16, 32), 0.01), P("x", "y")), put(jnp.full((32, 16), 0.01), P("y", "x"))
    jax.block_until_ready(jax.jit(jax.grad(loss, argnums=(1, 2)))(x, w1, w2))
""")


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("proto_dump")
    flags = (f"--xla_force_host_platform_device_count=8 --xla_dump_to={directory} "
             "--xla_dump_hlo_as_text --xla_dump_hlo_as_proto --xla_dump_hlo_snapshots")
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", _CHILD, ",".join(map(str, PERMUTED))],
                          capture_output=True, text=True, timeout=240, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return directory


def _pairs(directory: Path) -> dict[str, tuple[Path, Path]]:
    """(text, proto) of every module after optimisations that has collectives, by jit name."""
    found = {}
    for proto in sorted(directory.glob("*after_optimizations.hlo.pb")):
        text = proto.with_name(proto.name.removesuffix(".hlo.pb") + ".txt")
        name = proto.name.split(".")[1]
        if mt.hlo.load(text).collectives:
            found[name] = (text, proto)
    return found


def _options_file(module_file: Path) -> Path:
    """``DIR/module_NNNN.NAME/compile_options.pb`` of ``DIR/module_NNNN.NAME.<stage>...``."""
    return module_file.parent / ".".join(module_file.name.split(".")[:2]) / "compile_options.pb"


def _described(module: mt.hlo.Module) -> list[tuple[object, ...]]:
    """Everything a collective says that the two forms must agree on."""
    rows = []
    for c in module.collectives:
        pairs = c.device_pairs() if c.source_target_pairs is not None else None
        rows.append((
            c.name, c.opcode, c.computation, c.is_root, str(c.mode), c.groups_text,
            None if c.replica_groups is None else c.replica_groups.replica_groups,
            c.channel_id, c.use_global_device_ids, c.source_target_pairs, c.dimensions,
            c.to_apply, c.reduction, c.bytes, c.shape_text, c.operands, c.device_groups(),
            pairs, c.metadata, c.start,
        ))
    return rows


def _structure(module: mt.hlo.Module) -> list[tuple[object, ...]]:
    """Every instruction's name, opcode, shape, operands, callees and the attributes that
    name computations, in each computation's order (the schedule's, for these modules);
    computations by name (XLA's text and proto list them in different orders)."""
    keys = ("to_apply", "calls", "body", "condition", "true_computation", "false_computation",
            "branch_computations")
    return [(c.name, c.is_entry, i.name, i.opcode, i.shape_text, i.operands, i.is_root,
             i.called_computations, {k: v for k, v in i.attributes.items() if k in keys})
            for c in sorted(module.computations.values(), key=lambda c: c.name)
            for i in c.instructions]


def test_the_dump_holds_both_forms_and_binary_compile_options(dump):
    pairs = _pairs(dump)
    assert sorted(pairs) == ["jit_all_gather", "jit_loss", "jit_mixed", "jit_psum"]
    for text, _ in pairs.values():
        options = _options_file(text)
        assert options.is_file()
        assert not options.with_suffix(".textproto").exists()


@pytest.mark.parametrize("name", ["jit_all_gather", "jit_loss", "jit_mixed", "jit_psum"])
def test_proto_reads_to_the_text_s_module(dump, name):
    text_path, proto_path = _pairs(dump)[name]
    text, proto = mt.hlo.load(text_path), mt.hlo.load(proto_path)
    # The text's table now comes from compile_options.pb; the proto's from itself.
    assert text.device_assignment_source == "dump"
    assert text.compile_options is not None
    assert text.compile_options.path == str(_options_file(text_path))
    assert proto.device_assignment_source == "proto"
    assert text.device_assignment.array.tolist() == [list(PERMUTED)]
    assert proto.device_assignment.array.tolist() == [list(PERMUTED)]
    assert (proto.name, proto.replica_count, proto.num_partitions, proto.is_scheduled) == (
        text.name, text.replica_count, text.num_partitions, text.is_scheduled)
    assert (text.schedule_source, proto.schedule_source) == ("text", "proto")
    assert _described(proto) == _described(text)
    assert _structure(proto) == _structure(text)
    # Each collective's attributes as XLA printed them, in its order.
    for printed, written in zip(proto.collectives, text.collectives, strict=True):
        assert (list(dict(printed.instruction.attributes).items())
                == list(dict(written.instruction.attributes).items()))
    # Lines and columns point into the proto module's own text, at the instruction's name.
    lines = proto.text.splitlines()
    for c in proto.collectives:
        assert lines[c.line - 1][c.column - 1:].startswith(f"%{c.name} = ")
    # The verifier and the order analysis say the same of both.
    assert [f.message for f in mt.hlo.verify(proto)] == [f.message for f in mt.hlo.verify(text)]
    assert ([(f.type, f.devices) for f in mt.order.analyze(proto).findings]
            == [(f.type, f.devices) for f in mt.order.analyze(text).findings])


def test_explorer_shows_the_text_a_proto_s_lines_point_into(dump):
    from meshtopo.cli._explore import _read_dump

    _, proto_path = _pairs(dump)["jit_mixed"]
    assert _read_dump(proto_path) == mt.hlo.load(proto_path).text


def test_mixed_module_has_every_collective_kind(dump):
    proto = mt.hlo.load(_pairs(dump)["jit_mixed"][1])
    opcodes = {c.opcode for c in proto.collectives}
    assert {"all-reduce", "all-gather", "collective-permute", "reduce-scatter",
            "all-to-all"} <= opcodes
    assert any(i.opcode == "while" for i in proto.instructions)


@pytest.mark.parametrize(("collective", "axis"), [("psum", "y"), ("all_gather", "x")])
def test_proto_groups_equal_execution(dump, collective, axis):
    module = mt.hlo.load(_pairs(dump)[f"jit_{collective}"][1])
    measured = measure(collective, {"x": 2, "y": 4}, (axis,), PERMUTED)
    [c] = [c for c in module.collectives if c.is_start]
    assert as_measured(c.device_groups(), measured.ordered) == measured.groups


def test_gzip_module_proto_and_snapshot_read_the_same(dump, tmp_path):
    _, proto_path = _pairs(dump)["jit_mixed"]
    data = proto_path.read_bytes()
    expected = _described(mt.hlo.load(proto_path))
    hlo_proto = message_class("HloProto")()
    hlo_proto.ParseFromString(data)
    snapshot = message_class("HloSnapshot")()
    snapshot.hlo.CopyFrom(hlo_proto)
    files = {
        "module.hlo.pb.gz": gzip.compress(data),
        "module.hlo_module.pb": hlo_proto.hlo_module.SerializeToString(),
        "module.hlo_snapshot.pb": snapshot.SerializeToString(),
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
        module = mt.hlo.load(tmp_path / name)
        assert module.device_assignment_source == "proto", name
        assert _described(module) == expected, name
        stream = mt.hlo.iter_collectives(tmp_path / name)
        assert [c.name for c in stream] == [row[0] for row in expected], name
        assert stream.device_assignment_source == "proto"
        assert stream.device_assignment is not None
        assert stream.device_assignment.array.tolist() == [list(PERMUTED)]
    with (tmp_path / "module.hlo_module.pb").open("rb") as handle:
        assert _described(mt.hlo.load(handle)) == expected


@pytest.mark.parametrize("form", ["iota", "older replica_groups field"])
def test_groups_in_the_other_proto_forms_read_as_the_same_groups(dump, tmp_path, form):
    # The all-reduce of jit_psum, its groups {{0,1,2,3},{4,5,6,7}} rewritten as XLA's iota
    # list [2,4]<=[8] or moved to the instruction's deprecated replica_groups field.
    text_path, proto_path = _pairs(dump)["jit_psum"]
    [expected] = [c for c in mt.hlo.load(text_path).collectives if c.is_start]
    hlo_proto = message_class("HloProto")()
    hlo_proto.ParseFromString(proto_path.read_bytes())
    [instruction] = [i for c in hlo_proto.hlo_module.computations for i in c.instructions
                     if i.name == expected.name]
    assert [list(g.replica_ids) for g in instruction.collective_device_list.replica_groups] == (
        [[0, 1, 2, 3], [4, 5, 6, 7]])
    if form == "iota":
        instruction.ClearField("collective_device_list")
        iota = instruction.collective_device_list.iota_replica_group_list
        iota.num_replica_groups, iota.num_devices_per_group = 2, 4
        iota.iota_reshape_dims.append(8)
        iota.iota_transpose_perm.append(0)
        written = "[2,4]<=[8]"
    else:
        instruction.replica_groups.extend(instruction.collective_device_list.replica_groups)
        instruction.ClearField("collective_device_list")
        written = expected.groups_text
    path = tmp_path / "module.hlo.pb"
    path.write_bytes(hlo_proto.SerializeToString())
    [c] = [c for c in mt.hlo.load(path).collectives if c.is_start]
    assert c.groups_text == written
    assert c.replica_groups is not None and expected.replica_groups is not None
    assert c.replica_groups.replica_groups == expected.replica_groups.replica_groups
    assert (str(c.mode), c.device_groups()) == (str(expected.mode), expected.device_groups())


def test_snapshot_jax_wrote_reads_as_its_text(dump):
    [snapshot] = [p for p in dump.glob("*.snapshot.*.pb") if ".jit_double." in p.name]
    stem = snapshot.name.split(".snapshot.")[0]
    [text] = dump.glob(f"{stem}.*after_optimizations.txt")
    assert _structure(mt.hlo.load(snapshot)) == _structure(mt.hlo.load(text))


def test_directory_of_snapshots_alone(dump, tmp_path, capsys):
    [snapshot] = [p for p in dump.glob("*.snapshot.*.pb") if ".jit_double." in p.name]
    shutil.copy(snapshot, tmp_path / snapshot.name)
    again = snapshot.name.split(".snapshot.")[0] + ".snapshot.7.pb"  # a second run
    shutil.copy(snapshot, tmp_path / again)
    assert mt.hlo.module_files(tmp_path) == [str(tmp_path / min(snapshot.name, again))]
    assert mt.hlo.load(tmp_path).source == str(tmp_path / min(snapshot.name, again))
    [section] = _inspect_json([str(tmp_path)], capsys)["modules"]
    assert section["device_assignment_source"] == "proto"
    # In the dump, the module's text stands for it, not its snapshot.
    assert str(snapshot) not in mt.hlo.module_files(dump)


def test_directory_of_protos_alone(dump, tmp_path, capsys):
    text_path, proto_path = _pairs(dump)["jit_psum"]
    shutil.copy(proto_path, tmp_path / proto_path.name)
    module = mt.hlo.load(tmp_path)
    assert module.source == str(tmp_path / proto_path.name)
    assert module.device_assignment_source == "proto"
    [section] = _inspect_json([str(tmp_path)], capsys)["modules"]
    assert section["device_assignment_source"] == "proto"
    assert section["collectives"][0]["device_groups"] == [[3, 0, 6, 5], [7, 4, 1, 2]]
    # In the dump itself the text is listed once for the module written in both forms.
    assert mt.hlo.module_files(dump).count(str(text_path)) == 1
    assert str(proto_path) not in mt.hlo.module_files(dump)
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(tmp_path)])
    out, _ = capsys.readouterr()
    assert "device assignment from the module proto's device_assignment" in out
    with pytest.raises(SystemExit) as done:
        main(["check", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    assert (done.value.code, err) == (0, "")
    [payload] = json.loads(out)["modules"]
    assert (payload["device_assignment_source"], payload["schedule_source"], payload["ok"]) == (
        "proto", "proto", True)


def test_cut_short_and_foreign_files_are_one_line_errors(dump, tmp_path, capsys):
    _, proto_path = _pairs(dump)["jit_psum"]
    data = proto_path.read_bytes()
    # An instruction's shape is decoded when its computation is read, at load for one that
    # holds a collective (the entry here): a damaged one is found then.
    damaged = message_class("HloProto")()
    damaged.ParseFromString(data)
    damaged.hlo_module.computations[-1].instructions[0].shape = b"\xff\xff"
    files = {"cut.hlo.pb": data[: len(data) // 2], "foreign.pb": bytes(range(256)) * 4,
             "options.pb": _options_file(proto_path).read_bytes(),
             "shape.hlo.pb": damaged.SerializeToString()}
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(mt.InvalidArgumentError) as caught:
            mt.hlo.load(path)
        assert str(caught.value).startswith(f"{path} is not an HLO module proto ("), name
        assert "expected an HloProto, HloModuleProto or HloSnapshot" in str(caught.value)
        with pytest.raises(SystemExit) as done:
            main(["inspect", str(path)])
        out, err = capsys.readouterr()
        assert (done.value.code, out) == (2, ""), name
        assert err == f"meshtopo: error: {caught.value}\n"
    # A compile_options.pb that is cut short is named as what it should have been.
    copy = tmp_path / "d"
    shutil.copytree(dump, copy, ignore=shutil.ignore_patterns("*.ll", "*.o"))
    text_path, _ = _pairs(copy)["jit_psum"]
    options = _options_file(text_path)
    options.write_bytes(options.read_bytes()[:7])
    with pytest.raises(mt.InvalidArgumentError, match="is not a CompileOptionsProto"):
        mt.hlo.load(text_path)


def test_grad_module_writes_iota_mesh_axes_and_explicit_groups(dump):
    # JAX writes most of a jit(grad) program's groups in the fields XLA added after
    # collective_device_list: each form is read, as the text prints it.
    text_path, proto_path = _pairs(dump)["jit_loss"]
    hlo_proto = message_class("HloProto")()
    hlo_proto.ParseFromString(proto_path.read_bytes())
    fields = {i.name: i.WhichOneof("replica_group_list")
              for c in hlo_proto.hlo_module.computations for i in c.instructions}
    text, proto = mt.hlo.load(text_path), mt.hlo.load(proto_path)
    assert {(fields[c.name], c.replica_groups.encoding) for c in proto.collectives
            if c.replica_groups is not None} == {
        ("iota_collective_device_list", "iota"), ("collective_device_list", "explicit"),
        ("mesh_axes_replica_group_list", "mesh_axes")}
    assert [(c.name, c.groups_text, c.device_groups()) for c in proto.collectives] == [
        (c.name, c.groups_text, c.device_groups()) for c in text.collectives]
    assert all(c.groups_text for c in proto.collectives)


def _instruction(fill: Callable[[Message], object]) -> bytes:
    """One ``HloInstructionProto`` field set by ``fill``, serialized."""
    message = message_class("HloInstructionProto")()
    fill(message)
    return message.SerializeToString()


def _iota(message: Message) -> None:  # [4,2]<=[2,4]T(1,0): {{0,4},{1,5},{2,6},{3,7}}
    iota = message.iota_collective_device_list
    iota.num_replica_groups, iota.num_devices_per_group = 4, 2
    iota.iota_reshape_dims.extend([2, 4])
    iota.iota_transpose_perm.extend([1, 0])


def _mesh_axes(*refs: tuple[int, ...], device_ids: tuple[int, ...] = (),
               transform: tuple[list[int], list[int]] | None = None,
               ) -> Callable[[Message], None]:
    """A mesh 'a'=2, 'b'=4 and the axes ``refs`` (index[, pre_size, size])."""
    def fill(message: Message) -> None:
        written = message.mesh_axes_replica_group_list
        for name, size in (("a", 2), ("b", 4)):
            axis = written.mesh.axes.add()
            axis.name, axis.size = name, size
        written.mesh.device_ids.extend(device_ids)
        if transform is not None:
            written.mesh.iota_transform.reshape_dims.extend(transform[0])
            written.mesh.iota_transform.transpose_perm.extend(transform[1])
        for index, *sub in refs:
            ref = written.axes.add()
            ref.mesh_axis_index = index
            if sub:
                ref.sub_axis_info.pre_size, ref.sub_axis_info.size = sub
    return fill


def _legacy(message: Message) -> None:
    for group in ([0, 1], [2, 3], [4, 5], [6, 7]):
        message.replica_groups.add().replica_ids.extend(group)


_PRECEDENCE = {
    # name: (fields added to the all-reduce, which keeps its collective_device_list
    # {{0,1,2,3},{4,5,6,7}} unless a field of its oneof replaces it; the groups XLA reads)
    "collective_device_list": ([], "{{0,1,2,3},{4,5,6,7}}"),
    "replica_groups over collective_device_list": ([_legacy], "{{0,1},{2,3},{4,5},{6,7}}"),
    "iota over replica_groups": ([_legacy, _iota], "[4,2]<=[2,4]T(1,0)"),
    "mesh axes over replica_groups": ([_legacy, _mesh_axes((1,))], "mesh['a'=2,'b'=4] {'b'}"),
    # One oneof: of iota and mesh axes, the one written last is kept.
    "mesh axes written after iota": ([_iota, _mesh_axes((0,))], "mesh['a'=2,'b'=4] {'a'}"),
    "iota written after mesh axes": ([_mesh_axes((0,)), _iota], "[4,2]<=[2,4]T(1,0)"),
    "mesh device ids": ([_mesh_axes((0,), device_ids=PERMUTED)],
                        "mesh['a'=2,'b'=4], device_ids=(3,0,6,5,7,4,1,2) {'a'}"),
    "mesh iota transform": ([_mesh_axes((0,), transform=([4, 2], [1, 0]))],
                            "mesh['a'=2,'b'=4], device_ids=([4,2]T(1,0)) {'a'}"),
    "sub-axes": ([_mesh_axes((1, 2, 2), (0,))], "mesh['a'=2,'b'=4] {'b':(2)2,'a'}"),
}


@pytest.mark.parametrize("case", list(_PRECEDENCE))
def test_groups_are_read_from_the_field_xla_reads_them_from(dump, tmp_path, case):
    # XLA itself (jaxlib's HloModule read from the same proto) prints the groups it read.
    from jaxlib._hlo import HloModule  # type: ignore[import-not-found]

    fills, written = _PRECEDENCE[case]
    _, proto_path = _pairs(dump)["jit_psum"]
    hlo_proto = message_class("HloProto")()
    hlo_proto.ParseFromString(proto_path.read_bytes())
    [instruction] = [i for c in hlo_proto.hlo_module.computations for i in c.instructions
                     if i.opcode.startswith("all-reduce") and i.WhichOneof("replica_group_list")]
    instruction.MergeFromString(b"".join(_instruction(fill) for fill in fills))
    module_bytes = hlo_proto.hlo_module.SerializeToString()
    xla_text = HloModule.from_serialized_hlo_module_proto(module_bytes).to_string()
    path = tmp_path / "module.hlo.pb"
    path.write_bytes(hlo_proto.SerializeToString())
    proto = mt.hlo.load(path)
    from_xla = mt.hlo.parse_module(xla_text, proto.replica_count, proto.num_partitions,
                                   proto.device_assignment)
    [c] = [c for c in proto.collectives if c.name == instruction.name]
    [expected] = [c for c in from_xla.collectives if c.name == instruction.name]
    assert (c.groups_text, expected.groups_text) == (written, written)
    assert c.replica_groups == expected.replica_groups
    assert c.device_groups() == expected.device_groups()


@pytest.mark.parametrize(("fill", "message"), [
    (_mesh_axes((2,)), "mesh_axes_replica_group_list: mesh_axis_index 2 is not an axis of "
                       "the mesh mesh['a'=2,'b'=4]"),
    (_mesh_axes((0,), device_ids=(0, 1, 2)), "mesh_axes_replica_group_list: mesh "
                                             "['a'=2,'b'=4] has 8 positions but devices has 3 ids"),
    (_mesh_axes((0,), device_ids=PERMUTED, transform=([8], [0])),
     "mesh_axes_replica_group_list: the mesh has both device_ids and an iota_transform"),
    (_mesh_axes((1, 2, 4)), "mesh_axes_replica_group_list: sub-axis b:(2)4 does not fit axis "
                            "'b' of size 4: its size must be smaller than 4 and 2*4 must "
                            "divide 4"),
    (lambda m: m.iota_collective_device_list.iota_reshape_dims.append(8),
     "iota_collective_device_list: reshape dims [8] hold 8 elements but the tile [0, 0] "
     "holds 0"),
])
def test_groups_no_mesh_or_iota_can_hold_are_one_line_errors(dump, tmp_path, capsys, fill,
                                                              message):
    _, proto_path = _pairs(dump)["jit_psum"]
    hlo_proto = message_class("HloProto")()
    hlo_proto.ParseFromString(proto_path.read_bytes())
    [instruction] = [i for c in hlo_proto.hlo_module.computations for i in c.instructions
                     if i.opcode.startswith("all-reduce") and i.WhichOneof("replica_group_list")]
    instruction.MergeFromString(_instruction(fill))
    path = tmp_path / "module.hlo.pb"
    path.write_bytes(hlo_proto.SerializeToString())
    with pytest.raises(mt.InvalidArgumentError) as caught:
        mt.hlo.load(path)
    assert str(caught.value) == f"{path}: instruction {instruction.name}: {message}"
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(path)])
    out, err = capsys.readouterr()
    assert (done.value.code, out, err) == (2, "", f"meshtopo: error: {caught.value}\n")


@pytest.mark.parametrize("field", ["iota_collective_device_list", "mesh_axes_replica_group_list"])
def test_damaged_iota_and_mesh_axes_fields_are_one_line_errors(dump, tmp_path, capsys, field):
    # The field's bytes overwritten in place (the lengths around it still hold).
    _, proto_path = _pairs(dump)["jit_loss"]
    data = proto_path.read_bytes()
    hlo_proto = message_class("HloProto")()
    hlo_proto.ParseFromString(data)
    [written, *_] = [i for c in hlo_proto.hlo_module.computations for i in c.instructions
                     if i.WhichOneof("replica_group_list") == field]
    payload = _instruction(lambda m: getattr(m, field).CopyFrom(getattr(written, field)))
    assert payload in data
    head = len(payload) - len(getattr(written, field).SerializeToString())
    path = tmp_path / "module.hlo.pb"
    path.write_bytes(data.replace(payload, payload[:head] + b"\xff" * (len(payload) - head), 1))
    with pytest.raises(mt.InvalidArgumentError) as caught:
        mt.hlo.load(path)
    assert str(caught.value).startswith(f"{path} is not an HLO module proto (cut short or "
                                        "damaged)")
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(path)])
    out, err = capsys.readouterr()
    assert (done.value.code, out, err) == (2, "", f"meshtopo: error: {caught.value}\n")


def test_an_operand_id_that_names_nothing_is_one_line(dump, tmp_path, capsys):
    _, proto_path = _pairs(dump)["jit_psum"]
    damaged = message_class("HloProto")()
    damaged.ParseFromString(proto_path.read_bytes())
    computation = damaged.hlo_module.computations[-1]
    user = next(i for i in computation.instructions if i.operand_ids)
    user.operand_ids[0] = 987654
    path = tmp_path / "operand.hlo.pb"
    path.write_bytes(damaged.SerializeToString())
    with pytest.raises(mt.InvalidArgumentError) as caught:
        mt.hlo.load(path)
    assert str(caught.value) == (
        f"{path}: instruction {user.name}: id 987654 of an operand, called computation or "
        f"control predecessor names no instruction of computation {computation.name} and no "
        "computation")
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(path)])
    out, err = capsys.readouterr()
    assert (done.value.code, out, err) == (2, "", f"meshtopo: error: {caught.value}\n")


def test_text_is_printed_on_use_and_a_damaged_metadata_is_refused_then(dump, tmp_path):
    # Lines and columns come from the structure; an instruction's text is printed when asked
    # for, so a damaged metadata field is found then, naming the file.
    _, proto_path = _pairs(dump)["jit_psum"]
    damaged = message_class("HloProto")()
    damaged.ParseFromString(proto_path.read_bytes())
    computation = damaged.hlo_module.computations[-1]
    target = next(i for i in computation.instructions if i.metadata)
    target.metadata = b"\xff\xff"
    path = tmp_path / "metadata.hlo.pb"
    path.write_bytes(damaged.SerializeToString())
    module = mt.hlo.load(path)
    instruction = module.computations[computation.name].by_name[target.name]
    assert (instruction.line, instruction.column) == next(
        (i.line, i.column) for i in mt.hlo.load(proto_path).instructions if i.name == target.name)
    with pytest.raises(mt.InvalidArgumentError) as caught:
        instruction.text  # noqa: B018
    assert str(caught.value).startswith(f"{path} is not an HLO module proto (cut short or "
                                        "damaged)")
    with pytest.raises(mt.InvalidArgumentError):
        module.to_text()


def test_a_computation_without_collectives_is_read_on_use(dump, tmp_path):
    # Its lines are placed at load; its instructions are read when first asked for, so a
    # damaged shape there is found then (and at each use after), naming the file.
    _, proto_path = _pairs(dump)["jit_psum"]
    damaged = message_class("HloProto")()
    damaged.ParseFromString(proto_path.read_bytes())
    reducer = damaged.hlo_module.computations[0]
    assert not any(i.opcode in mt.hlo.COLLECTIVE_OPCODES for i in reducer.instructions)
    reducer.instructions[0].shape = b"\xff\xff"
    path = tmp_path / "shape.hlo.pb"
    path.write_bytes(damaged.SerializeToString())
    module, whole = mt.hlo.load(path), mt.hlo.load(proto_path)
    assert [(c.name, c.line, c.column, c.text) for c in module.collectives] == [
        (c.name, c.line, c.column, c.text) for c in whole.collectives]
    for _ in range(2):
        with pytest.raises(mt.InvalidArgumentError) as caught:
            module.computations[reducer.name].instructions  # noqa: B018
        assert str(caught.value).startswith(f"{path} is not an HLO module proto (cut short or "
                                            "damaged)")
    assert module.computations[reducer.name].line == whole.computations[reducer.name].line


def test_threads_asking_for_a_computation_at_once_share_one_reading(dump):
    # The explorer's server asks from several threads: each waits for the one reading.
    _, proto_path = _pairs(dump)["jit_loss"]
    module = mt.hlo.load(proto_path)
    computations = list(module.computations.values()) * 8
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda c: c.instructions, computations))
    assert all(f is c.instructions for f, c in zip(found, computations, strict=True))
    assert module.to_text() == mt.hlo.load(proto_path).to_text()


def _inspect_json(arguments: list[str], capsys) -> dict:
    with pytest.raises(SystemExit) as done:
        main(["inspect", "--json", *arguments])
    out, err = capsys.readouterr()
    assert (done.value.code, err) == (0, "")
    return json.loads(out)


def test_device_assignment_from_binary_compile_options(dump, tmp_path, capsys, monkeypatch):
    text_path, _ = _pairs(dump)["jit_psum"]
    options = _options_file(text_path)
    assert options.name == "compile_options.pb"
    by_path = _inspect_json([str(text_path)], capsys)
    with open(text_path, encoding="utf-8") as handle:
        monkeypatch.setattr("sys.stdin", handle)
        by_stdin = _inspect_json(["-", "--device-assignment", str(options)], capsys)
    assert by_path["device_assignment_source"] == "dump"
    assert by_stdin["device_assignment_source"] == "given"
    assert ([c["device_groups"] for c in by_stdin["collectives"]]
            == [c["device_groups"] for c in by_path["collectives"]]
            == [[[3, 0, 6, 5], [7, 4, 1, 2]]])
    foreign = tmp_path / "compile_options.pb"
    foreign.write_bytes(b"\xff" * 16)
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(text_path), "--device-assignment", str(foreign)])
    _, err = capsys.readouterr()
    assert (done.value.code, err) == (2, (
        f"meshtopo: error: --device-assignment: {foreign} is not a CompileOptionsProto in "
        "protobuf's binary form (cut short or damaged)\n"))

"""Dump directories as XLA writes them: the device table comes from compile_options.textproto.

A child process with ``--xla_dump_to`` compiles and runs shard_map programs on meshes whose
devices are in permuted, reversed and interleaved orders, and a jitted partitioned program.
The after-optimizations text of such a module is the same whatever the mesh order; only the
``compile_options.textproto`` beside it holds the real table. ``mt.hlo.load`` and
``meshtopo inspect`` of the dump must give the device groups that execution shows
(``oracle._measure.measure`` runs the same program here and decodes who met).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.cli import main
from oracle._decode import sorted_groups
from oracle._expect import as_measured
from oracle._measure import measure

from ._xla_dump import ORDERS, write_dump

pytestmark = pytest.mark.jax
jax = pytest.importorskip("jax")

CASES = [("psum", "y"), ("all_gather", "x")]


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    directory = tmp_path_factory.mktemp("xla_dump")
    cases = [[f"{c}-{o}", c, a, ORDERS[o]] for c, a in CASES for o in ORDERS]
    cases.append(["jit-permuted", "jit", "", ORDERS["permuted"]])
    return directory, write_dump(directory, cases)


def _module_of(dump: tuple[Path, dict[str, list[str]]], key: str) -> mt.hlo.Module:
    directory, files = dump
    modules = [mt.hlo.load(directory / name) for name in files[key]]
    [module] = [m for m in modules if m.collectives]
    return module


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize(("collective", "axis"), CASES)
def test_loaded_dump_groups_equal_execution(dump, collective: str, axis: str, order: str):
    module = _module_of(dump, f"{collective}-{order}")
    assert module.device_assignment_source == "dump"
    assert module.device_assignment.array.tolist() == [list(ORDERS[order])]
    measured = measure(collective, {"x": 2, "y": 4}, (axis,), ORDERS[order])
    [c] = [c for c in module.collectives if c.is_start]
    assert as_measured(c.device_groups(), measured.ordered) == measured.groups
    # The same text read without its table gives XLA's default placement, and says so.
    bare = mt.hlo.parse_module(module.text)
    assert bare.device_assignment_source == "default"
    if measured.ordered:
        assert sorted_groups(c.device_groups()) == measured.groups


def test_jitted_dump_groups_equal_the_executable(dump):
    module = _module_of(dump, "jit-permuted")
    assert module.device_assignment_source == "dump"
    # Execution through mt.jax.inspect (checked against execution in test_jax.py) of the same
    # program on the same mesh order.
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = np.array(jax.devices())[list(ORDERS["permuted"])].reshape(2, 4)
    sharded = jax.device_put(jnp.arange(16.0).reshape(4, 4),
                             NamedSharding(Mesh(devices, ("x", "y")), P("x", "y")))
    expected = mt.jax.inspect(jax.jit(lambda a: a.sum(axis=1)), sharded)
    assert [c.device_groups() for c in module.collectives] == [
        c.device_groups() for c in expected.collectives]


def test_inspect_reads_the_directory_and_names_the_table(dump, capsys, tmp_path):
    directory, _ = dump
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(directory), "--json"])
    out, err = capsys.readouterr()
    assert (done.value.code, err) == (0, "")
    sections = json.loads(out)["modules"]
    assert {s["device_assignment_source"] for s in sections} == {"dump"}
    psum = next(s for s in sections
                if any(c["opcode"] == "all-reduce" for c in s["collectives"])
                and s["device_assignment"] == [list(ORDERS["permuted"])])
    assert psum["collectives"][0]["device_groups"] == [[3, 0, 6, 5], [7, 4, 1, 2]]
    # A module copied away from its dump: XLA's default placement, said plainly.
    module = _module_of(dump, "psum-permuted")
    copy = tmp_path / "alone.hlo"
    shutil.copy(module.source, copy)  # type: ignore[arg-type]
    with pytest.raises(SystemExit):
        main(["inspect", str(copy)])
    out, _ = capsys.readouterr()
    assert "device assignment: XLA's default placement (no compile_options.textproto" in out
    assert "{{0,1,2,3},{4,5,6,7}}" in out


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize(("collective", "axis"), CASES)
def test_mesh_devices_name_the_axes_of_the_device_groups(dump, capsys, collective: str,
                                                         axis: str, order: str):
    # The mesh the program ran on, its devices in the dump's order: the device groups are
    # that mesh's groups over the axis, and so are the written groups on the mesh 0..7.
    path = str(_module_of(dump, f"{collective}-{order}").source)
    devices = ",".join(map(str, ORDERS[order]))
    for extra in (["--mesh-devices", devices], []):
        with pytest.raises(SystemExit) as done:
            main(["inspect", path, "--json", "--mesh", "x=2,y=4", *extra])
        out, err = capsys.readouterr()
        assert (done.value.code, err) == (0, "")
        payload = json.loads(out)
        assert [c["mesh_axes"] for c in payload["collectives"]] == [axis], extra


def test_counts_that_disagree_with_the_dump_s_table_name_its_file(dump, capsys):
    module = _module_of(dump, "psum-permuted")
    table = module.compile_options.path  # type: ignore[union-attr]
    path = str(module.source)
    message = (f"the device table from {table} is 1 x 8 (replicas x partitions), but module "
               f"{module.name} is read with replica_count=1, num_partitions=4 (counts given "
               "override the dump's); leave the counts to the dump, or give a device "
               "assignment of 1 x 4 as well")
    for command in ("inspect", "check"):
        with pytest.raises(SystemExit) as done:
            main([command, path, "--num-partitions", "4"])
        out, err = capsys.readouterr()
        assert (done.value.code, out, err) == (2, "", f"meshtopo: error: {message}\n"), command
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(dump[0]), "--num-partitions", "4"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"meshtopo: error: the device table from {dump[0]}")
    with pytest.raises(mt.InvalidArgumentError) as caught:
        mt.hlo.load(path, num_partitions=4)
    assert str(caught.value) == message
    # A table given with the counts is used as given.
    given = mt.hlo.load(path, num_partitions=4, device_assignment=[[0, 1, 2, 3]])
    assert given.device_assignment_source == "given"


@pytest.mark.parametrize("mode", ["r", "rb"])
def test_an_open_dump_file_takes_the_table_beside_its_path(dump, mode: str):
    import io

    module = _module_of(dump, "psum-permuted")
    path = str(module.source)
    with open(path, mode) as handle:
        opened = mt.hlo.load(handle)
    assert (opened.device_assignment_source, opened.device_assignment.array.tolist()) == (
        "dump", [list(ORDERS["permuted"])])
    assert [c.device_groups() for c in opened.collectives] == [
        c.device_groups() for c in module.collectives]
    with open(path, mode) as handle:
        stream = mt.hlo.iter_collectives(handle)
        next(stream)
        assert (stream.device_assignment_source, stream.device_assignment) == (
            "dump", module.device_assignment)
        stream.close()
    # Text without a path behind it: XLA's default placement.
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert mt.hlo.load(io.StringIO(text)).device_assignment_source == "default"


def test_the_table_is_on_screen_under_the_header(dump, capsys, monkeypatch):
    # The device order JAX compiled on is the table; inspect, order and check print it.
    directory, _ = dump
    module = _module_of(dump, "psum-permuted")
    monkeypatch.chdir(directory)
    relative = str(Path(module.compile_options.path).relative_to(directory))
    table = "device table (1 replica x 8 partitions): {{3,0,6,5,7,4,1,2}}"
    for command in ("inspect", "order", "check"):
        with pytest.raises(SystemExit) as done:
            main([command, module.source])
        lines = capsys.readouterr().out.splitlines()
        assert done.value.code == 0, command
        [at] = [i for i, line in enumerate(lines) if table in line]
        assert f"device assignment from {relative}" in lines[at - 1], command


def test_passes_output_in_the_dump_layout_keeps_the_table(dump, capsys, tmp_path):
    module = _module_of(dump, "psum-permuted")
    output = tmp_path / "module_0001.permuted.after_passes.txt"
    with pytest.raises(SystemExit) as done:
        main(["passes", "--async-creator", module.source, "-o", str(output)])
    assert done.value.code == 0
    assert (tmp_path / "module_0001.permuted.after_passes" / "compile_options.textproto").is_file()
    back = mt.hlo.load(output)
    assert back.device_assignment_source == "dump"
    assert back.device_assignment.array.tolist() == [list(ORDERS["permuted"])]
    starts = [c for c in back.collectives if c.is_start]
    assert [c.device_groups() for c in starts] == [
        c.device_groups() for c in module.collectives]
    # Named otherwise, the output cannot carry the table: said on stderr.
    with pytest.raises(SystemExit) as done:
        main(["passes", module.source, "--to-sync", "-o", str(tmp_path / "out.hlo")])
    err = capsys.readouterr().err
    assert done.value.code == 0
    assert err.startswith(f"meshtopo: note: {tmp_path / 'out.hlo'} reads back with XLA's "
                          "default placement")


def test_stdin_takes_the_table_from_a_textproto(dump, capsys, monkeypatch):
    module = _module_of(dump, "psum-permuted")
    with open(module.source, encoding="utf-8") as handle, pytest.raises(SystemExit) as done:
        monkeypatch.setattr("sys.stdin", handle)
        main(["inspect", "-", "--json", "--device-assignment", module.compile_options.path])
    payload = json.loads(capsys.readouterr().out)
    assert done.value.code == 0
    assert payload["device_assignment"] == [list(ORDERS["permuted"])]
    with pytest.raises(SystemExit):
        main(["inspect", "--json", module.source])
    assert json.loads(capsys.readouterr().out)["collectives"][0]["device_groups"] == \
        payload["collectives"][0]["device_groups"]


def _json_answer(argv: list[str], capsys) -> dict:
    with pytest.raises(SystemExit):
        main(argv)
    return json.loads(capsys.readouterr().out)


def _without_sources(value: object) -> object:
    """``value`` with the fields naming where the input and its table came from left out."""
    if isinstance(value, dict):
        return {k: _without_sources(v) for k, v in value.items()
                if "source" not in k and k not in ("file", "name", "path", "table_file")}
    if isinstance(value, list):
        return [_without_sources(v) for v in value]
    return value


@pytest.mark.parametrize("command", ["check", "order", "neuron"])
def test_stdin_placed_by_a_textproto_reads_as_the_dump(dump, capsys, monkeypatch, command):
    """check, order and neuron on stdin with --device-assignment FILE.textproto answer as on
    the dump's own file, whose groups equal execution (test_loaded_dump_groups_equal_execution)."""
    module = _module_of(dump, "psum-permuted")
    by_path = _json_answer([command, "--json", module.source], capsys)
    with open(module.source, encoding="utf-8") as handle:
        monkeypatch.setattr("sys.stdin", handle)
        by_stdin = _json_answer([command, "-", "--json", "--device-assignment",
                                 module.compile_options.path], capsys)
    assert _without_sources(by_stdin) == _without_sources(by_path)
    if command != "order":  # order's answer names no table source
        assert '"device_assignment_source": "given"' in json.dumps(by_stdin)
    else:  # its cliques follow the table: XLA's default placement gives others
        with open(module.source, encoding="utf-8") as handle:
            monkeypatch.setattr("sys.stdin", handle)
            bare = _json_answer([command, "-", "--json"], capsys)
        assert _without_sources(bare) != _without_sources(by_path)

"""Dump directories as ``--xla_dump_to`` writes them: ``module_files`` and the commands that
take several files and directories (one section each)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

import meshtopo as mt
from cli.inspect._dumps import FLATTENED_2X2, MIXED_2X2
from meshtopo.cli import main

from ._xla_dump import dump_program

PROGRAM = """
import json, jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
def total(x):
    return x.sum(0)
def psum_model(x):
    return jax.lax.psum(x, "model")
f = jax.jit(total, in_shardings=NamedSharding(mesh, P("data", "model")))
f(jnp.ones((8, 8))).block_until_ready()
psum = jax.jit(jax.shard_map(psum_model, mesh=mesh, in_specs=P(("data", "model")),
                             out_specs=P(("data", "model"))))
# Each device holds the position (in mesh order) of its shard; the psum sums its group.
out = np.asarray(psum(jnp.arange(8.0)))
print(json.dumps(out.tolist()))
"""


# An issued collective as XLA prints it in a module after optimizations (its -done excluded).
COLLECTIVE_LINE = re.compile(
    r"^\s*(?:ROOT )?%?\S+ = .*?\b(?:all-reduce|all-gather|reduce-scatter|all-to-all|"
    r"collective-permute|collective-broadcast)(?:-start)?\(", re.MULTILINE)


def issued(path: str) -> int:
    """The collectives XLA's text of ``path`` issues, counted on the text itself."""
    return len(COLLECTIVE_LINE.findall(Path(path).read_text()))


def label(path: str) -> str:
    """``jit_total (0006)`` for ``module_0006.jit_total.cpu_after_optimizations.txt``."""
    number, name = os.path.basename(path).split(".")[0:2]
    return f"{name} ({number.removeprefix('module_')})"


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real dump: one jitted program on a 2x4 mesh, compiled in a child process."""
    pytest.importorskip("jax")
    directory = tmp_path_factory.mktemp("dump")
    (directory / "psum.json").write_text(dump_program(directory, PROGRAM))
    return directory


@pytest.mark.jax
def test_module_files_of_a_real_dump(dump_dir: Path) -> None:
    files = mt.hlo.module_files(dump_dir)
    names = [os.path.basename(f) for f in files]
    assert names and all(n.startswith("module_") and n.endswith("after_optimizations.txt")
                         for n in names)
    assert names == sorted(names)
    every = sorted(os.listdir(dump_dir))
    assert any("before_optimizations" in n for n in every)
    assert any("after_optimizations-buffer-assignment" in n for n in every)
    reduced = [f for f in files if ".jit_total." in f]
    assert len(reduced) == 1
    module = mt.hlo.load(reduced[0])
    assert module.num_partitions == 8
    assert [c.opcode for c in module.collectives] == ["all-reduce"]


def test_module_files_of_a_file_and_of_an_empty_directory(tmp_path: Path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(FLATTENED_2X2)
    assert mt.hlo.module_files(path) == [str(path)]
    assert mt.hlo.module_files("-") == ["-"]
    with pytest.raises(mt.InvalidArgumentError, match="no module after optimizations found"):
        mt.hlo.module_files(tmp_path)


@pytest.mark.jax
@pytest.mark.jax
def test_inspect_folds_the_modules_without_collectives(
        dump_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = mt.hlo.module_files(dump_dir)
    holding = [path for path in files if issued(path)]
    without = [path for path in files if not issued(path)]
    assert len(holding) == 2 and len(without) > 2
    with pytest.raises(SystemExit) as exit_info:
        main(["inspect", str(dump_dir)])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert [line.split(": ")[0] for line in out.splitlines() if line.startswith(str(dump_dir))
            ] == holding
    names = ", ".join(label(path) for path in without[:6]) + (", ..." if len(without) > 6 else "")
    assert out.splitlines()[-1] == (
        f"{len(without)} more modules without collectives: {names} (--all shows them)")
    with pytest.raises(SystemExit):
        main(["inspect", "--all", str(dump_dir)])
    out = capsys.readouterr().out
    assert [line.split(": ")[0] for line in out.splitlines() if line.startswith(str(dump_dir))
            ] == files
    assert "1 collective on 1 replica x 8 partitions" in out


def test_check_and_inspect_take_several_files(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "a.hlo", tmp_path / "b.hlo"
    first.write_text(FLATTENED_2X2)
    second.write_text(MIXED_2X2)
    with pytest.raises(SystemExit) as exit_info:
        main(["inspect", "--json", str(first), str(second)])
    assert exit_info.value.code == 0
    documents = json.loads(capsys.readouterr().out)
    assert [d["source"] for d in documents["modules"]] == [str(first), str(second)]
    assert [d["collective_count"] for d in documents["modules"]] == [1, 5]
    with pytest.raises(SystemExit) as exit_info:
        main(["check", str(first), str(second)])
    out = capsys.readouterr().out
    assert f"{first}: 1 collective verified, no findings" in out
    assert f"{second}: " in out


@pytest.mark.jax
def test_mesh_axes_of_a_real_dump_agree_with_execution(
        dump_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    measured = json.loads((dump_dir / "psum.json").read_text())
    # Positions whose psum results agree were reduced together: the measured groups.
    by_sum: dict[float, list[int]] = {}
    for position, value in enumerate(measured):
        by_sum.setdefault(value, []).append(position)
    groups = sorted(by_sum.values())
    assert groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    (path,) = [f for f in mt.hlo.module_files(dump_dir) if ".jit_psum_model." in f]
    module = mt.hlo.load(path)
    (collective,) = [c for c in module.collectives if c.opcode == "all-reduce"]
    assert sorted(map(sorted, collective.device_groups())) == groups
    with pytest.raises(SystemExit):
        main(["inspect", "--json", path])
    payload = json.loads(capsys.readouterr().out)
    # shard_map writes explicit groups: no mesh in the module, so no axes without --mesh.
    assert (payload["mesh"], payload["collectives"][0]["mesh_axes"]) == (None, None)
    with pytest.raises(SystemExit):
        main(["inspect", "--json", "--mesh", "data=2,model=4", path])
    payload = json.loads(capsys.readouterr().out)
    assert (payload["mesh_source"], payload["collectives"][0]["mesh_axes"]) == ("--mesh", "model")


@pytest.mark.jax
def test_mesh_axes_written_by_jax_and_named_by_mesh(
        dump_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # x.sum(0) of x sharded P("data", "model") reduces over "data"; JAX writes the groups as a
    # mesh-axes list on its own axis names.
    (path,) = [f for f in mt.hlo.module_files(dump_dir) if ".jit_total." in f]
    with pytest.raises(SystemExit):
        main(["inspect", "--json", path])
    payload = json.loads(capsys.readouterr().out)
    assert payload["mesh"] == "mesh['axis_0'=2,'axis_1'=4]"
    assert payload["mesh_source"] == "module"
    assert payload["collectives"][0]["mesh_axes"] == "axis_0"
    assert payload["collectives"][0]["op_name"] == "jit(total)/reduce_sum"
    with pytest.raises(SystemExit):
        main(["inspect", "--json", "--mesh", "data=2,model=4", path])
    assert json.loads(capsys.readouterr().out)["collectives"][0]["mesh_axes"] == "data"


@pytest.mark.jax
def test_check_and_neuron_read_a_dump_directory(dump_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    files = mt.hlo.module_files(dump_dir)
    holding = [path for path in files if issued(path)]
    without = [path for path in files if not issued(path)]
    for command in ("check", "neuron"):
        with pytest.raises(SystemExit) as exit_info:
            main([command, str(dump_dir)])
        out = capsys.readouterr().out
        assert exit_info.value.code == 0, command  # XLA compiled every module: no findings
        assert [line.split(": ")[0] for line in out.splitlines()
                if line.startswith(str(dump_dir))] == holding, command
        assert out.splitlines()[-1].startswith(
            f"{len(without)} more modules without collectives: {label(without[0])}, "), command
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--all", str(dump_dir)])
    out = capsys.readouterr().out
    assert [line.split(": ")[0] for line in out.splitlines()] == files
    with pytest.raises(SystemExit) as exit_info:
        main(["neuron", "--json", str(dump_dir)])
    payload = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0 and payload["ok"] is True
    assert [m["file"] for m in payload["modules"]] == files


def _one_module_dir(dump_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the dump holding only its shard_map psum module (with its own folder)."""
    [psum] = [Path(f) for f in mt.hlo.module_files(dump_dir) if ".jit_psum_model." in f]
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(psum, one / psum.name)
    folder = psum.name.split(".cpu_after_optimizations")[0]
    shutil.copytree(dump_dir / folder, one / folder)
    return one, one / psum.name


@pytest.mark.jax
def test_load_and_iter_collectives_take_a_directory_of_one_module(
        dump_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, file = _one_module_dir(dump_dir, tmp_path)
    module, direct = mt.hlo.load(one), mt.hlo.load(file)
    assert module.source == direct.source == str(file)
    assert module.device_assignment_source == direct.device_assignment_source == "dump"
    assert module.compile_options is not None
    assert module.compile_options.path == str(
        one / file.name.split(".cpu_after_optimizations")[0] / "compile_options.textproto")
    stream = mt.hlo.iter_collectives(one, progress=False)
    assert [c.device_groups() for c in stream] == [c.device_groups() for c in direct.collectives]
    assert stream.device_assignment_source == "dump"
    for command in (["order"], ["passes", "--to-sync"], ["replay", "--json"]):
        answers = []
        for source in (one, file):
            with pytest.raises(SystemExit) as done:
                main([*command, str(source)])
            out, err = capsys.readouterr()
            # The same report; order names the module by the argument it was given.
            answers.append((done.value.code, out.replace(str(file), str(one)), err))
        assert answers[0][0] == 0, (command, answers[0])
        if command[0] == "replay":  # replay prints measured times
            assert json.loads(answers[0][1])["file"] == json.loads(answers[1][1])["file"]
        else:
            assert answers[0] == answers[1], command


@pytest.mark.jax
def test_a_directory_of_several_modules_is_refused_by_load(dump_dir: Path) -> None:
    files = [os.path.basename(f) for f in mt.hlo.module_files(dump_dir)]
    assert len(files) > 3  # the programs and the small ones JAX compiles around them
    expected = (f"{dump_dir} holds {len(files)} modules after optimizations "
                f"({', '.join(files[:3])}, ...); this reads one module: name its file")
    with pytest.raises(mt.InvalidArgumentError) as loaded:
        mt.hlo.load(dump_dir)
    with pytest.raises(mt.InvalidArgumentError) as streamed:
        mt.hlo.iter_collectives(dump_dir)
    assert str(loaded.value) == str(streamed.value) == expected


@pytest.mark.jax
def test_what_reads_one_module_lists_the_modules_with_collectives(
        dump_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    holding = sorted(((issued(path), path) for path in mt.hlo.module_files(dump_dir)
                      if issued(path)), key=lambda counted: -counted[0])
    listed = ", ".join(f"{label(path)}: {count} collective{'s' * (count != 1)}"
                       for count, path in holding)
    expected = (f"{dump_dir} holds 2 modules with collectives ({listed}); this reads one "
                "module: pick it with --module NAME|NUMBER")
    for command in (["order"], ["passes", "--to-sync"], ["replay"], ["run"],
                    ["inspect", "--html", str(dump_dir / "r.html")]):
        with pytest.raises(SystemExit) as done:
            main([*command, str(dump_dir)])
        out, err = capsys.readouterr()
        assert (done.value.code, out, err) == (2, "", f"meshtopo: error: {expected}\n"), command


@pytest.mark.jax
def test_module_picks_one_module_by_name_or_number(
        dump_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [psum] = [f for f in mt.hlo.module_files(dump_dir) if ".jit_psum_model." in f]
    number = os.path.basename(psum).split(".")[0].removeprefix("module_")
    for command in (["order"], ["passes", "--to-sync"], ["check"], ["inspect", "--json"],
                    ["neuron", "--json"]):
        answers = []
        for arguments in ([psum], [str(dump_dir), "--module", "jit_psum_model"],
                          [str(dump_dir), "--module", str(int(number))]):
            with pytest.raises(SystemExit) as done:
                main([*command, *arguments])
            answers.append((done.value.code, *capsys.readouterr()))
        assert answers[0][0] == 0 and answers[0] == answers[1] == answers[2], command
    with pytest.raises(SystemExit) as done:
        main(["order", str(dump_dir), "--module", "jit_nothing"])
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert err.startswith(f"meshtopo: error: --module jit_nothing: no such module after "
                          f"optimizations in {dump_dir}; it holds ")


def test_a_directory_of_many_modules_names_the_first_few(tmp_path: Path) -> None:
    for n in range(5):
        (tmp_path / f"module_000{n}.jit_f{n}.cpu_after_optimizations.txt").write_text("")
    with pytest.raises(mt.InvalidArgumentError) as raised:
        mt.hlo.load(tmp_path)
    assert str(raised.value) == (
        f"{tmp_path} holds 5 modules after optimizations "
        "(module_0000.jit_f0.cpu_after_optimizations.txt, "
        "module_0001.jit_f1.cpu_after_optimizations.txt, "
        "module_0002.jit_f2.cpu_after_optimizations.txt, ...); this reads one module: "
        "name its file")

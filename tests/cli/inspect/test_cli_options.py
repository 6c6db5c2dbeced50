"""The command line as a person meets it: bare help, option help, --device-limit everywhere,
and inspect's mesh axes, op_name, --full and singular/plural."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

import meshtopo as mt
from meshtopo.cli import main
from meshtopo.cli._main import cli

from ._dumps import FLATTENED_2X2, module


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def test_bare_meshtopo_prints_the_formatted_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert (code, err) == (0, "")
    assert out.startswith("Usage: meshtopo [OPTIONS] COMMAND [ARGS]...\n")
    assert "\nCommands:\n" in out and "  inspect " in out


def test_every_option_has_help_without_rest_markup() -> None:
    for name, command in cli.commands.items():
        assert "``" not in (command.help or ""), name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.opts}"
                assert "``" not in param.help, f"{name} {param.opts}"


@pytest.mark.parametrize("args", [
    ["expand", "{{0,1,2,3}}"],
    ["groups", "--mesh", "data=2,model=2", "--over", "data"],
    ["devices", "--replicas", "4", "--groups", "{{0,1,2,3}}"],
    ["inspect", "FILE"], ["check", "FILE"], ["neuron", "FILE"],
])
def test_device_limit_on_every_command_that_reads_input(
        args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(module("  ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1,2,3}}, "
                           "to_apply=%add\n", replica_count=4))
    args = [str(path) if a == "FILE" else a for a in args]
    before = mt.get_device_limit()
    code, out, err = run(capsys, *args, "--device-limit", "2")
    assert code == 2 and out == ""
    assert err.startswith("meshtopo: error: ") and err.count("\n") == 1
    assert "more than the device limit of 2; raise it with --device-limit N" in err
    assert mt.get_device_limit() == before
    code, _, err = run(capsys, *args, "--device-limit", "4")
    assert err == "" and code in (0, 1)


MESH_AXES = module(
    "  %ar = f32[8]{0} all-reduce(%p), channel_id=1, "
    "replica_groups=mesh['data'=2,'model'=2] {'model'}, use_global_device_ids=true, "
    'to_apply=%add, metadata={op_name="jit(f)/psum" source_file="f.py"}\n'
    "  ROOT %ag = f32[16]{0} all-gather(%ar), channel_id=2, replica_groups={{0,2},{1,3}}, "
    "dimensions={0}, use_global_device_ids=true\n",
    num_partitions=4)


def test_mesh_axes_from_the_module_and_op_name(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(MESH_AXES)
    code, out, err = run(capsys, "inspect", str(path), "--json")
    assert (code, err) == (0, "")
    payload = json.loads(out)
    assert (payload["mesh"], payload["mesh_source"]) == ("mesh['data'=2,'model'=2]", "module")
    got = [(c["name"], c["mesh_axes"], c["op_name"]) for c in payload["collectives"]]
    assert got == [("ar", "model", "jit(f)/psum"), ("ag", "data", None)]
    code, out, _ = run(capsys, "inspect", str(path))
    lines = out.splitlines()
    assert "mesh axes" in lines[1] and "op_name" in lines[1]
    assert re.search(r" 2x2 +model +32 B", lines[2]) and "jit(f)/psum" in lines[2]


def test_mesh_option_names_axes_of_explicit_groups(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(FLATTENED_2X2)
    code, out, _ = run(capsys, "inspect", str(path), "--mesh", "x=2,y=2", "--json")
    payload = json.loads(out)
    assert (code, payload["mesh_source"]) == (0, "--mesh")
    assert payload["collectives"][0]["mesh_axes"] == "y"
    # The device groups are {{0,2},{1,3}} (XLA's default placement): with --mesh-devices the
    # mesh holds device ids, and its axes are those of the device groups.
    assert payload["collectives"][0]["device_groups"] == [[0, 2], [1, 3]]
    for devices, axes in (("0,2,1,3", "y"), ("0,1,2,3", "x")):
        code, out, _ = run(capsys, "inspect", str(path), "--mesh", "x=2,y=2", "--mesh-devices",
                           devices, "--json")
        assert (code, json.loads(out)["collectives"][0]["mesh_axes"]) == (0, axes)


def test_full_prints_whole_lists_and_singulars(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    groups = ",".join(f"{{{2 * i},{2 * i + 1}}}" for i in range(8))
    path = tmp_path / "m.hlo"
    path.write_text(module(f"  ROOT %ar = f32[8]{{0}} all-reduce(%p), replica_groups={{{groups}}}, "
                           "to_apply=%add\n", replica_count=16))
    _, out, _ = run(capsys, "inspect", str(path))
    assert "more)" in out and "1 collective on 16 replicas x 1 partition," in out
    _, out, _ = run(capsys, "inspect", str(path), "--full")
    assert "{" + groups + "}" in out and "more)" not in out


def test_usage_errors_of_the_new_options(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(FLATTENED_2X2)
    code, out, err = run(capsys, "inspect", str(path), str(path), "--html",
                         str(tmp_path / "r.html"))
    assert (code, out) == (2, "")
    assert err == "meshtopo: error: --html writes one module's report, got 2 FILEs\n"
    code, _, err = run(capsys, "inspect", str(path), "--mesh-devices", "0,1,2,3")
    assert (code, err) == (2, "meshtopo: error: --mesh-devices needs --mesh\n")
    code, _, err = run(capsys, "inspect", str(path), "--mesh", "x=3")
    assert (code, err) == (2, f"meshtopo: error: --mesh mesh['x'=3] has 3 devices, but {path} "
                              "has 2 x 2 (replicas x partitions); a mesh must span the "
                              "replicas, the partitions or both\n")
    code, _, err = run(capsys, "inspect", str(tmp_path))
    assert code == 2 and "no module after optimizations found" in err
    code, _, err = run(capsys, "inspect", str(path), "--mesh", "x=1")
    assert (code, err) == (2, f"meshtopo: error: --mesh mesh['x'=1] has 1 device, but {path} "
                              "has 2 x 2 (replicas x partitions); a mesh must span the "
                              "replicas, the partitions or both\n")


def test_wire_bytes_per_device_by_opcode(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from ._dumps import MIXED_2X2, REPLICAS_8

    got = {}
    for text in (MIXED_2X2, REPLICAS_8):
        path = tmp_path / "m.hlo"
        path.write_text(text)
        _, out, _ = run(capsys, "inspect", str(path), "--json")
        for c in json.loads(out)["collectives"]:
            got[c["name"]] = (c["opcode"], c["group_size"], c["bytes"], c["wire_bytes"])
    assert got == {
        "ar": ("all-reduce", 4, 32, 48),            # 2 (n-1)/n x 32, n = 4 (REPLICAS_8)
        "ag": ("all-gather", 4, 64, 48),            # (n-1)/n x the 64-byte result
        "cp": ("collective-permute", 2, 32, 32),    # a source sends its buffer once
        "rs": ("reduce-scatter", 2, 32, 16),        # (n-1)/n x the 32-byte operand
        "ar2": ("all-reduce", 2, 32, 32),           # 2 (n-1)/n x 32, n = 2
        "ars": ("all-reduce-start", 8, 32, 56),     # the start carries the traffic
        "ard": ("all-reduce-done", 8, 32, 0),
    }

"""Start-up: ``import meshtopo`` and each command import only the layers they use.

Each case runs in a fresh interpreter (bounded by a timeout) and lists the meshtopo layers in
``sys.modules`` afterwards; a command several tests look at runs once.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

import meshtopo as mt
from meshtopo.cli._commands import COMMANDS
from meshtopo.cli._main import cli

SOURCE = str(Path(mt.__file__).resolve().parent.parent)
LAYERS = ("hlo", "order", "runtime", "topology", "neuron", "explore", "jax")
EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "data_model_2x4.hlo")


@functools.cache
def _modules_after(code: str) -> tuple[str, ...]:
    """The modules a fresh interpreter holds after running ``code`` (run once per ``code``)."""
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    environment = {**os.environ, "PYTHONPATH": SOURCE}
    done = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True,
                          text=True, timeout=120, check=True)
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


def _layers_after(code: str) -> list[str]:
    """The meshtopo subpackages a fresh interpreter holds after running ``code``."""
    return sorted({name.split(".")[1] for name in _modules_after(code)
                   if name.startswith("meshtopo.") and name.split(".")[1] in LAYERS})


def _command(arguments: list[str]) -> str:
    return (f"from meshtopo.cli import main\ntry:\n    main({arguments!r})\n"
            f"except SystemExit:\n    pass")


def test_import_meshtopo_loads_no_subpackage() -> None:
    assert _layers_after("import meshtopo") == []


def test_subpackages_load_on_first_use() -> None:
    assert _layers_after("import meshtopo as mt\nmt.order.analyze") == ["hlo", "order"]


@pytest.mark.parametrize(("arguments", "layers"), [
    (["--help"], []),
    (["expand", "[4,2]<=[2,4]T(1,0)"], []),
    (["groups", "--mesh", "data=2,model=4", "--over", "data"], []),
    (["devices", "--replicas", "2", "--groups", "{{0,1}}"], ["hlo"]),
    (["inspect", EXAMPLE], ["hlo"]),
    (["plan", "--mesh", "data=2,model=4", "--cluster", "h100-8x:1"], ["topology"]),
], ids=lambda value: value[0] if isinstance(value, list) and value else str(value))
def test_a_command_imports_only_its_layers(arguments: list[str], layers: list[str]) -> None:
    assert _layers_after(_command(arguments)) == layers


def test_public_names_and_dir_include_the_lazy_subpackages() -> None:
    assert {"hlo", "order", "runtime", "topology", "neuron", "jax"} <= set(dir(mt))
    assert mt.IotaTileAssignment.parse("[2,2]<=[4]").to_array().tolist() == [[0, 1], [2, 3]]
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = mt.no_such_name


def test_every_listed_command_loads_under_its_name() -> None:
    context = click.Context(cli, info_name="meshtopo")
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert command is not None and command.name == name


@pytest.mark.parametrize(("arguments", "drawn"), [
    (["--help"], False),
    (["expand", "[4,2]<=[2,4]T(1,0)"], False),
    (["expand", "{{0,4},{1,5},{2,6},{3,7}}"], False),
    (["groups", "--mesh", "data=2,model=4", "--over", "data"], False),
    (["plan", "--mesh", "data=2,model=4", "--cluster", "h100-8x:1"], False),
    (["devices", "--replicas", "2", "--groups", "{{0,1}}"], True),
], ids=lambda value: " ".join(value[:2]) if isinstance(value, list) else str(value))
def test_rich_loads_only_to_draw(arguments: list[str], drawn: bool) -> None:
    # expand, groups and plan print plain lines; devices draws its grid as a rich table.
    modules = _modules_after(_command(arguments))
    assert ("rich" in modules) is drawn


def test_help_imports_no_command() -> None:
    modules = _modules_after(_command(["--help"]))
    loaded = {name for name in modules if name.startswith("meshtopo.cli.")}
    assert loaded == {"meshtopo.cli._main", "meshtopo.cli._commands"}
    assert "shutil" not in modules  # click's formatter is given the width

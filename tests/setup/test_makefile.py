"""Set-up as the README says: what ``make demo`` and ``make test`` install, the install line
from a clone, and pytest reporting why tests are skipped."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def planned(target: str) -> list[str]:
    """The commands ``make`` would run for ``target`` from scratch (``-n -B``)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.splitlines()


def test_demo_installs_meshtopo_alone() -> None:
    installs = [line for line in planned("demo") if "pip install" in line]
    assert installs[-1].endswith("pip install --quiet -e .")
    assert not any("[" in line for line in installs)


def test_test_installs_every_extra() -> None:
    installs = [line for line in planned("test") if "pip install" in line]
    assert any(line.endswith("pip install --quiet -e '.[test]'") for line in installs)


def test_readme_install_line_names_an_extra_that_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e '.[jax]'" in readme
    assert "pip install 'meshtopo[jax]'" not in readme  # meshtopo is on no package index
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "jax" in project["optional-dependencies"]


def test_pytest_reports_skip_reasons() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    assert "-rs" in options["ini_options"]["addopts"].split()

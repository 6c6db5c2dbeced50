"""The import layering holds: the contracts in pyproject.toml (``lint-imports``), and no two
modules import each other, not even inside a function or for type checkers only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grimp

import meshtopo

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# The directory holding the meshtopo these tests import, which both checks read.
SOURCE = Path(meshtopo.__file__).resolve().parents[1]


def _environment() -> dict[str, str]:
    """This interpreter's environment with ``SOURCE`` first on the path."""
    path = os.pathsep.join(filter(None, [str(SOURCE), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def test_lower_layers_import_no_higher_layer() -> None:
    result = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, env=_environment(),
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def mutual_imports(package: str) -> list[tuple[str, str]]:
    """Each pair of modules of ``package`` that import each other (sorted)."""
    graph = grimp.build_graph(package)
    pairs = {
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if module < imported and module in graph.find_modules_directly_imported_by(imported)
    }
    return sorted(pairs)


def test_no_two_modules_import_each_other() -> None:
    assert mutual_imports("meshtopo") == []

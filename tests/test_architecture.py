"""docs/architecture.md lists each package's public names: the names its ``__init__``
re-exports explicitly (``from ._x import Name as Name``), no more and no fewer, and each of
them is there to import."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "meshtopo"
PAGE = ROOT / "docs" / "architecture.md"
# A package's heading on the page, then the first ``text`` block after it.
LISTED = re.compile(r"^### `(meshtopo[\w.]*)`\n.*?^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.timeout(60)


def listed() -> dict[str, set[str]]:
    """Package name -> the names the page lists for it."""
    return {name: set(block.split()) for name, block in LISTED.findall(PAGE.read_text())}


def source_of(package: str) -> Path:
    """The file that defines ``package`` (its ``__init__.py``, or the module itself)."""
    path = PACKAGE.joinpath(*package.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def reexported(package: str) -> set[str]:
    """The names ``package``'s source re-exports as ``from ... import name as name``."""
    tree = ast.parse(source_of(package).read_text())
    return {alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
            for alias in node.names if alias.asname == alias.name}


def test_every_package_with_public_names_is_listed() -> None:
    packages = {
        ".".join(("meshtopo", *path.relative_to(PACKAGE).with_suffix("").parts[:-1]))
        if path.name == "__init__.py" else f"meshtopo.{path.stem}"
        for path in PACKAGE.rglob("*.py")
        if path.name == "__init__.py" or not path.name.startswith("_")
    }
    public = {package for package in packages if "._" not in package and reexported(package)}
    assert public == set(listed())


@pytest.mark.parametrize("package", sorted(listed()))
def test_the_page_lists_the_public_names(package: str) -> None:
    assert listed()[package] == reexported(package)
    module = importlib.import_module(package)
    assert [name for name in sorted(listed()[package]) if not hasattr(module, name)] == []

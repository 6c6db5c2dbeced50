"""The HLO reader compiled by mypyc from its source, or the source itself.

``setup.py`` compiles ``_reader.py`` with mypyc where a C compiler and mypyc are at hand,
and writes beside the compiled module a stamp: the SHA-256 of the source it was compiled
from. The compiled reader is the same code, run without the interpreter's dispatch: it reads
every text the same way, faster.

Python imports a compiled module in preference to its source. The package imports this
module before anything imports the reader; it has the source read instead when
``MESHTOPO_PURE_PYTHON`` chooses the stand-ins, or when the stamp is not the source's hash
(the source was edited since the build: reading the old one would answer for code that is
gone). ``READER`` says which is in use: ``"compiled"`` or ``"Python"``.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from .._pure_python import PURE_PYTHON

_NAME = "meshtopo.hlo._reader"
_SOURCE = Path(__file__).with_name("_reader.py")
_STAMP = _SOURCE.with_name("_reader.sha256")


class _ReadSource:
    """Finds the reader's source for ``import``, ahead of its compiled module."""

    @staticmethod
    def find_spec(name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_file_location(name, _SOURCE) if name == _NAME else None


def _compiled() -> Path | None:
    """The compiled reader beside the source, if one was built."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        found = _SOURCE.with_name("_reader" + suffix)
        if found.exists():
            return found
    return None


def _stale(compiled: Path) -> bool:
    """True when ``compiled`` was not compiled from the source beside it (an install without
    the source is taken as built)."""
    try:
        source = _SOURCE.read_bytes()
    except OSError:
        return False
    try:
        stamp = _STAMP.read_text().strip()
    except OSError:
        return True
    return stamp != hashlib.sha256(source).hexdigest()


def _choose() -> str:
    compiled = _compiled()
    if compiled is None:
        return "Python"
    if PURE_PYTHON:
        sys.meta_path.insert(0, _ReadSource())
        return "Python"
    if _stale(compiled):
        warnings.warn(f"{compiled} was compiled from another {_SOURCE.name}: meshtopo reads "
                      "with the source until it is built again (pip install -e .)",
                      RuntimeWarning, stacklevel=2)
        sys.meta_path.insert(0, _ReadSource())
        return "Python"
    return "compiled"


READER: str = _choose()

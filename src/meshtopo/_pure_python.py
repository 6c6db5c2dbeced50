"""Whether the compiled parts may be used.

Each compiled part (the HLO tokenizer and scanners, the Flight Recorder decoder, the trace
scanner) is optional and has a pure-Python stand-in with the same answers. Setting
``MESHTOPO_PURE_PYTHON`` to anything but ``""`` or ``"0"`` before the first import chooses
the stand-ins on purpose (the test suite reads with both); ``PURE_PYTHON`` says so, and
``compiled`` gives a compiled function, or None where the stand-in reads. The Flight Recorder
decoder also looks when a read starts (``chosen``), so that setting the variable later
switches it too (the tests compare the two in one process).
"""

from __future__ import annotations

import importlib
import os
from typing import Any


def chosen() -> bool:
    """True when ``MESHTOPO_PURE_PYTHON`` chooses the stand-ins now (read at each call)."""
    return os.environ.get("MESHTOPO_PURE_PYTHON", "") not in ("", "0")


PURE_PYTHON: bool = chosen()


def compiled(module: str, name: str) -> Any | None:
    """The function ``name`` of the compiled module ``module`` (its full name), or None when
    ``PURE_PYTHON`` is set or the module was not built.

    >>> compiled("meshtopo.order._no_such_scanner", "scan") is None
    True
    """
    if PURE_PYTHON:
        return None
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        return None

"""The compiled tokenizer and scanners, or their pure-Python stand-ins where none was built.

``pip install`` builds three C extensions when a C compiler is at hand; ``setup.py`` marks
them optional, so an install without one succeeds and reads every text the same way, more
slowly. Setting ``MESHTOPO_PURE_PYTHON=1`` before the first import chooses the stand-ins on
purpose (the test suite reads with both). What each stand-in does:

- the tokenizer (``_lexer``): ``lex`` is ``_pure_lexer.lex``, built from the same token
  table (``_tokens.py``), with the same tokens;

- explicit replica groups (``_explicit_scan``): ``groups_end`` and ``groups_arrays`` check
  and convert XLA's printed form ``{{0,1},{2,3}}`` with one regular expression of that same
  form (``_explicit_form.h`` defines it for the compiled one);
- lines (``_line_scan``): ``scan_lines`` scans no line and ``scan_head`` no computation
  head, so the general reader reads every instruction and head (the fast paths only decide
  how quickly a line is read).

``TOKENIZER`` says which tokenizer is in use (``"native"`` or ``"pure-Python"``), ``SCANNERS``
which scanners (``"native"`` or ``"pure Python"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .._pure_python import PURE_PYTHON

if TYPE_CHECKING:
    from ._line_scan import ScannedHead, ScannedLine


# XLA's printed explicit form: groups of 1 to 18 ASCII digits joined by ',', groups joined
# by '},{', no white space (the form of _explicit_form.h).
_NUMBER = r"[0-9]{1,18}(?![0-9])"
_GROUP = r"\{" + _NUMBER + r"(?:," + _NUMBER + r")*\}"
_EXPLICIT = re.compile(r"\{" + _GROUP + r"(?:," + _GROUP + r")*\}")


def _groups_end(text: str, pos: int, /) -> int:
    """The offset just past the explicit groups in XLA's printed form at ``text[pos]``, or
    -1 when what starts there is not in that form."""
    if not 0 <= pos <= len(text):
        return -1
    found = _EXPLICIT.match(text, pos)
    return -1 if found is None else found.end()


def _groups_arrays(text: str, pos: int, end: int, /) -> tuple[bytearray, bytearray] | None:
    """Every id and each group's size of ``text[pos:end]``, as native int64 bytes, when it is
    in XLA's printed explicit form; else None."""
    if not 0 <= pos <= end <= len(text) or _groups_end(text, pos) != end:
        return None
    groups = text[pos + 2:end - 2].split("},{")
    ids = np.array(",".join(groups).split(","), dtype=np.int64)
    sizes = np.array([group.count(",") + 1 for group in groups], dtype=np.int64)
    return bytearray(ids.tobytes()), bytearray(sizes.tobytes())


def _scan_no_lines(text: str, pos: int, most: int, /) -> list[ScannedLine]:
    """Scans no line: the general reader reads them all."""
    return []


def _scan_no_head(text: str, pos: int, /) -> ScannedHead | None:
    """Scans no computation head: the general reader reads them all."""
    return None


lex: Callable[[str, int, int], tuple[bytes, bytes, bytes]]
groups_end: Callable[[str, int], int]
groups_arrays: Callable[[str, int, int], tuple[bytearray, bytearray] | None]
scan_lines: Callable[[str, int, int], list[ScannedLine]]
scan_head: Callable[[str, int], ScannedHead | None]

try:
    if PURE_PYTHON:
        raise ImportError("MESHTOPO_PURE_PYTHON is set")
    from ._lexer import lex
    TOKENIZER = "native"
except ImportError:
    from ._pure_lexer import lex as _pure_lex
    lex = _pure_lex
    TOKENIZER = "pure-Python"

try:
    if PURE_PYTHON:
        raise ImportError("MESHTOPO_PURE_PYTHON is set")
    from ._explicit_scan import groups_arrays, groups_end
    from ._line_scan import scan_head, scan_lines
    SCANNERS = "native"
except ImportError:
    groups_end, groups_arrays = _groups_end, _groups_arrays
    scan_lines, scan_head = _scan_no_lines, _scan_no_head
    SCANNERS = "pure Python"

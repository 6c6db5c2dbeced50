"""The ``meshtopo`` command line: one click group, one module or subpackage per family of commands
(``_inspect``, ``_plan``, ``_order`` and ``_run`` are subpackages: a command and its helpers).

Exit codes: 0 success, 1 findings (``check``), 2 bad input or usage, with one line on stderr.
"""

from __future__ import annotations

from ._main import main as main

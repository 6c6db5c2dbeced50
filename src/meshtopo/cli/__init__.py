"""The ``meshtopo`` command line: one click group, one module per family of commands.

Exit codes: 0 success, 1 findings (``check``), 2 bad input or usage, with one line on stderr.
"""

from __future__ import annotations

from ._main import main as main

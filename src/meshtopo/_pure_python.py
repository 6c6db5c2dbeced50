"""Whether the compiled parts may be used.

Each compiled part (the HLO tokenizer and scanners, the Flight Recorder decoder, the trace
scanner) is optional and has a pure-Python stand-in with the same answers. Setting
``MESHTOPO_PURE_PYTHON`` to anything but ``""`` or ``"0"`` before the first import chooses
the stand-ins on purpose (the test suite reads with both); ``PURE_PYTHON`` says so.
"""

from __future__ import annotations

import os

PURE_PYTHON: bool = os.environ.get("MESHTOPO_PURE_PYTHON", "") not in ("", "0")

"""The README's shell examples run as written, in a scratch directory holding the clone's
``examples/`` and ``tests/`` (what they name), each line bounded by a timeout.

``make`` lines are the Makefile's (``test_makefile``); ``# ... exit 1`` after a command says it
exits 1 (findings), every other line exits 0.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SOURCE = ROOT / "src"
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def shell_lines() -> list[str]:
    """Every command of the README's ``sh`` blocks (a line ending in ``&`` joined to the next,
    which it runs beside), ``make`` lines left out."""
    commands: list[str] = []
    for block in BLOCK.findall(README.read_text(encoding="utf-8")):
        pending = ""
        for line in (line.strip() for line in block.splitlines()):
            if not line or line.startswith("make "):
                continue
            if line.endswith("&"):
                pending += line + " "
                continue
            commands.append(pending + line)
            pending = ""
    return commands


def _run(command: str, cwd: Path, environment: dict[str, str]) -> tuple[int, str]:
    """(exit code, stderr) of ``bash -c command`` in its own process group, which is killed
    and reaped whatever happens."""
    process = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        _, err = process.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return process.returncode, err


def test_every_named_file_is_shipped() -> None:
    for line in shell_lines():
        for word in line.split("#")[0].split():
            path = word.split("@")[0]
            if path.startswith(("examples/", "tests/")):
                assert (ROOT / path).exists(), (line, path)


@pytest.mark.timeout(600)
def test_the_shell_examples_run(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    meshtopo = f"{sys.executable} -m meshtopo"
    environment = {**os.environ, "PYTHONPATH": str(SOURCE)}
    for line in shell_lines():
        command = re.sub(r"(^|[;&]\s*)meshtopo ", rf"\g<1>{meshtopo} ", line.split("  #")[0])
        expected = 1 if re.search(r"#.*\bexit 1\b", line) else 0
        code, err = _run(command, tmp_path, environment)
        assert code == expected, (line, err[-2000:])
        assert "Traceback" not in err, line

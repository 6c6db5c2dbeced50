"""The shell examples of the README and of ``docs/`` run as written, in a scratch directory
holding the clone's ``examples/`` and ``tests/`` (what they name), each line bounded by a
timeout.

``make`` lines are the Makefile's (``test_makefile``); ``# ... exit 1`` after a command says it
exits 1 (findings), every other line exits 0. A ``console`` block is a ``$ command`` and lines
of what it prints: each is a line of its output, in order.

A line that is one ``meshtopo`` command (its output perhaps sent to a file with ``>``) runs in
this interpreter through ``meshtopo.cli.main``, with click's test streams for stdout and stderr
(no terminal, as under a pipe): what the ``meshtopo`` script runs, without a new interpreter
for each line. Lines of several programs or shell operators, and ``meshtopo run`` (whose job is
starting processes), run in bash.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from meshtopo.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCE = ROOT / "src"
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(pattern: re.Pattern[str]) -> list[str]:
    """The text of every block ``pattern`` finds in the README and the pages of ``docs/``."""
    return [block for page in PAGES for block in pattern.findall(page.read_text(encoding="utf-8"))]


def shell_lines() -> list[str]:
    """Every command of the ``sh`` blocks (a line ending in ``&`` joined to the next, which it
    runs beside), ``make`` lines left out."""
    commands: list[str] = []
    for block in _blocks(BLOCK):
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


def console_examples() -> list[tuple[str, list[str]]]:
    """(command, the output lines shown) of every ``console`` block."""
    examples: list[tuple[str, list[str]]] = []
    for block in _blocks(CONSOLE):
        first, *shown = block.splitlines()
        assert first.startswith("$ "), block
        examples.append((first[2:], shown))
    return examples


_OPERATORS = frozenset("();<>|&")


def _in_process(command: str) -> tuple[list[str], str | None] | None:
    """(arguments, the file its stdout goes to, if any) of ``command`` when it is one
    ``meshtopo`` command other than ``run``, with no shell operator but a last ``> FILE``;
    None for a line bash must run. Words are split as bash splits them."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    target = None
    if len(words) > 2 and words[-2] == ">":
        words, target = words[:-2], words[-1]
    if words[:1] != ["meshtopo"] or words[1:2] == ["run"] or any(
            set(word) <= _OPERATORS for word in words):
        return None
    return words[1:], target


def _run_here(arguments: list[str], target: str | None, cwd: Path,
              environment: dict[str, str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``meshtopo ARGUMENTS`` run by ``main`` in this
    interpreter in ``cwd``, with ``environment`` set; stdout goes to ``target`` (in ``cwd``)
    when given, as ``> target`` sends it, and is then returned empty."""
    code = 0
    with contextlib.chdir(cwd), CliRunner().isolation(env=environment) as (out, err, _):
        try:
            main(arguments)
        except SystemExit as done:
            code = int(done.code or 0)
        sys.stdout.flush()
        sys.stderr.flush()
        printed = out.getvalue().decode()
        if target is not None:
            (cwd / target).write_text(printed, encoding="utf-8")
            printed = ""
    return code, printed, err.getvalue().decode()


def _run(command: str, cwd: Path, environment: dict[str, str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``command``: in this interpreter when it is one
    ``meshtopo`` command (``_in_process``; ``environment`` then names only what it changes),
    else ``bash -c command`` in its own process group, which is killed and reaped whatever
    happens."""
    here = _in_process(command)
    if here is not None:
        return _run_here(*here, cwd, environment)
    environment = {**os.environ, "PYTHONPATH": str(SOURCE), **environment}
    command = _meshtopo(command)
    process = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return process.returncode, out, err


def _meshtopo(command: str) -> str:
    """``command`` with each ``meshtopo`` run as this interpreter's ``-m meshtopo``."""
    return re.sub(r"(^|[;&]\s*)meshtopo ", rf"\g<1>{sys.executable} -m meshtopo ", command)


def test_every_named_file_is_shipped() -> None:
    for line in shell_lines() + [command for command, _ in console_examples()]:
        for word in line.split("#")[0].split():
            path = word.split("@")[0]
            if path.startswith(("examples/", "tests/")):
                assert (ROOT / path).exists(), (line, path)


@pytest.mark.timeout(600)
def test_the_shell_examples_run(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    for line in shell_lines():
        expected = 1 if re.search(r"#.*\bexit 1\b", line) else 0
        code, _, err = _run(line.split("  #")[0], tmp_path, {})
        assert code == expected, (line, err[-2000:])
        assert "Traceback" not in err, line


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("command", "shown"), console_examples(),
                         ids=[command for command, _ in console_examples()])
def test_the_console_examples_print_what_they_show(tmp_path: Path, command: str,
                                                   shown: list[str]) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    _, out, err = _run(command, tmp_path, {"COLUMNS": "200"})
    assert "Traceback" not in err, command
    printed = [line.rstrip() for line in out.splitlines()]
    positions = [printed.index(line) if line in printed else -1 for line in shown]
    assert -1 not in positions, (command, shown, printed)
    assert positions == sorted(positions), (command, printed)

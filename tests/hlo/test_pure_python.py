"""An install without a C compiler reads every text as the compiled scanners do.

The tokenizer, the reader's two C extensions and the reader compiled by mypyc are optional
(``setup.py``). ``hlo/_native.py`` stands in for the extensions in pure Python where they were
not built, or where ``MESHTOPO_PURE_PYTHON=1`` is set, and ``hlo/_compiled.py`` has the
reader's source read: the same modules, the same collectives, the same refusals at the same
line and column, more slowly. One test reads with both in two processes; another builds the
package with ``CC=false`` in a temporary directory, as on a machine without a compiler, and
runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo._compiled import READER
from meshtopo.hlo._native import SCANNERS
from meshtopo.hlo._tokenize import tokenize

from ._dumps import dumps
from ._fast_paths import structure
from .test_fuzz import HAND

pytestmark = pytest.mark.jax

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# Texts the compiled scanners decline (so the exact reader reads or refuses them).
_DECLINED = [
    "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
    "  ROOT a = f32[4] all-gather(p), dimensions={0}, replica_groups={{0,1},{}}\n}\n",
    "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
    "  ROOT a = f32[4] collective-permute(p), source_target_pairs={{0,1}{1,0}}\n}\n",
    "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
    "  ROOT a = f32[8] all-gather(p), dimensions={0}, replica_groups={{0,1234567890123456789}}\n}\n",
    "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] all-gather(p",
]


def _explicit_module(count: int, devices: int) -> str:
    """``count`` all-reduces over ``devices`` devices, each with its own permuted explicit
    groups of two, written as XLA prints them (the scanners' fast form)."""
    lines = ["HloModule explicit, num_partitions=1", "",
             "%add (x: f32[], y: f32[]) -> f32[] {", "  %x = f32[] parameter(0)",
             "  %y = f32[] parameter(1)", "  ROOT %s = f32[] add(%x, %y)", "}", "",
             "ENTRY %main (p: f32[8]) -> f32[8] {", "  %p = f32[8]{0} parameter(0)"]
    for i in range(count):
        ids = [(7 * i + 3 * d) % devices for d in range(devices)]
        ids = list(dict.fromkeys(ids + list(range(devices))))
        groups = ",".join(f"{{{ids[k]},{ids[k + 1]}}}" for k in range(0, devices, 2))
        lines.append(f"  %ar.{i} = f32[8]{{0}} all-reduce(%p), channel_id={i + 1}, "
                     f"replica_groups={{{groups}}}, to_apply=%add, "
                     f'metadata={{op_name="jit(f)/psum" source_file="f.py" source_line={i}}}')
    lines += [f"  ROOT %out = f32[8]{{0}} copy(%ar.{count - 1})", "}", ""]
    return "\n".join(lines)


def _texts() -> list[str]:
    return [HAND, *dumps().values(), _explicit_module(40, 16),
            *(p.read_text() for p in sorted(EXAMPLES.glob("*.hlo"))), *_DECLINED]


def _readings(texts: list[str]) -> list[str]:
    """Per text, the module's whole structure as read (or the error), as text."""
    out = []
    for text in texts:
        try:
            out.append(repr(structure(hlo.parse_module(text))))
        except mt.HloParseError as error:
            out.append(f"refused: {error}")
    return out


_READ_IN_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from tests.hlo._fast_paths import structure
from tests.hlo.test_pure_python import _readings
from meshtopo.hlo._compiled import READER
from meshtopo.hlo._native import SCANNERS
from meshtopo.hlo._tokenize import tokenize
texts = json.load(open(sys.argv[2]))
json.dump({"scanners": SCANNERS, "reader": READER, "readings": _readings(texts)}, sys.stdout)
"""


def test_pure_python_reads_what_native_reads(tmp_path: Path) -> None:
    texts = _texts()
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    child = subprocess.run(
        [sys.executable, "-c", _READ_IN_CHILD, str(ROOT), str(tmp_path / "texts.json")],
        env={**os.environ, "MESHTOPO_PURE_PYTHON": "1"}, capture_output=True, text=True,
        timeout=240, check=True)
    pure = json.loads(child.stdout)
    assert (SCANNERS, READER) == ("native", "compiled")  # the suite's own install compiles
    assert (pure["scanners"], pure["reader"]) == ("pure Python", "Python")
    native = _readings(texts)
    # XLA's words and place for an operand list the text ends in
    assert native[-1] == ("refused: 5:30: cannot parse as an instruction name or as a nested "
                          "instruction:")
    for index, (ours, theirs) in enumerate(zip(native, pure["readings"], strict=True)):
        assert ours == theirs, f"text {index} reads differently without the C scanners"


def _source_tree(destination: Path) -> Path:
    """The project's sources as a clone has them: no built extensions, no build directory."""
    tree = destination / "meshtopo-src"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns(
        "*.so", "*.pyd", "__pycache__", "*.egg-info"))
    return tree


_TOKENS = """
import sys
from meshtopo.hlo._native import TOKENIZER
from meshtopo.hlo._tokenize import tokenize
assert TOKENIZER == "pure-Python", TOKENIZER
tokens = tokenize(open(sys.argv[1]).read())
print(tokens.kinds.tolist(), tokens.starts.tolist(), tokens.ends.tolist())
"""


def _tokens_of(text: str) -> str:
    """The tokens of ``text`` as ``_TOKENS`` prints them, from this process's tokenizer."""
    tokens = tokenize(text)
    return f"{tokens.kinds.tolist()} {tokens.starts.tolist()} {tokens.ends.tolist()}\n"


def test_install_without_a_compiler(tmp_path: Path) -> None:
    tree, target = _source_tree(tmp_path), tmp_path / "site"
    no_compiler = {**os.environ, "CC": "false", "CXX": "false", "LDSHARED": "false"}
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(target), str(tree)],
        env=no_compiler, capture_output=True, text=True, timeout=240)
    assert install.returncode == 0, install.stderr
    assert not list(target.rglob("*.so"))
    installed = {**os.environ, "PYTHONPATH": str(target)}
    installed.pop("MESHTOPO_PURE_PYTHON", None)
    where = subprocess.run([sys.executable, "-c", "import meshtopo; print(meshtopo.__file__)"],
                           env=installed, capture_output=True, text=True, timeout=60)
    assert where.stdout.startswith(str(target)), where.stdout + where.stderr

    def run(*args: str, env: dict[str, str]) -> str:
        done = subprocess.run([sys.executable, "-m", "meshtopo", *args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    release = version("meshtopo")
    assert run("--version", env=installed) == (
        f"meshtopo {release} (pure-Python tokenizer, HLO scanners: pure Python, "
        "HLO reader: Python, Flight Recorder decoder: pure Python, trace scanner: pure Python)\n")
    assert run("--version", env=dict(os.environ)) == (
        f"meshtopo {release} (native tokenizer, HLO scanners: native, "
        "HLO reader: compiled, Flight Recorder decoder: native, trace scanner: native)\n")
    # The installed tokenizer (pure Python) gives the tokens the compiled one gives here.
    example = EXAMPLES / "data_model_2x4.hlo"
    tokens = subprocess.run(
        [sys.executable, "-c", _TOKENS, str(example)], env=installed, capture_output=True,
        text=True, timeout=60, check=True)
    assert tokens.stdout == _tokens_of(example.read_text())
    for example in ("data_model_2x4.hlo", "replicas_x_partitions.hlo"):
        path = str(EXAMPLES / example)
        assert run("inspect", "--json", path, env=installed) == run(
            "inspect", "--json", path, env=dict(os.environ))

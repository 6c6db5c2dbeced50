"""The reader compiled by mypyc is used only while it was compiled from the source beside it.

The suite's own install compiles it (``setup.py``); a copy of the package whose ``_reader.py``
was edited since must read with the edited source, say so, and read the same.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from meshtopo.hlo import _reader
from meshtopo.hlo._compiled import READER

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "meshtopo"

_READ = """
import json, sys, warnings
sys.path.insert(0, sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import meshtopo.hlo._reader as reader
    from meshtopo import hlo
    from meshtopo.hlo._compiled import READER
module = hlo.parse_module(open(sys.argv[2]).read())
json.dump({"file": reader.__file__, "reader": READER, "warnings": [str(w.message) for w in caught],
           "collectives": [(c.name, c.device_groups(), c.channel_id) for c in module.collectives]},
          sys.stdout)
"""


def _read_with(tree: Path, example: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "MESHTOPO_PURE_PYTHON"}
    done = subprocess.run([sys.executable, "-c", _READ, str(tree), str(example)], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.mark.skipif(READER != "compiled", reason="the reader is not compiled in this install")
def test_a_compiled_reader_whose_source_changed_is_not_used(tmp_path: Path) -> None:
    tree = tmp_path / "site"
    shutil.copytree(PACKAGE, tree / "meshtopo", ignore=shutil.ignore_patterns("__pycache__"))
    example = PACKAGE.parents[1] / "examples" / "data_model_2x4.hlo"
    built = _read_with(tree, example)
    assert built["reader"] == "compiled" and built["warnings"] == []
    assert str(built["file"]).endswith(Path(_reader.__file__).name)

    source = tree / "meshtopo" / "hlo" / "_reader.py"
    source.write_text(source.read_text() + "\n# edited since the build\n")
    edited = _read_with(tree, example)
    assert edited["reader"] == "Python"
    assert edited["file"] == str(source)
    [warning] = edited["warnings"]
    assert warning.startswith(str(tree / "meshtopo" / "hlo" / "_reader."))
    assert warning.endswith("was compiled from another _reader.py: meshtopo reads with the "
                            "source until it is built again (pip install -e .)")
    assert edited["collectives"] == built["collectives"]
    assert built["collectives"]  # the example has collectives to compare

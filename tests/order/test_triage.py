"""``triage``: files recognised by content whatever their names, unread files listed with the
reason, sources compared."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from meshtopo.cli._main import main

from .test_logs import HOST0, HOST1

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_triage_by_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rank0.pt.trace.json").write_text((EXAMPLES / "data_model_2x4.hlo").read_text())  # an HLO module, whatever its name
    (tmp_path / "module.hlo").write_text(HOST0)  # logs
    with gzip.open(tmp_path / "node1.txt", "wt") as handle:  # gzipped logs
        handle.write(HOST1)
    (tmp_path / "notes.txt").write_text("nothing to see\n")
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [')[:20])
    (tmp_path / "weights.bin").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(SystemExit) as exit_info:
        main(["triage", str(tmp_path), "--json"])
    assert exit_info.value.code == 1
    answer = json.loads(capsys.readouterr().out)
    kinds = {s["kind"]: s for s in answer["sources"]}
    assert sorted(kinds) == ["hlo", "logs"]
    assert kinds["hlo"]["paths"] == [str(tmp_path / "rank0.pt.trace.json")]
    assert kinds["hlo"]["findings"] == [] and not kinds["hlo"]["found"]
    assert sorted(kinds["logs"]["paths"]) == [str(tmp_path / "module.hlo"),
                                              str(tmp_path / "node1.txt")]
    assert kinds["logs"]["suspects"] == [3]
    unread = {Path(u["path"]).name: u["reason"] for u in answer["unread"]}
    assert sorted(unread) == ["cut.json.gz", "notes.txt", "weights.bin"]
    assert unread["notes.txt"].startswith("text with no line of the hang-log families")
    assert unread["weights.bin"].startswith("binary, and not HLO the reader reads")
    assert len(answer["contradictions"]) == 2
    assert "the program's own collective order is consistent" in answer["contradictions"][0]
    # the module's 8 devices meet in groups of 4: no collective spans the 4 logged ranks' group
    assert answer["contradictions"][1] == (
        f"hlo ({tmp_path / 'rank0.pt.trace.json'}) beside logs (2 files) (rank r taken to run "
        f"device r): process group 0 spans devices [0-7], and the program issues no collective "
        f"over those devices: nothing joined (--rank-devices places the ranks)")


def test_triage_text_never_a_traceback(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").write_text("HloModule broken\nENTRY %main {\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["triage", str(tmp_path), str(tmp_path / "absent")])
    assert exit_info.value.code == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert f"unread: {tmp_path / 'absent'}: no such file or directory" in captured.out
    # a text's reason keeps the line and column the reader points at
    assert (f"unread: {tmp_path / 'a'}: line 3, column 1: computation main is never closed "
            "(expected '}')") in captured.out

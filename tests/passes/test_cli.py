"""``meshtopo passes``: the rewritten module (stdout or ``-o``), the table and ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "data_model_2x4.hlo"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def test_json_names_each_decision(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "passes", str(EXAMPLE), "--async-creator", "--min-bytes", "100",
                       "--json")
    answer = json.loads(out)
    assert code == 0 and answer["passes"] == ["async-creator"]
    assert answer["instructions"] == {"before": 28, "after": 30}
    actions = {d["instruction"]: (d["action"], d["reason"]) for d in answer["decisions"]}
    assert actions["psum_invariant.7"] == ("kept", "8 bytes < threshold 100")
    assert actions["all_gather.3"][0] == "converted"
    module = mt.hlo.parse_module(answer["module"])
    assert module.entry.instruction("all_gather.3").opcode == "all-gather-done"


def test_output_file_and_round_trip_to_sync(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    split = tmp_path / "split.hlo"
    code, out, _ = run(capsys, "passes", str(EXAMPLE), "--async-creator", "-o", str(split))
    assert code == 0 and f"28 -> 34 instructions, written to {split}" in out
    code, out, err = run(capsys, "passes", str(split), "--to-sync")
    assert code == 0 and "converted" in err
    back = mt.hlo.parse_module(out)
    assert sorted(c.opcode for c in back.collectives) == sorted(
        c.opcode for c in mt.hlo.load(EXAMPLE).collectives)


def test_a_pass_with_nothing_to_decide_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "passes", str(EXAMPLE), "--to-sync")
    assert code == 0 and mt.hlo.parse_module(out).collectives
    assert err == "to-sync: no collective to act on, nothing decided\n"


def test_no_pass_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "passes", str(EXAMPLE))
    assert code == 2 and out == ""
    assert err == ("meshtopo: error: passes needs at least one of --async-creator, --to-sync, "
                   "--combine, --linearize\n")

"""``meshtopo check``: output lines, summary, JSON, exit codes 0/1/2, stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from meshtopo.cli import main

from ._modules import HEADER, module_text

BAD_GROUPS = "ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,5}}, to_apply=%add"
GOOD = "ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,3}}, to_apply=%add"
BAD_MESSAGE = ("Replica 5 is out of range (should be in [0, 4) range) in instruction's "
               "replica-groups: %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,5}}, "
               "to_apply=%add")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    code = done.value.code
    return (code if isinstance(code, int) else 0), out, err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name, text in {
        "good": module_text(GOOD, r=4),
        "bad": module_text(BAD_GROUPS, r=4),
        "broken": "HloModule m\nENTRY %e {\n  %p = f32[8 parameter(0)\n}\n",
        "permute": module_text(
            "%a = f32[8]{0} collective-permute(%p), source_target_pairs={{0,1},{0,2}}\n"
            "ROOT %b = f32[8]{0} all-gather(%a), replica_groups={{0,1,2,3}}, dimensions={0}",
            r=4),
    }.items():
        path = tmp_path / f"{name}.hlo"
        path.write_text(text)
        paths[name] = str(path)
    return paths


def test_clean_module_exits_0(capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> None:
    code, out, err = run(capsys, "check", files["good"])
    assert (code, err) == (0, "")
    assert out == (f"{files['good']}: 1 collective verified, no findings "
                   "(replica_count=4, num_partitions=1)\n")


def test_findings_exit_1_with_position_lines(
    capsys: pytest.CaptureFixture[str], files: dict[str, str]
) -> None:
    code, out, err = run(capsys, "check", files["bad"])
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"{files['bad']}:9:8: ar: {BAD_MESSAGE}",
        f"{files['bad']}: 1 finding in 1 collective (replica_count=4, num_partitions=1)",
    ]


def test_every_failing_instruction_is_listed(
    capsys: pytest.CaptureFixture[str], files: dict[str, str]
) -> None:
    code, out, _ = run(capsys, "check", files["permute"])
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith(f"{files['permute']}:9:3: a: Source 0 appears more than once ")
    assert lines[1].startswith(f"{files['permute']}:10:8: b: shard_count = 1, subgroup_size = 4")
    assert lines[2] == f"{files['permute']}: 2 findings in 2 collectives (replica_count=4, " \
                       "num_partitions=1)"


def test_json(capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> None:
    code, out, _ = run(capsys, "check", files["bad"], "--json")
    assert code == 1
    assert json.loads(out) == {
        "file": files["bad"], "replica_count": 4, "device_assignment_source": "default", "schedule_source": None, "num_partitions": 1, "collectives": 1,
        "findings": [{"message": BAD_MESSAGE, "instruction": "ar", "opcode": "all-reduce",
                      "line": 9, "column": 8, "check": "replica_groups", "severity": "error"}],
        "order_findings": [], "ok": False,
    }
    code, out, _ = run(capsys, "check", files["good"], "--json")
    assert code == 0
    assert json.loads(out)["ok"] is True
    assert json.loads(out)["findings"] == []


UNRESOLVED = {
    "groups": ("ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, to_apply=%add",
               "replica group id 1 is out of range in kCrossReplica mode: there is 1 replica "
               "(ids 0..0) in replica groups {{0,1}}", "all-reduce", "replica_groups"),
    "pairs": ("ROOT %ar = f32[8]{0} collective-permute(%p), source_target_pairs={{0,1}}",
              "source-target id 1 is out of range: there is 1 replica", "collective-permute",
              "source_target_pairs"),
}


@pytest.mark.parametrize("header", ["HloModule m, replica_count=1", "HloModule m"],
                         ids=["count", "no-count"])
@pytest.mark.parametrize("kind", sorted(UNRESOLVED))
def test_collective_the_order_analysis_cannot_resolve_is_a_finding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, header: str, kind: str
) -> None:
    # With one replica the verifier skips the id range check, as XLA does; the ids name
    # devices that do not exist, which the order analysis finds when it resolves them.
    body, message, opcode, check = UNRESOLVED[kind]
    path = tmp_path / "one.hlo"
    path.write_text(module_text(body).replace(HEADER.format(r=1, p=1), header))
    code, out, err = run(capsys, "check", str(path))
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"{path}:9:8: ar: {message}",
        f"{path}: 1 finding in 1 collective (replica_count=1, num_partitions=1)",
    ]
    code, out, err = run(capsys, "check", str(path), "--json")
    assert (code, err) == (1, "")
    assert json.loads(out) == {
        "file": str(path), "replica_count": 1, "device_assignment_source": "default",
        "schedule_source": None, "num_partitions": 1, "collectives": 1,
        "findings": [{"message": message, "instruction": "ar", "opcode": opcode, "line": 9,
                      "column": 8, "check": check, "severity": "error"}],
        "order_findings": [], "ok": False,
    }


def test_counts_override_header(capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> None:
    code, out, _ = run(capsys, "check", files["good"], "--replica-count", "8")
    assert code == 1
    assert "In kCrossReplica mode, replica groups should contain 8 replicas, but found 4" in out
    code, _, _ = run(capsys, "check", files["good"], "--replica-count", "8",
                     "--no-replica-group-checks")
    assert code == 0


def test_unparseable_text_exits_2_with_position(
    capsys: pytest.CaptureFixture[str], files: dict[str, str]
) -> None:
    code, out, err = run(capsys, "check", files["broken"])
    assert (code, out) == (2, "")
    assert err.startswith(f"meshtopo: error: {files['broken']}:3:")
    assert len(err.splitlines()) == 1


def test_missing_file_and_bad_count_exit_2(
    capsys: pytest.CaptureFixture[str], files: dict[str, str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "check", str(tmp_path / "absent.hlo"))
    assert code == 2 and err.startswith("meshtopo: error: cannot read HLO file")
    code, _, err = run(capsys, "check", files["good"], "--replica-count", "0")
    assert code == 2 and len(err.splitlines()) == 1


def test_parser_rejection_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "mode.hlo"
    path.write_text(module_text(
        "ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, "
        "use_global_device_ids=true, to_apply=%add", r=2))
    code, _, err = run(capsys, "check", str(path))
    assert code == 2
    assert err == (f"meshtopo: error: {path}:9:34: Invalid combination of has_channel_id and "
                   "use_global_device_ids: use_global_device_ids=true needs a channel_id\n")


@pytest.mark.parametrize("text,code", [(module_text(GOOD, r=4), 0),
                                       (module_text(BAD_GROUPS, r=4), 1),
                                       ("not hlo\n", 2)], ids=["clean", "findings", "garbage"])
def test_stdin_in_a_process(text: str, code: int) -> None:
    done = subprocess.run([sys.executable, "-m", "meshtopo", "check", "-"], input=text,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    if code == 0:
        assert done.stdout.startswith("<stdin>: 1 collective verified")
    if code == 1:
        assert done.stdout.startswith(f"<stdin>:9:8: ar: {BAD_MESSAGE}")
    if code == 2:
        assert done.stdout == "" and done.stderr.startswith("meshtopo: error: <stdin>:1:5:")
        assert "Traceback" not in done.stderr


SCHEDULED_RECV = """HloModule m, is_scheduled=true, num_partitions=2
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %tok = token[] after-all()
  %recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  %recv-done = (f32[8]{0}, token[]) recv-done(%recv), channel_id=1
  ROOT %r = f32[8]{0} get-tuple-element(%recv-done), index=0
}
"""


def test_deadlocks_flag_and_several_files(tmp_path: Path, files: dict[str, str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "recv.hlo"
    path.write_text(SCHEDULED_RECV)
    code, out, _ = run(capsys, "check", str(path))
    # The verifier passes it; the order analysis finds the recv's sender never comes.
    assert code == 1 and f"{path}:5: order missing: device 0 never arrives at recv" in out
    code, out, _ = run(capsys, "check", "--deadlocks", str(path))
    assert code == 1
    assert f"{path}:5:3: recv: Expected send to match recv" in out
    assert f"{path}: 1 finding in " in out
    code, out, _ = run(capsys, "check", "--json", files["good"], files["bad"])
    payload = json.loads(out)
    assert code == 1 and payload["ok"] is False
    assert [(m["file"], m["ok"]) for m in payload["modules"]] == [
        (files["good"], True), (files["bad"], False)]

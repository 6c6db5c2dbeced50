"""``meshtopo neuron``: the report, its JSON schema, MPMD (exit 1) and bad input (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from meshtopo.cli import main

from ._modules import PARAMS, module, rs

MODEL = "[2,4]<=[8]"
DATA = "{{0,4},{1,5},{2,6},{3,7}}"
TUPLE2 = "(f32[2,4]{1,0}, f32[2,4]{1,0})"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def write(tmp_path: Path, body: str, **kwargs: object) -> str:
    path = tmp_path / "m.hlo"
    path.write_text(module(body, **kwargs))  # type: ignore[arg-type]
    return str(path)


def test_json_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = (PARAMS + rs("a", "p", MODEL, 1) + rs("b", "q", MODEL, 2)
            + f"  ROOT %t = {TUPLE2} tuple(%a, %b)\n")
    path = write(tmp_path, body)
    code, out, err = run(capsys, "neuron", path, "--json")
    assert (code, err) == (0, "")
    groups = [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert json.loads(out) == {
        "file": path,
        "replica_count": 1,
        "device_assignment_source": "default",
        "num_partitions": 8,
        "lnc": 2,
        "num_cores": 16,
        "num_topologies": 1,
        "topologies": [{"text": "[2,4]<=[8]", "num_replica_groups": 2,
                        "num_devices_per_group": 4, "replica_groups": groups,
                        "collectives": ["a", "b"]}],
        "source_target_pairs": [],
        "world_size": 4,
        "mpmd": None,
        "core_groups": [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15]],
        "tp": {"opcode": "reduce-scatter", "instruction": "a", "computation": "main",
               "line": 15, "replica_groups": groups},
        "combinable_sets": [{
            "computation": "main", "instructions": ["a", "b"],
            "key": {"reduction": "add", "element_type": "f32", "scatter_dimension": 0,
                    "has_channel_id": True, "use_global_device_ids": True,
                    "replica_groups": groups},
        }],
        "ok": True,
    }


def test_text_report_and_lnc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = PARAMS + rs("a", "p", DATA, 1) + "  ROOT %r = f32[8,4]{1,0} add(%p, %q)\n"
    path = write(tmp_path, body)
    code, out, err = run(capsys, "neuron", path, "--lnc", "1")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"{path}: 1 topology [topology][group][rank] (replica_count=1, num_partitions=8)",
        "  topology 0: 4 groups x 2 ranks  [4,2]<=[2,4]T(1,0)  = {{0,4},{1,5},{2,6},{3,7}}",
        "world size: 2",
        "  cores at LNC 1 (rank = core // 1): {{0,4},{1,5},{2,6},{3,7}}",
        "TP group: {{0,4},{1,5},{2,6},{3,7}}  from reduce-scatter %a in main (line 15)",
        "combinable reduce-scatters: none",
    ]


def test_mpmd_is_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = (PARAMS + rs("a", "p", MODEL, 1) + rs("b", "q", DATA, 2)
            + f"  ROOT %t = {TUPLE2} tuple(%a, %b)\n")
    path = write(tmp_path, body)
    code, out, err = run(capsys, "neuron", path, "--json")
    payload = json.loads(out)
    assert (code, err) == (1, "")
    assert payload["num_topologies"] == 2
    assert payload["mpmd"] == ("Inconsistent worker count across topologies: topology 0 has 4 "
                               "ranks per group, topology 1 has 2; MPMD is not supported")
    assert (payload["world_size"], payload["core_groups"], payload["ok"]) == (None, None, False)
    assert [t["collectives"] for t in payload["topologies"]] == [["a"], ["b"]]
    code, out, _ = run(capsys, "neuron", path)
    assert code == 1
    assert "MPMD: Inconsistent worker count across topologies" in out
    lines = out.splitlines()
    at = lines.index("  2 distinct group geometries:")
    assert lines[at + 1].startswith("    topology 0 (2 groups x 4 ranks, [2,4]<=[8]): carried by "
                                    "1 collective: %a")
    assert lines[at + 2].startswith("    topology 1 (4 groups x 2 ranks, ")
    assert lines[at + 2].endswith("carried by 1 collective: %b")


def test_permute_pairs_and_tp_opcode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = (PARAMS + "  %cp = f32[8,4]{1,0} collective-permute(%p), channel_id=1, "
            "source_target_pairs={{0,1},{1,2},{2,5}}\n"
            "  ROOT %r = f32[8,4]{1,0} add(%cp, %q)\n")
    code, out, _ = run(capsys, "neuron", write(tmp_path, body), "--json",
                       "--tp-opcode", "all-reduce")
    payload = json.loads(out)
    assert code == 0
    assert (payload["num_topologies"], payload["world_size"]) == (0, 6)
    assert payload["source_target_pairs"] == [[0, 1], [1, 2], [2, 5]]
    assert (payload["tp"], payload["core_groups"]) == (None, [])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (PARAMS + "  ROOT %cp = f32[8,4]{1,0} collective-permute(%p), channel_id=1, "
                  "source_target_pairs={{0,1}}, replica_groups={{0,1}}\n",
         "meshtopo: error: {path}:15:95: unexpected attribute \"replica_groups\". Allowed "
         "attributes: backend_config, channel_id, control-predecessors, frontend_attributes, "
         "metadata, origin, parameter_replication, sharding, slice_sizes, source_target_pairs, "
         "statistics"),
        (PARAMS + "  ROOT %r = f32[8,4]{1,0} add(%p, %nowhere)\n",
         "meshtopo: error: {path}:15:35: instruction does not exist: nowhere"),
    ],
    ids=["permute-groups", "unknown-operand"],
)
def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str,
                           message: str) -> None:
    path = write(tmp_path, body)
    code, out, err = run(capsys, "neuron", path)
    assert (code, out) == (2, "")
    assert err.strip() == message.replace("{path}", path)


def test_unparsable_and_missing_files_exit_2(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text("not hlo\n")
    code, _, err = run(capsys, "neuron", str(path))
    assert code == 2 and err.startswith("meshtopo: error: ") and err.count("\n") == 1
    code, _, err = run(capsys, "neuron", str(tmp_path / "missing.hlo"))
    assert code == 2 and "missing.hlo" in err
    code, _, err = run(capsys, "neuron", str(path), "--lnc", "0")
    assert code == 2 and "--lnc" in err


def test_process_reads_stdin(tmp_path: Path) -> None:
    body = PARAMS + rs("a", "p", MODEL, 1) + "  ROOT %r = f32[8,4]{1,0} add(%p, %q)\n"
    done = subprocess.run(
        [sys.executable, "-m", "meshtopo", "neuron", "-", "--json"], input=module(body),
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["tp"]["replica_groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]

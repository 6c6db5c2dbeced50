"""The math commands: human output, the JSON schema, and bad input (exit 2, one stderr line)."""

import json
import shlex
import subprocess
import sys

import pytest

from meshtopo.cli import main


def run(capsys, *args):
    """Run the command line in-process; a single string argument is split like a shell would."""
    argv = shlex.split(args[0]) if len(args) == 1 else list(args)
    with pytest.raises(SystemExit) as done:
        main(argv)
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_expand_json(capsys):
    code, out, err = run(capsys, "expand", "{{0,4},{1,5},{2,6},{3,7}}", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "encoding": "explicit",
        "text": "{{0,4},{1,5},{2,6},{3,7}}",
        "compact": "[4,2]<=[2,4]T(1,0)",
        "num_replica_groups": 4,
        "num_devices_per_group": 2,
        "replica_groups": [[0, 4], [1, 5], [2, 6], [3, 7]],
    }


def test_expand_tile_of_any_rank(capsys):
    code, out, _ = run(capsys, "expand", "[2,2,2]<=[2,4]T(1,0)", "--json")
    payload = json.loads(out)
    assert code == 0
    assert payload["encoding"] == "tile"
    assert payload["array"] == [[[0, 4], [1, 5]], [[2, 6], [3, 7]]]


def test_groups_over_mesh_axes(capsys):
    code, out, _ = run(capsys, "groups", "--mesh", "data=2,model=4", "--over", "data", "--json")
    payload = json.loads(out)
    assert code == 0
    assert payload["text"] == "[4,2]<=[2,4]T(1,0)"
    assert payload["replica_groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    code, out, _ = run(
        capsys,
        *["groups", "--mesh", "data=2,model=4", "--over", "data", "--devices", "0,2,4,6,1,3,5,7"],
    )
    assert code == 0
    assert "{{0,1},{2,3},{4,5},{6,7}}" in out


def test_groups_find(capsys):
    code, out, _ = run(
        capsys, "groups", "--mesh", "x=2,y=2,z=2", "--find", "{{0,4,1,5},{2,6,3,7}}", "--json"
    )
    assert code == 0
    assert json.loads(out)["over"] == ["z", "x"]


def test_devices_flattened_example(capsys):
    code, out, _ = run(
        capsys,
        "devices --replicas 2 --partitions 2 --groups {{0,1},{2,3}} --channel-id --use-global-device-ids true --json",
    )
    payload = json.loads(out)
    assert code == 0
    assert payload["mode"] == "kFlattenedID"
    assert payload["device_groups"] == [[0, 2], [1, 3]]
    assert payload["flattened_ids_differ_from_device_ids"] is True
    assert payload["cells"][1] == {
        "replica": 0,
        "partition": 1,
        "flattened_id": 1,
        "device_id": 2,
        "group": 0,
        "rank": 1,
    }


def test_devices_human_output_marks_disagreement(capsys):
    code, out, _ = run(
        capsys,
        "devices --replicas 2 --partitions 2 --groups {{0,1}} --channel-id --use-global-device-ids true",
    )
    assert code == 0
    assert "mode kFlattenedID" in out
    assert "f1 d2*" in out
    assert "device groups: {{0,2}}" in out
    assert "flattened id and device id differ in 2 cells" in out


def test_devices_per_opcode_rule(capsys):
    code, out, _ = run(
        capsys,
        "devices --replicas 2 --partitions 2 --groups {{0,1}} --channel-id --opcode all-reduce --json",
    )
    assert code == 0
    assert json.loads(out)["mode"] == "kCrossReplicaAndPartition"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["expand", "{{0,1}"],
            "meshtopo: error: 1:7: expected ',' but found the end of the text in replica groups\n",
        ),
        (
            ["devices", "--groups", "{{0,1}}", "--use-global-device-ids", "true"],
            "meshtopo: error: Invalid combination of has_channel_id and use_global_device_ids: use_global_device_ids=true needs a channel_id\n",
        ),
        (
            ["groups", "--mesh", "data=2,model", "--over", "data"],
            "meshtopo: error: --mesh expects name=size pairs like data=2,model=4, got 'data=2,model'\n",
        ),
        (
            ["devices", "--replicas", "0"],
            "meshtopo: error: Invalid value for '--replicas': 0 is not in the range x>=1.\n",
        ),
        (
            ["devices", "--replicas", "2", "--device-assignment", "0,1;2,3"],
            "meshtopo: error: --device-assignment is 2 x 2 but the grid is 2 replicas x 1 partitions\n",
        ),
        (["nonsense"], "meshtopo: error: No such command 'nonsense'.\n"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2
    assert err == message
    assert out == ""


def test_entry_point_runs_as_a_program():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "meshtopo",
            "expand",
            "[1000000000,1000000000]<=[1000000000000000000]",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "more than the device limit of 67108864" in done.stderr

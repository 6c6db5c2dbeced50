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
    assert "mode kFlattenedID" in out
    assert "f1 d2*" in out
    assert "device groups: {{0,2}}" in out
    assert "flattened id and device id differ in 2 cells" in out
    # Two of the four flattened ids: XLA's verifier refuses it, and the command says so.
    assert code == 1
    assert out.splitlines()[-1] == (
        "replica_groups: In kFlattenedID mode, replica groups should contain 4 flattened IDs, "
        "but found 2: replica_groups={{0,1}}")


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
            "meshtopo: error: --device-assignment is 2 x 2 but the grid is 2 replicas x 1 partition\n",
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


# ---- input hardening and large grids -----------------------------------------------------------


def test_find_groups_no_axis_gives(capsys):
    code, out, err = run(capsys, "groups", "--mesh", "data=2", "--find", "{{}}")
    assert (code, out, err) == (
        0, "no mesh axes give exactly these groups: they hold 0 of the mesh's 2 devices\n", "")
    code, out, err = run(capsys, "groups", "--mesh", "data=2", "--find", "{{}}", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["over"] is None
    code, out, err = run(capsys, "groups", "--mesh", "data=1", "--find", "{{0,1}}")
    assert (code, out, err) == (
        0, "no mesh axes give exactly these groups: device 1 is not in the mesh of 1 device\n", "")


@pytest.mark.parametrize(("groups", "why"), [
    ("{{0,0,1,2},{4,5,6,7}}", ": device 0 is in them more than once"),
    ("{{0,9}}", ": device 9 is not in the mesh of 8 devices"),
    ("{{0,1},{2,3,4}}", ": the groups differ in size (2, 3)"),
    ("{{0,1,2},{3,4}}", ": the groups differ in size (3, 2)"),
    ("{{4,0},{5,1},{6,2},{7,3}}",
     ": they are the groups over data, with their ranks in another order"),
    ("{{0,5},{1,4},{2,7},{3,6}}", ""),  # a partition of the mesh, but of no whole axes
])
def test_find_groups_says_why_none_give_them(capsys, groups, why):
    code, out, _ = run(capsys, "groups", "--mesh", "data=2,model=4", "--find", groups)
    assert (code, out) == (0, f"no mesh axes give exactly these groups{why}\n")
    _, out, _ = run(capsys, "groups", "--mesh", "data=2,model=4", "--find", groups, "--json")
    assert json.loads(out)["why_none"] == (why[2:] or None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["groups", "--mesh", "data=\u00b2", "--over", "data"],
         "--mesh expects name=size pairs like data=2,model=4, got 'data=\u00b2'"),
        (["groups", "--mesh", "data=\u0662", "--over", "data"],
         "--mesh expects name=size pairs like data=2,model=4, got 'data=\u0662'"),
        (["groups", "--mesh", "data=1_0", "--over", "data"],
         "--mesh expects name=size pairs like data=2,model=4, got 'data=1_0'"),
        (["groups", "--mesh", "data=2", "--over", "data", "--devices", "1,\u0660"],
         "--devices expects comma-separated ints, got '1,\u0660'"),
        (["groups", "--mesh", "data=2", "--over", "data", "--devices", "1,+0"],
         "--devices expects comma-separated ints, got '1,+0'"),
        (["groups", "--mesh", "data=2", "--over", "data", "--devices", "1," + "9" * 5000],
         "--devices expects comma-separated ints, got '1," + "9" * 78 + "'"),
        (["devices", "--replicas", "2", "--device-assignment", "0;\u0661"],
         "--device-assignment expects comma-separated ints, got '\u0661'"),
        (["devices", "--replicas", "\u0661"],
         "Invalid value for '--replicas': '\u0661' is not a decimal integer"),
        (["devices", "--partitions", "\u00b2"],
         "Invalid value for '--partitions': '\u00b2' is not a decimal integer"),
        (["check", "-", "--replica-count", "\u0661"],
         "Invalid value for '--replica-count': '\u0661' is not a decimal integer"),
        (["inspect", "-", "--num-partitions", "\u0661"],
         "Invalid value for '--num-partitions': '\u0661' is not a decimal integer"),
    ],
)
def test_numbers_are_ascii_decimal_digits(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert (code, out, err) == (2, "", f"meshtopo: error: {message}\n")


def _reference_cells(table, device_groups):
    place = {d: (g, r) for g, group in enumerate(device_groups) for r, d in enumerate(group)}
    partitions = len(table[0])
    return [
        {"replica": f // partitions, "partition": f % partitions, "flattened_id": f,
         "device_id": table[f // partitions][f % partitions],
         "group": place.get(table[f // partitions][f % partitions], (None, None))[0],
         "rank": place.get(table[f // partitions][f % partitions], (None, None))[1]}
        for f in range(len(table) * partitions)
    ]


@pytest.mark.parametrize(
    "args",
    [
        "devices --replicas 3 --partitions 4 --groups {{0,2},{1}} --device-assignment row-major",
        "devices --replicas 2 --partitions 3 --groups {{5,0,3},{1,2,4}} --channel-id "
        "--use-global-device-ids true --device-assignment 5,1,3;0,4,2",
        "devices --replicas 2 --partitions 4 --groups [2,2]<=[4] --channel-id",
        "devices --replicas 2 --partitions 2 --groups {}",
    ],
)
def test_devices_cells_are_each_devices_group_and_rank(capsys, args):
    code, out, err = run(capsys, args + " --json")
    assert (code, err) == (0, "")
    payload = json.loads(out)
    assert payload["cells"] == _reference_cells(payload["device_assignment"],
                                                payload["device_groups"])
    differs = any(c["flattened_id"] != c["device_id"] for c in payload["cells"])
    assert payload["flattened_ids_differ_from_device_ids"] is differs
    assert list(payload) == [
        "replica_count", "partition_count", "channel_id", "use_global_device_ids", "opcode",
        "mode", "device_assignment", "replica_groups", "device_groups", "cells",
        "flattened_ids_differ_from_device_ids", "findings", "ok"]
    assert (payload["findings"], payload["ok"]) == ([], True)


def test_devices_text_on_a_large_grid_is_summarised_not_drawn(capsys):
    # That no per-cell records are built is measured by peak memory on a 512 x 512 grid below.
    code, out, err = run(capsys, "devices --replicas 64 --partitions 64 --groups {}")
    assert (code, err) == (0, "")
    assert "(64 x 64 grid: too large to draw; use --json)" in out
    assert "flattened id and device id differ in 4032 cells, e.g. replica 0 partition 1 is " \
        "flattened id 1 but device 64" in out


def _peak_bytes(capsys, *args):
    import tracemalloc

    tracemalloc.start()
    try:
        code, out, err = run(capsys, *args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (code, err) == (0, "")
    return out, peak


@pytest.mark.timeout(120)
def test_devices_on_a_large_grid_allocates_arrays_not_records(capsys):
    out, peak = _peak_bytes(capsys, "devices --replicas 512 --partitions 512 --groups {}")
    assert "flattened id and device id differ in 261632 cells" in out
    # One dict per cell was about 100 MB here; the arrays and the groups' lists take ~20 MB.
    assert peak < 40 * 2**20


@pytest.mark.timeout(120)
def test_text_output_converts_only_the_groups_shown(capsys):
    out, peak = _peak_bytes(capsys, "expand [1,4194304]<=[4194304]")
    assert out.endswith(", 1022, 1023, ... (4193280 more)]\n")
    assert "group 1:" not in out
    assert peak < 80 * 2**20  # the 32 MB id array; Python ints for every id were ~150 MB
    out, peak = _peak_bytes(capsys, "groups --mesh a=2048,b=2048 --over a")
    assert out.endswith(",... (1984 more)}\n")
    assert out.count("{") == 64 + 1
    assert peak < 80 * 2**20


def test_devices_json_cells_stream_in_chunks():
    import meshtopo as mt
    from meshtopo.cli._render import Cells

    assignment = mt.DeviceAssignment.row_major(3, 5)
    cells = Cells(assignment, [[0, 1, 2], [7], [14, 3]])
    whole = "".join(cells.json_lines("  "))
    assert "".join(cells.json_lines("  ", chunk=4)) == whole
    assert json.loads("[" + whole + "]") == cells.records()
    assert cells.records(13)[0] == {"replica": 2, "partition": 3, "flattened_id": 13,
                                    "device_id": 13, "group": None, "rank": None}
    assert cells.records()[14]["group"] == 2


REPEATED = ("devices --replicas 2 --partitions 2 --groups {{0,1},{1,2}} --channel-id "
            "--use-global-device-ids true")


def test_devices_reports_a_repeated_id_as_check_does_and_exits_1(capsys, tmp_path):
    # The same collective in a module, through check: XLA's verifier words it so.
    module = tmp_path / "repeated.hlo"
    module.write_text(
        "HloModule m, replica_count=2, num_partitions=2\n\nadd {\n  x = f32[] parameter(0)\n"
        "  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\nENTRY main {\n"
        "  p = f32[8] parameter(0)\n  ROOT ar = f32[8] all-reduce(p), channel_id=1, "
        "replica_groups={{0,1},{1,2}}, use_global_device_ids=true, to_apply=add\n}\n")
    code, out, _ = run(capsys, f"check {module} --json")
    [finding] = json.loads(out)["findings"]
    assert code == 1
    assert finding["message"].startswith(
        "Replica 1 is repeated in instruction's replica-groups: ar = f32[8] all-reduce(p)")
    expected = "Replica 1 is repeated in instruction's replica-groups: replica_groups={{0,1},{1,2}}"
    code, out, err = run(capsys, REPEATED)
    assert (code, err) == (1, "")
    assert out.splitlines()[-1] == f"replica_groups: {expected}"
    code, out, err = run(capsys, REPEATED + " --json")
    payload = json.loads(out)
    assert (code, err) == (1, "")
    assert payload["findings"] == [
        {"message": expected, "check": "replica_groups", "severity": "error"}]
    assert payload["ok"] is False
    assert payload["device_groups"] == [[0, 2], [2, 1]]  # what the arithmetic alone gives


@pytest.mark.parametrize(("opcode", "message"), [
    ("all-gather", "Replica groups expected to be of uniform size"),
    ("all-reduce", None),  # all-reduce groups may differ in size
    ("collective-broadcast", None),  # the verifier never checks its groups
])
def test_devices_applies_the_verifier_rule_of_the_opcode(capsys, opcode, message):
    code, out, _ = run(capsys, f"devices --replicas 3 --groups {{{{0,1}},{{2}}}} --opcode {opcode} --json")
    payload = json.loads(out)
    assert [f["message"] for f in payload["findings"]] == ([] if message is None else [message])
    assert code == (0 if message is None else 1)


def test_find_groups_of_single_devices_is_over_no_axes(capsys):
    groups = "{" + ",".join(f"{{{d}}}" for d in range(8)) + "}"
    code, out, _ = run(capsys, "groups", "--mesh", "data=2,model=4", "--find", groups)
    assert (code, out) == (0, "over no axes (each device is a group of its own)\n")
    _, out, _ = run(capsys, "groups", "--mesh", "data=2,model=4", "--find", groups, "--json")
    assert json.loads(out)["over"] == []
    # ranks in another order are named on a mesh of permuted devices too
    code, out, _ = run(capsys, "groups", "--mesh", "data=2,model=4", "--devices",
                       "7,6,5,4,3,2,1,0", "--find", "{{3,7},{2,6},{1,5},{0,4}}")
    assert out == ("no mesh axes give exactly these groups: they are the groups over data, "
                   "with their ranks in another order\n")

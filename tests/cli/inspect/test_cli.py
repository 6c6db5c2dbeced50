"""``meshtopo inspect``: the table, the JSON schema, placements, stdin, gzip and bad input."""

import gzip
import json
import subprocess
import sys

import pytest

from meshtopo.cli import main

from ._dumps import FLATTENED_2X2, MIXED_2X2, REJECTED, REPLICAS_8, module

DEFAULT_PLACEMENT = ("device assignment: XLA's default placement (no compile_options.textproto "
                     "beside the file; give --device-assignment if the runtime placed devices "
                     "otherwise)")


def run(capsys, *args):
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return done.value.code, out, err


@pytest.fixture
def dump(tmp_path):
    def write(text, name="m.hlo"):
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def rows(capsys, *args):
    code, out, err = run(capsys, "inspect", *args, "--json")
    assert (code, err) == (0, "")
    return json.loads(out)


def test_flattened_ids_resolve_through_the_default_placement(capsys, dump):
    # {0,1} are flattened ids r*P+p: (r0,p0) and (r0,p1), which XLA's default placement
    # (c*R+r) puts on devices 0 and 2.
    payload = rows(capsys, dump(FLATTENED_2X2))
    assert payload["device_assignment"] == [[0, 2], [1, 3]]
    assert payload["collectives"] == [
        {
            "name": "ar",
            "opcode": "all-reduce",
            "computation": "main",
            "line": 11,
            "column": 8,
            "channel_id": 1,
            "use_global_device_ids": True,
            "mode": "kFlattenedID",
            "replica_groups": "{{0,1},{2,3}}",
            "source_target_pairs": None,
            "device_groups": [[0, 2], [1, 3]],
            "group_count": 2,
            "group_size": 2,
            "bytes": 32,
            "wire_bytes": 32,
            "op_name": None,
            "mesh_axes": None,
            "flattened_ids_differ_from_device_ids": True,
            "in_group_order_ascending": True,
            "error": None,
        }
    ]
    assert (payload["collective_count"], payload["ids_differ_count"]) == (1, 1)


def test_json_header_fields(capsys, dump):
    path = dump(MIXED_2X2)
    payload = rows(capsys, path)
    assert {k: v for k, v in payload.items() if k != "collectives"} == {
        "source": path,
        "replica_count": 2,
        "partition_count": 2,
        "device_assignment_spec": "auto",
        "device_assignment_source": "default",
        "device_assignment": [[0, 2], [1, 3]],
        "collective_count": 5,
        "ids_differ_count": 5,
        "not_ascending_count": 1,
        "error_count": 0,
        "mesh": None,
        "mesh_source": None,
    }


def test_every_collective_with_its_mode_and_devices(capsys, dump):
    payload = rows(capsys, dump(MIXED_2X2))
    got = [
        (c["name"], c["mode"], c["device_groups"], c["in_group_order_ascending"], c["bytes"])
        for c in payload["collectives"]
    ]
    assert got == [
        ("ar", "kFlattenedID", [[0, 2], [1, 3]], True, 32),
        # Replica ids {1,0} in every partition, partitions concatenated: rank order kept.
        ("ag", "kCrossReplicaAndPartition", [[1, 3, 0, 2]], False, 64),
        # Pairs are partition ids within each replica; order is direction, not rank.
        ("cp", "kCrossPartition", [[0, 2], [2, 0], [1, 3], [3, 1]], None, 32),
        ("rs", "kCrossReplica", [[0, 1], [2, 3]], True, 32),
        ("ar2", "kCrossReplica", [[0, 1], [2, 3]], True, 32),
    ]
    cp = payload["collectives"][2]
    assert (cp["replica_groups"], cp["source_target_pairs"]) == (None, "{{0,1},{1,0}}")
    assert (cp["group_count"], cp["group_size"]) == (4, 2)


def test_table_flags_and_header(capsys, dump):
    path = dump(MIXED_2X2)
    code, out, err = run(capsys, "inspect", path)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{path}: 5 collectives on 2 replicas x 2 partitions, {DEFAULT_PLACEMENT}"
    assert lines[1].split() == [
        "name", "opcode", "mode", "groups", "device", "groups", "groups", "x", "size",
        "payload/device", "wire/device", "line", "op_name", "flags",
    ]  # fmt: skip
    ag = next(line for line in lines if line.startswith("ag "))
    # all-gather over 4 devices: each sends (n-1)/n of the 64-byte result.
    assert ag.split() == [
        "ag", "all-gather", "kCrossReplicaAndPartition", "{{1,0}}", "{{1,3,0,2}}", "1x4", "64",
        "B", "48", "B", "12", "-", "ids!=devices", "unsorted",
    ]  # fmt: skip
    ar = next(line for line in lines if line.startswith("ar "))
    assert ar.split()[6:10] == ["32", "B", "32", "B"]  # 2 (n-1)/n x 32 with n = 2
    cp = next(line for line in lines if line.startswith("cp "))
    assert "(pairs) {{0,1},{1,0}}" in cp and "4 pairs" in cp
    assert lines[-3].startswith("payload/device: the buffer each device holds")
    assert lines[-2].startswith("ids!=devices: 5 collectives use")
    assert lines[-1].startswith("unsorted: 1 collective has")


def test_single_partition_has_no_flags(capsys, dump):
    code, out, _ = run(capsys, "inspect", dump(REPLICAS_8))
    assert code == 0
    assert "ids!=devices" not in out and "unsorted" not in out
    payload = rows(capsys, dump(REPLICAS_8))
    assert [(c["opcode"], c["device_groups"]) for c in payload["collectives"]] == [
        ("all-reduce", [[0, 2, 4, 6], [1, 3, 5, 7]]),
        ("all-reduce-start", [[0, 1, 2, 3, 4, 5, 6, 7]]),
        ("all-reduce-done", [[0, 1, 2, 3, 4, 5, 6, 7]]),
    ]


def test_long_groups_are_abbreviated_in_the_table(capsys, dump):
    groups = "{" + ",".join(f"{{{i}}}" for i in range(64)) + "}"
    text = module(
        f"  ROOT %ar = f32[8]{{0}} all-reduce(%p), replica_groups={groups}, to_apply=%add\n",
        replica_count=64,
    )
    code, out, _ = run(capsys, "inspect", dump(text))
    assert code == 0
    row = out.splitlines()[2]
    assert "{{0},{1},{2},{3},... (60 more)}" in row
    assert "64x1" in row
    assert max(len(cell) for cell in row.split("  ") if cell) <= 48
    # JSON keeps every group.
    assert rows(capsys, dump(text))["collectives"][0]["device_groups"] == [[i] for i in range(64)]


@pytest.mark.parametrize(
    ("spec", "devices", "differ"),
    [
        ("default", [[0, 2], [1, 3]], True),
        ("row-major", [[0, 1], [2, 3]], False),
        ("0,2;1,3", [[0, 2], [1, 3]], True),
        ("3,2;1,0", [[3, 2], [1, 0]], True),
    ],
    ids=["default", "row-major", "table-default", "table-reversed"],
)
def test_device_assignment_option(capsys, dump, spec, devices, differ):
    payload = rows(capsys, dump(FLATTENED_2X2), "--device-assignment", spec)
    c = payload["collectives"][0]
    assert (c["device_groups"], c["flattened_ids_differ_from_device_ids"]) == (devices, differ)
    assert payload["device_assignment_spec"] == spec


def test_count_overrides_win_over_the_header(capsys, dump):
    payload = rows(capsys, dump(FLATTENED_2X2), "--replica-count", "1", "--num-partitions", "4")
    assert (payload["replica_count"], payload["partition_count"]) == (1, 4)
    c = payload["collectives"][0]
    assert (c["device_groups"], c["flattened_ids_differ_from_device_ids"]) == (
        [[0, 1], [2, 3]],
        False,
    )


def test_rejected_collective_is_a_row_with_the_error_and_exit_1(capsys, dump):
    path = dump(REJECTED)
    code, out, err = run(capsys, "inspect", path)
    assert (code, err) == (1, "")
    assert f"{path}:11:8: ag: Invalid combination of has_channel_id" in out
    code, out, err = run(capsys, "inspect", path, "--json")
    assert (code, err) == (1, "")
    c = json.loads(out)["collectives"][0]
    assert (c["mode"], c["device_groups"], c["in_group_order_ascending"]) == (None, [], None)
    assert c["error"].startswith("Invalid combination of has_channel_id and use_global_device_ids")


@pytest.mark.parametrize("groups", ["{{}}", "{{0},{}}", "{{},{0,1}}"])
def test_an_empty_group_is_an_error_row_and_exit_1(capsys, dump, groups):
    # XLA's parser reads an empty group; its verifier refuses it, and no devices form it.
    path = dump(module(f"  ROOT %ar = f32[8]{{0}} all-reduce(%p), replica_groups={groups}, "
                       "to_apply=%add\n", replica_count=2, num_partitions=2))
    message = f"Instruction cannot have an empty replica group: replica_groups={groups}"
    code, out, err = run(capsys, "inspect", path)
    assert (code, err) == (1, "")
    assert out.splitlines()[-1] == f"{path}:11:8: ar: {message}"
    code, out, err = run(capsys, "inspect", path, "--json")
    assert (code, err) == (1, "")
    payload = json.loads(out)
    c = payload["collectives"][0]
    assert (payload["error_count"], c["error"]) == (1, message)
    assert (c["device_groups"], c["group_count"], c["in_group_order_ascending"]) == ([], 0, None)


def test_sends_and_recvs_without_readable_pairs_are_each_their_own_error(capsys, dump):
    attribute = 'frontend_attributes={{_xla_send_recv_source_target_pairs="{}"}}'
    path = dump(
        "HloModule m, replica_count=3\n\nENTRY %e {\n  %p = f32[8] parameter(0)\n"
        "  %tok = token[] after-all()\n"
        "  %send = (f32[8], u32[], token[]) send(%p, %tok), channel_id=1\n"
        "  %send-done = token[] send-done(%send), channel_id=1\n"
        "  %recv = (f32[8], u32[], token[]) recv(%tok), channel_id=1, "
        f"{attribute.format('{{0,1},}')}\n"
        "  %recv-done = (f32[8], token[]) recv-done(%recv), channel_id=1\n"
        "  ROOT %r = f32[8] get-tuple-element(%recv-done), index=0\n}\n")
    code, out, err = run(capsys, "inspect", path)
    assert (code, err) == (1, "")
    assert out.splitlines()[-4:] == [
        f"{path}:6:3: send: send send (line 6) has no source_target_pairs",
        f"{path}:7:3: send-done: send-done send-done (line 7) has no source_target_pairs",
        f"{path}:8:3: recv: recv recv (line 8) has a _xla_send_recv_source_target_pairs XLA "
        "cannot read: Syntax error: was parsing 1:7: error: expects a list to end with kRbrace",
        f"{path}:9:3: recv-done: recv-done recv-done (line 9) has no source_target_pairs"]

def test_errors_past_the_tenth_are_counted(capsys, dump):
    body = "".join(f"  %ar{i} = f32[8]{{0}} all-reduce(%p), replica_groups={{{{}}}}, "
                   "to_apply=%add\n" for i in range(11))
    path = dump(module(body + "  ROOT %out = f32[8]{0} copy(%p)\n", replica_count=2))
    code, out, _ = run(capsys, "inspect", path)
    assert code == 1
    assert out.splitlines()[-1] == f"{path}: ... 1 more collective that could not be resolved"


def test_gzip_input(capsys, tmp_path):
    path = tmp_path / "m.hlo.gz"
    path.write_bytes(gzip.compress(FLATTENED_2X2.encode()))
    assert rows(capsys, str(path))["collectives"][0]["device_groups"] == [[0, 2], [1, 3]]


def test_stdin_dash():
    done = subprocess.run(
        [sys.executable, "-m", "meshtopo", "inspect", "-", "--json"],
        input=FLATTENED_2X2,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    payload = json.loads(done.stdout)
    assert payload["source"] == "<stdin>"
    assert payload["collectives"][0]["device_groups"] == [[0, 2], [1, 3]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.hlo"], "meshtopo: error: cannot read HLO file missing.hlo: No such file or directory\n"),
        (
            ["{path}", "--device-assignment", "0,1,2,3"],
            "meshtopo: error: --device-assignment is 1 x 4 but the grid is 2 replicas x 2 partitions\n",
        ),
        (
            ["{path}", "--device-assignment", "0,x;1,2"],
            "meshtopo: error: --device-assignment expects comma-separated ints, got '0,x'\n",
        ),
    ],
    ids=["missing-file", "assignment-shape", "assignment-syntax"],
)
def test_bad_input_exits_2_with_one_line(capsys, dump, monkeypatch, tmp_path, args, message):
    monkeypatch.chdir(tmp_path)
    path = dump(FLATTENED_2X2)
    code, out, err = run(capsys, "inspect", *[a.replace("{path}", path) for a in args])
    assert (code, out, err) == (2, "", message)


def test_parse_error_names_file_line_and_column(capsys, dump):
    path = dump(module("  ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1}, to_apply=%add\n"))
    code, out, err = run(capsys, "inspect", path)
    assert (code, out) == (2, "")
    assert err.startswith("meshtopo: error: ") and path in err and ":11:" in err
    assert err.count("\n") == 1


def test_dump_without_collectives_reports_the_header_grid(capsys, dump):
    text = "HloModule m, replica_count=2\nENTRY %e (p: f32[8]) -> f32[8] {\n  ROOT %p = f32[8]{0} parameter(0)\n}\n"
    path = dump(text)
    code, out, _ = run(capsys, "inspect", path)
    assert (code, out) == (0, f"{path}: 0 collectives on 2 replicas x 1 partition, {DEFAULT_PLACEMENT}\n")
    payload = rows(capsys, path, "--num-partitions", "2")
    assert (payload["device_assignment"], payload["collectives"]) == ([[0, 2], [1, 3]], [])


WRITTEN_ACROSS_LINES = module(
    "  %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1},\n{2,3}}, to_apply=%add\n"
    "  ROOT %b = f32[8]{0} all-reduce(%a), replica_groups={{0,2},/*x*/{1,3}}, to_apply=%add\n",
    replica_count=4,
)


def test_written_groups_are_shown_on_one_line_without_comments(capsys, dump, tmp_path):
    path = dump(WRITTEN_ACROSS_LINES)
    code, out, err = run(capsys, "inspect", path)
    assert (code, err) == (0, "")
    table = out.splitlines()[1:4]
    assert [line.split()[:5] for line in table[1:]] == [
        ["a", "all-reduce", "kCrossReplica", "{{0,1},{2,3}}", "{{0,1},{2,3}}"],
        ["b", "all-reduce", "kCrossReplica", "{{0,2},{1,3}}", "{{0,2},{1,3}}"],
    ]
    assert len(out.splitlines()) == 5  # the header line, the table of two rows, the note
    payload = rows(capsys, path)
    assert [c["replica_groups"] for c in payload["collectives"]] == ["{{0,1},{2,3}}",
                                                                     "{{0,2},{1,3}}"]
    page = tmp_path / "report.html"
    code, _, err = run(capsys, "inspect", path, "--html", str(page))
    html = page.read_text()
    assert (code, err) == (0, "")
    assert "<code>{{0,1},{2,3}}</code>" in html and "<code>{{0,2},{1,3}}</code>" in html
    assert "/*x*/" not in html and "{{0,1},\n" not in html


@pytest.mark.parametrize(("written", "printed"), [
    ("{{0,1},\n{2,3}}", "{{0,1},{2,3}}"),
    ("{{0,2},/*x*/{1,3}}", "{{0,2},{1,3}}"),
    ("{ {0, 1} , // two\n {2 ,3} }", "{{0,1},{2,3}}"),
    ("[4,2]<=[2,4]T(1, 0)", "[4,2]<=[2,4]T(1,0)"),
    ("mesh['x'=2,\n'y'=4]{'y'}", "mesh['x'=2,'y'=4] {'y'}"),
    ("mesh['a'=2,'b'=4],device_ids=([2,2,2]T(1,0,2))  {'b':(2)2}",
     "mesh['a'=2,'b'=4], device_ids=([2,2,2]T(1,0,2)) {'b':(2)2}"),
])
def test_printed_groups_is_xla_s_one_line_form(written, printed):
    import meshtopo as mt

    assert mt.hlo.printed_groups(written) == printed

"""``/api/hlo``: a dump's collectives through the library's parser, ready for ``/api/groups``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from meshtopo.explore import ExplorerServer

from .conftest import USER_MESH_ORDER, Client

EXAMPLE = resources.files("meshtopo.explore").joinpath("static", "example.hlo").read_text()


def test_example_dump_lists_every_collective_in_text_order(client: Client) -> None:
    reply = client.post("/api/hlo", {"text": EXAMPLE})
    assert reply.status == 200, reply.body
    body = reply.body
    module = {k: v for k, v in body["module"].items() if k != "device_assignment"}
    assert module == {"name": "example_dp2_tp4", "replica_count": 2, "num_partitions": 4}
    assert body["module"]["device_assignment"]["table"] == [[0, 2, 4, 6], [1, 3, 5, 7]]
    rows = [(c["name"], c["opcode"], c["mode"], c["replica_groups"]) for c in body["collectives"]]
    assert rows == [
        ("grads", "all-reduce", "kCrossReplica", "{{0,1}}"),
        ("tp", "all-reduce", "kCrossReplicaAndPartition", "{{0,1,2,3}}"),
        ("tp_flat", "all-reduce", "kFlattenedID", "[2,4]<=[8]"),
        ("dp_flat", "all-reduce", "kFlattenedID", "[4,2]<=[2,4]T(1,0)"),
        ("gathered", "all-gather", "kFlattenedID", "mesh['data'=2,'model'=4] {'model'}"),
        ("ars", "all-reduce-start", "kFlattenedID", "{{0,1,2,3,4,5,6,7}}"),
        ("ard", "all-reduce-done", "kFlattenedID", "{{0,1,2,3,4,5,6,7}}"),
        ("shifted", "collective-permute", "kCrossPartition", None),
        ("bad", "all-reduce", "kFlattenedID", "{{0,1,2},{3,4,5}}"),
        ("out", "reduce-scatter", "kFlattenedID", "[2,4]<=[8]"),
    ]
    by_name = {c["name"]: c for c in body["collectives"]}
    assert by_name["ard"]["is_done"] is True and by_name["ard"]["start"] == "ars"
    assert (by_name["grads"]["line"], by_name["grads"]["column"]) == (11, 3)
    shifted = by_name["shifted"]
    assert shifted["source_target_pairs"] == [[0, 1], [1, 2], [2, 3], [3, 0]]
    assert shifted["groups_request"] == {
        "opcode": "collective-permute",
        "channel_id": True,
        "use_global_device_ids": None,
        "groups": "{{0,1},{1,2},{2,3},{3,0}}",
        "shapes": {"operand": [64], "result": [64], "dimension": 0},
    }


@pytest.mark.parametrize(
    ("name", "device_groups"),
    [
        ("grads", [[0, 1], [2, 3], [4, 5], [6, 7]]),
        ("tp_flat", [[0, 2, 4, 6], [1, 3, 5, 7]]),
        ("dp_flat", [[0, 1], [2, 3], [4, 5], [6, 7]]),
        ("gathered", [[0, 2, 4, 6], [1, 3, 5, 7]]),
        ("shifted", [[0, 2], [2, 4], [4, 6], [6, 0], [1, 3], [3, 5], [5, 7], [7, 1]]),
    ],
)
def test_groups_request_reproduces_the_library_device_groups(
    client: Client, name: str, device_groups: list[list[int]]
) -> None:
    body = client.post("/api/hlo", {"text": EXAMPLE}).body
    collective = next(c for c in body["collectives"] if c["name"] == name)
    module = body["module"]
    answer = client.groups(
        replicas=module["replica_count"],
        partitions=module["num_partitions"],
        **collective["groups_request"],
    )
    assert answer["mode"]["name"] == collective["mode"]
    assert answer["device_groups"]["groups"] == device_groups
    assert answer["pairs"] is (collective["source_target_pairs"] is not None)


def test_verifier_findings_name_instruction_line_and_column(client: Client) -> None:
    findings = client.post("/api/hlo", {"text": EXAMPLE}).body["findings"]
    assert [(f["instruction"], f["line"], f["column"]) for f in findings] == [
        ("tp", 12, 3),
        ("bad", 19, 3),
    ]
    assert findings[0]["message"].startswith(
        "In kCrossReplicaAndPartition mode, replica groups should contain 2 replicas, but found 4: "
        "tp = f32[64] all-reduce(grads)"
    )


def test_header_counts_can_be_overridden(client: Client) -> None:
    body = client.post("/api/hlo", {"text": EXAMPLE, "replica_count": 4}).body
    assert body["module"]["replica_count"] == 4


def test_parse_errors_are_400_with_line_and_column(client: Client) -> None:
    text = EXAMPLE.replace("replica_groups={{0,1}}", "replica_groups={{0,x}}")
    reply = client.post("/api/hlo", {"text": text})
    assert reply.status == 400
    error = reply.body["error"]
    assert error["kind"] == "HloParseError"
    assert (error["line"], error["column"]) == (11, 53)
    assert error["message"] == "11:53: expects integer"  # XLA's words


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "field 'text' is required (a string)"),
        ({"text": 3}, "field 'text' must be a string, got an integer"),
        (
            {"text": "HloModule m", "replica_count": 0},
            "field 'replica_count' must be at least 1, got 0",
        ),
    ],
)
def test_bad_hlo_requests(client: Client, body: dict[str, object], message: str) -> None:
    reply = client.post("/api/hlo", body)
    assert reply.status == 400
    assert reply.body["error"]["message"] == message


def test_groups_written_across_lines_or_with_comments_come_back_on_one_line(
    client: Client,
) -> None:
    text = (
        "HloModule m, replica_count=4\n\nadd {\n  x = f32[] parameter(0)\n"
        "  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\nENTRY e {\n"
        "  p = f32[8] parameter(0)\n"
        "  a = f32[8] all-reduce(p), replica_groups={{0,1},\n{2,3}}, to_apply=add\n"
        "  ROOT b = f32[8] all-reduce(a), replica_groups={{0,2},/*x*/{1,3}}, to_apply=add\n}\n"
    )
    reply = client.post("/api/hlo", {"text": text})
    assert reply.status == 200, reply.body
    found = [(c["replica_groups"], c["groups_request"]["groups"]) for c in reply.body["collectives"]]
    assert found == [("{{0,1},{2,3}}", "{{0,1},{2,3}}"), ("{{0,2},{1,3}}", "{{0,2},{1,3}}")]


@pytest.mark.jax
def test_a_named_dump_comes_with_the_device_assignment_xla_dumped(
    client: Client, server: ExplorerServer, permuted_dump: Path, named_permuted_dump: Path
) -> None:
    options = named_permuted_dump
    dump = client.get("/api/dump").body
    server.initial_dump = None  # what follows reads text, not the named file
    module = dump["result"]["module"]
    assert (module["replica_count"], module["num_partitions"]) == (1, 8)
    assert module["device_assignment"] == {
        "source": "dump",
        "table": [list(USER_MESH_ORDER)],
        "origin": f"device assignment from {options}",
    }
    [psum] = [c for c in dump["result"]["collectives"] if c["opcode"] == "all-reduce"]
    # What the page sends for it: the module's grid and its table.
    groups = client.groups(
        replicas=module["replica_count"], partitions=module["num_partitions"],
        device_assignment=module["device_assignment"]["table"], **psum["groups_request"])
    assert groups["device_groups"]["groups"] == [[3, 0, 6, 1], [7, 2, 5, 4]]
    # The same text pasted into the page has no table beside it: XLA's default, said so.
    pasted = client.post("/api/hlo", {"text": permuted_dump.read_text()}).body
    assert pasted["module"]["device_assignment"] == {
        "source": "default",
        "table": [list(range(8))],
        "origin": "the groups use XLA's default placement, DA[r][p] = p·R + r: no "
                  "compile_options.textproto came with this module; give it (open the dump's "
                  "directory) or paste the device table if the job placed devices otherwise",
    }

"""The device table a client gives with its module: ``compile_options`` text (a page that
opened a dump directory) or a ``device_assignment`` table, for ``/api/hlo`` and
``/api/order``. With the compile options XLA wrote for a real permuted-mesh JAX dump, both
answer as ``meshtopo inspect --json`` and ``meshtopo order --json`` do for the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._jax_dump import MESH_ORDER
from .conftest import Client


def options_of(dump_file: Path) -> str:
    return (dump_file.parent / dump_file.name.split(".cpu_")[0] /
            "compile_options.textproto").read_text()


def groups_of(answer: dict[str, Any], client: Client) -> dict[str, list[list[int]]]:
    """Each collective's device groups, as /api/groups gives them for its groups_request."""
    module = answer["module"]
    found = {}
    for c in answer["collectives"]:
        body = {**c["groups_request"], "replicas": module["replica_count"],
                "partitions": module["num_partitions"],
                "device_assignment": module["device_assignment"]["table"]}
        found[c["name"]] = sorted(client.groups(**body)["device_groups"]["groups"])
    return found


def lanes_of(answer: dict[str, Any]) -> dict[int, list[tuple[str, list[int]]]]:
    return {lane["device"]: [(a["name"], answer["cliques"][a["clique"]])
                             for a in lane["arrivals"]]
            for lane in answer["lanes"]}


def test_compile_options_place_the_module_as_the_cli(client: Client, dump_file: Path,
                                                     cli: dict[str, Any]) -> None:
    body = {"text": dump_file.read_text(), "compile_options": options_of(dump_file),
            "compile_options_name": "module_0004.jit_body/compile_options.textproto"}
    reply = client.post("/api/hlo", body)
    assert reply.status == 200, reply.body
    placement = reply.body["module"]["device_assignment"]
    assert placement["source"] == "given"
    assert placement["table"] == cli["table"] == [list(MESH_ORDER)]
    assert placement["origin"] == (
        "device assignment from module_0004.jit_body/compile_options.textproto")
    assert groups_of(reply.body, client) == cli["groups"]
    ordered = client.post("/api/order", body)
    assert ordered.status == 200, ordered.body
    assert lanes_of(ordered.body) == cli["lanes"]


def test_a_table_places_the_order_as_the_cli(client: Client, dump_file: Path,
                                             cli: dict[str, Any]) -> None:
    reply = client.post("/api/order", {"text": dump_file.read_text(),
                                       "device_assignment": [list(MESH_ORDER)]})
    assert reply.status == 200, reply.body
    assert lanes_of(reply.body) == cli["lanes"]
    # Without it, XLA's default placement: other cliques than the job's.
    default = client.post("/api/order", {"text": dump_file.read_text()})
    assert lanes_of(default.body) != cli["lanes"]


@pytest.mark.parametrize(
    ("extra", "status", "message"),
    [
        ({"device_assignment": [[0, 1, 2]]}, 400,
         "device_assignment is 1 x 3 (replicas x partitions) but module jit_body has "
         "replica_count=1, num_partitions=8; give a table with one row per replica and one "
         "column per partition"),
        ({"device_assignment": [[0, 0, 1, 2, 3, 4, 5, 6]]}, 400, None),
        ({"device_assignment": [[0]], "compile_options": "x: 1"}, 400,
         "give either 'compile_options' or 'device_assignment', not both"),
        ({"compile_options": "executable_build_options { num_partitions: 8 }"}, 400,
         "compile_options.textproto holds no device_assignment; XLA wrote none for this "
         "module, so it runs on the default placement"),
        ({"compile_options_name": "a"}, 400,
         "field 'compile_options_name' goes with 'compile_options'"),
    ],
    ids=["wrong-shape", "repeated-id", "both", "no-table", "name-alone"],
)
def test_a_table_that_does_not_fit_is_refused(client: Client, dump_file: Path,
                                              extra: dict[str, Any], status: int,
                                              message: str | None) -> None:
    for path in ("/api/hlo", "/api/order"):
        reply = client.post(path, {"text": dump_file.read_text(), **extra})
        assert reply.status == status, reply.body
        if message is not None:
            assert reply.body["error"]["message"] == message
        assert "device" in reply.body["error"]["message"] or "compile" in reply.body["error"]["message"]


def test_a_table_goes_with_one_module(client: Client, dump_file: Path) -> None:
    reply = client.post("/api/order", {"programs": [{"text": dump_file.read_text(),
                                                     "devices": [0]}],
                                       "device_assignment": [list(MESH_ORDER)]})
    assert reply.status == 400
    assert reply.body["error"]["message"] == (
        "field 'device_assignment' goes with 'text' (one module); each program's header "
        "gives its own counts")

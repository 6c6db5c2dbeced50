"""``/api/order``: the order layer's report shaped as lanes, rendezvous, findings and frames."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import meshtopo as mt
from meshtopo.explore._order import ARRIVAL_BUDGET, FRAME_LIMIT, LANE_LIMIT

from .conftest import Client

ROOT = Path(__file__).resolve().parents[2]
STATIC = resources.files("meshtopo.explore").joinpath("static")
FORWARD = (ROOT / "examples/order_forward.hlo").read_text()
BACKWARD = (ROOT / "examples/order_backward.hlo").read_text()
OPPOSITE = {"programs": [{"text": FORWARD, "devices": [0, 2, 3]},
                         {"text": BACKWARD, "devices": [1]}]}
ADD = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""


def spmd(partitions: int, body: str) -> str:
    return (f"HloModule m, num_partitions={partitions}\n{ADD}"
            "ENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
            f"{body}  ROOT %out = f32[8]{{0}} copy(%p)\n}}\n")


def order(client: Client, body: dict[str, Any]) -> dict[str, Any]:
    reply = client.post("/api/order", body)
    assert reply.status == 200, reply.body
    return reply.body


def test_the_page_ships_the_repository_examples_unchanged() -> None:
    for name in ("order_forward.hlo", "order_backward.hlo"):
        assert STATIC.joinpath(name).read_text() == (ROOT / "examples" / name).read_text()


def test_two_devices_in_opposite_order_deadlock_in_lanes(client: Client) -> None:
    body = order(client, OPPOSITE)
    assert (body["error"], body["spmd"], body["devices"], body["ok"]) == (None, False, 4, False)
    assert body["programs"] == [{"name": "order_forward", "devices": [0, 2, 3]},
                                {"name": "order_backward", "devices": [1]}]
    lanes = [(lane["device"], lane["program"], [a["name"] for a in lane["arrivals"]])
             for lane in body["lanes"]]
    assert lanes == [(0, 0, ["grads", "stats"]), (1, 1, ["stats", "grads"]),
                     (2, 0, ["grads", "stats"]), (3, 0, ["grads", "stats"])]
    # Devices 0 and 1 issue their first collective and wait there forever; the second is
    # never issued.
    first, second = body["lanes"][1]["arrivals"]
    assert (first["issued"], first["blocked"], second["issued"]) == (True, True, False)
    # Each distinct clique once, in the order the lanes first name it; arrivals and
    # rendezvous name theirs by index.
    cliques = body["cliques"]
    assert cliques == [[0, 1, 2, 3], [0, 1], [2, 3]]
    assert (cliques[first["clique"]], first["rank"], first["position"]) == ([0, 1], 1, 0)
    meetings = [(m["names"], cliques[m["clique"]], m["members"], m["arrived"], m["complete"])
                for m in body["rendezvous"]]
    assert meetings == [
        (["grads"], [0, 1, 2, 3], [[0, 0], [1, 1], [2, 0], [3, 0]], 3, False),
        (["stats"], [0, 1], [[0, 1], [1, 0]], 1, False),
        (["stats"], [2, 3], [[2, 1], [3, 1]], 0, False),
    ]
    assert [a["rendezvous"] for a in body["lanes"][0]["arrivals"]] == [0, 1]
    (finding,) = body["findings"]
    assert (finding["type"], finding["devices"], finding["instructions"]) == (
        "deadlock", [0, 1], ["grads", "stats"])
    assert finding["message"] == mt.order.analyze(
        [(mt.hlo.parse_module(FORWARD), [0, 2, 3]),
         (mt.hlo.parse_module(BACKWARD), [1])]).findings[0].message
    assert (finding["lanes"], finding["blocks"], finding["cycle"]) == (
        [0, 1], [[0, 0], [1, 0]], [[0, 0], [1, 0]])


def test_the_run_step_by_step_ends_in_the_hang(client: Client) -> None:
    frames = order(client, OPPOSITE)["timeline"]
    assert [(f["time"], f["kind"], f["members"]) for f in frames] == [
        (0, "arrive", [[0, 0]]), (0, "arrive", [[1, 0]]), (0, "arrive", [[2, 0]]),
        (0, "arrive", [[3, 0]]), (1, "hang", [[0, 0], [1, 0], [2, 0], [3, 0]])]
    assert frames[1]["text"] == "device 1 arrives at stats on clique [0,1] as rank 1: 1 of 2 there"
    assert frames[3]["text"] == (
        "device 3 arrives at grads on clique [0,1,2,3] as rank 3: 3 of 4 there")
    assert frames[4]["text"] == (
        "no device can move; each waits forever: device 0 in grads, device 1 in stats, "
        "device 2 in grads, device 3 in grads; the waits-for cycle: device 0 waits for device "
        "1, device 1 waits for device 0")


def test_a_clean_spmd_dump_completes_every_rendezvous(client: Client) -> None:
    text = spmd(4, "  %a = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups=[2,2]<=[4], "
                   "use_global_device_ids=true, to_apply=%add\n"
                   "  %b = f32[8]{0} all-reduce(%a), channel_id=2, replica_groups=[2,2]<=[2,2]T(1,0), "
                   "use_global_device_ids=true, to_apply=%add\n")
    body = order(client, {"text": text})
    assert (body["ok"], body["spmd"], body["findings"], body["capped"], body["note"]) == (
        True, True, [], False, None)
    assert [[body["cliques"][a["clique"]] for a in lane["arrivals"]]
            for lane in body["lanes"]] == [
        [[0, 1], [0, 2]], [[0, 1], [1, 3]], [[2, 3], [0, 2]], [[2, 3], [1, 3]]]
    assert body["cliques"] == [[0, 1], [0, 2], [1, 3], [2, 3]]
    assert all(m["complete"] and m["arrived"] == m["needed"] for m in body["rendezvous"])
    kinds = [f["kind"] for f in body["timeline"]]
    assert kinds == ["arrive"] * 4 + ["complete"] * 2 + ["arrive"] * 4 + ["complete"] * 2
    assert body["timeline"][4]["text"] == "a on clique [0,1] completes: all its members go on"


def test_large_modules_cap_the_lanes_and_the_answer(client: Client) -> None:
    # 64 lanes share the arrivals: 128 each.
    per_lane = ARRIVAL_BUDGET // LANE_LIMIT
    assert per_lane == 128
    steps = "".join(f"  %r{i} = f32[8]{{0}} all-reduce(%p), channel_id={i + 1}, "
                    "replica_groups=[1,1024]<=[1024], use_global_device_ids=true, "
                    "to_apply=%add\n" for i in range(per_lane + 2))
    reply = client.post("/api/order", {"text": spmd(1024, steps)})
    assert reply.status == 200
    body = reply.body
    assert (body["devices"], body["shown"], body["capped"]) == (1024, LANE_LIMIT, True)
    assert [lane["device"] for lane in body["lanes"]] == list(range(LANE_LIMIT))
    assert body["note"] == (
        "showing 64 of 1024 devices (the devices the findings name first, then the lowest "
        "ids); lanes are capped at 64, so rendezvous with devices not shown are drawn only "
        "between the lanes present")
    lane = body["lanes"][0]
    assert (len(lane["arrivals"]), lane["count"], lane["truncated"]) == (
        per_lane, per_lane + 2, True)
    assert (len(body["timeline"]), body["timeline_truncated"]) == (FRAME_LIMIT, True)
    assert {(m["needed"], len(m["members"])) for m in body["rendezvous"]} == {(1024, LANE_LIMIT)}
    # 8,192 arrivals on one clique of 1,024 devices write it once.
    assert body["cliques"] == [list(range(1024))]
    assert {a["clique"] for lane in body["lanes"] for a in lane["arrivals"]} == {0}


def test_a_few_lanes_show_every_arrival_of_a_long_run(client: Client) -> None:
    """500 all-reduces on 8 devices: every lane holds all 500, in the module's order."""
    steps = "".join(f"  %r{i} = f32[8]{{0}} all-reduce(%p), channel_id={i + 1}, "
                    "replica_groups=[1,8]<=[8], use_global_device_ids=true, "
                    "to_apply=%add\n" for i in range(500))
    body = order(client, {"text": spmd(8, steps)})
    assert body["shown"] == 8 and body["ok"]
    for lane in body["lanes"]:
        assert (lane["count"], lane["truncated"]) == (500, False)
        assert [a["name"] for a in lane["arrivals"]] == [f"r{i}" for i in range(500)]
    assert len(body["rendezvous"]) == 500


def test_lanes_can_be_chosen_and_a_cycle_needs_all_its_lanes(client: Client) -> None:
    body = order(client, {**OPPOSITE, "lanes": [3, 1]})
    assert [lane["device"] for lane in body["lanes"]] == [1, 3]
    assert body["note"].startswith("showing 2 of 4 devices (the devices asked for)")
    (finding,) = body["findings"]
    assert (finding["lanes"], finding["blocks"], finding["cycle"]) == ([0], [[0, 0]], [])


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({}, 400, "give either 'text' (one module, SPMD) or 'programs' (MPMD)"),
        ({"text": FORWARD, **OPPOSITE}, 400,
         "give either 'text' (one module, SPMD) or 'programs' (MPMD)"),
        ({"text": FORWARD, "lanes": [9]}, 400,
         "field 'lanes' names device 9, which is not one of the 4 devices analysed"),
        ({"text": FORWARD, "lanes": list(range(65))}, 400,
         "field 'lanes' has 65 entries, more than the explorer's limit of 64"),
        ({"programs": []}, 400,
         "field 'programs' must be an array of 1 to 64 objects {\"text\", \"devices\"}"),
        ({"programs": [{"text": FORWARD}]}, 400,
         "field 'programs[0].devices' must be an array of integers, got null"),
        ({"programs": [{"text": FORWARD, "devices": [0], "x": 1}]}, 400,
         "unknown field 'programs[0].x'; known fields are 'programs[0].text', "
         "'programs[0].devices'"),
        ({"programs": OPPOSITE["programs"], "num_partitions": 4}, 400,
         "field 'num_partitions' goes with 'text' (one module); each program's header gives its own counts"),
        ({"text": "HloModule m\nENTRY %e {"}, 400, None),
    ],
)
def test_bad_requests_are_refused_with_a_message(
        client: Client, body: dict[str, Any], status: int, message: str | None) -> None:
    reply = client.post("/api/order", body)
    assert reply.status == status
    error = reply.body["error"]
    if message is None:
        assert error["kind"] == "HloParseError" and error["line"] >= 1
    else:
        assert error["message"] == message


def test_a_module_the_order_layer_refuses_is_an_answer_with_its_reason(client: Client) -> None:
    text = STATIC.joinpath("example.hlo").read_text()  # {{0,1,2,3}} on two replicas
    body = order(client, {"text": text})
    assert body == {
        "programs": [{"name": "example_dp2_tp4", "devices": None}],
        "error": "InvalidArgumentError: replica group id 2 is out of range in "
                 "kCrossReplicaAndPartition mode: there are 2 replicas (ids 0..1) in replica "
                 "groups {{0,1,2,3}}",
        "ok": False,
    }


def test_order_takes_post_only(client: Client) -> None:
    reply = client.get("/api/order")
    assert (reply.status, reply.body["error"]["message"]) == (405, "/api/order takes POST")


def test_a_conditional_on_partition_id_shows_each_device_its_branch(client: Client) -> None:
    text = STATIC.joinpath("order_conditional.hlo").read_text()
    body = order(client, {"text": text})
    assert body["spmd"] is True
    taken = [[(a["name"], a["taken"], a["rendezvous"]) for a in lane["arrivals"]]
             for lane in body["lanes"]]
    assert taken == [[("sum", True, 0), ("gather", True, 1)],
                     [("gather2", True, 0), ("sum2", True, 1)]]
    assert body["lanes"][1]["arrivals"][0]["branches"] == [["c", 1]]
    # Collectives meet by arrival order on the clique: sum meets gather2, gather meets sum2.
    assert [(m["names"], m["complete"]) for m in body["rendezvous"]] == [
        (["sum", "gather2"], True), (["gather", "sum2"], True)]
    assert [(f["type"], f["instructions"]) for f in body["findings"]] == [
        ("mismatch", ["gather2", "sum"]), ("mismatch", ["sum2", "gather"])]
    assert body["timeline"] != [] and body["timeline_note"] is None
    # The branches are the runtime's: the collectives each device issues.
    module = mt.hlo.parse_module(text)
    assert [[i.name for i in mt.runtime.issue_order(module, d, module.device_assignment)]
            for d in (0, 1)] == [["sum", "gather"], ["gather2", "sum2"]]


def test_a_mismatch_names_the_rendezvous_it_pairs_wrongly(client: Client) -> None:
    """The conditional on partition-id: partition 0 issues sum then gather, partition 1
    gather2 then sum2, so arrival order pairs sum with gather2 and gather with sum2."""
    text = (STATIC / "order_conditional.hlo").read_text()
    body = order(client, {"text": text})
    assert [[a["name"] for a in lane["arrivals"]] for lane in body["lanes"]] == [
        ["sum", "gather"], ["gather2", "sum2"]]
    pairs = [sorted(body["rendezvous"][n]["names"]) for f in body["findings"]
             for n in f["rendezvous"]]
    assert [f["type"] for f in body["findings"]] == ["mismatch", "mismatch"]
    assert pairs == [["gather2", "sum"], ["gather", "sum2"]]


def post_text(client: Client, text: str | bytes, query: str = "") -> Any:
    """POST a module as the body itself (text/plain), other fields in the query string."""
    data = text.encode() if isinstance(text, str) else text
    return client.request("POST", "/api/order" + query, data,
                          {"Content-Type": "text/plain; charset=utf-8"})


def test_a_module_sent_as_text_is_the_request_with_that_text(client: Client) -> None:
    text = STATIC.joinpath("order_conditional.hlo").read_text()
    reply = post_text(client, text, "?lanes=%5B1%5D&num_partitions=2")
    assert reply.status == 200
    assert reply.body == order(client, {"text": text, "lanes": [1], "num_partitions": 2})
    assert [lane["device"] for lane in reply.body["lanes"]] == [1]


@pytest.mark.parametrize(
    ("query", "data", "message"),
    [
        ("?lanes=[9]", FORWARD.encode(),
         "field 'lanes' names device 9, which is not one of the 4 devices analysed"),
        ("?lanes=0,1", FORWARD.encode(), "query parameter 'lanes' must be a JSON value, got '0,1'"),
        ("?text=%22x%22", FORWARD.encode(),
         "query parameter 'text' is not taken: the body is the module text"),
        ("?lanes=[0]&lanes=[1]", FORWARD.encode(), "query parameter 'lanes' is given twice"),
        ("?programs=[]", FORWARD.encode(),
         "give either 'text' (one module, SPMD) or 'programs' (MPMD)"),
        ("", b"HloModule m\xff", "request body is not UTF-8: invalid start byte"),
    ],
)
def test_a_module_sent_as_text_is_refused_in_the_json_requests_words(
        client: Client, query: str, data: bytes, message: str) -> None:
    reply = post_text(client, data, query)
    assert (reply.status, reply.body["error"]["message"]) == (400, message)

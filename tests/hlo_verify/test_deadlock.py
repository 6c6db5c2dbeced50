"""The send/recv deadlock checker (spec 5.6): scheduled modules, on request only."""

from __future__ import annotations

import meshtopo.hlo as hlo

from ._modules import SUM


def module(body: str, scheduled: bool = True) -> hlo.Module:
    flag = ", is_scheduled=true" if scheduled else ""
    lines = [f"HloModule m{flag}, num_partitions=4", SUM, "ENTRY %main {",
             "  %p = f32[8]{0} parameter(0)", "  %tok = token[] after-all()"]
    lines += ["  " + line for line in body.strip().splitlines()]
    return hlo.parse_module("\n".join([*lines, "}", ""]))


def send(name: str, pairs: str, channel: int = 1) -> str:
    return (f"%{name} = (f32[8]{{0}}, u32[], token[]) send(%p, %tok), channel_id={channel}, "
            f'frontend_attributes={{_xla_send_recv_source_target_pairs="{pairs}"}}\n'
            f"%{name}-done = token[] send-done(%{name}), channel_id={channel}")


def recv(name: str, pairs: str, channel: int = 1) -> str:
    return (f"%{name} = (f32[8]{{0}}, u32[], token[]) recv(%tok), channel_id={channel}, "
            f'frontend_attributes={{_xla_send_recv_source_target_pairs="{pairs}"}}\n'
            f"%{name}-done = (f32[8]{{0}}, token[]) recv-done(%{name}), channel_id={channel}")


TAIL = "ROOT %r = f32[8]{0} get-tuple-element(%recv-done), index=0"


def deadlocks(body: str, scheduled: bool = True) -> list[tuple[str, int, str]]:
    found = hlo.verify(module(body, scheduled), verify_no_collective_deadlocks=True)
    return [(f.instruction, f.line, f.message) for f in found if f.check == "deadlock"]


def test_matched_send_and_recv_pass() -> None:
    body = "\n".join([recv("recv", "{{0,1},{1,2}}"), send("send", "{{0,1},{1,2}}"), TAIL])
    assert deadlocks(body) == []
    assert hlo.verify(module(body), verify_no_collective_deadlocks=True) == []


def test_cycle_is_rejected_only_when_asked_and_scheduled() -> None:
    body = "\n".join([recv("recv", "{{0,1},{1,0}}"), send("send", "{{0,1},{1,0}}"), TAIL])
    text = ("%recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=1, "
            'frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,0}}"}')
    assert deadlocks(body) == [("recv", 10, "Expected send and recv instructions to have "
                                "non-cyclical source-target pairs, but found " + text)]
    assert deadlocks(body, scheduled=False) == []
    assert hlo.verify(module(body)) == []


def test_duplicate_target_within_one_instruction() -> None:
    body = "\n".join([recv("recv", "{{0,1},{2,1}}"), send("send", "{{0,1},{2,1}}"), TAIL])
    ((name, line, message),) = deadlocks(body)
    assert (name, line) == ("recv", 10)
    assert message.startswith("Expected send and recv instructions to have unique source and "
                              "target pairs, but found %recv = ")


def test_unmatched_recv_at_the_end() -> None:
    body = "\n".join([recv("recv", "{{0,1}}"), TAIL])
    assert deadlocks(body) == [("recv", 10, "Expected send to match recv")]


def test_unmatched_send_at_the_end() -> None:
    body = "\n".join([send("send", "{{0,1}}"), "ROOT %r = f32[8]{0} copy(%p)"])
    assert deadlocks(body) == [("send", 10, "Expected recv to match send")]


def test_pairs_that_do_not_match_deadlock() -> None:
    body = "\n".join([recv("recv", "{{0,1}}"), send("send", "{{1,2}}"), TAIL])
    ((name, line, message),) = deadlocks(body)
    assert (name, line) == ("send", 12)
    assert message.startswith(
        "Expected send and recv instructions to have the same source-target pairs, but could "
        "not match some instructions. Introducing the following instruction will cause a "
        "deadlock:\n%send = ")


def test_two_pending_sends_sharing_a_source() -> None:
    body = "\n".join([send("send", "{{0,1}}"), send("send2", "{{0,2}}", channel=2),
                      recv("recv", "{{0,1}}"), TAIL])
    ((name, line, message),) = deadlocks(body)
    assert (name, line) == ("send2", 12)
    assert message.startswith("Expected send and recv instructions to have unique source and "
                              "target pairs, but found %send2 = ")


def test_collective_while_a_recv_is_pending() -> None:
    body = "\n".join([recv("recv", "{{0,1}}"),
                      "%ar = f32[8]{0} all-reduce(%p), channel_id=3, replica_groups={{0,1,2,3}}, "
                      "use_global_device_ids=true, to_apply=%add",
                      send("send", "{{0,1}}"), TAIL])
    ((name, line, message),) = deadlocks(body)
    assert (name, line) == ("ar", 12)
    assert message.startswith("Expected send or recv, but found %ar = f32[8]{0} all-reduce(%p)")


def test_host_transfers_and_pipelined_ops_are_skipped() -> None:
    pipelined = recv("recv", "{{0,1}}").replace(
        'frontend_attributes={', 'frontend_attributes={_xla_send_recv_pipeline="0",')
    assert deadlocks("\n".join([pipelined, TAIL])) == []
    host = ("%recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=1, is_host_transfer=true\n"
            "%recv-done = (f32[8]{0}, token[]) recv-done(%recv), channel_id=1, "
            "is_host_transfer=true")
    assert deadlocks("\n".join([host, TAIL])) == []

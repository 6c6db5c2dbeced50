"""The send/recv deadlock checker (spec 5.6): scheduled modules, on request only."""

from __future__ import annotations

import pytest

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


def test_pairs_that_do_not_match_are_a_deadlock_at_the_end() -> None:
    body = "\n".join([recv("recv", "{{0,1}}"), send("send", "{{1,2}}"), TAIL])
    ((name, line, message),) = deadlocks(body)
    # The send does not take up the recv, so both stay pending to the end.
    assert (name, line) == ("send", 12)
    assert message.startswith("Deadlock detected. Last checked instructions: %send = ")
    # The whole message: tests/golden/verify-deadlock.txt.


def test_two_pending_sends_that_conflict() -> None:
    body = "\n".join([send("send", "{{0,1}}"), send("send2", "{{0,2}}", channel=2),
                      recv("recv", "{{0,1}}"), TAIL])
    ((name, line, message),) = deadlocks(body)
    assert (name, line) == ("send2", 12)
    assert message.startswith("Expected recv, but found %send2 = ")


def test_two_pending_sends_that_do_not_conflict_wait_for_their_recvs() -> None:
    body = "\n".join([send("send", "{{0,1}}"), send("send2", "{{2,3}}", channel=2),
                      recv("recv", "{{0,1}}"), recv("recv2", "{{2,3}}", channel=2), TAIL])
    assert deadlocks(body) == []


def test_collective_while_a_recv_is_pending() -> None:
    body = "\n".join([recv("recv", "{{0,1}}"),
                      "%ag = f32[32]{0} all-gather(%p), channel_id=3, replica_groups={{0,1,2,3}}, "
                      "use_global_device_ids=true, dimensions={0}",
                      send("send", "{{0,1}}"), TAIL])
    ((name, line, message),) = deadlocks(body)
    assert (name, line) == ("ag", 12)
    assert message == (
        "Expected send and recv instructions to have the same source-target pairs, but could "
        "not match some instructions. Introducing the following instruction will cause a "
        "deadlock:\n%ag = f32[32]{0} all-gather(%p), channel_id=3, replica_groups={{0,1,2,3}}, "
        "use_global_device_ids=true, dimensions={0}")


def test_an_all_reduce_calls_its_reducer_and_is_not_checked() -> None:
    # XLA steps into an instruction's called computations instead of checking it, so an
    # all-reduce (to_apply) between a recv and its send passes.
    body = "\n".join([recv("recv", "{{0,1}}"),
                      "%ar = f32[8]{0} all-reduce(%p), channel_id=3, replica_groups={{0,1,2,3}}, "
                      "use_global_device_ids=true, to_apply=%add",
                      send("send", "{{0,1}}"), TAIL])
    assert deadlocks(body) == []


def test_cycle_is_checked_before_repeats() -> None:
    body = "\n".join([recv("recv", "{{0,0},{0,1}}"), send("send", "{{0,0},{0,1}}"), TAIL])
    ((_, _, message),) = deadlocks(body)
    assert message.startswith("Expected send and recv instructions to have unique source and "
                              "target pairs")  # {0,1} wins for source 0: no cycle
    body = "\n".join([recv("recv", "{{0,1},{0,0}}"), send("send", "{{0,1},{0,0}}"), TAIL])
    ((_, _, message),) = deadlocks(body)
    assert message.startswith("Expected send and recv instructions to have non-cyclical")


def test_host_transfers_and_pipelined_ops_are_skipped() -> None:
    pipelined = recv("recv", "{{0,1}}").replace(
        'frontend_attributes={', 'frontend_attributes={_xla_send_recv_pipeline="0",')
    assert deadlocks("\n".join([pipelined, TAIL])) == []
    host = ("%recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=1, is_host_transfer=true\n"
            "%recv-done = (f32[8]{0}, token[]) recv-done(%recv), channel_id=1, "
            "is_host_transfer=true")
    assert deadlocks("\n".join([host, TAIL])) == []



@pytest.mark.parametrize(("pairs", "message"), [
    # SourceTargetPairs::FromString: each group a pair, then ParseReplicaGroupsOnly's status
    # (HloParserImpl::Error: the first line's columns count from 0, the caret one left).
    ("{{0,1,2}}", "Incorrect element size : {{0,1,2}}"),
    ("{{0,1},}", "Syntax error:\nwas parsing 1:7: error: expects a list to end with kRbrace\n"
                 "{{0,1},}\n      ^"),
    ("{{0,1}} {{1,2}}", "Syntax error:\nExtra content after replica groups"),
])
def test_pairs_xla_cannot_read_are_its_error(pairs: str, message: str) -> None:
    # XLA's parser keeps any string there; the checker reads it before anything else.
    body = "\n".join([recv("recv", pairs), send("send", "{{0,1}}"), TAIL])
    assert deadlocks(body) == [("recv", 10, message)]
    assert deadlocks(body, scheduled=False) == []


def test_pairs_written_as_an_iota_list_are_read() -> None:
    body = "\n".join([recv("recv", "[2,2]<=[4]"), send("send", "[2,2]<=[4]"), TAIL])
    assert deadlocks(body) == []
    collectives = module(body).collectives
    assert [c.source_target_pairs for c in collectives if c.opcode == "recv"] == [
        [(0, 1), (2, 3)]]


def test_a_send_or_recv_without_pairs_is_an_error() -> None:
    lone = ("%recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=1\n"
            "%recv-done = (f32[8]{0}, token[]) recv-done(%recv), channel_id=1")
    assert deadlocks("\n".join([lone, TAIL])) == [(
        "recv", 10, "Instruction %recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=1 "
        "does not have source-target pairs attribute")]

WHILE = """HloModule m, is_scheduled=true, num_partitions=4
%cond (c: (f32[8], token[])) -> pred[] {
  %c = (f32[8]{0}, token[]) parameter(0)
  ROOT %f = pred[] constant(false)
}
%body (b: (f32[8], token[])) -> (f32[8], token[]) {
  %b = (f32[8]{0}, token[]) parameter(0)
  %x = f32[8]{0} get-tuple-element(%b), index=0
  %t = token[] get-tuple-element(%b), index=1
  %send = (f32[8]{0}, u32[], token[]) send(%x, %t), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="PAIRS"}
  %send-done = token[] send-done(%send), channel_id=1
  ROOT %r = (f32[8]{0}, token[]) tuple(%x, %send-done)
}
ENTRY %main (p: f32[8]) -> (f32[8], token[]) {
  %p = f32[8]{0} parameter(0)
  %tok = token[] after-all()
  %recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  %recv-done = (f32[8]{0}, token[]) recv-done(%recv), channel_id=1
  %init = (f32[8]{0}, token[]) tuple(%p, %tok)
  ROOT %w = (f32[8]{0}, token[]) while(%init), condition=%cond, body=%body
}
"""


def test_the_walk_steps_into_called_computations() -> None:
    matched = hlo.parse_module(WHILE.replace("PAIRS", "{{0,1}}"))
    assert hlo.verify(matched, verify_no_collective_deadlocks=True) == []
    unmatched = hlo.parse_module(WHILE.replace("PAIRS", "{{1,0}}"))
    found = hlo.verify(unmatched, verify_no_collective_deadlocks=True)
    assert [(f.instruction, f.check) for f in found] == [("send", "deadlock")]
    assert found[0].message.startswith("Deadlock detected. Last checked instructions: %send = ")

"""Async start/done pairing, send/recv channels and host transfers (spec 5.5), and the order
and positions of findings."""

from __future__ import annotations

from pathlib import Path

import pytest

import meshtopo as mt
import meshtopo.hlo as hlo
from meshtopo.hlo._proto_schema import message_class

from ._modules import SUM, module_text

SEND_RECV = """%tok = token[] after-all()
%send = (f32[8]{0}, u32[], token[]) send(%p, %tok), channel_id=1@SEND
%send-done = token[] send-done(%send), channel_id=1@SEND_DONE
%recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=2@RECV
%recv-done = (f32[8]{0}, token[]) recv-done(%recv), channel_id=2@RECV_DONE
ROOT %r = f32[8]{0} get-tuple-element(%recv-done), index=0"""


def send_recv(**extra: str) -> str:
    body = SEND_RECV
    for key in ("SEND_DONE", "RECV_DONE", "SEND", "RECV"):
        body = body.replace("@" + key, extra.get(key.lower(), ""))
    return body


def messages(body: str, r: int = 2, p: int = 1) -> list[tuple[str, str]]:
    module = hlo.parse_module(module_text(body, r=r, p=p))
    return [(f.instruction, f.message) for f in hlo.verify(module)]


CASES = [
    ("all_reduce_start_done_ok",
     "%ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add\n"
     "ROOT %ard = f32[8]{0} all-reduce-done(%ars)", []),
    ("all_reduce_start_two_dones",
     "%ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add\n"
     "%a = f32[8]{0} all-reduce-done(%ars)\n%b = f32[8]{0} all-reduce-done(%ars)\n"
     "ROOT %t = (f32[8]{0}, f32[8]{0}) tuple(%a, %b)",
     [("ars", "The all-reduce-start instruction requires one consumer, found 2")]),
    ("all_reduce_start_no_done",
     "ROOT %ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add",
     [("ars", "The all-reduce-start instruction requires one consumer, found 0")]),
    ("all_reduce_start_wrong_consumer",
     "%ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add\n"
     "ROOT %a = f32[8]{0} add(%ars, %ars)",
     [("ars", "The consumer of a all-reduce-start instruction needs to be one of "
              "(all-reduce-done), found add")]),
    ("permute_done_operand",
     "ROOT %cpd = f32[8]{0} collective-permute-done(%p)",
     [("cpd", "The operand of a collective-permute-done instruction needs to be "
              "collective-permute-start, found parameter")]),
    ("permute_start_done_ok",
     "%cps = (f32[8]{0}, f32[8]{0}) collective-permute-start(%p), "
     "source_target_pairs={{0,1},{1,0}}\nROOT %cpd = f32[8]{0} collective-permute-done(%cps)",
     []),
    ("send_recv_ok", send_recv(), []),
    ("send_recv_host_transfer_ok",
     send_recv(send=", is_host_transfer=true", send_done=", is_host_transfer=true"), []),
    ("recv_done_host_transfer_differs", send_recv(recv_done=", is_host_transfer=true"),
     [("recv", "Expected instructions to have the same is-host-transfer property: "
               "%recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=2, "
               "%recv-done = (f32[8]{0}, token[]) recv-done(%recv), channel_id=2, "
               "is_host_transfer=true ")]),
    ("send_two_users",
     send_recv().replace("ROOT %r =", "%extra = (f32[8]{0}, u32[], token[]) copy(%send)\n"
                                      "ROOT %r ="),
     [("send", "The send instruction requires one consumer, found 2")]),
    ("send_done_operand_through_tuple_ok",
     "%tok = token[] after-all()\n"
     "%send = (f32[8]{0}, u32[], token[]) send(%p, %tok), channel_id=1\n"
     "%t = ((f32[8]{0}, u32[], token[])) tuple(%send)\n"
     "%g = (f32[8]{0}, u32[], token[]) get-tuple-element(%t), index=0\n"
     "ROOT %send-done = token[] send-done(%g), channel_id=1", []),
    ("all_reduce_shares_channel_with_send",
     send_recv().replace("ROOT %r = f32[8]{0} get-tuple-element(%recv-done), index=0",
                         "%r = f32[8]{0} get-tuple-element(%recv-done), index=0\n"
                         "ROOT %ar = f32[8]{0} all-reduce(%r), channel_id=1, "
                         "replica_groups={{0,1}}, to_apply=%add"), []),
]


@pytest.mark.parametrize("body,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_async_and_channels(body: str, expected: list[tuple[str, str]]) -> None:
    assert messages(body) == expected


def host_transfer_module(second_shape: str) -> str:
    return module_text(
        "%tok = token[] after-all()\n"
        "%snd1 = (f32[8]{0}, u32[], token[]) send(%p, %tok), channel_id=5, is_host_transfer=true\n"
        "%d1 = token[] send-done(%snd1), channel_id=5, is_host_transfer=true\n"
        f"%snd2 = ({second_shape}, u32[], token[]) send(%q, %d1), channel_id=5, "
        "is_host_transfer=true\n"
        "ROOT %d2 = token[] send-done(%snd2), channel_id=5, is_host_transfer=true",
        params=f"%p = f32[8]{{0}} parameter(0)\n%q = {second_shape} parameter(1)")


def test_host_transfers_on_one_channel_identical_up_to_operands() -> None:
    assert hlo.verify(hlo.parse_module(host_transfer_module("f32[8]{0}"))) == []
    findings = hlo.verify(hlo.parse_module(host_transfer_module("f32[4]{0}")))
    assert [(f.instruction, f.check) for f in findings] == [("snd2", "channels")]
    # Its message: tests/golden/verify-channels.txt.


ASYNC_MODULE = """HloModule m, replica_count=2
{sum}
%wrapped (p0: f32[8]) -> f32[8] {{
  %p0 = f32[8]{{0}} parameter(0)
  ROOT %ar = f32[8]{{0}} all-reduce(%p0), replica_groups={groups}, to_apply=%add
}}
ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %as = ((f32[8]{{0}}), f32[8]{{0}}, u32[]) async-start(%p), calls=%wrapped
  {tail}
}}
"""


def test_async_wrapped_collective_ok_and_checked() -> None:
    tail = "ROOT %ad = f32[8]{0} async-done(%as)"
    ok = hlo.parse_module(ASYNC_MODULE.format(sum=SUM, groups="{{0,1}}", tail=tail))
    assert hlo.verify(ok) == []
    bad = hlo.parse_module(ASYNC_MODULE.format(sum=SUM, groups="{{0,1,2}}", tail=tail))
    findings = hlo.verify(bad)
    assert [(f.instruction, f.opcode, f.line, f.column) for f in findings] == [
        ("ar", "all-reduce", 9, 8)]
    assert findings[0].message.startswith("In kCrossReplica mode, replica groups should contain "
                                          "2 replicas, but found 3: %ar = f32[8]{0} all-reduce")


def test_async_start_two_users() -> None:
    tail = ("%a = f32[8]{0} async-done(%as)\n  %b = f32[8]{0} async-done(%as)\n"
            "  ROOT %t = f32[8]{0} add(%a, %b)")
    module = hlo.parse_module(ASYNC_MODULE.format(sum=SUM, groups="{{0,1}}", tail=tail))
    findings = hlo.verify(module)
    assert [(f.instruction, f.message, f.line, f.column) for f in findings] == [
        ("as", "The async-start instruction requires one consumer, found 2", 13, 3)]


def test_findings_follow_xla_phase_order_one_per_instruction() -> None:
    body = ("%ar = f32[8]{0} all-reduce(%p), channel_id=0, replica_groups={{0,0}}, to_apply=%add\n"
            "%ars = f32[8]{0} all-reduce-start(%ar), replica_groups={{0,5}}, to_apply=%add\n"
            "ROOT %x = f32[8]{0} add(%ars, %ars)")
    module = hlo.parse_module(module_text(body, r=2))
    found = [(f.instruction, f.check, f.line, f.column) for f in hlo.verify(module)]
    # The pairing phase runs first; the start gets only its first failure; the all-reduce its
    # shape failure before the instruction verifier's channel id check.
    assert found == [("ars", "async_pairs", 10, 3), ("ar", "replica_groups", 9, 3)]


def test_finding_is_frozen_and_exported() -> None:
    module = hlo.parse_module(module_text(
        "ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,2}}, to_apply=%add", r=2))
    (finding,) = hlo.verify(module)
    assert isinstance(finding, hlo.Finding)
    assert (finding.opcode, finding.severity, finding.check) == (
        "all-reduce", "error", "replica_groups")
    with pytest.raises(AttributeError):
        finding.message = "changed"  # type: ignore[misc]


def test_verify_refuses_what_is_not_a_module() -> None:
    with pytest.raises(mt.InvalidArgumentError, match="verify expects a Module"):
        hlo.verify("HloModule m")  # type: ignore[arg-type]


def test_host_transfers_on_one_channel_need_operands_of_one_shape() -> None:
    text = module_text(
        "%tok = token[] after-all()\n"
        "%snd1 = (f32[8]{0}, u32[], token[]) send(%p, %tok), channel_id=5, is_host_transfer=true\n"
        "%d1 = token[] send-done(%snd1), channel_id=5, is_host_transfer=true\n"
        "%snd2 = (f32[8]{0}, u32[], token[]) send(%q, %d1), channel_id=5, is_host_transfer=true\n"
        "ROOT %d2 = token[] send-done(%snd2), channel_id=5, is_host_transfer=true",
        params="%p = f32[8]{0} parameter(0)\n%q = f32[8]{0} parameter(1)")
    assert hlo.verify(hlo.parse_module(text)) == []
    other = text.replace("%q = f32[8]{0} parameter(1)", "%q = s32[8]{0} parameter(1)")
    findings = hlo.verify(hlo.parse_module(other))
    assert [(f.instruction, f.check) for f in findings] == [("snd2", "channels")]
    assert findings[0].message.startswith("Host-transfer send/recv instructions that use the "
                                          "same channel must be identical")


def test_send_done_of_another_channel_read_from_a_proto(tmp_path: Path) -> None:
    """XLA's parser refuses a send-done whose channel_id differs from its send's
    (tests/hlo/test_xla_parser_agreement.py); a proto carries one to the verifier."""
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    proto = message_class("HloModuleProto")()
    proto.ParseFromString(hlo_module_from_text(
        module_text(send_recv(), r=2, p=1)).as_serialized_hlo_module_proto())
    (done,) = (i for c in proto.computations for i in c.instructions if i.opcode == "send-done")
    done.channel_id = 3
    path = tmp_path / "m.hlo.pb"
    path.write_bytes(proto.SerializeToString())
    assert [(f.instruction, f.message) for f in hlo.verify(hlo.load(path))] == [
        ("send", "Expected to have the same channel id, actual channel ids are: "
                 "%send = (f32[8]{0}, u32[], token[]) send(%p, %tok), channel_id=1 (1), "
                 "%send-done = token[] send-done(%send), channel_id=3 (3)")]

"""Finding messages against golden files: one file per finding type, ``order-<type>.txt`` for
the order layer's findings and ``verify-<check>.txt`` for the HLO verifier's checks, each the
exact message of one representative case built here. The other tests assert a finding's
type, devices and instructions; the prose lives in these files, reviewed as a diff.

After a deliberate change of wording, regenerate the files and review the diff::

    MESHTOPO_UPDATE_GOLDEN=1 XLA_FLAGS=--xla_force_host_platform_device_count=8 \\
        .venv/bin/pytest -q -n 0 tests/golden

With ``MESHTOPO_UPDATE_GOLDEN`` set (to anything but ``""`` or ``"0"``), each test writes its
file instead of comparing; a case whose file is missing fails, naming the command.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import meshtopo as mt
import meshtopo.hlo as hlo

# tests/ is on the path, and the order tests are the package "order"
from order.test_findings import CONDITIONAL

HERE = Path(__file__).resolve().parent
UPDATE = os.environ.get("MESHTOPO_UPDATE_GOLDEN", "") not in ("", "0")
ORDER_TYPES = ("deadlock", "missing", "mismatch", "may_diverge", "group_disagreement",
               "async_overlap")
VERIFY_CHECKS = ("async_pairs", "channels", "group_mode", "replica_groups", "shapes",
                 "source_target_pairs", "channel_id", "deadlock", "layout")

ADD = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""


def _module(body: str, partitions: int = 4, replicas: int = 1, scheduled: bool = False,
            params: str = "%p = f32[8]{0} parameter(0)") -> hlo.Module:
    """A module whose entry defines ``params`` then ``body`` (one instruction a line)."""
    flag = ", is_scheduled=true" if scheduled else ""
    lines = [f"HloModule m{flag}, replica_count={replicas}, num_partitions={partitions}",
             ADD + "ENTRY %main {"]
    lines += ["  " + line.strip() for line in (params + "\n" + body).strip().splitlines()]
    return hlo.parse_module("\n".join([*lines, "}", ""]))


def _all_reduce(name: str, groups: str, shape: str = "f32[8]{0}", channel: int = 1) -> str:
    return (f"%{name} = {shape} all-reduce(%p), channel_id={channel}, replica_groups={groups}, "
            "use_global_device_ids=true, to_apply=%add\n")


def _program(body: str, shape: str = "f32[8]{0}", scheduled: bool = False) -> hlo.Module:
    """An SPMD program of 4 partitions: ``body``, then a copy of ``%p`` as the root."""
    return _module(body + f"ROOT %out = {shape} copy(%p)", scheduled=scheduled,
                   params=f"%p = {shape} parameter(0)")


def _async_pair(first: str, second: str) -> str:
    starts = {"x": "%x = f32[8]{0} all-reduce-start(%p), channel_id=1, "
                   "replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add\n",
              "y": "%y = f32[8]{0} all-reduce-start(%p), channel_id=2, "
                   "replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=%add\n"}
    return (starts[first] + starts[second] + f"%{first}d = f32[8]{{0}} all-reduce-done(%{first})\n"
            + f"%{second}d = f32[8]{{0}} all-reduce-done(%{second})\n")


def _permute(name: str, pairs: str) -> str:
    return (f"%{name} = f32[8]{{0}} collective-permute(%p), channel_id=5, "
            f"source_target_pairs={pairs}\n")


def _order_case(type_: str) -> list[mt.order.Finding]:
    """The findings of the representative case of order finding ``type_``."""
    all_, pairs = "{{0,1,2,3}}", "{{0,1},{2,3}}"
    if type_ == "deadlock":  # devices 0 and 1 issue two collectives in opposite orders
        forward = _program(_all_reduce("a", all_) + _all_reduce("b", pairs, channel=2))
        backward = _program(_all_reduce("b", pairs, channel=2) + _all_reduce("a", all_))
        return mt.order.analyze([(forward, [0]), (backward, [1]), (forward, [2, 3])]).findings
    if type_ == "missing":  # only partition 0 takes the branch with the all-reduce
        text = CONDITIONAL.replace("PREDICATE", "copy(%first)")
        return mt.order.analyze(hlo.parse_module(text)).findings
    if type_ == "mismatch":  # device 3's all-reduce is twice as large
        good = _program(_all_reduce("a", all_))
        wide = _program(_all_reduce("wide", all_, shape="f32[16]{0}"), shape="f32[16]{0}")
        return mt.order.analyze([(good, [0, 1, 2]), (wide, [3])]).findings
    if type_ == "may_diverge":  # the branch is chosen by a per-device parameter
        text = CONDITIONAL.replace("PREDICATE", "copy(%q)")
        return mt.order.analyze(hlo.parse_module(text)).findings
    if type_ == "group_disagreement":  # two pipeline stages name different permute pairs
        stages = [_program(_permute("send_activations", p) + _all_reduce("grads", pairs, channel=7))
                  for p in ("{{0,2},{1,3}}", "{{0,3},{1,2}}")]
        return mt.order.analyze([(stages[0], [0, 1]), (stages[1], [2, 3])]).findings
    assert type_ == "async_overlap"  # two async all-reduces started in opposite orders
    ahead = _program(_async_pair("x", "y"), scheduled=True)
    behind = _program(_async_pair("y", "x"), scheduled=True)
    return mt.order.analyze([(ahead, [0, 1]), (behind, [2, 3])]).findings


def _send(name: str, pairs: str) -> str:
    return (f"%{name} = (f32[8]{{0}}, u32[], token[]) send(%p, %tok), channel_id=1, "
            f'frontend_attributes={{_xla_send_recv_source_target_pairs="{pairs}"}}\n'
            f"%{name}-done = token[] send-done(%{name}), channel_id=1\n")


def _recv(name: str, pairs: str) -> str:
    return (f"%{name} = (f32[8]{{0}}, u32[], token[]) recv(%tok), channel_id=1, "
            f'frontend_attributes={{_xla_send_recv_source_target_pairs="{pairs}"}}\n'
            f"%{name}-done = (f32[8]{{0}}, token[]) recv-done(%{name}), channel_id=1\n")


def _host_send(name: str, operand: str, token: str, shape: str) -> str:
    return (f"%{name} = ({shape}, u32[], token[]) send({operand}, {token}), channel_id=5, "
            f"is_host_transfer=true\n"
            f"%{name}d = token[] send-done(%{name}), channel_id=5, is_host_transfer=true\n")


def _verify_case(check: str) -> list[hlo.Finding]:
    """The findings of the representative case of verifier check ``check``."""
    if check == "async_pairs":  # a collective-permute-start with two dones
        module = _module("%s = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(%p), "
                         "source_target_pairs={{0,1},{1,0}}, channel_id=1\n"
                         "%d1 = f32[8]{0} collective-permute-done(%s)\n"
                         "ROOT %d2 = f32[8]{0} collective-permute-done(%s)", 1, 2)
    elif check == "channels":  # host transfers on one channel with different shapes
        module = _module("%tok = token[] after-all()\n"
                         + _host_send("snd1", "%p", "%tok", "f32[8]{0}")
                         + _host_send("snd2", "%q", "%snd1d", "f32[4]{0}")
                         + "ROOT %out = f32[8]{0} copy(%p)", 1, 1,
                         params="%p = f32[8]{0} parameter(0)\n%q = f32[4]{0} parameter(1)")
    elif check == "group_mode":  # global device ids without a channel id
        module = _module("ROOT %ag = f32[16]{0} all-gather(%p), replica_groups={{0,1}}, "
                         "use_global_device_ids=true, dimensions={0}", 1, 2)
    elif check == "replica_groups":  # groups that name 2 of 8 replicas
        module = _module("ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, "
                         "to_apply=%add", 1, 8)
    elif check == "shapes":  # an all-gather dimension past the operand's rank
        module = _module("ROOT %ag = f32[16]{0} all-gather(%p), replica_groups={{0,1}}, "
                         "dimensions={1}", 1, 2)
    elif check == "source_target_pairs":  # a source past the replica count
        module = _module("ROOT %cp = f32[8]{0} collective-permute(%p), "
                         "source_target_pairs={{3,0}}", 4, 2)
    elif check == "channel_id":  # channel_id=0 on an all-reduce
        module = _module("ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=0, replica_groups={}, "
                         "to_apply=%add", 1, 1)
    elif check == "deadlock":  # a recv whose send names other pairs (scheduled module)
        module = _module("%tok = token[] after-all()\n" + _recv("recv", "{{0,1}}")
                         + _send("send", "{{1,2}}")
                         + "ROOT %r = f32[8]{0} get-tuple-element(%recv-done), index=0",
                         scheduled=True)
        return hlo.verify(module, verify_no_collective_deadlocks=True)
    else:
        assert check == "layout"  # layout-constrained and unconstrained all-reduces mixed
        module = _module("%a = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply=%add\n"
                         "%b = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply=%add, "
                         "constrain_layout=true\n"
                         "ROOT %t = (f32[8]{0}, f32[8]{0}) tuple(%a, %b)", 1, 1)
    return hlo.verify(module)


def _compare(name: str, message: str) -> None:
    """``message`` against ``tests/golden/NAME.txt`` (written instead, when updating)."""
    path = HERE / f"{name}.txt"
    if UPDATE:
        path.write_text(message + "\n")
        return
    assert path.exists(), f"{path.name} is missing: run with MESHTOPO_UPDATE_GOLDEN=1"
    assert message + "\n" == path.read_text(), f"{path.name} differs"


def _cases() -> list[tuple[str, Callable[[], tuple[str, str]]]]:
    def order(type_: str) -> tuple[str, str]:
        (finding,) = _order_case(type_)
        return finding.type, finding.message

    def verify(check: str) -> tuple[str, str]:
        (finding,) = _verify_case(check)
        return finding.check, finding.message

    return ([(f"order-{t}", lambda t=t: order(t)) for t in ORDER_TYPES]
            + [(f"verify-{c}", lambda c=c: verify(c)) for c in VERIFY_CHECKS])


CASES = _cases()


@pytest.mark.parametrize(("name", "render"), CASES, ids=[name for name, _ in CASES])
def test_message_matches_its_golden_file(name: str,
                                         render: Callable[[], tuple[str, str]]) -> None:
    kind, message = render()
    assert name.split("-", 1)[1] == kind  # the case finds exactly its own type
    _compare(name, message)


def test_every_golden_file_has_its_case() -> None:
    assert sorted(p.stem for p in HERE.glob("*.txt")) == sorted(name for name, _ in CASES)

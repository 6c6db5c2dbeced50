"""The verifier's messages against XLA's own: programs compiled by the XLA in jaxlib.

Each case is one collective written twice: in StableHLO for XLA's client (compiled in a child
process with the given replica and partition counts) and in HLO text for ``meshtopo.hlo``.
Where XLA's verifier rejects the program, meshtopo's message (up to the instruction text, the
mode spelled XLA's newer way) appears in XLA's error; where XLA compiles it, meshtopo finds
nothing. Cases are ones StableHLO's own verifier lets through to XLA's.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import meshtopo as mt
import meshtopo.hlo as hlo

from ._modules import instruction_text, module_text
from ._xla import xla_errors

pytest.importorskip("jax")


@dataclass(frozen=True)
class XlaCase:
    id: str
    op: str  # all_reduce, all_gather, collective_permute
    replicas: int
    partitions: int
    ids: tuple[tuple[int, ...], ...]  # replica groups, or source-target pairs
    channel: bool = False
    global_ids: bool = False
    out: int = 8
    rejected: bool = True

    def stablehlo(self) -> str:
        rows = ",".join("[" + ",".join(map(str, r)) + "]" for r in self.ids)
        dense = f"dense<[{rows}]> : tensor<{len(self.ids)}x{len(self.ids[0])}xi64>"
        channel = ("channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
                   if self.channel else "")
        flag = ", use_global_device_ids" if self.global_ids else ""
        types = f"(tensor<8xi32>) -> tensor<{self.out}xi32>"
        if self.op == "all_reduce":
            body = ('%0 = "stablehlo.all_reduce"(%arg0) ({\n'
                    "  ^bb0(%a: tensor<i32>, %b: tensor<i32>):\n"
                    "    %s = stablehlo.add %a, %b : tensor<i32>\n"
                    "    stablehlo.return %s : tensor<i32>\n"
                    f"  }}) {{{channel}replica_groups = {dense}{flag}}} : {types}")
        elif self.op == "all_gather":
            body = (f'%0 = "stablehlo.all_gather"(%arg0) {{all_gather_dim = 0 : i64, {channel}'
                    f"replica_groups = {dense}{flag}}} : {types}")
        else:
            body = (f'%0 = "stablehlo.collective_permute"(%arg0) {{{channel}'
                    f"source_target_pairs = {dense}}} : {types}")
        return (f"module @m attributes {{mhlo.num_replicas = {self.replicas} : i32, "
                f"mhlo.num_partitions = {self.partitions} : i32}} {{\n"
                f"  func.func public @main(%arg0: tensor<8xi32>) -> tensor<{self.out}xi32> {{\n"
                f"    {body}\n    return %0 : tensor<{self.out}xi32>\n  }}\n}}\n")

    def hlo_body(self) -> str:
        ids = "{" + ",".join("{" + ",".join(map(str, r)) + "}" for r in self.ids) + "}"
        channel = "channel_id=1, " if self.channel else ""
        flag = ", use_global_device_ids=true" if self.global_ids else ""
        if self.op == "all_reduce":
            return (f"ROOT %ar = f32[8]{{0}} all-reduce(%p), {channel}replica_groups={ids}{flag}, "
                    "to_apply=%add")
        if self.op == "all_gather":
            return (f"ROOT %ag = f32[{self.out}]{{0}} all-gather(%p), {channel}"
                    f"replica_groups={ids}, dimensions={{0}}{flag}")
        return f"ROOT %cp = f32[8]{{0}} collective-permute(%p), {channel}source_target_pairs={ids}"


CASES = [
    XlaCase("all_reduce_too_few_replicas", "all_reduce", 8, 1, ((0, 1),)),
    XlaCase("all_reduce_too_many_replicas", "all_reduce", 2, 1, ((0, 1), (2, 3))),
    XlaCase("all_reduce_cross_replica_and_partition", "all_reduce", 4, 2, ((0, 1),),
            channel=True),
    XlaCase("all_reduce_flattened_id_count", "all_reduce", 1, 8, ((1, 3), (0, 2)),
            channel=True, global_ids=True),
    XlaCase("all_gather_shard_count", "all_gather", 4, 1, ((0, 1, 2, 3),), out=16),
    XlaCase("all_gather_shard_count_times_partitions", "all_gather", 2, 2, ((0, 1),),
            channel=True, out=16),
    XlaCase("permute_target_past_replicas", "collective_permute", 2, 1, ((0, 3),)),
    XlaCase("permute_target_past_partitions", "collective_permute", 4, 2, ((0, 3),),
            channel=True),
    XlaCase("all_reduce_ok", "all_reduce", 4, 1, ((0, 1), (2, 3)), rejected=False),
    XlaCase("all_reduce_flattened_ok", "all_reduce", 2, 2, ((0, 1, 2, 3),), channel=True,
            global_ids=True, rejected=False),
    XlaCase("all_gather_ok", "all_gather", 4, 1, ((0, 1), (2, 3)), out=16, rejected=False),
    XlaCase("all_gather_cross_replica_and_partition_ok", "all_gather", 2, 2, ((0, 1),),
            channel=True, out=32, rejected=False),
    XlaCase("permute_channel_uses_partitions_ok", "collective_permute", 2, 4, ((0, 3),),
            channel=True, rejected=False),
    XlaCase("permute_replica_count_1_skips_range", "collective_permute", 1, 1, ((0, 1),),
            rejected=False),
    XlaCase("permute_partition_count_1_skips_range", "collective_permute", 2, 1, ((0, 1),),
            channel=True, rejected=False),
]


@pytest.fixture(scope="module")
def errors_by_case() -> dict[str, str | None]:
    payload = [{"text": c.stablehlo(), "replicas": c.replicas, "partitions": c.partitions}
               for c in CASES]
    return dict(zip([c.id for c in CASES], xla_errors(payload, "stablehlo"), strict=True))


def _xla_spelling(message: str) -> str:
    for mode in mt.CollectiveOpGroupMode:
        message = message.replace(f"In {mode} mode", f"In {mode.snake_name} mode")
    return message


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_message_matches_xla(case: XlaCase, errors_by_case: dict[str, str | None]) -> None:
    body = case.hlo_body()
    module = hlo.parse_module(module_text(body, r=case.replicas, p=case.partitions))
    findings = hlo.verify(module)
    error = errors_by_case[case.id]
    if not case.rejected:
        assert error is None
        assert findings == []
        return
    assert error is not None and "during context [hlo verifier]" in error, error
    (finding,) = findings
    prefix = finding.message.split(instruction_text(body))[0]
    assert prefix and _xla_spelling(prefix) in error, (prefix, error)

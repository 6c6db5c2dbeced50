"""Async pairs, -done shapes and all-to-all shapes against the XLA in jaxlib, from HLO text.

Each module goes through XLA's HLO parser, the StableHLO import and compilation for CPU
devices in a child process. jaxlib reaches XLA's compiler only through StableHLO, whose
importer and verifiers reject a malformed async pair or all-to-all before XLA's HLO verifier
runs, so the comparison is of verdicts (accepted or rejected), with the substring each layer
gives where it names the same fault; where the import turns an async pair into its
synchronous op, XLA's HLO verifier answers itself (``all_gather_start_shard_count``). The
import drops a -done whose result is unused, so a wrong -done shape is not compared here (the
verifier's own messages for it are in test_result_shapes).
"""

from __future__ import annotations

import pytest

import meshtopo.hlo as hlo

from ._xla import xla_errors

pytest.importorskip("jax")

HEADER = """HloModule m, replica_count=2
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
"""
GTE0 = "ROOT %g = f32[8]{0} get-tuple-element(%a), index=0"

# (id, body, XLA's rejection substring or None for accepted, meshtopo's message start)
CASES = [
    ("all_reduce_start_done_ok",
     "%ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add\n"
     "ROOT %ard = f32[8]{0} all-reduce-done(%ars)", None, None),
    ("all_gather_start_done_ok",
     "%ags = (f32[4]{0}, f32[8]{0}) all-gather-start(%q), replica_groups={{0,1}}, "
     "dimensions={0}\nROOT %agd = f32[8]{0} all-gather-done(%ags)", None, None),
    ("permute_start_done_ok",
     "%cps = (f32[8]{0}, f32[8]{0}) collective-permute-start(%p), "
     "source_target_pairs={{0,1},{1,0}}\nROOT %cpd = f32[8]{0} collective-permute-done(%cps)",
     None, None),
    ("all_to_all_ok",
     "ROOT %a = f32[8]{0} all-to-all(%p), replica_groups={{0,1}}, dimensions={0}", None, None),
    ("all_to_all_tuple_ok",
     "%a = (f32[8]{0}, f32[8]{0}) all-to-all(%p, %p), replica_groups={{0,1}}\n" + GTE0,
     None, None),
    ("all_reduce_done_of_a_tuple",
     "%ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add\n"
     "%t = (f32[8]{0}) tuple(%ars)\nROOT %ard = f32[8]{0} all-reduce-done(%t)",
     "*-start requires *-done as input",
     "The consumer of a all-reduce-start instruction needs to be one of (all-reduce-done)"),
    ("all_reduce_start_two_dones",
     "%ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add\n"
     "%d1 = f32[8]{0} all-reduce-done(%ars)\n%d2 = f32[8]{0} all-reduce-done(%ars)\n"
     "ROOT %s = f32[8]{0} add(%d1, %d2)",
     "Expected exactly one user for async start op",
     "The all-reduce-start instruction requires one consumer, found 2"),
    ("permute_start_with_context_ok",
     "%cps = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(%p), "
     "source_target_pairs={{0,1},{1,0}}\nROOT %cpd = f32[8]{0} collective-permute-done(%cps)",
     None, None),
    ("all_gather_start_shard_count",
     "%ags = (f32[4]{0}, f32[4]{0}) all-gather-start(%q), replica_groups={{0,1}}, "
     "dimensions={0}\n%agd = f32[4]{0} all-gather-done(%ags)\nROOT %r = f32[8]{0} add(%p, %p)",
     "subgroup_size == 1 || shard_count == subgroup_size shard_count = 1, subgroup_size = 2, ",
     "shard_count = 1, subgroup_size = 2, %ags = "),
    ("all_to_all_result_shape",
     "%a = f32[4]{0} all-to-all(%p), replica_groups={{0,1}}, dimensions={0}\n"
     "ROOT %r = f32[8]{0} add(%p, %p)",
     "inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation "
     "'tensor<4xf32>'",
     "Expected instruction to have shape equal to f32[8], actual shape is f32[4]:"),
    ("all_to_all_tuple_shapes_differ",
     "%a = (f32[8]{0}, f32[4]{0}) all-to-all(%p, %q), replica_groups={{0,1}}\n" + GTE0,
     "requires the same shape for all operands",
     "HLO all-to-all has operands with different shapes"),
    ("all_to_all_split_not_divisible",
     "%r = f32[7]{0} slice(%p), slice={[0:7]}\n"
     "%a = f32[7]{0} all-to-all(%r), replica_groups={{0,1}}, dimensions={0}\n"
     "ROOT %g = f32[8]{0} pad(%a, %z), padding=0_1",
     "split dimension has size 7, expected to be a multiple of split_count 2",
     "AllToAll split dimension size 7 must be dividable by split_count 2."),
]
PRELUDE = "%q = f32[4]{0} slice(%p), slice={[0:4]}\n%z = f32[] constant(0)\n"


def text(body: str) -> str:
    lines = (PRELUDE + body).splitlines()
    return HEADER + "".join(f"  {line}\n" for line in lines) + "}\n"


@pytest.fixture(scope="module")
def errors_by_case() -> dict[str, str | None]:
    payload = [{"text": text(c[1]), "replicas": 2, "partitions": 1} for c in CASES]
    return dict(zip([c[0] for c in CASES], xla_errors(payload, "hlo"), strict=True))


@pytest.mark.jax
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_verdict_matches_xla(case: tuple[str, str, str | None, str | None],
                             errors_by_case: dict[str, str | None]) -> None:
    case_id, body, xla_substring, ours = case
    error = errors_by_case[case_id]
    findings = hlo.verify(hlo.parse_module(text(body)))
    if xla_substring is None:
        assert error is None
        assert findings == []
        return
    assert error is not None and xla_substring in error
    assert ours is not None and findings and findings[0].message.startswith(ours)

"""The 3-D envelope, the CC world size and its MPMD rejections, cores and ranks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo import neuron
from meshtopo.hlo import parse_module

from ._modules import PARAMS, module

MODEL_GROUPS = [[0, 1, 2, 3], [4, 5, 6, 7]]  # seed section 5: reduce over model
DATA_GROUPS = [[0, 4], [1, 5], [2, 6], [3, 7]]  # seed section 5: reduce over data


def _all_reduce(name: str, operand: str, groups: str, channel: int) -> str:
    return (
        f"  %{name} = f32[8,4]{{1,0}} all-reduce(%{operand}), channel_id={channel}, "
        f"replica_groups={groups}, use_global_device_ids=true, to_apply=%add\n"
    )


# ---- the envelope -------------------------------------------------------------------------


def test_seed_mesh_groups_are_topology_zero() -> None:
    mesh = mt.Mesh({"data": 2, "model": 4})
    model = neuron.RankModel.from_groups(mesh.replica_groups(over="model"))
    assert model.to_list() == [MODEL_GROUPS]
    assert (model.num_topologies, model.group_count(0), model.group_size(0)) == (1, 2, 4)
    data = neuron.RankModel.from_groups("[4,2]<=[2,4]T(1,0)")
    assert data.to_list() == [DATA_GROUPS]
    assert (data.group_count(), data.group_size()) == (4, 2)


def test_world_size_of_the_seed_examples() -> None:
    assert neuron.cc_rank_world_size([MODEL_GROUPS]) == 4
    assert neuron.cc_rank_world_size([DATA_GROUPS]) == 2
    assert neuron.cc_rank_world_size(neuron.RankModel.from_groups(MODEL_GROUPS)) == 4


def test_module_envelope_deduplicates_group_lists_in_text_order() -> None:
    body = (PARAMS
            + _all_reduce("a", "p", "[2,4]<=[8]", 1)
            + _all_reduce("b", "a", "{{0,1,2,3},{4,5,6,7}}", 2)
            + _all_reduce("c", "b", "[4,2]<=[2,4]T(1,0)", 3)
            + "  ROOT %d = f32[8,4]{1,0} add(%c, %q)\n")
    parsed = parse_module(module(body))
    assert neuron.replica_groups_3d(parsed) == [MODEL_GROUPS, DATA_GROUPS]
    assert neuron.replica_groups_3d(parsed.collectives[:2]) == [MODEL_GROUPS]
    rank_model = neuron.RankModel.from_module(parsed)
    assert rank_model.num_topologies == 2
    assert [rank_model.group_size(t) for t in range(2)] == [4, 2]
    with pytest.raises(neuron.MpmdError, match="Inconsistent worker count"):
        neuron.cc_rank_world_size(rank_model)


def test_async_pairs_count_once() -> None:
    body = (PARAMS
            + "  %s = f32[8,4]{1,0} all-reduce-start(%p), channel_id=1, "
              "replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%add\n"
            + "  ROOT %d = f32[8,4]{1,0} all-reduce-done(%s)\n")
    assert neuron.replica_groups_3d(parse_module(module(body))) == [MODEL_GROUPS]


def test_collective_without_groups_is_an_empty_topology() -> None:
    body = (PARAMS + "  ROOT %a = f32[8,4]{1,0} all-reduce(%p), to_apply=%add\n")
    rg3 = neuron.replica_groups_3d(parse_module(module(body)))
    assert rg3 == [[]]
    assert neuron.cc_rank_world_size(rg3) == 1
    assert neuron.is_in_replica_group(5, rg3)


def test_read_back_errors() -> None:
    model = neuron.RankModel([MODEL_GROUPS])
    with pytest.raises(mt.InvalidArgumentError, match="topology index 1 is out of range"):
        model.group_size(1)
    assert model == neuron.RankModel.from_groups("[2,4]<=[8]")
    assert hash(model) == hash(neuron.RankModel.from_groups(MODEL_GROUPS))


# ---- world size ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rg3", "pairs", "explicit", "expected"),
    [
        ([], None, None, 1),
        ([[[0, 1]]], None, None, 2),
        ([[[0, 1], [2, 3, 4]]], None, None, 3),  # the largest group
        ([[[0, 1]]], [(0, 5)], None, 6),  # pairs span = largest id + 1
        ([[[0, 1]]], [(0, 1)], 8, 8),  # explicit override
        ([], [], 3, 3),
        ([[]], [(3, 0), (0, 3)], None, 4),
    ],
    ids=["nothing", "groups", "ragged", "pairs", "override", "only-override", "empty-topology"],
)
def test_world_size_is_the_max_of_the_terms(
    rg3: list[list[list[int]]], pairs: list[tuple[int, int]] | None, explicit: int | None,
    expected: int,
) -> None:
    assert neuron.cc_rank_world_size(rg3, source_target_pairs=pairs,
                                     rank_world_size=explicit) == expected


@pytest.mark.parametrize(
    ("rg3", "message"),
    [
        ([[[0, 1], [2, 3]], []],
         "Empty topology found at index 1 in replica_groups; possible MPMD neff "
         "(replica_groups has 2 topologies)"),
        ([[], [[0, 1]]],
         "Empty topology found at index 0 in replica_groups; possible MPMD neff "
         "(replica_groups has 2 topologies)"),
        ([[[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 4], [1, 5], [2, 6], [3, 7]]],
         "Inconsistent worker count across topologies: topology 0 has 4 ranks per group, "
         "topology 1 has 2; MPMD is not supported"),
        ([[[0, 1]], [[0, 1]], [[0, 1, 2]]],
         "Inconsistent worker count across topologies: topology 0 has 2 ranks per group, "
         "topology 2 has 3; MPMD is not supported"),
        ([[[0, 1], [2, 3]], [[0, 2], [1, 3]]],
         "replica_groups has 2 topologies (all with 2 ranks per group); more than one "
         "topology is an MPMD neff, which is not supported"),
    ],
    ids=["empty-second", "empty-first", "inconsistent", "inconsistent-third", "consistent"],
)
def test_more_than_one_topology_is_rejected_as_mpmd(
    rg3: list[list[list[int]]], message: str
) -> None:
    with pytest.raises(neuron.MpmdError) as raised:
        neuron.cc_rank_world_size(rg3)
    assert str(raised.value) == message
    assert isinstance(raised.value, mt.InvalidArgumentError)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: neuron.cc_rank_world_size([[0, 1], [2, 3]]), "topology 0 of the replica groups"),
        (lambda: neuron.cc_rank_world_size("[[[0]]]"), "must be nested lists"),
        (lambda: neuron.cc_rank_world_size([[["a"]]]), "must hold ints"),
        (lambda: neuron.cc_rank_world_size([[[0, -1]]]), "holds the rank -1"),
        (lambda: neuron.cc_rank_world_size(7), "must be nested lists"),
        (lambda: neuron.cc_rank_world_size([], [(0, 1, 2)]), "list of pairs"),
        (lambda: neuron.cc_rank_world_size([], [(-1, 0)]), "name the id -1"),
        (lambda: neuron.cc_rank_world_size([], None, 0), "rank_world_size must be a positive"),
        (lambda: neuron.cc_rank_world_size([], None, True), "rank_world_size must be a positive"),
        (lambda: neuron.cc_rank_world_size(mt.CollectiveDeviceList([[0]])), "2-D list"),
        (lambda: neuron.RankModel.from_groups("{{0,1}"), "replica groups"),
        (lambda: neuron.replica_groups_3d(3), "expects an HLO module"),
    ],
)
def test_bad_input_gets_library_errors(call: object, message: str) -> None:
    with pytest.raises(mt.MeshtopoError, match=message) as raised:
        call()  # type: ignore[operator]
    assert not isinstance(raised.value, neuron.MpmdError)


def test_rank_count_limit_applies() -> None:
    with mt.device_limit(4), pytest.raises(mt.LimitError):
        neuron.RankModel([[[0, 1, 2]], [[3, 4]]])


# ---- collective-permute -------------------------------------------------------------------


def test_permute_world_size_comes_from_pairs() -> None:
    body = (PARAMS
            + "  %cp = f32[8,4]{1,0} collective-permute(%p), channel_id=1, "
              "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n"
            + "  ROOT %d = f32[8,4]{1,0} add(%cp, %q)\n")
    parsed = parse_module(module(body, num_partitions=4))
    assert neuron.replica_groups_3d(parsed) == []
    pairs = neuron.source_target_pairs(parsed)
    assert pairs == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert neuron.pairs_span(pairs) == 4
    assert neuron.cc_rank_world_size(neuron.replica_groups_3d(parsed), pairs) == 4


def test_permute_with_replica_groups_is_refused_by_the_reader() -> None:
    """XLA's parser allows no replica_groups on collective-permute, so Neuron's own rejection
    ("Permute should not contain replica_groups") is never reached from HLO text."""
    body = (PARAMS
            + "  %cp = f32[8,4]{1,0} collective-permute(%p), channel_id=1, "
              "source_target_pairs={{0,1},{1,0}}, replica_groups={{0,1}}\n"
            + "  ROOT %d = f32[8,4]{1,0} add(%cp, %q)\n")
    with pytest.raises(mt.HloParseError, match='unexpected attribute "replica_groups"'):
        parse_module(module(body, num_partitions=2))


# ---- cores, LNCs and ranks ----------------------------------------------------------------


def test_rank_of_core_divides_out_the_lnc() -> None:
    assert [neuron.rank_of_core(core) for core in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert [neuron.rank_of_core(core, cores_per_lnc=1) for core in range(4)] == [0, 1, 2, 3]
    assert neuron.rank_of_core(127, cores_per_lnc=4) == 31
    assert neuron.cores_of_rank(3) == [6, 7]
    assert neuron.cores_of_rank(2, cores_per_lnc=4) == [8, 9, 10, 11]


def test_num_partitions_is_the_lnc_cardinality() -> None:
    assert neuron.num_partitions_for(64) == 32
    assert neuron.num_partitions_for(64, 1) == 64
    with pytest.raises(mt.InvalidArgumentError, match="num_cores 7 is not a multiple of "
                                                      "cores_per_lnc 2"):
        neuron.num_partitions_for(7)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: neuron.rank_of_core(-1), "core must be a non-negative int, got -1"),
        (lambda: neuron.rank_of_core(1.0), "core must be a non-negative int, got 1.0"),
        (lambda: neuron.rank_of_core(True), "core must be a non-negative int, got True"),
        (lambda: neuron.rank_of_core(3, cores_per_lnc=0), "cores_per_lnc must be a positive int"),
        (lambda: neuron.num_partitions_for(0), "num_cores must be a positive int, got 0"),
        (lambda: neuron.cores_of_rank(-2), "rank must be a non-negative int"),
        (lambda: neuron.is_in_replica_group(-1, []), "rank must be a non-negative int"),
    ],
)
def test_core_and_rank_validation(call: object, message: str) -> None:
    with pytest.raises(mt.InvalidArgumentError, match=message):
        call()  # type: ignore[operator]


def test_participation_scans_topology_zero_only() -> None:
    rg3 = [[[0, 1], [2, 3]], [[4, 5]]]
    assert [neuron.is_in_replica_group(r, rg3) for r in range(6)] == [True] * 4 + [False] * 2
    assert neuron.is_in_replica_group(100, [])
    assert neuron.is_in_replica_group(100, [[]])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 16))
def test_core_rank_round_trip(core: int, lnc: int) -> None:
    rank = neuron.rank_of_core(core, lnc)
    assert core in neuron.cores_of_rank(rank, lnc)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 63), min_size=1, max_size=8), max_size=6),
       st.lists(st.tuples(st.integers(0, 63), st.integers(0, 63)), max_size=6))
def test_world_size_covers_every_group_and_pair(
    groups: list[list[int]], pairs: list[tuple[int, int]]
) -> None:
    size = neuron.cc_rank_world_size([groups], source_target_pairs=pairs)
    assert size >= max([len(g) for g in groups] + [1])
    assert all(max(pair) < size for pair in pairs)


def test_send_and_recv_pairs_are_read_once() -> None:
    pairs = '"{{0,1},{1,2},{2,3}}"'
    text = f"""HloModule m, num_partitions=4
ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %tok = token[] after-all()
  %recv = (f32[8]{{0}}, u32[], token[]) recv(%tok), channel_id=1, frontend_attributes={{_xla_send_recv_source_target_pairs={pairs}}}
  %send = (f32[8]{{0}}, u32[], token[]) send(%p, %tok), channel_id=1, frontend_attributes={{_xla_send_recv_source_target_pairs={pairs}}}
  %recv-done = (f32[8]{{0}}, token[]) recv-done(%recv), channel_id=1
  %send-done = token[] send-done(%send), channel_id=1
  ROOT %gte = f32[8]{{0}} get-tuple-element(%recv-done), index=0
}}
"""
    parsed = parse_module(text)
    assert neuron.replica_groups_3d(parsed) == []
    assert neuron.source_target_pairs(parsed) == [(0, 1), (1, 2), (2, 3)]
    assert [i.name for i in neuron.post_order(parsed.entry)] == [
        "p", "tok", "send", "send-done", "recv", "recv-done", "gte"]

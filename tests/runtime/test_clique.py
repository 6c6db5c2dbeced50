"""CliqueKey, Clique, split semantics and the XLA split colour."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo.runtime import CliqueKey, StreamKind, clique_split_color, split_ranks
from meshtopo.runtime._clique_key import hash32


def test_rank_is_position_never_sorted() -> None:
    key = CliqueKey((5, 2, 7, 0))
    assert [key.rank(d) for d in (5, 2, 7, 0)] == [0, 1, 2, 3]
    assert key.rank(3) is None
    assert key.devices == (5, 2, 7, 0)


def test_text_form_as_xla() -> None:
    key = CliqueKey((1, 0), StreamKind.P2P0, participant_groups=[[3, 2], [1, 0]],
                    root_device=1, num_local_participants=1, incarnations=[9, 4, 9])
    assert str(key) == ("devices=[1,0]; is_p2p=1; groups=[[0,1],[2,3]]; root_device=1; "
                        "num_local_participants=1; incarnations=[4,9]")


def test_equality_ignores_stream_kind_hash_ignores_local_count() -> None:
    a = CliqueKey((0, 1), StreamKind.COLLECTIVE)
    b = CliqueKey((0, 1), StreamKind.P2P1)
    assert a == b and hash(a) == hash(b)
    c = CliqueKey((0, 1), num_local_participants=1)
    assert a != c and hash(a) == hash(c)
    assert CliqueKey((1, 0)) != a


def test_order_compares_size_first() -> None:
    keys = [CliqueKey((3, 4, 5)), CliqueKey((9,)), CliqueKey((0, 2)), CliqueKey((0, 1))]
    assert [k.devices for k in sorted(keys)] == [(9,), (0, 1), (0, 2), (3, 4, 5)]


def test_subset_and_local() -> None:
    parent = CliqueKey((0, 1, 2, 3))
    assert CliqueKey((2, 0)).is_subset_of(parent)
    assert not CliqueKey((2, 0), StreamKind.P2P0).is_subset_of(parent)
    assert parent.is_local and not CliqueKey((0, 1), num_local_participants=1).is_local


def test_sub_keys_spread_roots() -> None:
    key = CliqueKey(tuple(range(10, 17)))
    assert [k.root_device for k in key.sub_keys(3)] == [10, 13, 15]


def test_bad_keys_refused() -> None:
    with pytest.raises(mt.InvalidArgumentError, match="repeat a device"):
        CliqueKey((1, 1))
    with pytest.raises(mt.InvalidArgumentError, match="at least one device"):
        CliqueKey(())


def test_clique_rank_elsewhere_is_none() -> None:
    factory = mt.runtime.LocalFactory(timeout=1)
    key = CliqueKey(tuple(range(32)))
    clique = factory.create_clique(key, devices=range(8, 16))
    assert clique.num_communicators == 8
    assert clique.communicator(3) is None
    communicator = clique.communicator(9)
    assert communicator is not None and communicator.device == 9
    assert [c.current_rank for c in clique.communicators()] == list(range(8, 16))
    with pytest.raises(mt.InvalidArgumentError, match="out of range"):
        clique.communicator(32)


def test_split_ranks_mpi_semantics() -> None:
    assert split_ranks([0, 1, 0, 1, None, 0], [2, 0, 1, 0, 5, 1]) == [
        (2, 5, 0), (1, 3), (2, 5, 0), (1, 3), None, (2, 5, 0)]


@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(-3, 3)), st.integers(-5, 5)),
                min_size=1, max_size=24))
def test_split_ranks_partition(entries: list[tuple[int | None, int]]) -> None:
    colors = [c for c, _ in entries]
    keys = [k for _, k in entries]
    groups = split_ranks(colors, keys)
    for rank, group in enumerate(groups):
        if colors[rank] is None:
            assert group is None
            continue
        assert group is not None
        assert sorted(group) == [r for r, c in enumerate(colors) if c == colors[rank]]
        assert list(group) == sorted(group, key=lambda r: (keys[r], r))


def test_hash32_murmur2() -> None:
    # MurmurHash2 with seed 0 on the empty input is 0; one zero word mixes to a fixed value.
    assert hash32(b"") == 0
    assert hash32(b"\x00" * 4) == hash32(np.zeros(1, "<u4").tobytes())
    assert 0 <= clique_split_color([0, 1, 2, 3]) < 2**31 + 1
    assert clique_split_color([0, 1]) != clique_split_color([1, 0])


def test_factory_split_by_colour_locally() -> None:
    factory = mt.runtime.LocalFactory(timeout=5)
    clique = factory.create_clique(CliqueKey((10, 11, 12, 13, 14, 15)))
    parents = clique.communicators()
    colors = [0, 1, 0, None, 1, 0]
    keys = [5, 0, 1, 0, 0, 1]
    children = factory.split_communicators(parents, colors, keys)
    assert children[3] is None
    devices = [None if c is None else c.key.devices for c in children]
    assert devices[0] == (12, 15, 10) and devices[1] == (11, 14)
    events = [c.all_reduce(np.array([p.device])) for p, c in zip(parents, children, strict=True)
              if c is not None]
    assert [int(e.wait()[0]) for e in events] == [37, 25, 37, 25, 37]


def test_split_into_cliques_with_xla_colours() -> None:
    factory = mt.runtime.LocalFactory(timeout=5)
    parents = factory.create_clique(CliqueKey((0, 1, 2, 3))).communicators()
    # Ranks follow the new keys' device order (XLA: keys = ranks in the new clique).
    first, second = CliqueKey((3, 1)), CliqueKey((2, 0))
    children = factory.split_into_cliques(parents, [second, first, second, first])
    assert [c.key.devices if c else None for c in children] == [(2, 0), (3, 1), (2, 0), (3, 1)]
    assert [c.current_rank if c else None for c in children] == [1, 1, 0, 0]
    with pytest.raises(mt.InvalidArgumentError, match="is not a sub-clique"):
        factory.split_into_cliques(parents[:1], [CliqueKey((1, 2))])


def test_local_all_reduce_into_out_and_in_place() -> None:
    communicators = mt.runtime.LocalFactory(10).create_clique(CliqueKey((2, 0))).communicators()
    sends = [np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32)]
    events = [c.all_reduce(s, out=s) for c, s in zip(communicators, sends, strict=True)]
    results = [e.wait() for e in events]
    assert all(r is s for r, s in zip(results, sends, strict=True))
    assert [s.tolist() for s in sends] == [[11.0, 22.0], [11.0, 22.0]]
    with pytest.raises(mt.MeshtopoError, match=r"out buffer int32\[2\] does not match the "
                                               r"send buffer float32\[2\]"):
        communicators[0].all_reduce(sends[0], out=np.zeros(2, np.int32))


def test_local_ragged_all_to_all_keeps_unwritten_rows() -> None:
    communicators = mt.runtime.LocalFactory(10).create_clique(CliqueKey((0, 1))).communicators()
    # Rank 0 sends rows 0..1 to itself at row 2 and row 2 to rank 1 at row 0; rank 1 sends
    # nothing to rank 0 and row 0 to itself at row 3.
    plans = [(np.array([10, 11, 12]), [0, 2], [2, 1], [2, 0], [2, 0]),
             (np.array([20, 21, 22]), [0, 0], [0, 1], [0, 3], [1, 1])]
    events = [c.ragged_all_to_all(x, np.full(4, -1), io, ss, oo, rs)
              for c, (x, io, ss, oo, rs) in zip(communicators, plans, strict=True)]
    assert [e.wait().tolist() for e in events] == [[-1, -1, 10, 11], [12, -1, -1, 20]]

"""Property tests: expansion matches numpy, canonical forms are stable, compaction round-trips,
device groups partition the participating devices."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo.groups._iota import canonicalize

M = mt.CollectiveOpGroupMode


@st.composite
def iotas(draw, max_dims=5, max_size=5):
    reshape = draw(st.lists(st.integers(1, max_size), min_size=1, max_size=max_dims))
    perm = draw(st.permutations(range(len(reshape))))
    count = math.prod(reshape)
    divisors = [d for d in range(1, count + 1) if count % d == 0]
    groups = draw(st.sampled_from(divisors))
    return reshape, list(perm), groups, count // groups


@settings(max_examples=200, deadline=None)
@given(iotas())
def test_to_array_is_numpy_reshape_transpose(spec):
    reshape, perm, groups, size = spec
    tile = mt.IotaTileAssignment([groups, size], reshape, perm)
    expected = np.arange(math.prod(reshape)).reshape(reshape).transpose(perm).reshape(groups, size)
    np.testing.assert_array_equal(tile.to_array(), expected)
    array = tile.to_array()
    for index in np.ndindex(*array.shape):
        assert tile.value_at(index) == array[index]
    linear = tile.linear_index_of(array.reshape(-1))
    np.testing.assert_array_equal(linear, np.arange(array.size))


@settings(max_examples=200, deadline=None)
@given(iotas())
def test_canonical_form_is_idempotent_and_prints_back(spec):
    reshape, perm, groups, size = spec
    iota = mt.IotaReplicaGroupList(groups, size, reshape, perm)
    assert canonicalize(iota.reshape_dims, iota.transpose_perm) == (
        iota.reshape_dims,
        iota.transpose_perm,
    )
    assert mt.IotaReplicaGroupList.parse(str(iota)) == iota
    assert str(mt.CollectiveDeviceList.parse(str(iota))) == str(iota)


@settings(max_examples=200, deadline=None)
@given(iotas())
def test_compact_recovers_an_identical_iota(spec):
    reshape, perm, groups, size = spec
    iota = mt.IotaReplicaGroupList(groups, size, reshape, perm)
    explicit = mt.CollectiveDeviceList(iota.to_array())
    compact = explicit.compact()
    assert compact.encoding == "iota"
    assert compact.iota == iota
    assert compact.replica_groups == explicit.replica_groups
    assert mt.CollectiveDeviceList.parse(compact.to_text(full=True)) == explicit


@settings(max_examples=100, deadline=None)
@given(iotas(max_dims=4, max_size=4), st.data())
def test_tile_transpose_matches_numpy(spec, data):
    reshape, perm, groups, size = spec
    tile = mt.IotaTileAssignment([groups, size], reshape, perm)
    dims = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    if math.prod(dims) != tile.num_elements:
        dims = [groups, size]
    tile = mt.IotaTileAssignment(dims, tile.reshape_dims, tile.transpose_perm)
    order = data.draw(st.permutations(range(len(dims))))
    result = tile.transpose(order)
    expected = tile.to_array().transpose(order)
    if result is not None:  # None: XLA's fallback to the explicit array
        assert isinstance(result, mt.IotaTileAssignment)
        np.testing.assert_array_equal(result.to_array(), expected)


@st.composite
def grids(draw):
    replicas = draw(st.integers(1, 4))
    partitions = draw(st.integers(1, 4))
    mode = draw(st.sampled_from(list(M)))
    count = {M.CROSS_PARTITION: partitions, M.FLATTENED_ID: replicas * partitions}.get(
        mode, replicas
    )
    ids = draw(st.permutations(range(count)))
    cuts = sorted(draw(st.sets(st.integers(1, max(count - 1, 1)), max_size=count)))
    groups = [list(ids[a:b]) for a, b in zip([0, *cuts], [*cuts, count], strict=True) if a < b]
    table = np.array(draw(st.permutations(range(replicas * partitions)))).reshape(
        replicas, partitions
    )
    return mode, groups, mt.DeviceAssignment(table)


@settings(max_examples=300, deadline=None)
@given(grids())
def test_device_groups_partition_the_grid(case):
    mode, groups, da = case
    device_groups = mt.participating_device_groups(groups, mode=mode, device_assignment=da)
    flat = [d for g in device_groups for d in g]
    assert sorted(flat) == sorted(da.array.reshape(-1).tolist())
    for group in device_groups:
        for device in group:
            assert mt.participating_devices(device, groups, mode=mode, device_assignment=da) == group
    assert [len(g) for g in device_groups] == (
        mt.participant_counts(da.replica_count, da.computation_count, groups, mode)
        if mode is not M.CROSS_PARTITION
        else [len(g) for g in device_groups]
    )

"""Device assignments and the multiplying-out of replica groups into device groups.

A ``DeviceAssignment`` is XLA's table ``[replica][computation] -> device id``. XLA's default
placer writes ``c * R + r`` (column-major by computation), so flattened ids (``r * P + p``) and
device ids disagree whenever both counts exceed one:

>>> da = DeviceAssignment.default(replica_count=2, computation_count=2)
>>> da.array.tolist()
[[0, 2], [1, 3]]
>>> participating_device_groups([[0, 1]], mode=CollectiveOpGroupMode.FLATTENED_ID, device_assignment=da)
[[0, 2]]

``participating_device_groups`` follows XLA's ``GetParticipatingDevicesGroups`` exactly, output
order included; the arithmetic is vectorised with numpy (no per-device Python loops).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from .._checks import as_int
from .._errors import InternalError, InvalidArgumentError
from .._keywords import keywords_were_positional
from .._limits import check_size, checked_product
from ._device_list import CollectiveDeviceList
from ._modes import CollectiveOpGroupMode

if TYPE_CHECKING:  # numpy.typing costs start-up time; annotations only
    from numpy.typing import ArrayLike

Mode = CollectiveOpGroupMode


class DeviceAssignment:
    """XLA's device table: ``array[replica][computation]`` is a global device id.

    Rows are replicas, columns computations (partitions). Ids must be distinct and
    non-negative, and both counts positive, as XLA checks.
    """

    def __init__(self, table: object) -> None:
        try:
            array = np.asarray(table)
        except (ValueError, TypeError):
            raise InvalidArgumentError(
                f"a device assignment must be a 2-D int table [replica][computation], got {table!r}"
            ) from None
        if (
            array.dtype == object
            or array.ndim != 2
            or not (array.size == 0 or np.issubdtype(array.dtype, np.integer))
        ):
            raise InvalidArgumentError(
                f"a device assignment must be a 2-D int table [replica][computation], got {table!r}"
            )
        if array.shape[0] < 1 or array.shape[1] < 1:
            raise InvalidArgumentError(
                f"a device assignment needs replica_count > 0 and computation_count > 0, "
                f"got {array.shape[0]} x {array.shape[1]}"
            )
        check_size(int(array.size), "the device assignment")
        array = np.array(array, dtype=np.int64, order="C")
        if (array < 0).any():
            raise InvalidArgumentError(
                f"device assignment ids must be non-negative, got {int(array.min())}"
            )
        unique, counts = np.unique(array, return_counts=True)
        if (counts > 1).any():
            raise InvalidArgumentError(
                f"device {int(unique[counts > 1][0])} appears more than once in the device assignment"
            )
        array.setflags(write=False)
        self._array = array

    @classmethod
    def default(cls, replica_count: int, computation_count: int) -> DeviceAssignment:
        """XLA's default placer (Host, CUDA, ROCm): ``array[r][c] = c * replica_count + r``."""
        _check_counts(replica_count, computation_count)
        checked_product([replica_count, computation_count], "the device assignment")
        return cls(
            np.arange(replica_count * computation_count, dtype=np.int64)
            .reshape(computation_count, replica_count)
            .T
        )

    @classmethod
    def row_major(cls, replica_count: int, computation_count: int) -> DeviceAssignment:
        """Row-major placement ``array[r][c] = r * computation_count + c`` (XLA's test base),
        where device ids equal flattened ids."""
        _check_counts(replica_count, computation_count)
        checked_product([replica_count, computation_count], "the device assignment")
        return cls(
            np.arange(replica_count * computation_count, dtype=np.int64).reshape(
                replica_count, computation_count
            )
        )

    @property
    def array(self) -> np.ndarray:
        """The read-only int64 table of shape ``[replica_count, computation_count]``."""
        return self._array

    @property
    def replica_count(self) -> int:
        """The number of replicas (rows)."""
        return int(self._array.shape[0])

    @property
    def computation_count(self) -> int:
        """The number of computations, i.e. partitions (columns)."""
        return int(self._array.shape[1])

    @property
    def num_devices(self) -> int:
        """``replica_count * computation_count``."""
        return int(self._array.size)

    def __str__(self) -> str:
        columns = " ".join(
            f"Computation{c}{{{' '.join(map(str, self._array[:, c].tolist()))}}}"
            for c in range(self.computation_count)
        )
        return (
            f"DeviceAssignment{{replica_count={self.replica_count}, "
            f"computation_count={self.computation_count}, {columns}}}"
        )

    def __repr__(self) -> str:
        return f"DeviceAssignment({self._array.tolist()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceAssignment):
            return NotImplemented
        return bool(np.array_equal(self._array, other._array))

    def __hash__(self) -> int:
        return hash((self._array.shape, self._array.tobytes()))

    def is_default(self) -> bool:
        """True when this is XLA's default placement for its shape."""
        return self == DeviceAssignment.default(self.replica_count, self.computation_count)

    @functools.cached_property
    def by_computation(self) -> np.ndarray:
        """The table transposed to ``[computation][replica]`` (read-only, C-ordered)."""
        columns = np.ascontiguousarray(self._array.T)
        columns.setflags(write=False)
        return columns

    @functools.cached_property
    def _flat_order(self) -> np.ndarray:
        return np.argsort(self._array.reshape(-1))

    def logical_ids(self, devices: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(replica, computation) of each device id, vectorised; ``InternalError`` for an id
        the table does not hold (XLA's ``LogicalIdForDevice``)."""
        ids = np.asarray(devices, dtype=np.int64)
        flat = self._array.reshape(-1)
        where = np.minimum(np.searchsorted(flat, ids, sorter=self._flat_order), flat.size - 1)
        position = self._flat_order[where]
        missing = flat[position] != ids
        if missing.any():
            raise InternalError(f"Device {int(ids[missing].flat[0])} doesn't appear in {self}")
        return position // self.computation_count, position % self.computation_count

    def logical_id(self, device: int) -> tuple[int, int]:
        """(replica, computation) of ``device``."""
        replica, computation = self.logical_ids(np.int64(device))
        return int(replica), int(computation)


def _check_counts(replica_count: object, computation_count: object) -> None:
    as_int(replica_count, "replica_count", minimum=1)
    as_int(computation_count, "computation_count", minimum=1)


def as_device_assignment(device_assignment: object) -> DeviceAssignment:
    """``device_assignment`` itself, or the ``DeviceAssignment`` of a 2-D table."""
    if isinstance(device_assignment, DeviceAssignment):
        return device_assignment
    return DeviceAssignment(device_assignment)


def expansion_factor(mode: object, replica_count: int, partition_count: int) -> int:
    """How many device ids each written id becomes under ``mode``: the partition count in
    ``kCrossReplica`` and ``kCrossReplicaAndPartition``, the replica count in
    ``kCrossPartition``, 1 in ``kFlattenedID``."""
    mode = Mode.coerce(mode)
    if mode is Mode.CROSS_PARTITION:
        return replica_count
    if mode is Mode.FLATTENED_ID:
        return 1
    return partition_count


def as_device_list(groups: object) -> CollectiveDeviceList:
    """``groups`` as a ``CollectiveDeviceList`` (text is parsed, lists are taken as explicit)."""
    if isinstance(groups, CollectiveDeviceList):
        return groups
    if isinstance(groups, str):
        return CollectiveDeviceList.parse(groups)
    return CollectiveDeviceList(groups)


def _mode_limit(mode: Mode, replica_count: int, partition_count: int) -> tuple[int, str]:
    """The id range of a mode and the name of one of what its ids count (singular)."""
    if mode is Mode.CROSS_PARTITION:
        return partition_count, "partition"
    if mode is Mode.FLATTENED_ID:
        return replica_count * partition_count, "flattened id"
    return replica_count, "replica"


def there_are(count: int, noun: str) -> str:
    """``there is 1 replica``, ``there are 2 replicas``: how many ids a range holds, for the
    out-of-range messages."""
    return f"there is 1 {noun}" if count == 1 else f"there are {count} {noun}s"


def written_groups(
    device_list: CollectiveDeviceList, mode: Mode, replica_count: int, partition_count: int
) -> tuple[np.ndarray, np.ndarray]:
    """(flat ids, sizes) of the groups as the mode reads them: ``{}`` becomes the one group of
    every replica (every partition in ``kCrossPartition``); flattened-id mode refuses ``{}``.
    Ids outside the mode's range raise ``InvalidArgumentError``."""
    limit, what = _mode_limit(mode, replica_count, partition_count)
    if device_list.is_empty:
        if mode is Mode.FLATTENED_ID:
            raise InternalError(f"replica groups cannot be empty for {Mode.FLATTENED_ID} mode")
        return np.arange(limit, dtype=np.int64), np.array([limit], dtype=np.int64)
    flat, sizes = device_list.flattened_replica_groups(), device_list.group_sizes
    if flat.size and (flat.min() < 0 or flat.max() >= limit):
        bad = int(flat[(flat < 0) | (flat >= limit)][0])
        raise InvalidArgumentError(
            f"replica group id {bad} is out of range in {mode} mode: {there_are(limit, what)} "
            f"(ids 0..{limit - 1}) in replica groups {device_list}"
        )
    return flat, sizes


def _spread(values: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For per-id rows ``values[id_index, k]``, emit per group, per k, the group's values in
    group order: the loop order XLA uses when one written group becomes several."""
    count = values.shape[1]
    if sizes.size and (sizes == sizes[0]).all():
        groups, size = sizes.size, int(sizes[0])
        flat = values.reshape(groups, size, count).transpose(0, 2, 1).reshape(-1)
        return flat, np.full(groups * count, size, dtype=np.int64)
    group_of = np.repeat(np.arange(sizes.size), sizes)
    rank = np.arange(group_of.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    keys = (
        np.repeat(rank, count),
        np.tile(np.arange(count), group_of.size),
        np.repeat(group_of, count),
    )
    return values.reshape(-1)[np.lexsort(keys)], np.repeat(sizes, count)


@keywords_were_positional
def device_group_arrays(
    device_list: object, *, mode: Mode, device_assignment: DeviceAssignment
) -> tuple[np.ndarray, np.ndarray]:
    """(all device ids concatenated, group sizes) of ``participating_device_groups``."""
    groups = as_device_list(device_list)
    mode = Mode.coerce(mode)
    device_assignment = as_device_assignment(device_assignment)
    table = device_assignment.array
    replicas, partitions = table.shape
    flat, sizes = written_groups(groups, mode, replicas, partitions)
    check_size(int(flat.size) * expansion_factor(mode, replicas, partitions), "the device groups")
    if mode is Mode.CROSS_REPLICA:
        return _spread(table[flat], sizes)
    if mode is Mode.CROSS_PARTITION:
        return _spread(device_assignment.by_computation[flat], sizes)
    if mode is Mode.CROSS_REPLICA_AND_PARTITION:
        return table[flat].reshape(-1), sizes * partitions
    return table.reshape(-1)[flat], sizes


@keywords_were_positional
def participating_device_groups(
    device_list: object, *, mode: Mode, device_assignment: DeviceAssignment
) -> list[list[int]]:
    """XLA's ``GetParticipatingDevicesGroups``: the global device ids that talk, per group.

    ``kCrossReplica`` emits one group per written group per partition, ``kCrossPartition``
    one per written group per replica, ``kCrossReplicaAndPartition`` one per written group
    spanning every partition (replica-major), ``kFlattenedID`` one per written group. The
    order inside a group is the rank order.
    """
    flat, sizes = device_group_arrays(device_list, mode=mode, device_assignment=device_assignment)
    if sizes.size and (sizes == sizes[0]).all():
        return flat.reshape(sizes.size, -1).tolist()
    return [part.tolist() for part in np.split(flat, np.cumsum(sizes)[:-1])]


@keywords_were_positional
def participating_device_groups_array(
    device_list: object, *, mode: Mode, device_assignment: DeviceAssignment
) -> np.ndarray:
    """``participating_device_groups`` as an int64 array ``[num_groups, group_size]``
    (uniform groups only; ragged results raise ``InvalidArgumentError``)."""
    flat, sizes = device_group_arrays(device_list, mode=mode, device_assignment=device_assignment)
    if sizes.size and not (sizes == sizes[0]).all():
        raise InvalidArgumentError(
            f"the device groups have different sizes {sizes.tolist()}; use participating_device_groups"
        )
    return flat.reshape(sizes.size, -1)


def participating_ids(
    mode: Mode, current_id: int, total_count: int | None, device_list: object
) -> list[int]:
    """XLA's ``GetParticipatingIDs``: the group holding ``current_id``, in group order.

    An empty list means ``range(total_count)``; ``total_count=None`` with an empty list is an
    ``InternalError``, as are an id found twice or not at all.
    """
    groups = as_device_list(device_list)
    mode = Mode.coerce(mode)
    current_id = as_int(current_id, "current_id")
    if groups.is_empty:
        if total_count is None:
            raise InternalError(f"replica groups cannot be empty for {mode} mode")
        total = check_size(as_int(total_count, "total_count", minimum=0), "the participating ids")
        return list(range(total))
    flat = groups.flattened_replica_groups()
    count = int(np.count_nonzero(flat == current_id))
    if count != 1:
        shown = ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups.replica_groups)
        problem = "appears twice in" if count > 1 else "doesn't appear in"
        raise InternalError(
            f"Replica ID {current_id} {problem} replica groups; group_mode={mode}; "
            f"groups_size={groups.num_replica_groups}; groups= {shown}"
        )
    group, _ = groups.group_of(np.int64(current_id))
    start = int(np.cumsum(groups.group_sizes)[group] - groups.group_sizes[group])
    return flat[start : start + int(groups.group_sizes[group])].tolist()


@keywords_were_positional
def participating_devices(
    device_id: int, device_list: object, *, mode: Mode, device_assignment: DeviceAssignment
) -> list[int]:
    """XLA's ``GetParticipatingDevices``: the devices ``device_id`` talks to, in rank order."""
    device_assignment = as_device_assignment(device_assignment)
    table = device_assignment.array
    replicas, partitions = table.shape
    replica, partition = device_assignment.logical_id(as_int(device_id, "device_id"))
    mode = Mode.coerce(mode)
    if mode is Mode.FLATTENED_ID:
        ids = participating_ids(mode, replica * partitions + partition, None, device_list)
        _check_range(ids, replicas * partitions, mode)
        return table.reshape(-1)[ids].tolist()
    if mode is Mode.CROSS_PARTITION:
        ids = participating_ids(mode, partition, partitions, device_list)
        _check_range(ids, partitions, mode)
        return table[replica, ids].tolist()
    ids = participating_ids(mode, replica, replicas, device_list)
    _check_range(ids, replicas, mode)
    if mode is Mode.CROSS_REPLICA:
        return table[ids, partition].tolist()
    return table[ids].reshape(-1).tolist()


def _check_range(ids: list[int], limit: int, mode: Mode) -> None:
    values = np.asarray(ids, dtype=np.int64)
    outside = (values < 0) | (values >= limit)
    if outside.any():
        raise InvalidArgumentError(
            f"id {int(values[outside][0])} is out of range [0, {limit}) in {mode} mode"
        )


def flattened_id_groups(
    device_list: object, mode: Mode, replica_count: int, partition_count: int
) -> CollectiveDeviceList:
    """XLA's ``GetParticipatingFlattenedIdGroups``: the groups as flattened ids ``r * P + p``.

    Pure arithmetic (no device assignment). In ``kFlattenedID`` mode the list is returned
    unchanged (even when empty); otherwise the result is explicit, ordered as in
    ``participating_device_groups`` over the row-major table.
    """
    groups = as_device_list(device_list)
    if Mode.coerce(mode) is Mode.FLATTENED_ID:
        return groups
    _check_counts(replica_count, partition_count)
    table = DeviceAssignment.row_major(replica_count, partition_count)
    return CollectiveDeviceList.from_flat(*device_group_arrays(groups, mode=mode, device_assignment=table))


def participant_counts(
    replica_count: int, partition_count: int, device_list: object, mode: Mode
) -> list[int]:
    """XLA's ``GetPariticipantCountsForReplicaGroups``: the size of each device group.

    Note the asymmetry XLA has: ``kCrossPartition`` reports one count per written group.
    """
    groups = as_device_list(device_list)
    mode = Mode.coerce(mode)
    _check_counts(replica_count, partition_count)
    if groups.is_empty:
        if mode is Mode.FLATTENED_ID:
            raise InternalError(f"replica groups cannot be empty for {Mode.FLATTENED_ID} mode")
        sizes = np.array([partition_count if mode is Mode.CROSS_PARTITION else replica_count])
    else:
        sizes = groups.group_sizes
    if mode is Mode.CROSS_REPLICA:
        check_size(int(sizes.size) * int(partition_count), "the participant counts")
        return np.repeat(sizes, partition_count).tolist()
    if mode is Mode.CROSS_REPLICA_AND_PARTITION:
        return (sizes * partition_count).tolist()
    return sizes.tolist()


def replica_group_count_and_size(
    device_list: object, mode: Mode, replica_count: int, partition_count: int
) -> tuple[int, int] | None:
    """XLA's ``GetReplicaGroupCountAndSize``: (count, size) of the device groups, or None when
    their sizes differ. An iota list answers ``(G, S)`` directly, whatever the mode."""
    groups = as_device_list(device_list)
    mode = Mode.coerce(mode)
    if groups.iota is not None:
        return groups.iota.num_replica_groups, groups.iota.num_devices_per_group
    counts = participant_counts(replica_count, partition_count, groups, mode)
    if counts and all(count == counts[0] for count in counts):
        return len(counts), counts[0]
    return None


def subgroup_size(device_list: object, mode: Mode, replica_count: int, partition_count: int) -> int:
    """XLA's ``GetSubgroupSize`` (used by the verifier): the first group's size, or the mode's
    count when there are no groups; times the partition count in ``kCrossReplicaAndPartition``."""
    groups = as_device_list(device_list)
    mode = Mode.coerce(mode)
    if mode is Mode.CROSS_PARTITION:
        return groups.num_devices_per_group if not groups.is_empty else partition_count
    size = groups.num_devices_per_group if not groups.is_empty else replica_count
    if mode is Mode.CROSS_REPLICA_AND_PARTITION:
        return size * partition_count
    return size

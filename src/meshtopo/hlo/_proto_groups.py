"""A collective's replica groups read from its ``HloInstructionProto``, in XLA's order.

XLA (``CollectiveDeviceListBase::DeviceListFromProto``) reads an instruction's groups from the
first of: ``iota_collective_device_list`` (an ``IotaReplicaGroupListProto``, printed
``[2,4]<=[8]``), ``mesh_axes_replica_group_list`` (a mesh and the axes the groups span, printed
``mesh['x'=2,'y'=4] {'y'}``), the older ``replica_groups`` field when it holds groups, and
``collective_device_list`` (explicit groups; before XLA had field 92 it could hold an iota
list). All but ``replica_groups`` are one ``oneof``: a proto holds at most one of them, the
one written last. Each form is read into the ``CollectiveDeviceList`` the text reader builds from what XLA
prints for it, so the groups print as they do in the module's text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from google.protobuf.message import Message

from .._errors import InvalidArgumentError, MeshtopoError
from ..groups._device_list import CollectiveDeviceList, MeshAxesReplicaGroupList, MeshGrid
from ..groups._iota import IotaReplicaGroupList, IotaTileAssignment
from ..groups._mesh_grid import AxisRef, SubAxis

# The instruction's fields XLA reads groups from, in its order.
_IOTA, _MESH_AXES, _LEGACY, _LIST = (
    "iota_collective_device_list", "mesh_axes_replica_group_list", "replica_groups",
    "collective_device_list")


class Groups:
    """Device lists and their text per distinct proto value, shared by the collectives of
    one module read from file ``source`` (named in errors)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.found: dict[bytes, tuple[CollectiveDeviceList, str]] = {}

    def of(self, proto: Message) -> tuple[CollectiveDeviceList, str] | None:
        """The groups of instruction ``proto`` and their text, from the field XLA reads
        them from; None when it has none. A value XLA's own types cannot hold (a
        ``DeviceListFromProto`` that would fail a check, or groups that do not fit their
        mesh or iota) is an ``InvalidArgumentError`` naming the file, the instruction and
        the field."""
        field = proto.WhichOneof("replica_group_list")
        if field == _IOTA:
            key = b"\1" + proto.iota_collective_device_list.SerializeToString()
        elif field == _MESH_AXES:
            key = b"\2" + proto.mesh_axes_replica_group_list.SerializeToString()
        elif proto.replica_groups:
            field = _LEGACY
            key = b"\0" + b"".join(g.SerializeToString() + b"\1" for g in proto.replica_groups)
        elif field == _LIST:
            key = b"\3" + proto.collective_device_list.SerializeToString()
        else:
            return None
        found = self.found.get(key)
        if found is None:
            try:
                groups = _DECODERS[field](proto)
            except MeshtopoError as error:
                raise InvalidArgumentError(
                    f"{self.source}: instruction {proto.name}: {field}: {error}") from None
            found = self.found[key] = (groups, str(groups))
        return found


def _iota_list(iota: Message) -> CollectiveDeviceList:
    """An ``IotaReplicaGroupListProto``: ``[G,S]<=[reshape_dims]T(perm)``."""
    return CollectiveDeviceList(IotaReplicaGroupList(
        iota.num_replica_groups, iota.num_devices_per_group,
        list(iota.iota_reshape_dims) or None, list(iota.iota_transpose_perm) or None))


def _explicit(groups: Iterable[Message]) -> CollectiveDeviceList:
    """``ReplicaGroup`` messages: ``{{0,1},{2,3}}``."""
    return CollectiveDeviceList([list(g.replica_ids) for g in groups])


def _iota_field(proto: Message) -> CollectiveDeviceList:
    return _iota_list(proto.iota_collective_device_list)


def _mesh_axes_field(proto: Message) -> CollectiveDeviceList:
    """A ``MeshAxesReplicaGroupListProto``: the mesh (``Mesh::FromProto``: its device ids, else
    the iota its ``iota_transform`` describes, else the plain iota) and the axes it spans,
    each a mesh axis by index, whole or a sub-axis ``name:(pre_size)size``."""
    written = proto.mesh_axes_replica_group_list
    mesh = written.mesh
    axes = [(axis.name, axis.size) for axis in mesh.axes]
    devices: object = list(mesh.device_ids) or None
    if mesh.HasField("iota_transform"):
        if devices is not None:
            raise InvalidArgumentError("the mesh has both device_ids and an iota_transform")
        transform = mesh.iota_transform
        if axes:  # else MeshGrid names what is missing
            devices = IotaTileAssignment(
                [size for _, size in axes], list(transform.reshape_dims),
                list(transform.transpose_perm) or None).to_array()
    grid = MeshGrid(axes, devices)
    refs: list[AxisRef] = []
    for ref in written.axes:
        index = ref.mesh_axis_index
        if not 0 <= index < len(axes):
            raise InvalidArgumentError(
                f"mesh_axis_index {index} is not an axis of the mesh {grid}")
        name = axes[index][0]
        if ref.HasField("sub_axis_info"):
            sub = ref.sub_axis_info
            refs.append(SubAxis(name, sub.pre_size, sub.size))
        else:
            refs.append(name)
    return CollectiveDeviceList(MeshAxesReplicaGroupList(grid, tuple(refs)))


def _legacy_field(proto: Message) -> CollectiveDeviceList:
    return _explicit(proto.replica_groups)


def _list_field(proto: Message) -> CollectiveDeviceList:
    """A ``CollectiveDeviceListProto``: its explicit groups, or the iota list older XLA
    wrote in it."""
    value = proto.collective_device_list
    if value.HasField("iota_replica_group_list"):
        return _iota_list(value.iota_replica_group_list)
    return _explicit(value.replica_groups)


_DECODERS: dict[str, Callable[[Message], CollectiveDeviceList]] = {
    _IOTA: _iota_field, _MESH_AXES: _mesh_axes_field, _LEGACY: _legacy_field,
    _LIST: _list_field,
}

"""``Mesh``: a named device mesh with its collectives' device lists.

``MeshGrid`` (``_mesh_grid``) holds the axes, the device order and the group algebra; a
``Mesh`` adds the views that return ``CollectiveDeviceList`` values, so that the device-list
layer sits between the two and nothing imports back.

>>> mesh = Mesh({"data": 2, "model": 4})
>>> mesh.replica_groups(over="model").replica_groups
[[0, 1, 2, 3], [4, 5, 6, 7]]
"""

from __future__ import annotations

import numpy as np

from ._device_list import CollectiveDeviceList
from ._mesh_grid import MeshAxesReplicaGroupList, MeshGrid, axis_refs


class Mesh(MeshGrid):
    """Named axes with sizes (major to minor) and the device id at every mesh position.

    ``devices`` is an int array in the mesh's shape (or flat) holding distinct non-negative
    device ids, like a JAX ``Mesh``'s devices; by default position i holds device i.
    Meshes are immutable and compare by axes and devices (a ``MeshGrid`` read from mesh-axes
    text compares equal to the ``Mesh`` it writes).
    """

    @classmethod
    def of(cls, grid: MeshGrid) -> Mesh:
        """The ``Mesh`` of a ``MeshGrid`` (a mesh-axes list's ``mesh``, for one)."""
        return grid if isinstance(grid, Mesh) else cls(grid.shape, devices=grid.devices)

    def replica_groups(self, over: object) -> CollectiveDeviceList:
        """The groups of a collective over ``over`` as a device list, compact whenever possible.

        >>> Mesh({"data": 2, "model": 4}).replica_groups(over="data")
        CollectiveDeviceList('[4,2]<=[2,4]T(1,0)')
        """
        return CollectiveDeviceList(MeshAxesReplicaGroupList(self, axis_refs(over))).compact()

    def axes_for(self, groups: object) -> tuple[str, ...] | None:
        """The mesh axes (in order) whose collective has exactly ``groups``, or None.

        ``groups`` is anything ``CollectiveDeviceList`` accepts; only whole axes are tried.

        >>> Mesh({"data": 2, "model": 4}).axes_for([[0, 4], [1, 5], [2, 6], [3, 7]])
        ('data',)
        """
        device_list = (
            groups if isinstance(groups, CollectiveDeviceList) else CollectiveDeviceList(groups)
        )
        if not device_list.is_uniform or 0 in (
            device_list.num_replica_groups,
            device_list.num_devices_per_group,
        ):
            return None
        array = device_list.to_array()
        positions = self.positions_of(array[0])
        if (positions < 0).any():
            return None
        coords = np.stack(np.unravel_index(positions, self._sizes), axis=1)
        changes = coords != coords[0]
        first_change = changes.argmax(axis=0)
        varying = np.flatnonzero(changes.any(axis=0)).tolist()
        # An axis that changes later between ranks is more major in the collective's order.
        axes = tuple(
            self._names[axis] for axis in sorted(varying, key=lambda axis: -first_change[axis])
        )
        return axes if np.array_equal(self.group_array(axes), array) else None

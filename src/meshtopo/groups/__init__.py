"""The math layer: replica groups, device lists, meshes, group modes and placement.

Everything here is exact group algebra on integers, numpy-vectorised, with XLA's text forms:
iota tile assignments and replica group lists (``_iota``), explicit groups (``_explicit_groups``),
the mesh group algebra (``_mesh_grid``), device lists with meshes and mesh-axes lists
(``_device_list``), group modes (``_modes``), device assignments and participating devices
(``_placement``), permute pairs (``_pairs``), and the scanner their text readers share
(``_text``). It imports only the base modules at the package's top, which every layer uses and
which hold no group math: ``_errors`` (the one error hierarchy), ``_limits`` (the device
limit), ``_checks`` (argument checks), ``_keywords`` (keyword-only arguments that were
positional) and ``_pure_python`` (the switch away from compiled scanners). ``hlo``, ``order``,
``runtime``, ``topology``, ``neuron`` and the front ends build on this package; nothing here
imports them.

>>> from meshtopo.groups import Mesh
>>> Mesh({"data": 2, "model": 4}).replica_groups(over="data").replica_groups
[[0, 4], [1, 5], [2, 6], [3, 7]]
"""

from ._device_list import CollectiveDeviceList as CollectiveDeviceList
from ._device_list import Mesh as Mesh
from ._device_list import MeshAxesReplicaGroupList as MeshAxesReplicaGroupList
from ._device_list import MeshGrid as MeshGrid  # Mesh's former name, for one release
from ._iota import IotaReplicaGroupList as IotaReplicaGroupList
from ._iota import IotaTileAssignment as IotaTileAssignment
from ._mesh_grid import SubAxis as SubAxis
from ._modes import CollectiveOpGroupMode as CollectiveOpGroupMode
from ._modes import group_mode as group_mode
from ._modes import group_mode_for_opcode as group_mode_for_opcode
from ._pairs import cycle_type as cycle_type
from ._pairs import has_cycles as has_cycles
from ._pairs import is_backward_cycle as is_backward_cycle
from ._pairs import is_forward_cycle as is_forward_cycle
from ._pairs import pair_problems as pair_problems
from ._pairs import participating_device_pairs as participating_device_pairs
from ._pairs import split_edges as split_edges
from ._placement import DeviceAssignment as DeviceAssignment
from ._placement import expansion_factor as expansion_factor
from ._placement import flattened_id_groups as flattened_id_groups
from ._placement import participant_counts as participant_counts
from ._placement import participating_device_groups as participating_device_groups
from ._placement import participating_device_groups_array as participating_device_groups_array
from ._placement import participating_devices as participating_devices
from ._placement import participating_ids as participating_ids
from ._placement import replica_group_count_and_size as replica_group_count_and_size
from ._placement import subgroup_size as subgroup_size

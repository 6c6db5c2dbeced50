"""meshtopo: XLA's collective topology math, exactly.

Layers, in the order data flows (a module imports only modules above it in this list):

- ``groups``, the math layer: replica groups, device lists, meshes, group modes, placement
  (with the base modules ``_errors``, ``_checks``, ``_keywords``, ``_limits`` and
  ``_pure_python`` beneath everything);
- ``hlo``: HLO text to a module model, XLA's verifier checks;
- ``order``: per-device collective schedules matched by arrival order (imports ``hlo``);
- ``neuron``: Neuron's 3-D rank model;
- ``runtime``: cliques, communicators, a rendezvous and backends (threads; torch.distributed,
  imported on use) that execute a module's collectives;
- ``topology``: physical clusters, tiers per device group, cost models (math layer only);
- front ends: ``cli``, ``explore``, ``jax`` (imports jax only when called).

``import meshtopo`` loads the math layer only; each subpackage (``mt.hlo``, ``mt.order``, ...)
is imported on first use, so a command or script pays only for the layers it touches.

>>> import meshtopo as mt
>>> mt.Mesh({"data": 2, "model": 4}).replica_groups(over="data").replica_groups
[[0, 4], [1, 5], [2, 6], [3, 7]]
"""

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from ._errors import HloParseError as HloParseError
from ._errors import InternalError as InternalError
from ._errors import InvalidArgumentError as InvalidArgumentError
from ._errors import LimitError as LimitError
from ._errors import MeshtopoError as MeshtopoError
from ._limits import DEFAULT_COLLECTIVE_LIMIT as DEFAULT_COLLECTIVE_LIMIT
from ._limits import DEFAULT_DEVICE_LIMIT as DEFAULT_DEVICE_LIMIT
from ._limits import DEFAULT_TRIP_LIMIT as DEFAULT_TRIP_LIMIT
from ._limits import collective_limit as collective_limit
from ._limits import device_limit as device_limit
from ._limits import get_collective_limit as get_collective_limit
from ._limits import get_device_limit as get_device_limit
from ._limits import get_trip_limit as get_trip_limit
from ._limits import set_collective_limit as set_collective_limit
from ._limits import set_device_limit as set_device_limit
from ._limits import set_trip_limit as set_trip_limit
from ._limits import trip_limit as trip_limit
from .groups import CollectiveDeviceList as CollectiveDeviceList
from .groups import CollectiveOpGroupMode as CollectiveOpGroupMode
from .groups import DeviceAssignment as DeviceAssignment
from .groups import IotaReplicaGroupList as IotaReplicaGroupList
from .groups import IotaTileAssignment as IotaTileAssignment
from .groups import Mesh as Mesh
from .groups import MeshAxesReplicaGroupList as MeshAxesReplicaGroupList
from .groups import MeshGrid as MeshGrid  # Mesh's former name, for one release
from .groups import SubAxis as SubAxis
from .groups import cycle_type as cycle_type
from .groups import expansion_factor as expansion_factor
from .groups import flattened_id_groups as flattened_id_groups
from .groups import group_mode as group_mode
from .groups import group_mode_for_opcode as group_mode_for_opcode
from .groups import has_cycles as has_cycles
from .groups import is_backward_cycle as is_backward_cycle
from .groups import is_forward_cycle as is_forward_cycle
from .groups import pair_problems as pair_problems
from .groups import participant_counts as participant_counts
from .groups import participating_device_groups as participating_device_groups
from .groups import participating_device_groups_array as participating_device_groups_array
from .groups import participating_device_pairs as participating_device_pairs
from .groups import participating_devices as participating_devices
from .groups import participating_ids as participating_ids
from .groups import replica_group_count_and_size as replica_group_count_and_size
from .groups import split_edges as split_edges
from .groups import subgroup_size as subgroup_size

if TYPE_CHECKING:
    from . import hlo as hlo
    from . import jax as jax
    from . import neuron as neuron
    from . import order as order
    from . import runtime as runtime
    from . import topology as topology

__version__ = "0.1.0"

_SUBPACKAGES = frozenset({"hlo", "jax", "neuron", "order", "runtime", "topology"})


def __getattr__(name: str) -> ModuleType:
    """Import the subpackage ``name`` on first use (``mt.hlo``); other names are missing."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, the subpackages not yet imported among them."""
    return sorted(set(globals()) | _SUBPACKAGES)

"""Physical topology: which links each device group really crosses, and what it will cost.

A ``Cluster`` (from a preset, a TOML/JSON file or NCCL's topology XML) places every device id
on a host, a domain (NVLink domain or TPU slice) and torus coordinates. ``group_tiers`` reads
any device group list in its real order and says, per group, the hosts and domains it spans,
the slowest tier it crosses and its torus hops; ``estimate`` prices a collective under three
documented models (``busbw``, ``hierarchical``, ``nccl``: NCCL's tuner, ``nccl_tuning``, over
the graphs its topology search finds, ``nccl_graphs``); ``plan`` and ``compare`` do it per mesh
axis for two layouts; ``fit_nccl_tests``, ``fit_tiers`` and ``calibrated`` fit alpha and beta
per tier (host, network) from nccl-tests logs and write them into a cluster.

Layering: imports the math layer only (``meshtopo.groups``, with the base modules
``_errors``, ``_limits``; ``collective_costs`` takes a ``meshtopo.hlo`` Collective but does not import the
reader); nothing below it imports this package.

>>> import meshtopo as mt
>>> cluster = mt.topology.preset("h100-8x", hosts=4)
>>> mesh = mt.Mesh({"dp": 4, "tp": 8})
>>> [str(t) for t in mt.topology.mesh_axis_tiers(cluster, mesh, "tp").tier_values]
['host', 'host', 'host', 'host']
>>> mt.topology.mesh_axis_tiers(cluster, mesh, "dp").hosts.tolist()[:3]
[4, 4, 4]
>>> e = mt.topology.estimate(cluster, mesh.group_array("tp"), "all-reduce", 2**30)
>>> round(e.time("busbw") * 1e3, 3)
4.176
"""

from ._calibrate import Calibration as Calibration
from ._calibrate import TierFit as TierFit
from ._calibrate import calibrated as calibrated
from ._calibrate import fit_nccl_tests as fit_nccl_tests
from ._calibrate import fit_tiers as fit_tiers
from ._calibrate import parse_nccl_tests as parse_nccl_tests
from ._cluster import Cluster as Cluster
from ._cluster import Link as Link
from ._cluster import Tier as Tier
from ._cluster import Torus as Torus
from ._cost import COLLECTIVE_KINDS as COLLECTIVE_KINDS
from ._cost import MODELS as MODELS
from ._cost import Estimate as Estimate
from ._cost import busbw_factor as busbw_factor
from ._cost import collective_kind as collective_kind
from ._cost import estimate as estimate
from ._cost import slowest_link_bytes as slowest_link_bytes
from ._cost import torus_time as torus_time
from ._files import load_cluster as load_cluster
from ._files import preset_spec as preset_spec
from ._files import save_cluster as save_cluster
from ._nccl_graph import nccl_graphs as nccl_graphs
from ._nccl_tuning import NcclGraph as NcclGraph
from ._nccl_tuning import nccl_best_time as nccl_best_time
from ._nccl_tuning import nccl_time as nccl_time
from ._nccl_tuning import nccl_tuning as nccl_tuning
from ._nccl_xml import NcclTopology as NcclTopology
from ._nccl_xml import read_nccl_topology as read_nccl_topology
from ._plan import PLAN_OPCODES as PLAN_OPCODES
from ._plan import PlanDiff as PlanDiff
from ._plan import PlanRow as PlanRow
from ._plan import collective_costs as collective_costs
from ._plan import compare as compare
from ._plan import group_costs as group_costs
from ._plan import plan as plan
from ._presets import PRESETS as PRESETS
from ._presets import preset as preset
from ._tiers import GroupTiers as GroupTiers
from ._tiers import device_list_tiers as device_list_tiers
from ._tiers import group_tiers as group_tiers
from ._tiers import mesh_axis_tiers as mesh_axis_tiers

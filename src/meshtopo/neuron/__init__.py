"""Neuron's NEFF-side 3-D rank model: ``replica_groups[topology][group][rank]``.

Imports the math layer and ``hlo`` beneath it; nothing above imports back.

- ``RankModel`` / ``replica_groups_3d``: the envelope (outer axis = distinct group lists);
- ``cc_rank_world_size``: ``max(ws_rg, ws_pairs, ws_expl, 1)`` with the MPMD rejections;
- ``rank_of_core``, ``num_partitions_for``, ``is_in_replica_group``: cores, LNCs and ranks;
- ``tp_replica_group``, ``has_matching_replica_groups``: the TP group read from the graph;
- ``combiner_key``, ``combinable_sets``: the reduce-scatter combiner's key and merges.

>>> from meshtopo import neuron
>>> neuron.cc_rank_world_size([[[0, 1, 2, 3], [4, 5, 6, 7]]]), neuron.rank_of_core(7)
(4, 3)
"""

from ._combiner import CombinableSet as CombinableSet
from ._combiner import CombinerKey as CombinerKey
from ._combiner import combinable_sets as combinable_sets
from ._combiner import combiner_key as combiner_key
from ._rank_model import DEFAULT_CORES_PER_LNC as DEFAULT_CORES_PER_LNC
from ._rank_model import MpmdError as MpmdError
from ._rank_model import RankModel as RankModel
from ._rank_model import cc_rank_world_size as cc_rank_world_size
from ._rank_model import check_permute as check_permute
from ._rank_model import cores_of_rank as cores_of_rank
from ._rank_model import is_in_replica_group as is_in_replica_group
from ._rank_model import num_partitions_for as num_partitions_for
from ._rank_model import pairs_span as pairs_span
from ._rank_model import rank_of_core as rank_of_core
from ._rank_model import replica_groups_3d as replica_groups_3d
from ._rank_model import source_target_pairs as source_target_pairs
from ._tp_group import GROUP_OPCODES as GROUP_OPCODES
from ._tp_group import find_tp_collective as find_tp_collective
from ._tp_group import has_matching_replica_groups as has_matching_replica_groups
from ._tp_group import instruction_groups as instruction_groups
from ._tp_group import post_order as post_order
from ._tp_group import tp_replica_group as tp_replica_group

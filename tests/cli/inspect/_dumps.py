"""Hand-written HLO dumps for the ``inspect`` tests."""

import re

ADD = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""


def module(body: str, replica_count: int = 1, num_partitions: int = 1, params: str = "f32[8]") -> str:
    """A module with an ``add`` reduction and an ENTRY holding ``body`` after ``%p``, whose
    result shape is its ROOT's (XLA's parser checks that they agree)."""
    root = re.search(r"ROOT %[\w.\-]+ = (.+?) [a-z][a-z0-9\-]*\(", body)
    return (
        f"HloModule m, replica_count={replica_count}, num_partitions={num_partitions}\n\n"
        f"{ADD}\n"
        f"ENTRY %main (p: {params}) -> {root.group(1) if root else params} {{\n"
        f"  %p = {params}{{0}} parameter(0)\n"
        f"{body}"
        "}\n"
    )


# 2 replicas x 2 partitions: XLA's default placement is [[0, 2], [1, 3]].
FLATTENED_2X2 = module(
    "  ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1},{2,3}}, "
    "use_global_device_ids=true, to_apply=%add\n",
    replica_count=2,
    num_partitions=2,
)

MIXED_2X2 = module(
    "  %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1},{2,3}}, "
    "use_global_device_ids=true, to_apply=%add\n"
    "  %ag = f32[16]{0} all-gather(%p), channel_id=2, replica_groups={{1,0}}, dimensions={0}\n"
    "  %cp = f32[8]{0} collective-permute(%p), channel_id=3, source_target_pairs={{0,1},{1,0}}\n"
    "  %rs = f32[4]{0} reduce-scatter(%p), replica_groups={{0,1}}, dimensions={0}, to_apply=%add\n"
    "  ROOT %ar2 = f32[8]{0} all-reduce(%ar), replica_groups={}, to_apply=%add\n",
    replica_count=2,
    num_partitions=2,
)

# A single partition over 8 replicas: device ids equal flattened ids under any default.
REPLICAS_8 = module(
    "  %ar = f32[8]{0} all-reduce(%p), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=%add\n"
    "  %ars = f32[8]{0} all-reduce-start(%ar), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add\n"
    "  ROOT %ard = f32[8]{0} all-reduce-done(%ars)\n",
    replica_count=8,
)

# XLA's verifier rejects an all-gather with use_global_device_ids and no channel_id.
REJECTED = module(
    "  ROOT %ag = f32[16]{0} all-gather(%p), replica_groups={{0,1}}, dimensions={0}, "
    "use_global_device_ids=true\n",
    replica_count=2,
)

"""Properties of the local backend: for any grid, placement (any device ids), group mode and
partition of the ids into groups, an all-reduce and an all-gather meet exactly the device
groups the math layer computes (itself measured against XLA), in its rank order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import meshtopo as mt

MODES = {
    "cross_replica": ("", ""),
    "cross_replica_and_partition": ("channel_id=1, ", ", use_global_device_ids=false"),
    "flattened_id": ("channel_id=1, ", ", use_global_device_ids=true"),
}


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, np.ndarray]:
    replicas = draw(st.integers(1, 4))
    partitions = draw(st.integers(1, 8 // replicas))
    mode = draw(st.sampled_from(sorted(MODES)))
    ids = draw(st.permutations(range(replicas * (partitions if mode == "flattened_id" else 1))))
    size = draw(st.sampled_from([d for d in range(1, len(ids) + 1) if len(ids) % d == 0]))
    groups = [ids[i:i + size] for i in range(0, len(ids), size)]
    devices = draw(st.lists(st.integers(0, 40), min_size=replicas * partitions,
                            max_size=replicas * partitions, unique=True))
    channel, flag = MODES[mode]
    written = "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
    # A group of replica ids spans every partition in cross_replica_and_partition mode.
    gathered = size * (partitions if mode == "cross_replica_and_partition" else 1)
    text = f"""HloModule p, replica_count={replicas}, num_partitions={partitions}
%sum (x: s64[], y: s64[]) -> s64[] {{
  %x = s64[] parameter(0)
  %y = s64[] parameter(1)
  ROOT %r = s64[] add(%x, %y)
}}
ENTRY %main (p: s64[1]) -> (s64[1], s64[{gathered}]) {{
  %p = s64[1] parameter(0)
  %ar = s64[1] all-reduce(%p), {channel}replica_groups={written}{flag}, to_apply=%sum
  %ag = s64[{gathered}] all-gather(%p), {channel.replace("1", "2")}replica_groups={written}{flag}, dimensions={{0}}
  ROOT %t = (s64[1], s64[{gathered}]) tuple(%ar, %ag)
}}
"""
    return text, np.array(devices, dtype=np.int64).reshape(replicas, partitions)


@settings(max_examples=60)
@given(cases())
def test_collectives_meet_the_math_layer_groups(case: tuple[str, np.ndarray]) -> None:
    text, table = case
    module = mt.hlo.parse_module(text, device_assignment=table)
    inputs = {int(d): [np.array([1 << int(d)], dtype=np.int64)] for d in table.flat}
    outputs = mt.runtime.execute(module, inputs, timeout=20)
    for group in module.collectives[0].device_groups():
        for device in group:
            summed, gathered = outputs[device]
            assert int(summed[0]) == sum(1 << d for d in group)
            assert gathered.tolist() == [1 << d for d in group]

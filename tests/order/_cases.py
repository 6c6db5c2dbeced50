"""Hand-written HLO modules for the order tests: a shared head and small builders."""

from __future__ import annotations

import meshtopo as mt

ADD = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""


def all_reduce(name: str, groups: str, shape: str = "f32[8]{0}", channel: int = 1) -> str:
    """One all-reduce line over flattened-id ``groups`` reading ``%p``."""
    return (f"  %{name} = {shape} all-reduce(%p), channel_id={channel}, replica_groups={groups}, "
            f"use_global_device_ids=true, to_apply=%add\n")


def module(body: str, partitions: int, name: str = "m", shape: str = "f32[8]{0}",
           scheduled: bool = False, root: str | None = None) -> mt.hlo.Module:
    """An entry computation holding ``body`` after ``%p = parameter(0)``; the root is a copy
    of ``root`` (default ``%p``)."""
    flag = ", is_scheduled=true" if scheduled else ""
    text = (f"HloModule {name}{flag}, num_partitions={partitions}\n{ADD}"
            f"ENTRY %main (p: {shape.split('{')[0]}) -> {shape.split('{')[0]} {{\n"
            f"  %p = {shape} parameter(0)\n{body}"
            f"  ROOT %out = {shape} copy(%{root or 'p'})\n}}\n")
    return mt.hlo.parse_module(text)

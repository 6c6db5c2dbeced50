"""HLO texts shared by the Neuron tests."""

import re

ADD = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""

MAX = """%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
"""


def module(body: str, num_partitions: int = 8, extra: str = "", result: str | None = None
           ) -> str:
    """An 8-partition module: the reductions, ``extra`` computations, then ENTRY ``body``
    (``result``, the ENTRY's result shape, is its ROOT's unless given: XLA's parser checks
    that they agree)."""
    if result is None:
        root = re.search(r"ROOT %[\w.\-]+ = (.+?) [a-z][a-z0-9\-]*\(", body)
        result = root.group(1) if root else "f32[8,4]"
    return (
        f"HloModule m, num_partitions={num_partitions}\n{ADD}{MAX}{extra}"
        f"ENTRY %main (p: f32[8,4], q: f32[8,4]) -> {result} {{\n{body}}}\n"
    )


def rs(name: str, operand: str, groups: str, channel: int, *, dim: int = 0, apply: str = "add",
       shape: str = "f32[2,4]{1,0}", tail: str = "") -> str:
    """One reduce-scatter line with a channel id and global device ids."""
    return (
        f"  %{name} = {shape} reduce-scatter(%{operand}), channel_id={channel}, "
        f"replica_groups={groups}, use_global_device_ids=true, dimensions={{{dim}}}, "
        f"to_apply=%{apply}{tail}\n"
    )


PARAMS = "  %p = f32[8,4]{1,0} parameter(0)\n  %q = f32[8,4]{1,0} parameter(1)\n"

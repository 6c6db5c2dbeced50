"""What a module holds is freed with it: nothing of a dropped module stays behind."""

from __future__ import annotations

import gc
import tracemalloc

from meshtopo import hlo

from ._text import entry_head

TEXT = entry_head("HloModule m, num_partitions=2") + (
    "  %n0 = f32[8]{0} negate(%p)\n"
    "  %ar = f32[8]{0} all-reduce(%n0), channel_id=1, replica_groups={{0,1}}, "
    "use_global_device_ids=true, to_apply=%add\n"
    "  ROOT %n1 = f32[8]{0} negate(%ar)\n}\n")


def test_a_dropped_module_leaves_nothing_behind() -> None:
    many = "".join(f"%m{i} = f32[8]{{0}} negate(%ar)\n  " for i in range(500))
    text = TEXT.replace("ROOT %n1", many + "ROOT %n1")

    def held_after(rounds: int) -> int:
        for _ in range(rounds):
            hlo.parse_module(text).collectives[0].device_groups()
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        settled = held_after(5)
        module = hlo.parse_module(text)
        one_module = tracemalloc.get_traced_memory()[0] - settled
        del module
        grown = held_after(20) - settled
    finally:
        tracemalloc.stop()
    assert one_module > 100_000
    assert grown < one_module / 4  # a leak would keep 20 modules

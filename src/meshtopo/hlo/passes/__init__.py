"""XLA's collective passes as module-to-module rewrites: ``mt.hlo.passes``.

Part of the HLO layer: imports ``hlo`` modules (and the math layer beneath) only. Each pass
builds a new module, never changing the one given: it edits a ``Draft`` (``_draft``), prints
it and reads the text back with ``parse_module``, so ``result.to_text()`` is text jaxlib's
parser reads.

- ``async_collective_creator(module, convert=..., all_reduce_min_bytes=0,
  all_gather_min_bytes=0, reduce_scatter_min_bytes=0, ignore_size_check=False,
  use_generic_async_start_done=False)``: XLA's ``async-collective-creator`` (``_creator``).
- ``convert_async_collectives_to_sync(module, is_nop=None)``: XLA's
  ``convert-async-collectives-to-sync`` (``_to_sync``).
- ``linearize_collectives(module)``: XLA's ``collectives-schedule-linearizer``
  (``_linearize``).
- ``combine_collectives(module, threshold_bytes=30 MiB, threshold_count=256,
  opcodes=("all-reduce", "all-gather", "reduce-scatter"))``: combiners keyed on opcode,
  element type, dimensions, reduction, group mode and exact groups (``_combine``).

``CONVERTIBLE`` lists the opcodes the creator converts. The ``run_*`` forms return a ``PassResult``: the module and one ``Decision`` per collective
(what the pass did and why).

>>> import meshtopo as mt
>>> module = mt.hlo.parse_module('''HloModule m, is_scheduled=true
... %add (x: f32[], y: f32[]) -> f32[] {
...   %x = f32[] parameter(0)
...   %y = f32[] parameter(1)
...   ROOT %s = f32[] add(%x, %y)
... }
... ENTRY %main (p: f32[1024]) -> f32[1024] {
...   %p = f32[1024]{0} parameter(0)
...   ROOT %ar = f32[1024]{0} all-reduce(%p), replica_groups={{0,1}}, to_apply=%add
... }
... ''')
>>> split = mt.hlo.passes.async_collective_creator(module, convert={"all-reduce"},
...                                                all_reduce_min_bytes=4096)
>>> [i.opcode for i in split.entry.instructions]
['parameter', 'all-reduce-start', 'all-reduce-done']
>>> back = mt.hlo.passes.convert_async_collectives_to_sync(split)
>>> [i.opcode for i in back.entry.instructions]
['parameter', 'all-reduce']
"""

from ._combine import combine_collectives as combine_collectives
from ._combine import run_combine_collectives as run_combine_collectives
from ._creator import CONVERTIBLE as CONVERTIBLE
from ._creator import async_collective_creator as async_collective_creator
from ._creator import run_async_collective_creator as run_async_collective_creator
from ._decision import Decision as Decision
from ._decision import PassResult as PassResult
from ._draft import Line as Line
from ._linearize import linearize_collectives as linearize_collectives
from ._linearize import run_linearize_collectives as run_linearize_collectives
from ._to_sync import convert_async_collectives_to_sync as convert_async_collectives_to_sync
from ._to_sync import (
    run_convert_async_collectives_to_sync as run_convert_async_collectives_to_sync,
)

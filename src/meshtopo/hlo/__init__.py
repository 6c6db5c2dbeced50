"""The HLO layer: HLO text to a module model with its collectives decoded.

Imports only the math layer (and ``_errors``/``_limits``) beneath it.

>>> import meshtopo as mt
>>> module = mt.hlo.parse_module('''HloModule m, num_partitions=4
... %add (x: f32[], y: f32[]) -> f32[] {
...   %x = f32[] parameter(0)
...   %y = f32[] parameter(1)
...   ROOT %s = f32[] add(%x, %y)
... }
... ENTRY %main (p: f32[8]) -> f32[8] {
...   %p = f32[8]{0} parameter(0)
...   ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups=[2,2]<=[4], use_global_device_ids=true, to_apply=%add
... }
... ''')
>>> c = module.collectives[0]
>>> c.name, str(c.mode), c.line, c.column, c.reduction, c.bytes
('ar', 'kFlattenedID', 9, 8, 'sum', 32)
>>> c.device_groups()
[[0, 1], [2, 3]]
"""

from ._collective import Collective as Collective
from ._collective import base_opcode as base_opcode
from ._finding import Finding as Finding
from ._module import Module as Module
from ._module import ModuleHeader as ModuleHeader
from ._module import load as load
from ._module import parse_module as parse_module
from ._shape import Shape as Shape
from ._shape import parse_shape as parse_shape
from ._stream import iter_collectives as iter_collectives
from ._structure import Computation as Computation
from ._structure import Instruction as Instruction
from ._verifier import verify as verify

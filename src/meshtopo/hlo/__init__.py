"""The HLO layer: HLO text to a module model with its collectives decoded, and XLA's checks.

Imports only the math layer (and ``_errors``/``_limits``) beneath it.

Reading, one way: ``_syntax`` (lexical rules) -> ``_reader`` (the grammar: header,
computations, instructions; the one place that decides where an instruction ends; its
opcodes, their operand counts and attributes from the one table in ``_opcodes``, values with
a grammar of their own checked by ``_value_checks``' readers, what XLA checks once an
instruction is read by ``_instruction_checks``) -> ``_structure`` records -> ``_decode`` (collective attributes, beside the reader) ->
``_link`` (starts with dones, async wrappers) -> ``_module`` / ``_stream`` (whose blocks
``_statements`` cuts where top-level statements end, on the tokens below).

Tokens, the foundation of a reader over XLA's tokens: ``_tokens`` (the one table of XLA's
token kinds, spellings and rules) -> ``_tokenize.tokenize(text, pos)`` (kinds, starts and ends
as numpy columns, from the compiled ``_lexer`` or ``_pure_lexer``, chosen in ``_native``) and
``_token_values`` (a token's value, decoded from its span on demand).

- ``parse_module(text, replica_count=None, num_partitions=None, device_assignment=None)`` /
  ``load(path, ...)`` (plain or gzip, ``'-'`` for stdin): the header (or none: counts from
  the keywords, defaulting to 1), every computation and instruction, every collective
  decoded. ``load`` of a file in XLA's dump layout takes the device table and counts from the
  ``compile_options.textproto`` beside it; ``module.device_assignment_source`` says
  ``given``, ``dump`` or ``default``.
- ``iter_collectives(path_or_file, progress=None)``: the same reader over the file block by
  block (8 MB), in memory bounded by a block and the collectives found; a rich progress bar
  on stderr when it is a terminal.
- Binary HLO (``_files``, ``_proto``, ``_proto_module``): ``load`` and ``iter_collectives``
  read ``HloProto``, ``HloModuleProto`` and ``HloSnapshot`` files (plain or gzip, recognised
  by content) into the same ``Module`` as the text of the same compilation, with the
  proto's device table (``device_assignment_source`` ``proto``) and schedule
  (``schedule_source`` ``proto``); message definitions are ``_proto_schema``'s.
  ``binary_input(path)`` gives a binary file's bytes (gzip undone) and name, None for text.

Model: ``Module`` (``name``, ``is_scheduled``, ``replica_count``, ``num_partitions``,
``device_assignment``, ``device_assignment_source``, ``header_attributes``, ``collectives``,
``computations``, ``entry``), ``Computation`` (ordered ``instructions``, ``root``,
``called_computations``), ``Instruction`` (``opcode``, ``operands``, ``attributes`` as raw
text, ``called_computations``, ``control_predecessors``, ``collective``), ``Collective``
(see its module docstring).

``module.collectives`` holds every collective instruction in text order: sync ops, -start and
-done forms (a done carries its start's attributes and names it in ``start``), async-start/
-update/-done wrapping a collective (and the wrapped op itself, in its own computation, as XLA
verifies both), send/recv and their -done forms.

``printed_groups(text)`` writes a group list on one line as XLA prints it (no comments or
white space), for tables and JSON.

Dump directories (``_dump``): ``module_files(path)`` lists the after-optimisations modules of
a directory in XLA's ``--xla_dump_to`` layout (a file is itself); ``dumped_module(file)`` reads
a file's module id and name from its name (``DumpedModule``); ``single_module_file(path)``
gives the file of a directory holding exactly one such module, which ``load``,
``iter_collectives`` and ``explore`` read as that module's file.
Every input is opened by ``open_input(source)`` (``_input``: paths, ``'-'``, open files; gzip
detected on each; one message for an unreadable or broken gzip input), for the commands too.

Opcode families (``_collective``, over ``_opcodes.TABLE``'s opcodes): ``COLLECTIVE_OPCODES``
(XLA's shorthand async forms, ``SHORTHAND_OPCODES``, among them), ``DONE_OPCODES`` (the -done
of an async pair, whose result XLA infers from its start) and ``NOT_ISSUED_OPCODES`` (every
-done and async-update: they wait for a start and issue nothing).

Values (``_evaluate``): ``evaluate(instruction, operands, replica_ids, partition_ids)`` is the
one evaluator of XLA's data instructions (``EVALUATED_OPCODES``), on numpy arrays with a
leading device axis; element types as dtypes and constant literals are ``_element_types``'.

Errors: what XLA's *parser* rejects is an ``HloParseError`` with line and column; what XLA's
*verifier* rejects is a ``Finding`` from ``verify(module, check_replica_groups=True,
verify_no_collective_deadlocks=False)`` (see ``_verifier``); ``replica_groups_problem(groups,
mode, replica_count, num_partitions, opcode=None)`` runs the verifier's replica-group check on
groups given without a module. Groups past the device limit are
a ``LimitError`` naming line:column.

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

from . import _compiled  # noqa: F401 (first: which reader is imported, compiled or source)
from . import passes as passes
from ._collective import COLLECTIVE_OPCODES as COLLECTIVE_OPCODES
from ._collective import DONE_OPCODES as DONE_OPCODES
from ._collective import NOT_ISSUED_OPCODES as NOT_ISSUED_OPCODES
from ._collective import SHORTHAND_OPCODES as SHORTHAND_OPCODES
from ._collective import Collective as Collective
from ._collective import base_opcode as base_opcode
from ._compile_options import CompileOptions as CompileOptions
from ._compile_options import describe_placement as describe_placement
from ._compile_options import parse_compile_options as parse_compile_options
from ._compile_options import placement_for as placement_for
from ._compile_options import read_compile_options as read_compile_options
from ._dump import DumpedModule as DumpedModule
from ._dump import dumped_module as dumped_module
from ._dump import module_files as module_files
from ._dump import single_module_file as single_module_file
from ._element_types import DTYPES as DTYPES
from ._element_types import element_dtype as element_dtype
from ._element_types import is_float as is_float
from ._element_types import is_low_precision as is_low_precision
from ._evaluate import EVALUATED_OPCODES as EVALUATED_OPCODES
from ._evaluate import branch_computations as branch_computations
from ._evaluate import branch_indices as branch_indices
from ._evaluate import evaluate as evaluate
from ._files import iter_collectives as iter_collectives
from ._files import load as load
from ._finding import Finding as Finding
from ._input import HloInput as HloInput
from ._input import open_input as open_input
from ._literal import literal_array as literal_array
from ._module import Module as Module
from ._module import ModuleHeader as ModuleHeader
from ._module import parse_module as parse_module
from ._module import read_header as read_header
from ._printer import printed_groups as printed_groups
from ._proto import binary_input as binary_input
from ._shape import Shape as Shape
from ._shape_syntax import parse_shape as parse_shape
from ._sharding import same_data_labels as same_data_labels
from ._stream import CollectiveStream as CollectiveStream
from ._structure import Computation as Computation
from ._structure import Instruction as Instruction
from ._verifier import verify as verify
from ._verify_groups import replica_groups_problem as replica_groups_problem

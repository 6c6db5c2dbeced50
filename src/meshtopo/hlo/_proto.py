"""Binary HLO: ``HloProto``, ``HloModuleProto`` and ``HloSnapshot`` files read into a ``Module``.

A file is binary when its first bytes hold control characters no HLO text has (protobuf's
field tags); ``load`` and ``iter_collectives`` then read it here (plain or gzip). Which of the
three messages it is comes from its content: the first reading (``HloProto``, ``HloSnapshot``,
``HloModuleProto``) that gives a module with named computations of named instructions.

The module is built from the same objects the text reader builds (``Computation``,
``Instruction``, ``Collective``, linked by ``_link``), with the collective attributes taken
from the proto's fields: groups from the field XLA reads them from (``_proto_groups``: iota,
mesh axes, the older ``replica_groups`` or explicit), ``source_target_pairs``, ``channel_id`` (positive), ``use_global_device_ids``,
``dimensions``, the reduction computation, send/recv pairs from the frontend attributes.
Each instruction also gets the text XLA would print for what was read (``Instruction.text``;
``Module.text`` is the whole module so printed, which lines and columns point into), printed
on first use (``_proto_printer``); a computation that holds no collective is read on first use
of its instructions (``Computation.read_on_use``), its lines placed at load. The
metadata (``op_name``, ``source_file``, ``source_line``, ``stack_frame_id``) is kept as XLA
prints it. Instruction order is the module's schedule (``HloScheduleProto``) where it has
one, for that computation, else the proto's order; ``Module.schedule_source`` says
``"proto"`` then. The device table is the caller's, else the proto's own
``device_assignment`` (``device_assignment_source`` ``"proto"``), else the compile options
dumped beside the file, else XLA's default.

Not read (the message definitions leave them out, and protobuf skips them): shardings,
layouts' tiles and memory spaces, window, padding and dimension-number attributes
(convolution, dot, gather, scatter), constants of element types other than pred, s32, s64,
u32, u64, f32 and f64 (written ``{...}``), the ``slice_sizes`` of in-place permutes, and the
stack-frame tables (``stack_frame_id`` is kept in the metadata). Frontend attributes and
backend config are read on collectives, whiles, custom calls and fusions. Computations are
listed in the proto's order, which may differ from the order XLA prints them in; each
computation's instructions are in XLA's order.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from typing import IO

import numpy as np
from google.protobuf.message import DecodeError, Message

from .._errors import InvalidArgumentError, MeshtopoError
from ..groups._placement import DeviceAssignment
from ._input import GZIP_MAGIC
from ._proto_schema import ELEMENT_TYPES, OPAQUE, TOKEN, TUPLE, message_class

# The messages a binary HLO file may hold, in the order they are tried.
KINDS = ("HloProto", "HloSnapshot", "HloModuleProto")
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1f]")  # no white space
_SNIFF = 512
def is_binary(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes, uncompressed) holds a control character
    that HLO text never does: the file is protobuf, not text."""
    return _CONTROL.search(head, 0, _SNIFF) is not None


def binary_input(source: object) -> tuple[bytes, str] | None:
    """The bytes (gzip undone) and name of ``source`` (a path other than ``'-'``, or an open
    binary file that can peek) when its first bytes are binary; else None, having read
    nothing (text: for the text reader). Unreadable and broken gzip files are an
    ``InvalidArgumentError`` naming them."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fsdecode(os.fspath(source))
        if path == "-" or os.path.isdir(path):
            return None
        try:
            with open(path, "rb") as handle:
                return _binary(handle, path)
        except OSError as error:
            raise InvalidArgumentError(f"cannot read HLO file {path}: {error.strerror}") from None
    if getattr(source, "peek", None) is None:
        return None
    return _binary(source, str(getattr(source, "name", "<stream>")))  # type: ignore[arg-type]


def _binary(handle: IO[bytes], name: str) -> tuple[bytes, str] | None:
    head = handle.peek(_SNIFF)  # type: ignore[attr-defined]
    if not is_binary(_unzip(head, name, partial=True)):
        return None
    return _unzip(handle.read(), name), name


def _unzip(data: bytes, name: str, partial: bool = False) -> bytes:
    """``data`` decompressed when gzip (``partial``: the first bytes of a stream's start, for
    a look at them; b"" when they do not decompress)."""
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        if partial:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, _SNIFF)
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as error:
        if partial:
            return b""
        raise InvalidArgumentError(f"{name} is not a readable gzip file: {error}") from None


def module_proto(data: bytes, name: str) -> tuple[str, Message]:
    """(kind, ``HloModuleProto``) of a binary HLO file's bytes; an ``InvalidArgumentError``
    naming the file when no kind reads to a module."""
    problems: list[str] = []
    for kind in KINDS:
        message = message_class(kind)()
        try:
            message.ParseFromString(data)
        except DecodeError as error:
            problems.append(str(error))
            continue
        module = message if kind == "HloModuleProto" else (
            message.hlo_module if kind == "HloProto" else message.hlo.hlo_module)
        if _is_module(module):
            return kind, module
    raise not_a_module(name, "cut short or damaged" if problems else "no computations in it")


def not_a_module(name: str, reason: str) -> InvalidArgumentError:
    """The error for file ``name`` that holds no readable module proto, and why."""
    return InvalidArgumentError(
        f"{name} is not an HLO module proto ({reason}): expected an HloProto, HloModuleProto "
        f"or HloSnapshot in protobuf's binary form, as --xla_dump_hlo_as_proto writes")


def _is_module(module: Message) -> bool:
    """Whether ``module`` has computations, each named and starting with a named
    instruction with an opcode."""
    computations = module.computations
    if not computations:
        return False
    for computation in computations:
        instructions = computation.instructions
        if not (computation.name and instructions):
            return False
        first = instructions[0]
        if not (first.name and first.opcode):
            return False
    return True


def proto_table(module: Message, name: str) -> DeviceAssignment | None:
    """The ``device_assignment`` an ``HloModuleProto`` (or ``ExecutableBuildOptionsProto``)
    carries, or None when it has none."""
    table = module.device_assignment
    if not module.HasField("device_assignment"):
        return None
    replicas, computations = table.replica_count, table.computation_count
    columns = [list(c.replica_device_ids) for c in table.computation_devices]
    if len(columns) != computations or any(len(c) != replicas for c in columns):
        raise InvalidArgumentError(
            f"{name}: device_assignment needs {computations} computation_devices of "
            f"{replicas} replica_device_ids each")
    try:
        return DeviceAssignment(np.array(columns, dtype=np.int64).T.reshape(replicas, computations))
    except MeshtopoError as error:
        raise InvalidArgumentError(f"{name}: device_assignment: {error}") from None


def shape_text(shape: Message) -> str:
    """A ``ShapeProto`` as XLA prints it: ``f32[4,2]{1,0}``, ``(s32[], f32[8])``, ``token[]``."""
    element = shape.element_type
    if element == TUPLE:
        return "(" + ", ".join(shape_text(s) for s in shape.tuple_shapes) + ")"
    if element in (TOKEN, OPAQUE):
        return f"{ELEMENT_TYPES[element]}[]"
    dims = shape.dimensions
    dynamic = shape.is_dynamic_dimension
    sizes = ",".join(f"<={d}" if dynamic and dynamic[i] else str(d) for i, d in enumerate(dims))
    text = f"{ELEMENT_TYPES.get(element, 'invalid')}[{sizes}]"
    if dims and shape.HasField("layout"):
        text += "{" + ",".join(map(str, shape.layout.minor_to_major)) + "}"
    return text


_LITERAL_FIELDS = {"pred": "preds", "s32": "s32s", "s64": "s64s", "u32": "u32s", "u64": "u64s",
                   "f32": "f32s", "f64": "f64s"}


def literal_text(literal: Message) -> str:
    """A constant's ``LiteralProto`` as XLA writes it inside ``constant(...)``: a scalar, or
    the values in braces (``{...}`` for element types not read)."""
    element = ELEMENT_TYPES.get(literal.shape.element_type, "")
    field = _LITERAL_FIELDS.get(element)
    values = list(getattr(literal, field)) if field is not None else []
    if element == "pred":
        words = ["true" if v else "false" for v in values]
    elif element in ("f32", "f64"):
        kind = np.float32 if element == "f32" else np.float64
        words = [np.format_float_positional(kind(v), trim="-") for v in values]
    else:
        words = [str(v) for v in values]
    if not literal.shape.dimensions and len(words) == 1:
        return words[0]
    return "{" + ",".join(words) + "}" if field is not None else "{...}"

"""The device table XLA wrote beside a dumped module: ``compile_options.textproto``, or
``compile_options.pb`` (the same ``CompileOptionsProto`` in binary) when the dump was written
with ``--xla_dump_hlo_as_proto``.

With ``--xla_dump_to=DIR`` XLA writes ``DIR/module_NNNN.NAME.<stage>.txt`` for each module and,
in ``DIR/module_NNNN.NAME/``, the ``CompileOptionsProto`` it compiled with, as protobuf text::

    executable_build_options {
      num_replicas: 1
      num_partitions: 8
      device_assignment {
        replica_count: 1
        computation_count: 8
        computation_devices { replica_device_ids: 3 }
        ...
      }
    }

``computation_devices[c].replica_device_ids[r]`` is the device of replica r, partition c: the
table ``DeviceAssignment`` holds as ``[replica][computation]``. Only what the table needs is
read from the protobuf text; a file that is not protobuf text is an ``InvalidArgumentError``.

>>> options = parse_compile_options('''executable_build_options { num_replicas: 1
...   num_partitions: 2 device_assignment { replica_count: 1 computation_count: 2
...   computation_devices { replica_device_ids: 1 } computation_devices { replica_device_ids: 0 } } }''')
>>> options.num_partitions, options.device_assignment.array.tolist()
(2, [[1, 0]])
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
from google.protobuf.message import DecodeError

from .._errors import InvalidArgumentError, MeshtopoError
from .._limits import check_size
from ..groups._placement import DeviceAssignment
from ._assignment import as_assignment
from ._proto import proto_table
from ._proto_schema import message_class

# Where a module's device table came from: the caller, XLA's dump, the module's own proto, or
# XLA's default placement.
AssignmentSource = Literal["given", "dump", "proto", "default"]

FILE_NAME = "compile_options.textproto"
BINARY_FILE_NAME = "compile_options.pb"  # what --xla_dump_hlo_as_proto writes instead
_TOKEN = re.compile(r'\s+|#[^\n]*|([A-Za-z_][A-Za-z0-9_.]*)|("(?:[^"\\]|\\.)*"|-?[0-9.eE+\-]+)'
                    r"|([:{}<>;,\[\]])")
_DUMP_FILE = re.compile(r"(module_[0-9]+)\.")

# A protobuf text message: field name -> values in order (scalars as text, messages nested).
Message = dict[str, list["str | Message"]]


@dataclass(frozen=True)
class CompileOptions:
    """What meshtopo reads from XLA's compile options: the counts and the device table (None
    where not written), and the file they came from."""

    num_replicas: int | None
    num_partitions: int | None
    device_assignment: DeviceAssignment | None
    path: str | None = None


def parse_textproto(text: str, source: str = "compile options") -> Message:
    """Protobuf text format (fields ``name: value`` and ``name { ... }``) as nested dicts."""
    stack: list[Message] = [{}]
    name: str | None = None
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise InvalidArgumentError(f"{source}: unexpected {text[pos:pos + 20]!r} at offset {pos}")
        pos = match.end()
        word, scalar, punct = match.groups()
        if word is not None and name is None:
            name = word
        elif (word is not None or scalar is not None) and name is not None:
            stack[-1].setdefault(name, []).append(word if word is not None else scalar)
            name = None
        elif punct in ("{", "<") and name is not None:
            child: Message = {}
            stack[-1].setdefault(name, []).append(child)
            stack.append(child)
            name = None
        elif punct in ("}", ">") and name is None and len(stack) > 1:
            stack.pop()
        elif punct in (":", ";", ",") or (word is None and scalar is None and punct is None):
            continue
        else:
            raise InvalidArgumentError(f"{source}: unexpected {match.group()!r} at offset "
                                       f"{match.start()}")
    if len(stack) != 1:
        raise InvalidArgumentError(f"{source}: a message is never closed")
    return stack[0]


def parse_compile_options(text: str, path: str | None = None) -> CompileOptions:
    """The counts and device table of a ``CompileOptionsProto`` in protobuf text."""
    source = path or "compile options"
    message = parse_textproto(text, source)
    build = _first(message, "executable_build_options")
    if not isinstance(build, dict):
        build = message
    table = _first(build, "device_assignment")
    return CompileOptions(_int(build, "num_replicas", source), _int(build, "num_partitions", source),
                          _table(table, source) if isinstance(table, dict) else None, path)


def _first(message: Message, key: str) -> str | Message | None:
    values = message.get(key)
    return values[0] if values else None


def _int(message: Message, key: str, source: str) -> int | None:
    value = _first(message, key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.isdigit():
        raise InvalidArgumentError(f"{source}: {key} must be a non-negative integer, got {value!r}")
    return int(value)


def _table(message: Message, source: str) -> DeviceAssignment:
    replicas = _int(message, "replica_count", source)
    computations = _int(message, "computation_count", source)
    columns = message.get("computation_devices", [])
    if replicas is None or computations is None or len(columns) != computations:
        raise InvalidArgumentError(
            f"{source}: device_assignment needs replica_count, computation_count and one "
            f"computation_devices per computation (found {len(columns)})")
    check_size(replicas * computations, f"{source}: device_assignment")
    ids: list[list[int]] = []
    for column in columns:
        values = column.get("replica_device_ids", []) if isinstance(column, dict) else []
        if len(values) != replicas or not all(isinstance(v, str) and v.isdigit() for v in values):
            raise InvalidArgumentError(
                f"{source}: each computation_devices needs {replicas} replica_device_ids")
        ids.append([int(v) for v in values])  # type: ignore[arg-type]
    try:
        return DeviceAssignment(np.array(ids, dtype=np.int64).T.reshape(replicas, computations))
    except MeshtopoError as error:
        raise InvalidArgumentError(f"{source}: device_assignment: {error}") from None


def compile_options_path(module_path: str) -> str | None:
    """The ``compile_options.textproto`` (or, from a dump written with
    ``--xla_dump_hlo_as_proto``, the binary ``compile_options.pb``) XLA wrote for the dumped
    module file ``module_path`` (``DIR/module_NNNN.NAME.<stage>.txt`` ->
    ``DIR/module_NNNN.NAME/``), or None when there is none."""
    directory, base = os.path.split(os.path.abspath(module_path))
    match = _DUMP_FILE.match(base)
    if match is None:
        return None
    try:
        entries = os.listdir(directory)
    except OSError:
        return None
    for entry in sorted(entries, key=len, reverse=True):
        if entry.startswith(match.group()) and base.startswith(entry + "."):
            for file_name in (FILE_NAME, BINARY_FILE_NAME):
                candidate = os.path.join(directory, entry, file_name)
                if os.path.isfile(candidate):
                    return candidate
    return None


def options_folder(module_path: str) -> str | None:
    """The folder whose ``compile_options.textproto`` ``compile_options_path`` finds for a
    module written at ``module_path`` (``DIR/module_NNNN.NAME.STAGE.txt`` ->
    ``DIR/module_NNNN.NAME.STAGE``), or None for a file not named in XLA's dump layout."""
    if _DUMP_FILE.match(os.path.basename(module_path)) is None:
        return None
    return os.path.splitext(module_path)[0]


def compile_options_for(module_path: str) -> CompileOptions | None:
    """The compile options XLA dumped beside ``module_path``, read, or None without any."""
    path = compile_options_path(module_path)
    return None if path is None else read_compile_options(path)


def read_compile_options(path: str) -> CompileOptions:
    """The compile options in the file ``path``: protobuf's binary form when its name ends in
    ``.pb`` (``compile_options.pb``), else its text form (``compile_options.textproto``). A
    file that cannot be read, or is not compile options, is an ``InvalidArgumentError``
    naming it."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise InvalidArgumentError(f"cannot read {path}: {error.strerror}") from None
    if path.endswith(".pb"):
        return binary_compile_options(data, path)
    return parse_compile_options(data.decode("utf-8", "replace"), path)


def binary_compile_options(data: bytes, path: str) -> CompileOptions:
    """The counts and device table of a ``CompileOptionsProto`` in protobuf's binary form;
    an ``InvalidArgumentError`` naming ``path`` when it is not one."""
    message = message_class("CompileOptionsProto")()
    try:
        message.ParseFromString(data)
    except DecodeError:
        raise InvalidArgumentError(
            f"{path} is not a CompileOptionsProto in protobuf's binary form (cut short or "
            "damaged)") from None
    build = message.executable_build_options
    return CompileOptions(build.num_replicas or None, build.num_partitions or None,
                          proto_table(build, path), path)


def placement_for(
    path: object, device_assignment: object | None
) -> tuple[DeviceAssignment | None, AssignmentSource, CompileOptions | None]:
    """The one rule for a module's device table: the caller's table when given; else, for a
    file in XLA's dump layout, the table of the compile options beside it (textproto or
    binary); else
    None, meaning XLA's default placement. Returns the table, where it came from, and the
    compile options read (if any). An open file whose ``name`` is the path of a file is
    looked up as that path."""
    if device_assignment is not None:
        return as_assignment(device_assignment), "given", None
    file = _file_path(path)
    if file is None:
        return None, "default", None
    options = compile_options_for(file)
    if options is not None and options.device_assignment is not None:
        return options.device_assignment, "dump", options
    return None, "default", options


def _file_path(source: object) -> str | None:
    """The path ``source`` reads: a path itself (None for ``'-'``, stdin), or an open file's
    ``name`` when that names a file (not ``<stdin>`` or a descriptor number); else None."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        return None if path == "-" else os.fsdecode(path)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) and os.path.isfile(name) else None


def table_file(source: AssignmentSource, options: CompileOptions | None) -> str | None:
    """The file a module's device table was read from: the ``compile_options.textproto``
    when the table is the dump's, else None (given, or XLA's default)."""
    if source != "dump" or options is None:
        return None
    return options.path or FILE_NAME


def describe_placement(source: AssignmentSource, options: CompileOptions | None) -> str:
    """One plain sentence on where the device table came from, for the command line."""
    if source == "given":
        return "device assignment as given"
    if source == "dump":
        path = options.path if options is not None else None
        return f"device assignment from {FILE_NAME if path is None else _shown(path)}"
    if source == "proto":
        return "device assignment from the module proto's device_assignment"
    return (f"device assignment: XLA's default placement (no {FILE_NAME} beside the file; "
            "give --device-assignment if the runtime placed devices otherwise)")


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it lies under it, else absolute."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative

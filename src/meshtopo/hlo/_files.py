"""``load`` and ``iter_collectives``: an HLO file of either form, text or binary proto.

A file whose first bytes are binary (``_proto.is_binary``: an ``HloProto``,
``HloModuleProto`` or ``HloSnapshot``, plain or gzip) is read by ``_proto_module``; anything
else by the text reader (``_module.load``, ``_stream.iter_text_collectives``), which names what
it cannot read. A directory stands for its one module (``_dump.single_module_file``).

The device table of a proto is the caller's, else the proto's own ``device_assignment``
(``device_assignment_source`` ``"proto"``), else that of the compile options XLA dumped
beside the file (``"dump"``), else XLA's default placement.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from typing import IO

from numpy.typing import ArrayLike

from ..groups._placement import DeviceAssignment
from ._assignment import as_assignment
from ._collective import Collective
from ._compile_options import placement_for, table_file
from ._dump import single_module_file
from ._module import Module
from ._module import load as load_text
from ._proto import binary_input, module_proto, proto_table
from ._proto_module import build_module, module_header
from ._stream import BLOCK_SIZE, CollectiveStream, iter_text_collectives

Source = str | os.PathLike[str] | IO[bytes] | IO[str]


def load(
    path: Source,
    replica_count: int | None = None,
    num_partitions: int | None = None,
    device_assignment: DeviceAssignment | ArrayLike | None = None,
) -> Module:
    """``parse_module`` of a file of HLO text (plain or gzip-compressed), an open file,
    ``'-'`` (stdin), or a directory in XLA's dump layout holding one module after
    optimisations (see ``single_module_file``; one with several is an
    ``InvalidArgumentError``); or the ``Module`` of a binary ``HloProto``,
    ``HloModuleProto`` or ``HloSnapshot`` file (plain or gzip), the same module as the text
    of the same compilation (see ``_proto``).

    Without ``device_assignment``, a proto's own device table is used; a file in XLA's dump
    layout (``module_NNNN.NAME.*`` beside ``module_NNNN.NAME/compile_options.textproto`` or
    ``compile_options.pb``; given as a path, or as an open file whose ``name`` is that path)
    takes the table and the replica and partition counts from XLA's compile options;
    ``module.device_assignment_source`` says which was used.
    """
    path = single_module_file(path)
    binary = binary_input(_stdin(path))
    if binary is None:
        return load_text(path, replica_count, num_partitions, device_assignment)
    return _proto_module(path, binary, replica_count, num_partitions, device_assignment)


def _proto_module(
    path: Source, binary: tuple[bytes, str], replica_count: int | None,
    num_partitions: int | None, device_assignment: DeviceAssignment | ArrayLike | None,
) -> Module:
    data, name = binary
    _, proto = module_proto(data, name)
    if device_assignment is not None:
        return build_module(proto, name, replica_count, num_partitions,
                            as_assignment(device_assignment), "given")
    table = proto_table(proto, name)
    if table is not None:
        return build_module(proto, name, replica_count, num_partitions, table, "proto", name)
    table, source, options = placement_for(path, None)
    module = build_module(proto, name, replica_count, num_partitions, table, source,
                          table_file(source, options))
    module.compile_options = options
    return module


def iter_collectives(
    source: Source,
    replica_count: int | None = None,
    num_partitions: int | None = None,
    progress: bool | None = None,
    block_size: int = BLOCK_SIZE,
    device_assignment: DeviceAssignment | ArrayLike | None = None,
) -> CollectiveStream:
    """Every collective of an HLO file in text order: HLO text read block by block (see
    ``_stream.iter_text_collectives``: ``progress``, ``block_size``), or a binary proto read
    whole (``load``); the returned ``CollectiveStream`` tells the counts, the table and its
    source either way."""
    file = single_module_file(source)
    binary = binary_input(_stdin(file))
    if binary is None:
        return iter_text_collectives(file, replica_count, num_partitions, progress, block_size,
                                     device_assignment)

    def collectives(stream: CollectiveStream) -> Generator[Collective, None, None]:
        module = _proto_module(file, binary, replica_count, num_partitions, device_assignment)
        stream.header = module_header(module)
        stream.replica_count, stream.num_partitions = module.replica_count, module.num_partitions
        stream.device_assignment = module.device_assignment
        stream.device_assignment_source = module.device_assignment_source
        stream.compile_options = module.compile_options
        yield from module.collectives

    return CollectiveStream(collectives)


def _stdin(source: Source) -> Source:
    """stdin's binary stream for ``'-'`` (so a proto piped in is recognised), else
    ``source``."""
    if isinstance(source, (str, os.PathLike)) and os.fspath(source) == "-":
        return getattr(sys.stdin, "buffer", source)
    return source

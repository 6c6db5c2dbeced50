"""The device table a request gives for its module: ``/api/hlo`` and ``/api/order`` read it alike.

A client that holds XLA's ``compile_options.textproto`` (a page given a dump directory) sends
its text as ``compile_options`` (with ``compile_options_name``, the file it read, for the
sentence); one that holds a bare table sends ``device_assignment`` (``[replica][partition] ->
device id``). Without either, the module keeps XLA's default placement, as ``parse_module``
gives it. Compile options give the module's counts too, as ``mt.hlo.load`` takes them from the
compile options beside a dump; a bare table must fit the counts the module states.
"""

from __future__ import annotations

from dataclasses import dataclass

import meshtopo as mt
from meshtopo import hlo

from ._schema import Fields, RequestError, int_table

TABLE_FIELDS = ("device_assignment", "compile_options", "compile_options_name")
OPTIONS_FILE = "compile_options.textproto"


@dataclass(frozen=True)
class GivenTable:
    """A request's device table (None: XLA's default placement), one sentence on where it
    came from (None with no table), and whether its shape gives the module's counts."""

    table: mt.DeviceAssignment | None
    origin: str | None
    gives_counts: bool = False

    def parse(self, text: str, replica_count: int | None,
              num_partitions: int | None) -> hlo.Module:
        """``parse_module`` of ``text`` placed by the table: counts not given come from the
        table's shape when it ``gives_counts`` (a table that does not fit the module is an
        ``InvalidArgumentError``)."""
        if self.table is not None and self.gives_counts:
            replica_count = replica_count or self.table.replica_count
            num_partitions = num_partitions or self.table.computation_count
        return hlo.parse_module(text, replica_count=replica_count,
                                num_partitions=num_partitions, device_assignment=self.table)


def given_table(fields: Fields, max_text: int, device_limit: int) -> GivenTable:
    """The table of ``fields`` (``compile_options`` text or a ``device_assignment`` table,
    not both); a table that is not one (ids repeated, rows of unequal length) or compile
    options without one is a 400 naming the field."""
    if fields.has("compile_options") and fields.has("device_assignment"):
        raise RequestError(400, "give either 'compile_options' or 'device_assignment', not both")
    if fields.has("compile_options"):
        name = fields.string("compile_options_name", default=OPTIONS_FILE, max_length=400)
        text = fields.string("compile_options", max_length=max_text)
        options = hlo.parse_compile_options(text, name)
        if options.device_assignment is None:
            raise RequestError(400, f"{name} holds no device_assignment; XLA wrote none for "
                                    "this module, so it runs on the default placement")
        if options.device_assignment.array.size > device_limit:
            raise RequestError(413, f"{name}: the device table has "
                                    f"{options.device_assignment.array.size} devices, more "
                                    f"than the explorer's limit of {device_limit}",
                               kind="LimitError")
        return GivenTable(options.device_assignment, f"device assignment from {name}",
                          gives_counts=True)
    if fields.has("compile_options_name"):
        raise RequestError(400, "field 'compile_options_name' goes with 'compile_options'")
    if not fields.has("device_assignment"):
        return GivenTable(None, None)
    rows = int_table(fields.raw("device_assignment"), "device_assignment", device_limit)
    try:
        table = mt.DeviceAssignment(rows)
    except mt.MeshtopoError as error:
        raise RequestError(400, f"field 'device_assignment': {error}") from None
    return GivenTable(table, "device assignment as given (a table pasted in the page)")

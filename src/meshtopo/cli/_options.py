"""Option parsing shared by the commands: ints, int lists and ``--device-assignment`` specs.

Numbers on the command line are ASCII decimal digits (an optional ``-`` first), as XLA writes
them: Python's ``int()`` alone would also take ``1_0``, ``+3`` or other Unicode digits
(``'\u0661'``), and ``str.isdigit()`` takes ``'\u00b2'``, which ``int()`` then refuses.
"""

from __future__ import annotations

from typing import Any

import click

from .._errors import InvalidArgumentError
from ..groups._placement import DeviceAssignment
from ._render import plural

DEVICE_ASSIGNMENT_HELP = (
    "default (c*R+r), row-major (r*P+p), rows like '0,2;1,3' ([replica][partition]), or a "
    "compile_options.textproto (or .pb) as XLA dumps it (for a module read from stdin)."
)
_MAX_DIGITS = 18  # every int of at most 18 digits fits in int64


def is_decimal(text: str) -> bool:
    """True when ``text`` is ASCII digits, optionally after one ``-``, and fits in int64
    (at most 18 digits)."""
    digits = text[1:] if text.startswith("-") else text
    return 0 < len(digits) <= _MAX_DIGITS and digits.isascii() and digits.isdigit()


def int_list(text: str, option: str) -> list[int]:
    """``'0, 2,4'`` -> ``[0, 2, 4]``; ``InvalidArgumentError`` naming ``option`` otherwise."""
    values = [value for value in text.replace(" ", "").split(",") if value != ""]
    if not all(is_decimal(value) for value in values):
        raise InvalidArgumentError(f"{option} expects comma-separated ints, got {text[:80]!r}")
    return [int(value) for value in values]


class DecimalRange(click.IntRange):
    """``click.IntRange`` that takes only ASCII decimal digits (see ``is_decimal``)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not is_decimal(value.strip()):
            self.fail(f"{value[:40]!r} is not a decimal integer", param, ctx)
        return super().convert(value, param, ctx)


def _compile_options_table(path: str) -> DeviceAssignment:
    """The device table of the compile options in ``path`` (``.textproto`` or binary
    ``.pb``); one without a table is refused."""
    from ..hlo import read_compile_options

    try:
        table = read_compile_options(path).device_assignment
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"--device-assignment: {error}") from None
    if table is None:
        raise InvalidArgumentError(f"--device-assignment {path}: no device_assignment in it")
    return table


def device_assignment(spec: str, replicas: int, partitions: int) -> DeviceAssignment:
    """The ``--device-assignment`` value for a ``replicas`` x ``partitions`` grid.

    ``default`` is XLA's placement (``c * R + r``), ``row-major`` is ``r * P + p``, and
    ``'0,2;1,3'`` gives the table row by row (rows are replicas, columns partitions), and a
    path ending in ``.textproto`` or ``.pb`` is read as XLA's dumped compile options
    (``mt.hlo.read_compile_options``); a table of another shape than the grid is an
    ``InvalidArgumentError``.
    """
    if spec == "default":
        return DeviceAssignment.default(replicas, partitions)
    if spec == "row-major":
        return DeviceAssignment.row_major(replicas, partitions)
    if spec.endswith((".textproto", ".pb")):
        assignment = _compile_options_table(spec)
    else:
        rows = [int_list(row, "--device-assignment") for row in spec.split(";")]
        if len({len(row) for row in rows}) != 1:
            raise InvalidArgumentError(
                f"--device-assignment rows must have equal length, got {spec!r}")
        assignment = DeviceAssignment(rows)
    if (assignment.replica_count, assignment.computation_count) != (replicas, partitions):
        raise InvalidArgumentError(
            f"--device-assignment is {assignment.replica_count} x {assignment.computation_count} "
            f"but the grid is {plural(replicas, 'replica')} x {plural(partitions, 'partition')}"
        )
    return assignment

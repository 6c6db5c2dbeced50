"""Option parsing shared by the commands: int lists and ``--device-assignment`` specs."""

from __future__ import annotations

from .._errors import InvalidArgumentError
from .._placement import DeviceAssignment

DEVICE_ASSIGNMENT_HELP = (
    "default (c*R+r), row-major (r*P+p), or rows like '0,2;1,3' ([replica][partition])."
)


def int_list(text: str, option: str) -> list[int]:
    """``'0, 2,4'`` -> ``[0, 2, 4]``; ``InvalidArgumentError`` naming ``option`` otherwise."""
    try:
        return [int(value) for value in text.replace(" ", "").split(",") if value != ""]
    except ValueError:
        raise InvalidArgumentError(f"{option} expects comma-separated ints, got {text!r}") from None


def device_assignment(spec: str, replicas: int, partitions: int) -> DeviceAssignment:
    """The ``--device-assignment`` value for a ``replicas`` x ``partitions`` grid.

    ``default`` is XLA's placement (``c * R + r``), ``row-major`` is ``r * P + p``, and
    ``'0,2;1,3'`` gives the table row by row (rows are replicas, columns partitions); a table
    of another shape than the grid is an ``InvalidArgumentError``.
    """
    if spec == "default":
        return DeviceAssignment.default(replicas, partitions)
    if spec == "row-major":
        return DeviceAssignment.row_major(replicas, partitions)
    rows = [int_list(row, "--device-assignment") for row in spec.split(";")]
    if len({len(row) for row in rows}) != 1:
        raise InvalidArgumentError(f"--device-assignment rows must have equal length, got {spec!r}")
    assignment = DeviceAssignment(rows)
    if (assignment.replica_count, assignment.computation_count) != (replicas, partitions):
        raise InvalidArgumentError(
            f"--device-assignment is {assignment.replica_count} x {assignment.computation_count} "
            f"but the grid is {replicas} replicas x {partitions} partitions"
        )
    return assignment

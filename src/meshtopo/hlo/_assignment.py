"""The HLO layer's checks on caller-given placement: counts and device-assignment tables.

``count`` accepts any integral value (``int``, ``numpy.int64``, ...) but not a bool;
``as_assignment`` turns a ``DeviceAssignment`` or a 2-D table (array or list of rows) into a
``DeviceAssignment`` of exactly ``replica_count x num_partitions``. ``parse_module``, ``load``,
``Collective.device_groups`` and ``Collective.device_pairs`` all go through them, so every
entry point accepts and refuses the same things with the same messages.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._errors import InvalidArgumentError
from ..groups._placement import DeviceAssignment


def count(value: object, what: str) -> int:
    """``value`` as a positive int; ``InvalidArgumentError`` naming ``what`` for a bool, a
    non-integral value, or a value below 1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"{what} must be a positive int, got {value!r}")
    number = int(value)
    if number < 1:
        raise InvalidArgumentError(f"{what} must be a positive int, got {value!r}")
    return number


def as_assignment(value: object) -> DeviceAssignment:
    """``value`` (a ``DeviceAssignment`` or a 2-D int table ``[replica][partition]``, array or
    list of rows) as a ``DeviceAssignment``; ``InvalidArgumentError`` otherwise."""
    if isinstance(value, DeviceAssignment):
        return value
    try:
        return DeviceAssignment(value)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"device_assignment: {error}") from None


def check_assignment(
    assignment: DeviceAssignment, replica_count: int, num_partitions: int, owner: str,
    dump: str | None = None,
) -> None:
    """Raise ``InvalidArgumentError`` unless ``assignment`` is ``replica_count x
    num_partitions`` (``owner`` names the module in the message, e.g. ``module m``).
    ``dump`` is the ``compile_options.textproto`` the table came from, when it was not
    given: the counts that disagree with it are then the caller's overrides, and the message
    says so."""
    shape = (assignment.replica_count, assignment.computation_count)
    if shape == (replica_count, num_partitions):
        return
    counts = f"replica_count={replica_count}, num_partitions={num_partitions}"
    if dump is not None:
        raise InvalidArgumentError(
            f"the device table from {dump} is {shape[0]} x {shape[1]} (replicas x "
            f"partitions), but {owner} is read with {counts} (counts given override the "
            f"dump's); leave the counts to the dump, or give a device assignment of "
            f"{replica_count} x {num_partitions} as well"
        )
    raise InvalidArgumentError(
        f"device_assignment is {shape[0]} x {shape[1]} (replicas x partitions) but {owner} "
        f"has {counts}; give a table with one row per replica and one column per partition"
    )


def placed(value: object, replica_count: int, num_partitions: int, owner: str) -> DeviceAssignment:
    """``as_assignment(value)`` checked to be ``replica_count x num_partitions``."""
    assignment = as_assignment(value)
    check_assignment(assignment, replica_count, num_partitions, owner)
    return assignment

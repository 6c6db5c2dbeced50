"""Replaying a dump's communication: every device issues the module's collectives, in order,
with zero-filled buffers of the real shapes and element types, and each is timed.

The order is the order layer's: ``issue_order(module, device, assignment)`` is
``meshtopo.order.issue_order``, and a replay takes every device's order from one walk
(``issue_orders``): the schedule, or a topological order, through calls, fusions, async
wrappers and ``while`` bodies once, and into the branch of a conditional this device takes
when its selector depends only on constants, replica-id and partition-id (every branch
otherwise). Done forms are not issued (their start is). Nothing else in the module runs, so a
dump with fusions and custom calls replays.

Element types without a numpy dtype (``bf16``, the ``f8`` family) travel as unsigned
integers of the same width; only the bytes matter. ``send`` and ``recv`` are launched where
the order has them and, as their ``-done`` forms are not in it, waited for after the device's
last collective: their seconds run from launch to then, an upper bound. ``ragged-all-to-all``
(whose sizes are data) is listed in ``skipped``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidArgumentError
from ..groups._placement import DeviceAssignment, as_device_assignment
from ..hlo import DTYPES, Instruction, Module, Shape
from ..order import issue_order as issue_order
from ..order import issue_orders
from ._communicator import Communicator
from ._interpreter import Transfer, issue, launch_transfer
from ._plan import Route, collective_routes, where

REPLAYED = frozenset({
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
    "collective-broadcast", "send", "recv",
})  # fmt: skip
_TRANSFERS = frozenset({"send", "recv"})


def _buffer(shape: Shape | None, where_text: str) -> np.ndarray:
    if shape is None or shape.tuple_shapes is not None or shape.is_dynamic:
        raise InvalidArgumentError(f"{where_text}: operand shape {shape} cannot be replayed")
    if shape.element_type in DTYPES:
        return np.zeros(shape.dimensions, dtype=DTYPES[shape.element_type])
    count = shape.element_count or 0
    width = (shape.byte_size or 0) // count if count else 1
    if width not in (1, 2, 4, 8):
        raise InvalidArgumentError(f"{where_text}: element type {shape.element_type} cannot be "
                                   "replayed")
    return np.zeros(shape.dimensions, dtype=f"u{width}")


@dataclass(frozen=True)
class Step:
    """One collective of the replay and each device's part in it."""

    instruction: Instruction
    routes: dict[int, Route]
    bytes: int | None


class Replay:
    """The collectives of ``module`` ready to be issued on every device of its placement."""

    def __init__(self, module: Module, device_assignment: object = None) -> None:
        self.module = module
        self.assignment: DeviceAssignment = (
            module.device_assignment if device_assignment is None
            else as_device_assignment(device_assignment))
        self.devices = sorted(int(d) for d in self.assignment.array.flat)
        self.skipped: list[Instruction] = []
        self.orders: dict[int, list[str]] = {}
        self.steps: dict[str, Step] = {}
        orders = issue_orders(module, self.devices, self.assignment)
        # Conditionals whose branch could not be worked out (every branch is issued).
        self.unresolved: list[str] = orders.unresolved
        # (computation, name) -> issues per device (None: a loop's data decides).
        self.trip_counts = orders.trip_counts
        for device in self.devices:
            names = []
            for instruction in orders[device]:
                collective = instruction.collective
                if collective is None or collective.underlying_opcode not in REPLAYED:
                    if instruction not in self.skipped:
                        self.skipped.append(instruction)
                    continue
                if instruction.name not in self.steps:
                    self.steps[instruction.name] = Step(
                        instruction, collective_routes(collective, self.assignment),
                        collective.bytes)
                if device in self.steps[instruction.name].routes:
                    names.append(instruction.name)
            self.orders[device] = names

    def run_device(self, device: int, communicator_for: Callable[[Route], Communicator]
                   ) -> dict[str, float]:
        """Issue ``device``'s collectives in its order (send/recv launched there, waited for
        after the last); seconds each took, by name."""
        seconds: dict[str, float] = {}
        launched: list[tuple[str, float, Transfer]] = []
        for name in self.orders[device]:
            step = self.steps[name]
            instruction = step.instruction
            collective = instruction.collective
            if collective is None:
                continue
            text = where(instruction, self.module)
            route = step.routes[device]
            communicator = communicator_for(route)
            if instruction.opcode in _TRANSFERS:
                data = (_buffer(collective.operand_shapes[0], text)
                        if instruction.opcode == "send" else None)
                started = time.perf_counter()
                launched.append((name, started, launch_transfer(
                    instruction, self.module, route, communicator, data)))
                continue
            operands = [_buffer(s, text) for s in collective.operand_shapes]
            started = time.perf_counter()
            issue(instruction, self.module, device, route, communicator, operands)
            seconds[name] = time.perf_counter() - started
        for name, started, transfer in launched:
            transfer.wait(self.module, device)
            seconds[name] = time.perf_counter() - started
        return seconds


@dataclass(frozen=True)
class ReplayResult:
    """What a replay measured: ``seconds[device][collective name]`` for each device's
    collectives (its order in ``replay.orders[device]``), and the ``replay`` itself (steps
    with bytes, skipped instructions)."""

    replay: Replay
    seconds: dict[int, dict[str, float]]


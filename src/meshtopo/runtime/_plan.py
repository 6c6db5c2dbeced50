"""A module checked for execution: every instruction known, every collective's cliques known.

``Plan(module, device_assignment)`` walks the entry computation and every computation it
reaches through ``call``, ``conditional``, ``while`` and ``async-start``, and refuses, before
anything runs, any instruction outside the executed set (naming it and its line:column), any
element type numpy cannot hold, any reduction that is not sum/prod/min/max, and a module
XLA's verifier rejects (``mt.hlo.verify``: XLA would not run it either; its first finding). For every
collective it records, per device, the clique (``CliqueKey``, devices in rank order) and the
device's rank; for permutes and send/recv, the clique of the whole replica (channel) or
partition (no channel) and each device's source and targets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import hlo
from .._errors import InvalidArgumentError
from ..groups._device_list import CollectiveDeviceList
from ..groups._placement import DeviceAssignment, as_device_assignment, participating_device_groups
from ..hlo import (
    EVALUATED_OPCODES,
    NOT_ISSUED_OPCODES,
    Collective,
    Computation,
    Instruction,
    Module,
    verify,
)
from ..hlo._send_recv_pairs import SEND_RECV_PAIRS, pairs_problem_line
from ._clique_key import CliqueKey
from ._values import check_shape

# Besides mt.hlo.evaluate's data instructions: the values a program passes around.
STRUCTURE_OPCODES = frozenset({"parameter", "tuple", "get-tuple-element"})
CONTROL_OPCODES = frozenset({"call", "conditional", "while", "after-all"})
# Every collective but XLA's shorthand async forms, which a dump never prints.
COLLECTIVE_OPCODES = hlo.COLLECTIVE_OPCODES - hlo.SHORTHAND_OPCODES
P2P_OPCODES = frozenset({"collective-permute", "send", "recv"})
EXECUTED_OPCODES = EVALUATED_OPCODES | STRUCTURE_OPCODES | CONTROL_OPCODES | COLLECTIVE_OPCODES


@dataclass(frozen=True)
class Route:
    """One device's part in one collective: its clique, its rank, and for permutes the
    rank it receives from (None: zeros) and the ranks it sends to."""

    key: CliqueKey
    rank: int
    source: int | None = None
    targets: tuple[int, ...] = ()


def where(instruction: Instruction, module: Module) -> str:
    """``file:line:column: instruction %name (opcode)`` for messages."""
    source = f"{module.source}:" if module.source else ""
    return (f"{source}{instruction.line}:{instruction.column}: instruction "
            f"%{instruction.name} ({instruction.opcode})")


class Plan:
    """The checked module and the routes of its collectives (see the module docstring)."""

    def __init__(self, module: Module, device_assignment: object = None) -> None:
        self.module = module
        self.assignment: DeviceAssignment = (
            module.device_assignment if device_assignment is None
            else as_device_assignment(device_assignment))
        table = self.assignment.array
        if table.shape != (module.replica_count, module.num_partitions):
            raise InvalidArgumentError(
                f"device_assignment is {table.shape[0]}x{table.shape[1]}; module {module.name} "
                f"needs replica_count x num_partitions = {module.replica_count}x"
                f"{module.num_partitions}"
            )
        self.devices: list[int] = sorted(int(d) for d in table.flat)
        self.replica_of = {int(d): r for (r, _), d in _cells(table)}
        self.partition_of = {int(d): p for (_, p), d in _cells(table)}
        self.routes: dict[str, dict[int, Route]] = {}
        self.computations: dict[str, Computation] = {}
        self._check(module.entry)
        findings = verify(module)
        if findings:
            first = findings[0]
            source = f"{module.source}:" if module.source else ""
            raise InvalidArgumentError(
                f"{source}{first.line}:{first.column}: XLA's verifier rejects module "
                f"{module.name}, which XLA would not run: {first.message} ({len(findings)} "
                "finding(s); `meshtopo check` lists them)"
            )

    def _check(self, computation: Computation) -> None:
        if computation.name in self.computations:
            return
        self.computations[computation.name] = computation
        for instruction in computation.instructions:
            if instruction.opcode not in EXECUTED_OPCODES:
                raise InvalidArgumentError(
                    f"{where(instruction, self.module)} is not executed by meshtopo.runtime "
                    "(`meshtopo replay` issues a dump's collectives without running its "
                    f"computations); it executes: {', '.join(sorted(EXECUTED_OPCODES))}"
                )
            if instruction.opcode not in NOT_ISSUED_OPCODES:
                check_shape(instruction.shape, where(instruction, self.module))
            collective = instruction.collective
            if collective is not None and instruction.opcode not in NOT_ISSUED_OPCODES:
                self._route(instruction, collective)
            if instruction.opcode == "async-start" or instruction.opcode in CONTROL_OPCODES:
                for name in instruction.called_computations:
                    self._check(self.module.computations[name])

    def _route(self, instruction: Instruction, collective: Collective) -> None:
        opcode = collective.underlying_opcode
        if opcode not in COLLECTIVE_OPCODES:
            raise InvalidArgumentError(
                f"{where(instruction, self.module)} wraps {opcode}, which is not executed"
            )
        if opcode in ("all-reduce", "reduce-scatter") and collective.reduction not in (
                "sum", "prod", "min", "max"):
            raise InvalidArgumentError(
                f"{where(instruction, self.module)}: reduction {collective.reduction!r} is not "
                "one of sum, prod, min, max"
            )
        if opcode == "collective-permute" and len(instruction.operands) != 1:
            raise InvalidArgumentError(
                f"{where(instruction, self.module)}: only the one-operand collective-permute "
                "is executed"
            )
        if opcode == "ragged-all-to-all" and len(instruction.operands) != 6:
            raise InvalidArgumentError(
                f"{where(instruction, self.module)}: ragged-all-to-all takes 6 operands, got "
                f"{len(instruction.operands)}"
            )
        if opcode in ("send", "recv"):
            if collective.is_host_transfer:
                raise InvalidArgumentError(
                    f"{where(instruction, self.module)}: host transfers are not executed")
            if collective.source_target_pairs is None:
                written = collective.frontend_attributes.get(SEND_RECV_PAIRS)
                raise InvalidArgumentError(
                    f"{where(instruction, self.module)}: {opcode} without the frontend "
                    f"attribute {SEND_RECV_PAIRS} is not executed" if written is None else
                    f"{where(instruction, self.module)}: {opcode} is not executed: XLA cannot "
                    f"read its {SEND_RECV_PAIRS}: {pairs_problem_line(written)}"
                )
            if any(a == b for a, b in collective.source_target_pairs):
                raise InvalidArgumentError(
                    f"{where(instruction, self.module)}: {opcode} to the same device "
                    "(a pair {i,i}) is not executed"
                )
        self.routes[instruction.name] = collective_routes(collective, self.assignment)


def collective_routes(collective: Collective, assignment: DeviceAssignment) -> dict[int, Route]:
    """Each participating device's ``Route`` for ``collective`` under ``assignment``: its
    device group as the clique (rank order), or for a permute the whole replica (channel) or
    partition (no channel) with the device's source and targets (send/recv as permutes, their
    pairs from ``_xla_send_recv_source_target_pairs``)."""
    if collective.underlying_opcode not in P2P_OPCODES:
        routes: dict[int, Route] = {}
        for group in collective.device_groups(assignment):
            key = CliqueKey(tuple(group))
            for rank, device in enumerate(key.devices):
                routes[device] = Route(key, rank)
        return routes
    domains = participating_device_groups(CollectiveDeviceList([]), mode=collective.mode, device_assignment=assignment)
    key_of = {}
    for group in domains:
        key = CliqueKey(tuple(group))
        for device in key.devices:
            key_of[device] = key
    sources: dict[int, int] = {}
    targets: dict[int, list[int]] = {d: [] for d in key_of}
    for source, target in collective.device_pairs(assignment):
        sources[target] = source
        targets[source].append(target)
    permute_routes = {}
    for device, key in key_of.items():
        sender = sources.get(device)
        permute_routes[device] = Route(
            key, key.devices.index(device),
            None if sender is None else key.devices.index(sender),
            tuple(key.devices.index(t) for t in targets[device]),
        )
    return permute_routes


def _cells(table: np.ndarray) -> list[tuple[tuple[int, int], int]]:
    return [((int(r), int(p)), int(table[r, p])) for r, p in np.ndindex(*table.shape)]

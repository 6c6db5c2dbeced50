"""One device's execution of a checked module: numpy for data, communicators for collectives.

``DeviceExecution(plan, device, communicator_for).run(inputs)`` evaluates the entry
computation on ``device``; ``communicator_for(route)`` gives the device's communicator for a
collective's clique (created once per clique by the caller). Collectives run where they are
issued: a ``-start`` (or ``async-start``) runs its collective and its ``-done`` returns the
result. ``send`` and ``recv`` launch their transfers (to each target of the device, from its
source) and their ``-done`` waits for them, so sends and recvs posted before any done cannot
deadlock; a recv without a source gives zeros, as XLA's recv thunk does. A token is ().
Data instructions are ``mt.hlo.evaluate``'s (XLA's semantics, integer division by zero
included), on one device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._errors import InternalError, InvalidArgumentError
from ..hlo import (
    DONE_OPCODES,
    Collective,
    Computation,
    Instruction,
    Module,
    branch_computations,
    branch_indices,
    evaluate,
)
from ._communicator import Communicator, Event, ReductionKind
from ._plan import Plan, Route, where
from ._rendezvous import RendezvousError
from ._values import Value, dtype_of


class _Started:
    """The value of a ``-start``: its collective's result, returned by the ``-done``."""

    def __init__(self, result: Value) -> None:
        self.result = result


class Transfer:
    """The value of a ``send`` or ``recv``: its launched transfers, waited for by the
    ``-done`` (a recv without a source has none and gets zeros)."""

    def __init__(self, instruction: Instruction, events: list[Event[Any]],
                 zeros: np.ndarray | None = None) -> None:
        self.instruction = instruction
        self.events = events
        self.zeros = zeros

    def wait(self, module: Module, device: int) -> np.ndarray | None:
        """The received array (a recv) or None (a send), once every transfer completed."""
        try:
            results = [event.wait() for event in self.events]
        except RendezvousError as error:
            raise RendezvousError(
                f"{where(self.instruction, module)} on device {device}: {error}",
                error.op_name, error.clique, error.missing, error.arrived,
                error.waited) from None
        received = results[0] if results else None
        return received if isinstance(received, np.ndarray) else self.zeros


def launch_transfer(instruction: Instruction, module: Module, me: Route,
                    communicator: Communicator, data: np.ndarray | None) -> Transfer:
    """Launch a ``send`` of ``data`` to each of this device's targets (``me``), or the
    ``recv`` from its source (none: zeros), as XLA's send/recv thunks do; the ``Transfer``
    is waited for where the ``-done`` is."""
    collective = instruction.collective
    if collective is None:
        raise InvalidArgumentError(f"{where(instruction, module)} is no collective")
    # A send meets the recv of its channel (without one: the next recv, in order).
    name = "send/recv" if collective.channel_id is None else f"channel_id={collective.channel_id}"
    if instruction.opcode == "send":
        if data is None:
            raise InternalError(f"{where(instruction, module)}: a send needs its data")
        return Transfer(instruction, [communicator.send(data, t, name) for t in me.targets])
    data_shape = (instruction.shape.tuple_shapes or (instruction.shape,))[0]
    zeros = np.zeros(data_shape.dimensions, dtype_of(data_shape, where(instruction, module)))
    if me.source is None:
        return Transfer(instruction, [], zeros)
    return Transfer(instruction, [communicator.recv(zeros, me.source, name)], zeros)


class DeviceExecution:
    """Evaluates the plan's entry computation on one device."""

    def __init__(self, plan: Plan, device: int,
                 communicator_for: Callable[[Route], Communicator]) -> None:
        self.plan = plan
        self.device = device
        self.communicator_for = communicator_for
        self.replica = plan.replica_of[device]
        self.partition = plan.partition_of[device]

    def run(self, inputs: Sequence[np.ndarray]) -> Value:
        """The entry root's value on this device for the entry parameters ``inputs``."""
        with np.errstate(all="ignore"):
            return self.evaluate(self.plan.module.entry, list(inputs))

    def evaluate(self, computation: Computation, arguments: Sequence[Value]) -> Value:
        """Evaluate ``computation`` with its parameters bound to ``arguments``."""
        values: dict[str, Value | _Started] = {}
        for instruction in computation.instructions:
            operands = [values[name] for name in instruction.operands]
            values[instruction.name] = self._instruction(instruction, operands, arguments)
        root = computation.root
        if root is None:
            raise InvalidArgumentError(f"computation {computation.name} has no instructions")
        return values[root.name]  # type: ignore[return-value]

    def _call(self, name: str, arguments: Sequence[Value]) -> Value:
        return self.evaluate(self.plan.computations[name], arguments)

    def _instruction(self, instruction: Instruction, operands: list, arguments: Sequence[Value]
                     ) -> Value | _Started:
        opcode = instruction.opcode
        attributes = instruction.attributes
        if opcode == "parameter":
            return arguments[int(instruction.operand_text)]
        if opcode == "get-tuple-element":
            return operands[0][int(attributes["index"])]
        if opcode == "tuple":
            return tuple(operands)
        if opcode in DONE_OPCODES or opcode == "async-done":
            return operands[0].result
        if opcode == "after-all":
            return ()
        if opcode in ("send", "recv"):
            return self._transfer(instruction, operands)  # type: ignore[return-value]
        if opcode == "send-done":
            operands[0].wait(self.plan.module, self.device)
            return ()
        if opcode == "recv-done":
            return (operands[0].wait(self.plan.module, self.device), ())
        if opcode == "async-update":
            return operands[0]
        if opcode == "call":
            return self._call(instruction.called_computations[0], operands)
        if opcode == "conditional":
            return self._conditional(instruction, operands)
        if opcode == "while":
            condition, body = attributes["condition"].lstrip("%"), attributes["body"].lstrip("%")
            state = operands[0]
            while bool(self._call(condition, [state])):
                state = self._call(body, [state])
            return state
        if opcode == "async-start":
            return _Started(self._call(instruction.called_computations[0], operands))
        if instruction.collective is not None:
            result = self._collective(instruction, operands)
            return _Started(result) if opcode.endswith("-start") else result
        return data_value(instruction, operands, self.replica, self.partition,
                          where(instruction, self.plan.module))

    def _conditional(self, instruction: Instruction, operands: list) -> Value:
        index = int(branch_indices(instruction, operands[0]))
        return self._call(branch_computations(instruction)[index], [operands[index + 1]])

    def _transfer(self, instruction: Instruction, operands: list) -> Transfer:
        me = self._route(instruction)
        return launch_transfer(instruction, self.plan.module, me, self.communicator_for(me),
                               np.asarray(operands[0]) if instruction.opcode == "send" else None)

    def _route(self, instruction: Instruction) -> Route:
        me = self.plan.routes[instruction.name].get(self.device)
        if me is None:
            raise InvalidArgumentError(
                f"{where(instruction, self.plan.module)} runs on device {self.device}, which is "
                "in none of its groups"
            )
        return me

    def _collective(self, instruction: Instruction, operands: list) -> Value:
        me = self._route(instruction)
        return issue(instruction, self.plan.module, self.device, me,
                     self.communicator_for(me), operands)


def data_value(instruction: Instruction, operands: list, replica: int, partition: int,
               where_text: str) -> np.ndarray:
    """The value of a data instruction (not parameter, tuple, get-tuple-element, control flow
    or a collective) on the device at (``replica``, ``partition``), in the instruction's
    shape and type: ``mt.hlo.evaluate`` for one device."""
    batched = [np.asarray(o)[None] for o in operands]
    value = evaluate(instruction, batched, np.array([replica]), np.array([partition]),
                     where_text)
    return value[0]


def issue(instruction: Instruction, module: Module, device: int, me: Route,
          communicator: Communicator, operands: list) -> Value:
    """Run ``instruction``'s collective on ``device`` with ``operands``; a rendezvous timeout
    names the instruction and its line."""
    collective = instruction.collective
    if collective is None:
        raise InvalidArgumentError(f"{where(instruction, module)} is no collective")
    # Participants meet by channel id, as XLA's CPU rendezvous keys by op id; a collective
    # without one meets only the same instruction on the other devices.
    name = (f"%{instruction.name}" if collective.channel_id is None
            else f"channel_id={collective.channel_id}")
    try:
        return _issue(collective, me, communicator, name, operands)
    except RendezvousError as error:
        raise RendezvousError(f"{where(instruction, module)} on device {device}: {error}",
                              error.op_name, error.clique, error.missing, error.arrived,
                              error.waited) from None


def _issue(collective: Collective, me: Route, communicator: Communicator, name: str,
           operands: list) -> Value:
    """The communicator calls of one collective (see ``issue``)."""
    opcode = collective.underlying_opcode
    if opcode == "all-reduce":
        kind = ReductionKind.parse(collective.reduction or "")
        results = [communicator.all_reduce(np.asarray(o), kind, op_name=f"{name}#{i}").wait()
                   for i, o in enumerate(operands)]
        return tuple(results) if len(operands) > 1 else results[0]
    if opcode == "all-gather":
        axis = _axis(collective)
        results = [communicator.all_gather(np.asarray(o), axis, f"{name}#{i}").wait()
                   for i, o in enumerate(operands)]
        return tuple(results) if len(operands) > 1 else results[0]
    if opcode == "reduce-scatter":
        kind = ReductionKind.parse(collective.reduction or "")
        axis = _axis(collective)
        results = [communicator.reduce_scatter(np.asarray(o), kind, axis,
                                               f"{name}#{i}").wait()
                   for i, o in enumerate(operands)]
        return tuple(results) if len(operands) > 1 else results[0]
    if opcode == "collective-broadcast":
        return communicator.broadcast(np.asarray(operands[0]), 0, name).wait()
    if opcode == "collective-permute":
        return communicator.collective_permute(np.asarray(operands[0]), me.source,
                                               me.targets, name).wait()
    if opcode == "ragged-all-to-all":
        data, output, input_offsets, send_sizes, output_offsets, recv_sizes = (
            np.asarray(o) for o in operands)
        return communicator.ragged_all_to_all(data, output, input_offsets, send_sizes,
                                              output_offsets, recv_sizes, name).wait()
    if collective.dimensions:
        axis = _axis(collective)
        chunks = np.split(np.asarray(operands[0]), communicator.num_ranks, axis=axis)
        received = communicator.all_to_all(chunks, name).wait()
        return np.concatenate(received, axis=axis)
    return tuple(communicator.all_to_all([np.asarray(o) for o in operands], name).wait())


def _axis(collective: Collective) -> int:
    """The one dimension an all-gather, reduce-scatter or array all-to-all works along."""
    return (collective.dimensions or (0,))[0]

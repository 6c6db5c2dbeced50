"""Module-wide checks on asynchronous collectives and channels (``hlo_verifier.cc``).

``VerifyAsynchronousInstructionPairs``: an all-reduce-start, collective-permute-start,
async-start/-update (wrapping a collective), send or recv has exactly one user of the matching
kind; a -done's (or async-update's) single operand is the matching start. ``VerifyChannels``:
a send/recv whose user is its -done shares its channel id and is-host-transfer property, and
host-transfer send/recv on one channel are identical up to their operands, which must still
have the same shapes.

These read users and operand opcodes, so they build the module's structural model; they run
only when the module has such instructions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ._collective import P2P_OPCODES, SYNC_OPCODES
from ._finding import Finding, SourceText
from ._shape import Shape
from ._shape_syntax import parse_shape
from ._verify_shapes import with_layout

if TYPE_CHECKING:
    from ._module import Module
    from ._structure import Computation, Instruction

# opcode -> (expected users, expected operands); None where XLA checks no such side.
_PAIRS: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None]] = {
    "async-start": (("async-update", "async-done"), None),
    "async-update": (("async-update", "async-done"), ("async-start", "async-update")),
    "async-done": (None, ("async-start", "async-update")),
    "all-reduce-start": (("all-reduce-done",), None),
    "all-reduce-done": (None, ("all-reduce-start",)),
    "collective-permute-start": (("collective-permute-done",), None),
    "collective-permute-done": (None, ("collective-permute-start",)),
    "send": (("send-done", "tuple"), None),
    "send-done": (None, ("send", "get-tuple-element")),
    "recv": (("recv-done", "tuple"), None),
    "recv-done": (None, ("recv", "get-tuple-element")),
}
ASYNC_WRAPPERS = frozenset({"async-start", "async-update", "async-done"})
# An opcode ending in -start or -done before its operand list (white space allowed between).
_ASYNC_OPCODE = re.compile(r"[a-z]-(?:start|done)\s*\(")
# Attributes that do not take part in XLA's ``Identical`` for send/recv.
_NOT_COMPARED = frozenset({"metadata", "backend_config", "frontend_attributes",
                           "control-predecessors", "sharding", "statistics_viz"})


class Graph:
    """Users and async computations of a module's structural model."""

    def __init__(self, module: Module) -> None:
        self.computations: dict[str, Computation] = module.computations
        self.users: dict[tuple[str, str], list[Instruction]] = {}
        self.by_name: dict[tuple[str, str], Instruction] = {}
        self.async_computations: set[str] = set()
        for computation in self.computations.values():
            for instruction in computation.instructions:
                self.by_name[(computation.name, instruction.name)] = instruction
                if instruction.opcode == "async-start":
                    self.async_computations.update(instruction.called_computations)
                for operand in dict.fromkeys(instruction.operands):
                    self.users.setdefault((computation.name, operand), []).append(instruction)

    def users_of(self, instruction: Instruction) -> list[Instruction]:
        return self.users.get((instruction.computation, instruction.name), [])

    def operand(self, instruction: Instruction, index: int) -> Instruction | None:
        if index >= len(instruction.operands):
            return None
        return self.by_name.get((instruction.computation, instruction.operands[index]))

    def is_async_root(self, instruction: Instruction) -> bool:
        """True for the root of a computation called by an async-start."""
        if instruction.computation not in self.async_computations:
            return False
        root = self.computations[instruction.computation].root
        return root is not None and root.name == instruction.name

    def operand_shapes(self, instruction: Instruction) -> list[Shape | None]:
        """Each operand's shape, None where the operand is not defined in its computation."""
        shapes: list[Shape | None] = []
        for index in range(len(instruction.operands)):
            operand = self.operand(instruction, index)
            shapes.append(None if operand is None or not operand.shape_text else operand.shape)
        return shapes

    def wrapped(self, instruction: Instruction) -> Computation | None:
        """The computation an async wrapper runs: its own ``calls=``, else its start's."""
        seen = 0
        current: Instruction | None = instruction
        while current is not None and seen < 1000:
            if current.called_computations:
                return self.computations.get(current.called_computations[0])
            current = self.operand(current, 0)
            seen += 1
        return None


def needs_graph(module: Module) -> bool:
    """True when the module has collectives beyond the synchronous ones, or a -start/-done
    instruction the collectives do not list (the pairing, channel and async shape rules
    then read users and operands)."""
    if any(c.opcode not in SYNC_OPCODES for c in module.collectives):
        return True
    return _ASYNC_OPCODE.search(module.text) is not None


def wrapping_names(module: Module) -> set[str]:
    """The async-start/-update/-done instructions that wrap a collective."""
    return {c.name for c in module.collectives if c.opcode in ASYNC_WRAPPERS}


def _checked(module: Module, graph: Graph) -> Iterator[Instruction]:
    """The instructions the pairing rules apply to; async wrappers only around collectives."""
    wrapping = wrapping_names(module)
    for computation in graph.computations.values():
        for instruction in computation.instructions:
            if instruction.opcode not in _PAIRS:
                continue
            if instruction.opcode in ASYNC_WRAPPERS and instruction.name not in wrapping:
                continue
            yield instruction


def _finding(instruction: Instruction, message: str, check: str) -> Finding:
    return Finding(message=message, instruction=instruction.name, opcode=instruction.opcode,
                   line=instruction.line, column=instruction.column, check=check)


def async_findings(module: Module, graph: Graph | None, source: SourceText
                   ) -> tuple[list[Finding], list[Finding]]:
    """(async pairing findings, channel findings): XLA's phases 2 and 3, in that order;
    none without a graph (``needs_graph`` false)."""
    if graph is None:
        return [], []
    return async_pair_findings(module, graph), channel_findings(module, graph, source)


def async_pair_findings(module: Module, graph: Graph) -> list[Finding]:
    """``VerifyAsynchronousInstructionPairs`` over the module's collective instructions."""
    findings = []
    for instruction in _checked(module, graph):
        message = _pair_problem(graph, instruction)
        if message is not None:
            findings.append(_finding(instruction, message, "async_pairs"))
    return findings


def _pair_problem(graph: Graph, instruction: Instruction) -> str | None:
    opcode = instruction.opcode
    expected_users, expected_operands = _PAIRS[opcode]
    users = graph.users_of(instruction)
    if expected_operands is not None:
        if len(instruction.operands) != 1:
            # XLA's message counts users here (sic).
            return f"The {opcode} instruction requires one consumer, found {len(users)}"
        operand = graph.operand(instruction, 0)
        if operand is not None and operand.opcode not in expected_operands:
            return (f"The operand of a {opcode} instruction needs to be "
                    f"{' or '.join(expected_operands)}, found {operand.opcode}")
    if expected_users is not None:
        if opcode in ("send", "recv") and instruction.is_root and graph.is_async_root(
                instruction):
            return None
        if len(users) != 1:
            return f"The {opcode} instruction requires one consumer, found {len(users)}"
        if users[0].opcode not in expected_users:
            return (f"The consumer of a {opcode} instruction needs to be one of "
                    f"({', '.join(expected_users)}), found {users[0].opcode}")
    return None


def channel_findings(module: Module, graph: Graph, source: SourceText) -> list[Finding]:
    """``VerifyChannels``: send/recv against their -done, host transfers per channel."""
    if not any(c.opcode in P2P_OPCODES for c in module.collectives):
        return []
    findings: list[Finding] = []
    host_transfers: dict[str, list[Instruction]] = {}
    for computation in graph.computations.values():
        for instruction in computation.instructions:
            if instruction.opcode not in ("send", "recv"):
                continue
            channel = instruction.attributes.get("channel_id")
            if channel is None:
                continue
            if _is_host_transfer(instruction):
                host_transfers.setdefault(channel.strip(), []).append(instruction)
            if graph.is_async_root(instruction):
                continue
            users = graph.users_of(instruction)
            if len(users) != 1 or users[0].opcode != instruction.opcode + "-done":
                continue
            message = _done_problem(instruction, users[0], source)
            if message is not None:
                findings.append(_finding(instruction, message, "channels"))
    for group in host_transfers.values():
        reference = group[0]
        for other in group[1:]:
            if not _identical(reference, other, graph):
                findings.append(_finding(other, (
                    "Host-transfer send/recv instructions that use the same channel must be "
                    "identical up to having different operands. Found different instructions "
                    f"with the same channel ID: \n{instruction_text(reference, source)} "
                    f"\nvs \n{instruction_text(other, source)}."), "channels"))
    return findings


def instruction_text(instruction: Instruction, source: SourceText) -> str:
    """The instruction as written: its collective's ``text``, else rebuilt from its line."""
    if instruction.collective is not None:
        return instruction.collective.text
    return source.instruction_text(instruction.line)


def _is_host_transfer(instruction: Instruction) -> bool:
    return instruction.attributes.get("is_host_transfer", "false").strip() == "true"


def _channel(instruction: Instruction) -> int:
    """The channel id the instruction writes itself (-1 when none); a -done's own, not the
    one it copies from its start."""
    if instruction.collective is not None:
        written = instruction.collective.written_channel_id
        return -1 if written is None else written
    text = instruction.attributes.get("channel_id")
    try:
        return int(text) if text is not None else -1
    except ValueError:
        return -1


def _done_problem(start: Instruction, done: Instruction, source: SourceText) -> str | None:
    start_text = instruction_text(start, source)
    done_text = instruction_text(done, source)
    if _channel(start) != _channel(done):
        return ("Expected to have the same channel id, actual channel ids are: "
                f"{start_text} ({_channel(start)}), {done_text} ({_channel(done)})")
    if _is_host_transfer(start) != _is_host_transfer(done):
        return ("Expected instructions to have the same is-host-transfer property: "
                f"{start_text}, {done_text} ")
    return None


def _identical(a: Instruction, b: Instruction, graph: Graph) -> bool:
    """XLA's ``Identical`` up to operands: opcode, shape, operand count and attributes
    (metadata and other annotations ignored), with operands compared by shape (newer XLA:
    "the operands must still have the same shapes"; an unknown operand shape passes)."""
    if a.opcode != b.opcode or _shape(a.shape_text) != _shape(b.shape_text):
        return False
    if len(a.operands) != len(b.operands):
        return False
    for x, y in zip(graph.operand_shapes(a), graph.operand_shapes(b), strict=True):
        if x is not None and y is not None and with_layout(x) != with_layout(y):
            return False
    keys = (set(a.attributes) | set(b.attributes)) - _NOT_COMPARED
    return all(a.attributes.get(k) == b.attributes.get(k) for k in keys)


def _shape(text: str) -> str:
    try:
        return with_layout(parse_shape(text))
    except ValueError:
        return text

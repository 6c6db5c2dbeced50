"""The send/recv deadlock checker (``VerifyNoCollectiveDeadlocks`` in ``hlo_verifier.cc``).

XLA runs it on scheduled modules when ``HloVerifierOpts.verify_no_collective_deadlocks`` is
set. It walks the entry computation in instruction order, stepping into every called
computation at its call site, as one state machine over the sends and recvs, whose pairs come
from the frontend attribute ``_xla_send_recv_source_target_pairs``:

- a send or recv that is a host transfer or carries ``_xla_send_recv_pipeline`` is skipped;
  otherwise its pairs attribute must be there and readable (``SourceTargetPairs::FromString``,
  in XLA's words), and its own pairs must have no cycle, then no repeated source or target;
- with nothing pending, a send (recv) becomes pending and a recv (send) is expected;
- another send (recv) while recvs (sends) are expected is pending too, unless its pairs
  joined with a pending one's have a cycle or a repeat (``Expected recv, but found ...``);
- a recv (send) while recvs (sends) are expected takes up the pending send (recv) whose pairs
  attribute is the same text, else it becomes pending as well;
- an all-gather, all-to-all, ragged-all-to-all, collective-permute, reduce-scatter,
  all-reduce or collective-broadcast that calls no computation, reached while something is
  expected, is a deadlock (an all-reduce or reduce-scatter with ``to_apply`` is stepped into,
  as XLA does, not checked);
- a computation called by an async-start that is more than one instruction (a group of
  sends and recvs) runs on a fresh state machine, whose leftovers are checked when the outer
  one expects something;
- at the end, what is still pending must match up by pairs text.

Each finding is at the instruction XLA names; the end-of-module messages name none in XLA,
and are placed at the first instruction left pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._errors import MeshtopoError
from ..groups._pairs import has_cycles
from ._finding import Finding, SourceText
from ._send_recv_pairs import SEND_RECV_PAIRS, pairs_problem, send_recv_pairs
from ._verify_async import instruction_text

if TYPE_CHECKING:
    from ._module import Module
    from ._structure import Computation, Instruction

PIPELINE_ATTRIBUTE = "_xla_send_recv_pipeline"
_OTHER_COLLECTIVES = frozenset({
    "all-gather", "all-reduce", "all-to-all", "ragged-all-to-all", "collective-permute",
    "reduce-scatter", "collective-broadcast",
})  # fmt: skip
_CYCLE = "Expected send and recv instructions to have non-cyclical source-target pairs"
_REPEAT = "Expected send and recv instructions to have unique source and target pairs"


class _Deadlock(Exception):
    """The checker's first failure, at ``instruction``."""

    def __init__(self, message: str, instruction: Instruction) -> None:
        super().__init__(message)
        self.message = message
        self.instruction = instruction


@dataclass
class _State:
    """XLA's ``DfaState`` and the pending sends and recvs, in the order they came."""

    expect: str | None = None  # None, "send" or "recv"
    sends: list[Instruction] = field(default_factory=list)
    recvs: list[Instruction] = field(default_factory=list)


def deadlock_findings(module: Module) -> list[Finding]:
    """The deadlock checker's finding on a scheduled module (XLA stops at the first one);
    none for unscheduled modules."""
    if not module.is_scheduled or module.entry is None:
        return []
    checker = _Checker(module)
    state = _State()
    try:
        checker.walk(module.entry, state, set())
        if state.expect is not None:
            checker.leftovers(state)
    except _Deadlock as failure:
        instruction = failure.instruction
        return [Finding(message=failure.message, instruction=instruction.name,
                        opcode=instruction.opcode, line=instruction.line,
                        column=instruction.column, check="deadlock")]
    return []


class _Checker:
    def __init__(self, module: Module) -> None:
        self.computations: dict[str, Computation] = module.computations
        self.source = SourceText(module.text)
        self.async_called = {name for computation in self.computations.values()
                             for instruction in computation.instructions
                             if instruction.opcode == "async-start"
                             for name in instruction.called_computations}

    def text(self, instruction: Instruction) -> str:
        return instruction_text(instruction, self.source)

    def walk(self, computation: Computation, state: _State, stack: set[str]) -> None:
        """``VerifyNoCollectiveDeadlocksRecursive``; ``stack`` guards against call cycles
        that the text may write (XLA's call graph has none)."""
        stack = stack | {computation.name}
        for instruction in computation.instructions:
            if instruction.called_computations:
                for name in instruction.called_computations:
                    called = self.computations.get(name)
                    if called is None or name in stack:
                        continue
                    if name in self.async_called and not _single_instruction(called):
                        inner = _State()
                        self.walk(called, inner, stack)
                        if state.expect is not None:
                            self.leftovers(inner)
                    else:
                        self.walk(called, state, stack)
            elif instruction.opcode in ("send", "recv"):
                self.send_or_recv(instruction, state)
            elif instruction.opcode in _OTHER_COLLECTIVES and state.expect is not None:
                if state.sends or state.recvs:
                    raise _Deadlock(
                        "Expected send and recv instructions to have the same source-target "
                        "pairs, but could not match some instructions. Introducing the "
                        f"following instruction will cause a deadlock:\n{self.text(instruction)}",
                        instruction)
                raise _Deadlock(f"Expected send or recv, but found {self.text(instruction)}",
                                instruction)

    def send_or_recv(self, instruction: Instruction, state: _State) -> None:
        """``CheckDeadlocksForSend`` / ``CheckDeadlocksForRecv``."""
        pairs = self.pairs(instruction)
        if pairs is None:
            return
        problem = _conflict(pairs)
        if problem is not None:
            raise _Deadlock(f"{problem}, but found {self.text(instruction)}", instruction)
        kind = instruction.opcode
        other = "recv" if kind == "send" else "send"
        mine = state.sends if kind == "send" else state.recvs
        theirs = state.recvs if kind == "send" else state.sends
        if state.expect is None:
            mine.append(instruction)
            state.expect = other
        elif state.expect == other:
            for pending in mine:
                joined = pairs + (self.pairs(pending) or [])
                if _conflict(joined) is not None:
                    raise _Deadlock(f"Expected {other}, but found {self.text(instruction)}",
                                    instruction)
            mine.append(instruction)
        else:
            match = self.match(instruction, theirs)
            if match is None:
                mine.append(instruction)
                return
            theirs.remove(match)
            if not theirs:
                state.expect = None

    def leftovers(self, state: _State) -> None:
        """``CheckPendingSendRecvDeadlocks``."""
        if not state.recvs and state.sends:
            raise _Deadlock("Expected recv to match send", state.sends[0])
        if not state.sends and state.recvs:
            raise _Deadlock("Expected send to match recv", state.recvs[0])
        recvs = list(state.recvs)
        unmatched: list[Instruction] = []
        for send in state.sends:
            match = self.match(send, recvs)
            if match is not None:
                recvs.remove(match)
            else:
                unmatched.append(send)
        for recv in recvs:
            if self.match(recv, state.sends) is None:
                unmatched.append(recv)
        if unmatched:
            texts = "".join(self.text(i) + "," for i in unmatched)
            raise _Deadlock(f"Deadlock detected. Last checked instructions: {texts}",
                            unmatched[0])

    def match(self, instruction: Instruction, candidates: list[Instruction]
              ) -> Instruction | None:
        """The first candidate whose pairs attribute is the same text."""
        key = _attributes(instruction).get(SEND_RECV_PAIRS)
        return next((c for c in candidates if _attributes(c).get(SEND_RECV_PAIRS) == key),
                    None)

    def pairs(self, instruction: Instruction) -> list[tuple[int, int]] | None:
        """The instruction's pairs (``SourceTargetPairs::FromInstruction``), or None when the
        checker skips it (a host transfer, a pipelined op); a ``_Deadlock`` with XLA's status
        message when the attribute is missing or XLA cannot read it."""
        collective = instruction.collective
        if collective is not None and collective.is_host_transfer:
            return None
        if instruction.attributes.get("is_host_transfer", "").strip() == "true":
            return None
        attributes = _attributes(instruction)
        if PIPELINE_ATTRIBUTE in attributes:
            return None
        text = attributes.get(SEND_RECV_PAIRS)
        if text is None:
            raise _Deadlock(f"Instruction {self.text(instruction)} does not have "
                            "source-target pairs attribute", instruction)
        pairs = send_recv_pairs(text)
        if pairs is None:
            raise _Deadlock(pairs_problem(text) or "", instruction)
        return pairs


def _attributes(instruction: Instruction) -> dict[str, str]:
    collective = instruction.collective
    if collective is None:
        return {}
    try:
        return collective.frontend_attributes
    except MeshtopoError:
        return {}


def _conflict(pairs: list[tuple[int, int]]) -> str | None:
    """``VerifyNoConflictingSourceTargetPairs``: a cycle first, then a repeated source or
    target."""
    if has_cycles(pairs):
        return _CYCLE
    sources = [s for s, _ in pairs]
    targets = [t for _, t in pairs]
    if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
        return _REPEAT
    return None


def _single_instruction(computation: Computation) -> bool:
    """XLA's ``CanExpandIntoSingleInstruction``: only the root and parameters."""
    root = computation.root
    return all(i.opcode == "parameter" or i is root for i in computation.instructions)

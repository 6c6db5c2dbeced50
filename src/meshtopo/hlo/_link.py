"""Pair async starts with their dones and async wrappers with the collective they call.

- ``all-reduce-done`` (and the other ``-done`` forms, ``send-done``, ``recv-done``) name their
  start as operand 0, an instruction of their own computation: the done takes the start's
  attributes and ``start`` names it.
- ``async-start`` with ``calls=%c``: when the root of ``%c`` is a collective, the wrapper takes
  its attributes and ``wrapped_opcode``; ``async-update``/``async-done`` follow their operand.
  Async wrappers of anything else (fusions, copies, several ops) are dropped: they are not
  collectives, and their instructions no longer name a collective (``collective`` is None).
  XLA's shorthand (``reduce-scatter-start``) carries its op's attributes: its start waits
  for its done like any other.
"""

from __future__ import annotations

from collections.abc import Callable

from ._collective import DONE_OPCODES, START_OPCODES, SYNC_OPCODES, Collective
from ._name_lists import names_in


class Linker:
    """Links collectives in text order, as many at a time as come; holds the starts still
    waiting for their done. ``root_collective(name)`` is the collective at the root of
    computation ``name`` (None when it is none), ``wrapped`` records what each async wrapper
    stands for."""

    def __init__(self, root_collective: Callable[[str], Collective | None],
                 wrapped: dict[str, Collective]) -> None:
        # (computation, name) of each start still waiting for its done
        self.pending: dict[tuple[str, str], Collective] = {}
        self.root_collective = root_collective
        self.wrapped = wrapped

    def link(self, collectives: list[Collective]) -> list[Collective]:
        """The collectives with starts, dones and async wrappers resolved, in order."""
        if all(c.opcode in SYNC_OPCODES for c in collectives):
            return collectives
        out: list[Collective] = []
        pending = self.pending
        for c in collectives:
            opcode = c.opcode
            if opcode == "async-start" and c.wrapped_opcode is not None:  # XLA's shorthand
                pending[(c.computation, c.name)] = c
            elif opcode == "async-start":
                called = names_in("calls", c.attributes.get("calls"), c.line, c.column)
                wrapped = self.root_collective(called[0]) if called else None
                if wrapped is None:
                    c.instruction.collective = None
                    continue
                c.copy_attributes_from(wrapped)
                self.wrapped[c.name] = wrapped
                pending[(c.computation, c.name)] = c
            elif opcode in ("async-update", "async-done"):
                start = pending.get((c.computation, c.operands[0])) if c.operands else None
                if start is None:
                    c.instruction.collective = None
                    continue
                c.copy_attributes_from(start)
                c.start = start.name if start.start is None else start.start
                self.wrapped[c.name] = self.wrapped.get(start.name, start)
                if opcode == "async-update":
                    pending[(c.computation, c.name)] = c
                else:
                    pending.pop((c.computation, c.operands[0]), None)
            elif opcode in DONE_OPCODES or opcode in ("send-done", "recv-done"):
                if c.operands:
                    c.start = c.operands[0]
                    start = pending.pop((c.computation, c.operands[0]), None)
                    if start is not None:
                        c.copy_attributes_from(start)
            elif opcode in START_OPCODES or opcode in ("send", "recv"):
                pending[(c.computation, c.name)] = c
            out.append(c)
        return out


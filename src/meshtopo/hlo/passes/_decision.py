"""What a pass did to each collective and why: ``Decision`` and ``PassResult``."""

from __future__ import annotations

from typing import NamedTuple

from .._module import Module


class Decision(NamedTuple):
    """One collective a pass looked at: its computation, name and opcode, what the pass did
    (``action``, e.g. ``"converted"``, ``"kept"``) and why (``reason``, one sentence)."""

    pass_name: str
    computation: str
    instruction: str
    opcode: str
    action: str
    reason: str


class PassResult(NamedTuple):
    """The rewritten module (a new one; the input is untouched) and the decisions."""

    module: Module
    decisions: list[Decision]

    @property
    def changed(self) -> bool:
        """Whether the pass changed anything."""
        return any(d.action not in ("kept", "skipped") for d in self.decisions)

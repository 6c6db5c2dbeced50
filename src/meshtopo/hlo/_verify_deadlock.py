"""The send/recv deadlock checker (spec 5.6): optional, and only for scheduled modules.

XLA runs it when ``HloVerifierOpts.verify_no_collective_deadlocks`` is set. It walks each
computation's schedule (for a scheduled module's text, the text order) as a state machine over
the send and recv instructions, reading each one's pairs from the frontend attribute
``_xla_send_recv_source_target_pairs``. Host transfers and instructions carrying
``_xla_send_recv_pipeline`` or ``_xla_send_recv_validation`` are skipped, as are the -done
forms. The rules:

- within one send or recv, each source and each target appears once, and the pairs form no
  cycle;
- sends (or recvs) pending together never share a source or a target;
- a recv (send) must take up a pending send (recv) with the same pairs;
- no other collective runs while a send or recv is pending (``Expected send or recv, but
  found ...``);
- nothing is left pending at the end of the computation.

The messages are XLA's as spec 5.6 quotes them; XLA's checker source itself is not in the
reference index, so the order of the rules inside one instruction follows the spec's list.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from .._errors import MeshtopoError
from ._collective import Collective
from ._finding import Finding
from ._module import Module

PAIRS_ATTRIBUTE = "_xla_send_recv_source_target_pairs"
_SKIP_ATTRIBUTES = ("_xla_send_recv_pipeline", "_xla_send_recv_validation")
_PAIR = re.compile(r"\{\s*(-?\d+)\s*,\s*(-?\d+)\s*\}")
_IGNORED = frozenset({"send-done", "recv-done"})


@dataclass
class _Pending:
    collective: Collective
    pairs: frozenset[tuple[int, int]]


def deadlock_findings(module: Module) -> list[Finding]:
    """The deadlock checker's findings on a scheduled module (none for unscheduled ones)."""
    if not module.is_scheduled:
        return []
    by_computation: dict[str | None, list[Collective]] = defaultdict(list)
    for collective in module.collectives:
        by_computation[collective.computation].append(collective)
    findings: list[Finding] = []
    for collectives in by_computation.values():
        finding = _computation_finding(collectives)
        if finding is not None:
            findings.append(finding)
    return findings


def _computation_finding(collectives: list[Collective]) -> Finding | None:
    """The first failure in one computation's schedule (XLA stops there)."""
    pending: dict[str, list[_Pending]] = {"send": [], "recv": []}
    for collective in collectives:
        opcode = collective.opcode
        if opcode in _IGNORED:
            continue
        if opcode not in ("send", "recv"):
            if pending["send"] or pending["recv"]:
                return _finding(collective, f"Expected send or recv, but found {collective.text}")
            continue
        pairs = _pairs(collective)
        if pairs is None:
            continue
        problem = _own_problem(pairs)
        if problem is not None:
            return _finding(collective, f"{problem}, but found {collective.text}")
        partner = "recv" if opcode == "send" else "send"
        match = next((p for p in pending[partner] if p.pairs == frozenset(pairs)), None)
        if match is not None:
            pending[partner].remove(match)
            continue
        if pending[partner]:
            return _finding(collective, (
                "Expected send and recv instructions to have the same source-target pairs, "
                "but could not match some instructions. Introducing the following "
                f"instruction will cause a deadlock:\n{collective.text}"))
        if _overlaps(pairs, pending[opcode]):
            return _finding(collective, (
                "Expected send and recv instructions to have unique source and target pairs, "
                f"but found {collective.text}"))
        pending[opcode].append(_Pending(collective, frozenset(pairs)))
    if pending["send"]:
        return _finding(pending["send"][0].collective, "Expected recv to match send")
    if pending["recv"]:
        return _finding(pending["recv"][0].collective, "Expected send to match recv")
    return None


def _pairs(collective: Collective) -> list[tuple[int, int]] | None:
    """The instruction's pairs, or None when the checker skips it."""
    if collective.is_host_transfer:
        return None
    try:
        attributes = collective.frontend_attributes
    except MeshtopoError:
        return None
    if any(key in attributes for key in _SKIP_ATTRIBUTES) or PAIRS_ATTRIBUTE not in attributes:
        return None
    return [(int(a), int(b)) for a, b in _PAIR.findall(attributes[PAIRS_ATTRIBUTE])]


def _own_problem(pairs: list[tuple[int, int]]) -> str | None:
    """Duplicates, then a cycle, within one instruction's pairs."""
    sources = [s for s, _ in pairs]
    targets = [t for _, t in pairs]
    if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
        return "Expected send and recv instructions to have unique source and target pairs"
    successor = dict(pairs)
    for start in successor:
        seen = {start}
        node = successor.get(start)
        while node is not None:
            if node in seen:
                return ("Expected send and recv instructions to have non-cyclical "
                        "source-target pairs")
            seen.add(node)
            node = successor.get(node)
    return None


def _overlaps(pairs: list[tuple[int, int]], pending: list[_Pending]) -> bool:
    sources = {s for s, _ in pairs}
    targets = {t for _, t in pairs}
    return any(s in sources or t in targets for p in pending for s, t in p.pairs)


def _finding(collective: Collective, message: str) -> Finding:
    return Finding(message=message, instruction=collective.name, opcode=collective.opcode,
                   line=collective.line, column=collective.column, check="deadlock")

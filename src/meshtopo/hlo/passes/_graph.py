"""XLA's instruction post order and reachability over a draft computation's lines."""

from __future__ import annotations

from ._draft import DraftComputation, Line


def users(computation: DraftComputation) -> dict[str, list[str]]:
    """name -> names of the lines that use it as an operand, in line order."""
    found: dict[str, list[str]] = {line.name: [] for line in computation.lines}
    for line in computation.lines:
        for operand in line.operands:
            if operand in found:
                found[operand].append(line.name)
    return found


def post_order(computation: DraftComputation) -> list[Line]:
    """``HloComputation::MakeInstructionPostOrder``: a depth-first walk from every line with
    no users and no control successors (in line order), operands first in operand order,
    control predecessors before operands, each line after everything it depends on."""
    by_name = {line.name: line for line in computation.lines}
    used = {o for line in computation.lines for o in line.operands}
    used.update(p for line in computation.lines for p in line.control_predecessors)
    state: dict[str, int] = {}  # 1 visiting, 2 visited
    order: list[Line] = []
    for line in computation.lines:
        if line.name in used:
            continue
        stack = [line]
        while stack:
            current = stack[-1]
            seen = state.get(current.name, 0)
            if seen == 2:
                stack.pop()
                continue
            if seen == 1:
                stack.pop()
                order.append(current)
                state[current.name] = 2
                continue
            state[current.name] = 1
            for name in reversed(current.operands):
                found = by_name.get(name)
                if found is not None and state.get(name, 0) != 2:
                    stack.append(found)
            for name in current.control_predecessors:
                found = by_name.get(name)
                if found is not None and state.get(name, 0) != 2:
                    stack.append(found)
    return order


def ancestors(order: list[Line]) -> dict[str, int]:
    """name -> bit set (bit = position in ``order``) of every line it depends on through
    operands and control predecessors, itself included."""
    position = {line.name: n for n, line in enumerate(order)}
    found: dict[str, int] = {}
    for n, line in enumerate(order):
        bits = 1 << n
        for name in (*line.operands, *line.control_predecessors):
            if name in found:
                bits |= found[name]
            elif name in position:
                bits |= 1 << position[name]
        found[line.name] = bits
    return found


def stable_topological(lines: list[Line]) -> list[Line]:
    """``lines`` reordered so each follows its operands and control predecessors, moving
    only what must move (a depth-first visit in the given order)."""
    by_name = {line.name: line for line in lines}
    done: set[str] = set()
    order: list[Line] = []
    for line in lines:
        stack = [(line, False)]
        while stack:
            current, expanded = stack.pop()
            if current.name in done:
                continue
            if expanded:
                done.add(current.name)
                order.append(current)
                continue
            stack.append((current, True))
            for name in reversed((*current.control_predecessors, *current.operands)):
                found = by_name.get(name)
                if found is not None and name not in done:
                    stack.append((found, False))
    return order

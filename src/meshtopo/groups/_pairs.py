"""Collective-permute source-target pairs: validation, the devices they touch, cycle shapes.

A permute carries no replica groups: each ``(source, target)`` pair sends one buffer. Without a
channel id the ids are replica ids (the pair is applied in every partition), with one they are
partition ids (applied in every replica).

>>> da = DeviceAssignment.default(replica_count=1, computation_count=4)
>>> participating_device_pairs([(0, 1), (1, 2), (2, 3), (3, 0)], mode=CollectiveOpGroupMode.CROSS_PARTITION, device_assignment=da)
[(0, 1), (1, 2), (2, 3), (3, 0)]
>>> cycle_type([(0, 1), (1, 2), (2, 3), (3, 0)]), cycle_type([(0, 3), (1, 0), (2, 1), (3, 2)])
('forward', 'backward')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from .._checks import as_int, is_int
from .._errors import InvalidArgumentError
from .._keywords import keywords_were_positional
from .._limits import check_size
from ._modes import CollectiveOpGroupMode
from ._placement import DeviceAssignment, as_device_assignment, there_are

Pair = tuple[int, int]


def as_pairs(pairs: Iterable[Sequence[int]]) -> list[Pair]:
    """``pairs`` as a list of ``(source, target)`` int tuples; anything else is refused."""
    if isinstance(pairs, str | bytes) or not hasattr(pairs, "__iter__"):
        raise InvalidArgumentError(f"source_target_pairs must be a list of pairs, got {pairs!r}")
    result: list[Pair] = []
    for pair in pairs:
        values = (
            list(pair) if not isinstance(pair, str | bytes) and hasattr(pair, "__iter__") else None
        )
        if (
            values is None
            or len(values) != 2
            or not all(is_int(v) for v in values)
        ):
            raise InvalidArgumentError(
                f"expects 'source_target_pairs=' to be a list of pairs, got {pair!r}"
            )
        result.append((int(values[0]), int(values[1])))
        check_size(len(result), "the source-target pairs")
    return result


def pair_problems(
    pairs: Iterable[Sequence[int]], limit: int, max_occurrences: int = 1, instruction: str = ""
) -> list[str]:
    """XLA's ``CheckDuplicatedSourceOrTarget`` findings, in XLA's words and order.

    ``limit`` is R without a channel id and P with one; a limit of 1 skips the range check, as
    XLA does. In-place permutes allow each id ``max_occurrences`` times. ``instruction`` (the
    instruction's text) is appended as XLA appends it.
    """
    as_int(limit, "limit", minimum=1)
    as_int(max_occurrences, "max_occurrences", minimum=1)
    problems: list[str] = []
    seen: dict[str, Counter[int]] = {"Source": Counter(), "Target": Counter()}
    for source, target in as_pairs(pairs):
        for kind, value in (("Source", source), ("Target", target)):
            if value < 0:
                problems.append(
                    _with(
                        f"{kind} {value} in the instruction's source-target pair must be >= 0 ",
                        instruction,
                    )
                )
            elif limit != 1 and value >= limit:
                problems.append(
                    _with(
                        f"{kind} {value} in the instruction's source-target pair must be < {limit} ",
                        instruction,
                    )
                )
            seen[kind][value] += 1
            if seen[kind][value] == max_occurrences + 1:
                times = "once" if max_occurrences == 1 else f"{max_occurrences} times"
                problems.append(
                    _with(
                        f"{kind} {value} appears more than {times} in instruction's source-target pairs",
                        instruction,
                    )
                )
    return problems


def _with(message: str, instruction: str) -> str:
    return f"{message}: {instruction}" if instruction else message.rstrip()


@keywords_were_positional
def participating_device_pairs(
    pairs: Iterable[Sequence[int]], *, mode: CollectiveOpGroupMode,
    device_assignment: DeviceAssignment,
) -> list[Pair]:
    """The (source device, target device) pairs a permute really uses.

    ``kCrossReplica`` (no channel): every pair in every partition, partition-major.
    ``kCrossPartition`` (channel): every pair in every replica, replica-major.
    """
    try:
        ids = np.array(as_pairs(pairs), dtype=np.int64).reshape(-1, 2)
    except OverflowError:
        raise InvalidArgumentError(f"source-target ids must fit in int64, got {pairs!r}") from None
    table = as_device_assignment(device_assignment).array
    mode = CollectiveOpGroupMode.coerce(mode)
    if mode is CollectiveOpGroupMode.CROSS_PARTITION:
        limit, what, rows = table.shape[1], "partition", table
    elif mode is CollectiveOpGroupMode.CROSS_REPLICA:
        limit, what, rows = table.shape[0], "replica", table.T
    else:
        raise InvalidArgumentError(
            f"collective-permute reads pairs as replica or partition ids, not in {mode} mode"
        )
    if ids.size and (ids.min() < 0 or ids.max() >= limit):
        bad = int(ids[(ids < 0) | (ids >= limit)][0])
        raise InvalidArgumentError(
            f"source-target id {bad} is out of range: {there_are(limit, what)}"
        )
    devices = rows[:, ids]  # [copies, pairs, 2]
    return [(int(s), int(t)) for s, t in devices.reshape(-1, 2).tolist()]


def has_cycles(pairs: Iterable[Sequence[int]]) -> bool:
    """XLA's ``HasCycles``: follow source -> target (a repeated source keeps its last target);
    a path that revisits a node is a cycle. Self-loops count. Linear in the number of pairs:
    every node is walked once, and a walk that reaches a node already finished stops there."""
    successor = dict(as_pairs(pairs))
    finished: set[int] = set()
    for start in successor:
        path: set[int] = set()
        node: int | None = start
        while node is not None and node not in finished:
            if node in path:
                return True
            path.add(node)
            node = successor.get(node)
        finished |= path
    return False


def is_forward_cycle(pairs: Sequence[Sequence[int]]) -> bool:
    """XLA's ``IsForwardCycle``: ``{{0,1},{1,2},...,{n-1,0}}`` shape, in that order."""
    p = as_pairs(pairs)
    if len(p) <= 1 or p[-1][1] != p[0][0]:
        return False
    return all(p[i][1] == p[i][0] + 1 and p[i + 1][0] == p[i][0] + 1 for i in range(len(p) - 1))


def is_backward_cycle(pairs: Sequence[Sequence[int]]) -> bool:
    """XLA's ``IsBackwardCycle``: ``{{0,n-1},{1,0},{2,1},...}`` shape, in that order."""
    p = as_pairs(pairs)
    if len(p) <= 1 or p[0][1] != p[-1][0]:
        return False
    return all(
        p[i][1] == p[i][0] - 1 and p[i - 1][0] == p[i][0] - 1 for i in range(len(p) - 1, 0, -1)
    )


def cycle_type(pairs: Sequence[Sequence[int]]) -> str:
    """ "forward", "backward" or "none" (XLA's ``GetCycleType``; a 2-cycle counts as forward)."""
    if is_forward_cycle(pairs):
        return "forward"
    if is_backward_cycle(pairs):
        return "backward"
    return "none"


def split_edges(pairs: Sequence[Sequence[int]], kind: str) -> tuple[Pair, list[Pair]]:
    """XLA's ``SplitEdges``: (back edge, the other pairs in order). The back edge is the first
    pair of a backward cycle and the last pair otherwise."""
    p = as_pairs(pairs)
    if not p:
        raise InvalidArgumentError("cannot split the edges of an empty list of pairs")
    if kind == "backward":
        return p[0], p[1:]
    return p[-1], p[:-1]

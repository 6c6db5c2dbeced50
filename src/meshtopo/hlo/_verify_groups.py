"""The shape verifier's checks on grouped collectives: mode, replica groups, shard and split
counts, ragged-all-to-all operands (``hlo_verifier.cc``, ``ShapeVerifier::Handle*``).

Per opcode, in XLA's order (``check`` = whether ``check_replica_groups`` is on):

=====================  ==========================================================
all-reduce(-start)     if check: mode, ``CheckReplicaGroups`` (non-uniform allowed)
all-gather(-start)     mode; if check: groups; gather dimension; shard count
reduce-scatter         mode; if check: groups; scatter dimension; shard count
all-to-all             mode; if check: groups; operand count vs split dimension/count
ragged-all-to-all      if check: mode, groups; 6 operands; offsets/sizes rank and shapes
collective-broadcast   nothing (its groups are never validated)
=====================  ==========================================================

Checks that need an operand shape the text does not give are skipped.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._errors import MeshtopoError
from ..groups._device_list import CollectiveDeviceList
from ..groups._modes import CollectiveOpGroupMode as Mode
from ..groups._placement import subgroup_size
from ._collective import Collective
from ._shape import Shape

Problem = tuple[str, str]  # (message, check family)


def check_replica_groups(
    groups: CollectiveDeviceList,
    mode: Mode,
    replica_count: int,
    num_partitions: int,
    uniform: bool,
    instruction: str | Callable[[], str],
    memo: dict[int, tuple[str, int, int] | None] | None = None,
) -> str | None:
    """XLA's ``CheckReplicaGroups``: the first failure's message, or None.

    Non-empty lists: no empty group, ids a permutation of ``[0, n)`` (n = ids listed), n equal
    to the mode's count unless that count is 1, and (``uniform``) one group size. Empty lists
    are legal except in ``kFlattenedID`` mode. ``instruction`` (text, or a function giving it
    when a message needs it) is appended as XLA appends ``hlo->ToString()``; ``memo`` keeps the
    id checks of device lists already seen (lists are shared per text by the parser).
    """
    if groups.is_empty:
        if mode is Mode.FLATTENED_ID:
            return "Replica groups must be specified in flattened-id mode"
        return None
    key = id(groups)
    if memo is not None and key in memo:
        problem = memo[key]
    else:
        problem = _ids_problem(groups)
        if memo is not None:
            memo[key] = problem
    if problem is not None:
        kind, value, n = problem
        text = instruction if isinstance(instruction, str) else instruction()
        if kind == "empty":
            return f"Instruction cannot have an empty replica group: {text}"
        if kind == "range":
            return (f"Replica {value} is out of range (should be in [0, {n}) range) in "
                    f"instruction's replica-groups: {text}")
        return f"Replica {value} is repeated in instruction's replica-groups: {text}"
    if groups.iota is not None:
        n = groups.num_replica_groups * groups.num_devices_per_group
    else:
        n = int(groups.group_sizes.sum())
    if mode in (Mode.CROSS_REPLICA, Mode.CROSS_REPLICA_AND_PARTITION):
        expected, what = replica_count, "replicas"
    elif mode is Mode.CROSS_PARTITION:
        expected, what = num_partitions, "partitions"
    else:
        expected, what = replica_count * num_partitions, "flattened IDs"
    if expected != 1 and n != expected:
        text = instruction if isinstance(instruction, str) else instruction()
        return (f"In {mode} mode, replica groups should contain {expected} {what}, "
                f"but found {n}: {text}")
    if uniform and not groups.is_uniform:
        return "Replica groups expected to be of uniform size"
    return None


def _ids_problem(groups: CollectiveDeviceList) -> tuple[str, int, int] | None:
    """Empty groups, then ids out of ``[0, n)`` or repeated, the first in text order, as
    ``("empty" | "range" | "repeat", id, n)``."""
    if groups.iota is not None:
        # An iota list holds a permutation of [0, G*S) by construction.
        if groups.num_devices_per_group == 0:
            return "empty", 0, 0
        return None
    sizes = groups.group_sizes
    if (sizes == 0).any():
        return "empty", 0, 0
    flat = groups.flattened_replica_groups()
    n = flat.size
    outside = np.flatnonzero((flat < 0) | (flat >= n))
    _, first = np.unique(flat, return_index=True)
    repeated_mask = np.ones(n, dtype=bool)
    repeated_mask[first] = False
    repeated = np.flatnonzero(repeated_mask)
    first_outside = int(outside[0]) if outside.size else n
    first_repeat = int(repeated[0]) if repeated.size else n
    if first_outside < first_repeat:
        return "range", int(flat[first_outside]), n
    if first_repeat < n:
        return "repeat", int(flat[first_repeat]), n
    return None


def collective_problem(
    collective: Collective,
    replica_count: int,
    num_partitions: int,
    check_groups: bool,
    memo: dict[int, tuple[str, int, int] | None] | None = None,
) -> Problem | None:
    """The first shape-verifier failure of a grouped collective (None when it passes or the
    opcode has no such checks: permutes, dones, async wrappers, send/recv)."""
    opcode = collective.opcode
    handler = _HANDLERS.get(opcode)
    if handler is None:
        return None
    context = _Context(collective, replica_count, num_partitions, check_groups, memo)
    try:
        return handler(context)
    except _Stop as stop:
        return stop.problem


class _Stop(Exception):
    """Carries the first failure out of a handler."""

    def __init__(self, message: str, check: str) -> None:
        super().__init__(message)
        self.problem = (message, check)


class _Context:
    """One collective under check, with the helpers every handler uses."""

    def __init__(self, collective: Collective, replica_count: int, num_partitions: int,
                 check_groups: bool,
                 memo: dict[int, tuple[str, int, int] | None] | None) -> None:
        self.c = collective
        self.replica_count = replica_count
        self.num_partitions = num_partitions
        self.check_groups = check_groups
        self.memo = memo

    @property
    def text(self) -> str:
        """The instruction as written, which XLA's messages end with."""
        return self.c.text

    def mode(self) -> Mode:
        try:
            return self.c.mode
        except MeshtopoError as error:
            raise _Stop(str(error), "group_mode") from None

    @property
    def groups(self) -> CollectiveDeviceList:
        return self.c.replica_groups or CollectiveDeviceList([])

    def replica_groups(self, mode: Mode, uniform: bool = True) -> None:
        if not self.check_groups:
            return
        problem = check_replica_groups(self.groups, mode, self.replica_count,
                                       self.num_partitions, uniform, lambda: self.text,
                                       self.memo)
        if problem is not None:
            raise _Stop(problem, "replica_groups")

    def subgroup_size(self, mode: Mode) -> int | None:
        """XLA's ``GetSubgroupSize``; None where XLA would index an empty list."""
        if mode is Mode.FLATTENED_ID and self.groups.is_empty:
            return None
        return subgroup_size(self.groups, mode, self.replica_count, self.num_partitions)

    def operand_shapes(self) -> list[Shape] | None:
        """Every operand's shape, or None when any is unknown."""
        shapes = self.c.operand_shapes
        if any(shape is None for shape in shapes):
            return None
        return [shape for shape in shapes if shape is not None]

    def require(self, condition: bool, text: str) -> None:
        if not condition:
            raise _Stop(text, "shapes")


def _rank(shape: Shape) -> int:
    return 0 if shape.is_tuple else len(shape.dimensions)


def _element(shape: Shape, index: int) -> Shape | None:
    if shape.tuple_shapes is None or not 0 <= index < len(shape.tuple_shapes):
        return None
    return shape.tuple_shapes[index]


def _all_reduce(ctx: _Context) -> Problem | None:
    if ctx.check_groups:
        ctx.replica_groups(ctx.mode(), uniform=False)
    return None


def _all_gather(ctx: _Context) -> Problem | None:
    mode = ctx.mode()
    ctx.replica_groups(mode)
    dimension = ctx.c.dimensions[0] if ctx.c.dimensions else 0
    ctx.require(dimension >= 0, "ag->all_gather_dimension() >= 0")
    ctx.require(len(ctx.c.operands) >= 1, "ag->operand_count() >= 1")
    operands = ctx.operand_shapes()
    if operands is None:
        return None
    shard_count = 0
    for index, operand in enumerate(operands):
        ctx.require(dimension < _rank(operand), "ag->all_gather_dimension() < static_cast<int64_t>"
                    "(ag->operand(i)->shape().dimensions().size())")
        output: Shape | None = ctx.c.shape
        if ctx.c.opcode == "all-gather-start":
            output = _element(ctx.c.shape, 1)
        if output is not None and len(operands) > 1:
            output = _element(output, index)
        if output is None:
            return None
        ctx.require(dimension < _rank(output), "ag->all_gather_dimension() < static_cast<int64_t>"
                    "(output_shape.dimensions().size())")
        if index == 0:
            if operand.dimensions[dimension] <= 0:
                return None
            shard_count = -(-output.dimensions[dimension] // operand.dimensions[dimension])
    return _shard_count(ctx, mode, shard_count)


def _shard_count(ctx: _Context, mode: Mode, shard_count: int) -> Problem | None:
    size = ctx.subgroup_size(mode)
    if size is not None and size != 1 and shard_count != size:
        return f"shard_count = {shard_count}, subgroup_size = {size}, {ctx.text}", "shapes"
    return None


def _reduce_scatter(ctx: _Context) -> Problem | None:
    mode = ctx.mode()
    ctx.replica_groups(mode)
    dimension = ctx.c.dimensions[0] if ctx.c.dimensions else 0
    ctx.require(dimension >= 0, "ars->scatter_dimension() >= 0")
    ctx.require(len(ctx.c.operands) >= 1, "ars->operand_count() >= 1")
    operands = ctx.operand_shapes()
    if operands is None:
        return None
    outputs: list[Shape] = []
    for index, operand in enumerate(operands):
        ctx.require(dimension < _rank(operand), "ars->scatter_dimension() < static_cast<int64_t>"
                    "(ars->operand(i)->shape().dimensions().size())")
        output = ctx.c.shape if len(operands) == 1 else _element(ctx.c.shape, index)
        if output is None:
            return None
        ctx.require(dimension < _rank(output), "ars->scatter_dimension() < static_cast<int64_t>"
                    "(output_shape.dimensions().size())")
        outputs.append(output)
    if outputs[0].dimensions[dimension] <= 0:
        return None
    shard_count = -(-operands[0].dimensions[dimension] // outputs[0].dimensions[dimension])
    return _shard_count(ctx, mode, shard_count)


def _all_to_all(ctx: _Context) -> Problem | None:
    mode = ctx.mode()
    ctx.replica_groups(mode)
    split_count = ctx.subgroup_size(mode)
    if ctx.c.dimensions:
        ctx.require(len(ctx.c.operands) == 1, "hlo->operand_count() == 1")
    elif split_count is not None:
        ctx.require(len(ctx.c.operands) == split_count, "hlo->operand_count() == split_count")
    return None


def _ragged_all_to_all(ctx: _Context) -> Problem | None:
    if ctx.check_groups:
        ctx.replica_groups(ctx.mode())
    ctx.require(len(ctx.c.operands) == 6, "hlo->operand_count() == kNumRaggedOperands")
    operands = ctx.operand_shapes()
    if operands is None:
        return None
    for index in range(3, 6):
        before, shape = operands[index - 1], operands[index]
        if _rank(before) not in (1, 2):
            return (f"RaggedAllToAll operand {index - 1} must be rank 1 or 2: {ctx.text}",
                    "shapes")
        if not _same_shape(before, shape):
            return (f"RaggedAllToAll operands have different shapes ({index - 1}, {index}): "
                    f"{ctx.text}", "shapes")
    return None


def _same_shape(a: Shape, b: Shape) -> bool:
    """XLA's ``ShapeUtil::Equal``; a layout counts only when both shapes write one."""
    if (a.element_type, a.dimensions, a.dynamic) != (b.element_type, b.dimensions, b.dynamic):
        return False
    if a.tuple_shapes is not None or b.tuple_shapes is not None:
        return a.tuple_shapes is not None and b.tuple_shapes is not None and len(
            a.tuple_shapes) == len(b.tuple_shapes) and all(
            _same_shape(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes, strict=True))
    return a.layout is None or b.layout is None or a.layout == b.layout


_HANDLERS = {
    "all-reduce": _all_reduce,
    "all-reduce-start": _all_reduce,
    "all-gather": _all_gather,
    "all-gather-start": _all_gather,
    "reduce-scatter": _reduce_scatter,
    "all-to-all": _all_to_all,
    "ragged-all-to-all": _ragged_all_to_all,
}

# The opcodes whose groups the verifier checks, and whether it asks them for one size (every
# handler does but all-reduce's).
UNIFORM_GROUPS = {opcode: handler is not _all_reduce for opcode, handler in _HANDLERS.items()}


def replica_groups_problem(
    groups: CollectiveDeviceList,
    mode: Mode,
    replica_count: int,
    num_partitions: int,
    opcode: str | None = None,
) -> str | None:
    """The verifier's replica-group check of groups given without an instruction, as it runs
    for ``opcode`` (``check_replica_groups``; None for opcodes whose groups it never checks,
    such as collective-broadcast and the permutes). Without an opcode it runs as for
    all-reduce: group sizes may differ. Where XLA appends the instruction the message has
    ``replica_groups=<groups>``."""
    if opcode is not None and opcode not in UNIFORM_GROUPS:
        return None
    uniform = UNIFORM_GROUPS[opcode or "all-reduce"]
    return check_replica_groups(groups, mode, replica_count, num_partitions, uniform,
                                lambda: f"replica_groups={groups}")

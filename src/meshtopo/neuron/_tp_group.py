"""The tensor-parallel group, discovered from an already partitioned module.

Neuron's ``GetTpReplicaGroup`` does not recompute the TP group from a mesh: it walks a
computation in post order (``MakeInstructionPostOrder``), stops at the first instruction with
the collective opcode it looks for (reduce-scatter), and reads that collective's replica groups
as the TP group. The module form scans a set of computations and takes the first group found.
``HasMatchingReplicaGroups`` gates combiners on exact equality of groups.

Post order here is XLA's: a depth-first walk from every instruction without users (in text
order), operands first (first operand first), control predecessors before the instruction
(older XLA versions also order collectives sharing a channel id; ``post_order`` has the flag).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._errors import InvalidArgumentError
from ..groups._device_list import CollectiveDeviceList
from ..hlo import Collective, Module

if TYPE_CHECKING:
    from ..hlo._structure import Computation, Instruction

DEFAULT_TP_OPCODE = "reduce-scatter"
# Opcodes that carry replica groups and so can name a TP group.
GROUP_OPCODES = frozenset({
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
    "collective-broadcast",
})  # fmt: skip
# Opcodes XLA orders by channel id in MakeInstructionPostOrder (ComputeChannelDependencies).
_CHANNEL_ORDERED = GROUP_OPCODES | {"collective-permute"}


def post_order(
    computation: Computation, channel_dependencies: bool = False
) -> list[Instruction]:
    """The instructions of ``computation`` in XLA's ``MakeInstructionPostOrder`` order.

    ``channel_dependencies`` selects between XLA versions: False is the XLA in current jaxlib
    (checked against its printer, which prints in this order), where collectives that share a
    channel id are not ordered among themselves; True is the older rule
    (``ComputeChannelDependencies``), where each collective with a channel id comes after the
    earlier collectives of that channel. The two differ only when collectives share a channel
    id, which single-program SPMD never writes.

    An operand naming no instruction of the computation, or a cycle, is refused with
    ``InvalidArgumentError``.
    """
    instructions = computation.instructions
    index = {instruction.name: i for i, instruction in enumerate(instructions)}

    def resolve(instruction: Instruction, names: Iterable[str], what: str) -> list[int]:
        found = []
        for name in names:
            if name not in index:
                raise InvalidArgumentError(
                    f"instruction {instruction.name} (line {instruction.line}) names {what} "
                    f"%{name}, which computation {computation.name} does not define"
                )
            found.append(index[name])
        return found

    operands = [resolve(i, i.operands, "the operand") for i in instructions]
    controls = [resolve(i, i.control_predecessors, "the control predecessor")
                for i in instructions]
    has_user = [False] * len(instructions)
    for used in operands:
        for operand in used:
            has_user[operand] = True
    after_channel = _channel_dependencies(instructions) if channel_dependencies else {}

    new, visiting, visited = 0, 1, 2
    state = [new] * len(instructions)
    order: list[int] = []
    for root in range(len(instructions)):
        if has_user[root] or state[root] == visited:
            continue
        stack = [root]
        while stack:
            current = stack[-1]
            if state[current] == new:
                state[current] = visiting
            else:
                stack.pop()
                if state[current] != visited:
                    state[current] = visited
                    order.append(current)
                continue
            if current != root:
                stack.extend(d for d in after_channel.get(current, ()) if state[d] != visited)
            stack.extend(o for o in reversed(operands[current]) if state[o] != visited)
            stack.extend(c for c in controls[current] if state[c] != visited)
    if len(order) != len(instructions):
        missing = next(i for i, s in enumerate(state) if s != visited)
        raise InvalidArgumentError(
            f"computation {computation.name} has a cycle through instruction "
            f"{instructions[missing].name} (line {instructions[missing].line})"
        )
    return [instructions[i] for i in order]


def _channel_dependencies(instructions: Sequence[Instruction]) -> dict[int, list[int]]:
    """Each channel-ordered collective -> the earlier collectives with its channel id."""
    groups: dict[str, list[int]] = {}
    dependencies: dict[int, list[int]] = {}
    for i, instruction in enumerate(instructions):
        channel = instruction.attributes.get("channel_id")
        if channel is None or instruction.opcode not in _CHANNEL_ORDERED:
            continue
        group = groups.setdefault(channel.strip(), [])
        if group:
            dependencies[i] = list(group)
        group.append(i)
    return dependencies


def instruction_groups(instruction: Instruction | Collective) -> CollectiveDeviceList:
    """The replica groups written on ``instruction`` (empty when none were written).

    A collective-permute or send/recv carries pairs, not groups, and is refused.
    """
    collective = instruction if isinstance(instruction, Collective) else instruction.collective
    if collective is not None:
        if collective.replica_groups is None:
            raise InvalidArgumentError(
                f"{collective.opcode} {collective.name} (line {collective.line}) carries "
                "source_target_pairs, not replica groups"
            )
        return collective.replica_groups
    if instruction.opcode not in GROUP_OPCODES:
        raise InvalidArgumentError(
            f"{instruction.opcode} {instruction.name} (line {instruction.line}) is not a "
            "collective with replica groups"
        )
    text = instruction.attributes.get("replica_groups")
    return CollectiveDeviceList.parse(text) if text is not None else CollectiveDeviceList()


def _check_opcode(opcode: str) -> str:
    if opcode not in GROUP_OPCODES:
        raise InvalidArgumentError(
            f"opcode must be a collective with replica groups ({', '.join(sorted(GROUP_OPCODES))})"
            f", got {opcode!r}"
        )
    return opcode


def find_tp_collective(
    module: Module,
    names: Iterable[str] | None = None,
    opcode: str = DEFAULT_TP_OPCODE,
) -> Instruction | None:
    """The collective ``tp_replica_group`` reads its group from, or None when there is none.

    Computations are scanned in text order (XLA prints callees before callers), each in post
    order, and the first match wins; ``names`` limits the scan to those computations (every
    name must exist).

    Two readings here are interpretations of the seed, which says only that the module form
    "takes a flat_hash_set<string_view> of names to scan and aggregates": the names are taken
    as computation names (XLA's module-level passes take execution-thread names in that type),
    and "aggregates" as "the first computation that has a match gives the group".
    """
    _check_opcode(opcode)
    computations = module.computations
    if names is not None:
        if isinstance(names, str):
            names = [names]
        wanted = set(names)
        unknown = sorted(wanted - set(computations))
        if unknown:
            raise InvalidArgumentError(
                f"module {module.name} has no computation {', '.join(unknown)}; its "
                f"computations are {', '.join(computations)}"
            )
        scanned = [c for name, c in computations.items() if name in wanted]
    else:
        scanned = list(computations.values())
    for computation in scanned:
        found = _first_in_post_order(computation, opcode)
        if found is not None:
            return found
    return None


def _first_in_post_order(computation: Computation, opcode: str) -> Instruction | None:
    for instruction in post_order(computation):
        if instruction.opcode == opcode:
            return instruction
    return None


def tp_replica_group(
    source: Module | Computation,
    names: Iterable[str] | None = None,
    opcode: str = DEFAULT_TP_OPCODE,
) -> list[list[int]]:
    """The tensor-parallel replica groups, read from the first ``opcode`` collective.

    ``source`` is a module (every computation, or those in ``names``, in text order) or one
    computation; each is walked in post order and the first reduce-scatter (or ``opcode``)
    gives its written groups, expanded. No such collective gives ``[]``.

    >>> from meshtopo.hlo import parse_module
    >>> module = parse_module('''HloModule m, num_partitions=8
    ... %add (x: f32[], y: f32[]) -> f32[] {
    ...   %x = f32[] parameter(0)
    ...   %y = f32[] parameter(1)
    ...   ROOT %s = f32[] add(%x, %y)
    ... }
    ... ENTRY %main (p: f32[8,4]) -> f32[2,4] {
    ...   %p = f32[8,4]{1,0} parameter(0)
    ...   ROOT %rs = f32[2,4]{1,0} reduce-scatter(%p), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, dimensions={0}, to_apply=%add
    ... }
    ... ''')
    >>> tp_replica_group(module)
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    """
    if isinstance(source, Module):
        found = find_tp_collective(source, names, opcode)
    elif hasattr(source, "instructions") and hasattr(source, "name"):
        if names is not None:
            raise InvalidArgumentError(
                "names filters the computations of a module; pass the module, not a computation"
            )
        found = _first_in_post_order(source, _check_opcode(opcode))
    else:
        raise InvalidArgumentError(
            f"tp_replica_group expects an HLO module or computation, got {source!r}"
        )
    return [] if found is None else instruction_groups(found).replica_groups


def has_matching_replica_groups(
    collective: Instruction | Collective, groups: object
) -> bool:
    """Whether ``collective``'s written groups equal ``groups`` exactly (order included).

    ``groups`` is a list of int lists, a ``CollectiveDeviceList`` or XLA's group text; the
    groups are compared expanded, so an iota list matches the same explicit groups:

    >>> from meshtopo.hlo import parse_module
    >>> module = parse_module('''HloModule m, num_partitions=4
    ... ENTRY %main (p: f32[8]) -> f32[16] {
    ...   %p = f32[8]{0} parameter(0)
    ...   ROOT %ag = f32[16]{0} all-gather(%p), channel_id=1, replica_groups=[2,2]<=[4], use_global_device_ids=true, dimensions={0}
    ... }
    ... ''')
    >>> ag = module.collectives[0]
    >>> has_matching_replica_groups(ag, [[0, 1], [2, 3]]), has_matching_replica_groups(ag, [[1, 0], [2, 3]])
    (True, False)
    """
    written = instruction_groups(collective)
    reference = (CollectiveDeviceList.parse(groups) if isinstance(groups, str)
                 else CollectiveDeviceList(groups))
    return bool(
        np.array_equal(written.group_sizes, reference.group_sizes)
        and np.array_equal(written.flattened_replica_groups(),
                           reference.flattened_replica_groups())
    )

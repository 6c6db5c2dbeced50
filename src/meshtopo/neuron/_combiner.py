"""Neuron's reduce-scatter combiner key, and which reduce-scatters a combiner could merge.

The seed gives ``NeuronReduceScatterCombiner``'s key as ``<HloOpcode, PrimitiveType, dim, bool,
bool, vector<vector<long>> groups>``. It has the shape of XLA's ``AllReduceKey`` (``<HloOpcode,
PrimitiveType, domain metadata id, bool, bool, groups>``, ``GetAllReduceKey``) with the domain
id replaced by a dimension, so the fields are read as XLA fills them:

- ``reduction``: the opcode of the ``to_apply`` root (``add``, ``maximum``, ...);
- ``element_type``: that root's element type;
- ``scatter_dimension``: the reduce-scatter's ``dimensions={d}``;
- ``has_channel_id`` and ``use_global_device_ids``: XLA's two bools, in that order;
- ``replica_groups``: the written groups, expanded.

The names of the middle three are a reading, not a decoded fact: the seed names only the types.
As in ``GetAllReduceKey``, a reduction computation other than two parameters and one root has
no key (it is never combined).

Which reduce-scatters merge follows XLA's ``CombineInstructionsByKey`` without size or count
thresholds: per computation, in post order, the first keyed instruction picks the key; later
ones with an equal key join unless one already chosen reaches them (a data or control
dependency), which ends the set; the rest are taken in later rounds. Instructions with more than
one operand are never combined. Later rounds keep the first post order (XLA re-derives it after
each merge) but see the dependencies the earlier merges created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from .._errors import InvalidArgumentError
from ._tp_group import instruction_groups, post_order

if TYPE_CHECKING:
    from ..hlo import Module
    from ..hlo._structure import Computation, Instruction

COMBINED_OPCODE = "reduce-scatter"


class CombinerKey(NamedTuple):
    """``(opcode, dtype, dim, bool, bool, groups)``: equal keys may combine."""

    reduction: str
    element_type: str
    scatter_dimension: int
    has_channel_id: bool
    use_global_device_ids: bool
    replica_groups: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class CombinableSet:
    """Reduce-scatters of one computation that one combine step would merge, in post order."""

    computation: str
    key: CombinerKey
    instructions: tuple[str, ...]


def combiner_key(instruction: Instruction, module: Module) -> CombinerKey | None:
    """The combine key of a reduce-scatter, or None (other opcodes, non-trivial reductions).

    >>> from meshtopo.hlo import parse_module
    >>> module = parse_module('''HloModule m, num_partitions=4
    ... %add (x: f32[], y: f32[]) -> f32[] {
    ...   %x = f32[] parameter(0)
    ...   %y = f32[] parameter(1)
    ...   ROOT %s = f32[] add(%x, %y)
    ... }
    ... ENTRY %main (p: f32[8]) -> f32[4] {
    ...   %p = f32[8]{0} parameter(0)
    ...   ROOT %rs = f32[4]{0} reduce-scatter(%p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
    ... }
    ... ''')
    >>> combiner_key(module.entry.root, module)
    CombinerKey(reduction='add', element_type='f32', scatter_dimension=0, has_channel_id=True, use_global_device_ids=True, replica_groups=((0, 1), (2, 3)))
    """
    if instruction.opcode != COMBINED_OPCODE:
        return None
    collective = instruction.collective
    if collective is None or collective.to_apply is None or not collective.dimensions:
        raise InvalidArgumentError(
            f"reduce-scatter {instruction.name} (line {instruction.line}) needs to_apply= and "
            "dimensions= to have a combine key"
        )
    reduction = module.computations[collective.to_apply]  # the reader checked it exists
    parameters = sum(1 for i in reduction.instructions if i.opcode == "parameter")
    root = reduction.root
    if len(reduction.instructions) != 3 or parameters != 2 or root is None:
        return None
    groups = instruction_groups(collective).replica_groups
    return CombinerKey(
        reduction=root.opcode,
        element_type=root.shape.element_type,
        scatter_dimension=collective.dimensions[0],
        has_channel_id=collective.channel_id is not None,
        use_global_device_ids=bool(collective.use_global_device_ids),
        replica_groups=tuple(tuple(group) for group in groups),
    )


def combinable_sets(module: Module) -> list[CombinableSet]:
    """Every set of two or more reduce-scatters a Neuron-style combiner could merge.

    Sets come per computation (text order), in the order the combiner forms them.
    """
    sets: list[CombinableSet] = []
    for computation in module.computations.values():
        sets.extend(_combine_computation(computation, module))
    return sets


def _combine_computation(computation: Computation, module: Module) -> list[CombinableSet]:
    order = post_order(computation)
    keys: dict[int, CombinerKey] = {}
    for position, instruction in enumerate(order):
        found_key = combiner_key(instruction, module)
        if found_key is not None:
            keys[position] = found_key
    if len(keys) < 2:
        return []
    graph = _MergedGraph(order)
    found: list[CombinableSet] = []
    while keys:
        ancestors = graph.candidate_ancestors(sorted(keys))
        chosen: list[int] = []
        key: CombinerKey | None = None
        for position in sorted(keys):
            if not chosen:
                key = keys[position]
            if keys[position] != key:
                continue
            if len(order[position].operands) != 1:
                del keys[position]
                continue
            if any(ancestors[position] & graph.bit(c) for c in chosen):
                break
            chosen.append(position)
            del keys[position]
        if len(chosen) > 1 and key is not None:
            graph.merge(chosen)
            found.append(CombinableSet(computation.name, key,
                                       tuple(order[p].name for p in chosen)))
    return found


class _MergedGraph:
    """The dependency graph of one computation (operands and control predecessors), with
    combined instructions merged into one node, answering reachability between candidates."""

    def __init__(self, order: list[Instruction]) -> None:
        index = {instruction.name: i for i, instruction in enumerate(order)}
        self.inputs = [
            [index[n] for n in (*i.operands, *i.control_predecessors) if n in index]
            for i in order
        ]
        self.parent = list(range(len(order)))
        self.bits: dict[int, int] = {}

    def find(self, node: int) -> int:
        while self.parent[node] != node:
            self.parent[node] = self.parent[self.parent[node]]
            node = self.parent[node]
        return node

    def merge(self, nodes: list[int]) -> None:
        head = self.find(nodes[0])
        for node in nodes[1:]:
            self.parent[self.find(node)] = head

    def bit(self, candidate: int) -> int:
        return self.bits[self.find(candidate)]

    def candidate_ancestors(self, candidates: list[int]) -> dict[int, int]:
        """For each candidate, a bit mask of the candidates (by merged node) it depends on."""
        self.bits = {self.find(c): 1 << i for i, c in enumerate(candidates)}
        count = len(self.parent)
        members: dict[int, list[int]] = {}
        for node in range(count):
            members.setdefault(self.find(node), []).append(node)
        inputs = {
            rep: {self.find(i) for node in group for i in self.inputs[node]} - {rep}
            for rep, group in members.items()
        }
        users: dict[int, list[int]] = {rep: [] for rep in members}
        pending = {rep: len(sources) for rep, sources in inputs.items()}
        for rep, sources in inputs.items():
            for source in sources:
                users[source].append(rep)
        ready = [rep for rep, n in pending.items() if n == 0]
        mask = dict.fromkeys(members, 0)
        while ready:
            rep = ready.pop()
            own = mask[rep] | self.bits.get(rep, 0)
            for user in users[rep]:
                mask[user] |= own
                pending[user] -= 1
                if pending[user] == 0:
                    ready.append(user)
        return {c: mask[self.find(c)] for c in candidates}

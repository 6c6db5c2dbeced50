"""``combine_collectives``: XLA's all-reduce, all-gather and reduce-scatter combiners.

Two collectives may merge only when their combine key matches: opcode, element type,
dimensions (the gather or scatter dimension), reduction, group mode (channel id and
``use_global_device_ids``) and the replica groups. The groups compare as XLA's combiners
compare them: ``GetAllReduceKey`` (``xla/service/all_reduce_key.cc``, the key of the
all-reduce and reduce-scatter combiners) and the all-gather combiner's ``CombineKey``
(``xla/service/all_gather_combiner.cc``) both copy ``replica_groups()`` into a
``vector<vector<int64_t>>``: the expanded groups, in their order. So one group list written
two ways (``{{0,4},{1,5},{2,6},{3,7}}``, ``[4,2]<=[2,4]T(1,0)`` or a mesh-axes list) is one
key, while the same groups in another order, or ``{}`` beside the list of every device, are
not (seed 000: the Neuron combiners key on the ``[group][rank]`` list itself). Walking each non-fusion computation in XLA's post
order, a collective joins the open group of its key unless it depends on a member (data or
control) or the group would pass ``threshold_bytes`` (output bytes summed) or
``threshold_count``; then it starts a new group. Each group of two or more becomes one
tuple-shaped collective over all the members' operands, and each member a
``get-tuple-element`` of it that keeps the member's name, so every user is unchanged. Lines
are then put back in an order where each follows what it uses (the schedule of a scheduled
module moves only where it must). Tuple-shaped collectives are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._collector import paused
from ..._errors import InvalidArgumentError
from .._module import Module
from .._shape_syntax import parse_shape
from ._decision import Decision, PassResult
from ._draft import Draft, DraftComputation, Line, operand_list
from ._graph import ancestors, post_order, stable_topological

COMBINABLE = ("all-reduce", "all-gather", "reduce-scatter")
NAME = "collective-combiner"
_KEY_PARTS = ("opcode", "element type", "dimensions", "reduction", "group mode",
              "replica groups")


@dataclass
class _Candidate:
    line: Line
    key: tuple[str, ...]
    size: int
    written_groups: str


def combine_collectives(module: Module, threshold_bytes: int = 30 * 1024 * 1024,
                        threshold_count: int = 256,
                        opcodes: tuple[str, ...] = COMBINABLE) -> Module:
    """A new module: ``module`` with combinable collectives merged (see the module
    docstring)."""
    return run_combine_collectives(module, threshold_bytes, threshold_count, opcodes).module


def run_combine_collectives(module: Module, threshold_bytes: int = 30 * 1024 * 1024,
                            threshold_count: int = 256,
                            opcodes: tuple[str, ...] = COMBINABLE) -> PassResult:
    """``combine_collectives`` with, for each collective, what it merged with or why not."""
    with paused():
        unknown = set(opcodes).difference(COMBINABLE)
        if unknown:
            raise InvalidArgumentError(f"combine_collectives combines {list(COMBINABLE)}, "
                                       f"not {sorted(unknown)}")
        if threshold_bytes < 0 or threshold_count < 1:
            raise InvalidArgumentError("combine_collectives needs threshold_bytes >= 0 and "
                                       f"threshold_count >= 1, got {threshold_bytes}, "
                                       f"{threshold_count}")
        draft = Draft(module)
        decisions: list[Decision] = []
        fusions = {called for c in module.computations.values() for i in c.instructions
                   if i.opcode == "fusion" for called in i.called_computations}
        for name in list(draft.computations):
            if name not in fusions:
                decisions += _combine(draft, name, threshold_bytes, threshold_count, set(opcodes))
        return PassResult(draft.finish(), decisions)


def _key(module: Module, computation: str, line: Line) -> tuple[str, ...] | None:
    instruction = module.computations[computation].by_name.get(line.name)
    collective = instruction.collective if instruction is not None else None
    shape = parse_shape(line.shape)
    if collective is None or collective.replica_groups is None or shape.is_tuple:
        return None
    return (line.opcode, shape.element_type, line.attribute("dimensions") or "",
            str(collective.reduction), str(collective.mode),
            collective.replica_groups.to_text(full=True))


def _combine(draft: Draft, name: str, threshold_bytes: int, threshold_count: int,
             opcodes: set[str]) -> list[Decision]:
    computation = draft.computations[name]
    order = post_order(computation)
    position = {line.name: n for n, line in enumerate(order)}
    reach = ancestors(order)
    open_groups: dict[tuple[str, ...], list[_Candidate]] = {}
    groups: list[list[_Candidate]] = []
    reasons: dict[str, str] = {}
    seen: list[_Candidate] = []
    for line in order:
        if line.opcode not in opcodes:
            continue
        key = _key(draft.module, name, line)
        if key is None:
            reasons[line.name] = "tuple-shaped: left as it is"
            continue
        candidate = _Candidate(line, key, parse_shape(line.shape).byte_size or 0,
                               line.attribute("replica_groups") or "{}")
        group = open_groups.get(key)
        why = None
        if group is not None:
            depends = next((m.line.name for m in group
                            if (reach[line.name] >> position[m.line.name]) & 1), None)
            total = sum(m.size for m in group) + candidate.size
            if depends is not None:
                why = f"depends on %{depends}, a member of its group"
            elif total > threshold_bytes:
                why = f"the group would hold {total} bytes > threshold {threshold_bytes}"
            elif len(group) + 1 > threshold_count:
                why = f"the group would hold {len(group) + 1} collectives > {threshold_count}"
        if group is None or why is not None:
            if why is not None:
                reasons[line.name] = f"starts a new group: {why}"
            group = open_groups[key] = []
            groups.append(group)
        group.append(candidate)
        seen.append(candidate)
    found: list[Decision] = []
    for group in groups:
        if len(group) > 1:
            combined = _merge(draft, computation, group)
            names = ", ".join(f"%{m.line.name}" for m in group)
            for member in group:
                found.append(Decision(NAME, name, member.line.name, member.line.opcode,
                                      "combined", f"into %{combined} with {names}"))
            continue
        member = group[0]
        reason = reasons.get(member.line.name) or _nearest_difference(member, seen)
        found.append(Decision(NAME, name, member.line.name, member.line.opcode, "kept", reason))
    found += [Decision(NAME, name, n, computation_line(computation, n).opcode, "kept", r)
              for n, r in reasons.items() if r.startswith("tuple")]
    if any(d.action == "combined" for d in found):
        computation.lines = stable_topological(computation.lines)
    return found


def computation_line(computation: DraftComputation, name: str) -> Line:
    """The line called ``name``."""
    return next(line for line in computation.lines if line.name == name)


def _nearest_difference(member: _Candidate, seen: list[_Candidate]) -> str:
    """Why ``member`` merged with nothing: the first key part it differs in from another
    collective of its opcode, else that it is alone."""
    for other in seen:
        if other is member or other.key[0] != member.key[0]:
            continue
        for part, mine, theirs in zip(_KEY_PARTS, member.key, other.key, strict=True):
            if mine != theirs:
                if part == "replica groups":  # as written; the key holds them expanded
                    mine, theirs = member.written_groups, other.written_groups
                return f"{part} differ from %{other.line.name}: {mine} vs {theirs}"
    return f"no other {member.key[0]} with its key"


def _merge(draft: Draft, computation: DraftComputation, group: list[_Candidate]) -> str:
    """Replaces ``group`` by one tuple-shaped collective; returns its name."""
    first = group[0].line
    name = draft.unique(f"{first.name}.combined")
    operands = tuple(o for m in group for o in m.line.operands)
    predecessors = list(dict.fromkeys(p for m in group for p in m.line.control_predecessors))
    shape = "(" + ", ".join(m.line.shape for m in group) + ")"
    combined = Line(name, shape, first.opcode, operand_list(operands), list(first.attributes),
                    predecessors, operands)
    last = max(computation.lines.index(m.line) for m in group)
    for index, member in enumerate(group):
        line = member.line
        line.opcode, line.operand_text, line.operands = "get-tuple-element", f"%{name}", (name,)
        line.attributes, line.control_predecessors = [("index", str(index))], []
        line.edited()
    computation.lines.insert(last, combined)
    return name

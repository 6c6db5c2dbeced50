"""``verify``: XLA's verifier checks on a module's collectives, as ``Finding`` values.

The checks and their messages are those of ``xla/service/hlo_verifier.cc`` (newer XLA, with the
mode spelled the seed's way: ``kCrossReplica`` ...). They run in XLA's phase order:

1. async start/done pairing (``_verify_async``): each start has one consumer of the matching
   kind, each done's operand is the matching start;
2. channels (``_verify_async``): send/recv and their -done share a channel id and the
   is-host-transfer property; host-transfer send/recv on one channel are identical;
3. per computation, in text order, the shape verifier's collective checks (``_verify_groups``,
   ``_verify_permute``): the group mode, ``CheckReplicaGroups``, all-gather and reduce-scatter
   shard counts, all-to-all split counts, ragged-all-to-all operands, collective-permute
   pairs; then each collective's result shape against the one XLA infers from its operands,
   including the -done forms and the async wrappers' tuple shapes (``_verify_shapes``, read
   from the structural model, so a -done whose operand is no start is checked too); then the
   instruction verifier's all-reduce channel id check;
4. only with ``verify_no_collective_deadlocks=True`` and a scheduled module: the send/recv
   deadlock checker (``_verify_deadlock``, XLA's ``VerifyNoCollectiveDeadlocks``);
5. all-reduce layout constraints: all constrained or none (``constrain_layout``).

XLA stops at its first error. ``verify`` goes on and reports, for every instruction, the first
check it fails (so ``findings[0]`` is the error XLA would return, and one bad instruction
never hides another). Findings follow the phase order, then the text order.

Where XLA appends the instruction (``hlo->ToString()``), the message ends with the
instruction's text as the source writes it: the whole logical line, white space runs kept,
``ROOT`` dropped (XLA prints ``ROOT`` from the computation, not the instruction). The all-reduce
channel check appends XLA's short form (``ToShortString``): ``%name = shape opcode(%a, %b)``.
Failed ``RET_CHECK`` conditions without a streamed message read as the condition's source text
(``hlo->operand_count() == split_count``), without XLA's ``RET_CHECK failure (file:line)``
prefix.

>>> import meshtopo as mt
>>> module = mt.hlo.parse_module('''HloModule m, replica_count=4
... %add (x: f32[], y: f32[]) -> f32[] {
...   %x = f32[] parameter(0)
...   %y = f32[] parameter(1)
...   ROOT %s = f32[] add(%x, %y)
... }
... ENTRY %main (p: f32[8]) -> f32[8] {
...   %p = f32[8]{0} parameter(0)
...   ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,5}}, to_apply=%add
... }
... ''')
>>> [(f.instruction, f.line, f.column, f.message) for f in mt.hlo.verify(module)]
[('ar', 9, 8, "Replica 5 is out of range (should be in [0, 4) range) in instruction's replica-groups: %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,5}}, to_apply=%add")]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import InvalidArgumentError, MeshtopoError
from ..groups._device_list import CollectiveDeviceList
from ..groups._modes import CollectiveOpGroupMode
from ..groups._placement import subgroup_size
from ._collective import DONE_OPCODES, Collective
from ._finding import Finding, SourceText, short_text
from ._module import Module
from ._verify_async import Graph, async_findings, instruction_text, needs_graph, wrapping_names
from ._verify_deadlock import deadlock_findings
from ._verify_groups import collective_problem
from ._verify_permute import permute_problem
from ._verify_shapes import async_problem, result_shape_problem

if TYPE_CHECKING:
    from ._structure import Instruction


def verify(module: Module, check_replica_groups: bool = True,
           verify_no_collective_deadlocks: bool = False) -> list[Finding]:
    """XLA's verifier checks on every collective of ``module``; ``[]`` when XLA accepts it.

    ``check_replica_groups=False`` skips ``CheckReplicaGroups`` (and, where XLA computes the
    group mode only for that check, the mode), and ``verify_no_collective_deadlocks=True``
    adds the send/recv deadlock checker on scheduled modules, like ``HloVerifierOpts``. The
    module's ``replica_count`` and ``num_partitions`` are the counts checked against. Structural
    errors in the text met while pairing async instructions raise ``HloParseError``.
    """
    if not isinstance(module, Module):
        raise InvalidArgumentError(
            f"verify expects a Module (from meshtopo.hlo.parse_module or load), got "
            f"{type(module).__name__}")
    findings: list[Finding] = []
    reported: set[str] = set()

    def add(finding: Finding) -> None:
        if finding.instruction not in reported:
            reported.add(finding.instruction)
            findings.append(finding)

    graph = Graph(module) if needs_graph(module) else None
    source = SourceText(module.text)
    pair_findings, channel_findings = async_findings(module, graph, source)
    for finding in pair_findings + channel_findings:
        add(finding)
    replica_count, num_partitions = module.replica_count, module.num_partitions
    memo: dict[int, tuple[str, int, int] | None] = {}
    for computation in _shape_phase(module, graph):
        for item in computation:
            if isinstance(item, Collective):
                result = _collective_problem(item, replica_count, num_partitions,
                                             check_replica_groups, memo, graph)
                if result is not None:
                    add(_finding(item, *result))
            else:
                problem = _structural_problem(item, graph, source)
                if problem is not None:
                    add(Finding(message=problem, instruction=item.name, opcode=item.opcode,
                                line=item.line, column=item.column, check="shapes"))
        for item in computation:
            if isinstance(item, Collective):
                problem = _channel_id_problem(item)
                if problem is not None:
                    add(_finding(item, problem, "channel_id"))
    if verify_no_collective_deadlocks:
        for finding in deadlock_findings(module):
            add(finding)
    mixed = _mixed_layout_constraint(module.collectives)
    if mixed is not None:
        add(_finding(mixed, "HloModule has a mix of layout constrained and unconstrained "
                            "AllReduce instructions.", "layout"))
    return findings


def _mixed_layout_constraint(collectives: list[Collective]) -> Collective | None:
    """``VerifyLayoutConstrainedAllReduce``: the first all-reduce(-start) whose
    ``constrain_layout`` differs from the first one's, if any."""
    reference: bool | None = None
    for collective in collectives:
        if collective.opcode not in ("all-reduce", "all-reduce-start"):
            continue
        if reference is None:
            reference = collective.constrain_layout
        elif collective.constrain_layout != reference:
            return collective
    return None


def _shape_phase(module: Module, graph: Graph | None
                 ) -> list[list[Collective | Instruction]]:
    """Per computation, in text order, what the shape verifier visits: each collective, and
    (with the structural model) each -done and collective-wrapping async instruction, which
    are checked from the model whether or not the reader decoded them."""
    if graph is None:
        groups: dict[str | None, list[Collective | Instruction]] = {}
        for collective in module.collectives:
            groups.setdefault(collective.computation, []).append(collective)
        return list(groups.values())
    wrapping = wrapping_names(module)
    phase: list[list[Collective | Instruction]] = []
    for computation in graph.computations.values():
        items: list[Collective | Instruction] = []
        for instruction in computation.instructions:
            if instruction.opcode in DONE_OPCODES or instruction.name in wrapping:
                items.append(instruction)
            elif instruction.collective is not None:
                items.append(instruction.collective)
        if items:
            phase.append(items)
    return phase


def _collective_problem(
    collective: Collective, replica_count: int, num_partitions: int, check_groups: bool,
    memo: dict[int, tuple[str, int, int] | None], graph: Graph | None,
) -> tuple[str, str] | None:
    """The shape verifier's first failure for one collective: permute pairs or group checks,
    then its result shape against the one XLA infers from its operands."""
    result = permute_problem(collective, replica_count, num_partitions)
    if result is None:
        result = collective_problem(collective, replica_count, num_partitions, check_groups,
                                    memo)
    if result is not None:
        return result
    operands = collective.operand_shapes
    if graph is not None and any(shape is None for shape in operands):
        instruction = graph.by_name.get((collective.computation or "", collective.name))
        if instruction is not None:
            operands = graph.operand_shapes(instruction)
    problem = result_shape_problem(
        collective.opcode, collective.shape, operands, lambda: collective.text,
        dimension=collective.dimensions[0] if collective.dimensions else None,
        split_count=_split_count(collective, replica_count, num_partitions),
        in_place=collective.slice_sizes is not None)
    return None if problem is None else (problem, "shapes")


def _split_count(collective: Collective, replica_count: int, num_partitions: int) -> int | None:
    """An all-to-all's ``GetSubgroupSize``; None for other opcodes or an undefined mode."""
    if collective.opcode != "all-to-all":
        return None
    try:
        mode = collective.mode
    except MeshtopoError:
        return None
    groups = collective.replica_groups or CollectiveDeviceList([])
    if mode is CollectiveOpGroupMode.FLATTENED_ID and groups.is_empty:
        return None
    return subgroup_size(groups, mode, replica_count, num_partitions)


def _structural_problem(instruction: Instruction, graph: Graph | None,
                        source: SourceText) -> str | None:
    """Result-shape checks of a -done or async wrapper, from the structural model."""
    if graph is None:
        return None
    operands = graph.operand_shapes(instruction)
    if instruction.opcode in DONE_OPCODES:
        return result_shape_problem(instruction.opcode, instruction.shape, operands,
                                    lambda: instruction_text(instruction, source))
    wrapped = graph.wrapped(instruction)
    if wrapped is None or wrapped.root is None or not wrapped.root.shape_text:
        return None
    parameters = [i.shape for i in wrapped.instructions if i.opcode == "parameter"]
    return async_problem(instruction.opcode, instruction.shape, operands, parameters,
                         wrapped.root.shape)


def _channel_id_problem(collective: Collective) -> str | None:
    """The instruction verifier's ``HandleAllReduce``: a channel id, when given, is > 0."""
    if collective.opcode != "all-reduce" or collective.channel_id is None:
        return None
    if collective.channel_id > 0:
        return None
    return f"All reduce channel id must be greater than 0 for {short_text(collective)}"


def _finding(collective: Collective, message: str, check: str) -> Finding:
    return Finding(
        message=message,
        instruction=collective.name,
        opcode=collective.opcode,
        line=collective.line,
        column=collective.column,
        check=check,
    )

"""``async_collective_creator``: XLA's ``AsyncCollectiveCreator`` (pass
``async-collective-creator``).

In every computation that is neither a fusion nor an async computation, a collective is
selected when its opcode's predicate holds and, for all-reduce, all-gather and
reduce-scatter only, when the byte size of its output (tuple leaves summed) is ``>=`` the
opcode's threshold or the size check is ignored. all-reduce, all-gather and
collective-permute become their ``-start``/``-done`` pairs (unless generic async ops are
asked for); the others become ``async-start``/``async-done`` around a new computation that
holds the op. Metadata, backend config and frontend attributes go to both halves; control
predecessors move to the start, control successors stay with the done (which keeps the
collective's name, so every user and successor now names the done); in a scheduled module
the collective's slot becomes ``start, done``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from ..._collector import paused
from ..._errors import InvalidArgumentError
from .._module import Module
from .._shape_syntax import parse_shape
from ._decision import Decision, PassResult
from ._draft import Draft, DraftComputation, Line, new_computation, operand_list

CONVERTIBLE = ("all-reduce", "all-gather", "collective-broadcast", "collective-permute",
               "all-to-all", "reduce-scatter", "ragged-all-to-all")
_SIZED = ("all-reduce", "all-gather", "reduce-scatter")
_LEGACY = ("all-reduce", "all-gather", "collective-permute")
_COPIED = ("metadata", "backend_config", "frontend_attributes")
NAME = "async-collective-creator"

Predicate = Callable[[Line], bool]


def async_collective_creator(
    module: Module,
    convert: Collection[str] | Callable[[Line], bool] = (),
    all_reduce_min_bytes: int = 0,
    all_gather_min_bytes: int = 0,
    reduce_scatter_min_bytes: int = 0,
    ignore_size_check: bool | Callable[[Line], bool] = False,
    use_generic_async_start_done: bool = False,
) -> Module:
    """A new module: ``module`` with the selected collectives split into start/done pairs.

    ``convert`` names the opcodes to convert (XLA's per-opcode predicates; default none) or is
    a predicate on each collective's line; the thresholds are XLA's
    ``*_min_threshold_in_bytes``."""
    return run_async_collective_creator(
        module, convert, all_reduce_min_bytes, all_gather_min_bytes, reduce_scatter_min_bytes,
        ignore_size_check, use_generic_async_start_done).module


def run_async_collective_creator(
    module: Module,
    convert: Collection[str] | Callable[[Line], bool] = (),
    all_reduce_min_bytes: int = 0,
    all_gather_min_bytes: int = 0,
    reduce_scatter_min_bytes: int = 0,
    ignore_size_check: bool | Callable[[Line], bool] = False,
    use_generic_async_start_done: bool = False,
) -> PassResult:
    """``async_collective_creator`` with the decision taken on each collective."""
    with paused():
        selected = _predicate(convert)
        ignore = ignore_size_check if callable(ignore_size_check) else (lambda _: ignore_size_check)
        thresholds = {"all-reduce": all_reduce_min_bytes, "all-gather": all_gather_min_bytes,
                      "reduce-scatter": reduce_scatter_min_bytes}
        draft = Draft(module)
        skipped = _fusion_and_async_computations(draft)
        decisions: list[Decision] = []
        for name in list(draft.computations):
            computation = draft.computations[name]
            shapes = {line.name: line.shape for line in computation.lines}
            lines: list[Line] = []
            for line in computation.lines:
                lines.append(line)
                if line.opcode not in CONVERTIBLE:
                    continue
                decide = _decider(decisions, name, line)
                if name in skipped:
                    decide("kept", f"in {skipped[name]} computation {name}")
                    continue
                if not selected(line):
                    decide("kept", f"the {line.opcode} predicate is false")
                    continue
                if line.opcode in _SIZED:
                    size = parse_shape(line.shape).byte_size or 0
                    threshold = thresholds[line.opcode]
                    if not ignore(line) and size < threshold:
                        decide("kept", f"{size} bytes < threshold {threshold}")
                        continue
                    why = (f"{size} bytes >= threshold {threshold}" if size >= threshold
                           else f"{size} bytes, size check ignored")
                else:
                    why = f"the {line.opcode} predicate is true"
                generic = use_generic_async_start_done or line.opcode not in _LEGACY
                start, done = _split(draft, computation, line, generic, shapes)
                lines[-1:] = [start, done]
                decide("converted", f"{why}: now {start.opcode} %{start.name} + "
                       f"{'async-done' if generic else line.opcode + '-done'} %{line.name}")
            computation.lines = lines
        return PassResult(draft.finish(), decisions)


def _predicate(convert: Collection[str] | Callable[[Line], bool]) -> Predicate:
    if callable(convert):
        return convert
    names = set(convert)
    unknown = names.difference(CONVERTIBLE)
    if unknown:
        raise InvalidArgumentError(f"convert names opcodes the pass does not convert: "
                                   f"{sorted(unknown)}; expected some of {list(CONVERTIBLE)}")
    return lambda line: line.opcode in names


def _decider(decisions: list[Decision], computation: str,
             line: Line) -> Callable[[str, str], None]:
    def decide(action: str, reason: str) -> None:
        decisions.append(Decision(NAME, computation, line.name, line.opcode, action, reason))
    return decide


def _fusion_and_async_computations(draft: Draft) -> dict[str, str]:
    """name -> ``fusion``/``async`` for the computations the pass leaves alone."""
    found: dict[str, str] = {}
    for computation in draft.computations.values():
        for line in computation.lines:
            kind = ("fusion" if line.opcode == "fusion"
                    else "async" if line.opcode == "async-start" else None)
            if kind is not None:
                for called in draft.module.computations[computation.source.name].by_name[
                        line.name].called_computations:
                    found.setdefault(called, kind)
    return found


def _split(draft: Draft, computation: DraftComputation, line: Line, generic: bool,
           shapes: dict[str, str]) -> tuple[Line, Line]:
    """The start and the done (which keeps the name of ``line``) that replace ``line``."""
    copied = [(k, v) for k, v in line.attributes if k in _COPIED]
    operand_shapes = [shapes.get(o, "") for o in line.operands]
    if generic:
        start = _async_start(draft, computation, line, operand_shapes)
        done_opcode = "async-done"
    else:
        start = Line(draft.unique(f"{line.name}-start"), _start_shape(line, operand_shapes),
                     f"{line.opcode}-start", line.operand_text, list(line.attributes),
                     list(line.control_predecessors), line.operands)
        done_opcode = f"{line.opcode}-done"
    done = Line(line.name, line.shape, done_opcode, f"%{start.name}", copied, [],
                (start.name,))
    return start, done


def _start_shape(line: Line, operand_shapes: list[str]) -> str:
    """XLA's start shape of an all-reduce, all-gather or collective-permute."""
    if line.opcode == "all-reduce":
        return line.shape
    if line.opcode == "all-gather":
        gathered = operand_shapes[0] if len(operand_shapes) == 1 else _tuple(operand_shapes)
        return _tuple([gathered, line.shape])
    if len(operand_shapes) == 4 and line.attribute("slice_sizes") is not None:  # in place
        return _tuple([operand_shapes[0], operand_shapes[1], "u32[]", "u32[]"])
    if len(operand_shapes) == 1:
        return _tuple([operand_shapes[0], operand_shapes[0], "u32[]", "u32[]"])
    return _tuple([_tuple(operand_shapes), _tuple(operand_shapes)])


def _tuple(shapes: list[str]) -> str:
    return "(" + ", ".join(shapes) + ")"


def _async_start(draft: Draft, computation: DraftComputation, line: Line,
                 operand_shapes: list[str]) -> Line:
    """A new async computation holding ``line`` and the ``async-start`` calling it."""
    wrapped = draft.unique(f"{line.name}.async_computation")
    parameters = [Line(draft.unique(f"param_{n}.{line.name}"), shape, "parameter", str(n), [])
                  for n, shape in enumerate(operand_shapes)]
    inner = Line(draft.unique(f"{line.name}.wrapped"), line.shape, line.opcode,
                 operand_list([p.name for p in parameters]), list(line.attributes), [],
                 tuple(p.name for p in parameters))
    signature = "(" + ", ".join(f"{p.name}: {p.shape}" for p in parameters) + \
        f") -> {line.shape}"
    draft.add_computation(computation.source.name, new_computation(wrapped, signature),
                          [*parameters, inner], inner.name)
    attributes = [(k, v) for k, v in line.attributes if k in _COPIED]
    attributes.insert(0, ("calls", f"%{wrapped}"))
    if line.opcode == "all-reduce" or (line.opcode == "collective-permute"
                                       and line.attribute("slice_sizes") is not None):
        attributes.append(("output_to_operand_aliasing", _aliasing(line)))
    shape = _tuple([_tuple(operand_shapes), line.shape])
    return Line(draft.unique(f"{line.name}-start"), shape, "async-start", line.operand_text,
                attributes, list(line.control_predecessors), line.operands)


def _aliasing(line: Line) -> str:
    """XLA's output-to-operand aliasing of a generic async all-reduce or in-place permute."""
    shape = parse_shape(line.shape)
    if shape.tuple_shapes is not None:
        return "{" + ", ".join(f"{{1, {i}}}: ({i}, {{}})"
                               for i in range(len(shape.tuple_shapes))) + "}"
    return f"{{{{1}}: ({1 if line.opcode == 'collective-permute' else 0}, {{}})}}"

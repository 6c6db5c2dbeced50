"""The shape verifier's result-shape checks on collectives (``hlo_verifier.cc``,
``ShapeVerifier::CheckShape`` and ``Handle*``, with ``ShapeInference::Infer*Shape``).

After a collective's group and count checks pass, XLA infers its result shape from its
operands and compares (layouts ignored, as the verifier is not layout-sensitive by default):

=========================  ==============================================================
all-reduce(-start)         the operand (a tuple of the operands when several)
all-reduce-done            its operand's shape (the start's result, forwarded)
all-gather                 each operand with the gather dimension times the shard count
all-gather-start           ``(operand(s), all-gather result)``
all-gather-done            element 1 of its operand's shape
reduce-scatter             each operand with the scatter dimension over the shard count
all-to-all                 the operand (split dimension divisible by the split count), or
                           a tuple of the operands, which must all have operand 0's shape
collective-permute         the operand (a tuple of the operands when several; in place:
                           operand 1)
collective-permute-start   ``(operand, operand, context...)`` (tuples when several)
collective-permute-done    element 1 of its operand's shape
collective-broadcast       operand 0
ragged-all-to-all          operand 1 (the output buffer)
=========================  ==============================================================

A mismatch reads ``Expected instruction to have shape equal to <inferred>, actual shape is
<shape>:\\n<instruction>``; an inference failure is XLA's inference message followed by
``\\n\\t, for instruction <instruction>``. The async wrappers get XLA's own checks
(``CheckAsyncOpComputationShapes``): element 0 of the async shape is the tuple of the wrapped
computation's parameter shapes, element 1 its root shape, each start operand matches its
parameter, an update keeps its operand's shape and a done returns element 1.

A check whose operand shapes the text does not give is skipped. Shapes in messages print as
XLA prints them: without layouts in ``Expected instruction ...`` (``HumanString``), with
layouts (a missing layout printed as XLA's default) in the async messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ._shape import Shape

Inferred = Shape | str | None  # the shape, XLA's inference error, or None: unknown


def result_shape_problem(
    opcode: str,
    shape: Shape,
    operands: list[Shape | None],
    text: Callable[[], str],
    dimension: int | None = None,
    split_count: int | None = None,
    in_place: bool = False,
) -> str | None:
    """XLA's message when ``shape`` differs from the result inferred for ``opcode`` over
    ``operands`` (None when it matches or cannot be inferred). ``dimension`` is the gather,
    scatter or split dimension; ``split_count`` the subgroup size of an all-to-all."""
    if any(operand is None for operand in operands) or not operands:
        return None
    known = [operand for operand in operands if operand is not None]
    inferred = _infer(opcode, shape, known, dimension, split_count, in_place)
    if inferred is None:
        return None
    if isinstance(inferred, str):
        return f"{inferred}\n\t, for instruction {text()}"
    if compatible(inferred, shape):
        return None
    return (f"Expected instruction to have shape equal to {human(inferred)}, actual shape is "
            f"{human(shape)}:\n{text()}")


def _infer(opcode: str, shape: Shape, operands: list[Shape], dimension: int | None,
           split_count: int | None, in_place: bool) -> Inferred:
    if opcode in ("all-reduce", "all-reduce-start"):
        return _arrays(operands, "operand of cross replica sum") or _one_or_tuple(operands)
    if opcode in ("all-reduce-done",):
        return operands[0]
    if opcode in ("all-gather-done", "collective-permute-done"):
        return _element(operands[0], 1)
    if opcode in ("all-gather", "all-gather-start"):
        return _all_gather(opcode, shape, operands, dimension or 0)
    if opcode == "reduce-scatter":
        return _reduce_scatter(shape, operands, dimension or 0)
    if opcode == "all-to-all":
        return _all_to_all(operands, dimension, split_count)
    if opcode == "collective-permute":
        if in_place:
            return operands[1] if len(operands) == 4 else None
        return _arrays(operands, "operand of collective-permute") or _one_or_tuple(operands)
    if opcode == "collective-permute-start":
        return _permute_start(shape, operands, in_place)
    if opcode == "collective-broadcast":
        return _arrays(operands[:1], "operand of collective-broadcast") or operands[0]
    if opcode == "ragged-all-to-all" and len(operands) > 1:
        return _arrays(operands[1:2], "operand 1 of ragged-all-to-all") or operands[1]
    return None


def _all_gather(opcode: str, shape: Shape, operands: list[Shape], dimension: int) -> Inferred:
    output = _element(shape, 1) if opcode == "all-gather-start" else shape
    if output is not None and len(operands) > 1:
        output = _element(output, 0)
    if output is None or output.is_tuple or not 0 <= dimension < len(output.dimensions):
        return None
    first = operands[0]
    if first.is_tuple or dimension >= len(first.dimensions) or first.dimensions[dimension] <= 0:
        return None
    shard_count = -(-output.dimensions[dimension] // first.dimensions[dimension])
    if shard_count <= 0:
        return "shard_count > 0"
    results: list[Shape] = []
    for operand in operands:
        if operand.is_tuple:
            return f"Expected array argument for operand of all-gather, but got {human(operand)}."
        if dimension >= len(operand.dimensions):
            return None
        results.append(_scaled(operand, dimension, shard_count, multiply=True))
    gathered = _one_or_tuple(results)
    if opcode == "all-gather":
        return gathered
    return Shape("tuple", tuple_shapes=(_one_or_tuple(operands), gathered))


def _reduce_scatter(shape: Shape, operands: list[Shape], dimension: int) -> Inferred:
    output = shape if len(operands) == 1 else _element(shape, 0)
    first = operands[0]
    if (output is None or output.is_tuple or first.is_tuple
            or not 0 <= dimension < min(len(output.dimensions), len(first.dimensions))
            or output.dimensions[dimension] <= 0):
        return None
    shard_count = -(-first.dimensions[dimension] // output.dimensions[dimension])
    if shard_count <= 0:
        return "shard_count > 0"
    results: list[Shape] = []
    for operand in operands:
        if operand.is_tuple:
            return (f"Expected array argument for operand of reduce-scatter, but got "
                    f"{human(operand)}.")
        if dimension >= len(operand.dimensions):
            return None
        size = operand.dimensions[dimension]
        if size % shard_count:
            return (f"ReduceScatter operand scatter dimension size {size} must be dividable "
                    f"by shard_count {shard_count}.")
        results.append(_scaled(operand, dimension, shard_count, multiply=False))
    return _one_or_tuple(results)


def _all_to_all(operands: list[Shape], dimension: int | None,
                split_count: int | None) -> Inferred:
    if dimension is None:
        first = operands[0]
        for index, operand in enumerate(operands):
            if not _equal(first, operand):
                return (f"HLO all-to-all has operands with different shapes: the 0th operand "
                        f"shape {human(first)}, but the {index}th operand has shape "
                        f"{human(operand)}.")
        return Shape("tuple", tuple_shapes=tuple(operands))
    if split_count is None or len(operands) != 1:
        return None
    operand = operands[0]
    if split_count <= 0:
        return "split_count > 0"
    if operand.is_tuple or any(operand.dynamic):
        return None
    if not 0 <= dimension < len(operand.dimensions):
        return (f"AllToAll split_dimension {dimension} is out-of-bounds in shape "
                f"{human(operand)}.")
    size = operand.dimensions[dimension]
    if size % split_count:
        return (f"AllToAll split dimension size {size} must be dividable by split_count "
                f"{split_count}.")
    return operand  # split and concat dimension are one: the shape is kept


def _permute_start(shape: Shape, operands: list[Shape], in_place: bool) -> Inferred:
    context = shape.tuple_shapes[2:] if shape.tuple_shapes is not None else ()
    if in_place:
        if len(operands) != 4:
            return None
        buffers = (operands[0], operands[1])
    elif len(operands) == 1:
        problem = _arrays(operands, "operand of collective-permute-start")
        if problem:
            return problem
        buffers = (operands[0], operands[0])
    else:
        both = Shape("tuple", tuple_shapes=tuple(operands))
        buffers = (both, both)
    return Shape("tuple", tuple_shapes=buffers + tuple(context))


def async_problem(
    opcode: str,
    shape: Shape,
    operands: list[Shape | None],
    parameters: list[Shape] | None,
    root: Shape | None,
) -> str | None:
    """XLA's async-start/-update/-done shape checks against the wrapped computation (its
    parameter shapes in order, its root shape); None when they pass or a shape is unknown."""
    if parameters is None or root is None or any(operand is None for operand in operands):
        return None
    known = [operand for operand in operands if operand is not None]
    if opcode == "async-update" and known and not compatible(known[0], shape):
        return (f"The {opcode} expects the shape of operand and output to match "
                f"({with_layout(known[0])} vs {with_layout(shape)}).")
    async_shape = known[0] if opcode == "async-done" and known else shape
    if async_shape.tuple_shapes is None or len(async_shape.tuple_shapes) < 2:
        return (f"The {opcode} expects the async shape to be a tuple of at least two "
                f"elements, found {with_layout(async_shape)}.")
    parameter_shape = Shape("tuple", tuple_shapes=tuple(parameters))
    element0, element1 = async_shape.tuple_shapes[0], async_shape.tuple_shapes[1]
    if not compatible(element0, parameter_shape):
        return (f"The {opcode} expects the async shape at index {{0}} to match async "
                f"computation parameter shape ({with_layout(element0)} vs "
                f"{with_layout(parameter_shape)}).")
    if not compatible(element1, root):
        return (f"The {opcode} expects the async shape at index {{1}} to match the async "
                f"computation root shape ({with_layout(element1)} vs {with_layout(root)}).")
    if opcode == "async-start":
        for index, operand in enumerate(known):
            expected = _element(element0, index)
            if expected is not None and not compatible(expected, operand):
                return (f"The {opcode} expects the shape of operand {index} to match the async "
                        f"shape at index {{0}} ({with_layout(operand)} vs "
                        f"{with_layout(expected)}).")
    if opcode == "async-done" and not compatible(element1, shape):
        return (f"The {opcode} expects the shape of output to match the async shape at index "
                f"{{1}} ({with_layout(shape)} vs {with_layout(element1)}).")
    return None


def compatible(a: Shape, b: Shape) -> bool:
    """XLA's ``ShapeUtil::Compatible``: same structure, element types and dimension sizes;
    layouts and which dimensions are dynamic ignored (``<=8`` is compatible with ``8``)."""
    if a.tuple_shapes is not None or b.tuple_shapes is not None:
        return (a.tuple_shapes is not None and b.tuple_shapes is not None
                and len(a.tuple_shapes) == len(b.tuple_shapes)
                and all(compatible(x, y)
                        for x, y in zip(a.tuple_shapes, b.tuple_shapes, strict=True)))
    return (a.element_type, a.dimensions) == (b.element_type, b.dimensions)


def _equal(a: Shape, b: Shape) -> bool:
    """XLA's ``Shape::Equal`` on parsed shapes: structure, element types, dimensions and
    their dynamic markers, and layouts (a missing layout read as XLA's default)."""
    return with_layout(a) == with_layout(b)


def human(shape: Shape) -> str:
    """XLA's ``ShapeUtil::HumanString``: the shape without layouts."""
    return str(_map_layout(shape, lambda _: None))


def with_layout(shape: Shape) -> str:
    """XLA's ``Shape::ToString(print_layout=true)``: a layout on every array of rank >= 1,
    XLA's default (minor-to-major ``{n-1,...,0}``) where the text writes none."""
    def default(leaf: Shape) -> str | None:
        if leaf.layout is not None or not leaf.dimensions:
            return leaf.layout
        return ",".join(str(i) for i in reversed(range(len(leaf.dimensions))))
    return str(_map_layout(shape, default))


def _map_layout(shape: Shape, layout: Callable[[Shape], str | None]) -> Shape:
    if shape.tuple_shapes is not None:
        return replace(shape, tuple_shapes=tuple(_map_layout(s, layout)
                                                 for s in shape.tuple_shapes))
    return replace(shape, layout=layout(shape))


def _arrays(operands: list[Shape], what: str) -> str | None:
    for operand in operands:
        if operand.is_tuple:
            return f"Expected array argument for {what}, but got {human(operand)}."
    return None


def _one_or_tuple(shapes: list[Shape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else Shape("tuple", tuple_shapes=tuple(shapes))


def _element(shape: Shape, index: int) -> Shape | None:
    if shape.tuple_shapes is None or not 0 <= index < len(shape.tuple_shapes):
        return None
    return shape.tuple_shapes[index]


def _scaled(shape: Shape, dimension: int, factor: int, multiply: bool) -> Shape:
    dims = list(shape.dimensions)
    if dims[dimension] >= 0:
        dims[dimension] = dims[dimension] * factor if multiply else dims[dimension] // factor
    return replace(shape, dimensions=tuple(dims))

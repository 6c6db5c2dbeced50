"""The shape verifier's collective-permute checks (``HandleCollectivePermute[Start]``).

First the in-place structure (``CheckInplaceCollectivePermute``: 4 operands, buffers and offset
tuples that match), then the pairs (``CheckDuplicatedSourceOrTarget``, through
``meshtopo.pair_problems``): ids in ``[0, limit)`` with limit R without a channel id and P with
one (skipped when the limit is 1), each source and target at most once, or at most N times for
an in-place permute whose operand 2 holds N offset tuples. Cycles are allowed.
"""

from __future__ import annotations

from ..groups._modes import CollectiveOpGroupMode as Mode
from ..groups._pairs import pair_problems
from ._collective import Collective
from ._shape import Shape

PERMUTE_OPCODES = frozenset({"collective-permute", "collective-permute-start"})


def permute_problem(
    collective: Collective, replica_count: int, num_partitions: int
) -> tuple[str, str] | None:
    """The first failure of a collective-permute(-start) as (message, check), else None."""
    if collective.opcode not in PERMUTE_OPCODES:
        return None
    in_place = collective.slice_sizes is not None
    four = len(collective.operands) == 4
    shapes = collective.operand_shapes if in_place or four else []
    if in_place:
        problem = in_place_problem(shapes)
        if problem is not None:
            return problem, "shapes"
    limit = replica_count if collective.mode is Mode.CROSS_REPLICA else num_partitions
    allowed = _allowed_occurrences(shapes) if four else 1
    pairs = collective.source_target_pairs or []
    if not pair_problems(pairs, limit, allowed):
        return None
    problems = pair_problems(pairs, limit, allowed,
                             instruction=collective.text)
    return problems[0], "source_target_pairs"


def _allowed_occurrences(shapes: list[Shape | None]) -> int:
    """N for a 4-operand permute: the offset tuples in operand 2 (in its first element when
    the buffers are tuples). XLA reports nothing when N is 0 (operand 2 not a tuple); unknown
    shapes report nothing either."""
    unlimited = 1 << 62
    buffer, offsets = shapes[0], shapes[2]
    if buffer is None or offsets is None:
        return unlimited
    if buffer.tuple_shapes is None:
        count = len(offsets.tuple_shapes or ())
    else:
        first = offsets.tuple_shapes[0] if offsets.tuple_shapes else None
        count = len(first.tuple_shapes or ()) if first is not None else 0
    return count or unlimited


def in_place_problem(shapes: list[Shape | None]) -> str | None:
    """XLA's ``CheckInplaceCollectivePermute`` messages; None when fine or shapes unknown."""
    if len(shapes) != 4:
        return f"Unexpected number of operands: {len(shapes)}."
    input_buffer, output_buffer, input_offset, output_offset = shapes
    if input_buffer is None or output_buffer is None or input_offset is None or (
            output_offset is None):
        return None
    if not input_buffer.is_tuple and not output_buffer.is_tuple:
        return _offset_problem(input_buffer, input_offset) or _offset_problem(
            output_buffer, output_offset)
    if not (input_buffer.tuple_shapes is not None and output_buffer.tuple_shapes is not None):
        return "Unmatching input buffers and output buffers."
    if len(input_buffer.tuple_shapes) != len(output_buffer.tuple_shapes):
        return "Unmatching input buffers and output buffers."
    if input_offset.tuple_shapes is None or len(input_offset.tuple_shapes) != len(
            input_buffer.tuple_shapes):
        return "Unmatching input buffers and input offset."
    for buffer, offset in zip(input_buffer.tuple_shapes, input_offset.tuple_shapes, strict=True):
        problem = _offset_problem(buffer, offset)
        if problem is not None:
            return problem
    if output_offset.tuple_shapes is None or len(output_offset.tuple_shapes) != len(
            output_buffer.tuple_shapes):
        return "Unmatching output buffers and output offset."
    for buffer, offset in zip(output_buffer.tuple_shapes, output_offset.tuple_shapes,
                              strict=True):
        problem = _offset_problem(buffer, offset)
        if problem is not None:
            return problem
    return None


def _offset_problem(buffer: Shape, offset: Shape) -> str | None:
    """XLA's ``CheckBufferOffset``."""
    if offset.tuple_shapes is None:
        return "Buffer offset is not tuple."
    elements = offset.tuple_shapes
    all_arrays = all(not e.is_tuple for e in elements)
    all_tuples = all(e.is_tuple for e in elements)
    if not all_arrays and not all_tuples:
        return "Buffer offset should either be a tuple of arrays or  a tuple of tuples."
    rank = 0 if buffer.is_tuple else len(buffer.dimensions)
    if all_tuples:
        if any(len(e.tuple_shapes or ()) != rank for e in elements):
            return ("Buffer offset index should have the same number of elements as the "
                    "buffer's rank.")
    elif len(elements) != rank:
        return "Buffer offset index should have the same number of elements as the buffer's rank."
    return None

"""XLA's semantics of the data instructions, evaluated on numpy arrays for many devices at
once: the one evaluator of HLO values, used by the runtime's interpreter (one device) and by
the order layer's control-flow evaluation (every device of a program).

Every array carries a leading *device* axis: ``[n, *dims]`` holds the value on each of ``n``
devices, ``[1, *dims]`` one value that every device holds. ``evaluate(instruction, operands,
replica_ids, partition_ids)`` gives the instruction's value in its shape and element type,
with the device axis of its operands (or of the ids, for ``replica-id``/``partition-id``).

Integer arithmetic is XLA's (``HloEvaluator``, and the CPU and GPU emitters agree): division
truncates toward zero, ``x / 0`` is -1 (all bits set), ``INT_MIN / -1`` is ``INT_MIN``,
``x % 0`` is ``x`` and ``INT_MIN % -1`` is 0; a shift by the bit width or more gives 0 (an
arithmetic right shift: the sign); a negative integer power is 0 unless the base is 1 or -1;
values wrap at their width. A float converted to an integer saturates (NaN is 0); maximum and
minimum take NaN, and -0.0 below 0.0; ``compare`` with ``type=TOTALORDER`` orders floats as
IEEE's totalOrder. (XLA:CPU's code reads only an integer power's low 6 exponent bits, where
XLA's own constant folder and this evaluator raise to the whole exponent:
``tests/hlo/test_evaluate_vs_xla.py`` holds the cases.)

>>> import meshtopo as mt
>>> m = mt.hlo.parse_module('''HloModule m
... ENTRY e {
...   p = s32[] partition-id()
...   z = s32[] constant(0)
...   ROOT q = s32[] divide(p, z)
... }''')
>>> ids = np.arange(3)
>>> p = evaluate(m.entry.instruction("p"), [], ids, ids)
>>> z = evaluate(m.entry.instruction("z"), [], ids, ids)
>>> evaluate(m.entry.instruction("q"), [p, z], ids, ids).tolist()
[-1, -1, -1]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from .._errors import InvalidArgumentError
from ._element_types import element_dtype
from ._int_lists import parse_int_list
from ._literal import literal_array
from ._structure import Instruction

_SLICE = re.compile(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(\d+)\s*)?\]")

Array = np.ndarray


def _divide(a: Array, b: Array) -> Array:
    if a.dtype.kind not in "iu":
        return np.true_divide(a, b)
    zero = b == 0
    safe = np.where(zero, 1, b).astype(a.dtype)
    if a.dtype.kind == "i":
        # INT_MIN / -1 overflows: XLA gives INT_MIN, which the wrapping negation gives too.
        safe = np.where(safe == -1, 1, safe).astype(a.dtype)
        quotient = np.where(b == -1, np.negative(a), _truncating_division(a, safe))
    else:
        quotient = a // safe
    return np.where(zero, np.array(-1).astype(a.dtype), quotient).astype(a.dtype)


def _truncating_division(a: Array, b: Array) -> Array:
    """``a / b`` rounded toward zero (``b`` has no 0 and no -1)."""
    quotient = a // b
    rest = a - quotient * b
    return quotient + ((rest != 0) & ((a < 0) != (b < 0)))


def _remainder(a: Array, b: Array) -> Array:
    if a.dtype.kind not in "iu":
        return np.fmod(a, b)
    zero = b == 0
    safe = np.where(zero | (b == -1), 1, b).astype(a.dtype)
    rest = np.where(b == -1, np.zeros_like(a), np.fmod(a, safe))
    return np.where(zero, a, rest).astype(a.dtype)


def _power(a: Array, b: Array) -> Array:
    if a.dtype.kind not in "iu":
        return np.power(a, b)
    negative = b < 0
    raised = np.power(a, np.where(negative, 0, b).astype(b.dtype))
    if a.dtype.kind == "u":
        return raised
    odd = (b % 2) != 0
    small = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype)
    return np.where(negative, small, raised)


def _bits(a: Array) -> int:
    return 8 * a.dtype.itemsize


def _shift_left(a: Array, b: Array) -> Array:
    width = _bits(a)
    out = np.left_shift(a, np.clip(b, 0, width - 1).astype(a.dtype))
    return np.where((b < 0) | (b >= width), np.zeros_like(a), out)


def _shift_right_logical(a: Array, b: Array) -> Array:
    width = _bits(a)
    unsigned = a.view(f"u{a.dtype.itemsize}")
    out = np.right_shift(unsigned, np.clip(b, 0, width - 1).astype(unsigned.dtype))
    out = np.where((b < 0) | (b >= width), np.zeros_like(unsigned), out)
    return out.view(a.dtype)


def _shift_right_arithmetic(a: Array, b: Array) -> Array:
    signed = a.view(f"i{a.dtype.itemsize}")
    amount = np.clip(np.where(b < 0, _bits(a) - 1, b), 0, _bits(a) - 1).astype(signed.dtype)
    return np.right_shift(signed, amount).view(a.dtype)


def _maximum(a: Array, b: Array) -> Array:
    """XLA's maximum: NaN wins, and -0.0 is below 0.0."""
    if a.dtype.kind != "f":
        return np.maximum(a, b)
    return np.where(a == b, np.where(np.signbit(a), b, a), np.maximum(a, b))


def _minimum(a: Array, b: Array) -> Array:
    """XLA's minimum: NaN wins, and -0.0 is below 0.0."""
    if a.dtype.kind != "f":
        return np.minimum(a, b)
    return np.where(a == b, np.where(np.signbit(a), a, b), np.minimum(a, b))


def _total_order_key(value: Array) -> Array:
    """Integers ordered as IEEE's totalOrder orders the floats: -NaN < -inf < ... < -0.0 <
    0.0 < ... < inf < NaN."""
    bits = value.view(f"i{value.dtype.itemsize}")
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def _converted(value: Array, dtype: np.dtype) -> Array:
    """XLA's convert: a float into an integer type saturates at the type's range and NaN
    becomes 0; anything else as numpy converts it."""
    if value.dtype.kind != "f" or dtype.kind not in "iu":
        return value.astype(dtype)
    info = np.iinfo(dtype)
    clipped = np.clip(np.nan_to_num(value.astype(np.float64), nan=0.0), info.min, info.max)
    out = clipped.astype(dtype)
    # float64 cannot hold the 64-bit bounds: the cast of the clipped bound may overflow.
    out = np.where(clipped >= float(info.max), np.array(info.max, dtype), out)
    return np.where(clipped <= float(info.min), np.array(info.min, dtype), out)


def _logical(on_bool: Callable[..., Array], on_int: Callable[..., Array]
             ) -> Callable[[Array, Array], Array]:
    return lambda a, b: on_bool(a, b) if a.dtype == np.bool_ else on_int(a, b)


UNARY: dict[str, Callable[[Array], Array]] = {
    "abs": np.abs, "negate": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh, "sign": np.sign, "floor": np.floor,
    "ceil": np.ceil, "cosine": np.cos, "sine": np.sin,
    "logistic": lambda x: 1 / (1 + np.exp(-x)),
    "not": lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
}  # fmt: skip
BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _divide,
    "remainder": _remainder, "maximum": _maximum, "minimum": _minimum, "power": _power,
    "and": _logical(np.logical_and, np.bitwise_and), "or": _logical(np.logical_or, np.bitwise_or),
    "xor": _logical(np.logical_xor, np.bitwise_xor), "shift-left": _shift_left,
    "shift-right-logical": _shift_right_logical,
    "shift-right-arithmetic": _shift_right_arithmetic,
}  # fmt: skip
COMPARE: dict[str, Callable[[Array, Array], Array]] = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
    "GT": np.greater, "GE": np.greater_equal,
}
# Opcodes whose value ``evaluate`` computes from its operands' values (and the device ids).
EVALUATED_OPCODES = frozenset({
    *UNARY, *BINARY, "compare", "constant", "iota", "replica-id", "partition-id", "copy",
    "convert", "bitcast", "reshape", "select", "clamp", "slice", "dynamic-slice",
    "concatenate", "transpose", "broadcast",
})  # fmt: skip


def branch_computations(conditional: Instruction) -> list[str]:
    """A ``conditional``'s branch computations in branch order: ``branch_computations``,
    or the true then the false computation of a predicated one."""
    attributes = conditional.attributes
    if "branch_computations" in attributes or "true_computation" not in attributes:
        return list(conditional.called_computations)
    return [attributes[k].lstrip("%") for k in ("true_computation", "false_computation")]


def branch_indices(conditional: Instruction, selector: Array) -> Array:
    """The branch a ``conditional`` runs for each selector value: a predicate picks true
    (0) or false (1); an index out of range picks the last branch, as XLA does."""
    values = np.asarray(selector)
    if "true_computation" in conditional.attributes or values.dtype == np.bool_:
        return np.where(values != 0, 0, 1)
    count = len(conditional.called_computations)
    return np.where((values < 0) | (values >= count), count - 1, values).astype(np.int64)


def evaluate(instruction: Instruction, operands: Sequence[Array], replica_ids: Array,
             partition_ids: Array, where: str = "") -> Array:
    """The value of the data instruction ``instruction`` (an opcode of ``EVALUATED_OPCODES``)
    on devices whose replica and partition ids are ``replica_ids``/``partition_ids`` (1-D),
    from its ``operands`` (each ``[n or 1, *dims]``): ``[n or 1, *shape]`` in the
    instruction's element type. ``InvalidArgumentError`` naming ``where`` (default: the
    instruction) for an opcode outside that set or a type without a dtype."""
    shape = instruction.shape
    here = where or f"{instruction.opcode} {instruction.name} (line {instruction.line})"
    if shape.tuple_shapes is not None:
        raise InvalidArgumentError(f"{here}: expected an array shape, got {shape}")
    dtype = element_dtype(shape.element_type, here)
    dims = shape.dimensions
    with np.errstate(all="ignore"):
        value = _raw(instruction, list(operands), replica_ids, partition_ids, dims, dtype, here)
    value = np.asarray(value)
    return value.astype(dtype, copy=False).reshape((value.shape[0], *dims))


def _raw(instruction: Instruction, operands: list[Array], replica_ids: Array,
         partition_ids: Array, dims: tuple[int, ...], dtype: np.dtype, here: str) -> Array:
    opcode = instruction.opcode
    attributes = instruction.attributes
    if opcode == "constant":
        return literal_array(instruction.operand_text, dtype, dims)[None]
    if opcode == "replica-id":
        return np.asarray(replica_ids).reshape(-1)
    if opcode == "partition-id":
        return np.asarray(partition_ids).reshape(-1)
    if opcode == "iota":
        axis = int(attributes["iota_dimension"])
        shape = [1] * len(dims)
        shape[axis] = dims[axis]
        return np.broadcast_to(np.arange(dims[axis]).reshape(shape), dims)[None]
    if opcode in BINARY or opcode == "compare":
        a, b = (o.astype(operands[0].dtype, copy=False) for o in operands)
        if opcode == "compare":
            if attributes.get("type") == "TOTALORDER" and a.dtype.kind == "f":
                a, b = _total_order_key(a), _total_order_key(b)
            return COMPARE[attributes["direction"]](a, b)
        return BINARY[opcode](a, b)
    if opcode in UNARY:
        return UNARY[opcode](operands[0])
    if opcode == "convert":
        return _converted(operands[0], dtype)
    if opcode in ("copy", "bitcast", "reshape"):
        value = operands[0]
        return value.reshape((value.shape[0], *dims))
    if opcode == "select":
        predicate, on_true, on_false = operands
        predicate = predicate.reshape(predicate.shape + (1,) * (on_true.ndim - predicate.ndim))
        return np.where(predicate, on_true, on_false)
    if opcode == "clamp":
        low, value, high = (_rank_like(o, operands[1]) for o in operands)
        return _minimum(_maximum(value, low), high)
    if opcode == "slice":
        index = tuple(slice(int(a), int(b), int(s or 1))
                      for a, b, s in _SLICE.findall(attributes["slice"]))
        return operands[0][(slice(None), *index)]
    if opcode == "dynamic-slice":
        return _dynamic_slice(operands[0], operands[1:], dims)
    if opcode == "concatenate":
        count = max(o.shape[0] for o in operands)
        parts = [np.broadcast_to(o, (count, *o.shape[1:])) for o in operands]
        return np.concatenate(parts, axis=1 + _dimensions(instruction)[0])
    if opcode == "transpose":
        return np.transpose(operands[0], [0, *(1 + d for d in _dimensions(instruction))])
    if opcode == "broadcast":
        return _broadcast(operands[0], _dimensions(instruction), dims)
    raise InvalidArgumentError(f"{here} is not executed")


def _dimensions(instruction: Instruction) -> list[int]:
    """The instruction's ``dimensions={...}`` (none written: empty)."""
    return parse_int_list(instruction.attributes.get("dimensions", "{}"), instruction.line,
                          instruction.column)


def _rank_like(value: Array, like: Array) -> Array:
    """A scalar operand (``[n]``) shaped to broadcast against ``like`` (``[n, *dims]``)."""
    return value.reshape(value.shape + (1,) * (like.ndim - value.ndim))


def _broadcast(operand: Array, dimensions: list[int], dims: tuple[int, ...]) -> Array:
    """XLA's ``broadcast``: operand dimension i becomes output dimension ``dimensions[i]``."""
    order = np.argsort(dimensions)
    moved = np.transpose(operand, [0, *(1 + int(i) for i in order)])
    shape = [operand.shape[0]] + [1] * len(dims)
    for position, axis in enumerate(sorted(dimensions)):
        shape[1 + axis] = moved.shape[1 + position]
    return np.broadcast_to(moved.reshape(shape), (operand.shape[0], *dims))


def _dynamic_slice(value: Array, starts: list[Array], dims: tuple[int, ...]) -> Array:
    """XLA's ``dynamic-slice``: each start clamped to ``[0, dim - size]``, per device."""
    rank = value.ndim - 1
    count = max([value.shape[0], *(s.shape[0] for s in starts)])
    out = np.broadcast_to(value, (count, *value.shape[1:]))
    for axis in range(rank):
        size, whole = dims[axis], value.shape[1 + axis]
        start = np.clip(np.broadcast_to(starts[axis].reshape(-1), (count,)), 0, whole - size)
        index = start[:, None] + np.arange(size)
        index = index.reshape([count] + [size if a == axis else 1 for a in range(rank)])
        out = np.take_along_axis(out, np.broadcast_to(
            index, [count] + [size if a == axis else out.shape[1 + a] for a in range(rank)]),
            axis=1 + axis)
    return out

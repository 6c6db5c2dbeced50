"""The result shape of an instruction written without one, as XLA's ``ShapeInference`` gives it.

XLA's parser takes ``name = opcode(operands)`` with no shape for the opcodes that can infer
theirs (``_opcodes.SHAPE_REQUIRED`` lists those that cannot) and infers it from the operands'
shapes. meshtopo infers the shapes of the opcodes whose rule needs only the operands' shapes
and a few attributes (elementwise ops, ``compare``, ``select``, ``tuple``,
``get-tuple-element``, ``transpose``, ``call``/``while``/``conditional`` by their
computation, tokens and ids); for the others, and where an operand's shape is itself unknown,
``infer_shape`` gives ``""``: the instruction's shape is not known (``Instruction.shape``
says so) and nothing that needs it is checked.

>>> infer_shape("tuple", ["f32[8]{0}", "s32[]"], {}, lambda name: None)
'(f32[8]{0}, s32[])'
>>> infer_shape("compare", ["f32[4,8]{1,0}", "f32[4,8]{1,0}"], {}, lambda name: None)
'pred[4,8]{1,0}'
>>> infer_shape("transpose", ["f32[4,8]{1,0}"], {"dimensions": "{1,0}"}, lambda name: None)
'f32[8,4]{0,1}'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._errors import HloParseError
from ._name_lists import names_in
from ._shape import Shape
from ._shape_syntax import parse_shape
from ._values import flat_value, parse_int, parse_int_list

# Ops whose result is their operand 0's shape (element type included).
_SAME = frozenset({
    "abs", "acos", "acosh", "add", "add-dependency", "and", "asin", "asinh", "atan2", "atanh",
    "cbrt", "ceil", "copy", "cosh", "cosine", "count-leading-zeros", "divide", "domain", "erf",
    "exponential", "exponential-minus-one", "floor", "log", "log-plus-one", "logistic",
    "maximum", "minimum", "mulhi", "multiply", "negate", "not", "or",
    "popcnt", "power", "remainder", "reverse", "round-nearest-afz", "round-nearest-even",
    "rsqrt", "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine",
    "sinh", "sqrt", "subtract", "tan", "tanh", "xor", "while",
})  # fmt: skip
# Complex element types and their real component's type (``real``, ``imag``, ``abs``).
_COMPONENT = {"c64": "f32", "c128": "f64"}
_COMPLEX = {"f32": "c64", "f64": "c128"}


def infer_shape(opcode: str, operands: Sequence[str | None], attributes: dict[str, str],
                computation_result: Callable[[str], str | None]) -> str:
    """The shape text XLA infers for ``opcode`` on operands of shapes ``operands`` (texts,
    None where unknown) with raw ``attributes``, or ``""`` when meshtopo does not infer it;
    ``computation_result(name)`` is the result shape text of computation ``name``."""
    try:
        shape = _infer(opcode, operands, attributes, computation_result)
    except (HloParseError, IndexError, ValueError):
        return ""
    return "" if shape is None else str(shape)


def _infer(opcode: str, texts: Sequence[str | None], attributes: dict[str, str],
           computation_result: Callable[[str], str | None]) -> Shape | None:
    if opcode in ("after-all",):
        return Shape("token", layout=None)
    if opcode in ("partition-id", "replica-id"):
        return Shape("u32", layout=None)
    if opcode in ("call", "conditional"):
        key = "to_apply" if opcode == "call" else "branch_computations"
        if key not in attributes and opcode == "conditional":
            key = "true_computation"
        names = names_in(key, attributes.get(key, ""), 1, 1)
        result = computation_result(names[0]) if names else None
        return parse_shape(result) if result else None
    if any(text is None or not text for text in texts):
        return None
    shapes = [parse_shape(text) for text in texts]  # type: ignore[arg-type]
    if opcode == "tuple":
        return Shape("tuple", tuple_shapes=tuple(shapes))
    if not shapes:
        return None
    first = shapes[0]
    if opcode == "get-tuple-element":
        index = parse_int(flat_value(attributes.get("index", "")), "index", 1, 1)
        return first.tuple_shapes[index] if first.tuple_shapes is not None else None
    if first.tuple_shapes is not None:
        return first if opcode in ("while", "add-dependency", "domain") else None
    if opcode in ("real", "imag") or (opcode == "abs" and first.element_type in _COMPONENT):
        return _retyped(first, _COMPONENT.get(first.element_type, first.element_type))
    if opcode == "complex":
        return _retyped(first, _COMPLEX.get(first.element_type, first.element_type))
    if opcode in ("compare", "is-finite"):
        return _retyped(first, "pred")
    if opcode in ("select", "clamp"):
        return shapes[1]
    if opcode == "transpose":  # without dimensions, the reader says they are required
        dimensions = attributes.get("dimensions")
        return None if dimensions is None else _transposed(
            first, parse_int_list(dimensions, 1, 1))
    return first if opcode in _SAME else None


def _retyped(shape: Shape, element_type: str) -> Shape:
    return Shape(element_type, shape.dimensions, shape.dynamic, shape.layout)


def _transposed(shape: Shape, permutation: list[int]) -> Shape | None:
    """XLA's ``InferTransposeShape``: dimension i is the operand's ``permutation[i]``; the
    layout keeps the data where it is (``ShapeUtil::PermuteDimensions``)."""
    if sorted(permutation) != list(range(len(shape.dimensions))):
        return None
    layout = shape.layout
    if layout is not None:
        minor_to_major = parse_int_list("{" + layout.partition(":")[0] + "}", 1, 1)
        if len(minor_to_major) != len(permutation):
            return None
        inverse = {old: new for new, old in enumerate(permutation)}
        tail = layout.partition(":")[1:]
        layout = ",".join(str(inverse[d]) for d in minor_to_major) + "".join(tail)
    return Shape(shape.element_type, tuple(shape.dimensions[d] for d in permutation),
                 tuple(shape.dynamic[d] for d in permutation), layout)

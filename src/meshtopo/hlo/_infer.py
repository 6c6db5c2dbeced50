"""The result shape of an instruction written without one, as XLA's ``ShapeInference`` gives it.

XLA's parser takes ``name = opcode(operands)`` with no shape for the opcodes that can infer
theirs (``_opcodes.SHAPE_REQUIRED`` lists those that cannot) and infers it from the operands'
shapes. meshtopo infers the shapes of the opcodes whose rule needs only the operands' shapes
and a few attributes (elementwise ops, ``compare``, ``select``, ``tuple``,
``get-tuple-element``, ``transpose``, ``dot``, ``call``/``while``/``conditional`` by their
computation, tokens and ids); for the others, and where an operand's shape is itself unknown,
``infer_shape`` gives ``""``: the instruction's shape is not known (``Instruction.shape``
says so) and nothing that needs it is checked.

>>> infer_shape("tuple", ["f32[8]{0}", "s32[]"], {}, lambda name: None)
'(f32[8]{0}, s32[])'
>>> infer_shape("compare", ["f32[4,8]{1,0}", "f32[4,8]{1,0}"], {}, lambda name: None)
'pred[4,8]{1,0}'
>>> infer_shape("transpose", ["f32[4,8]{1,0}"], {"dimensions": "{1,0}"}, lambda name: None)
'f32[8,4]{0,1}'

A binary elementwise op's operands must be arrays of one element type whose shapes are the
same, or broadcast: a scalar, or dimensions of 1 (``InferBinaryOpShape``); where they are
not, XLA's parser refuses the instruction, and so does ``infer_shape`` (``InferenceError``,
in XLA's words):

>>> infer_shape("add", ["f32[]", "f32[4,1]"], {}, lambda name: None), infer_shape(
...     "multiply", ["f32[4,1]", "f32[1,8]"], {}, lambda name: None)
('f32[4,1]', 'f32[4,8]')
>>> infer_shape("multiply", ["f32[4]", "f32[8]"], {}, lambda name: None)
Traceback (most recent call last):
...
meshtopo.hlo._infer.InferenceError: Binary op with incompatible shapes: f32[4] and f32[8].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from .._errors import HloParseError
from ._int_lists import parse_int_list
from ._name_lists import names_in
from ._shape import ELEMENT_BITS, Shape
from ._shape_syntax import parse_shape
from ._values import flat_value, parse_int

# Ops whose result is their operand 0's shape (element type included).
_SAME = frozenset({
    "abs", "acos", "acosh", "add-dependency", "asin", "asinh", "atanh", "cbrt", "ceil", "copy",
    "cosh", "cosine", "count-leading-zeros", "domain", "erf", "exponential",
    "exponential-minus-one", "floor", "log", "log-plus-one", "logistic", "negate", "not",
    "popcnt", "reverse", "round-nearest-afz", "round-nearest-even", "rsqrt", "sign", "sine",
    "sinh", "sqrt", "tan", "tanh",
})  # fmt: skip
# Binary ops (``InferBinaryOpShape``): elementwise on any element type; on arithmetic types
# (not pred); on pred or integers (``and``, ``or``, ``xor``).
_BINARY = frozenset({"add", "maximum", "minimum", "multiply", "mulhi", "compare"})
_ARITHMETIC = frozenset({
    "subtract", "atan2", "power", "divide", "remainder", "shift-left", "shift-right-arithmetic",
    "shift-right-logical",
})  # fmt: skip
_LOGICAL = frozenset({"and", "or", "xor"})
_BINARY_OPS = _BINARY | _ARITHMETIC | _LOGICAL
_FLOATING = frozenset(t for t in ELEMENT_BITS if t.startswith(("f", "bf")))
_INTEGRAL = frozenset(t for t in ELEMENT_BITS if t[0] in "su" and t[1:].isdigit())
# Complex element types and their real component's type (``real``, ``imag``, ``abs``).
_COMPONENT = {"c64": "f32", "c128": "f64"}
_COMPLEX = {"f32": "c64", "f64": "c128"}
# A dot's dimension numbers, as its attributes name them (each a braced list, empty if absent).
_DOT_DIMENSIONS = ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims",
                   "rhs_batch_dims")


class ProgramShape(NamedTuple):
    """A computation's program shape (XLA's ``ProgramShape``): its parameters' names and
    shape texts in number order, and its result's shape text."""

    parameters: tuple[tuple[str, str], ...]
    result: str

    @property
    def human_string(self) -> str:
        """As XLA's messages print it: ``(name: shape, ...) -> shape``, without layouts."""
        parameters = ", ".join(f"{name}: {parse_shape(shape).human_string}"
                               for name, shape in self.parameters)
        return f"({parameters}) -> {parse_shape(self.result).human_string}"


class InferenceError(Exception):
    """XLA's ``ShapeInference`` refuses the operands: ``message`` in its words."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def infer_shape(opcode: str, operands: Sequence[str | None], attributes: dict[str, str],
                program: Callable[[str], ProgramShape | None]) -> str:
    """The shape text XLA infers for ``opcode`` on operands of shapes ``operands`` (texts,
    None where unknown) with raw ``attributes``, or ``""`` when meshtopo does not infer it;
    ``program(name)`` is the program shape of computation ``name`` (None: not read). An
    ``InferenceError`` where XLA refuses the operands."""
    try:
        shape = _infer(opcode, operands, attributes, program)
    except (HloParseError, IndexError, ValueError):
        return ""
    return "" if shape is None else str(shape)


def _infer(opcode: str, texts: Sequence[str | None], attributes: dict[str, str],
           program: Callable[[str], ProgramShape | None]) -> Shape | None:
    if opcode in ("after-all",):
        return Shape("token", layout=None)
    if opcode in ("partition-id", "replica-id"):
        return Shape("u32", layout=None)
    if opcode in ("call", "conditional"):
        key = "to_apply" if opcode == "call" else "branch_computations"
        if key not in attributes and opcode == "conditional":
            key = "true_computation"
        names = names_in(key, attributes.get(key), 1, 1)
        called = program(names[0]) if names else None
        return parse_shape(called.result) if called else None
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
    if opcode == "while":
        return _while(first, *(_program(key, attributes, program)
                               for key in ("condition", "body")))
    if opcode == "transpose":  # without dimensions, the reader says they are required
        dimensions = attributes.get("dimensions")
        return None if dimensions is None else _transposed(
            first, parse_int_list(dimensions, 1, 1))
    if opcode == "dot" and len(shapes) >= 2:
        return _dot(first, shapes[1], *(parse_int_list(attributes.get(key, "{}"), 1, 1)
                                        for key in _DOT_DIMENSIONS))
    if opcode in _BINARY_OPS and len(shapes) == 2:
        found = _binary(opcode, first, shapes[1])
        return found if found is None or opcode != "compare" else _retyped(found, "pred")
    if opcode == "select" and len(shapes) == 3:
        return _select(*shapes)
    if first.tuple_shapes is not None:
        return first if opcode in ("add-dependency", "domain") else None
    if opcode in ("real", "imag") or (opcode == "abs" and first.element_type in _COMPONENT):
        return _retyped(first, _COMPONENT.get(first.element_type, first.element_type))
    if opcode == "complex":
        return _retyped(first, _COMPLEX.get(first.element_type, first.element_type))
    if opcode == "is-finite":
        return _retyped(first, "pred")
    if opcode == "clamp":
        return shapes[1]
    return first if opcode in _SAME else None


def _binary(opcode: str, lhs: Shape, rhs: Shape) -> Shape | None:
    """XLA's ``InferBinaryOpShape`` of ``opcode`` on ``lhs`` and ``rhs`` (no broadcast
    dimensions: an instruction written in text has none); None where meshtopo does not infer
    it (dynamic dimensions, floating types of two precisions)."""
    for side, shape in (("lhs", lhs), ("rhs", rhs)):
        if shape.tuple_shapes is not None or shape.is_buffer or shape.element_type in (
                "token", "opaque"):
            raise InferenceError(f"Expected array argument for {side} of binary operation "
                                 f"{opcode}, but got {shape.human_string}.")
    kind = lhs.element_type
    if opcode in _ARITHMETIC and "pred" in (kind, rhs.element_type):
        raise InferenceError("Expected element type in shape to be arithmetic type for "
                             f"operation {opcode}; got PRED.")
    if opcode in _LOGICAL and kind != "pred" and kind not in _INTEGRAL:
        raise InferenceError("Expected pred or integral type in argument to and/or "
                             f"operation; got {kind.upper()}.")
    if kind != rhs.element_type:
        if kind in _FLOATING and rhs.element_type in _FLOATING:
            return None  # the result is the more precise of the two
        raise InferenceError(f"Binary op {opcode} with different element types: "
                             f"{lhs.human_string} and {rhs.human_string}.")
    if opcode == "atan2" and kind not in _FLOATING and kind not in _COMPONENT:
        raise InferenceError("Expected input element type to be floating or complex for "
                             f"atan2 operation; got {kind.upper()}.")
    if any(lhs.dynamic) or any(rhs.dynamic):
        return None
    if lhs.dimensions == rhs.dimensions:
        return lhs
    if len(lhs.dimensions) == len(rhs.dimensions):
        if any(a != b and 1 not in (a, b) for a, b in zip(lhs.dimensions, rhs.dimensions,
                                                          strict=True)):
            raise InferenceError(f"Binary op with incompatible shapes: {lhs.human_string} "
                                 f"and {rhs.human_string}.")
        return Shape(kind, tuple(b if a == 1 else a for a, b in zip(
            lhs.dimensions, rhs.dimensions, strict=True)), (False,) * len(lhs.dimensions))
    smaller, larger = (lhs, rhs) if len(lhs.dimensions) < len(rhs.dimensions) else (rhs, lhs)
    if smaller.dimensions:
        raise InferenceError(f"Shapes must be equal rank, but are {smaller.human_string} and "
                             f"{larger.human_string}")
    return Shape(kind, larger.dimensions, larger.dynamic)


def _select(pred: Shape, on_true: Shape, on_false: Shape) -> Shape | None:
    """XLA's ``InferSelectShape``: ``pred``'s dimensions (``on_true``'s when it is a scalar)
    of the branches' element type; None where meshtopo does not infer it (dynamic
    dimensions, floating types of two precisions)."""
    for what, shape in (("select pred", pred), ("select on-true", on_true),
                        ("select on-false", on_false)):
        if shape.tuple_shapes is not None or shape.is_buffer or shape.element_type in (
                "token", "opaque"):
            raise InferenceError(f"Expected array argument for {what}, but got "
                                 f"{shape.human_string}.")
    if any(pred.dynamic) or any(on_true.dynamic) or any(on_false.dynamic):
        return None
    same_type = on_true.element_type == on_false.element_type or (
        on_true.element_type in _FLOATING and on_false.element_type in _FLOATING)
    if on_true.dimensions != on_false.dimensions or not same_type:
        raise InferenceError(f"Operands to select must be the same shape; got "
                             f"{on_true.human_string} and {on_false.human_string}.")
    if pred.element_type != "pred":
        raise InferenceError("Select's pred operand must have PRED element type; got "
                             f"{pred.human_string}.")
    if pred.dimensions and pred.dimensions != on_true.dimensions:
        raise InferenceError(f"Operands to select and predicate must be the same shape; got "
                             f"{on_true.human_string} and {on_false.human_string} and "
                             f"{pred.human_string}.")
    if on_true.element_type != on_false.element_type:
        return None  # the result is the more precise of the two
    return on_true


def _dot(lhs: Shape, rhs: Shape, lhs_contracting: list[int], rhs_contracting: list[int],
         lhs_batch: list[int], rhs_batch: list[int]) -> Shape | None:
    """XLA's ``InferDotOpShape``: the batch dimensions, then ``lhs``'s and ``rhs``'s other
    non-contracting ones, in order; None where the element types differ (meshtopo does not
    pick the more precise one)."""
    for side, shape in (("lhs", lhs), ("rhs", rhs)):
        if shape.tuple_shapes is not None or shape.is_buffer or shape.element_type in (
                "token", "opaque"):
            raise InferenceError(f"Expected array argument for {side} of dot, but got "
                                 f"{shape.human_string}.")
    sides = ((lhs, lhs_contracting, lhs_batch), (rhs, rhs_contracting, rhs_batch))
    if not all(0 <= d < len(shape.dimensions) for shape, contracting, batch in sides
               for d in (*contracting, *batch)):
        raise InferenceError("A dimension number is out of range in Dot.")
    if any(len({*contracting, *batch}) != len(contracting) + len(batch)
           for _, contracting, batch in sides):
        raise InferenceError("A dimension number is not unique in Dot.")
    cannot = (f"Cannot infer shape for dot operation: {lhs.human_string} <dot> "
              f"{rhs.human_string}.")
    if len(lhs_contracting) != len(rhs_contracting):
        raise InferenceError(f"{cannot} Must specify the same number of contracting "
                             "dimensions for lhs and rhs.")
    if not _compatible_sizes(lhs, rhs, lhs_contracting, rhs_contracting):
        raise InferenceError(f"{cannot} Contracting dimension sizes are not compatible.")
    if len(lhs_batch) != len(rhs_batch):
        raise InferenceError(f"{cannot} Must the same number of batch dimensions for lhs "
                             "and rhs.")
    if not _compatible_sizes(lhs, rhs, lhs_batch, rhs_batch):
        raise InferenceError(f"{cannot} Batch dimension sizes are not compatible.")
    if lhs.element_type != rhs.element_type:
        return None
    kept = [(lhs, d) for d in lhs_batch] + [
        (shape, d) for shape, contracting, batch in sides
        for d in range(len(shape.dimensions)) if d not in contracting and d not in batch]
    return Shape(lhs.element_type, tuple(shape.dimensions[d] for shape, d in kept),
                 tuple(shape.dynamic[d] for shape, d in kept))


def _compatible_sizes(lhs: Shape, rhs: Shape, lhs_dimensions: list[int],
                      rhs_dimensions: list[int]) -> bool:
    """Whether each pair of dimensions has one size, or one of them is unbounded (``?``)."""
    return all(a == b or -1 in (a, b) for a, b in zip(
        (lhs.dimensions[d] for d in lhs_dimensions),
        (rhs.dimensions[d] for d in rhs_dimensions), strict=True))


def _program(key: str, attributes: dict[str, str],
             program: Callable[[str], ProgramShape | None]) -> ProgramShape | None:
    """The program shape of the computation attribute ``key`` names, if read."""
    names = names_in(key, attributes.get(key), 1, 1)
    return program(names[0]) if names else None


def _while(init: Shape, condition: ProgramShape | None, body: ProgramShape | None
           ) -> Shape | None:
    """XLA's ``InferWhileShape``: ``init``, where the condition and the body take one
    parameter of its shape, the body returns it and the condition a ``pred[]``."""
    if condition is None or body is None:
        return None
    for what, called in (("Condition", condition), ("Body", body)):
        if len(called.parameters) != 1:
            raise InferenceError(f"{what} must take 1 arguments; got "
                                 f"{len(called.parameters)}.")
    got = (f"Condition: {condition.human_string}; body: {body.human_string}; init: "
           f"{init.human_string}.")
    if not parse_shape(condition.result).compatible(Shape("pred")):
        raise InferenceError(f"Condition must return a boolean; got {got}.")
    result = parse_shape(body.result)
    if not (result.compatible(parse_shape(condition.parameters[0][1]))
            and result.compatible(parse_shape(body.parameters[0][1]))
            and result.compatible(init)):
        raise InferenceError("The parameter of condition and body, the result of the body, "
                             f"and init must all have the same shape; got {got}.")
    return init


def _retyped(shape: Shape, element_type: str) -> Shape:
    return Shape(element_type, shape.dimensions, shape.dynamic, shape.layout)


def _transposed(shape: Shape, permutation: list[int]) -> Shape | None:
    """XLA's ``InferTransposeShape``: dimension i is the operand's ``permutation[i]``; the
    layout keeps the data where it is (``ShapeUtil::PermuteDimensions``)."""
    if shape.tuple_shapes is not None or shape.is_buffer or shape.element_type in (
            "token", "opaque"):
        raise InferenceError(f"Expected array argument for transpose, but got "
                             f"{shape.human_string}.")
    if sorted(permutation) != list(range(len(shape.dimensions))):
        raise InferenceError(f"Transpose dimensions [{','.join(map(str, permutation))}] are "
                             "not a permutation of the operand dimensions (operand shape is "
                             f"{shape.human_string}).")
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

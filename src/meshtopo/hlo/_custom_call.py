"""A custom call's ``api_version`` and ``operand_layout_constraints`` as XLA's parser reads
them: the values token by token, then, once the instruction is read, what XLA checks of them
against the instruction (``CustomCallApiVersion`` ``API_VERSION_UNSPECIFIED`` is no version
to call with; one constraint per operand, each compatible with its operand's shape).

>>> check_api_version("api_version_typed_ffi", 1, 1)
>>> check_api_version("API_VERSION_2", 4, 20)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 4:20: expects custom-call API version but sees: API_VERSION_2, error: Unknown API version
>>> custom_call_error({"operand_layout_constraints": "{f32[2]{0}}"}, ["f32[3]"])
'Operand layout constraint shape f32[2]{0} for operand 0 is not compatible with operand shape f32[3]{0}'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .._errors import HloParseError
from ._shape import Shape
from ._shape_syntax import parse_shape, read_shape
from ._syntax import skip
from ._values import flat_value, relocate

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# ``CustomCallApiVersion``'s names (XLA reads them in any case).
_VERSIONS = frozenset({
    "API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
    "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI",
})  # fmt: skip


def check_api_version(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (an ``api_version`` written at ``line``/``column``) unless it is a
    word naming one of XLA's custom-call API versions."""
    at = skip(value, 0)
    word = _WORD.fullmatch(value.strip())
    if word is None:
        raise HloParseError("expects custom-call API version", line, column + at)
    if word.group().upper() not in _VERSIONS:
        raise HloParseError(f"expects custom-call API version but sees: {word.group()}, "
                            "error: Unknown API version", line, column + at)


def check_layout_constraints(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (``operand_layout_constraints`` written at ``line``/``column``)
    unless it is XLA's list of shapes, ``{shape, ...}``."""
    text = flat_value(value)
    try:
        _shapes_end(text)
    except HloParseError as error:
        raise relocate(HloParseError(error.message, line, column + error.column),
                       value, line, column) from None


def _shapes_end(text: str) -> list[str]:
    """The shapes of the list ``text``; an ``HloParseError`` at line 1, the column counted
    from 0, where XLA refuses it."""
    at = skip(text, 0)
    if not text.startswith("{", at):
        raise HloParseError("expects a list starting with kLbrace", 1, at)
    at = skip(text, at + 1)
    shapes: list[str] = []
    if text.startswith("}", at):
        return shapes
    recorded: list[tuple[str, int]] = []  # XLA reads on past these, and reports them first
    while True:
        end, refused = read_shape(text, at, len(text), signature=True, recorded=recorded)
        if refused is not None:
            message, offset = recorded[0] if recorded else refused
            raise HloParseError(message, 1, offset)
        shapes.append(text[at:end])
        at = skip(text, end)
        if not text.startswith(",", at):
            break
        at = skip(text, at + 1)
    if not text.startswith("}", at):
        raise HloParseError("expects a list to end with kRbrace", 1, at)
    return shapes


def custom_call_error(attributes: Mapping[str, str], operands: Sequence[str | None]
                      ) -> str | None:
    """XLA's refusal, at the token after the instruction, of a custom call with these
    ``attributes`` (values as written) and operand shape texts (None: not known), or None."""
    version = attributes.get("api_version")
    if version is not None and version.strip().upper() == "API_VERSION_UNSPECIFIED":
        return f"Invalid API version: {version.strip()}"
    constraints = attributes.get("operand_layout_constraints")
    if constraints is None:
        return None
    shapes = _shapes_end(flat_value(constraints))
    if len(shapes) != len(operands):
        return f"Expected {len(operands)} operand layout constraints, {len(shapes)} given"
    for number, (written, operand) in enumerate(zip(shapes, operands, strict=True)):
        if operand is None:
            continue
        constraint, found = parse_shape(written), parse_shape(operand)
        if not constraint.compatible(found):
            return (f"Operand layout constraint shape {_with_layout(constraint)} for operand "
                    f"{number} is not compatible with operand shape {_with_layout(found)}")
    return None


def _with_layout(shape: Shape) -> str:
    """``shape`` as XLA prints it with its layout (the default one where none is written)."""
    if shape.tuple_shapes is not None:
        return "(" + ", ".join(_with_layout(s) for s in shape.tuple_shapes) + ")"
    if shape.layout is not None or shape.element_type == "token":
        return str(shape)
    default = ",".join(str(d) for d in reversed(range(len(shape.dimensions))))
    return str(Shape(shape.element_type, shape.dimensions, shape.dynamic, default,
                     is_buffer=shape.is_buffer))

"""What XLA's parser checks of an instruction once it has read it whole, refused at the token
after the instruction (XLA's ``TokenError`` there): the operand rules the opcode table names
(``_opcodes.OPERAND_RULES``), an infeed's tuple shape, a permute's ``source_target_pairs``
that are pairs, a concatenate's or sort's one dimension, and a custom call's version and
operand layout constraints (``_custom_call``).

>>> instruction_error("reduce", "f32[]", ["f32[8]", "f32[]", "f32[8]"], {})
'expects an even number of operands, but has 3 operands'
>>> instruction_error("dynamic-slice", "f32[2]", ["f32[8]", "s32[]"], {}) is None
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence

from .._errors import HloParseError
from ._custom_call import custom_call_error
from ._int_lists import parse_int_list, parse_int_lists
from ._opcodes import TABLE
from ._shape_syntax import parse_shape
from ._values import flat_value

# The attributes whose values XLA checks against the rest of the instruction, by opcode.
_CHECKED_KEYS = {
    "concatenate": ("dimensions",),
    "sort": ("dimensions",),
    "custom-call": ("api_version", "operand_layout_constraints"),
    "collective-permute": ("source_target_pairs",),
    "collective-permute-start": ("source_target_pairs",),
}
# The opcodes with any check here.
CHECKED_OPCODES = frozenset(
    {op for op, row in TABLE.items() if row.operand_rule is not None} | {"infeed"}
    | set(_CHECKED_KEYS))


def reads_attributes(opcode: str) -> bool:
    """True when the checks of an ``opcode`` instruction read its attributes."""
    return opcode in _CHECKED_KEYS


def checked_after(opcode: str, attribute_keys: Collection[str]) -> bool:
    """True when an ``opcode`` instruction with these attributes has checks here (the reader's
    fast path leaves those to ``instruction_error``'s caller)."""
    keys = _CHECKED_KEYS.get(opcode)
    if keys is not None:
        return any(key in attribute_keys for key in keys)
    return opcode in CHECKED_OPCODES


def instruction_error(opcode: str, shape: str, operands: Sequence[str | None],
                      attributes: Mapping[str, str]) -> str | None:
    """XLA's refusal of an ``opcode`` instruction of result ``shape`` whose operands have
    the shape texts ``operands`` (None: not known) and with ``attributes`` (values as
    written), or None."""
    row = TABLE.get(opcode)
    if row is not None and row.operand_rule is not None:
        found = _RULES[row.operand_rule](operands)
        if found is not None:
            return found
    if opcode == "infeed" and shape and parse_shape(shape).tuple_shapes is None:
        return "infeed must have a non-empty tuple shape"
    if opcode == "custom-call":
        return custom_call_error(attributes, operands)
    if (pairs := attributes.get("source_target_pairs")) is not None:
        return _pairs_error(pairs)
    if opcode in ("concatenate", "sort") and (dimensions := attributes.get("dimensions")):
        return _one_dimension_error(opcode, dimensions)
    return None


@functools.lru_cache(maxsize=256)
def _one_dimension_error(opcode: str, value: str) -> str | None:
    """XLA's refusal (without words; the words are ours) of a concatenate or sort whose
    ``dimensions`` is no list of one dimension (a value that is no list is its reader's)."""
    try:
        count = len(parse_int_list(flat_value(value), 1, 1))
    except HloParseError:
        return None
    if count != 1:
        return f"{opcode} expects exactly one dimension, got {count}"
    return None


@functools.lru_cache(maxsize=256)
def _pairs_error(value: str) -> str | None:
    """XLA's refusal of ``source_target_pairs`` entries that are not pairs (a value that is
    no list of lists is its reader's to refuse); read once per distinct text (a module
    repeats a few pair lists over many permutes)."""
    try:
        lists = parse_int_lists(flat_value(value), 1, 1)
    except HloParseError:
        return None
    if any(len(item) != 2 for item in lists):
        return "expects 'source_target_pairs=' to be a list of pairs"
    return None


def _rank(shape: str | None) -> int | None:
    return None if shape is None else len(parse_shape(shape).dimensions)


def _even(operands: Sequence[str | None]) -> str | None:
    if len(operands) % 2:
        return f"expects an even number of operands, but has {len(operands)} operands"
    return None


def _odd(operands: Sequence[str | None]) -> str | None:
    if not len(operands) % 2:
        return f"expects an odd number of operands, but has {len(operands)} operands"
    return None


def _reshape(operands: Sequence[str | None]) -> str | None:
    return None if operands else "DynamicReshape requires at least one operand."


def _indexed(fixed: int, least: str) -> Callable[[Sequence[str | None]], str | None]:
    """The rule of an op with ``fixed`` leading operands, then one scalar start index per
    dimension of the first, or one index vector (XLA's older form)."""

    def rule(operands: Sequence[str | None]) -> str | None:
        if len(operands) < fixed:
            return least
        rank = _rank(operands[0])
        if rank is None or len(operands) == fixed + rank:
            return None
        if len(operands) == fixed + 1 and _rank(operands[fixed]) in (1, None):
            return None
        return "Wrong number of operands."

    return rule


_RULES: dict[str, Callable[[Sequence[str | None]], str | None]] = {
    "even": _even, "odd": _odd, "reshape": _reshape,
    "slice": _indexed(1, "Expected at least one operand."),
    "update": _indexed(2, "Expected at least two operands."),
}

"""The opcode table checked entry by entry against jaxlib's parser: the opcodes
(``_opcodes.OPCODES``, every ``HloOpcode`` of jaxlib's), which must write their shape
(``SHAPE_REQUIRED``), how many operands each takes (``OPERAND_COUNTS``) and which attributes
(``_allowed``)."""

from __future__ import annotations

import re

import pytest

from meshtopo.hlo._allowed import allowed_attributes
from meshtopo.hlo._opcodes import OPCODES, OPERAND_COUNTS, SHAPE_REQUIRED

pytestmark = pytest.mark.jax

_HEAD = """HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
%c (q: f32[8]) -> f32[8] {
  ROOT %q = f32[8]{0} parameter(0)
}
ENTRY %e (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
"""
# jaxlib's HloOpcode names that are not the opcode's text in CamelCase.
_IRREGULAR = {
    "kClz": "count-leading-zeros", "kCos": "cosine", "kExp": "exponential",
    "kExpm1": "exponential-minus-one", "kLog1p": "log-plus-one",
    "kOptimizationBarrier": "opt-barrier", "kPopulationCount": "popcnt", "kSin": "sine",
    "kTopK": "topk",
}  # fmt: skip
# Opcodes whose shape inference aborts jaxlib's process on these operands (a CHECK failure).
_ABORTS = frozenset({"dot", "ragged-dot", "scaled-dot"})
# What the operand list of an opcode that reads no operand names holds.
_OPERAND_TEXT = {"parameter": "1", "constant": "{0,0,0,0,0,0,0,0}", "iota": ""}
# Where XLA checks an opcode's operands or shape before its attributes: instructions that
# come before, the operands and the shape that pass those checks.
_START = "  %s = ((f32[8]{0}), f32[8]{0}) async-start(%p), calls=%c\n"
_BEFORE = {
    "async-start": ("", "%p", "((f32[8]{0}), f32[8]{0})"),
    "async-update": (_START, "%s", "((f32[8]{0}), f32[8]{0})"),
    "async-done": (_START, "%s", "f32[8]{0}"),
    "conditional": ("  %i = s32[] constant(0)\n", "%i, %p", "f32[8]{0}"),
}
_PREDICATES = {"pred": "false", "s32": "0"}  # a conditional's attributes follow its type


def _xla_error(instruction: str, before: str = "") -> str | None:
    """XLA's first error on a module whose entry's root is ``instruction`` (after the
    instructions ``before``), or None."""
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    try:
        hlo_module_from_text(f"{_HEAD}{before}  ROOT %r = {instruction}\n}}\n")
    except Exception as error:  # jaxlib raises its own status error
        found = re.search(r"error: ([^\n]*)", str(error))
        return found.group(1) if found else str(error)
    return None


def test_opcodes_are_xlas() -> None:
    from jaxlib._hlo import HloOpcode

    names = {_IRREGULAR.get(k) or re.sub(r"(?<!^)(?=[A-Z])", "-", k[1:]).lower()
             for k in HloOpcode.__members__}
    assert names == OPCODES


@pytest.mark.parametrize("opcode", sorted(OPCODES - _ABORTS))
def test_which_opcodes_must_write_their_shape(opcode: str) -> None:
    error = _xla_error(f"{opcode}(%p)") or ""
    assert error.startswith("cannot infer shape for opcode") == (opcode in SHAPE_REQUIRED)


@pytest.mark.parametrize("opcode", sorted(OPERAND_COUNTS))
def test_operand_counts(opcode: str) -> None:
    count = OPERAND_COUNTS[opcode]
    operands = ", ".join(["%p"] * (count + 1))
    assert _xla_error(f"f32[8]{{0}} {opcode}({operands})") == (
        f"expects {count} operands, but has {count + 1} operands")


@pytest.mark.parametrize("opcode", sorted(OPCODES))
def test_attributes_each_opcode_takes(opcode: str) -> None:
    operands = _OPERAND_TEXT.get(opcode, ", ".join(["%p"] * OPERAND_COUNTS.get(opcode, 1)))
    shape = "(f32[8]{0})" if opcode == "tuple" else "f32[8]{0}"  # f32[8] aborts jaxlib there
    before, operands, shape = _BEFORE.get(opcode, ("", operands, shape))
    error = _xla_error(f"{shape} {opcode}({operands}), zz=1", before) or ""
    found = re.fullmatch(r'unexpected attribute "zz"\. Allowed attributes: (.*)', error)
    assert found is not None, error
    predicate = "s32" if opcode == "conditional" else None  # as _BEFORE writes it
    assert set(found.group(1).split(", ")) == allowed_attributes(opcode, (), predicate)


@pytest.mark.parametrize("predicate", sorted(_PREDICATES))
def test_conditional_attributes_follow_the_predicate(predicate: str) -> None:
    before = f"  %i = {predicate}[] constant({_PREDICATES[predicate]})\n"
    error = _xla_error("f32[8]{0} conditional(%i, %p, %p), zz=1", before) or ""
    found = re.fullmatch(r'unexpected attribute "zz"\. Allowed attributes: (.*)', error)
    assert found is not None, error
    assert set(found.group(1).split(", ")) == allowed_attributes("conditional", (), predicate)

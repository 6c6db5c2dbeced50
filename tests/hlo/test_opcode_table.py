"""The opcode table (``_opcodes.TABLE``) checked entry by entry against jaxlib's parser: the
opcodes (every ``HloOpcode`` of jaxlib's), which must write their shape, how many operands
each takes (one more or one fewer is refused; the rules its count follows otherwise; any
number where it says so), which attributes it takes (any other is refused) and which of those
it requires (each left out is refused, and no other), and that meshtopo refuses each in
XLA's words."""

from __future__ import annotations

import re

import pytest

import meshtopo as mt
from meshtopo.hlo._allowed import allowed_attributes
from meshtopo.hlo._opcodes import (
    OPCODES,
    OPERAND_COUNTS,
    OPERAND_RULES,
    REQUIRED_ATTRIBUTES,
    SHAPE_REQUIRED,
    TABLE,
)

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
    "dynamic-reshape": ("  %i = s32[] constant(8)\n", "%p, %i", "f32[8]{0}"),
}
_PREDICATES = {"pred": "false", "s32": "0"}  # a conditional's attributes follow its type


def _text(instruction: str, before: str) -> str:
    return f"{_HEAD}{before}  ROOT %r = {instruction}\n}}\n"


def _xla_error(instruction: str, before: str = "") -> str | None:
    """XLA's first error on a module whose entry's root is ``instruction`` (after the
    instructions ``before``), or None."""
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    try:
        hlo_module_from_text(_text(instruction, before))
    except Exception as error:  # jaxlib raises its own status error
        found = re.search(r"error: ([^\n]*)", str(error))
        return found.group(1) if found else str(error)
    return None


def _both_refuse(instruction: str, before: str = "") -> str:
    """XLA's error on the module of ``_xla_error``, once meshtopo is seen to refuse it in the
    same words."""
    error = _xla_error(instruction, before)
    assert error is not None, instruction
    with pytest.raises(mt.HloParseError) as info:
        mt.hlo.parse_module(_text(instruction, before))
    assert info.value.message == error
    return error


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
    """One operand more, and one fewer, than the table says is refused."""
    count = OPERAND_COUNTS[opcode]
    for written in (count + 1, count - 1) if count else (count + 1,):
        operands = ", ".join(["%p"] * written)
        assert _both_refuse(f"f32[8]{{0}} {opcode}({operands})") == (
            f"expects {count} operands, but has {written} operands")


# Operand lists that break each rule, and one that keeps it, per opcode with a rule.
_BROKEN_RULES = {
    "reduce": (["%p"], ["%p", "%z"]), "reduce-window": (["%p"], ["%p", "%z"]),
    "scatter": (["%p", "%i"], ["%p", "%i", "%p"]),
    "dynamic-reshape": ([], None),  # any other count that breaks it aborts jaxlib
    "dynamic-slice": (["%p", "%j", "%j"], ["%p", "%j"]),
    "dynamic-update-slice": (["%p"], ["%p", "%p", "%j"]),
}
_RULE_OPERANDS = "  %z = f32[] constant(0)\n  %i = s32[8]{0} parameter(1)\n  %j = s32[] constant(0)\n"


@pytest.mark.parametrize("opcode", sorted(op for op, row in TABLE.items() if row.operand_rule))
def test_operand_rules(opcode: str) -> None:
    """The operand rule the table names: broken, refused in XLA's words; kept, no count
    error."""
    broken, kept = _BROKEN_RULES[opcode]
    assert TABLE[opcode].operand_rule in OPERAND_RULES
    given = "".join(f", {key}={_SAMPLES[key]}" for key in REQUIRED_ATTRIBUTES.get(opcode, ()))
    head = _HEAD.replace("(p: f32[8])", "(p: f32[8], i: s32[8])")
    instruction = f"f32[8]{{0}} {opcode}({', '.join(broken)}){given}"
    text = f"{head}{_RULE_OPERANDS}  ROOT %r = {instruction}\n}}\n"
    from jaxlib._hlo import hlo_module_from_text

    with pytest.raises(Exception, match="operand") as xla:
        hlo_module_from_text(text)
    with pytest.raises(mt.HloParseError) as ours:
        mt.hlo.parse_module(text)
    assert f"error: {ours.value.message}" in str(xla.value)
    if kept is not None:
        text = text.replace(f"({', '.join(broken)})", f"({', '.join(kept)})")
        try:
            hlo_module_from_text(text)
        except Exception as error:  # refused for another reason: not its operand count
            assert not re.search(_COUNT_ERROR, str(error)), str(error)


# XLA's words for an operand count it refuses.
_COUNT_ERROR = r"operands?[.,]|at least|number of operands"
# Opcodes of any operand count whose operands XLA checks elsewhere (async wrappers: one async
# op; a conditional: by its branches) or whose wrong operands abort jaxlib (dot, tuple,
# rng-bit-generator); a scan's count is its computation's parameter count.
_COUNT_CHECKED_ELSEWHERE = frozenset({
    "async-start", "async-update", "async-done", "conditional", "dot", "tuple",
    "rng-bit-generator", "scan", "constant", "parameter", "iota",
})  # fmt: skip


@pytest.mark.parametrize("opcode", sorted(
    op for op, row in TABLE.items() if row.operands is None and row.operand_rule is None
    and op not in _COUNT_CHECKED_ELSEWHERE))
def test_any_operand_count(opcode: str) -> None:
    """An opcode the table lets take any number of operands takes one or two."""
    given = "".join(f", {key}={_SAMPLES[key]}" for key in REQUIRED_ATTRIBUTES.get(opcode, ()))
    for written in (1, 2):
        error = _xla_error(f"f32[8]{{0}} {opcode}({', '.join(['%p'] * written)}){given}") or ""
        assert not re.search(_COUNT_ERROR, error), error


@pytest.mark.parametrize("opcode", sorted(OPCODES))
def test_attributes_each_opcode_takes(opcode: str) -> None:
    operands = _OPERAND_TEXT.get(opcode, ", ".join(["%p"] * OPERAND_COUNTS.get(opcode, 1)))
    shape = "(f32[8]{0})" if opcode == "tuple" else "f32[8]{0}"  # f32[8] aborts jaxlib there
    before, operands, shape = _BEFORE.get(opcode, ("", operands, shape))
    error = _both_refuse(f"{shape} {opcode}({operands}), zz=1", before)
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


# Values XLA reads for the required attributes, to ask for the next one.
_SAMPLES = {
    "dimensions": "{0}", "to_apply": "%add", "calls": "%c", "index": "0", "direction": "EQ",
    "slice": "{[0:8]}", "dim_labels": "b0f_0io->b0f", "kind": "kLoop", "condition": "%c",
    "body": "%c", "iota_dimension": "0", "distribution": "rng_uniform",
    "custom_call_target": '"x"', "padding": "0_0", "k": "1", "fft_type": "FFT",
    "fft_length": "{8}", "exponent_bits": "8", "mantissa_bits": "23", "epsilon": "0.001",
    "feature_index": "0", "dynamic_slice_sizes": "{8}", "select": "%c", "scatter": "%add",
    "collapsed_slice_dims": "{0}", "index_vector_dim": "1", "offset_dims": "{}",
    "slice_sizes": "{1}", "start_index_map": "{0}", "update_window_dims": "{}",
    "inserted_window_dims": "{0}", "scatter_dims_to_operand_dims": "{0}",
    "source_target_pairs": "{{0,1}}", "algorithm": "rng_default",
    "branch_computations": "{%c}", "num_carries": "1",
}  # fmt: skip


@pytest.mark.parametrize("opcode", sorted(REQUIRED_ATTRIBUTES))
def test_required_attributes(opcode: str) -> None:
    """XLA asks for each attribute the table requires, in the table's order (as long as it
    reads the values given to those before), in the words meshtopo uses, and, given them all,
    for no other."""
    operands = _OPERAND_TEXT.get(opcode, ", ".join(["%p"] * OPERAND_COUNTS.get(opcode, 1)))
    before, operands, shape = _BEFORE.get(opcode, ("", operands, "f32[8]{0}"))
    given = ""
    for key in REQUIRED_ATTRIBUTES.get(opcode, ()):
        error = _both_refuse(f"{shape} {opcode}({operands}){given}", before)
        assert error == f"attribute {key} is expected but not seen", (key, error)
        if key not in _SAMPLES:
            return
        given += f", {key}={_SAMPLES[key]}"
    error = _xla_error(f"{shape} {opcode}({operands}){given}", before) or ""
    assert "is expected but not seen" not in error, error

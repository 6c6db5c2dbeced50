"""The opcode table checked entry by entry against jaxlib's parser: the opcodes
(``_opcodes.OPCODES``, every ``HloOpcode`` of jaxlib's), which must write their shape
(``SHAPE_REQUIRED``), how many operands each takes (``OPERAND_COUNTS``), which attributes
(``_allowed``) and which of those it requires (``REQUIRED_ATTRIBUTES``)."""

from __future__ import annotations

import re

import pytest

from meshtopo.hlo._allowed import allowed_attributes
from meshtopo.hlo._opcodes import OPCODES, OPERAND_COUNTS, REQUIRED_ATTRIBUTES, SHAPE_REQUIRED

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
    """XLA asks for each required attribute in the table's order, as long as it reads the
    values given to those before."""
    operands = _OPERAND_TEXT.get(opcode, ", ".join(["%p"] * OPERAND_COUNTS.get(opcode, 1)))
    before, operands, shape = _BEFORE.get(opcode, ("", operands, "f32[8]{0}"))
    given = ""
    for key in REQUIRED_ATTRIBUTES[opcode]:
        error = _xla_error(f"{shape} {opcode}({operands}){given}", before)
        assert error == f"attribute {key} is expected but not seen", (key, error)
        if key not in _SAMPLES:
            return
        given += f", {key}={_SAMPLES[key]}"

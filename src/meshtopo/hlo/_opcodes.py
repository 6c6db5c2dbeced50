"""XLA's HLO opcodes as its parser reads them (``hlo_parser.cc``; ``HloOpcode``), one table.

Each row of ``_TABLE`` is one opcode: its name, the number of operands it takes (``*``: any
number; a word names the rule XLA checks once the instruction is read, ``OPERAND_RULES``),
``shape`` when an instruction must write its result shape (XLA's ``CanInferShape`` is
false: "cannot infer shape for opcode: X"; ``-``: it may leave it out), then the attributes it
takes besides the ones every instruction takes (``COMMON``), those it requires marked ``!`` in
the order XLA asks for them ("attribute X is expected but not seen"). A row may go on over
lines that start with white space. A ``conditional`` takes ``true_computation`` and
``false_computation`` or ``branch_computations`` by its predicate's type (``_allowed``).

Read off jaxlib 0.10.2's parser, and checked against it entry by entry by
``tests/hlo/test_opcode_table.py``. An instruction with any other opcode is refused, as XLA
refuses it, so a misspelt collective (``all-duce``) is an error at its opcode rather than an
instruction that no collective reader looks at.
"""

from __future__ import annotations

from typing import NamedTuple

# The attributes every instruction takes.
COMMON = frozenset({
    "backend_config", "control-predecessors", "frontend_attributes", "metadata", "origin",
    "parameter_replication", "sharding", "statistics",
})  # fmt: skip

_TABLE = """
abs                      1       -
acos                     1       -     result_accuracy
acosh                    1       -     result_accuracy
add                      2       -
add-dependency           2       -
after-all                *       -
all-gather               *       shape !dimensions channel_id constrain_layout replica_groups
                                       use_global_device_ids
all-gather-done          1       shape
all-gather-start         *       shape !dimensions channel_id constrain_layout replica_groups
                                       use_global_device_ids
all-reduce               *       shape !to_apply channel_id constrain_layout mode replica_groups
                                       use_global_device_ids
all-reduce-done          1       shape
all-reduce-start         *       shape !to_apply channel_id constrain_layout mode replica_groups
                                       use_global_device_ids
all-to-all               *       shape channel_id constrain_layout dimensions replica_groups
and                      2       -
asin                     1       -     result_accuracy
asinh                    1       -     result_accuracy
async-done               *       shape async_execution_thread calls
async-start              *       shape !calls async_execution_thread output_to_operand_aliasing
async-update             *       shape async_execution_thread calls
atan2                    2       -
atanh                    1       -     result_accuracy
batch-norm-grad          5       -     !epsilon !feature_index
batch-norm-inference     5       -     !epsilon !feature_index
batch-norm-training      3       -     !epsilon !feature_index
bitcast                  1       shape
bitcast-convert          1       shape
broadcast                1       -     !dimensions
call                     *       -     !to_apply is_composite
cbrt                     1       -     result_accuracy
ceil                     1       -
cholesky                 1       -     lower
clamp                    3       -
collective-broadcast     *       shape channel_id replica_groups
collective-permute       *       shape !source_target_pairs channel_id slice_sizes
collective-permute-done  1       shape
collective-permute-start *       shape !source_target_pairs channel_id slice_sizes
compare                  2       -     !direction type
complex                  2       -
concatenate              *       -     !dimensions
conditional              *       -
constant                 *       shape
convert                  1       shape
convolution              2       -     !dim_labels batch_group_count convolution_kind
                                       feature_group_count operand_precision sparsity_config window
copy                     1       -
copy-done                1       shape
copy-start               1       shape cross_program_prefetch_index
cosh                     1       -     result_accuracy
cosine                   1       -     result_accuracy
count-leading-zeros      1       -
custom-call              *       shape !custom_call_target api_version batch_group_count
                                       called_computations custom_call_has_side_effect dim_labels
                                       feature_group_count literal operand_layout_constraints
                                       operand_precision output_to_operand_aliasing padding_type
                                       schedule to_apply window
divide                   2       -
domain                   1       -     !domain
dot                      *       -     algorithm lhs_batch_dims lhs_contracting_dims
                                       operand_precision rhs_batch_dims rhs_contracting_dims
dynamic-reshape          reshape shape
dynamic-slice            slice   shape !dynamic_slice_sizes
dynamic-update-slice     update  shape
erf                      1       -     result_accuracy
exponential              1       -     result_accuracy
exponential-minus-one    1       -     result_accuracy
fft                      1       -     !fft_length !fft_type
floor                    1       -
fusion                   *       shape !calls !kind output_to_operand_aliasing
gather                   2       -     !collapsed_slice_dims !index_vector_dim !offset_dims
                                       !slice_sizes !start_index_map indices_are_sorted
                                       operand_batching_dims start_indices_batching_dims
get-dimension-size       1       -     !dimensions
get-tuple-element        1       -     !index
imag                     1       -
infeed                   1       shape infeed_config
iota                     0       shape !iota_dimension
is-finite                1       -
log                      1       -     result_accuracy
log-plus-one             1       -     result_accuracy
logistic                 1       -     result_accuracy
map                      *       -     !to_apply dimensions
maximum                  2       -
minimum                  2       -
mulhi                    2       -
multiply                 2       -
negate                   1       -
not                      1       -
opt-barrier              1       -
or                       2       -
outfeed                  2       shape outfeed_config outfeed_shape
pad                      2       -     !padding
parameter                *       shape
partition-id             0       -
popcnt                   1       -
power                    2       -
ragged-all-to-all        *       shape channel_id dimensions replica_groups
ragged-dot               3       -     lhs_batch_dims lhs_contracting_dims lhs_ragged_dims
                                       operand_precision rhs_batch_dims rhs_contracting_dims
                                       rhs_group_dims
real                     1       -
recv                     1       shape channel_id is_host_transfer
recv-done                1       shape channel_id is_host_transfer
reduce                   even    -     !dimensions !to_apply
reduce-precision         1       shape !exponent_bits !mantissa_bits
reduce-scatter           *       shape !dimensions !to_apply channel_id constrain_layout mode
                                       replica_groups use_global_device_ids
reduce-window            even    -     !to_apply window
remainder                2       -
replica-id               0       -
reshape                  1       shape inferred_dimension
reverse                  1       -     !dimensions
rng                      *       shape !distribution
rng-bit-generator        *       shape !algorithm
rng-get-and-update-state 0       shape !delta
round-nearest-afz        1       -
round-nearest-even       1       -
rsqrt                    1       -     result_accuracy
scaled-dot               4       -     algorithm lhs_batch_dims lhs_contracting_dims
                                       operand_precision rhs_batch_dims rhs_contracting_dims
scan                     *       -     !dimensions !num_carries !to_apply is_associative is_reverse
scatter                  odd     -     !index_vector_dim !inserted_window_dims
                                       !scatter_dims_to_operand_dims !to_apply !update_window_dims
                                       indices_are_sorted input_batching_dims
                                       scatter_indices_batching_dims unique_indices
select                   3       -
select-and-scatter       3       -     !scatter !select window
send                     2       shape channel_id is_host_transfer
send-done                1       shape channel_id is_host_transfer
set-dimension-size       2       -     !dimensions
shift-left               2       -
shift-right-arithmetic   2       -
shift-right-logical      2       -
sign                     1       -
sine                     1       -     result_accuracy
sinh                     1       -     result_accuracy
slice                    1       shape !slice
sort                     *       -     !dimensions !to_apply is_stable
sqrt                     1       -     result_accuracy
stochastic-convert       2       shape
subtract                 2       -
tan                      1       -     result_accuracy
tanh                     1       -     result_accuracy
topk                     1       -     !k largest
transpose                1       -     !dimensions
triangular-solve         2       -     left_side lower transpose_a unit_diagonal
tuple                    *       -
while                    1       -     !body !condition
xor                      2       -
"""


# The operand rules XLA checks at the token after an instruction, by the words the table
# writes (``_operands.operand_error`` applies them).
OPERAND_RULES = {
    "even": "an even number of operands (reduce's inputs and their initial values)",
    "odd": "an odd number of operands (scatter's inputs, indices and updates)",
    "reshape": "at least one operand (a dynamic reshape's input, then its sizes)",
    "slice": "the operand, then one start index per dimension (or one index vector)",
    "update": "the operand and the update, then one start index per dimension (or one "
              "index vector)",
}


class Opcode(NamedTuple):
    """One opcode of XLA's: ``operands`` is the count it takes (None: any), ``operand_rule``
    the rule its count follows otherwise (a key of ``OPERAND_RULES``), ``shape_required``
    whether an instruction must write its shape, ``required`` the attributes it requires (in
    XLA's order) and ``attributes`` every attribute it takes, ``COMMON`` included."""

    name: str
    operands: int | None
    operand_rule: str | None
    shape_required: bool
    required: tuple[str, ...]
    attributes: frozenset[str]


def _read(table: str) -> dict[str, Opcode]:
    rows: list[list[str]] = []
    for line in table.splitlines():
        if line[:1].isspace():
            rows[-1] += line.split()
        elif line:
            rows.append(line.split())
    found = {}
    for name, operands, shape, *attributes in rows:
        rule = operands if operands in OPERAND_RULES else None
        found[name] = Opcode(
            name, int(operands) if operands.isdigit() else None, rule, shape == "shape",
            tuple(a[1:] for a in attributes if a.startswith("!")),
            COMMON | {a.lstrip("!") for a in attributes})
    return found


TABLE = _read(_TABLE)
OPCODES = frozenset(TABLE)
SHAPE_REQUIRED = frozenset(op.name for op in TABLE.values() if op.shape_required)
OPERAND_COUNTS = {op.name: op.operands for op in TABLE.values() if op.operands is not None}
REQUIRED_ATTRIBUTES = {op.name: op.required for op in TABLE.values() if op.required}

ASYNC_KINDS = ("async-start", "async-update", "async-done")


def async_form(opcode: str) -> tuple[str, str] | None:
    """``(async opcode, wrapped opcode)`` of XLA's shorthand for an async wrapper:
    ``<op>-start``, ``<op>-update`` and ``<op>-done`` for an ``<op>`` whose form is no opcode
    of XLA's (``reduce-scatter-start`` is ``async-start`` wrapping a reduce-scatter, but
    ``all-reduce-start`` is an opcode of its own). None for any other word, and for the
    words of an op whose ``<op>-done`` is an opcode of its own (``recv-start``,
    ``all-reduce-update``: XLA knows no such opcode); the wrapped opcode is returned as
    written (XLA refuses it when it is none of its opcodes).

    >>> async_form("reduce-scatter-start"), async_form("all-reduce-start")
    (('async-start', 'reduce-scatter'), None)
    >>> async_form("send-start"), async_form("copy-update")
    (None, None)
    """
    if opcode in OPCODES:
        return None
    for kind in ASYNC_KINDS:
        suffix = kind[5:]  # "-start", "-update", "-done"
        if opcode.endswith(suffix) and len(opcode) > len(suffix):
            wrapped = opcode[:-len(suffix)]
            return None if wrapped + "-done" in OPCODES else (kind, wrapped)
    return None


def required_attributes(opcode: str) -> tuple[str, ...]:
    """The attributes XLA requires of an ``opcode`` instruction (its shorthand ``<op>-start``:
    ``<op>``'s)."""
    found = REQUIRED_ATTRIBUTES.get(opcode)
    if found is None and (form := async_form(opcode)) is not None:
        return REQUIRED_ATTRIBUTES.get(form[1], ()) if form[0] == "async-start" else ()
    return found or ()

"""The attributes XLA's parser allows on each opcode; any other is refused.

Read from XLA's own refusals (``unexpected attribute "x". Allowed attributes: ...``, the
parser inside jaxlib 0.10.2, asked once for each opcode): every instruction takes ``COMMON``,
and each opcode its own fields. ``-done`` forms of all-reduce, all-gather and
collective-permute take no ``channel_id`` (the start carries it); send/recv and their ``-done``
forms do. A ``conditional`` takes ``true_computation`` and ``false_computation`` when its
predicate is a ``pred``, else ``branch_computations``, as XLA's parser decides.
"""

from __future__ import annotations

from collections.abc import Collection

from ._opcodes import async_form

COMMON = frozenset({
    "backend_config", "control-predecessors", "frontend_attributes", "metadata", "origin",
    "parameter_replication", "sharding", "statistics",
})  # fmt: skip
_OWN: dict[str, tuple[str, ...]] = {
    "acos": ("result_accuracy",),
    "acosh": ("result_accuracy",),
    "all-gather": (
        "channel_id", "constrain_layout", "dimensions", "replica_groups",
        "use_global_device_ids",
    ),
    "all-gather-start": (
        "channel_id", "constrain_layout", "dimensions", "replica_groups",
        "use_global_device_ids",
    ),
    "all-reduce": (
        "channel_id", "constrain_layout", "mode", "replica_groups", "to_apply",
        "use_global_device_ids",
    ),
    "all-reduce-start": (
        "channel_id", "constrain_layout", "mode", "replica_groups", "to_apply",
        "use_global_device_ids",
    ),
    "all-to-all": ("channel_id", "constrain_layout", "dimensions", "replica_groups"),
    "asin": ("result_accuracy",),
    "asinh": ("result_accuracy",),
    "async-done": ("async_execution_thread", "calls"),
    "async-start": ("async_execution_thread", "calls", "output_to_operand_aliasing"),
    "async-update": ("async_execution_thread", "calls"),
    "atanh": ("result_accuracy",),
    "batch-norm-grad": ("epsilon", "feature_index"),
    "batch-norm-inference": ("epsilon", "feature_index"),
    "batch-norm-training": ("epsilon", "feature_index"),
    "broadcast": ("dimensions",),
    "call": ("is_composite", "to_apply"),
    "cbrt": ("result_accuracy",),
    "cholesky": ("lower",),
    "collective-broadcast": ("channel_id", "replica_groups"),
    "collective-permute": ("channel_id", "slice_sizes", "source_target_pairs"),
    "collective-permute-start": ("channel_id", "slice_sizes", "source_target_pairs"),
    "compare": ("direction", "type"),
    "concatenate": ("dimensions",),
    "convolution": (
        "batch_group_count", "convolution_kind", "dim_labels", "feature_group_count",
        "operand_precision", "sparsity_config", "window",
    ),
    "copy-start": ("cross_program_prefetch_index",),
    "cosh": ("result_accuracy",),
    "cosine": ("result_accuracy",),
    "custom-call": (
        "api_version", "batch_group_count", "called_computations",
        "custom_call_has_side_effect", "custom_call_target", "dim_labels",
        "feature_group_count", "literal", "operand_layout_constraints", "operand_precision",
        "output_to_operand_aliasing", "padding_type", "schedule", "to_apply", "window",
    ),
    "domain": ("domain",),
    "dot": (
        "algorithm", "lhs_batch_dims", "lhs_contracting_dims", "operand_precision",
        "rhs_batch_dims", "rhs_contracting_dims",
    ),
    "dynamic-slice": ("dynamic_slice_sizes",),
    "erf": ("result_accuracy",),
    "exponential": ("result_accuracy",),
    "exponential-minus-one": ("result_accuracy",),
    "fft": ("fft_length", "fft_type"),
    "fusion": ("calls", "kind", "output_to_operand_aliasing"),
    "gather": (
        "collapsed_slice_dims", "index_vector_dim", "indices_are_sorted", "offset_dims",
        "operand_batching_dims", "slice_sizes", "start_index_map",
        "start_indices_batching_dims",
    ),
    "get-dimension-size": ("dimensions",),
    "get-tuple-element": ("index",),
    "infeed": ("infeed_config",),
    "iota": ("iota_dimension",),
    "log": ("result_accuracy",),
    "log-plus-one": ("result_accuracy",),
    "logistic": ("result_accuracy",),
    "map": ("dimensions", "to_apply"),
    "outfeed": ("outfeed_config", "outfeed_shape"),
    "pad": ("padding",),
    "ragged-all-to-all": ("channel_id", "dimensions", "replica_groups"),
    "ragged-dot": (
        "lhs_batch_dims", "lhs_contracting_dims", "lhs_ragged_dims", "operand_precision",
        "rhs_batch_dims", "rhs_contracting_dims", "rhs_group_dims",
    ),
    "recv": ("channel_id", "is_host_transfer"),
    "recv-done": ("channel_id", "is_host_transfer"),
    "reduce": ("dimensions", "to_apply"),
    "reduce-precision": ("exponent_bits", "mantissa_bits"),
    "reduce-scatter": (
        "channel_id", "constrain_layout", "dimensions", "mode", "replica_groups",
        "to_apply", "use_global_device_ids",
    ),
    "reduce-window": ("to_apply", "window"),
    "reshape": ("inferred_dimension",),
    "reverse": ("dimensions",),
    "rng": ("distribution",),
    "rng-bit-generator": ("algorithm",),
    "rng-get-and-update-state": ("delta",),
    "rsqrt": ("result_accuracy",),
    "scaled-dot": (
        "algorithm", "lhs_batch_dims", "lhs_contracting_dims", "operand_precision",
        "rhs_batch_dims", "rhs_contracting_dims",
    ),
    "scan": ("dimensions", "is_associative", "is_reverse", "num_carries", "to_apply"),
    "scatter": (
        "index_vector_dim", "indices_are_sorted", "input_batching_dims",
        "inserted_window_dims", "scatter_dims_to_operand_dims",
        "scatter_indices_batching_dims", "to_apply", "unique_indices", "update_window_dims",
    ),
    "select-and-scatter": ("scatter", "select", "window"),
    "send": ("channel_id", "is_host_transfer"),
    "send-done": ("channel_id", "is_host_transfer"),
    "set-dimension-size": ("dimensions",),
    "sine": ("result_accuracy",),
    "sinh": ("result_accuracy",),
    "slice": ("slice",),
    "sort": ("dimensions", "is_stable", "to_apply"),
    "sqrt": ("result_accuracy",),
    "tan": ("result_accuracy",),
    "tanh": ("result_accuracy",),
    "topk": ("k", "largest"),
    "transpose": ("dimensions",),
    "triangular-solve": ("left_side", "lower", "transpose_a", "unit_diagonal"),
    "while": ("body", "condition"),
}  # fmt: skip
# Opcodes that take the common attributes alone.
_COMMON_ONLY = frozenset({
    "abs", "add", "add-dependency", "after-all", "all-gather-done", "all-reduce-done", "and",
    "atan2", "bitcast", "bitcast-convert", "ceil", "clamp", "collective-permute-done",
    "complex", "constant", "convert", "copy", "copy-done", "count-leading-zeros", "divide",
    "dynamic-reshape", "dynamic-update-slice", "floor", "imag", "is-finite", "maximum",
    "minimum", "mulhi", "multiply", "negate", "not", "opt-barrier", "or", "parameter",
    "partition-id", "popcnt", "power", "real", "remainder", "replica-id", "round-nearest-afz",
    "round-nearest-even", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "stochastic-convert", "subtract", "tuple", "xor",
})  # fmt: skip
ALLOWED: dict[str, frozenset[str]] = {
    **{op: COMMON | set(fields) for op, fields in _OWN.items()},
    **dict.fromkeys(_COMMON_ONLY, COMMON),
}
_BRANCHES = COMMON | {"branch_computations"}
_TRUE_FALSE = COMMON | {"true_computation", "false_computation"}


_ASYNC_OWN = frozenset({"async_execution_thread", "output_to_operand_aliasing"})


def allowed_attributes(opcode: str, keys: Collection[str],
                       predicate: str | None = None) -> frozenset[str]:
    """The attributes an ``opcode`` instruction whose attributes are ``keys`` may have (an
    async shorthand ``<op>-start`` takes its op's and the async start's own but ``calls``;
    ``<op>-update`` and ``<op>-done`` take ``async_execution_thread``). A conditional takes
    ``true_computation`` and ``false_computation`` when its first operand's element type
    (``predicate``) is ``pred``, else ``branch_computations``, as XLA decides; by ``keys``
    when the type is not known."""
    if opcode == "conditional":
        if predicate:
            return _TRUE_FALSE if predicate == "pred" else _BRANCHES
        return _BRANCHES if "branch_computations" in keys else _TRUE_FALSE
    found = ALLOWED.get(opcode)
    if found is None and (form := async_form(opcode)) is not None:
        if form[0] != "async-start":
            return COMMON | {"async_execution_thread"}
        return allowed_attributes(form[1], keys) | _ASYNC_OWN
    return ALLOWED[opcode]


def unexpected_attribute(opcode: str, key: str, keys: Collection[str] = (),
                         predicate: str | None = None) -> str | None:
    """XLA's message when ``key`` is not an attribute of ``opcode`` (one of XLA's opcodes,
    with attributes ``keys`` and, for a conditional, ``predicate``), else None."""
    allowed = allowed_attributes(opcode, keys, predicate)
    if key in allowed:
        return None
    return f'unexpected attribute "{key}". Allowed attributes: {", ".join(sorted(allowed))}'

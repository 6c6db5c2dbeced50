"""The attribute values XLA's parser reads by a grammar of their own, each checked by its one
reader (refused in XLA's words at XLA's token), by attribute name: an instruction's
(``VALUE_CHECKS``) and the module header's (``HEADER_CHECKS``). Each check takes the value
as written and the line and column where it starts, and returns the error XLA's parser
records while reading on (reported if the text is refused later) or None."""

from __future__ import annotations

from collections.abc import Callable

from .._errors import HloParseError
from ._accuracy import check_result_accuracy
from ._aliasing import check_aliasing, check_buffer_donor, check_output_operand_aliasing
from ._bool_lists import check_bool_list_or_bool, check_parameter_replication
from ._computation_layout import check_computation_layout
from ._custom_call import check_api_version, check_layout_constraints
from ._domain import check_domain
from ._enum_values import NAME_CHECKS, OPCODE_NAME_CHECKS
from ._frontend_attributes import check_frontend_attributes
from ._int_lists import check_int_list, check_int_lists
from ._literal import check_shaped_literal
from ._original_value import check_original_value
from ._scalar_values import (
    BOOL_ATTRIBUTES,
    FLOAT_ATTRIBUTES,
    INT32_ATTRIBUTES,
    INT64_ATTRIBUTES,
    STRING_ATTRIBUTES,
    check_bool,
    check_dim_labels,
    check_float,
    check_int32,
    check_int64,
    check_string,
)
from ._shape_syntax import check_shape
from ._sharding_reader import check_sharding
from ._slice_ranges import check_slice_ranges
from ._sparsity_config import check_sparsity_config
from ._statistics import check_statistics
from ._value_starts import VALUE_STARTS
from ._window import check_padding, check_window

Check = Callable[[str, int, int], HloParseError | None]

# The attributes XLA reads as a braced integer list (kBracedInt64List) whatever their opcode
# (``slice_sizes`` is one on a gather and a list of lists on a collective-permute).
INT_LIST_ATTRIBUTES = frozenset({
    "collapsed_slice_dims", "dimensions", "dynamic_slice_sizes", "fft_length",
    "input_batching_dims", "inserted_window_dims", "lhs_batch_dims", "lhs_contracting_dims",
    "lhs_ragged_dims", "offset_dims", "operand_batching_dims", "rhs_batch_dims",
    "rhs_contracting_dims", "rhs_group_dims", "scatter_dims_to_operand_dims",
    "scatter_indices_batching_dims", "start_index_map", "start_indices_batching_dims",
    "update_window_dims",
})  # fmt: skip

VALUE_CHECKS: dict[str, Check] = {
    "api_version": check_api_version,
    "dim_labels": check_dim_labels,
    "domain": check_domain,
    "frontend_attributes": check_frontend_attributes,
    "operand_layout_constraints": check_layout_constraints,
    "origin": check_original_value,
    "outfeed_shape": check_shape,
    "output_to_operand_aliasing": check_output_operand_aliasing,
    "padding": check_padding,
    "parameter_replication": check_parameter_replication,
    "result_accuracy": check_result_accuracy,
    "sharding": check_sharding,
    "slice": check_slice_ranges,
    "literal": check_shaped_literal,
    "source_target_pairs": check_int_lists,
    "sparsity_config": check_sparsity_config,
    "statistics": check_statistics,
    "window": check_window,
    **dict.fromkeys(INT_LIST_ATTRIBUTES, check_int_list),
    **dict.fromkeys(INT64_ATTRIBUTES, check_int64),
    **dict.fromkeys(INT32_ATTRIBUTES, check_int32),
    **dict.fromkeys(FLOAT_ATTRIBUTES, check_float),
    **dict.fromkeys(BOOL_ATTRIBUTES, check_bool),
    **dict.fromkeys(STRING_ATTRIBUTES, check_string),
    **NAME_CHECKS,
    **VALUE_STARTS,
}

# Attributes read by a grammar that depends on the opcode: ``slice_sizes`` is a gather's
# integer list and a collective-permute's list of lists (its in-place form).
OPCODE_VALUE_CHECKS: dict[tuple[str, str], Check] = {
    ("gather", "slice_sizes"): check_int_list,
    ("collective-permute", "slice_sizes"): check_int_lists,
    ("collective-permute-start", "slice_sizes"): check_int_lists,
    **OPCODE_NAME_CHECKS,
}


def value_check(opcode: str, key: str) -> Check | None:
    """The check of attribute ``key``'s value on an ``opcode`` instruction, if it has one."""
    return OPCODE_VALUE_CHECKS.get((opcode, key)) or VALUE_CHECKS.get(key)


HEADER_CHECKS: dict[str, Check] = {
    "alias_passthrough_params": check_bool,
    **{key: check_bool_list_or_bool(key) for key in (
        "allow_spmd_sharding_propagation_to_parameters",
        "allow_spmd_sharding_propagation_to_output")},
    "is_scheduled": check_bool,
    "num_partitions": check_int64,
    "replica_count": check_int64,
    "buffer_donor": check_buffer_donor,
    "entry_computation_layout": check_computation_layout,
    "frontend_attributes": check_frontend_attributes,
    "input_output_alias": check_aliasing,
}

"""The opcodes XLA's HLO parser knows (``HLO_OPCODE_LIST``, ``xla/hlo/ir/hlo_opcode.h``).

Read off jaxlib 0.10.2's parser: every name it does not answer with "Unknown opcode". An
instruction with any other opcode is refused, as XLA refuses it, so a misspelt collective
(``all-duce``) is an error at its opcode rather than an instruction that no collective reader
looks at.
"""

from __future__ import annotations

OPCODES = frozenset({
    "abs", "acos", "acosh", "add", "add-dependency", "after-all", "all-gather",
    "all-gather-done", "all-gather-start", "all-reduce", "all-reduce-done", "all-reduce-start",
    "all-to-all", "and", "asin", "asinh", "async-done", "async-start", "async-update", "atan2",
    "atanh", "batch-norm-grad", "batch-norm-inference", "batch-norm-training", "bitcast",
    "bitcast-convert", "broadcast", "call", "cbrt", "ceil", "cholesky", "clamp",
    "collective-broadcast", "collective-permute", "collective-permute-done",
    "collective-permute-start", "compare", "complex", "concatenate", "conditional", "constant",
    "convert", "convolution", "copy", "copy-done", "copy-start", "cosh", "cosine",
    "count-leading-zeros", "custom-call", "divide", "domain", "dot", "dynamic-reshape",
    "dynamic-slice", "dynamic-update-slice", "erf", "exponential", "exponential-minus-one",
    "fft", "floor", "fusion", "gather", "get-dimension-size", "get-tuple-element", "imag",
    "infeed", "iota", "is-finite", "log", "log-plus-one", "logistic", "map", "maximum",
    "minimum", "mulhi", "multiply", "negate", "not", "opt-barrier", "or", "outfeed", "pad",
    "parameter", "partition-id", "popcnt", "power", "ragged-all-to-all", "ragged-dot", "real",
    "recv", "recv-done", "reduce", "reduce-precision", "reduce-scatter", "reduce-window",
    "remainder", "replica-id", "reshape", "reverse", "rng", "rng-bit-generator",
    "rng-get-and-update-state", "round-nearest-afz", "round-nearest-even", "rsqrt",
    "scaled-dot", "scan", "scatter", "select", "select-and-scatter", "send", "send-done",
    "set-dimension-size", "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign",
    "sine", "sinh", "slice", "sort", "sqrt", "stochastic-convert", "subtract", "tan", "tanh",
    "topk", "transpose", "triangular-solve", "tuple", "while", "xor",
})  # fmt: skip

# The opcodes whose instructions must write their result shape (XLA's ``CanInferShape`` is
# false: "cannot infer shape for opcode: X"); read off jaxlib 0.10.2. Any other may leave it out.
SHAPE_REQUIRED = frozenset({
    "all-gather", "all-gather-done", "all-gather-start", "all-reduce", "all-reduce-done",
    "all-reduce-start", "all-to-all", "async-done", "async-start", "async-update", "bitcast",
    "bitcast-convert", "collective-broadcast", "collective-permute", "collective-permute-done",
    "collective-permute-start", "constant", "convert", "copy-done", "copy-start", "custom-call",
    "dynamic-reshape", "dynamic-slice", "dynamic-update-slice", "fusion", "infeed", "iota",
    "outfeed", "parameter", "ragged-all-to-all", "recv", "recv-done", "reduce-precision",
    "reduce-scatter", "reshape", "rng", "rng-bit-generator", "rng-get-and-update-state", "send",
    "send-done", "slice", "stochastic-convert",
})  # fmt: skip

# The operand count XLA's parser requires of each opcode that has a fixed one (read off
# jaxlib 0.10.2's refusals, "expects N operands, but has M operands"); others take any.
OPERAND_COUNTS: dict[str, int] = {
    "abs": 1, "acos": 1, "acosh": 1, "add": 2, "add-dependency": 2, "all-gather-done": 1,
    "all-reduce-done": 1, "and": 2, "asin": 1, "asinh": 1, "atan2": 2, "atanh": 1,
    "batch-norm-grad": 5, "batch-norm-inference": 5, "batch-norm-training": 3, "bitcast": 1,
    "bitcast-convert": 1, "broadcast": 1, "cbrt": 1, "ceil": 1, "cholesky": 1, "clamp": 3,
    "collective-permute-done": 1, "compare": 2, "complex": 2, "convert": 1, "convolution":
    2, "copy": 1, "copy-done": 1, "copy-start": 1, "cosh": 1, "cosine": 1,
    "count-leading-zeros": 1, "divide": 2, "domain": 1, "erf": 1, "exponential": 1,
    "exponential-minus-one": 1, "fft": 1, "floor": 1, "gather": 2, "get-dimension-size": 1,
    "get-tuple-element": 1, "imag": 1, "infeed": 1, "is-finite": 1, "log": 1,
    "log-plus-one": 1, "logistic": 1, "maximum": 2, "minimum": 2, "mulhi": 2, "multiply": 2,
    "negate": 1, "not": 1, "opt-barrier": 1, "or": 2, "outfeed": 2, "pad": 2,
    "partition-id": 0, "popcnt": 1, "power": 2, "ragged-dot": 3, "real": 1, "recv": 1,
    "recv-done": 1, "reduce-precision": 1, "remainder": 2, "replica-id": 0, "reshape": 1,
    "reverse": 1, "rng-get-and-update-state": 0, "round-nearest-afz": 1,
    "round-nearest-even": 1, "rsqrt": 1, "scaled-dot": 4, "select": 3, "select-and-scatter":
    3, "send": 2, "send-done": 1, "set-dimension-size": 2, "shift-left": 2,
    "shift-right-arithmetic": 2, "shift-right-logical": 2, "sign": 1, "sine": 1, "sinh": 1,
    "slice": 1, "sqrt": 1, "stochastic-convert": 2, "subtract": 2, "tan": 1, "tanh": 1,
    "topk": 1, "transpose": 1, "triangular-solve": 2, "while": 1, "xor": 2,
}  # fmt: skip

# The attributes XLA's parser requires of an opcode ("attribute X is expected but not seen"),
# in the order it asks for them (a broadcast of a scalar needs no dimensions); read off
# jaxlib 0.10.2.
REQUIRED_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "all-gather": ("dimensions",), "all-gather-start": ("dimensions",),
    "all-reduce": ("to_apply",), "all-reduce-start": ("to_apply",), "async-start": ("calls",),
    "batch-norm-grad": ("epsilon", "feature_index"),
    "batch-norm-inference": ("epsilon", "feature_index"),
    "batch-norm-training": ("epsilon", "feature_index"), "broadcast": ("dimensions",),
    "call": ("to_apply",), "collective-permute": ("source_target_pairs",),
    "collective-permute-start": ("source_target_pairs",), "compare": ("direction",),
    "concatenate": ("dimensions",), "convolution": ("dim_labels",),
    "custom-call": ("custom_call_target",), "domain": ("domain",),
    "dynamic-slice": ("dynamic_slice_sizes",), "fft": ("fft_length", "fft_type"),
    "fusion": ("calls", "kind"),
    "gather": ("collapsed_slice_dims", "index_vector_dim", "offset_dims", "slice_sizes",
               "start_index_map"),
    "get-dimension-size": ("dimensions",), "get-tuple-element": ("index",),
    "iota": ("iota_dimension",), "map": ("to_apply",), "pad": ("padding",),
    "reduce": ("dimensions", "to_apply"), "reduce-precision": ("exponent_bits", "mantissa_bits"),
    "reduce-scatter": ("dimensions", "to_apply"), "reduce-window": ("to_apply",),
    "reverse": ("dimensions",), "rng": ("distribution",), "rng-bit-generator": ("algorithm",),
    "rng-get-and-update-state": ("delta",), "scan": ("dimensions", "num_carries", "to_apply"),
    "scatter": ("index_vector_dim", "inserted_window_dims", "scatter_dims_to_operand_dims",
                "to_apply", "update_window_dims"),
    "select-and-scatter": ("scatter", "select"), "set-dimension-size": ("dimensions",),
    "slice": ("slice",), "sort": ("dimensions", "to_apply"), "topk": ("k",),
    "transpose": ("dimensions",), "while": ("body", "condition"),
}  # fmt: skip

ASYNC_KINDS = ("async-start", "async-update", "async-done")


def async_form(opcode: str) -> tuple[str, str] | None:
    """``(async opcode, wrapped opcode)`` of XLA's shorthand for an async wrapper:
    ``<op>-start``, ``<op>-update`` and ``<op>-done`` for an ``<op>`` whose form is no opcode
    of XLA's (``reduce-scatter-start`` is ``async-start`` wrapping a reduce-scatter, but
    ``all-reduce-start`` is an opcode of its own). None for any other word; the wrapped
    opcode is returned as written (XLA refuses it when it is none of its opcodes).

    >>> async_form("reduce-scatter-start"), async_form("all-reduce-start")
    (('async-start', 'reduce-scatter'), None)
    """
    if opcode in OPCODES:
        return None
    for kind in ASYNC_KINDS:
        suffix = kind[5:]  # "-start", "-update", "-done"
        if opcode.endswith(suffix) and len(opcode) > len(suffix):
            return kind, opcode[:-len(suffix)]
    return None


def required_attributes(opcode: str) -> tuple[str, ...]:
    """The attributes XLA requires of an ``opcode`` instruction (its shorthand ``<op>-start``:
    ``<op>``'s)."""
    found = REQUIRED_ATTRIBUTES.get(opcode)
    if found is None and (form := async_form(opcode)) is not None:
        return REQUIRED_ATTRIBUTES.get(form[1], ()) if form[0] == "async-start" else ()
    return found or ()

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

"""HLO element types as numpy dtypes, constant literals, and the values a program computes.

A value is a numpy array (scalars are 0-d arrays) or a tuple of values. ``pred`` is
``bool``; types numpy has no dtype for (``bf16``, the ``f8`` family, sub-byte integers) are
refused by ``dtype_of`` with the instruction that needs them.

>>> literal_array("{ {1, 2}, {3, -4} }", np.dtype(np.int32), (2, 2)).tolist()
[[1, 2], [3, -4]]
>>> literal_array("-inf", np.dtype(np.float32), ()).item()
-inf
"""

from __future__ import annotations

import re

import numpy as np

from .._errors import InvalidArgumentError
from ..hlo import Shape

Value = np.ndarray | tuple["Value", ...]

DTYPES: dict[str, np.dtype] = {
    name: np.dtype(t) for name, t in {
        "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
        "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
        "f16": np.float16, "f32": np.float32, "f64": np.float64,
        "c64": np.complex64, "c128": np.complex128,
    }.items()
}  # fmt: skip

_TOKEN = re.compile(r"[^\s,{}]+")


def dtype_of(shape: Shape, where: str) -> np.dtype:
    """The numpy dtype of an array shape; ``InvalidArgumentError`` naming ``where`` for a
    tuple, a dynamic shape or an element type without a numpy dtype."""
    if shape.tuple_shapes is not None:
        raise InvalidArgumentError(f"{where}: expected an array shape, got {shape}")
    if shape.is_dynamic:
        raise InvalidArgumentError(f"{where}: dynamic shape {shape} is not executed")
    if shape.element_type not in DTYPES:
        raise InvalidArgumentError(
            f"{where}: element type {shape.element_type} is not executed (supported: "
            f"{', '.join(DTYPES)})"
        )
    return DTYPES[shape.element_type]


def check_shape(shape: Shape, where: str) -> None:
    """Raise unless every leaf of ``shape`` is an executable array (tokens are refused)."""
    for leaf in shape.leaves():
        dtype_of(leaf, where)


def zeros_of(shape: Shape) -> Value:
    """A value of ``shape`` filled with zeros (tuples element by element)."""
    if shape.tuple_shapes is not None:
        return tuple(zeros_of(s) for s in shape.tuple_shapes)
    return np.zeros(shape.dimensions, dtype=DTYPES[shape.element_type])


def literal_array(text: str, dtype: np.dtype, dimensions: tuple[int, ...]) -> np.ndarray:
    """The array a ``constant(...)`` literal writes, of ``dimensions`` and ``dtype``."""
    tokens = _TOKEN.findall(text)
    if dtype == np.bool_:
        values: list[object] = [t in ("true", "1") for t in tokens]
    elif dtype.kind in "iu":
        values = [int(t) for t in tokens]
    else:
        values = [complex(t) if dtype.kind == "c" else float(t) for t in tokens]
    size = int(np.prod(dimensions, dtype=np.int64))
    if len(values) != size:
        raise InvalidArgumentError(
            f"literal {text!r} has {len(values)} values, its shape {list(dimensions)} needs {size}"
        )
    return np.array(values).astype(dtype).reshape(dimensions)

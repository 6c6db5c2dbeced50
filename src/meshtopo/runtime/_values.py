"""The values a program computes: a numpy array (scalars are 0-d arrays) or a tuple of
values; a token is the empty tuple. Element types map to dtypes as ``hlo._element_types``
says (sub-byte types are refused by ``dtype_of`` with the instruction that needs them); this
module adds what carrying values between processes and files needs.
"""

from __future__ import annotations

import numpy as np

from .._errors import InvalidArgumentError
from ..hlo import Shape, element_dtype, is_low_precision

Value = np.ndarray | tuple["Value", ...]


def dtype_of(shape: Shape, where: str) -> np.dtype:
    """The numpy dtype of an array shape; ``InvalidArgumentError`` naming ``where`` for a
    tuple, a dynamic shape or an element type without a numpy dtype."""
    if shape.tuple_shapes is not None:
        raise InvalidArgumentError(f"{where}: expected an array shape, got {shape}")
    if shape.is_dynamic:
        raise InvalidArgumentError(f"{where}: dynamic shape {shape} is not executed")
    return element_dtype(shape.element_type, where)


def typed(value: Value, shape: Shape, where: str) -> Value:
    """``value`` read back from an ``.npz`` (see ``storable``) with the element types of
    ``shape``."""
    if isinstance(value, tuple):
        return tuple(typed(v, s, where) for v, s in zip(value, shape.tuple_shapes or (),
                                                         strict=True))
    return value if shape.element_type == "token" else as_dtype(value, dtype_of(shape, where))


def storable(array: np.ndarray) -> np.ndarray:
    """``array`` as ``.npz`` can hold it: ml_dtypes' types (bf16, f8) as their bits, unsigned
    integers of the same width (``as_dtype`` reads them back)."""
    return array.view(f"u{array.itemsize}") if is_low_precision(array.dtype) else array


def as_dtype(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``array`` as ``dtype``, when it holds the bits of an ml_dtypes type (``storable``)."""
    if is_low_precision(dtype) and array.dtype != dtype:
        return array.view(dtype)
    return array


def check_shape(shape: Shape, where: str) -> None:
    """Raise unless every leaf of ``shape`` is an executable array or a token."""
    for leaf in shape.leaves():
        if leaf.element_type != "token":
            dtype_of(leaf, where)

"""HLO element types as numpy dtypes.

``pred`` is ``bool``. ``bf16`` and the one-byte ``f8`` types, which numpy lacks, are
``ml_dtypes``' types (the package jax's arrays use; it needs only numpy), imported only when
a module uses them: without it they are refused with a message saying so, and every other
type still works. Sub-byte types (``s4``, ``f4e2m1fn``, ...) have no dtype here.

>>> element_dtype("s32", "here"), is_float(element_dtype("f16", "here"))
(dtype('int32'), True)
"""

from __future__ import annotations

import numpy as np

from .._errors import InvalidArgumentError

DTYPES: dict[str, np.dtype] = {
    name: np.dtype(t) for name, t in {
        "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
        "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
        "f16": np.float16, "f32": np.float32, "f64": np.float64,
        "c64": np.complex64, "c128": np.complex128,
    }.items()
}  # fmt: skip

# HLO element type -> ml_dtypes type name, for the types numpy has no dtype of.
ML_DTYPES = {
    "bf16": "bfloat16", "f8e3m4": "float8_e3m4", "f8e4m3": "float8_e4m3",
    "f8e4m3fn": "float8_e4m3fn", "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e4m3fnuz": "float8_e4m3fnuz", "f8e5m2": "float8_e5m2", "f8e5m2fnuz": "float8_e5m2fnuz",
}  # fmt: skip

def element_dtype(element_type: str, where: str) -> np.dtype:
    """The numpy dtype of an HLO element type (``ml_dtypes`` for bf16 and f8), or
    ``InvalidArgumentError`` naming ``where``."""
    if element_type in DTYPES:
        return DTYPES[element_type]
    if element_type not in ML_DTYPES:
        raise InvalidArgumentError(
            f"{where}: element type {element_type} is not executed (supported: "
            f"{', '.join([*DTYPES, *ML_DTYPES])})"
        )
    try:
        import ml_dtypes
    except ImportError:
        raise InvalidArgumentError(
            f"{where}: element type {element_type} needs the ml_dtypes package (installed "
            "with jax; pip install ml_dtypes)"
        ) from None
    return np.dtype(getattr(ml_dtypes, ML_DTYPES[element_type]))


def is_low_precision(dtype: np.dtype) -> bool:
    """True for ml_dtypes' bf16 and f8 types."""
    return dtype.name in ML_DTYPES.values()


def is_float(dtype: np.dtype) -> bool:
    """True for numpy's floating types and ml_dtypes' bf16 and f8 types."""
    return dtype.kind == "f" or is_low_precision(dtype)

"""Device-by-device comparison of what two backends computed."""

from __future__ import annotations

import numpy as np

from meshtopo.hlo import is_low_precision


def leaves(value: object) -> list[np.ndarray]:
    """A device's output as a list of arrays (a tuple's elements, or the one array)."""
    return list(value) if isinstance(value, tuple) else [value]  # type: ignore[list-item]


def assert_same(a: dict, b: dict) -> None:
    """Equal devices, and on each equal dtypes and shapes; integers, booleans and low-precision
    floats equal exactly, other floats within a relative 1e-6."""
    assert sorted(a) == sorted(b)
    for device in a:
        for x, y in zip(leaves(a[device]), leaves(b[device]), strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            if x.dtype.kind in "iub" or is_low_precision(x.dtype):
                np.testing.assert_array_equal(x, y, err_msg=f"device {device}")
            else:
                np.testing.assert_allclose(x, y, rtol=1e-6, err_msg=f"device {device}")

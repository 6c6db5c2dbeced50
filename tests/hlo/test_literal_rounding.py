"""A constant past the finite range of a float type numpy lacks is read when its cast to the
type rounds back into range, as XLA's parser checks it: each cast here is ml_dtypes' own
(``bf16`` by way of ``f32``, as Eigen's cast from a double goes; jaxlib agrees on the cases of
``test_xla_parser_agreement``), on values around the largest magnitude and the halfway point
beyond it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import meshtopo as mt

ml_dtypes = pytest.importorskip("ml_dtypes")

# meshtopo's type name: (ml_dtypes' name, mantissa bits)
_TYPES = {
    "bf16": ("bfloat16", 7), "f8e3m4": ("float8_e3m4", 4), "f8e4m3": ("float8_e4m3", 3),
    "f8e4m3fn": ("float8_e4m3fn", 3), "f8e4m3b11fnuz": ("float8_e4m3b11fnuz", 3),
    "f8e4m3fnuz": ("float8_e4m3fnuz", 3), "f8e5m2": ("float8_e5m2", 2),
    "f8e5m2fnuz": ("float8_e5m2fnuz", 2), "f8e8m0fnu": ("float8_e8m0fnu", 0),
    "f4e2m1fn": ("float4_e2m1fn", 1),
}  # fmt: skip


def _past_range(low: float, high: float, mantissa_bits: int) -> st.SearchStrategy[float]:
    """Doubles outside [low, high]: near the largest magnitude, near the halfway point to the
    next one up (and exactly there), far past it, and below an unsigned type's least."""
    unit = math.ldexp(1.0, math.frexp(high)[1] - 1 - mantissa_bits)
    halfway = high + unit / 2
    above = st.one_of(st.floats(high, high + 2 * unit, exclude_min=True),
                      st.floats(-unit / 4, unit / 4).map(lambda d: halfway + d),
                      st.floats(high * 2, 1e308),
                      st.sampled_from([halfway, math.nextafter(halfway, 0),
                                       math.nextafter(halfway, math.inf)]))
    if low > 0:
        return st.one_of(above, st.floats(-1e308, low, exclude_max=True))
    return st.one_of(above, above.map(lambda v: -v))


@pytest.mark.parametrize("kind", sorted(_TYPES))
@given(data=st.data())
def test_a_constant_past_the_range_is_read_when_its_cast_rounds_into_it(
        kind: str, data: st.DataObject) -> None:
    name, mantissa_bits = _TYPES[kind]
    native = getattr(ml_dtypes, name)
    info = ml_dtypes.finfo(native)
    low = float(info.smallest_normal if kind == "f8e8m0fnu" else info.min)
    value = data.draw(_past_range(low, float(info.max), mantissa_bits))
    with np.errstate(over="ignore", invalid="ignore"):
        cast = float(np.array(np.float32(value) if kind == "bf16" else value).astype(native))
    text = f"HloModule m\nENTRY e {{\n  ROOT c = {kind}[] constant({value!r})\n}}\n"
    if math.isfinite(cast):
        mt.hlo.parse_module(text)
    else:
        with pytest.raises(mt.HloParseError, match="is out of range for literal's primitive"):
            mt.hlo.parse_module(text)

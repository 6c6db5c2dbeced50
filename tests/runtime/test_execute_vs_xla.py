"""``mt.runtime.execute`` on the local backend against XLA executing the same module on 8 CPU
devices: every collective opcode, every group mode, R > 1, column-major, row-major and
permuted device assignments, async pairs, control flow that differs per device, and bf16 and
f8 buffers (bit-identical too: both reduce them in float32 and round once)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.hlo import is_low_precision

from ._programs import PROGRAMS
from ._xla_run import run_in_xla

pytestmark = pytest.mark.jax

CASES = [(program, table) for program in PROGRAMS for table in program.tables]
IDS = [f"{p.name}-{'x'.join(str(len(t)) for t in (table, table[0]))}-{i}"
       for i, (p, table) in enumerate(CASES)]


def _inputs(program: Any, table: Any) -> dict[int, list[np.ndarray]]:
    module = mt.hlo.parse_module(program.text, device_assignment=np.array(table))
    return mt.runtime.generated_inputs(mt.runtime.Plan(module))


@pytest.fixture(scope="module")
def xla_results() -> list[Any]:
    cases = [(p.xla_text or p.text, np.array(t), _inputs(p, t)) for p, t in CASES]
    return run_in_xla(cases)


def _leaves(value: Any) -> list[np.ndarray]:
    return list(value) if isinstance(value, tuple) else [value]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_local_backend_equals_xla(index: int, xla_results: list[Any]) -> None:
    program, table = CASES[index]
    expected = xla_results[index]
    assert not isinstance(expected, str), expected
    module = mt.hlo.parse_module(program.text, device_assignment=np.array(table))
    outputs = mt.runtime.execute(module, _inputs(program, table), timeout=20)
    assert sorted(outputs) == sorted(expected)
    for device, value in outputs.items():
        ours, theirs = _leaves(value), expected[device]
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype, (device, a, b)
            if a.dtype.kind in "iub" or is_low_precision(a.dtype):  # bf16/f8: exact too
                np.testing.assert_array_equal(a, b, err_msg=f"device {device}")
            else:
                np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=f"device {device}")

"""The torch backend on real gloo processes computes what the local backend (itself checked
against XLA) computes: every program of ``_programs`` (every opcode and group mode, async pairs,
control flow), every opcode on 2, 4 and 8 processes, a collective broadcast under a permuted
device assignment.

Every test here has a hard timeout; runs go through ``execute``, whose launcher kills and
reaps its whole process session on every exit path. The runs fork their processes from one
torch server (``torch_server``), so each does not import torch again."""

from __future__ import annotations

import numpy as np
import pytest

import meshtopo as mt

from ._compare import assert_same
from ._programs import PROGRAMS, Program, combined

pytestmark = pytest.mark.usefixtures("torch_server")

BROADCAST = """HloModule broadcast, replica_count=4

ENTRY %main (p: f32[3]) -> f32[3] {
  %p = f32[3] parameter(0)
  ROOT %cb = f32[3] collective-broadcast(%p), replica_groups={{1,0},{2,3}}
}
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_on_torch_equals_local(program: Program) -> None:
    # The last table of each program is its permuted device assignment (or the only one).
    module = mt.hlo.parse_module(program.text, device_assignment=np.array(program.tables[-1]))
    assert_same(mt.runtime.execute(module, backend="torch", timeout=30),
                mt.runtime.execute(module, timeout=30))


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("replicas", "partitions"), [(1, 2), (2, 2), (2, 4)],
                         ids=["2-processes", "4-processes", "8-processes"])
def test_every_opcode_matches_local(replicas: int, partitions: int) -> None:
    module = mt.hlo.parse_module(combined(replicas, partitions))
    assert_same(mt.runtime.execute(module, backend="torch", timeout=30),
                mt.runtime.execute(module, timeout=30))


@pytest.mark.timeout(120)
def test_collective_broadcast_and_permuted_assignment() -> None:
    module = mt.hlo.parse_module(BROADCAST, device_assignment=[[3], [0], [2], [1]])
    inputs = {d: [np.full(3, d, np.float32)] for d in range(4)}
    torch_out = mt.runtime.execute(module, inputs, backend="torch", timeout=30)
    assert_same(torch_out, mt.runtime.execute(module, inputs, timeout=30))
    # Group {1,0} is replicas 1, 0 = devices 0, 3; its root (rank 0) is device 0.
    assert {d: float(v[0]) for d, v in torch_out.items()} == {0: 0.0, 3: 0.0, 2: 2.0, 1: 2.0}

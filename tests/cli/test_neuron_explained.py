"""``meshtopo neuron`` explains its verdicts on a real two-axis JAX program."""

from __future__ import annotations

from pathlib import Path

import pytest

import meshtopo as mt
from hlo.dumps._xla_dump import dump_program
from meshtopo.cli import main

pytestmark = pytest.mark.jax

PROGRAM = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("dp", "tp"))
x = jax.device_put(jnp.arange(64.0).reshape(8, 8), NamedSharding(mesh, P("dp", "tp")))
gather = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 3, NamedSharding(mesh, P())))
gather(x).block_until_ready()
"""


@pytest.fixture(scope="module")
def two_axis_module(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The module of a program gathering over both axes of a 2 x 4 mesh, dumped by XLA."""
    directory = tmp_path_factory.mktemp("dump")
    dump_program(directory, PROGRAM)
    [path] = [f for f in mt.hlo.module_files(directory) if ".jit__lambda." in f]
    return path


def test_mpmd_verdict_states_the_rule_and_the_geometries(
        two_axis_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = mt.hlo.load(two_axis_module)
    # The groups XLA compiled: one list per mesh axis, of 4 and of 2 devices.
    sizes = sorted({len(c.device_groups()[0]) for c in module.collectives})
    assert sizes == [2, 4]
    with pytest.raises(SystemExit) as done:
        main(["neuron", two_axis_module])
    out = capsys.readouterr().out
    assert done.value.code == 1
    assert "MPMD: Inconsistent worker count across topologies" in out
    assert "why: Neuron's rank model (getCCRankWorldSize) gives a program one world size from " \
           "one [group][rank] topology" in out
    assert "2 distinct group geometries:" in out
    for collective in module.collectives:
        groups = len(collective.device_groups())
        ranks = len(collective.device_groups()[0])
        assert any(f"({groups} groups x {ranks} ranks" in line and f"%{collective.name}" in line
                   for line in out.splitlines()), collective.name
    assert ("TP group: none (no reduce-scatter in the module; the TP group is read from the "
            "first collective of --tp-opcode") in out


def test_a_module_without_collectives_says_why_its_world_is_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.hlo"
    path.write_text("HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n"
                    "  ROOT %p = f32[2]{0} parameter(0)\n}\n")
    with pytest.raises(SystemExit) as done:
        main(["neuron", str(path)])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert ("world size: 1 (no collective with replica groups or pairs: each rank is a world "
            "of its own)") in out

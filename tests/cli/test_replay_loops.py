"""``meshtopo replay`` counts a loop's collectives once per iteration: ring attention's
ppermute in an 8-step ``fori_loop``, compiled by XLA, is issued 8 times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.cli import main

pytestmark = pytest.mark.jax
jax = pytest.importorskip("jax")

STEPS = 8


def _ring_module() -> mt.hlo.Module:
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:4]), ("ring",))
    pairs = [(i, (i + 1) % 4) for i in range(4)]

    def body(x: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, STEPS, lambda _, a: jax.lax.ppermute(a, "ring", pairs), x)

    ring = jax.shard_map(body, mesh=mesh, in_specs=P("ring"), out_specs=P("ring"))
    return mt.jax.inspect(ring, jnp.arange(16.0))


def test_a_loop_s_collective_is_counted_per_iteration(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    module = _ring_module()
    [permute] = [c for c in module.collectives if c.opcode == "collective-permute"]
    path = tmp_path / "ring.hlo"
    path.write_text(module.text)
    with pytest.raises(SystemExit) as done:
        main(["replay", str(path), "--json"])
    assert done.value.code == 0
    [row] = [r for r in json.loads(capsys.readouterr().out)["collectives"]
             if r["name"] == permute.name]
    assert row["trip_count"] == STEPS
    with pytest.raises(SystemExit):
        main(["replay", str(path)])
    assert f"x{STEPS} (loop trip count)" in capsys.readouterr().out

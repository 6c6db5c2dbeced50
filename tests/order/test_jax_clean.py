"""Real JAX programs on 8 CPU devices come out clean, and really run: shard_map and jit,
while loops, conditionals with uniform predicates, ppermute pipelines."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import meshtopo as mt

pytestmark = pytest.mark.jax


@functools.cache
def _mesh() -> Any:
    import jax
    from jax.sharding import Mesh

    devices = np.array(jax.devices()[:8]).reshape(2, 4)
    return Mesh(devices, ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def _shard_map(body: Callable[..., Any]) -> Any:
    import jax
    from jax.sharding import PartitionSpec as P

    return jax.jit(jax.shard_map(body, mesh=_mesh(), in_specs=P("x", "y"), out_specs=P("x", "y"),
                                 check_vma=False))


def _input() -> Any:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    return jax.device_put(jnp.arange(16 * 32, dtype=jnp.float32).reshape(16, 32),
                          NamedSharding(_mesh(), P("x", "y")))


@functools.cache
def _programs() -> dict[str, tuple[Any, Callable[[np.ndarray], np.ndarray]]]:
    """name -> (jitted function of one (16, 32) array, numpy reference of its result); made
    once, so the tests that check the same program share JAX's traces and compilations."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    def blocks(a: np.ndarray) -> np.ndarray:  # [x, y, 8, 8] shards
        return a.reshape(2, 8, 4, 8).transpose(0, 2, 1, 3)

    def unblocks(b: np.ndarray) -> np.ndarray:
        return b.transpose(0, 2, 1, 3).reshape(16, 32)

    def psum_then_permute(a: jax.Array) -> jax.Array:
        s = jax.lax.psum(a, "x")
        return jax.lax.ppermute(s, "y", [(i, (i + 1) % 4) for i in range(4)])

    def ref_psum_then_permute(a: np.ndarray) -> np.ndarray:
        b = blocks(a).sum(0, keepdims=True).repeat(2, 0)
        return unblocks(np.roll(b, 1, axis=1))

    def loop(a: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, 3, lambda i, c: jax.lax.psum(c, "y") * 0.25, a)

    def ref_loop(a: np.ndarray) -> np.ndarray:
        b = blocks(a)
        for _ in range(3):
            b = b.sum(1, keepdims=True).repeat(4, 1) * 0.25
        return unblocks(b)

    def cond(a: jax.Array) -> jax.Array:
        total = jax.lax.psum(a.sum(), ("x", "y"))  # the same value on every device
        return jax.lax.cond(total > 0, lambda v: jax.lax.psum(v, "x"), lambda v: v * 2.0, a)

    def ref_cond(a: np.ndarray) -> np.ndarray:
        return unblocks(blocks(a).sum(0, keepdims=True).repeat(2, 0))

    def pipeline(a: jax.Array) -> jax.Array:
        def stage(carry: jax.Array, _: Any) -> tuple[jax.Array, None]:
            moved = jax.lax.ppermute(carry, "y", [(i, i + 1) for i in range(3)])
            return moved + 1.0, None

        return jax.lax.scan(stage, a, None, length=4)[0]

    def ref_pipeline(a: np.ndarray) -> np.ndarray:
        b = blocks(a)
        for _ in range(4):
            moved = np.zeros_like(b)
            moved[:, 1:] = b[:, :-1]
            b = moved + 1.0
        return unblocks(b)

    sharded = NamedSharding(_mesh(), P("x", "y"))
    jit_matmul = jax.jit(lambda a: a @ a.T, out_shardings=NamedSharding(_mesh(), P("x", None)))
    del sharded, jnp
    return {
        "shard_map": (_shard_map(psum_then_permute), ref_psum_then_permute),
        "while": (_shard_map(loop), ref_loop),
        "conditional": (_shard_map(cond), ref_cond),
        "pipeline": (_shard_map(pipeline), ref_pipeline),
        "jit": (jit_matmul, lambda a: a @ a.T),
    }


@pytest.mark.parametrize("name", ["shard_map", "while", "conditional", "pipeline", "jit"])
def test_clean_and_runs(name: str) -> None:
    fn, reference = _programs()[name]
    x = _input()
    report = mt.jax.check(fn, x)
    assert report.findings == [], report.findings
    assert report.devices.tolist() == list(range(8))
    schedule = report.schedule(5)
    assert schedule, name
    for device in range(8):  # the head of a schedule is its start, with its full length
        for taken in (False, True):
            full = report.schedule(device, taken)
            for limit in (0, 1, len(full) // 2, len(full) + 1):
                assert report.schedule_head(device, limit, taken) == (full[:limit], len(full))
    np.testing.assert_allclose(np.asarray(fn(x)), reference(np.asarray(x)), rtol=1e-5)


def test_while_loop_schedule_carries_the_trip_count() -> None:
    fn, _ = _programs()["while"]
    report = mt.jax.check(fn, _input())
    loops = {a.entry.loops for a in report.schedule(0)}
    assert any(loop and loop[-1][1] == 3 for loop in loops), loops


def test_shard_map_cliques_follow_the_mesh() -> None:
    fn, _ = _programs()["shard_map"]
    schedule = mt.jax.check(fn, _input()).schedule(5)
    by_op = {a.entry.opcode: a.clique for a in schedule}
    assert by_op["all-reduce"] == (1, 5)
    permutes = [a.clique for a in schedule if a.entry.opcode == "collective-permute"]
    assert sorted(permutes) == [(4, 5), (5, 6)]  # receive from 4, send to 6


SIXTEEN = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import meshtopo as mt

mesh = Mesh(np.array(jax.devices()).reshape(4, 4), ("x", "y"),
            axis_types=(jax.sharding.AxisType.Auto,) * 2)

def body(a):
    a = jax.lax.psum(a, "x")
    a = jax.lax.fori_loop(0, 2, lambda i, c: jax.lax.ppermute(
        c, "y", [(j, (j + 1) % 4) for j in range(4)]), a)
    return jax.lax.all_gather(a, "y", tiled=True)[: a.shape[0]]

fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"),
                           check_vma=False))
x = jax.device_put(jnp.arange(16 * 16, dtype=jnp.float32).reshape(16, 16),
                   NamedSharding(mesh, P("x", "y")))
report = mt.jax.check(fn, x)
assert report.findings == [], report.findings
assert report.devices.tolist() == list(range(16))
blocks = np.asarray(x).reshape(4, 4, 4, 4).transpose(0, 2, 1, 3).sum(0)   # [y, 4, 4]
expected = np.roll(blocks, 2, axis=0)[0]
np.testing.assert_allclose(np.asarray(fn(x))[:4, :4], expected)
print("clean", len(report.schedule(9)))
"""


def test_sixteen_devices_in_a_fresh_process() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=16"}
    done = subprocess.run([sys.executable, "-c", SIXTEEN], capture_output=True, text=True,
                          timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("clean ")


def test_order_command_on_a_jax_dump(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from .test_cli import run

    fn, _ = _programs()["pipeline"]
    path = tmp_path / "pipeline.hlo"
    path.write_text(fn.lower(_input()).compile().as_text())
    code, out, err = run(capsys, "order", str(path), "--json", "--devices", "0,7")
    answer = json.loads(out)
    assert (code, err, answer["ok"], answer["devices"], answer["spmd"]) == (0, "", True, 8, True)
    # The scan runs 4 stages: device 7 (the last of its y axis) receives once a stage.
    assert [(a["opcode"], a["iteration"][0][1]) for a in answer["schedules"]["7"]] == [
        ("collective-permute", stage) for stage in range(4)]
    code, out, _ = run(capsys, "check", str(path))
    assert code == 0 and out.rstrip().endswith("num_partitions=8)")

"""Real XLA dump directories for the tests: a child process compiles and runs shard_map
programs (and a jitted partitioned one) on 2 x 4 meshes whose devices are in a given order,
with ``--xla_dump_to``, so each module's ``compile_options.textproto`` holds that order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# Device orders (mesh position -> device id) the dump tests compile on.
ORDERS = {
    "permuted": (3, 0, 6, 5, 7, 4, 1, 2),
    "reversed": (7, 6, 5, 4, 3, 2, 1, 0),
    "interleaved": (0, 2, 4, 6, 1, 3, 5, 7),
}
# One case: [key, "psum" | "all_gather" | "jit", mesh axis, device order].
Case = list[object]

_CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import jax, jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    dump, cases = sys.argv[1], json.loads(sys.argv[2])
    found = {}
    def new_files(before):
        return sorted(set(os.listdir(dump)) - before)
    for key, collective, axis, order in cases:
        devices = np.array(jax.devices())[list(order)].reshape(2, 4)
        mesh = Mesh(devices, ("x", "y"))
        if collective == "psum":
            body = lambda a: jax.lax.psum(a, axis)
        elif collective == "all_gather":
            body = lambda a: jax.lax.all_gather(a, axis, tiled=True)
        else:  # a jitted program the partitioner turns into an all-reduce
            body = None
        before = set(os.listdir(dump))
        x = jnp.arange(16.0).reshape(4, 4)
        if body is None:
            sharded = jax.device_put(x, NamedSharding(mesh, P("x", "y")))
            out = jax.jit(lambda a: a.sum(axis=1)).lower(sharded).compile()(sharded)
        else:
            fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"),
                                       out_specs=P("x", "y"), check_vma=False))
            out = fn(x)
        jax.block_until_ready(out)
        found[key] = [f for f in new_files(before) if f.endswith("after_optimizations.txt")]
    print(json.dumps(found))
""")



def write_dump(directory: Path, cases: list[Case]) -> dict[str, list[str]]:
    """Compile and run each case in one child process dumping into ``directory``; the
    after-optimizations module files each case wrote, by key. Bounded at 240 s."""
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count=8 "
                                     f"--xla_dump_to={directory}", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", _CHILD, str(directory), json.dumps(cases)],
                          capture_output=True, text=True, timeout=240, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def dump_program(directory: Path, program: str) -> str:
    """Run the Python ``program`` in a child process on 8 CPU devices dumping into
    ``directory`` (``--xla_dump_to``); its stdout. Bounded at 240 s."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=(
        f"--xla_force_host_platform_device_count=8 --xla_dump_to={directory}"))
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout

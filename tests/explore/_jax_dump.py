"""A real XLA dump for the explorer's tests: a child JAX process runs one shard_map program on
a 2 x 4 mesh of permuted devices with ``--xla_dump_to`` and ``--xla_dump_hlo_as_text``, so the
dump directory holds the module after optimisations and, beside it, the
``compile_options.textproto`` with the mesh's device order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# The mesh a user built: mesh position -> device id, as data x model (2 x 4).
MESH_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)

_CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import jax, jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec as P
    dump, order = sys.argv[1], json.loads(sys.argv[2])
    mesh = Mesh(np.array(jax.devices())[order].reshape(2, 4), ("data", "model"))
    def body(a):
        total = jax.lax.psum(a, "model")
        return jax.lax.all_gather(total, "data", tiled=True)
    fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("data", "model"),
                               out_specs=P(None, "model"), check_vma=False))
    jax.block_until_ready(fn(jnp.arange(32.0).reshape(4, 8)))
    print(json.dumps(sorted(f for f in os.listdir(dump)
                            if f.endswith("after_optimizations.txt"))))
""")


def write_permuted_dump(directory: Path) -> Path:
    """Run the program dumping into ``directory``; the after-optimisations file holding its
    collectives. Bounded at 240 s."""
    flags = (f"--xla_force_host_platform_device_count=8 --xla_dump_to={directory} "
             "--xla_dump_hlo_as_text")
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", _CHILD, str(directory), json.dumps(MESH_ORDER)],
                          capture_output=True, text=True, timeout=240, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    names = json.loads(done.stdout.strip().splitlines()[-1])
    [path] = [directory / n for n in names if "all-reduce" in (directory / n).read_text()]
    return path

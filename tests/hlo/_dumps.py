"""Real HLO dumps, compiled by JAX on 8 CPU devices (the conftest sets the device count)."""

from __future__ import annotations

import functools


@functools.cache
def dumps() -> dict[str, str]:
    """name -> optimised HLO text of small SPMD programs (mesh x=2, y=4)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = np.array(jax.devices()[:8]).reshape(2, 4)
    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = Mesh(devices, ("x", "y"), axis_types=auto)

    def body(a: jax.Array) -> jax.Array:
        s = jax.lax.psum(a, "x")
        g = jax.lax.all_gather(a, "y")
        r = jax.lax.psum_scatter(a, "y", tiled=True)
        p = jax.lax.ppermute(a, "y", [(i, (i + 1) % 4) for i in range(4)])
        t = jax.lax.all_to_all(a, "y", 0, 0, tiled=True)
        return s.sum() + g.sum() + r.sum() + p.sum() + t.sum()

    sharded = NamedSharding(mesh, P("x", "y"))
    x = jax.device_put(jnp.ones((16, 32)), sharded)
    mapped = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P(),
                                   check_vma=False))
    out: dict[str, str] = {"shard_map": mapped.lower(x).compile().as_text()}
    total = jax.jit(lambda a: a.sum(0), out_shardings=NamedSharding(mesh, P()))
    out["sum_replicated"] = total.lower(x).compile().as_text()
    b = jax.device_put(jnp.ones((32, 64)), NamedSharding(mesh, P("y", None)))
    matmul = jax.jit(lambda a, b: a @ b, out_shardings=NamedSharding(mesh, P("x", "y")))
    out["matmul"] = matmul.lower(x, b).compile().as_text()
    gram = jax.jit(lambda a: a.T @ a, out_shardings=NamedSharding(mesh, P("y", None)))
    out["gram"] = gram.lower(x).compile().as_text()  # mesh-axes all-gather, iota-T all-reduce
    return out


def jaxlib_explicit_groups(text: str) -> list[str]:
    """XLA's own reading of every ``replica_groups=``, printed in the explicit form, in
    order: jaxlib's C++ parser, then fingerprint printing (which expands every list)."""
    import re

    import jaxlib._hlo as jax_hlo  # type: ignore[import-not-found]

    module = jax_hlo.hlo_module_from_text(text)
    printed = module.to_string(jax_hlo.HloPrintOptions.fingerprint())
    return re.findall(r"replica_groups=(\{[\d,{}]*\})", printed)

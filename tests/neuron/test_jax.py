"""Modules compiled by XLA through JAX on 8 CPU devices: the envelope and the TP group.

The SPMD partitioner turns a tensor-parallel matmul (contracting dimension sharded over
``model``) into an all-reduce over the ``model`` groups; the CPU pipeline keeps it as an
all-reduce (plus a dynamic slice), so the TP group is read with ``opcode="all-reduce"``. A
``psum_scatter`` under ``shard_map`` gives the reduce-scatter the default scan looks for.
"""

from __future__ import annotations

import pytest

from meshtopo import neuron
from meshtopo.hlo import parse_module

jax = pytest.importorskip("jax")
np = pytest.importorskip("numpy")

pytestmark = pytest.mark.jax

MODEL_GROUPS = [[0, 1, 2, 3], [4, 5, 6, 7]]


@pytest.fixture(scope="module")
def mesh():  # type: ignore[no-untyped-def]
    if jax.device_count() < 8:
        pytest.skip("needs XLA_FLAGS=--xla_force_host_platform_device_count=8")
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))


def _compiled(function, shardings, outputs, *args) -> str:  # type: ignore[no-untyped-def]
    jitted = jax.jit(function, in_shardings=shardings, out_shardings=outputs)
    return str(jitted.lower(*args).compile().as_text())


def test_partitioned_matmul_tp_group(mesh) -> None:  # type: ignore[no-untyped-def]
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    x = jax.numpy.ones((8, 16), jax.numpy.float32)
    w = jax.numpy.ones((16, 32), jax.numpy.float32)
    text = _compiled(
        lambda a, b: a @ b,
        (NamedSharding(mesh, P("data", "model")), NamedSharding(mesh, P("model", None))),
        NamedSharding(mesh, P("data", "model")), x, w,
    )
    module = parse_module(text)
    assert any(c.opcode == "all-reduce" for c in module.collectives)
    assert neuron.replica_groups_3d(module) == [MODEL_GROUPS]
    assert neuron.cc_rank_world_size(neuron.replica_groups_3d(module)) == 4
    assert neuron.tp_replica_group(module, opcode="all-reduce") == MODEL_GROUPS
    tp = neuron.find_tp_collective(module, opcode="all-reduce")
    assert tp is not None
    assert neuron.has_matching_replica_groups(tp, MODEL_GROUPS)
    assert neuron.tp_replica_group(module) == []  # no reduce-scatter on the CPU pipeline


def test_psum_scatter_reduce_scatters(mesh) -> None:  # type: ignore[no-untyped-def]
    from jax.sharding import PartitionSpec as P

    def step(x, w, v):  # type: ignore[no-untyped-def]
        first = jax.lax.psum_scatter(x @ w, "model", scatter_dimension=1, tiled=True)
        second = jax.lax.psum_scatter(x @ v, "model", scatter_dimension=1, tiled=True)
        return first, second

    try:
        from jax import shard_map
    except ImportError:  # older JAX
        from jax.experimental.shard_map import shard_map

    specs = (P("data", "model"), P("model", None), P("model", None))
    function = jax.jit(shard_map(step, mesh=mesh, in_specs=specs,
                                 out_specs=(P("data", "model"), P("data", "model"))))
    x = jax.numpy.ones((8, 16), jax.numpy.float32)
    w = jax.numpy.ones((16, 32), jax.numpy.float32)
    module = parse_module(str(function.lower(x, w, w * 2).compile().as_text()))
    scatters = [c for c in module.collectives if c.opcode == "reduce-scatter"]
    assert len(scatters) == 2
    assert neuron.tp_replica_group(module) == MODEL_GROUPS
    assert neuron.replica_groups_3d(module) == [MODEL_GROUPS]
    sets = neuron.combinable_sets(module)
    assert [sorted(s.instructions) for s in sets] == [sorted(c.name for c in scatters)]
    assert sets[0].key.replica_groups == tuple(map(tuple, MODEL_GROUPS))
    assert sets[0].key.reduction == "add" and sets[0].key.scatter_dimension == 1

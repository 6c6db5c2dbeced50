"""Real HLO that JAX compiles for 8 CPU devices verifies clean, as XLA verified it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import meshtopo.hlo as hlo

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

pytestmark = pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 JAX devices")


def _mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> Mesh:
    return Mesh(np.array(jax.devices()[:8]).reshape(shape), names)


def shard_map_collectives() -> str:
    mesh = _mesh((2, 4), ("a", "b"))

    def body(x: jax.Array) -> jax.Array:
        total = jax.lax.psum(x, "b").sum()
        total += jax.lax.all_gather(x, "a", tiled=True).sum()
        total += jax.lax.ppermute(x, "b", [(i, (i + 1) % 4) for i in range(4)]).sum()
        total += jax.lax.psum_scatter(x, "b", tiled=True).sum()
        total += jax.lax.all_to_all(x, "b", 0, 0, tiled=True).sum()
        return total

    program = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("a", "b"), out_specs=P(),
                                    check_vma=False))
    return str(program.lower(jnp.ones((16, 32))).compile().as_text())


def sharded_matmul() -> str:
    mesh = _mesh((4, 2), ("data", "model"))
    x = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("data", "model")))
    w = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("model", None)))
    program = jax.jit(lambda x, w: jnp.tanh(x @ w).sum(axis=0),
                      out_shardings=NamedSharding(mesh, P()))
    return str(program.lower(x, w).compile().as_text())


def flattened_groups_over_two_axes() -> str:
    mesh = _mesh((2, 2, 2), ("x", "y", "z"))

    def body(x: jax.Array) -> jax.Array:
        return jax.lax.pmax(x, ("x", "z")) + jax.lax.all_gather(x, ("y", "z"), tiled=True)[:2]

    program = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P(("x", "y", "z")),
                                    out_specs=P(("x", "y", "z")), check_vma=False))
    return str(program.lower(jnp.arange(16.0)).compile().as_text())


PROGRAMS: list[Callable[[], str]] = [shard_map_collectives, sharded_matmul,
                                     flattened_groups_over_two_axes]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_jax_dump_verifies_clean(program: Callable[[], str]) -> None:
    text = program()
    module = hlo.parse_module(text)
    assert module.collectives, "the program should compile to collectives"
    assert module.computations  # the whole dump reads structurally too
    assert hlo.verify(module) == []
    assert hlo.verify(module, check_replica_groups=False) == []


def test_jax_dump_against_wrong_partition_count_is_rejected() -> None:
    """The same dump checked against another partition count fails XLA's count check."""
    module = hlo.parse_module(shard_map_collectives(), num_partitions=16)
    findings = hlo.verify(module)
    assert findings
    assert any("should contain 16" in f.message for f in findings)


def test_cli_check_of_a_jax_dump_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from meshtopo.cli import main

    path = tmp_path / "dump.hlo"
    path.write_text(shard_map_collectives())
    with pytest.raises(SystemExit) as done:
        main(["check", str(path)])
    out, err = capsys.readouterr()
    assert (done.value.code, err) == (0, "")
    assert out.startswith(f"{path}: 5 collectives verified, no findings")

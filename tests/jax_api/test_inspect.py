"""``meshtopo.jax.inspect``: device groups in JAX device ids, equal to what execution shows.

Each case runs the same shard_map twice: once through ``tests/oracle/_measure.measure``, which
executes it on CPU devices and decodes from one-hot inputs which devices met (and in which rank
order where the collective shows it), and once through ``mt.jax.inspect``, which only compiles
it and resolves the HLO's groups through the executable's device assignment. The meshes list
their devices in non-default orders, so XLA's default placement would give other answers.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import meshtopo as mt
import meshtopo.jax as mtj
from oracle._decode import sorted_groups
from oracle._expect import as_measured
from oracle._measure import (
    _block_for,
    _collective_fn,
    _jax_mesh,
    _per_device_array,
    measure,
)

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")

ORDERS = {
    "scrambled": (3, 1, 7, 5, 0, 2, 6, 4),
    "reversed": (7, 6, 5, 4, 3, 2, 1, 0),
}
CASES = [
    ("psum", (("x", 2), ("y", 4)), ("y",)),
    ("psum", (("x", 2), ("y", 4)), ("x",)),
    ("all_gather", (("x", 2), ("y", 4)), ("x",)),
    ("all_gather", (("x", 4), ("y", 2)), ("x",)),
    ("all_gather", (("x", 2), ("y", 2), ("z", 2)), ("z", "x")),
    ("ppermute", (("x", 2), ("y", 4)), ("y",)),
    ("ppermute", (("x", 4), ("y", 2)), ("x",)),
]


@pytest.fixture(scope="module", autouse=True)
def eight_devices():
    if len(jax.devices()) < 8:
        pytest.skip("needs XLA_FLAGS=--xla_force_host_platform_device_count=8 before jax import")


def program(collective, shape, axes, device_ids):
    """The shard_map ``measure`` runs, and its input, for ``mtj.inspect``."""
    from jax.sharding import PartitionSpec

    mesh = _jax_mesh(shape, device_ids)
    sizes = dict(shape)
    size = int(np.prod([sizes[a] for a in axes]))
    perm = tuple((i, (i + 1) % size) for i in range(size)) if collective == "ppermute" else None
    block = _block_for(collective, len(device_ids), size)
    spec = PartitionSpec(tuple(name for name, _ in shape))
    x = _per_device_array(mesh, spec, block, (len(device_ids) * int(block(0).shape[0]),))
    fn = jax.shard_map(
        _collective_fn(collective, axes, size, perm),
        mesh=mesh,
        in_specs=spec,
        out_specs=spec,
        check_vma=False,
    )
    return fn, x, perm


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize(
    ("collective", "shape", "axes"),
    CASES,
    ids=[f"{c}-{'x'.join(str(s) for _, s in sh)}-over-{','.join(a)}" for c, sh, a in CASES],
)
def test_device_groups_equal_execution(collective, shape, axes, order):
    device_ids = ORDERS[order]
    fn, x, perm = program(collective, shape, axes, device_ids)
    measured = measure(collective, dict(shape), axes, device_ids, perm=perm)
    compiled = mtj.inspect(fn, x)
    assert compiled.device_assignment.array.tolist() == [list(device_ids)]
    assert (compiled.replica_count, compiled.num_partitions) == (1, 8)
    [c] = [c for c in compiled.collectives if c.is_start]
    default: object
    if collective == "ppermute":
        assert tuple(sorted(c.device_pairs())) == measured.pairs
        assert sorted(map(tuple, c.device_groups())) == list(measured.pairs)
        default = tuple(sorted(c.device_pairs(mt.DeviceAssignment.default(1, 8))))
    else:
        assert as_measured(c.device_groups(), measured.ordered) == measured.groups
        if measured.ordered:  # rank order, not just membership
            assert sorted_groups(c.device_groups()) == measured.groups
        default = as_measured(
            c.device_groups(mt.DeviceAssignment.default(1, 8)), measured.ordered
        )
    if order == "scrambled":  # XLA's default placement would give other devices here
        assert default != (measured.pairs if collective == "ppermute" else measured.groups)


def test_jitted_and_compiled_forms_agree():
    fn, x, _ = program("psum", (("x", 2), ("y", 4)), ("y",), ORDERS["scrambled"])
    jitted = jax.jit(fn)
    by_fn = mtj.inspect(fn, x)
    by_jitted = mtj.inspect(jitted, x)
    by_compiled = mtj.inspect(jitted.lower(x).compile())
    groups = [[3, 1, 7, 5], [0, 2, 6, 4]]
    for result in (by_fn, by_jitted, by_compiled):
        assert [c.device_groups() for c in result.collectives] == [groups]
        assert isinstance(result, mt.hlo.Module)
        assert result.device_assignment.array.tolist() == [list(ORDERS["scrambled"])]
    # A plain module placed on the executable's devices; another assignment overrides it.
    c = by_fn.collectives[0]
    assert (c.opcode, str(c.mode), c.use_global_device_ids) == ("all-reduce", "kFlattenedID", True)
    assert c.device_groups(mt.DeviceAssignment.default(1, 8)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert by_fn.collectives_by_name[c.name] is c


def test_compiled_program_takes_no_arguments():
    fn, x, _ = program("psum", (("x", 2), ("y", 4)), ("y",), ORDERS["reversed"])
    compiled = jax.jit(fn).lower(x).compile()
    with pytest.raises(mt.InvalidArgumentError, match="takes no arguments"):
        mtj.inspect(compiled, x)


def test_not_a_function():
    with pytest.raises(mt.InvalidArgumentError, match="expects a function"):
        mtj.inspect(42)


def test_importing_meshtopo_jax_does_not_import_jax():
    code = "import sys, meshtopo, meshtopo.jax; print('jax' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"

"""``triage`` joins a send's or recv's sequence number with the program's permutes.

torch numbers a process group's sends and receives apart from its collectives (``seqP2P_``
beside ``seqCollective_``), so the k-th SEND or RECV of a group is the device's k-th issue of
a send, recv or permute, its all-reduces not counted; a permute takes one number for each
time it is issued, however many peers it meets. The program is real (JAX on CPU devices,
``--xla_dump_to``): a psum, then two ppermutes in opposite directions, which it runs to the
end. The logs are written from torch's watchdog line format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .test_triage_join import _triage
from .test_triage_logs import _instructions, _timeout, _write_logs

pytestmark = [pytest.mark.jax, pytest.mark.timeout(300)]

_PROGRAM = textwrap.dedent("""
    import numpy as np, jax, jax.numpy as jnp
    from jax import lax
    from jax.sharding import Mesh, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices())[[2, 0, 3, 1]], ("i",))
    def body(x):
        y = lax.psum(x, "i")
        z = lax.ppermute(y * 2, "i", [(j, (j + 1) % 4) for j in range(4)])
        return lax.ppermute(z + 1, "i", [(j, (j + 3) % 4) for j in range(4)])
    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"),
                              check_vma=False))
    print(f(jnp.arange(8.0)).tolist())
""")


@pytest.fixture(scope="module")
def permutes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module of the program, run to its end under XLA."""
    root = tmp_path_factory.mktemp("p2p")
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=(
        f"--xla_force_host_platform_device_count=8 --xla_dump_to={root / 'dump'}"))
    done = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    # psum of [2i, 2i+1] over 4 partitions is [12, 16]; each ppermute then passes it on
    assert json.loads(done.stdout) == [25.0, 33.0] * 4
    (module,) = sorted((root / "dump").glob("*jit_body*after_optimizations.txt"))
    return module


def test_sends_and_receives_are_numbered_by_permute_issue(
        permutes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ranks 0 and 3 time out in SEND #2, the second ppermute (the psum before both takes
    no p2p number, and the first ppermute one, though each device meets two peers in it);
    rank 1 in RECV #1, the first; rank 2 in ALLREDUCE #1, the psum."""
    (psum, shape, computation, _), = _instructions(permutes, "all-reduce")
    first, second = (found[0] for found in _instructions(permutes, "collective-permute"))
    logs = _write_logs(tmp_path / "logs", {"host.log": [
        _timeout(0, 2, "SEND", 2, 2), _timeout(1, 1, "RECV", 2, 2),
        _timeout(2, 1, "ALLREDUCE", 2, 2), _timeout(3, 2, "SEND", 2, 2)]})
    code, out = _triage([str(permutes), str(logs), "--json"], capsys)
    assert code == 1
    (joined,) = json.loads(out)["log_joins"]
    (group,) = joined["groups"]
    found = {r["rank"]: (r["seq"], r["op_type"], r["name"], r["opcode"], r["computation"],
                         r["op_agrees"], r["numel_agrees"]) for r in group["ranks"]}
    assert found == {
        0: (2, "SEND", second, "collective-permute", computation, True, True),
        1: (1, "RECV", first, "collective-permute", computation, True, True),
        2: (1, "ALLREDUCE", psum, "all-reduce", computation, True, True),
        3: (2, "SEND", second, "collective-permute", computation, True, True)}
    ranks = {r["rank"]: r for r in group["ranks"]}
    assert shape.startswith("f32[2]")
    # a permute's input is not in its entry: only the result's count is compared
    assert (ranks[0]["program_numel_in"], ranks[0]["program_numel_out"]) == (None, 2)
    assert (ranks[2]["program_numel_in"], ranks[2]["program_numel_out"]) == (2, 2)

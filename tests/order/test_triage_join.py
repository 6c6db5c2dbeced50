"""``triage`` sets an HLO program beside the runtime's evidence rank by rank. The program is
real: a shard_map loop whose trip count XLA computes from ``partition-id`` (one iteration fewer
on the last partition), compiled by JAX with ``--xla_dump_to`` on a permuted mesh, so only the
dump's device table says which device runs that partition. The evidence is real: a 4-process
gloo job whose ranks run that loop as the devices do, under a hard timeout, writing Flight
Recorder dumps and profiler traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from meshtopo.cli._main import main

from ._jobs import run_ranks

HERE = Path(__file__).resolve().parent
ORDER = (2, 0, 3, 1)  # the mesh's devices: partition p runs on device ORDER[p]
TRIPS = 3  # loop iterations; the last partition runs one fewer
SHORT = ORDER[3]  # the device (and the rank) that leaves the loop early
ISSUED = [TRIPS - (device == SHORT) for device in range(4)]
pytestmark = [pytest.mark.jax, pytest.mark.timeout(300)]

_PROGRAM = textwrap.dedent(f"""
    import numpy as np, jax, jax.numpy as jnp
    from jax import lax
    from jax.sharding import Mesh, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices())[list({ORDER})], ("i",))
    def body(x):
        trips = {TRIPS} - (lax.axis_index("i") == 3).astype(jnp.int32)
        return lax.fori_loop(0, trips, lambda k, v: lax.psum(v, "i") * 0.5, x)
    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"),
                              check_vma=False))
    f.lower(jnp.arange(4.0)).compile()
""")


def _dump(directory: Path) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=(
        f"--xla_force_host_platform_device_count=8 --xla_dump_to={directory}"))
    done = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the program's module file, the job's folder of dumps and traces)."""
    root = tmp_path_factory.mktemp("join")
    with ThreadPoolExecutor(max_workers=2) as pool:
        dumped = pool.submit(_dump, root / "dump")
        ran = pool.submit(run_ranks, HERE / "_loop_worker.py", 4, root / "run",
                          ",".join(map(str, ISSUED)))
        dumped.result()
        ran.result()
    (module,) = sorted((root / "dump").glob("*jit_body*after_optimizations.txt"))
    assert sorted(p.name for p in (root / "run").iterdir()) == [
        *(f"fr_rank_{r}" for r in range(4)), *(f"rank{r}.pt.trace.json" for r in range(4))]
    return module, root / "run"


def _triage(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["triage", *args])
    code = exit_info.value.code
    assert isinstance(code, int)
    return code, capsys.readouterr().out


def test_the_program_explains_the_missing_rank(evidence: tuple[Path, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    module, run = evidence
    code, out = _triage([str(module), str(run), "--json"], capsys)
    assert code == 1
    answer = json.loads(out)
    kinds = {s["kind"]: s for s in answer["sources"]}
    assert kinds["flight_recorder"]["suspects"] == [SHORT]
    assert kinds["profiler_trace"]["suspects"] == [SHORT]
    assert "(device table: dump)" in kinds["hlo"]["summary"]
    assert [(j["program"], j["runtime"]) for j in answer["joins"]] == [
        (str(module), "flight recorder (4 files)"), (str(module), "profiler trace (4 files)")]
    for joined in answer["joins"]:
        assert joined["assumed"] and joined["unplaced"] == []
        assert [(r["rank"], r["device"], r["issued"], r["entered"], r["agrees"])
                for r in joined["ranks"]] == [(r, r, ISSUED[r], ISSUED[r], True)
                                              for r in range(4)]
        assert [list(r["loops"].values()) for r in joined["ranks"]] == [[n] for n in ISSUED]
    explained = [line for line in answer["agreements"] if line.startswith("the program")]
    assert len(explained) == 2
    assert explained[0].startswith(
        f"the program explains flight recorder (4 files)'s finding on rank {SHORT}: its device "
        f"{SHORT} issues {TRIPS - 1} collectives where devices [0, 2-3] issue {TRIPS}; while.")
    assert explained[0].endswith(f" runs {TRIPS - 1} times on device {SHORT} and {TRIPS} times "
                                 f"on the others")
    assert not any("beside" in line for line in answer["contradictions"])


def test_a_dump_directory_beside_the_job(evidence: tuple[Path, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The whole dump directory (modules without collectives, object files, buffer
    assignments): only the program with collectives is joined, and a module with none
    contradicts nothing."""
    module, run = evidence
    code, out = _triage([str(module.parent), str(run), "--json"], capsys)
    assert code == 1
    answer = json.loads(out)
    assert {j["program"] for j in answer["joins"]} >= {str(module)}
    assert all("jit_body" in j["program"] for j in answer["joins"])
    assert answer["contradictions"] == []


def test_ranks_placed_elsewhere_contradict_the_program(
        evidence: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 1 placed on device 2 and rank 2 on device 1: both contradict the program, each at
    the third collective, and the text says so."""
    module, run = evidence
    code, out = _triage([str(module), str(run / "fr_rank_0"), str(run / "fr_rank_1"),
                         str(run / "fr_rank_2"), str(run / "fr_rank_3"),
                         "--rank-devices", "0,2,1,3"], capsys)
    assert code == 1
    lines = [line for line in out.splitlines() if "beside flight recorder" in line]
    head = f"hlo ({module}) beside flight recorder (4 files) (ranks placed on devices as given)"
    assert lines == [
        f"agree: {head}: ranks [0, 3] entered exactly the collectives their devices issue (3 "
        f"collectives)",
        f"contradict: {head}: rank 1 entered 2 collectives where its device 2 issues 3; they "
        f"first differ at #3 (program: all_reduce, runtime: nothing more)",
        f"contradict: {head}: rank 2 entered 3 collectives where its device 1 issues 2; they "
        f"first differ at #3 (program: nothing more, runtime: all_reduce)"]

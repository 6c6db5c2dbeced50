"""``meshtopo run --backend torch`` under a launcher: torchrun on 127.0.0.1 (one node of 4
processes, and two "nodes" of 2), and srun's, Open MPI's and MPICH's environments, with no
meshtopo flags. Each rank
prints its own devices; together they equal ``meshtopo run``'s answer. Every launch is
bounded and its process group killed and reaped. The launched processes' runs fork their
processes from this test process's torch server (``torch_server``, started here before any
launch by a run of the same file, which must equal the local backend's), so they do not each
import torch."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.cli import main
from meshtopo.runtime._launch import free_port

from ._compare import assert_same

pytestmark = [pytest.mark.timeout(600)]
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
FILE = str(ROOT / "examples" / "replicas_x_partitions.hlo")
TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable))


@pytest.fixture
def environment(torch_server: str) -> dict[str, str]:
    """The launched processes' environment: meshtopo importable and ``torch_server`` set,
    that server running (a run of FILE on it here equals the local backend's)."""
    module = mt.hlo.load(FILE)
    assert_same(mt.runtime.execute(module, backend="torch", timeout=60),
                mt.runtime.execute(module, timeout=60))
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _start(arguments: list[str], environment: dict[str, str], log: Path) -> subprocess.Popen[str]:
    with open(log, "w", encoding="utf-8") as handle:
        return subprocess.Popen(arguments, env=environment, stdout=handle,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _finish(processes: list[subprocess.Popen[str]]) -> list[int]:
    """Each process's exit code (at most 240 s each); every process group is then killed
    and reaped."""
    try:
        return [process.wait(timeout=240) for process in processes]
    finally:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _devices(text: str) -> dict[int, list[object]]:
    """The devices of every JSON answer in ``text`` (one per rank, lines between them)."""
    found: dict[int, list[object]] = {}
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at != -1:
        answer, end = decoder.raw_decode(text, at)
        for device in answer["devices"]:
            found[device["device"]] = device["outputs"]
        at = text.find("\n{", end)
        at = at + 1 if at != -1 else -1
    return found


def _expected(capsys: pytest.CaptureFixture[str]) -> dict[int, list[object]]:
    with pytest.raises(SystemExit) as done:
        main(["run", FILE, "--json"])
    assert done.value.code == 0
    return _devices(capsys.readouterr().out)


def _rank_outputs(log_dir: Path) -> str:
    return "\n".join(path.read_text() for path in sorted(log_dir.rglob("stdout.log")))


@pytest.mark.skipif(TORCHRUN is None, reason="torchrun not installed")
def test_torchrun_one_node(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           environment: dict[str, str]) -> None:
    command = [TORCHRUN, "--nproc-per-node", "4", "--master-addr", "127.0.0.1",
               "--master-port", str(free_port()), "--log-dir", str(tmp_path / "logs"),
               "--redirects", "1", "-m", "meshtopo", "run", FILE, "--backend", "torch", "--json"]
    codes = _finish([_start(command, environment, tmp_path / "torchrun.log")])
    assert codes == [0], (tmp_path / "torchrun.log").read_text()[-3000:]
    assert _devices(_rank_outputs(tmp_path / "logs")) == _expected(capsys)


@pytest.mark.skipif(TORCHRUN is None, reason="torchrun not installed")
def test_torchrun_two_nodes_of_two(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   environment: dict[str, str]) -> None:
    port = str(free_port())
    processes = []
    for node in (0, 1):
        command = [TORCHRUN, "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "2",
                   "--master-addr", "127.0.0.1", "--master-port", port,
                   "--log-dir", str(tmp_path / f"logs{node}"), "--redirects", "1",
                   "-m", "meshtopo", "run", FILE, "--backend", "torch", "--json"]
        processes.append(_start(command, environment, tmp_path / f"node{node}.log"))
    codes = _finish(processes)
    assert codes == [0, 0], [(tmp_path / f"node{n}.log").read_text()[-2000:] for n in (0, 1)]
    found = _devices(_rank_outputs(tmp_path / "logs0") + "\n" + _rank_outputs(tmp_path / "logs1"))
    assert found == _expected(capsys)


def test_srun_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          environment: dict[str, str]) -> None:
    # What srun exports to each of 4 tasks (with MASTER_ADDR/MASTER_PORT, as env:// needs).
    port = str(free_port())
    processes = [
        _start([sys.executable, "-m", "meshtopo", "run", FILE, "--backend", "torch", "--json"],
               {**environment, "SLURM_PROCID": str(task), "SLURM_NTASKS": "4",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}, tmp_path / f"task{task}.log")
        for task in range(4)]
    codes = _finish(processes)
    logs = "\n".join((tmp_path / f"task{task}.log").read_text() for task in range(4))
    assert codes == [0, 0, 0, 0], logs[-3000:]
    assert _devices(logs) == _expected(capsys)


# What mpirun exports to each of 4 processes, on one host or on two hosts of 2: Open MPI's
# variables as "Environment variables set for MPI applications" lists them
# (https://docs.open-mpi.org/en/v5.0.x/tuning-apps/environment-var.html), MPICH's Hydra
# PMI_RANK and PMI_SIZE; MASTER_ADDR and MASTER_PORT as ``mpirun -x`` (``-genv``) exports them.
MPI_environmentS = {
    "open-mpi-one-host": lambda rank: {
        "OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": "4",
        "OMPI_COMM_WORLD_LOCAL_RANK": str(rank), "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
        "OMPI_COMM_WORLD_NODE_RANK": str(rank), "OMPI_UNIVERSE_SIZE": "4"},
    "open-mpi-two-hosts-of-two": lambda rank: {
        "OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": "4",
        "OMPI_COMM_WORLD_LOCAL_RANK": str(rank % 2), "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
        "OMPI_COMM_WORLD_NODE_RANK": str(rank % 2), "OMPI_UNIVERSE_SIZE": "4"},
    "mpich": lambda rank: {"PMI_RANK": str(rank), "PMI_SIZE": "4"},
}


@pytest.mark.parametrize("launcher", sorted(MPI_environmentS))
def test_mpirun_environment(launcher: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                            environment: dict[str, str]) -> None:
    # mpirun itself is not installed here: the processes are started with its environment.
    port = str(free_port())
    processes = [
        _start([sys.executable, "-m", "meshtopo", "run", FILE, "--backend", "torch", "--json"],
               {**environment, **MPI_environmentS[launcher](rank), "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port}, tmp_path / f"rank{rank}.log")
        for rank in range(4)]
    codes = _finish(processes)
    logs = "\n".join((tmp_path / f"rank{rank}.log").read_text() for rank in range(4))
    assert codes == [0, 0, 0, 0], logs[-3000:]
    assert _devices(logs) == _expected(capsys)


def test_a_launcher_without_a_store_address_is_refused(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    with pytest.raises(SystemExit) as done:
        main(["run", FILE, "--backend", "torch"])
    assert done.value.code == 2
    assert capsys.readouterr().err == (
        "meshtopo: error: mpirun started this process (OMPI_COMM_WORLD_RANK=0) but MASTER_ADDR "
        "and MASTER_PORT are not set: export the address and a free port of the first task's "
        "host to every task\n")

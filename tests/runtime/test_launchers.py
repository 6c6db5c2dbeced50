"""``meshtopo run --backend torch`` under a launcher: torchrun on 127.0.0.1 (one node of 4
processes, and two "nodes" of 2), and srun's, Open MPI's and MPICH's environments, with no
meshtopo flags. Each rank prints its own devices; together they equal ``meshtopo run``'s
answer. Every launch is bounded and its processes killed and reaped. The launched processes'
runs fork their processes from this test process's torch server (``torch_server``, started
here before any launch by a run of the same file, which must equal the local backend's), so
they do not each import torch. The three torchrun agents are forks of one process that
imported torchrun's module, and the srun and mpirun processes, all launched at once, forks of
one process that imported meshtopo's command line (``_forked_ranks``)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.cli import main
from meshtopo.runtime._launch import SERVER_VARIABLE, free_port

from ._compare import assert_same
from ._forked_ranks import run_forked

pytestmark = [pytest.mark.timeout(600)]
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
FILE = str(ROOT / "examples" / "replicas_x_partitions.hlo")
TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable))


@pytest.fixture(scope="module")
def environment(torch_server_path: str) -> dict[str, str]:
    """The launched processes' environment: this one's, meshtopo importable, and
    ``MESHTOPO_TORCH_SERVER`` naming this test process's server, which is running (a run of
    FILE on it here, equal to the local backend's, makes sure)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SERVER_VARIABLE, torch_server_path)
        module = mt.hlo.load(FILE)
        assert_same(mt.runtime.execute(module, backend="torch", timeout=60),
                    mt.runtime.execute(module, timeout=60))
        return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _launch(imports: list[str], ranks: list[dict[str, object]], directory: Path,
            environment: dict[str, str]) -> list[int]:
    """The exit codes of ``ranks`` (``_forked_ranks``' spec) launched at once as forks of one
    process that imported ``imports`` (bounded at 240 s, every process reaped)."""
    return run_forked({"timeout": 240, "imports": imports, "ranks": ranks}, directory,
                      environment)


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


@pytest.fixture(scope="module")
def torchruns(tmp_path_factory: pytest.TempPathFactory,
              environment: dict[str, str]) -> dict[str, tuple[list[int], list[str], str]]:
    """torchrun of ``meshtopo run FILE --backend torch --json`` on one node of 4 processes
    and on two nodes of 2 (its two agents on one port): for each, the agents' exit codes,
    their logs and the ranks' output. The three agents run at once, as forks of one process
    that imported torchrun's module (``torchrun`` is ``torch.distributed.run``'s main)."""
    directory = tmp_path_factory.mktemp("torchrun")
    run = ["-m", "meshtopo", "run", FILE, "--backend", "torch", "--json"]
    one, two = str(free_port()), str(free_port())
    agents = {
        "one-node": [["--nproc-per-node", "4", "--master-port", one]],
        "two-nodes": [["--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "2",
                       "--master-port", two] for node in (0, 1)],
    }
    ranks = [{"module": "torch.distributed.run",
              "argv": [*arguments, "--master-addr", "127.0.0.1", "--log-dir",
                       str(directory / f"{case}-{node}"), "--redirects", "1", *run],
              "output": str(directory / f"{case}-{node}.log")}
             for case, nodes in agents.items() for node, arguments in enumerate(nodes)]
    codes = iter(_launch(["torch.distributed.run"], ranks, directory, environment))
    return {case: ([next(codes) for _ in nodes],
                   [(directory / f"{case}-{n}.log").read_text() for n in range(len(nodes))],
                   "\n".join(path.read_text() for n in range(len(nodes))
                             for path in sorted((directory / f"{case}-{n}").rglob("stdout.log"))))
            for case, nodes in agents.items()}


@pytest.mark.skipif(TORCHRUN is None, reason="torchrun not installed")
def test_torchrun_one_node(capsys: pytest.CaptureFixture[str],
                           torchruns: dict[str, tuple[list[int], list[str], str]]) -> None:
    codes, logs, outputs = torchruns["one-node"]
    assert codes == [0], logs[0][-3000:]
    assert _devices(outputs) == _expected(capsys)


@pytest.mark.skipif(TORCHRUN is None, reason="torchrun not installed")
def test_torchrun_two_nodes_of_two(capsys: pytest.CaptureFixture[str],
                                   torchruns: dict[str, tuple[list[int], list[str], str]]
                                   ) -> None:
    codes, logs, outputs = torchruns["two-nodes"]
    assert codes == [0, 0], [log[-2000:] for log in logs]
    assert _devices(outputs) == _expected(capsys)


# What each launcher exports to each of 4 processes: srun; mpirun on one host or on two hosts
# of 2, Open MPI's variables as "Environment variables set for MPI applications" lists them
# (https://docs.open-mpi.org/en/v5.0.x/tuning-apps/environment-var.html), MPICH's Hydra
# PMI_RANK and PMI_SIZE. MASTER_ADDR and MASTER_PORT are added as env:// needs them
# (``mpirun -x``, ``-genv``).
LAUNCHER_ENVIRONMENTS = {
    "srun": lambda rank: {"SLURM_PROCID": str(rank), "SLURM_NTASKS": "4"},
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


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory,
             environment: dict[str, str]) -> dict[str, tuple[list[int], str]]:
    """Each environment of ``LAUNCHER_ENVIRONMENTS``: the exit codes and the output of its 4
    processes of ``python -m meshtopo run FILE --backend torch --json`` (srun and mpirun are
    not installed here: the processes are started with their environment). The 16 processes
    run at once, each job on a port of its own, as forks of one process that imported
    meshtopo's command line."""
    directory = tmp_path_factory.mktemp("launched")
    ports: set[int] = set()
    while len(ports) < len(LAUNCHER_ENVIRONMENTS):
        ports.add(free_port())
    ranks = [{"module": "meshtopo", "argv": ["run", FILE, "--backend", "torch", "--json"],
              "env": {**environment, **variables(rank), "MASTER_ADDR": "127.0.0.1",
                      "MASTER_PORT": str(port)},
              "output": str(directory / f"{name}-{rank}.log")}
             for (name, variables), port in zip(LAUNCHER_ENVIRONMENTS.items(), sorted(ports),
                                                strict=True)
             for rank in range(4)]
    codes = _launch(["meshtopo.cli._run._command"], ranks, directory, environment)
    return {name: (codes[4 * i:4 * i + 4],
                   "\n".join((directory / f"{name}-{rank}.log").read_text() for rank in range(4)))
            for i, name in enumerate(LAUNCHER_ENVIRONMENTS)}


def _check(launcher: str, launched: dict[str, tuple[list[int], str]],
           capsys: pytest.CaptureFixture[str]) -> None:
    codes, logs = launched[launcher]
    assert codes == [0, 0, 0, 0], logs[-3000:]
    assert _devices(logs) == _expected(capsys)


def test_srun_environment(capsys: pytest.CaptureFixture[str],
                          launched: dict[str, tuple[list[int], str]]) -> None:
    _check("srun", launched, capsys)


@pytest.mark.parametrize("launcher", ["mpich", "open-mpi-one-host", "open-mpi-two-hosts-of-two"])
def test_mpirun_environment(launcher: str, capsys: pytest.CaptureFixture[str],
                            launched: dict[str, tuple[list[int], str]]) -> None:
    _check(launcher, launched, capsys)


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

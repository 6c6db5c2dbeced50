"""Start, watch and reap the processes of the ``torch`` backend.

``run_processes`` writes a job directory and starts one ``_worker`` process, in a session of
its own, that forks a worker per local device (world ranks ``node_rank * nproc ...``; node
0's first worker hosts the TCPStore on ``master_addr:master_port``), and waits. A worker that
reports an error ends the run with that error (the others get two seconds to report theirs);
a worker that dies without reporting (killed) ends it at once with an error naming its
device, rank and signal. Before ``run_processes`` returns or raises, the session it started
is killed and its first process reaped; workers also die with their parent
(``PR_SET_PDEATHSIG``, Linux).

With ``MESHTOPO_TORCH_SERVER`` set (read at each run) to the path of a Unix socket, that first
process is not a new Python importing torch but a fork of the torch server listening there
(``_worker --listen``), which imported torch once: a run then costs its own work, not an
import of torch (some 2.5 CPU-seconds). When no server answers at the path, this process
starts one there, which lives until this process ends (killed and reaped at exit; it also dies
with this process). Other processes given the same path use that server while it lives.
The server kills a run's session when the run ends or its caller goes away, and reaps it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InvalidArgumentError, MeshtopoError
from ._plan import Plan
from ._rendezvous import RendezvousError, combined
from ._replay import Replay
from ._values import Value, storable, typed

_GRACE = 2.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
SERVER_VARIABLE = "MESHTOPO_TORCH_SERVER"
SERVER_START_SECONDS = 120.0
"""How long a torch server this process started has to listen (it imports torch first)."""
SERVER_STOP_SECONDS = 30.0
"""How long a torch server has to answer that a run it was asked to stop ended."""
_started_servers: dict[str, subprocess.Popen[bytes]] = {}
_server_lock = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _reported(record: Mapping[str, object], device: int) -> MeshtopoError:
    message = str(record["message"])
    if record["type"] == "RendezvousError":
        return RendezvousError(message, str(record["op_name"]), str(record["clique"]),
                               list(record["missing"]), list(record["arrived"]),  # type: ignore[call-overload]
                               float(record["waited"]))  # type: ignore[arg-type]
    if record["type"] == "InvalidArgumentError":
        return InvalidArgumentError(f"device {device}: {message}")
    return MeshtopoError(f"device {device}: {record['type']}: {message}")


def _load_values(path: Path, device: int) -> Value:
    with np.load(path) as data:
        if str(device) in data.files:
            return np.array(data[str(device)])
        flat = {tuple(int(i) for i in n.split("/")[1:]): np.array(data[n]) for n in data.files}

    def build(prefix: tuple[int, ...]) -> Value:
        if prefix in flat:
            return flat[prefix]
        count = 1 + max(k[len(prefix)] for k in flat if k[: len(prefix)] == prefix
                        and len(k) > len(prefix))
        return tuple(build((*prefix, i)) for i in range(count))

    return build(())


def _worker_environment() -> dict[str, str]:
    """The environment of the torch backend's processes: this one's, meshtopo importable,
    torch's C++ log quiet (each store poll's timeout, a failed connection's stack trace):
    errors come back through the job directory, one line each."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p))
    env.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    return env


def _stop_started_servers() -> None:
    """Kill and reap the torch servers this process started (at exit), and remove the
    socket of each that was still serving (one that ended at once left another's)."""
    for path, server in list(_started_servers.items()):
        serving = server.poll() is None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        if serving:
            with contextlib.suppress(OSError):
                os.unlink(path)
        del _started_servers[path]


atexit.register(_stop_started_servers)


def _server_connection(path: str) -> socket.socket:
    """A connection to the torch server at ``path``, started here first if none answers
    (see the module docstring); ``MeshtopoError`` if it cannot be reached."""
    if len(os.fsencode(path)) > 107:
        raise InvalidArgumentError(f"{SERVER_VARIABLE}={path!r} is too long for a Unix "
                                   "socket path (at most 107 bytes)")
    with _server_lock:
        deadline = time.monotonic() + SERVER_START_SECONDS
        started = False
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                sock.connect(path)
                return sock
            except (FileNotFoundError, ConnectionRefusedError) as error:
                sock.close()
                server = _started_servers.get(path)
                if server is not None and server.poll() is not None:
                    # One started earlier has died (or, finding another server there, ended
                    # at once): start anew, once.
                    del _started_servers[path]
                    if started:
                        raise MeshtopoError(
                            f"the torch server at {path} ({SERVER_VARIABLE}) ended with code "
                            f"{server.returncode} before it listened") from error
                    server = None
                if server is None:
                    _started_servers[path] = subprocess.Popen(
                        [sys.executable, "-m", "meshtopo.runtime._worker", "--listen", path],
                        env=_worker_environment(), stdout=subprocess.DEVNULL,
                        start_new_session=True)
                    started = True
                elif time.monotonic() > deadline:
                    raise MeshtopoError(f"the torch server at {path} ({SERVER_VARIABLE}) did "
                                        f"not listen within {SERVER_START_SECONDS:g} s") from error
                time.sleep(0.05)


class ServedRun:
    """The first process of a run, forked by a torch server (see the module docstring); it
    answers ``pid``, ``poll()`` and ``returncode`` as a ``subprocess.Popen`` does."""

    def __init__(self, path: str, directory: Path, ranks: Sequence[int]) -> None:
        self.path = path
        self.returncode: int | None = None
        self.connection = _server_connection(path)
        try:
            request = json.dumps({"job": str(directory), "ranks": list(ranks),
                                  "env": _worker_environment()}).encode()
            socket.send_fds(self.connection, [request], [2])
            self.connection.settimeout(SERVER_STOP_SECONDS)
            self.pid = int(json.loads(self.connection.recv(4096))["pid"])
        except (OSError, ValueError, KeyError) as error:
            self.connection.close()
            raise MeshtopoError(f"the torch server at {path} ({SERVER_VARIABLE}) did not "
                                f"start the run: {error}") from error

    def _read(self, timeout: float) -> None:
        """Take the server's ``ended CODE`` within ``timeout`` seconds, if it came (a closed
        connection: the server died, and with it the run)."""
        self.connection.settimeout(timeout)
        try:
            message = self.connection.recv(64).decode()
        except TimeoutError:
            return
        except OSError:
            message = ""
        self.returncode = int(message.split()[1]) if message.startswith("ended ") else (
            -signal.SIGKILL)

    def poll(self) -> int | None:
        """The run's exit code once the server reaped it, else None."""
        if self.returncode is None:
            self._read(0.0001)
        return self.returncode

    def stop(self) -> None:
        """Have the server kill the run's session; return once it reaped the run."""
        try:
            if self.returncode is None:
                with contextlib.suppress(OSError):
                    self.connection.send(b"stop")
                self._read(SERVER_STOP_SECONDS)
                if self.returncode is None:
                    raise MeshtopoError(
                        f"the torch server at {self.path} ({SERVER_VARIABLE}) did not end run "
                        f"{self.pid} within {SERVER_STOP_SECONDS:g} s")
        finally:
            self.connection.close()


class Job:
    """The processes of one run on this node, and what they reported."""

    def __init__(self, directory: Path, ranks: Sequence[int], devices: Sequence[int]) -> None:
        self.directory = directory
        self.ranks = list(ranks)
        self.devices = list(devices)
        server = os.environ.get(SERVER_VARIABLE)
        self.process: subprocess.Popen[bytes] | ServedRun
        if server:
            self.process = ServedRun(server, directory, self.ranks)
        else:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "meshtopo.runtime._worker", str(directory),
                 ",".join(str(r) for r in self.ranks)],
                env=_worker_environment(), stdout=subprocess.DEVNULL, start_new_session=True)

    def _status(self, rank: int) -> int | None:
        path = self.directory / f"status-{rank}"
        return int(path.read_text()) if path.exists() else None

    def wait(self) -> None:
        """Return when every worker succeeded; raise the run's error otherwise."""
        failed_at: float | None = None
        errors: dict[int, MeshtopoError] = {}
        while True:
            running = 0
            server_gone = self.process.poll() is not None
            for rank in self.ranks:
                device = self.devices[rank]
                report = self.directory / f"error-{device}.json"
                if rank not in errors and report.exists():
                    errors[rank] = _reported(json.loads(report.read_text()), device)
                    failed_at = failed_at or time.monotonic()
                code = self._status(rank)
                if code is None and server_gone:
                    raise MeshtopoError(
                        f"the worker process of the run (pid {self.process.pid}) ended with "
                        f"code {self.process.returncode} before device {device} finished")
                if code is None:
                    running += 0 if rank in errors else 1
                    continue
                if code == 0 or rank in errors:
                    continue
                how = (f"was killed by signal {signal.Signals(-code).name}" if code < 0
                       else f"exited with code {code} without reporting an error")
                raise MeshtopoError(
                    f"device {device} (world rank {rank}) {how}; the run was stopped and its "
                    "other processes killed")
            if not running or (failed_at is not None and time.monotonic() - failed_at > _GRACE):
                break
            time.sleep(0.02)
        if errors:
            rendezvous = [e for _, e in sorted(errors.items()) if isinstance(e, RendezvousError)]
            raise combined(rendezvous) if rendezvous else next(iter(errors.values()))

    def reap(self) -> None:
        """Kill the session this job started (its first process and every worker) and reap
        it (a torch server reaps the runs it forked)."""
        if isinstance(self.process, ServedRun):
            self.process.stop()
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def run_processes(source: Plan | Replay, inputs: Mapping[int, Sequence[np.ndarray]] | None,
                  timeout: float, nnodes: int = 1, node_rank: int = 0,
                  master_addr: str = "127.0.0.1", master_port: int | None = None,
                  store_served: bool = False) -> dict[int, Any]:
    """Execute a ``Plan`` (with ``inputs``) or a ``Replay`` on the ``torch`` backend; this
    node's results by device: entry root values, or seconds per collective by name.
    ``store_served``: a launcher (torchrun's agent) already serves the TCPStore at
    ``master_addr:master_port``, which every worker joins."""
    if importlib.util.find_spec("torch") is None:
        raise InvalidArgumentError("the torch backend needs torch, which is not installed "
                                   "here: pip install 'meshtopo[torch]'")
    world = source.devices
    if nnodes < 1 or len(world) % nnodes or not 0 <= node_rank < nnodes:
        raise InvalidArgumentError(
            f"{len(world)} devices cannot be spread over {nnodes} nodes as node {node_rank}: "
            "the device count must be a multiple of --nnodes and 0 <= --node-rank < --nnodes"
        )
    if nnodes > 1 and master_port is None:
        raise InvalidArgumentError("a run over several nodes needs --master-port")
    nproc = len(world) // nnodes
    ranks = list(range(node_rank * nproc, (node_rank + 1) * nproc))
    replaying = isinstance(source, Replay)
    with tempfile.TemporaryDirectory(prefix="meshtopo-run-") as tmp:
        directory = Path(tmp)
        (directory / "module.hlo").write_text(source.module.text)
        np.save(directory / "table.npy", source.assignment.array)
        local = {f"{world[r]}/{k}": storable(a) for r in ranks
                 for k, a in enumerate((inputs or {}).get(world[r], []))}
        np.savez(directory / "inputs.npz", **local)  # type: ignore[arg-type]
        (directory / "config.json").write_text(json.dumps({
            "devices": world, "nproc": nproc, "timeout": timeout, "master_addr": master_addr,
            "master_port": master_port if master_port is not None else free_port(master_addr),
            "parameters": len((inputs or {}).get(world[ranks[0]], [])),
            "mode": "replay" if replaying else "execute", "store_served": store_served,
        }))
        job = Job(directory, ranks, world)
        try:
            job.wait()
        finally:
            job.reap()
        if replaying:
            return {world[r]: json.loads((directory / f"out-{world[r]}.json").read_text())
                    for r in ranks}
        root = source.module.entry.root
        return {world[r]: typed(_load_values(directory / f"out-{world[r]}.npz", world[r]),
                                root.shape, "the entry root") if root is not None
                else _load_values(directory / f"out-{world[r]}.npz", world[r])
                for r in ranks}

"""The processes of the ``torch`` backend: ``python -m meshtopo.runtime._worker JOB RANKS``.

This process imports torch once and forks one worker per world rank in ``RANKS``
(comma-separated), so eight workers do not each pay for importing torch. A worker reads the
job directory written by ``_launch`` (``module.hlo``, ``table.npy``, ``inputs.npz``,
``config.json``), joins the TCPStore and the gloo world as its world rank (device
``config["devices"][rank]``; every device meets there first, so one that never starts is a
``RendezvousError`` naming it), creates its process groups, executes the entry computation (or replays the collectives,
``config["mode"] == "replay"``) and
writes ``out-<device>.npz`` (or, replaying, the seconds per collective in
``out-<device>.json``; on failure ``error-<device>.json`` and exit code 1). For every worker that
ends, this process writes ``status-<rank>`` (the exit code, or minus the signal number).
Every process here is killed when its parent dies (``PR_SET_PDEATHSIG``, Linux).

``python -m meshtopo.runtime._worker --listen PATH`` is the torch server instead
(``MESHTOPO_TORCH_SERVER``, see ``_launch``): it imports torch (and ml_dtypes, when installed)
once and listens on the Unix socket PATH; for each connection (a run: one request naming the
job directory and ranks, the caller's environment, and its stderr as a passed descriptor) it
forks a process that does what ``python -m meshtopo.runtime._worker JOB RANKS`` does, in a
session of its own, and answers its pid. On ``stop`` or when the connection closes, that
session is killed; when the forked process is reaped, the server answers ``ended CODE``. The
server adopts and reaps every orphan of its runs (``PR_SET_CHILD_SUBREAPER``) and dies with
its parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

LINGER = 10.0
"""Seconds the store's process stays after reporting an error (the launcher kills it sooner)."""


def _error_record(error: BaseException) -> dict[str, object]:
    from ._rendezvous import RendezvousError

    record: dict[str, object] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, RendezvousError):
        record.update(op_name=error.op_name, clique=error.clique, missing=error.missing,
                      arrived=error.arrived, waited=error.waited)
    return record


def _store(config: dict[str, Any], rank: int, timeout: float) -> Any:
    """The job's TCPStore: served by world rank 0 (on host 0), joined by the others within
    ``timeout``; a store that never answers is a ``RendezvousError`` naming host 0's devices,
    which never came."""
    import torch.distributed as dist

    from ._rendezvous import RendezvousError

    address, port = config["master_addr"], int(config["master_port"])
    devices = [int(d) for d in config["devices"]]
    started = time.monotonic()
    try:
        serves = rank == 0 and not config.get("store_served", False)
        return dist.TCPStore(address, port, len(devices), is_master=serves,
                             timeout=timedelta(seconds=timeout + 30 if rank == 0 else timeout),
                             wait_for_workers=False)
    except (RuntimeError, OSError) as error:  # DistNetworkError is a RuntimeError
        if rank == 0:
            raise
        nproc = int(config["nproc"])
        host_zero, ours = devices[:nproc], devices[rank - rank % nproc:][:nproc]
        message = (f"the job's store on host 0 ({address}:{port}) did not answer devices "
                   f"{','.join(map(str, ours))} within {timeout:g} s: host 0 (node rank 0, "
                   f"devices {','.join(map(str, host_zero))}) never started the job, or "
                   "--master-addr/--master-port do not name it")
        raise RendezvousError(message, "the start of the job", "every device of the job",
                              host_zero, ours, time.monotonic() - started) from error


def main(job: Path, rank: int) -> int:
    """Run world rank ``rank`` of the job in ``job``; 0 on success, 1 on a reported error."""
    config = json.loads((job / "config.json").read_text())
    devices = [int(d) for d in config["devices"]]
    device = devices[rank]
    try:
        import torch.distributed as dist

        from ..hlo import parse_module
        from ._clique_key import CliqueKey
        from ._communicator import Communicator
        from ._execute import parameter_shapes, save_values
        from ._interpreter import DeviceExecution
        from ._plan import Plan, Route
        from ._replay import Replay
        from ._torch import StoreRendezvous, TorchFactory
        from ._values import as_dtype

        module = parse_module((job / "module.hlo").read_text(),
                              device_assignment=np.load(job / "table.npy"))
        replaying = config["mode"] == "replay"
        source: Plan | Replay = Replay(module) if replaying else Plan(module)
        routes = ([s.routes for s in source.steps.values()] if isinstance(source, Replay)
                  else list(source.routes.values()))
        timeout = float(config["timeout"])
        store = _store(config, rank, timeout)
        # Every device joins the job first, so a host that never starts is named.
        StoreRendezvous(dist.PrefixStore("job/", store), timeout).join(
            "start", device, devices, "the start of the job", "every device of the job")
        dist.init_process_group("gloo", store=dist.PrefixStore("pg/", store), rank=rank,
                                world_size=len(devices), timeout=timedelta(seconds=timeout))
        factory = TorchFactory(store, devices, timeout, membership="operation")
        factory.groups.create_all(route.key.devices for r in routes for route in r.values())
        communicators: dict[CliqueKey, Communicator] = {}

        def communicator_for(route: Route) -> Communicator:
            if route.key not in communicators:
                [communicators[route.key]] = factory.create_communicators(
                    route.key, None, [(device, route.rank)])
            return communicators[route.key]

        if isinstance(source, Replay):
            seconds = source.run_device(device, communicator_for)
            (job / f"out-{device}.json").write_text(json.dumps(seconds))
        else:
            with np.load(job / "inputs.npz") as data:
                arguments = [as_dtype(data[f"{device}/{k}"], dtype)
                             for k, (_, dtype) in enumerate(parameter_shapes(source))]
            value = DeviceExecution(source, device, communicator_for).run(arguments)
            save_values(job / f"out-{device}.npz", {device: value})
        # Leave together; the store's host (rank 0) leaves last, once every other worker
        # had its answer (an earlier exit would reset their connections).
        everyone = range(len(devices))
        store.set(f"exit/{rank}", "1")
        store.wait([f"exit/{r}" for r in everyone], timedelta(seconds=timeout))
        store.set(f"left/{rank}", "1")
        if rank == 0:
            store.wait([f"left/{r}" for r in everyone], timedelta(seconds=timeout))
        (job / f"groups-{device}.json").write_text(json.dumps(factory.groups.created))
        return 0
    except Exception as error:  # reported to the launcher through the job directory
        (job / f"error-{device}.tmp").write_text(json.dumps(_error_record(error)))
        (job / f"error-{device}.tmp").rename(job / f"error-{device}.json")
        if rank == 0:
            # This process serves the store: stay until the launcher, having collected the
            # other workers' reports, kills the run (they would fail on a lost store instead).
            time.sleep(LINGER)
        return 1


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(option, value)


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no-op elsewhere)."""
    _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _import_torch() -> None:
    """Import what every worker needs, once, before forking them."""
    import torch.distributed  # noqa: F401

    from . import _execute, _torch  # noqa: F401


def serve(job: Path, ranks: list[int]) -> None:
    """Fork a worker per rank, wait for each and record how it ended."""
    _import_torch()
    children = {}
    for rank in ranks:
        pid = os.fork()
        if pid == 0:
            die_with_parent()
            code = main(job, rank)
            sys.stderr.flush()
            os._exit(code)  # skip interpreter teardown (torch's takes seconds)
        children[pid] = rank
    while children:
        pid, status = os.wait()
        rank = children.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        (job / f"status-{rank}.tmp").write_text(str(code))
        (job / f"status-{rank}.tmp").rename(job / f"status-{rank}")


REQUEST_BYTES = 1 << 20
"""The largest request a torch server reads (a JSON object: job, ranks, env)."""
REQUEST_SECONDS = 10.0
"""How long a torch server waits for the request of a caller that connected."""


def _start_run(request: bytes, stderr: int, others: list[socket.socket]) -> int:
    """Fork the process of one run (see the module docstring); its pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        for sock in others:
            sock.close()
        os.setsid()
        die_with_parent()
        os.dup2(stderr, 2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        os.close(stderr)
        asked = json.loads(request)
        os.environ.clear()
        os.environ.update(asked["env"])
        serve(Path(asked["job"]), [int(r) for r in asked["ranks"]])
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _answer(connection: socket.socket, message: str) -> None:
    with contextlib.suppress(OSError):
        connection.send(message.encode())


def listen(path: str) -> None:
    """Serve runs on the Unix socket ``path`` until this process is killed or its parent
    dies (see the module docstring); a stale socket file at ``path`` is replaced, and when
    another server listens there this one ends at once."""
    die_with_parent()
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans of the runs are reaped here
    _import_torch()
    with contextlib.suppress(ImportError):  # bf16 and f8 runs' types (0.7 CPU-s a process)
        import ml_dtypes  # noqa: F401
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        listener.bind(path)
    except OSError:  # a socket file is there already: another server's, or a stale one
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as probe:
            try:
                probe.connect(path)
                return  # another server listens there: its callers connect to it
            except OSError:
                os.unlink(path)
        listener.bind(path)
    listener.listen()
    runs: dict[socket.socket, int] = {}  # connection: its run's pid, 0 once reaped
    while True:
        readable, _, _ = select.select([listener, *runs], [], [], 0.05)
        for sock in readable:
            if sock is listener:
                connection, _ = listener.accept()
                connection.settimeout(REQUEST_SECONDS)  # a caller that never asks is dropped
                try:
                    request, fds, _, _ = socket.recv_fds(connection, REQUEST_BYTES, 1)
                except OSError:
                    request, fds = b"", []
                if len(fds) != 1:
                    for fd in fds:
                        os.close(fd)
                    connection.close()
                    continue
                pid = _start_run(request, fds[0], [listener, connection, *runs])
                os.close(fds[0])
                runs[connection] = pid
                _answer(connection, json.dumps({"pid": pid}))
                continue
            try:
                message = sock.recv(64)
            except OSError:
                message = b""
            if runs[sock]:  # "stop", or the caller is gone: end its run (its session, and
                # its first process, in case that has not made the session yet)
                for kill in (os.killpg, os.kill):
                    with contextlib.suppress(ProcessLookupError):
                        kill(runs[sock], signal.SIGKILL)
            if message == b"":
                del runs[sock]
                sock.close()
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            for sock, run in list(runs.items()):
                if run == pid:
                    runs[sock] = 0
                    _answer(sock, f"ended {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    if sys.argv[1] == "--listen":
        listen(sys.argv[2])
    else:
        die_with_parent()
        serve(Path(sys.argv[1]), [int(r) for r in sys.argv[2].split(",")])

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
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
import time
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


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def serve(job: Path, ranks: list[int]) -> None:
    """Fork a worker per rank, wait for each and record how it ended."""
    import torch.distributed  # noqa: F401  (imported once, shared by the forked workers)

    from . import _execute, _torch  # noqa: F401

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


if __name__ == "__main__":
    die_with_parent()
    serve(Path(sys.argv[1]), [int(r) for r in sys.argv[2].split(",")])

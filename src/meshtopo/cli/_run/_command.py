"""``run`` and ``replay``: execute an HLO module's entry computation on every device, or
replay its collectives with buffers of the real shapes (``meshtopo.runtime``).

The module, the device assignment and the inputs are checked before any process starts (a
bad file exits 2 with one stderr line). ``--backend torch`` starts one gloo process per
device; over several hosts every host runs the same command with its own ``--node-rank``
(torchrun-style). The ``--json`` schema is in docs/cli-json.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import click
import numpy as np
from rich.text import Text

from ..._errors import InvalidArgumentError
from ...groups._placement import DeviceAssignment
from ...hlo import Module, load
from ...runtime import BACKENDS, Plan, Replay, load_inputs, save_values
from ...runtime._execute import checked_inputs, run_local, run_threads
from ...runtime._rendezvous import DEFAULT_TIMEOUT
from ...runtime._values import Value
from .._inputs import device_limit_option, module_option, one_module_file
from .._options import DEVICE_ASSIGNMENT_HELP, DecimalRange, device_assignment
from .._render import console, emit_json, plural
from .._trips import trip_text
from ._launcher import launched


def _leaves(value: Value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [leaf for element in value for leaf in _leaves(element)]
    return [np.asarray(value)]


def _leaf_json(array: np.ndarray) -> dict[str, object]:
    values = array.tolist()
    if array.dtype.kind == "c":
        values = [[v.real, v.imag] for v in array.reshape(-1).tolist()]
    return {"dtype": str(array.dtype), "shape": list(array.shape), "values": values}


F = TypeVar("F", bound=Callable[..., Any])


def _placed(file: str, assignment_spec: str | None,
            module_choice: str | None) -> tuple[Module, DeviceAssignment | None]:
    """The module in ``file`` (a dump directory: its module holding collectives, or the one
    ``--module`` names) and the ``--device-assignment`` table for it (None: the module's
    own)."""
    module = load(one_module_file(file, module_choice))
    if assignment_spec is None:
        return module, None
    return module, device_assignment(assignment_spec, module.replica_count, module.num_partitions)


def _torch_processes(plan: Plan | Replay, inputs: dict[int, list[np.ndarray]] | None,
                     timeout: float, flags: tuple[int, int, str, int | None]) -> dict[int, Any]:
    """The torch backend's results on this node. Under torchrun, srun or mpirun (``_launcher``)
    each launched process is a node of its own, placed by the launcher's environment; else
    ``flags`` (``--nnodes``, ``--node-rank``, ``--master-addr``, ``--master-port``) place it."""
    from ...runtime._launch import run_processes

    place = launched()
    if place is None:
        return run_processes(plan, inputs, timeout, *flags)
    if flags[:2] != (1, 0) or flags[3] is not None:
        raise InvalidArgumentError(f"under {place.launcher} the run is placed by its "
                                   "environment: drop --nnodes, --node-rank and --master-port")
    return run_processes(plan, inputs, timeout, place.world_size, place.rank, place.master_addr,
                         place.master_port, store_served=place.store_served)


def _backend_option(command: F) -> F:
    """``--backend local|torch``, shared by run and replay."""
    return click.option(
        "--backend", type=click.Choice(BACKENDS), default="local", show_default=True,
        help="local: one thread per device, numpy; torch: one gloo process per device.")(command)


def _placement_options(command: F) -> F:
    """``--device-assignment``, ``--module``, ``--timeout`` and ``--json``, shared by run and
    replay."""
    for option in (
        module_option,
        click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True),
                     default=DEFAULT_TIMEOUT, show_default=True,
                     help="Rendezvous timeout per collective, in seconds."),
        click.option("--device-assignment", "assignment_spec", default=None,
                     help="The [replica][partition] table (default: the module's). "
                          + DEVICE_ASSIGNMENT_HELP),
    ):
        command = option(command)
    return command


@click.command()
@click.argument("file")
@_backend_option
@click.option("--nproc", type=DecimalRange(min=1), default=None,
              help="torch: processes on this host (default: every device / --nnodes).")
@click.option("--nnodes", type=DecimalRange(min=1), default=1, show_default=True,
              help="torch: number of hosts taking part.")
@click.option("--node-rank", type=DecimalRange(min=0), default=0, show_default=True,
              help="torch: this host's index, 0 .. --nnodes - 1 (host 0 serves the store).")
@click.option("--master-addr", default="127.0.0.1", show_default=True,
              help="torch: address of host 0, where the TCPStore listens.")
@click.option("--master-port", type=DecimalRange(min=1, max=65535), default=None,
              help="torch: TCPStore port on host 0 (default on one host: a free port).")
@click.option("--inputs", "inputs_path", default=None,
              help="An .npz with one array per device and entry parameter, keys "
                   "'<device>/<parameter number>' (default: generated per device).")
@click.option("--output", "output_path", default=None,
              help="Write this host's results to an .npz (keys '<device>', tuple elements "
                   "'<device>/<index>'); bf16 and f8 values as their bits (uint16, uint8: "
                   "view them as ml_dtypes' types).")
@_placement_options
@device_limit_option
def run(file: str, backend: str, nproc: int | None, nnodes: int, node_rank: int,
        master_addr: str, master_port: int | None, inputs_path: str | None,
        output_path: str | None, assignment_spec: str | None, module_choice: str | None,
        timeout: float, as_json: bool) -> int:
    """Execute the entry computation of the HLO module in FILE on every device.

    Prints each device's result (this host's devices with --backend torch). A collective
    whose participants do not all arrive within --timeout ends the run with an error naming
    the instruction and the devices that never came.
    """
    module, assignment = _placed(file, assignment_spec, module_choice)
    plan = Plan(module, assignment)
    inputs = checked_inputs(plan, None if inputs_path is None else load_inputs(inputs_path))
    devices = len(plan.devices)
    if backend == "local" and (nproc is not None or nnodes != 1):
        raise InvalidArgumentError("--nproc and --nnodes need --backend torch")
    if nproc is not None and nproc * nnodes != devices:
        raise InvalidArgumentError(
            f"--nproc {nproc} x --nnodes {nnodes} must equal the module's "
            f"{plural(devices, 'device')} "
            f"(replica_count={module.replica_count} x num_partitions={module.num_partitions})"
        )
    if node_rank >= nnodes:
        raise InvalidArgumentError(f"--node-rank {node_rank} must be below --nnodes {nnodes}")
    started = time.perf_counter()
    if backend == "local":
        outputs = run_local(plan, inputs, timeout)
    else:
        outputs = _torch_processes(plan, inputs, timeout, (nnodes, node_rank, master_addr,
                                                           master_port))
    seconds = time.perf_counter() - started
    if output_path is not None:
        save_values(output_path, outputs)
    name = module.source or file
    if as_json:
        emit_json({
            "file": name, "backend": backend, "seconds": seconds,
            "replica_count": module.replica_count, "num_partitions": module.num_partitions,
            "devices": [
                {"device": d, "replica": plan.replica_of[d], "partition": plan.partition_of[d],
                 "outputs": [_leaf_json(a) for a in _leaves(v)]}
                for d, v in outputs.items()
            ],
        })
        return 0
    out = console()
    for device, value in outputs.items():
        text = Text(f"device {device} (replica {plan.replica_of[device]}, partition "
                    f"{plan.partition_of[device]}): ", style="bold")
        text.append("; ".join(np.array2string(a, threshold=16, separator=",")
                              .replace("\n", "") for a in _leaves(value)))
        out.print(text)
    out.print(Text(f"{name}: {plural(len(outputs), 'device')} ran on {backend} in {seconds:.2f} s",
                   style="bold green"))
    return 0


@click.command()
@click.argument("file")
@_backend_option
@click.option("--nproc", type=DecimalRange(min=1), default=None,
              help="torch: processes on this host; must equal the module's device count.")
@_placement_options
@device_limit_option
def replay(file: str, backend: str, nproc: int | None, assignment_spec: str | None,
           module_choice: str | None, timeout: float, as_json: bool) -> int:
    """Replay the communication of the HLO module in FILE: every device issues its
    collectives in order (the entry computation's text order, which is the schedule of an
    is_scheduled module, entering the branch each device takes where a conditional depends
    only on replica-id/partition-id) with zero buffers of the real shapes and types.

    Prints each collective's bytes and its time over the devices (min / median / max). A
    device that never arrives ends the replay with the rendezvous error naming it.
    """
    module, assignment = _placed(file, assignment_spec, module_choice)
    plan = Replay(module, assignment)
    if backend == "local" and nproc is not None:
        raise InvalidArgumentError("--nproc needs --backend torch")
    if nproc is not None and nproc != len(plan.devices):
        raise InvalidArgumentError(
            f"--nproc {nproc} must equal the module's {plural(len(plan.devices), 'device')}")
    started = time.perf_counter()
    if backend == "local":
        seconds = run_threads(plan.devices, timeout, plan.run_device)
    else:
        seconds = _torch_processes(plan, None, timeout, (1, 0, "127.0.0.1", None))
    elapsed = time.perf_counter() - started
    name = module.source or file
    rows = []
    for step_name, step in plan.steps.items():
        times = [seconds[d][step_name] for d in plan.devices
                 if d in seconds and step_name in seconds[d]]
        rows.append((step, times))
    if as_json:
        emit_json({
            "file": name, "backend": backend, "seconds": elapsed,
            "order": "each device's issue order (meshtopo.order.issue_order)",
            "notes": plan.unresolved,
            "collectives": [
                {"name": step.instruction.name, "opcode": step.instruction.opcode,
                 "line": step.instruction.line, "bytes": step.bytes,
                 "trip_count": plan.trip_counts[(step.instruction.computation,
                                                 step.instruction.name)],
                 "devices": {str(d): seconds[d][step.instruction.name] for d in plan.devices
                             if d in seconds and step.instruction.name in seconds[d]}}
                for step, _ in rows
            ],
            "skipped": [{"name": i.name, "opcode": i.opcode, "line": i.line}
                        for i in plan.skipped],
        })
        return 0
    out = console()
    for step, times in rows:
        instruction = step.instruction
        text = Text(f"%{instruction.name}", style="cyan")
        count = plan.trip_counts[(instruction.computation, instruction.name)]
        loop = trip_text(count)
        last = " (the last issue)" if count is not None and count > 1 else ""
        text.append(f" ({instruction.opcode}, line {instruction.line}): {step.bytes} bytes on "
                    f"{plural(len(times), 'device')}, {loop + ', ' if loop else ''}"
                    f"seconds{last} min {min(times):.6f} median "
                    f"{float(np.median(times)):.6f} max {max(times):.6f}")
        out.print(text)
    for instruction in plan.skipped:
        out.print(Text(f"skipped: %{instruction.name} ({instruction.opcode}, line "
                       f"{instruction.line}) is not replayed", style="yellow"))
    for note in plan.unresolved:
        out.print(Text(f"note: {note}", style="yellow"))
    out.print(Text(f"{name}: {plural(len(rows), 'collective')} replayed on "
                   f"{plural(len(seconds), 'device')} "
                   f"({backend}) in {elapsed:.2f} s", style="bold green"))
    return 0

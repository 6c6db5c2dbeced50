"""``execute``: run a module's entry computation on every device, on a chosen backend.

Inputs are ``{device_id: [array per entry parameter]}`` (``generated_inputs`` makes them
deterministically from the shapes; ``load_inputs`` reads an ``.npz`` whose keys are
``"<device>/<parameter number>"``); outputs are ``{device_id: value}`` with the entry root's
value (an array, or a tuple for a tuple root). The module is checked (``Plan``) and the
inputs against it before anything runs.

``replay`` issues a module's collectives on every device instead (see ``_replay``).

The ``local`` backend runs one thread per device over one ``LocalFactory``; a failure on one
device (other than a rendezvous timeout, which the others meet by themselves) aborts every
communicator, those created later included, so the others stop at once instead of waiting
out the timeout. The ``torch`` backend runs one process per device (see ``_launch``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from .._errors import InvalidArgumentError
from .._limits import check_size
from ..hlo import Module, is_float
from ._clique_key import CliqueKey
from ._communicator import Communicator
from ._interpreter import DeviceExecution
from ._local import LocalFactory
from ._plan import Plan, Route
from ._rendezvous import DEFAULT_TIMEOUT, RendezvousError, combined
from ._replay import Replay, ReplayResult
from ._values import Value, dtype_of, storable

BACKENDS = ("local", "torch")
T = TypeVar("T")
Inputs = Mapping[int, Sequence[np.ndarray]]


def parameter_shapes(plan: Plan) -> list[tuple[tuple[int, ...], np.dtype]]:
    """(dimensions, dtype) of each entry parameter, in parameter-number order."""
    parameters = sorted(
        (int(i.operand_text), i) for i in plan.module.entry.instructions if i.opcode == "parameter"
    )
    shapes = []
    for number, (index, instruction) in enumerate(parameters):
        if index != number:
            raise InvalidArgumentError(f"entry parameters skip number {number}")
        where = f"entry parameter {index} (%{instruction.name})"
        shapes.append((instruction.shape.dimensions, dtype_of(instruction.shape, where)))
    return shapes


def generated_inputs(plan: Plan) -> dict[int, list[np.ndarray]]:
    """Deterministic inputs: parameter k on device d is ``(arange(n) + 7d + 3k) mod 97`` in
    its shape and type (mod 2 for pred; floats add ``d / 4``; f8 types take ``(... mod 8) / 4
    + d / 8``, inside every f8 range)."""
    inputs: dict[int, list[np.ndarray]] = {}
    shapes = parameter_shapes(plan)
    for dims, _ in shapes:
        check_size(int(np.prod(dims, dtype=np.int64)), "an entry parameter")
    for device in plan.devices:
        arrays = []
        for k, (dims, dtype) in enumerate(shapes):
            n = int(np.prod(dims, dtype=np.int64))
            base = np.arange(n, dtype=np.int64) + 7 * device + 3 * k
            if dtype == np.bool_:
                values: np.ndarray = base % 2 == 1
            elif is_float(dtype) and dtype.itemsize == 1:  # f8: within every f8 range
                values = base % 8 / 4 + device / 8
            elif is_float(dtype) or dtype.kind == "c":
                values = base % 97 + device / 4
            else:
                values = base % 97
            arrays.append(values.astype(dtype).reshape(dims))
        inputs[device] = arrays
    return inputs


def checked_inputs(plan: Plan, inputs: Inputs | None) -> dict[int, list[np.ndarray]]:
    """The inputs as arrays of the parameters' types, or ``InvalidArgumentError`` naming the
    device and parameter that does not fit (generated when ``inputs`` is None)."""
    if inputs is None:
        return generated_inputs(plan)
    shapes = parameter_shapes(plan)
    missing = [d for d in plan.devices if d not in inputs]
    extra = sorted(set(inputs) - set(plan.devices))
    if missing or extra:
        raise InvalidArgumentError(
            f"inputs must name every device of the assignment {plan.devices}: missing "
            f"{missing}, unknown {extra}"
        )
    checked: dict[int, list[np.ndarray]] = {}
    for device in plan.devices:
        given = list(inputs[device])
        if len(given) != len(shapes):
            raise InvalidArgumentError(
                f"device {device} has {len(given)} inputs; the entry computation takes "
                f"{len(shapes)} parameters"
            )
        arrays = []
        for k, (array, (dims, dtype)) in enumerate(zip(given, shapes, strict=True)):
            array = np.asarray(array)
            if array.shape != tuple(dims) or not np.can_cast(array.dtype, dtype, "same_kind"):
                raise InvalidArgumentError(
                    f"input {k} of device {device} is {array.dtype}{list(array.shape)}; "
                    f"parameter {k} is {dtype}{list(dims)}"
                )
            arrays.append(array.astype(dtype, copy=False))
        checked[device] = arrays
    return checked


def load_inputs(path: str | os.PathLike[str]) -> dict[int, list[np.ndarray]]:
    """Inputs from an ``.npz`` file with keys ``"<device>/<parameter number>"``."""
    with np.load(path, allow_pickle=False) as data:
        found: dict[int, dict[int, np.ndarray]] = {}
        for name in data.files:
            device, _, number = name.partition("/")
            if not (device.isascii() and device.isdigit() and number.isascii()
                    and number.isdigit()):
                raise InvalidArgumentError(
                    f"{path}: key {name!r} is not '<device>/<parameter number>'"
                )
            found.setdefault(int(device), {})[int(number)] = data[name]
    return {d: [params[k] for k in sorted(params)] for d, params in sorted(found.items())}


def save_values(path: str | os.PathLike[str], values: Mapping[int, Value]) -> None:
    """Write ``{device: value}`` to ``.npz``: arrays as ``"<device>"``, tuple elements as
    ``"<device>/<index>"`` (nested tuples add further ``/<index>``); bf16 and f8 arrays as
    their bits (uint16, uint8), which ``.npz`` can hold."""
    flat: dict[str, np.ndarray] = {}

    def put(name: str, value: Value) -> None:
        if isinstance(value, tuple):
            for i, element in enumerate(value):
                put(f"{name}/{i}", element)
        else:
            flat[name] = storable(np.asarray(value))

    for device, value in values.items():
        put(str(device), value)
    np.savez(path, **flat)  # type: ignore[arg-type]


def _writable(value: Value) -> Value:
    if isinstance(value, tuple):
        return tuple(_writable(v) for v in value)
    return np.array(value)


def run_threads(devices: Sequence[int], timeout: float,
                work: Callable[[int, Callable[[Route], Communicator]], T]) -> dict[int, T]:
    """Run ``work(device, communicator_for)`` on one thread per device over one
    ``LocalFactory`` (communicators created once per device and clique); the results by
    device, or the run's error (see the module docstring)."""
    factory = LocalFactory(timeout)
    created: list[Communicator] = []
    lock = threading.Lock()
    outputs: dict[int, T] = {}
    errors: list[BaseException] = []
    aborting: list[int] = []  # the device whose failure stops the run, once there is one

    def run(device: int) -> None:
        communicators: dict[CliqueKey, Communicator] = {}

        def communicator_for(route: Route) -> Communicator:
            if route.key not in communicators:
                [communicator] = factory.create_communicators(route.key, None,
                                                              [(device, route.rank)])
                communicators[route.key] = communicator
                with lock:
                    created.append(communicator)
                    if aborting:  # another device failed already: stop at once here too
                        communicator.abort()
            return communicators[route.key]

        try:
            outputs[device] = work(device, communicator_for)
        except BaseException as error:  # reported by the caller, after every thread stopped
            with lock:
                first = not errors
                errors.append(error)
                others = list(created)
                if first and not isinstance(error, RendezvousError):
                    aborting.append(device)
            if first and not isinstance(error, RendezvousError):
                for communicator in others:
                    if communicator.device != device:
                        communicator.abort()

    threads = [threading.Thread(target=run, args=(d,), name=f"meshtopo-device-{d}", daemon=True)
               for d in devices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rendezvous = [e for e in errors if isinstance(e, RendezvousError)]
    if rendezvous:
        raise combined(rendezvous)
    if errors:
        raise errors[0]
    return dict(sorted(outputs.items()))


def run_local(plan: Plan, inputs: Mapping[int, Sequence[np.ndarray]], timeout: float
              ) -> dict[int, Value]:
    """Execute on the ``local`` backend: one thread per device."""
    return run_threads(plan.devices, timeout, lambda device, communicator_for: _writable(
        DeviceExecution(plan, device, communicator_for).run(inputs[device])))


def execute(module: Module, inputs: Inputs | None = None, backend: str = "local",
            device_assignment: object = None, timeout: float | None = None
            ) -> dict[int, Value]:
    """Run ``module``'s entry computation on every device of its placement and return
    ``{device_id: entry root value}``.

    ``inputs``: ``{device_id: [array per entry parameter]}`` (None: ``generated_inputs``);
    ``backend``: ``"local"`` (threads, numpy) or ``"torch"`` (gloo processes on this host);
    ``device_assignment``: a ``DeviceAssignment`` or ``[replica][partition]`` table (default:
    the module's); ``timeout``: rendezvous timeout in seconds (default ``DEFAULT_TIMEOUT``),
    past which a ``RendezvousError`` names the instruction and the devices missing.
    """
    seconds = _run_seconds(backend, timeout)
    plan = Plan(module, device_assignment)
    arrays = checked_inputs(plan, inputs)
    if backend == "local":
        return run_local(plan, arrays, seconds)
    from ._launch import run_processes

    return run_processes(plan, arrays, seconds)


def _run_seconds(backend: str, timeout: float | None) -> float:
    """The rendezvous timeout in seconds of a run on ``backend`` (``DEFAULT_TIMEOUT`` for
    None); an unknown backend or a timeout that is not positive is refused."""
    if backend not in BACKENDS:
        raise InvalidArgumentError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    seconds = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    if not seconds > 0:
        raise InvalidArgumentError(f"timeout must be a positive number of seconds, got {timeout}")
    return seconds


def replay(module: Module, backend: str = "local", device_assignment: object = None,
           timeout: float | None = None) -> ReplayResult:
    """Issue ``module``'s collectives on every device (see the module docstring) on the
    ``local`` or ``torch`` backend; a device that never arrives is a ``RendezvousError``
    after ``timeout`` seconds (default ``DEFAULT_TIMEOUT``)."""
    seconds = _run_seconds(backend, timeout)
    plan = Replay(module, device_assignment)
    if backend == "local":
        return ReplayResult(plan, run_threads(plan.devices, seconds, plan.run_device))
    from ._launch import run_processes

    return ReplayResult(plan, run_processes(plan, None, seconds))

"""``meshtopo.jax.inspect``: the collectives of a JAX program, resolved to JAX device ids.

JAX compiles a program for a list of devices; XLA numbers them by logical id (replica,
partition) and the executable's device assignment maps those to device ids. For a jitted SPMD
program (``jit``, ``shard_map``) there is one replica and ``num_partitions`` partitions, and
partition ``p`` runs on the ``p``-th device of the executable, which for a mesh is
``mesh.devices.flat[p]``, whatever order the mesh lists its devices in. ``inspect`` reads that
table from the compiled executable, so ``device_groups()`` answers in JAX device ids.

``check`` compiles the same way and returns the order analysis of that module.

JAX is imported only when ``inspect`` or ``check`` is called: meshtopo works without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._errors import InvalidArgumentError
from .groups._placement import DeviceAssignment
from .hlo import Module, parse_module, read_header
from .order import Report, analyze


def inspect(fn: Callable[..., Any] | Any, *args: Any, **kwargs: Any) -> Module:
    """Compile ``fn`` for ``args``/``kwargs`` and return its HLO module placed on the devices
    the executable runs with.

    ``fn`` is a plain function (it is wrapped in ``jax.jit``), a jitted function (anything with
    ``.lower``), or an already compiled ``jax.stages.Compiled`` (then give no arguments). The
    module's ``device_assignment`` is the executable's ``[replica][partition] -> JAX device
    id``, so every collective's ``device_groups()``/``device_pairs()`` answer in JAX device
    ids (pass another assignment to either to override it).
    """
    compiled = _compile(fn, args, kwargs)
    text = compiled.as_text()
    if not isinstance(text, str) or not text:
        raise InvalidArgumentError("the compiled program has no HLO text (as_text() was empty)")
    source = f"<compiled {getattr(fn, '__name__', 'function')}>"
    # The counts come from the header line (XLA prints it first); the table needs them.
    header = read_header(text, source)
    table = executable_device_assignment(compiled, header.replica_count, header.num_partitions)
    return parse_module(text, device_assignment=table, source=source)


def check(fn: Callable[..., Any] | Any, *args: Any, **kwargs: Any) -> Report:
    """Compile ``fn`` as ``inspect`` does and analyse the module's collective order on the
    executable's devices (``mt.order.analyze``): ``report.findings`` is ``[]`` when every
    device's schedule matches."""
    return analyze(inspect(fn, *args, **kwargs))


def _compile(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if hasattr(fn, "as_text") and hasattr(fn, "input_shardings") and not hasattr(fn, "lower"):
        if args or kwargs:
            raise InvalidArgumentError("inspect of a compiled program takes no arguments")
        return fn
    if not callable(fn):
        raise InvalidArgumentError(
            f"inspect expects a function, a jitted function or a compiled program, got "
            f"{type(fn).__name__}"
        )
    if not hasattr(fn, "lower"):
        import jax

        fn = jax.jit(fn)
    return fn.lower(*args, **kwargs).compile()


def executable_device_assignment(
    compiled: Any, replica_count: int, num_partitions: int
) -> DeviceAssignment:
    """``[replica][partition] -> device id`` of a compiled JAX program.

    XLA lists an executable's addressable devices replica-major (for each replica, each
    partition), so in a single process the list reshapes to the table. Where the process does
    not hold every device, an SPMD program's input sharding lists all of them in partition
    order instead.
    """
    count = replica_count * num_partitions
    devices = _executable_devices(compiled)
    if devices is None or len(devices) != count:
        devices = _sharding_devices(compiled)
    if devices is None or len(devices) != count:
        raise InvalidArgumentError(
            f"cannot read the device assignment of the compiled program: expected {count} "
            f"devices for replica_count={replica_count}, num_partitions={num_partitions}"
        )
    ids = [int(device.id) for device in devices]
    return DeviceAssignment([ids[r * num_partitions : (r + 1) * num_partitions]
                             for r in range(replica_count)])  # fmt: skip


def _executable_devices(compiled: Any) -> list[Any] | None:
    executable = getattr(compiled, "_executable", None)
    loaded = getattr(executable, "xla_extension_executable", None)
    if loaded is None:
        return None
    try:
        return list(loaded().local_devices())
    except (AttributeError, RuntimeError, TypeError):
        return None


def _sharding_devices(compiled: Any) -> list[Any] | None:
    shardings: list[Any] = []
    for group in (
        getattr(compiled, "input_shardings", None),
        getattr(compiled, "output_shardings", None),
    ):
        if isinstance(group, (tuple, list)):
            shardings.extend(group[0] if group and isinstance(group[0], (tuple, list)) else group)
    for sharding in shardings:
        devices = getattr(sharding, "_device_assignment", None)
        if devices:
            return list(devices)
    return None

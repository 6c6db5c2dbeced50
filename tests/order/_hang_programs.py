"""Small real JAX programs whose devices may or may not agree on their collectives, and the
means to learn by execution whether each one finishes or hangs on 8 CPU devices.

Each program is a builder returning a jitted ``shard_map`` and its example inputs. Most
contribute one-hot "tags" to their psums: every device ``p`` adds a ``(slots, 8)`` matrix
that is zero except row ``slot`` (which collective of which branch issued it), column ``p``.
A psum's result is then a 0/1 matrix naming every device and every collective that met in
it, so a run shows whether collectives issued by different HLO instructions (two branches of
a conditional, a loop body and a peeled copy) are paired with each other at run time.

``execute`` runs programs in a child process with 8 host devices (a fork of a ``Server``
that imported JAX once), reading its report line by line: a program that has not finished
``HANG_AFTER_COMPILE`` seconds after the child said it compiled hangs, and the child is
killed; the server's whole session is killed and reaped when it is closed. Each ``Run``
holds XLA's optimized HLO of its program (with fusions), as meshtopo reads it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

DEVICES = 8
XLA_FLAGS = f"--xla_force_host_platform_device_count={DEVICES}"

Program = tuple[Any, tuple[Any, ...]]
Builder = Callable[[], Program]
PROGRAMS: dict[str, Builder] = {}


def _register(builder: Builder) -> Builder:
    PROGRAMS[builder.__name__.removeprefix("_")] = builder
    return builder


# --- shared pieces --------------------------------------------------------------------------

def _mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> Any:
    import jax
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices()[:DEVICES]).reshape(shape), names)


def _smap(body: Callable[..., Any], mesh: Any) -> Any:
    """A jitted shard_map of ``body`` taking and returning one row per device (the row is the
    device's linear position in the mesh, which is its partition id here)."""
    import jax
    from jax.sharding import PartitionSpec as P

    spec = P(tuple(mesh.axis_names))
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec,
                                 check_vma=False))


def _eye(mesh: Any, nan_at: int | None = None) -> Any:
    """The 8x8 identity sharded one row per device: device ``p`` holds ``e_p``. With
    ``nan_at`` that device's row also holds a NaN (off the diagonal)."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    data = np.eye(DEVICES, dtype=np.float32)
    if nan_at is not None:
        data[nan_at, (nan_at + 1) % DEVICES] = np.nan
    return jax.device_put(data, NamedSharding(mesh, P(tuple(mesh.axis_names))))


def _tag(row: Any, slot: int, slots: int) -> Any:
    """The device's contribution for collective ``slot``: its one-hot row ``e_p`` in row
    ``slot`` of a ``(slots, 8)`` zero matrix."""
    import jax.numpy as jnp

    return jnp.zeros((slots, DEVICES), jnp.float32).at[slot].set(row)


def _after(value: Any, previous: Any) -> Any:
    """``value`` made to depend on ``previous`` (a psum result, never negative) without
    changing it, so XLA can neither reorder nor combine the two collectives."""
    import jax.numpy as jnp

    return value + jnp.minimum(previous, 0.0)


def _tagged_loop(row: Any, trips: Any, slot: int, slots: int, state: tuple[Any, Any, Any],
                 axis: str | tuple[str, ...] = "i") -> tuple[Any, Any, Any]:
    """``trips`` loop iterations, each a psum of the tag ``slot`` fed by the previous psum;
    ``state`` is (history of psum results, how many psums so far, the last result)."""
    from jax import lax

    def step(_: Any, carry: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        history, count, last = carry
        met = lax.psum(_after(_tag(row, slot, slots), last), axis)
        return history.at[count].set(met), count + 1, met

    return lax.fori_loop(0, trips, step, state)


def _start(slots: int, depth: int = 6) -> tuple[Any, Any, Any]:
    import jax.numpy as jnp

    return (jnp.zeros((depth, slots, DEVICES), jnp.float32), jnp.int32(0),
            jnp.zeros((slots, DEVICES), jnp.float32))


# --- a, b: a conditional on the device's parity over a 2x4 mesh -------------------------------

def _parity_cond(first: tuple[str, str], second: tuple[str, str], differ: bool) -> Program:
    """Even devices ((x + y) % 2 == 0) take branch ``even``: psum over ``first[0]`` then
    ``first[1]``; odd devices psum over ``second[0]`` then ``second[1]``. Tags: slots 0, 1
    for the even branch's psums, 2, 3 for the odd branch's. The result per device is
    ``[s, t, combined]`` (3, 4, 8), ``combined`` being ``s + t`` or ``s * t`` by branch."""
    import jax.numpy as jnp
    from jax import lax

    mesh = _mesh((2, 4), ("x", "y"))

    def branch(axes: tuple[str, str], base: int, combine: Callable[[Any, Any], Any]
               ) -> Callable[[Any], Any]:
        def run(row: Any) -> Any:
            s = lax.psum(_tag(row, base, 4), axes[0])
            t = lax.psum(_after(_tag(row, base + 1, 4), s), axes[1])
            return jnp.stack([s, t, combine(s, t)])
        return run

    def body(block: Any) -> Any:
        even = (lax.axis_index("x") + lax.axis_index("y")) % 2 == 0
        odd_combine = (lambda s, t: s * t) if differ else (lambda s, t: s + t)
        out = lax.cond(even, branch(first, 0, lambda s, t: s + t),
                       branch(second, 2, odd_combine), block[0])
        return out[None]

    return _smap(body, mesh), (_eye(mesh),)


@_register
def _cond_swapped_order() -> Program:
    """Even devices psum over y then x, odd devices over x then y."""
    return _parity_cond(("y", "x"), ("x", "y"), differ=False)


@_register
def _cond_same_order() -> Program:
    """Both branches psum over y then x; only the tags and the arithmetic after differ."""
    return _parity_cond(("y", "x"), ("y", "x"), differ=True)


class _Channels:
    """A jitted function whose StableHLO all-reduces get distinct channel handles 1, 2, ...
    in program order before XLA compiles it (JAX gives every shard_map psum handle 1). It
    edits the lowering in place through a private JAX API (``Lowered._lowering``)."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def lower(self, *args: Any) -> Any:
        from jax._src.lib.mlir import ir

        lowered = self.f.lower(*args)
        module = lowered._lowering.stablehlo()
        found: list[Any] = []

        def walk(op: Any) -> None:
            for region in op.regions:
                for block in region:
                    for inner in block:
                        if inner.operation.name == "stablehlo.all_reduce":
                            found.append(inner.operation)
                        walk(inner.operation)

        walk(module.operation)
        with module.context:
            for k, op in enumerate(found, start=1):
                op.attributes["channel_handle"] = ir.Attribute.parse(
                    f"#stablehlo.channel_handle<handle = {k}, type = 1>")
        return lowered


@_register
def _cond_same_order_channels() -> Program:
    """``cond_same_order`` with channel ids 1, 2 in the even branch and 3, 4 in the odd one."""
    f, args = _parity_cond(("y", "x"), ("y", "x"), differ=True)
    return _Channels(f), args


@_register
def _cond_psum_vs_pmax() -> Program:
    """Devices 0-3 psum, 4-7 pmax, over all 8, each contributing ``p + 1``."""
    from jax import lax

    mesh = _mesh((DEVICES,), ("i",))

    def body(block: Any) -> Any:
        value = block * 0.0 + (lax.axis_index("i") + 1).astype(block.dtype)
        return lax.cond(lax.axis_index("i") < 4, lambda v: lax.psum(v, "i"),
                        lambda v: lax.pmax(v, "i"), value)

    return _smap(body, mesh), (_eye(mesh),)


# --- c: a while loop whose trip count is carried, chosen per partition -----------------------

def _carried_trips(low: int) -> Program:
    """A while loop running ``select(idx < 4, 3, low)`` times (computed at run time and carried
    in the loop state), one psum over all 8 devices in its body."""
    import jax.numpy as jnp
    from jax import lax

    mesh = _mesh((DEVICES,), ("i",))

    def body(block: Any) -> Any:
        idx = lax.axis_index("i")
        # `low + idx // 8` is `low` on every device, but XLA cannot fold it to a constant.
        trips = jnp.where(idx < 4, 3, low + idx // DEVICES)

        def more(state: tuple[Any, Any, Any]) -> Any:
            return state[0] < state[1]

        def step(state: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
            k, n, x = state
            return k + 1, n, lax.psum(x, "i") * 0.125

        _, _, x = lax.while_loop(more, step, (jnp.int32(0), trips.astype(jnp.int32), block))
        return x

    return _smap(body, mesh), (_eye(mesh),)


@_register
def _while_partition_trip() -> Program:
    """Partitions 0-3 run 3 iterations, 4-7 run 2."""
    return _carried_trips(2)


@_register
def _while_uniform_trip() -> Program:
    """Every partition runs 3 iterations, through the same run-time select."""
    return _carried_trips(3)


# --- d: a pipeline warm-up loop whose trip count is the stage ---------------------------------

def _warmup(axis: str) -> Program:
    """Mesh pp=4, dp=2; a fori_loop of ``axis_index('pp')`` iterations psums over ``axis``."""
    from jax import lax

    mesh = _mesh((4, 2), ("pp", "dp"))

    def body(block: Any) -> Any:
        def step(_: Any, x: Any) -> Any:
            return lax.psum(x, axis) * 0.25

        return lax.fori_loop(0, lax.axis_index("pp"), step, block)

    return _smap(body, mesh), (_eye(mesh),)


@_register
def _pipeline_warmup_pp() -> Program:
    """Stage s psums s times over pp: the stages of one pp group disagree."""
    return _warmup("pp")


@_register
def _pipeline_warmup_dp() -> Program:
    """Stage s psums s times over dp: both members of a dp group sit in one stage."""
    return _warmup("dp")


# --- e: a three-way switch with a different collective per branch ----------------------------

@_register
def _switch_three() -> Program:
    """Branch ``idx % 3``: psum (devices 0, 3, 6), pmax (1, 4, 7), no collective (2, 5)."""
    from jax import lax

    mesh = _mesh((DEVICES,), ("i",))

    def body(block: Any) -> Any:
        branches = [lambda x: lax.psum(x, "i"), lambda x: lax.pmax(x, "i"), lambda x: x * 2.0]
        return lax.switch(lax.axis_index("i") % 3, branches, block)

    return _smap(body, mesh), (_eye(mesh),)


# --- f: a data-dependent skip (NaN in the device's own shard) --------------------------------

def _nan_skip(agree_over: str | None) -> Program:
    """Mesh dp=2, tp=4; device 1's shard holds a NaN. The flag "my shard has a NaN", first
    psum'ed over ``agree_over`` when given, chooses between skipping and a psum over dp."""
    import jax.numpy as jnp
    from jax import lax

    mesh = _mesh((2, 4), ("dp", "tp"))

    def body(block: Any) -> Any:
        flag = jnp.isnan(block).any()
        if agree_over is not None:
            flag = lax.psum(flag.astype(jnp.float32), agree_over) > 0
        return lax.cond(flag, lambda x: x, lambda x: lax.psum(x, "dp"), block)

    return _smap(body, mesh), (_eye(mesh, nan_at=1),)


@_register
def _nan_skip_dp() -> Program:
    """Device 1 skips, its dp partner 5 waits in the psum."""
    return _nan_skip(None)


@_register
def _nan_skip_dp_agreed() -> Program:
    """The dp group {1, 5} agrees on the flag first: both skip."""
    return _nan_skip("dp")


@_register
def _nan_skip_tp_agreed() -> Program:
    """The tp group {0..3} agrees on the flag and skips; 4..7 psum over dp with them."""
    return _nan_skip("tp")


# --- g: pipeliner shapes (standalone modules) and their SPMD twins ---------------------------

def _loops(counts: tuple[int, ...], slots: int = 1) -> Callable[[Any], Any]:
    """A body running a tagged loop of ``counts[0]`` psums (tag 0), then one more psum per
    further count (a peeled iteration, tags 1, 2, ...): the psum history (6, slots, 8)."""
    def run(row: Any, first: int = 0) -> Any:
        from jax import lax

        state = _tagged_loop(row, counts[0], first, slots, _start(slots))
        for extra, _ in enumerate(counts[1:], start=1):
            history, count, last = state
            met = lax.psum(_after(_tag(row, first + extra, slots), last), "i")
            state = history.at[count].set(met), count + 1, met
        return state[0]
    return run


def _standalone(counts: tuple[int, ...]) -> Program:
    mesh = _mesh((DEVICES,), ("i",))
    run = _loops(counts)
    return _smap(lambda block: run(block[0])[None], mesh), (_eye(mesh),)


@_register
def _fori4() -> Program:
    """fori_loop of 4 psums over all 8 devices, each fed by the last."""
    return _standalone((4,))


@_register
def _fori3_peeled() -> Program:
    """fori_loop of 3 such psums, then one more after the loop."""
    return _standalone((3, 1))


@_register
def _fori5() -> Program:
    """fori_loop of 5 psums."""
    return _standalone((5,))


@_register
def _fori3() -> Program:
    """fori_loop of 3 psums."""
    return _standalone((3,))


def _twin(low: tuple[int, ...], high: tuple[int, ...]) -> Program:
    """Devices 0-3 run the ``low`` body, 4-7 the ``high`` body, in the two branches of one
    conditional. Tags: slot 0 for the low loop, 1 for the high loop, 2 for its peeled psum."""
    from jax import lax

    mesh = _mesh((DEVICES,), ("i",))

    def body(block: Any) -> Any:
        return lax.cond(lax.axis_index("i") < 4,
                        lambda row: _loops(low, 3)(row, 0),
                        lambda row: _loops(high, 3)(row, 1), block[0])[None]

    return _smap(body, mesh), (_eye(mesh),)


@_register
def _cond_fori4_vs_peeled() -> Program:
    """Devices 0-3: 4 psums in a loop; 4-7: 3 in a loop and 1 after it."""
    return _twin((4,), (3, 1))


@_register
def _cond_fori5_vs_fori3() -> Program:
    """Devices 0-3: 5 psums in a loop; 4-7: 3."""
    return _twin((5,), (3,))


# --- running and compiling --------------------------------------------------------------------

Status = Literal["finished", "hang"]

# A program hangs when its run has not finished this long after the child reported it
# compiled. A clean run takes well under a second after compiling, also with seven other
# children starting and compiling beside it on two busy cores (measured: at most 0.02 s).
# XLA:CPU warns after 20 s in a rendezvous and does not give up within 45 s.
HANG_AFTER_COMPILE = 8.0
# The most a child may take to start (a fork of the server, JAX's backend) and compile one
# program; past it the child is killed and ``execute`` raises: a hang is only ever declared
# after compiling.
COMPILE_CAP = 120.0


@dataclasses.dataclass(frozen=True)
class Run:
    """One program's execution in a child process: ``status``; XLA's optimized HLO of it
    (with fusions), as meshtopo reads it; the seconds the child spent compiling it, and the
    seconds from the child's report that it compiled to its result (for a hang: until it was
    declared one); the result (None after a hang) and the tail of the child's stderr."""

    status: Status
    text: str
    compile_seconds: float
    run_seconds: float
    result: np.ndarray | None
    stderr: str


class Server:
    """A process (``python thisfile.py``, 8 host devices, its own session) that
    imported JAX once and forks a child for each ``start``: the children skip the interpreter's
    start and JAX's import, and each initializes its own backend. Used as a context manager:
    on leaving, the server and every child still alive are killed and reaped."""

    def __init__(self) -> None:
        env = {**os.environ, "XLA_FLAGS": XLA_FLAGS, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([sys.executable, __file__],
                                        stdin=subprocess.PIPE, env=env, start_new_session=True)
        self.lock = threading.Lock()

    def start(self, names: list[str], report: str, err: str) -> None:
        """Fork a child that runs ``names`` in turn, reporting to the Unix socket ``report``
        (``_run``'s lines) with its stderr in the file ``err``."""
        assert self.process.stdin is not None
        with self.lock:
            self.process.stdin.write(json.dumps([report, err, names]).encode() + b"\n")
            self.process.stdin.flush()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the server's stdin (it reaps its children and ends), then kill whatever is
        left of its session after ``COMPILE_CAP`` seconds, and reap the server."""
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=COMPILE_CAP)
        except subprocess.TimeoutExpired:
            pass
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def execute(names: Sequence[str], server: Server, hang_after: float = HANG_AFTER_COMPILE,
            compile_cap: float = COMPILE_CAP) -> dict[str, Run]:
    """Run programs ``names`` in turn in one child of ``server`` with 8 CPU devices, one
    ``Run`` each. A program still running ``hang_after`` seconds after it compiled is a hang:
    the child is killed, and the programs after it run in a fresh child. Programs that finish
    cannot affect each other (each one's result is read before the next compiles, and every
    run has its own rendezvous keys), so only hangs need a child alone. A child that fails,
    exits early or does not compile within ``compile_cap`` seconds raises RuntimeError."""
    unknown = [name for name in names if name not in PROGRAMS]
    if unknown:
        raise KeyError(unknown)
    runs: dict[str, Run] = {}
    while len(runs) < len(names):
        runs.update(_child([name for name in names if name not in runs], server, hang_after,
                           compile_cap))
    return runs


def _child(names: list[str], server: Server, hang_after: float, compile_cap: float
           ) -> dict[str, Run]:
    """The runs of one child process given ``names``: every one of them, or those up to and
    including the first that hangs."""
    runs: dict[str, Run] = {}
    with tempfile.TemporaryDirectory() as folder, socket.socket(socket.AF_UNIX) as listener:
        report, err = os.path.join(folder, "report"), os.path.join(folder, "err")
        listener.bind(report)
        listener.listen(1)
        listener.settimeout(compile_cap)
        server.start(names, report, err)
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            raise RuntimeError(f"no child started for {names} within {compile_cap} s") from None
        lines: queue.Queue[bytes | None] = queue.Queue()
        stream = connection.makefile("rb")
        reader = threading.Thread(target=_read_lines, args=(stream, lines), daemon=True)
        reader.start()
        deadline = time.monotonic() + compile_cap
        current: tuple[str, str, float, float] | None = None  # name, text, compiling, when
        pid, hung, ended = 0, False, False
        try:
            while True:
                try:
                    line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    if current is None:
                        raise RuntimeError(f"{names[len(runs)]} did not compile within "
                                           f"{compile_cap} s:\n{_tail(err)}") from None
                    name, text, compile_seconds, since = current
                    runs[name] = Run("hang", text, compile_seconds, time.monotonic() - since,
                                     None, "")
                    hung = True
                    break
                now = time.monotonic()
                if line is None:
                    break
                kind, _, rest = line.decode().rstrip("\n").partition(" ")
                name, _, rest = rest.partition(" ")
                if kind == "pid":
                    pid = int(name)
                elif kind == "compiled":
                    seconds, _, text = rest.partition(" ")
                    current = (name, json.loads(text), float(seconds), now)
                    deadline = now + hang_after
                elif kind == "result" and current is not None and current[0] == name:
                    runs[name] = Run("finished", current[1], current[2], now - current[3],
                                     np.array(json.loads(rest), dtype=np.float32), "")
                    current = None
                    deadline = now + compile_cap
                elif kind == "ended":
                    ended = True
        finally:
            if pid and not ended:  # still running, or gone (the server reaps it at its end)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            connection.close()
            reader.join()
            stream.close()
        stderr = _tail(err)
    if not hung and (not ended or len(runs) < len(names)):
        raise RuntimeError(f"the child running {names} failed after {list(runs)}:\n{stderr}")
    return {name: dataclasses.replace(run, stderr=stderr) for name, run in runs.items()}


def _read_lines(stream: Any, lines: queue.Queue[bytes | None]) -> None:
    """Every line of ``stream``, then None at its end (or once it is closed)."""
    with contextlib.suppress(OSError, ValueError):
        for line in stream:
            lines.put(line)
    lines.put(None)


def _tail(err: str) -> str:
    with contextlib.suppress(FileNotFoundError), open(err, "rb") as handle:
        return handle.read().decode(errors="replace")[-3000:]
    return ""


def _serve() -> None:
    """Import JAX, then for each request line on stdin (``[report, err, names]``) fork a
    child running ``_run``. At the end of stdin, wait for every child (those that hang are
    killed by whoever asked for them) and end."""
    import jax.numpy  # noqa: F401  (JAX and what the programs use, imported once here)

    children = []
    for line in sys.stdin:
        report, err, names = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child_main(report, err, names)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)


def _child_main(report: str, err: str, names: list[str]) -> None:
    """In a fork of the server: stderr to ``err``, the report to the socket ``report``,
    ``names`` run; never returns."""
    code = 1
    try:
        handle = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(handle, 2)
        with socket.socket(socket.AF_UNIX) as connection:
            connection.connect(report)
            with connection.makefile("w") as out:
                print("pid", os.getpid(), file=out, flush=True)
                _run(names, out)
                print("ended", file=out, flush=True)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _run(names: list[str], out: Any) -> None:
    """Each program compiled and run in turn, a line ``compiled NAME SECONDS TEXT`` (its
    optimized HLO as a JSON string) to ``out`` after compiling it and a line
    ``result NAME JSON`` after its run."""
    for name in names:
        f, args = PROGRAMS[name]()
        start = time.monotonic()
        compiled = f.lower(*args).compile()
        print("compiled", name, time.monotonic() - start, json.dumps(compiled.as_text()),
              file=out, flush=True)
        result = np.asarray(compiled(*args))
        print("result", name, json.dumps(result.tolist()), file=out, flush=True)


if __name__ == "__main__":
    _serve()

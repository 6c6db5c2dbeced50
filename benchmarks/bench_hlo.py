"""HLO reading speed: meshtopo's collective scan against jaxlib's C++ HLO parser.

Run with ``python -m benchmarks.bench_hlo``. The reader's goal, at least 2x jaxlib's C++ parser,
is measured on four inputs, generated in memory:

(a) a real dump: ``jit(grad)`` of a 128-layer transformer sharded FSDP x TP over a 2 x 4 mesh
    (about 10.8 MB), compiled in a child process and printed as JAX prints it;
(b) the same module printed with operand shapes and metadata (about 16 MB), the style of
    older dumps and of XLA's tests;
(c) 20,000 collectives over 1,024 devices (explicit, iota and mesh-axes groups, permutes)
    with metadata on every line;
(d) 1,024 all-reduces, each naming 1,024 devices in a random permutation.

The tokenizer (``hlo/_tokenize.py``) is timed against jaxlib's parse of (a) and (b) too: its
goal is at most a quarter of jaxlib's time (``python -m benchmarks.bench_hlo tokenizer
[layers]`` runs only that, on a transformer of that many layers, 128 by default).

Also printed: 20,000 collectives on 8 devices without metadata, 2,000 x 1,024 explicit
groups sharing one text, lists from Python against numpy, and a 200 MB dump streamed by
``iter_collectives`` with its peak RSS.

What is compared: meshtopo's ``parse_module`` plus, for every collective, its replica groups
as written (a decoded ``CollectiveDeviceList``), group mode, channel id and source-target
pairs, against jaxlib's C++ ``hlo_module_from_text`` of the same text. The two sides run in
alternation round by round, each call timed with its result's teardown and the garbage
collector's work on the objects it made (``measure_paired``); the best of each and the
paired median of their ratio are printed, and a goal is met when both are within it. Device
groups (``device_groups()``) are computed only on request; their cost is printed separately
and is not part of the comparison (jaxlib computes none).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

from benchmarks._timing import Comparison, comparison_table, console, measure_paired, summary

GROUPS = [
    "{{0,4},{1,5},{2,6},{3,7}}",
    "[2,4]<=[8]",
    "[4,2]<=[2,4]T(1,0)",
    "mesh['x'=2,'y'=4] {'y'}",
    "mesh['x'=2,'y'=4], device_ids=([2,4]T(1,0)) {'x'}",
]


def _header(n_partitions: int = 8) -> list[str]:
    return [
        f"HloModule bench, is_scheduled=true, num_partitions={n_partitions}",
        "",
        "%add (x: f32[], y: f32[]) -> f32[] {",
        "  %x = f32[] parameter(0)",
        "  %y = f32[] parameter(1)",
        "  ROOT %add = f32[] add(%x, %y)",
        "}",
        "",
        "ENTRY %main (p: f32[8,128]) -> f32[8,128] {",
        "  %p = f32[8,128]{1,0} parameter(0)",
    ]


def _groups_over(devices: int) -> list[str]:
    """The five group texts of ``GROUPS`` for ``devices`` devices on a (8, devices / 8) mesh."""
    inner = devices // 8
    explicit = ",".join("{" + ",".join(str(g * inner + r) for r in range(inner)) + "}"
                        for g in range(8))
    return ["{" + explicit + "}", f"[8,{inner}]<=[{devices}]", f"[{inner},8]<=[8,{inner}]T(1,0)",
            f"mesh['x'=8,'y'={inner}] {{'y'}}",
            f"mesh['x'=8,'y'={inner}], device_ids=([8,{inner}]T(1,0)) {{'x'}}"]


def mixed_module(count: int = 20000, offset: int = 0, devices: int = 8,
                 metadata: bool = False) -> str:
    """``count`` collectives cycling through the three group encodings and permutes, over
    ``devices`` devices (8 or a multiple of 8), with ``metadata`` as JAX prints it on every
    collective's line when asked."""
    lines = _header(devices)
    groups = GROUPS if devices == 8 else _groups_over(devices)
    pairs = ",".join(f"{{{d},{(d + 1) % devices}}}" for d in range(devices))
    tail = (', metadata={op_name="jit(train_step)/jvp(transformer)/layer/psum" '
            'source_file="/srv/model/layers.py" source_line=214}') if metadata else ""
    prev = "%p"
    for i in range(offset, offset + count):
        if i % 6 == 5:
            lines.append(
                f"  %collective-permute.{i} = f32[8,128]{{1,0}} collective-permute({prev}), "
                f"channel_id={i + 1}, source_target_pairs={{{pairs}}}{tail}"
            )
            prev = f"%collective-permute.{i}"
        else:
            lines.append(
                f"  %all-reduce.{i} = f32[8,128]{{1,0}} all-reduce({prev}), channel_id={i + 1}, "
                f"replica_groups={groups[i % 6 % 5]}, use_global_device_ids=true, to_apply=%add"
                f"{tail}"
            )
            prev = f"%all-reduce.{i}"
    lines[-1] = lines[-1].replace("  %", "  ROOT %", 1)
    return "\n".join([*lines, "}", ""])


def explicit_module(count: int = 2000, devices: int = 1024, distinct: bool = False,
                    permuted: bool = False) -> str:
    """``count`` all-reduces each naming ``devices`` devices in one explicit group: the same
    list, rotations of it (``distinct``), or a random permutation each (``permuted``)."""
    import random

    rng = random.Random(0)
    lines = _header(devices)
    prev = "%p"
    base = list(range(devices))
    for i in range(count):
        if permuted:
            ids = rng.sample(base, devices)
        else:
            ids = base[i % devices :] + base[: i % devices] if distinct else base
        group = "{{" + ",".join(map(str, ids)) + "}}"
        lines.append(
            f"  %all-reduce.{i} = f32[8,128]{{1,0}} all-reduce({prev}), channel_id={i + 1}, "
            f"replica_groups={group}, use_global_device_ids=true, to_apply=%add"
        )
        prev = f"%all-reduce.{i}"
    lines[-1] = lines[-1].replace("  %", "  ROOT %", 1)
    return "\n".join([*lines, "}", ""])


_REAL_DUMP = """
import sys
import jax, jax.numpy as jnp, numpy as np
import jaxlib._hlo as hlo
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("fsdp", "tp"))
D, F, HEADS = 256, 1024, 4
def norm(x):
    return x / (1 + jnp.abs(x).mean(-1, keepdims=True))
def layer(x, p):
    wq, wk, wv, wo, w1, w2 = p
    h = norm(x)
    q, k, v = ((h @ w).reshape(*x.shape[:2], HEADS, -1) for w in (wq, wk, wv))
    a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k), -1)
    x = x + jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(x.shape) @ wo
    return x + jax.nn.gelu(norm(x) @ w1) @ w2
def loss(x, ps):
    for p in ps:
        x = layer(x, p)
    return (x * x).mean()
def w(shape, spec):
    return jax.device_put(jnp.ones(shape) * 0.01, NamedSharding(mesh, spec))
x = jax.device_put(jnp.ones((8, 32, D)), NamedSharding(mesh, P("fsdp", None, None)))
ps = [(w((D, D), P("fsdp", "tp")), w((D, D), P("fsdp", "tp")), w((D, D), P("fsdp", "tp")),
       w((D, D), P("tp", "fsdp")), w((D, F), P("fsdp", "tp")), w((F, D), P("tp", "fsdp")))
      for _ in range(int(sys.argv[1]))]
text = jax.jit(jax.grad(loss, argnums=1)).lower(x, ps).compile().as_text()
options = hlo.HloPrintOptions()
options.print_operand_shape = True
options.print_metadata = True
sys.stdout.write(text + "\\0" + hlo.hlo_module_from_text(text).to_string(options))
"""


def real_dumps(layers: int = 128) -> tuple[str, str] | None:
    """A real dump: ``jit(grad)`` of a ``layers``-layer transformer sharded FSDP x TP over a
    2 x 4 mesh, as JAX prints it (about 10.8 MB at 128 layers), and the same module printed
    with operand shapes and metadata (``HloPrintOptions.print_operand_shape``, the style of
    older dumps and of XLA's tests; about 16 MB); None without jax."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
           "JAX_PLATFORMS": "cpu"}
    try:
        done = subprocess.run([sys.executable, "-c", _REAL_DUMP, str(layers)],
                              capture_output=True, text=True, timeout=900, env=env, check=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"  real dump unavailable: {str(error)[:200]}")
        return None
    as_printed, with_operand_shapes = done.stdout.split("\0")
    return as_printed, with_operand_shapes


def _resolve(text: str) -> int:
    from meshtopo import hlo

    module = hlo.parse_module(text)
    for c in module.collectives:
        _ = (c.replica_groups, c.mode, c.channel_id, c.source_target_pairs)
    return len(module.collectives)


def _jaxlib_parse(text: str) -> object:
    try:
        from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]
    except ImportError:  # older jaxlib
        from jax._src.lib import xla_client

        hlo_module_from_text = xla_client._xla.hlo_module_from_text
    return hlo_module_from_text(text)


def _device_groups(text: str) -> float:
    """CPU seconds of ``device_groups()`` of every collective of an already parsed module."""
    from meshtopo import hlo

    collectives = hlo.parse_module(text).collectives
    start = time.process_time()
    for c in collectives:
        c.device_groups()
    return time.process_time() - start


def compare(label: str, text: str, rounds: int = 5) -> tuple[float, float, float] | None:
    """Time meshtopo and jaxlib on ``text``, interleaved round by round; print each side's
    best, MB/s and the ratio jaxlib/meshtopo at best and as the paired median over rounds.
    Returns (meshtopo best, jaxlib best, paired median of meshtopo/jaxlib), or None when
    jaxlib is missing or refuses the text."""
    megabytes = len(text) / 1e6
    try:
        _jaxlib_parse(text)
    except Exception as error:  # jaxlib missing or refusing the text
        print(f"{label}: jaxlib unavailable: {str(error)[:200]}")
        return None
    paired = measure_paired(lambda: _resolve(text), lambda: _jaxlib_parse(text), rounds)
    print(f"{label}: {megabytes:.1f} MB, meshtopo {paired.first * 1e3:.0f} ms "
          f"({megabytes / paired.first:.0f} MB/s), jaxlib {paired.second * 1e3:.0f} ms "
          f"({megabytes / paired.second:.0f} MB/s); jaxlib/meshtopo best "
          f"{paired.second / paired.first:.2f}x, paired median {1 / paired.median_ratio:.2f}x "
          f"over {paired.rounds} interleaved rounds")
    return paired.first, paired.second, paired.median_ratio


def tokenize_against_jaxlib(label: str, text: str, rounds: int = 9) -> tuple[float, float,
                                                                            float] | None:
    """Time the tokenizer in use (``meshtopo --version`` names it) against jaxlib's whole
    parse of the same text, interleaved round by round; print the tokens per second and the
    ratio tokenizer/jaxlib at best and as the paired median. Returns (tokenizer best, jaxlib
    best, paired median of tokenizer/jaxlib), or None when jaxlib is missing or refuses it."""
    from meshtopo.hlo._native import TOKENIZER
    from meshtopo.hlo._tokenize import tokenize

    try:
        _jaxlib_parse(text)
    except Exception as error:  # jaxlib missing or refusing the text
        print(f"{label}: jaxlib unavailable: {str(error)[:200]}")
        return None
    count = len(tokenize(text))
    paired = measure_paired(lambda: tokenize(text), lambda: _jaxlib_parse(text), rounds)
    print(f"{label}: {len(text) / 1e6:.1f} MB, {count:,} tokens; {TOKENIZER} tokenizer "
          f"{paired.first * 1e3:.1f} ms ({count / paired.first / 1e6:.1f} M tokens/s, "
          f"{len(text) / 1e6 / paired.first:.0f} MB/s), jaxlib parse {paired.second * 1e3:.0f} ms; "
          f"tokenizer/jaxlib best {paired.first / paired.second:.3f}, paired median "
          f"{paired.median_ratio:.3f} over {paired.rounds} interleaved rounds")
    return paired.first, paired.second, paired.median_ratio


def tokenizer_rows(real: tuple[str, str] | None) -> list[Comparison]:
    """The tokenizer against jaxlib's parse on the real dump as JAX prints it and with
    operand shapes and metadata: goal, at most a quarter of jaxlib's time."""
    rows = []
    if real is None:
        return rows
    for key, label, text in [("t-a", "tokenize the real dump (a)", real[0]),
                             ("t-b", "tokenize the same with operand shapes (b)", real[1])]:
        measured = tokenize_against_jaxlib(label, text)
        if measured is not None:
            ours, theirs, median = measured
            rows.append(Comparison(key, label, ours, "jaxlib hlo_module_from_text", theirs,
                                   0.25, f"paired median {median:.3f}x", median))
    return rows


def lists_from_python(ids: int = 1 << 20, group: int = 1024, rounds: int = 7
                      ) -> tuple[float, float, float]:
    """``CollectiveDeviceList`` of a Python list of lists against ``np.asarray`` of it,
    interleaved round by round: each side's best and the paired median of ours/theirs."""
    import random

    import numpy as np

    from meshtopo import CollectiveDeviceList

    flat = list(range(ids))
    random.Random(0).shuffle(flat)
    groups = [flat[i:i + group] for i in range(0, ids, group)]
    paired = measure_paired(lambda: CollectiveDeviceList(groups), lambda: np.asarray(groups),
                            rounds)
    print(f"CollectiveDeviceList of {ids:,} ids in Python lists: {paired.first * 1e3:.1f} ms, "
          f"np.asarray {paired.second * 1e3:.1f} ms; ratio best "
          f"{paired.first / paired.second:.2f}, paired median {paired.median_ratio:.2f} over "
          f"{paired.rounds} interleaved rounds (goal <= 1.5)")
    return paired.first, paired.second, paired.median_ratio


def write_big_dump(path: str, megabytes: int = 200) -> int:
    """Write a ``megabytes`` MB dump (about 100,000 collectives among other lines)."""
    with open(path, "w") as handle:
        handle.write("\n".join(_header()) + "\n")
        i = 0
        written = 0
        while written < megabytes * 1_000_000:
            lines = []
            for _ in range(11):
                lines.append(
                    f"  %fusion.{i} = f32[8,128]{{1,0}} fusion(%p), kind=kLoop, calls=%add, "
                    f'metadata={{op_name="jit(f)/some/long/op/name/{i}" source_file="/x.py" '
                    f"source_line={i % 1000}}}"
                )
                i += 1
            lines.append(
                f"  %all-reduce.{i} = f32[8,128]{{1,0}} all-reduce(%fusion.{i - 1}), "
                f"channel_id={i}, replica_groups={GROUPS[i % 5]}, use_global_device_ids=true, "
                f'to_apply=%add, metadata={{op_name="jit(f)/psum"}}'
            )
            i += 1
            chunk = "\n".join(lines) + "\n"
            handle.write(chunk)
            written += len(chunk)
        handle.write("  ROOT %r = f32[8,128]{1,0} copy(%p)\n}\n")
    return written


_PEAK = (
    "def peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            return int(line.split()[1])\n"
    "    import resource\n"
    "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
)


def stream_rss(path: str) -> None:
    """Run ``iter_collectives`` over ``path`` in a fresh process; print time and peak RSS
    (the process's own high-water mark, VmHWM, which a fork does not inherit)."""
    code = _PEAK + (
        "import sys, time\n"
        "from meshtopo import hlo\n"
        "base = peak()\n"
        "t = time.perf_counter()\n"
        "n = sum(1 for c in hlo.iter_collectives(sys.argv[1], progress=False)"
        " if c.replica_groups is not None)\n"
        "print(n, time.perf_counter() - t, peak(), base)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                         timeout=1200, check=True)
    count, seconds, rss, base = out.stdout.split()
    size = os.path.getsize(path) / 1e6
    print(f"iter_collectives: {size:.0f} MB, {count} collectives, {float(seconds):.1f} s "
          f"({size / float(seconds):.0f} MB/s), peak RSS {int(rss) / 1024:.0f} MB "
          f"(after import {int(base) / 1024:.0f} MB)")


DEFINITION = (
    "meshtopo: parse_module + replica groups as written, mode, channel id and pairs of every "
    "collective; jaxlib: hlo_module_from_text; best CPU time of 7 runs each"
)


def main() -> None:
    """Run every benchmark, print the figures, then the reader's goals against their anchor:
    at least 2x jaxlib's parser on (a) a real ``jit(grad)`` dump as JAX prints it, (b) the
    same printed with operand shapes and metadata, (c) 20,000 collectives over 1,024 devices
    with metadata on every line and (d) 1,024 randomly permuted explicit lists over 1,024
    devices; lists from Python within 1.5x of numpy."""
    from meshtopo.hlo._compiled import READER
    from meshtopo.hlo._native import SCANNERS, TOKENIZER

    print(DEFINITION)
    print(f"reading with: {TOKENIZER} tokenizer, scanners: {SCANNERS}, HLO reader: {READER}")
    rows = []
    inputs: list[tuple[str, str, str]] = []
    real = real_dumps()
    if real is not None:
        inputs += [("a", "real jit(grad) transformer dump, FSDP x TP, as JAX prints it", real[0]),
                   ("b", "the same with operand shapes and metadata", real[1])]
    inputs += [
        ("c", "20,000 collectives over 1,024 devices, metadata on every line",
         mixed_module(devices=1024, metadata=True)),
        ("d", "1,024 x 1,024 explicit, each a random permutation",
         explicit_module(count=1024, permuted=True)),
    ]
    for key, label, text in inputs:
        measured = compare(f"({key}) {label}", text)
        if measured is not None:
            ours, theirs, median = measured
            rows.append(Comparison(key, label, ours, "jaxlib hlo_module_from_text", theirs,
                                   0.5, f"paired median {median:.3f}x", median))
    rows += tokenizer_rows(real)
    mixed = mixed_module()
    compare("20,000 mixed collectives on 8 devices, no metadata", mixed)
    print(f"  device_groups() of all 20,000 afterwards (on request, not compared): "
          f"{_device_groups(mixed) * 1e3:.0f} ms")
    compare("2,000 x 1,024 explicit (shared text)", explicit_module())
    ours, theirs, median = lists_from_python()
    rows.append(Comparison("e", "CollectiveDeviceList of 2^20 ids in Python lists "
                           f"(paired median {median:.2f}x)", ours, "np.asarray", theirs, 1.5,
                           median=median))
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        path = os.path.join(directory, "big.hlo")
        write_big_dump(path)
        stream_rss(path)
    print(
        f"(this process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )
    console.print(comparison_table("HLO reader vs its anchors (ratio = meshtopo / anchor)", rows))
    console.print(summary(rows))


def tokenizer_main(layers: int = 128) -> None:
    """Only the tokenizer against jaxlib's parse, on the real dumps of a ``layers``-layer
    transformer (``python -m benchmarks.bench_hlo tokenizer [layers]``)."""
    rows = tokenizer_rows(real_dumps(layers))
    console.print(comparison_table("HLO tokenizer vs jaxlib's parse (ratio = tokenizer / "
                                   "jaxlib)", rows))
    console.print(summary(rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["tokenizer"]:
        tokenizer_main(*map(int, sys.argv[2:3]))
    else:
        main()

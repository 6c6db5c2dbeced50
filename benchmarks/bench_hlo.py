"""HLO reading speed: meshtopo's collective scan against jaxlib's C++ HLO parser.

Run with ``python -m benchmarks.bench_hlo``. Three inputs, generated in memory or in /tmp:

1. 20,000 collectives (explicit, iota and mesh-axes all-reduces, collective-permutes);
2. 2,000 all-reduces each naming 1,024 devices explicitly (about 8 MB), once with one group
   text shared by all (as in real dumps) and once with 1,024 distinct lists (worst case);
3. a real JAX dump: ``jit(grad)`` of a 150-layer MLP sharded over a 2 x 4 mesh (about 23,000
   instructions in 3,000 computations, metadata on most lines), compiled in a child process;
4. a generated 200 MB dump read by ``iter_collectives``, reporting peak RSS.

What is compared (printed with the figures): meshtopo's ``parse_module`` plus, for every
collective, its replica groups as written (a decoded ``CollectiveDeviceList``), group mode,
channel id and source-target pairs, against jaxlib's C++ ``hlo_module_from_text`` of the same
text. Both include freeing what they built, as far as it is freed on return: a module's
objects refer to each other (an instruction to its collective and back), so the cyclic
collector frees them in a later pass, which the best time of several runs leaves out; the
mean of a loop of parses, printed for the mixed and the real dump, counts those passes
where they fall. Device groups (``device_groups()``) are computed
only on request; their cost for every collective is printed separately and is not part of
the comparison (jaxlib computes none). Times are the best CPU time of several runs.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

from benchmarks._timing import Comparison, comparison_table, console, summary

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


def mixed_module(count: int = 20000, offset: int = 0) -> str:
    """``count`` collectives cycling through the three group encodings and permutes."""
    lines = _header()
    prev = "%p"
    for i in range(offset, offset + count):
        if i % 6 == 5:
            lines.append(
                f"  %collective-permute.{i} = f32[8,128]{{1,0}} collective-permute({prev}), "
                f"channel_id={i + 1}, source_target_pairs={{{{0,1}},{{1,2}},{{2,3}},{{3,0}}}}"
            )
            prev = f"%collective-permute.{i}"
        else:
            lines.append(
                f"  %all-reduce.{i} = f32[8,128]{{1,0}} all-reduce({prev}), channel_id={i + 1}, "
                f"replica_groups={GROUPS[i % 6 % 5]}, use_global_device_ids=true, to_apply=%add"
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
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("dp", "tp"))
def loss(x, ws):
    for w1, w2 in ws:
        x = x + jax.nn.gelu(x @ w1) @ w2
        x = x / (1 + jnp.abs(x).mean())
    return x.sum()
x = jax.device_put(jnp.ones((64, 256)), NamedSharding(mesh, P("dp", None)))
ws = [(jax.device_put(jnp.ones((256, 512)), NamedSharding(mesh, P(None, "tp"))),
       jax.device_put(jnp.ones((512, 256)), NamedSharding(mesh, P("tp", None))))
      for _ in range(150)]
print(jax.jit(jax.grad(loss)).lower(x, ws).compile().as_text())
"""


def real_dump() -> str | None:
    """The optimised HLO of ``_REAL_DUMP`` on 8 CPU devices, or None without jax."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
           "JAX_PLATFORMS": "cpu"}
    try:
        done = subprocess.run([sys.executable, "-c", _REAL_DUMP], capture_output=True,
                              text=True, timeout=600, env=env, check=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"  real dump unavailable: {str(error)[:200]}")
        return None
    return done.stdout


def _best(fn: object, repeat: int = 7) -> float:
    """Best CPU time of ``repeat`` runs (CPU time, so that a busy machine skews it less)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best


def _mean_in_loop(fn: object, runs: int = 15) -> float:
    """Mean CPU time of ``runs`` calls back to back (after two unmeasured), the cyclic
    collector on: its deferred passes, which free what reference counting cannot, are
    counted where they fall, as in a program that reads many modules."""
    for _ in range(2):
        fn()  # type: ignore[operator]
    start = time.process_time()
    for _ in range(runs):
        fn()  # type: ignore[operator]
    return (time.process_time() - start) / runs


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


def compare(label: str, text: str, loop: bool = False) -> tuple[float, float | None]:
    """Print MB/s for meshtopo and jaxlib on ``text`` and their ratio (with ``loop``, also
    the mean time of each in a loop, the collector's passes included)."""
    megabytes = len(text) / 1e6
    ours = _best(lambda: _resolve(text))
    try:
        theirs: float | None = _best(lambda: _jaxlib_parse(text))
    except Exception as error:  # jaxlib missing or refusing the text
        print(f"  jaxlib unavailable: {error}")
        theirs = None
    line = (
        f"{label}: {megabytes:.1f} MB, meshtopo {ours * 1e3:.1f} ms ({megabytes / ours:.0f} MB/s)"
    )
    if theirs is not None:
        line += (
            f", jaxlib {theirs * 1e3:.1f} ms ({megabytes / theirs:.0f} MB/s), "
            f"jaxlib/meshtopo = {theirs / ours:.2f}x"
        )
    print(line)
    if loop and theirs is not None:
        ours_mean = _mean_in_loop(lambda: _resolve(text))
        theirs_mean = _mean_in_loop(lambda: _jaxlib_parse(text))
        print(f"  mean of 15 in a loop, the collector's passes included: meshtopo "
              f"{ours_mean * 1e3:.1f} ms, jaxlib {theirs_mean * 1e3:.1f} ms, "
              f"jaxlib/meshtopo = {theirs_mean / ours_mean:.2f}x")
    return ours, theirs


def lists_from_python(ids: int = 1 << 20, group: int = 1024) -> tuple[float, float]:
    """``CollectiveDeviceList`` of a Python list of lists against ``np.asarray`` of it: both
    times."""
    import random

    import numpy as np

    from meshtopo import CollectiveDeviceList

    flat = list(range(ids))
    random.Random(0).shuffle(flat)
    groups = [flat[i:i + group] for i in range(0, ids, group)]
    ours = _best(lambda: CollectiveDeviceList(groups), repeat=5)
    theirs = _best(lambda: np.asarray(groups), repeat=5)
    print(f"CollectiveDeviceList of {ids:,} ids in Python lists: {ours * 1e3:.1f} ms, "
          f"np.asarray {theirs * 1e3:.1f} ms, ratio {ours / theirs:.2f} (goal <= 1.5)")
    return ours, theirs


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
    """Run every benchmark, print the figures, then the reader's goals against their anchors
    (at least 2x jaxlib on the mixed dump and 1.5x on random permutations, lists from
    Python within 1.5x of numpy)."""
    print(DEFINITION)
    rows = []
    mixed = mixed_module()
    ours, theirs = compare("20,000 mixed collectives", mixed, loop=True)
    if theirs is not None:
        rows.append(Comparison("1", "20,000 mixed collectives", ours,
                               "jaxlib hlo_module_from_text", theirs, 0.5))
    print(f"  device_groups() of all 20,000 afterwards (on request, not compared): "
          f"{_device_groups(mixed) * 1e3:.0f} ms")
    compare("2,000 x 1,024 explicit (shared text)", explicit_module())
    compare("2,000 x 1,024 explicit (1,024 distinct lists)", explicit_module(distinct=True))
    ours, theirs = compare("1,024 x 1,024 explicit, each a random permutation",
                           explicit_module(count=1024, permuted=True))
    if theirs is not None:
        rows.append(Comparison("2", "1,024 x 1,024 explicit, random permutations", ours,
                               "jaxlib hlo_module_from_text", theirs, 1 / 1.5))
    real = real_dump()
    if real is not None:
        compare("real JAX dump, jit(grad) of a 150-layer MLP on 2 x 4", real, loop=True)
    ours, theirs = lists_from_python()
    rows.append(Comparison("3", "CollectiveDeviceList of 2^20 ids in Python lists", ours,
                           "np.asarray", theirs, 1.5))
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        path = os.path.join(directory, "big.hlo")
        write_big_dump(path)
        stream_rss(path)
    print(
        f"(this process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )
    console.print(comparison_table("HLO reader vs its anchors (ratio = meshtopo / anchor)", rows))
    console.print(summary(rows))


if __name__ == "__main__":
    main()

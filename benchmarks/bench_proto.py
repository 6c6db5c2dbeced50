"""Binary HLO reading speed: ``mt.hlo.load`` of a module's ``HloProto`` against its text.

Run with ``python -m benchmarks.bench_proto``. The module is real: the ``jit(grad)`` of the
transformer of ``bench_hlo`` (``LAYERS`` layers, FSDP x TP on a 2 x 4 mesh), compiled in a
child process with
``--xla_dump_hlo_as_text --xla_dump_hlo_as_proto``, so the two files are one compilation.
Both sides read their file from disk to a ``Module`` (every collective decoded), timed in
alternation (``measure_paired``): the best time of each and the paired median of
proto / text are printed. Goal: a proto reads at least as fast as its text (ratio <= 1).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import meshtopo as mt
from benchmarks._timing import Comparison, comparison_table, console, measure_paired, seconds
from benchmarks.bench_hlo import _REAL_DUMP

LAYERS = 32


def dumped_module(directory: str) -> tuple[Path, Path] | None:
    """(text, proto) of the largest module after optimisations the real program dumps into
    ``directory``, or None when jax is unavailable."""
    flags = (f"--xla_force_host_platform_device_count=8 --xla_dump_to={directory} "
             "--xla_dump_hlo_as_text --xla_dump_hlo_as_proto")
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    try:
        subprocess.run([sys.executable, "-c", _REAL_DUMP, str(LAYERS)], capture_output=True,
                       text=True, timeout=600, env=env, check=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"  real dump unavailable: {str(error)[:200]}")
        return None
    proto = max(Path(directory).glob("*after_optimizations.hlo.pb"), key=lambda p: p.stat().st_size)
    return proto.with_name(proto.name.removesuffix(".hlo.pb") + ".txt"), proto


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        found = dumped_module(directory)
        if found is None:
            return
        text, proto = found
        module = mt.hlo.load(proto)
        console.print(f"{proto.name}: {len(module.instructions)} instructions, "
                      f"{len(module.collectives)} collectives; proto {proto.stat().st_size:,} B, "
                      f"text {text.stat().st_size:,} B")
        paired = measure_paired(lambda: mt.hlo.load(proto), lambda: mt.hlo.load(text), rounds=7)
    console.print(f"  proto best {seconds(paired.first)}, text best {seconds(paired.second)}, "
                  f"paired median proto/text {paired.median_ratio:.3f} over {paired.rounds} rounds")
    row = Comparison("proto", "load of a real module: HloProto vs its text", paired.first,
                     "the same module's text", paired.second, 1.0,
                     note=f"paired median {paired.median_ratio:.3f}")
    console.print(comparison_table("Binary HLO", [row]))


if __name__ == "__main__":
    main()

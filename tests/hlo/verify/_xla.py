"""Compile programs with the XLA in jaxlib in a child process (``_xla_child``), on 8 CPU
devices, and return each one's error (None when XLA accepts it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_xla_child.py")


def xla_errors(cases: list[dict[str, object]], language: str) -> list[str | None]:
    """``cases`` as ``{"text", "replicas", "partitions"}``; ``language`` is ``stablehlo`` or
    ``hlo``. The child is bounded by a 240 s timeout."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env["XLA_FLAGS"] = " ".join([*flags, "--xla_force_host_platform_device_count=8"])
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run([sys.executable, CHILD, language], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=240, env=env, check=False)
    if done.returncode != 0:
        raise AssertionError(done.stderr[-3000:])
    return list(json.loads(done.stdout))

"""Settings for the whole suite.

JAX gets 8 CPU devices before it is imported (``make test`` sets the same flag), which the
oracle, HLO, neuron, order and explorer tests compile and execute programs on. Hypothesis runs
without per-example deadlines, so a busy machine slows the tests down instead of failing them
(pytest-timeout still bounds each test).
"""

import os
import sys

from hypothesis import settings

_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags and "jax" not in sys.modules:
    os.environ["XLA_FLAGS"] = f"{_flags} --xla_force_host_platform_device_count=8".strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

settings.register_profile("meshtopo", deadline=None)
settings.load_profile("meshtopo")

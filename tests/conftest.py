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

# Test files whose tests start processes (torch ranks, JAX children, launchers, a browser):
# collected first, so that the workers (each given whole files in collection order) start with
# the longest files and finish on short ones instead of one worker running a long file alone.
_LONG_FILES = (
    "tests/order/test_flight_recorder.py",
    "tests/runtime/test_torch.py",
    "tests/runtime/test_launchers.py",
    "tests/order/test_hang_truth.py",
    "tests/runtime/test_torch_programs.py",
    "tests/cli/inspect/test_large.py",
    "tests/order/test_triage_join.py",
    "tests/order/test_triage_logs.py",
    "tests/runtime/test_p2p_and_ragged.py",
    "tests/order/test_bounds.py",
    "tests/explore/test_browser.py",
    "tests/explore/test_browser_journeys.py",
    "tests/order/test_traces.py",
    "tests/oracle/test_groups_vs_xla.py",
)


def pytest_collection_modifyitems(config, items):
    """Put the tests of ``_LONG_FILES`` first, in that order; the rest keep theirs."""
    rank = {path: index for index, path in enumerate(_LONG_FILES)}
    root = str(config.rootpath)
    items.sort(key=lambda item: rank.get(os.path.relpath(str(item.path), root), len(rank)))

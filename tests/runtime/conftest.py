"""Fixtures of the runtime tests.

``torch_server``: the test's torch runs fork their processes from one torch server per test
process (``MESHTOPO_TORCH_SERVER``, docs/runtime.md), started by the first run that needs it
and killed and reaped when the test process exits, so a run does not import torch again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meshtopo.runtime._launch import SERVER_VARIABLE


@pytest.fixture(scope="session")
def torch_server_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where this test process's torch server listens (a Unix socket path)."""
    return str(Path(tmp_path_factory.mktemp("torch-server")) / "socket")


@pytest.fixture
def torch_server(torch_server_path: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``MESHTOPO_TORCH_SERVER`` set to this test process's server for the test."""
    monkeypatch.setenv(SERVER_VARIABLE, torch_server_path)
    yield torch_server_path

"""Fixtures of the runtime tests.

``torch_server``: the test's torch runs fork their processes from one torch server per test
process (``MESHTOPO_TORCH_SERVER``, docs/runtime.md), started by the first run that needs it
and killed and reaped when the test process exits, so a run does not import torch again.
``running_torch_server``: the same, started before the test, for the processes it starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.runtime._launch import SERVER_VARIABLE

from ._compare import assert_same
from ._programs import combined


@pytest.fixture(scope="session")
def torch_server_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where this test process's torch server listens (a Unix socket path)."""
    return str(Path(tmp_path_factory.mktemp("torch-server")) / "socket")


@pytest.fixture
def torch_server(torch_server_path: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``MESHTOPO_TORCH_SERVER`` set to this test process's server for the test."""
    monkeypatch.setenv(SERVER_VARIABLE, torch_server_path)
    yield torch_server_path


@pytest.fixture
def running_torch_server(torch_server: str) -> str:
    """``torch_server``, running: started by a run here (equal to the local backend's) if it
    was not, so processes this test starts use it rather than start servers of their own."""
    module = mt.hlo.parse_module(combined(1, 2))
    assert_same(mt.runtime.execute(module, backend="torch", timeout=30),
                mt.runtime.execute(module, timeout=30))
    return torch_server

"""``meshtopo explore`` as a process: prints its loopback URL, serves, stops cleanly on Ctrl-C."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import meshtopo as mt

from .conftest import USER_MESH_ORDER

DUMP = """HloModule dumped, replica_count=2, num_partitions=2

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[8] parameter(0)
  ROOT ar = f32[8] all-reduce(p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add
}
"""


# Ctrl-C as a terminal delivers it: a process started with SIGINT ignored (a background job
# of a shell without job control) would otherwise never see it.
_CTRL_C_ARMED = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                 "from meshtopo.cli import main; main()")


def start(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _CTRL_C_ARMED,
            "explore",
            "--port",
            "0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://\S+/", line)
    if found is None:
        process.kill()
        raise AssertionError(f"no URL in {line!r}; stderr: {process.communicate(timeout=10)[1]}")
    return process, found.group(0)


def stop(process: subprocess.Popen[str], signum: int = signal.SIGINT) -> tuple[str, str]:
    """Send ``signum`` and wait up to 20 s for ``process`` to end; its (stdout, stderr). A
    process that does not end is killed and reaped before the timeout is raised."""
    process.send_signal(signum)
    try:
        return process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.fixture
def explorer(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    dump = tmp_path / "dump.hlo"
    dump.write_text(DUMP)
    process, url = start(str(dump), "--open", env={"BROWSER": "true"})
    yield process, url
    if process.poll() is None:
        process.kill()
        process.communicate(timeout=10)


def get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.timeout(60)
def test_serves_on_loopback_and_stops_on_ctrl_c(
    explorer: tuple[subprocess.Popen[str], str],
) -> None:
    process, url = explorer
    assert url.startswith("http://127.0.0.1:")
    assert get(url + "api/info")["api_version"] == 2
    dump = get(url + "api/dump")
    assert dump["name"] == "dump.hlo"
    assert dump["text"] == DUMP
    out, err = stop(process)
    assert process.returncode == 0
    assert out.strip() == "stopped"
    assert err == ""


@pytest.mark.timeout(60)
def test_sigterm_stops_it_cleanly_too() -> None:
    process, url = start()
    assert get(url + "api/info")["api_version"] == 2
    out, err = stop(process, signal.SIGTERM)
    assert (process.returncode, out.strip(), err) == (0, "stopped", "")


@pytest.mark.timeout(60)
def test_a_gzip_dump_is_read(tmp_path: Path) -> None:
    dump = tmp_path / "dump.hlo.gz"
    dump.write_bytes(gzip.compress(DUMP.encode()))
    process, url = start(str(dump))
    try:
        answer = get(url + "api/dump")
        assert answer["text"] == DUMP
        assert answer["result"]["collectives"][0]["mode"] == "kFlattenedID"
    finally:
        stop(process)


@pytest.mark.timeout(60)
def test_a_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from meshtopo.cli import main; main()",
            "explore",
            str(tmp_path / "no.hlo"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("meshtopo: error: ")
    assert "no.hlo" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.timeout(60)
def test_a_busy_port_is_one_line_and_exit_2() -> None:
    process, url = start()
    try:
        port = url.rsplit(":", 1)[1].strip("/")
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "from meshtopo.cli import main; main()",
                "explore",
                "--port",
                port,
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 2
        assert result.stderr.startswith("meshtopo: error: ") and result.stderr.count("\n") == 1
    finally:
        stop(process)


@pytest.mark.jax
@pytest.mark.timeout(60)
def test_a_dumped_module_is_served_with_its_compile_options_table(permuted_dump: Path) -> None:
    _assert_served_as_dumped(str(permuted_dump), permuted_dump)


def _assert_served_as_dumped(argument: str, dumped: Path) -> None:
    """``explore ARGUMENT`` serves the module of file ``dumped``, placed by its table."""
    process, url = start(argument)
    try:
        answer = get(url + "api/dump")
        assert answer["name"] == dumped.name and answer["text"] == dumped.read_text()
        placement = answer["result"]["module"]["device_assignment"]  # type: ignore[index]
        assert placement["source"] == "dump"
        assert placement["table"] == [list(USER_MESH_ORDER)]
    finally:
        stop(process)


@pytest.mark.jax
@pytest.mark.timeout(60)
def test_a_dump_directory_opens_its_module_holding_collectives(permuted_dump: Path,
                                                             tmp_path: Path) -> None:
    # The dump holds the psum and the small modules JAX compiles around it, without
    # collectives: the psum is opened, as the other commands read it.
    assert len(mt.hlo.module_files(permuted_dump.parent)) > 1
    _assert_served_as_dumped(str(permuted_dump.parent), permuted_dump)
    module = permuted_dump.name.split(".cpu_")[0]  # module_NNNN.NAME
    for path in permuted_dump.parent.glob(module + "*"):
        (shutil.copytree if path.is_dir() else shutil.copy)(path, tmp_path / path.name)
    _assert_served_as_dumped(str(tmp_path), permuted_dump)

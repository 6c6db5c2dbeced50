"""The torch backend on real gloo processes, beyond what it computes (``test_torch_programs``):
the two-host command line as 2 x 4 processes on 127.0.0.1, a killed process, opposite-order
collectives, replay, the DeviceMesh bridge, hosts that never start or whose store never
answers, bad input refused before any process, a run on a torch server whose caller is killed.

Every test here has a hard timeout; runs go through ``execute``/``meshtopo run``, whose
launcher kills and reaps its whole process session on every exit path. Runs fork their
processes from one torch server (``torch_server``; the ``meshtopo`` processes started here
are given it too), except the killed-process test's, which watches the processes a run starts
by itself. A command runs in this process (``_command``) where a process of its own is not
what the test is about."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import meshtopo as mt
from meshtopo.cli import main
from meshtopo.runtime import RendezvousError
from meshtopo.runtime._launch import SERVER_VARIABLE, free_port

from ._compare import assert_same, leaves
from ._faults import LONG_LOOP, OPPOSITE_ORDER
from ._forked_ranks import run_forked
from ._programs import SCHEDULED, combined

SRC = str(Path(mt.__file__).resolve().parents[1])


def _cli(*args: str) -> subprocess.Popen[str]:
    """``meshtopo ARGS`` in a child process (finish it with ``_finish``, which bounds it)."""
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.Popen([sys.executable, "-m", "meshtopo", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _command(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``meshtopo ARGS`` run in this process: its exit code, stdout and stderr (its torch
    processes' stderr included, as a child process's would be)."""
    capfd.readouterr()
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capfd.readouterr()
    return int(done.value.code or 0), out, err


def _finish(process: subprocess.Popen[str], timeout: float) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, out, err


def _forked_bridge(out: Path) -> list[int]:
    """The exit codes of the DeviceMesh bridge's 4 ranks (``_bridge_worker.py RANK 4 PORT
    OUT``) run as forks of one process that imported the script once (``_forked_ranks``:
    ranks past 60 s are killed, all are reaped)."""
    script, port = str(Path(__file__).with_name("_bridge_worker.py")), str(free_port())
    ranks = [{"script": script, "argv": [str(rank), "4", port, str(out)]} for rank in range(4)]
    return run_forked({"timeout": 60, "scripts": [script], "ranks": ranks}, out,
                      dict(os.environ, PYTHONPATH=SRC, TORCH_CPP_LOG_LEVEL="ERROR"))


def _workers_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(entry.name))
    return children


@pytest.mark.usefixtures("running_torch_server")
@pytest.mark.timeout(150)
def test_two_hosts_of_four_processes_on_localhost(tmp_path: Path) -> None:
    path = tmp_path / "combined.hlo"
    path.write_text(combined(2, 4))
    port = str(free_port())
    common = ["run", str(path), "--backend", "torch", "--nnodes", "2", "--nproc", "4",
              "--master-addr", "127.0.0.1", "--master-port", port, "--timeout", "40", "--json"]
    hosts = [_cli(*common, "--node-rank", str(r)) for r in (0, 1)]
    results = [_finish(h, 120) for h in hosts]
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    devices = [json.loads(out)["devices"] for _, out, _ in results]
    assert [sorted(d["device"] for d in host) for host in devices] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    local = mt.runtime.execute(mt.hlo.parse_module(combined(2, 4)))
    for entry in devices[0] + devices[1]:
        expected = leaves(local[entry["device"]])
        assert [o["values"] for o in entry["outputs"]] == [e.tolist() for e in expected]


@pytest.mark.usefixtures("torch_server")
@pytest.mark.timeout(120)
def test_opposite_order_ends_in_the_rendezvous_error(capfd: pytest.CaptureFixture[str]) -> None:
    module = mt.hlo.parse_module(OPPOSITE_ORDER)
    with pytest.raises(RendezvousError) as caught:
        mt.runtime.execute(module, backend="torch", timeout=3)
    stuck = capfd.readouterr().err  # the workers' stderr: XLA's stuck warning, then the error
    assert "[id=0] This thread has been waiting for `channel_id=1#0` for " in stuck
    assert "seconds and may be stuck. Expected 2 threads to join the rendezvous" in stuck
    assert "Arrived: devices [1]; not arrived: devices [0]." in stuck
    message = str(caught.value)
    assert caught.value.waited >= 3.0  # measured by the waiting processes: never sooner
    assert "instruction %ar_a (all-reduce) on device 0" in message
    assert "instruction %ag_b (all-gather) on device 1" in message
    assert "timed out after 3 s on device 0: device(s) [1] never arrived" in message
    assert "timed out after 3 s on device 1: device(s) [0] never arrived" in message


def _running(pids: list[int]) -> list[int]:
    """The processes of ``pids`` that still exist and are not zombies."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


@pytest.mark.timeout(120)
def test_killed_process_fails_the_run_naming_it_and_leaves_no_orphans(tmp_path: Path) -> None:
    path = tmp_path / "loop.hlo"
    path.write_text(LONG_LOOP)
    launcher = _cli("run", str(path), "--backend", "torch", "--timeout", "20")
    try:
        deadline = time.monotonic() + 90
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < 4:
            servers = _workers_of(launcher.pid)
            workers = [w for s in servers for w in _workers_of(s)]
            time.sleep(0.2)
        assert len(workers) == 4, "the workers did not start"
        time.sleep(3)  # in the loop by now
        victim = sorted(workers)[2]
        os.kill(victim, signal.SIGKILL)
        code, _, err = _finish(launcher, 60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()
    assert code == 2
    assert "was killed by signal SIGKILL; the run was stopped" in err
    assert err.startswith("meshtopo: error: device ")
    # The launcher has exited, having reaped its session; what is left must go (30 s at most).
    deadline = time.monotonic() + 30
    while (alive := _running([*servers, *workers])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive == []


def _gone(pids: list[int], seconds: float) -> list[int]:
    """The processes of ``pids`` that still exist (a zombie too: not reaped yet) after
    waiting up to ``seconds`` for them to go."""
    deadline = time.monotonic() + seconds
    while (left := [p for p in pids if Path(f"/proc/{p}").exists()]) and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.timeout(150)
def test_a_served_run_whose_caller_is_killed_is_killed_and_reaped(
        tmp_path: Path, running_torch_server: str) -> None:
    [server] = [pid for pid in _workers_of(os.getpid())
                if running_torch_server in Path(f"/proc/{pid}/cmdline").read_text()]
    # Its two devices wait for each other in opposite collectives (idle, for 60 s at most).
    path = tmp_path / "opposite.hlo"
    path.write_text(OPPOSITE_ORDER)
    caller = _cli("run", str(path), "--backend", "torch", "--timeout", "60")  # uses the server
    try:
        deadline = time.monotonic() + 50
        runs: list[int] = []
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < 2:
            runs = _workers_of(server)
            workers = [w for r in runs for w in _workers_of(r)]
            time.sleep(0.2)
        assert len(runs) == 1 and len(workers) == 2, "the run did not start"
    finally:
        caller.kill()
        caller.communicate()
    # The server ends the run of a caller that is gone and reaps every process of it ...
    assert _gone([*runs, *workers], 30) == []
    # ... and serves the next run.
    assert _running([server]) == [server]
    module = mt.hlo.parse_module(combined(1, 2))
    assert_same(mt.runtime.execute(module, backend="torch", timeout=30),
                mt.runtime.execute(module, timeout=30))


@pytest.mark.timeout(60)
def test_bad_file_is_refused_before_any_process_starts(tmp_path: Path,
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(LONG_LOOP.replace("get-tuple-element(%w), index=1",
                                      "get-tuple-element(%w), index=1\n  %x = s32[4] popcnt(%p)"))
    code, out, err = _command(capfd, "run", str(path), "--backend", "torch", "--nproc", "4")
    assert code == 2 and out == ""
    assert "instruction %x (popcnt) is not executed by meshtopo.runtime" in err


@pytest.mark.timeout(120)
def test_device_mesh_bridge_and_split_keep_meshtopo_rank_order(tmp_path: Path) -> None:
    assert _forked_bridge(tmp_path) == [0, 0, 0, 0]
    seen = {r: json.loads((tmp_path / f"{r}.json").read_text()) for r in range(4)}
    # meshtopo's 'model' groups of [[3,1],[0,2]] are (3,1) and (0,2), in that rank order.
    assert {tuple(s["group"]) for s in seen.values()} == {(3, 1), (0, 2)}
    assert all(s["gathered"] == s["group"] for s in seen.values())
    # torch's own DeviceMesh group sorts the ranks: (1,3), not meshtopo's (3,1) ...
    assert seen[3]["torch_gathered"] == [1, 3]
    # ... so its local rank follows the sorted group, not the mesh position (0, 1, 0, 1) ...
    assert [seen[r]["local_rank"] for r in (3, 1, 0, 2)] == [1, 0, 0, 1]
    # ... and the mesh reads back unchanged.
    assert all(s["round_trip"] for s in seen.values())
    # The split: colour rank % 2, new ranks by key -rank (descending parent rank).
    assert [seen[r]["split_devices"] for r in range(4)] == [[2, 0], [3, 1], [2, 0], [3, 1]]
    assert [seen[r]["split_gathered"] for r in range(4)] == [[2, 0], [3, 1], [2, 0], [3, 1]]


@pytest.mark.timeout(120)
def test_replay_on_torch_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sched.hlo"
    path.write_text(SCHEDULED)
    # The command starts a torch server of its own here, and kills and reaps it at exit.
    server = tmp_path / "server"
    monkeypatch.setenv(SERVER_VARIABLE, str(server))
    code, out, err = _finish(_cli("replay", str(path), "--backend", "torch", "--nproc", "4",
                                  "--timeout", "30", "--json"), 100)
    assert code == 0, err
    assert not server.exists()
    answer = json.loads(out)
    assert answer["backend"] == "torch"
    assert [(c["name"], c["bytes"], sorted(c["devices"])) for c in answer["collectives"]] == [
        (name, size, ["0", "1", "2", "3"]) for name, size in (("ars", 2048), ("cp", 2048),
                                                              ("ag", 8192))]


@pytest.mark.usefixtures("torch_server")
@pytest.mark.timeout(120)
def test_replay_of_opposite_orders_on_torch_ends_in_the_rendezvous_error(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "opposite.hlo"
    path.write_text(OPPOSITE_ORDER)
    code, out, err = _command(capfd, "replay", str(path), "--backend", "torch", "--nproc", "2",
                              "--timeout", "3")
    assert code == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("meshtopo: error: 2 devices timed out in a rendezvous")
    assert "instruction %ar_a (all-reduce) on device 0" in last
    assert "instruction %ag_b (all-gather) on device 1" in last


def _membership_ranks(tmp_path: Path, late: float) -> list[dict[str, Any]]:
    """What each of the two ranks of ``_membership_worker.py`` saw (rank 1 ``late``)."""
    port = str(free_port())
    env = dict(os.environ, PYTHONPATH=SRC, TORCH_CPP_LOG_LEVEL="ERROR")
    worker = str(Path(__file__).with_name("_membership_worker.py"))
    processes = [subprocess.Popen([sys.executable, worker, str(r), port, str(tmp_path),
                                   str(late)], env=env) for r in range(2)]
    try:
        codes = [p.wait(timeout=60) for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
    assert codes == [0, 0]
    return [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(2)]


@pytest.mark.timeout(90)
def test_clique_membership_diagnoses_a_later_divergence_from_gloo_timeouts(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # Two Pythons of their own: as forks of one process one rank times out first more often.
    seen = _membership_ranks(tmp_path, late=0.0)
    assert all(s["in_place"] and s["reduced"] == [1.0, 3.0, 5.0, 7.0] for s in seen)
    assert all(s["widened"] == [1, 300] and s["dtype"] == "int16" for s in seen)
    # Each waited in its own operation; the other never arrived there.
    assert "`first` timed out after 3 s on device 0: device(s) [1] never arrived" in \
        seen[0]["error"]
    assert "`second` timed out after 3 s on device 1: device(s) [0] never arrived" in \
        seen[1]["error"]
    assert [s["missing"] for s in seen] == [[1], [0]]
    assert all(s["waited"] >= 3.0 for s in seen)  # neither gave up before the timeout
    stuck = capfd.readouterr().err
    assert "[id=0] This thread has been waiting for `first` for " in stuck
    assert "Arrived: devices [0]; not arrived: devices [1]." in stuck


@pytest.mark.timeout(90)
def test_a_peer_that_timed_out_first_is_the_same_divergence(tmp_path: Path) -> None:
    # Rank 0 times out first and closes the pair: rank 1 sees the pair closed instead of its
    # own timeout, which the store diagnoses alike (before, rank 1 failed with gloo's words
    # and rank 0 waited for it in vain).
    seen = _membership_ranks(tmp_path, late=1.5)
    assert "`first` timed out after 3 s on device 0: device(s) [1] never arrived" in \
        seen[0]["error"]
    assert "`second` timed out after 3 s on device 1: device(s) [0] never arrived" in \
        seen[1]["error"]
    assert [s["missing"] for s in seen] == [[1], [0]]


@pytest.mark.usefixtures("torch_server")
@pytest.mark.timeout(60)
def test_a_host_that_never_starts_is_named(tmp_path: Path,
                                           capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "combined.hlo"
    path.write_text(combined(2, 4))
    code, out, err = _command(capfd, "run", str(path), "--backend", "torch", "--nnodes", "2",
                              "--nproc", "4", "--node-rank", "0", "--master-addr", "127.0.0.1",
                              "--master-port", str(free_port()), "--timeout", "3")
    assert code == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("meshtopo: error: 4 devices timed out in a rendezvous")
    assert ("rendezvous for collective `the start of the job` timed out after 3 s on device 0: "
            "device(s) [4,5,6,7] never arrived") in last


@pytest.mark.usefixtures("torch_server")
@pytest.mark.timeout(60)
def test_a_host_whose_store_never_answers_is_host_zero_named(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "combined.hlo"
    path.write_text(combined(2, 4))
    port = free_port()
    code, out, err = _command(capfd, "run", str(path), "--backend", "torch", "--nnodes", "2",
                              "--nproc", "4", "--node-rank", "1", "--master-addr", "127.0.0.1",
                              "--master-port", str(port), "--timeout", "3")
    assert (code, out) == (2, "")
    assert err == (f"meshtopo: error: the job's store on host 0 (127.0.0.1:{port}) did not "
                   "answer devices 4,5,6,7 within 3 s: host 0 (node rank 0, devices 0,1,2,3) "
                   "never started the job, or --master-addr/--master-port do not name it\n")

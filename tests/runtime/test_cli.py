"""``meshtopo run`` and ``meshtopo replay`` on the local backend: results, JSON, .npz inputs and
outputs, bad input as one stderr line; replay of a deadlocking order ends in the rendezvous
error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.cli import main

from ._faults import OPPOSITE_ORDER
from ._programs import SCHEDULED, combined


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


@pytest.fixture
def hlo(tmp_path: Path):  # type: ignore[no-untyped-def]
    def write(text: str, name: str = "m.hlo") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def test_run_json_with_npz_inputs_and_outputs(capsys, hlo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = hlo(combined(1, 2))
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **{f"{d}/0": np.arange(8, dtype=np.int32) * (d + 1) for d in range(2)})
    output = tmp_path / "out.npz"
    code, out, err = run(capsys, "run", path, "--inputs", str(inputs), "--output", str(output),
                         "--json")
    assert (code, err) == (0, "")
    answer = json.loads(out)
    assert answer["backend"] == "local" and [d["device"] for d in answer["devices"]] == [0, 1]
    first = answer["devices"][0]["outputs"]
    # %ar is cross-replica with one replica (every device alone); %mx is the max over both.
    assert first[0] == {"dtype": "int32", "shape": [8], "values": list(range(8))}
    assert first[1] == {"dtype": "int32", "shape": [8], "values": [2 * v for v in range(8)]}
    with np.load(output) as saved:
        assert sorted(saved.files) == [f"{d}/{i}" for d in range(2) for i in range(6)]
        np.testing.assert_array_equal(saved["1/2"], np.r_[np.arange(8) * 2, np.arange(8)])


def test_run_text_lists_every_device(capsys, hlo) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(capsys, "run", hlo(combined(2, 2)), "--device-assignment", "3,1;0,2")
    assert code == 0
    assert [line.split(" (")[0] for line in out.splitlines()[:4]] == [
        "device 0", "device 1", "device 2", "device 3"]
    assert "4 devices ran on local" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--backend", "local", "--nproc", "2"], "--nproc and --nnodes need --backend torch"),
    (["--backend", "torch", "--nproc", "3"], "--nproc 3 x --nnodes 1 must equal the module's 2 devices"),
    (["--timeout", "0"], "Invalid value for '--timeout'"),
])
def test_run_refuses_bad_options(capsys, hlo, args, message) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(capsys, "run", hlo(combined(1, 2)), *args)
    assert code == 2 and out == "" and message in err and len(err.splitlines()) == 1


def test_run_refuses_unknown_instruction_with_its_line(capsys, hlo) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run(capsys, "run", hlo(SCHEDULED.replace("bf16", "f32")))
    assert code == 2
    assert ":16:3: instruction %f (fusion) is not executed by meshtopo.runtime" in err


def test_run_refuses_inputs_of_the_wrong_shape(capsys, hlo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **{f"{d}/0": np.zeros(7, np.int32) for d in range(2)})
    code, _, err = run(capsys, "run", hlo(combined(1, 2)), "--inputs", str(inputs))
    assert code == 2
    assert "input 0 of device 0 is int32[7]; parameter 0 is int32[8]" in err


def test_replay_reports_bytes_and_times(capsys, hlo) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(capsys, "replay", hlo(SCHEDULED), "--json")
    assert (code, err) == (0, "")
    answer = json.loads(out)
    assert [(c["name"], c["opcode"], c["bytes"]) for c in answer["collectives"]] == [
        ("ars", "all-reduce-start", 2048), ("cp", "collective-permute", 2048),
        ("ag", "all-gather", 8192)]
    assert all(sorted(c["devices"]) == ["0", "1", "2", "3"] for c in answer["collectives"])


def test_issue_order_enters_the_branch_each_device_takes() -> None:
    module = mt.hlo.parse_module(OPPOSITE_ORDER)
    replay = mt.runtime.Replay(module)
    assert replay.orders == {0: ["ar_a", "ag_a"], 1: ["ag_b", "ar_b"]}


@pytest.mark.timeout(30)
def test_replay_of_opposite_orders_ends_in_the_rendezvous_error(capsys, hlo) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(capsys, "replay", hlo(OPPOSITE_ORDER), "--timeout", "1")
    assert code == 2 and out == ""
    assert "2 devices timed out in a rendezvous" in err
    assert "instruction %ar_a (all-reduce) on device 0" in err
    assert "instruction %ag_b (all-gather) on device 1" in err


def test_run_refuses_a_module_xla_would_not_run(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(capsys, "run", str(Path(__file__).parents[2] / "examples/broken.hlo"))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("meshtopo: error: ")
    assert ("broken.hlo:11:3: XLA's verifier rejects module broken, which XLA would not run: "
            "Replica 1 is repeated in instruction's replica-groups") in err
    assert "(4 finding(s); `meshtopo check` lists them)" in err


def test_a_dump_with_fusions_is_refused_with_the_replay_hint(capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run(capsys, "run", str(Path(__file__).parents[2] /
                                          "examples/data_model_2x4.hlo"))
    assert code == 2
    assert ("instruction %wrapped_copy (fusion) is not executed by meshtopo.runtime "
            "(`meshtopo replay` issues a dump's collectives without running its computations)"
            ) in err


@pytest.mark.parametrize("command", ["run", "replay"])
def test_the_torch_backend_without_torch_is_one_line(capsys, hlo, monkeypatch, command) -> None:  # type: ignore[no-untyped-def]
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else find_spec(name, *a))
    code, out, err = run(capsys, command, hlo(combined(1, 2)), "--backend", "torch")
    assert (code, out) == (2, "")
    assert err == ("meshtopo: error: the torch backend needs torch, which is not installed "
                   "here: pip install 'meshtopo[torch]'\n")

"""Loops counted by ``inspect --cluster``, ``plan --program`` and ``replay``: a real dump
(``--xla_dump_to``) of ring attention's 8-step ``fori_loop`` of ppermutes and of an 8-step
loop of psums, whose counts are the program's own loop bound, and of a ``while_loop`` whose
bound is data (a psum of the values), whose count is unknown before the program runs. The
same dump holds a psum over ``tp`` then one over ``dp`` on a 2 x 2 mesh of permuted devices,
which ``plan --program`` lays its mesh over in the program's device order."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from hlo.dumps._xla_dump import dump_program
from meshtopo.cli import main

pytestmark = pytest.mark.jax

STEPS = 8
PROGRAM = f"""
import json, jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()[:4]), ("ring",))
pairs = [(i, (i + 1) % 4) for i in range(4)]
def ring(x):
    return jax.lax.fori_loop(0, {STEPS}, lambda _, a: jax.lax.ppermute(a, "ring", pairs), x)
def summed(x):
    return jax.lax.fori_loop(0, {STEPS}, lambda _, a: jax.lax.psum(a, "ring") * 0.25, x)
def until(x):
    def going(state):
        return jax.lax.psum(state[0].sum(), "ring") < 1000.0
    def step(state):
        return jax.lax.ppermute(state[0], "ring", pairs) * 2.0, state[1] + 1
    return jax.lax.while_loop(going, step, (x, jnp.zeros((1,), jnp.int32)))
grid = Mesh(np.array(jax.devices())[[2, 0, 3, 1]].reshape(2, 2), ("dp", "tp"))
def tp_then_dp(x):
    return jax.lax.psum(jax.lax.psum(x, "tp") * 0.5, "dp")
jax.block_until_ready(jax.jit(jax.shard_map(tp_then_dp, mesh=grid, in_specs=P(("dp", "tp")),
                                            out_specs=P(("dp", "tp"))))(jnp.arange(8.0)))
for f, specs in ((ring, P("ring")), (summed, P("ring")), (until, (P("ring"), P("ring")))):
    out = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("ring"), out_specs=specs,
                                check_vma=False))(
        jnp.arange(16.0) + 1.0)
    jax.block_until_ready(out)
print(json.dumps(int(np.asarray(out[1])[0])))
"""


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The dump directory and how many iterations the data-dependent loop ran."""
    pytest.importorskip("jax")
    directory = tmp_path_factory.mktemp("loops")
    iterations = json.loads(dump_program(directory, PROGRAM).strip().splitlines()[-1])
    return directory, iterations


def _json(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    with pytest.raises(SystemExit) as done:
        main([*arguments, "--json"])
    assert done.value.code == 0
    answer: dict[str, object] = json.loads(capsys.readouterr().out)
    return answer


def _text(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main(arguments)
    assert done.value.code == 0
    return capsys.readouterr().out


def _permute(answer: dict[str, object]) -> dict[str, object]:
    rows = answer["collectives"]
    assert isinstance(rows, list)
    [row] = [r for r in rows if r["opcode"] == "collective-permute"]
    assert isinstance(row, dict)
    return row


def test_inspect_cluster_multiplies_by_the_loop_bound(dump: tuple[Path, int],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    arguments = ["inspect", str(dump[0]), "--module", "jit_ring", "--cluster", "h100-8x:1"]
    topology = _permute(_json(arguments, capsys))["topology"]
    assert isinstance(topology, dict)
    assert topology["trip_count"] == STEPS
    each, total = topology["seconds_each"], topology["seconds"]
    assert total["hierarchical"] == pytest.approx(STEPS * each["hierarchical"])
    assert f"x{STEPS} (loop trip count)" in _text(arguments, capsys)


def test_inspect_cluster_says_a_data_bound_is_unknown(dump: tuple[Path, int],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    directory, iterations = dump
    assert iterations > 1  # the loop ran several times: once would be a wrong count
    arguments = ["inspect", str(directory), "--module", "jit_until", "--cluster", "h100-8x:1"]
    answer = _json(arguments, capsys)
    rows = answer["collectives"]
    assert isinstance(rows, list) and {r["opcode"] for r in rows} == {
        "collective-permute", "all-reduce"}
    for row in rows:
        assert row["topology"]["trip_count"] is None
        assert row["topology"]["seconds"] == row["topology"]["seconds_each"]
    text = _text(arguments, capsys)
    assert text.count("trip count unknown (a loop around it runs as its data decides): "
                      "counted once") == 2


def test_replay_counts_the_same_loops(dump: tuple[Path, int],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    directory, _ = dump
    ring = _json(["replay", str(directory), "--module", "jit_ring"], capsys)
    assert _permute(ring)["trip_count"] == STEPS
    until = _json(["replay", str(directory), "--module", "jit_until"], capsys)
    assert _permute(until)["trip_count"] is None
    notes = until["notes"]
    assert isinstance(notes, list) and len(notes) == 1 and "its trip count depends on data" in notes[0]


def _plan(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return _json(["plan", "--mesh", "ring=4", "--cluster", "h100-8x:1", *arguments], capsys)


def test_plan_program_multiplies_by_the_loop_bound(dump: tuple[Path, int],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    directory, _ = dump
    program = _plan(["--program", str(directory), "--module", "jit_summed"], capsys)["program"]
    assert isinstance(program, dict)
    [row] = program["collectives"]
    assert (row["opcode"], row["axes"], row["trip_count"]) == ("all-reduce", ["ring"], STEPS)
    # One issue is plan's own row for that axis and size; the program's time is STEPS of them.
    [alone] = _plan(["--opcode", "all-reduce", "--size", str(row["bytes"])], capsys)["rows"]
    assert row["row"]["seconds"] == alone["seconds"]
    hierarchical = alone["seconds"]["hierarchical"]
    assert row["seconds"]["hierarchical"] == pytest.approx(STEPS * hierarchical)
    assert program["total_seconds"]["hierarchical"] == pytest.approx(STEPS * hierarchical)
    text = _text(["plan", "--mesh", "ring=4", "--cluster", "h100-8x:1", "--program",
                  str(directory), "--module", "jit_summed"], capsys)
    assert f"x{STEPS} (loop trip count)" in text


def test_plan_program_says_a_data_bound_is_unknown(dump: tuple[Path, int],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    directory, _ = dump
    program = _plan(["--program", str(directory), "--module", "jit_until"], capsys)["program"]
    assert isinstance(program, dict)
    rows = {row["opcode"]: row for row in program["collectives"]}
    assert rows.keys() == {"all-reduce", "collective-permute"}
    assert [row["trip_count"] for row in rows.values()] == [None, None]
    psum = rows["all-reduce"]
    assert psum["seconds"] == psum["row"]["seconds"]  # counted once
    assert rows["collective-permute"]["row"] is None  # pairs: not over mesh axes
    text = _text(["plan", "--mesh", "ring=4", "--cluster", "h100-8x:1", "--program",
                  str(directory), "--module", "jit_until"], capsys)
    assert "trip count unknown (a loop around it runs as its data decides)" in text


def test_inspect_cluster_counts_loops_of_a_module_on_stdin(
        dump: tuple[Path, int], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    [path] = dump[0].glob("module_*.jit_ring.cpu_after_optimizations.txt")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    answer = _json(["inspect", "-", "--cluster", "h100-8x:1"], capsys)
    assert answer["source"] == "<stdin>"
    assert _permute(answer)["topology"]["trip_count"] == STEPS


def test_plan_program_lays_the_mesh_over_the_program_devices(
        dump: tuple[Path, int], capsys: pytest.CaptureFixture[str]) -> None:
    directory, _ = dump
    arguments = ["plan", "--mesh", "dp=2,tp=2", "--cluster", "h100-8x:1", "--opcode",
                 "all-reduce", "--program", str(directory), "--module", "jit_tp_then_dp"]
    answer = _json(arguments, capsys)
    assert (answer["devices_from"], answer["mesh"]["devices"]) == ("program", [2, 0, 3, 1])
    program = answer["program"]
    assert isinstance(program, dict)
    # the program's own axes, in its order: the psum over tp, then the one over dp
    assert [row["axes"] for row in program["collectives"]] == [["tp"], ["dp"]]
    assert ("mesh devices in the order of the program's device table (--devices sets another)"
            in _text(arguments, capsys))
    given = _json([*arguments, "--devices", "0,1,2,3"], capsys)
    assert (given["devices_from"], given["mesh"]["devices"]) == ("given", [0, 1, 2, 3])


def test_plan_program_refuses_a_mesh_of_another_size(
        dump: tuple[Path, int], capsys: pytest.CaptureFixture[str]) -> None:
    directory, _ = dump
    with pytest.raises(SystemExit) as done:
        main(["plan", "--mesh", "dp=2,tp=4", "--cluster", "h100-8x:1", "--program",
              str(directory), "--module", "jit_tp_then_dp"])
    assert done.value.code == 2
    [error] = capsys.readouterr().err.splitlines()
    assert error.startswith("meshtopo: error: --program ")
    assert error.endswith("jit_tp_then_dp.cpu_after_optimizations.txt runs on 4 devices "
                          "(1 replica x 4 partitions); mesh['dp'=2,'tp'=4] has 8")

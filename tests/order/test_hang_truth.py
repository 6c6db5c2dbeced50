"""Ground truth by execution: small real JAX programs whose devices may disagree on their
collectives (conditionals on the partition or on the data, loops whose trip count depends on
the partition), run on 8 CPU devices in child processes. Each program has one test asserting
what it really does (finishes or hangs) and one asserting meshtopo's verdict on XLA's
optimized HLO of it, with the key facts of its findings where the execution decides them.

What the runs show on XLA:CPU (jaxlib 0.10): an all-reduce's rendezvous is keyed by the run,
the devices of its group, the kind of collective and ``op_id`` — the ``channel_id`` — not by
the instruction. JAX gives every shard_map psum ``channel_id=1``, so collectives issued by
different HLO instructions (two branches of a conditional, a loop body and its peeled copy)
meet on their group by arrival order; the same program with distinct channel ids hangs. A
psum meets a pmax too (each member reduces its slice of the buffer with its own reduction).
The verdicts are therefore asked under ``rendezvous="op_id"`` (XLA:CPU's rule); for the
programs as JAX emits them (one channel id) the default ``"clique"`` must say the same.

How a hang is told from a slow run: the child reports when it has compiled a program, and
a program that has not finished ``HANG_AFTER_COMPILE`` seconds later hangs (a clean run
takes well under a second after compiling). The programs that finish run one after another
in one child; each program that hangs has a child of its own (``_hang_programs.execute``).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import numpy as np
import pytest

import meshtopo as mt

from ._hang_programs import PROGRAMS, Run, Server, execute

pytestmark = [pytest.mark.jax, pytest.mark.timeout(240)]

# Every child at once: a hung child waits without computing, so the waits overlap, and the
# children starting and compiling share the two cores.
WORKERS = 8

# Measured on 8 CPU devices (jaxlib 0.10.2).
TRUTH: dict[str, Literal["hang", "finished"]] = {
    "cond_swapped_order": "hang",
    "cond_same_order": "finished",
    "cond_same_order_channels": "hang",
    "cond_psum_vs_pmax": "finished",
    "while_partition_trip": "hang",
    "while_uniform_trip": "finished",
    "pipeline_warmup_pp": "hang",
    "pipeline_warmup_dp": "finished",
    "switch_three": "hang",
    "nan_skip_dp": "hang",
    "nan_skip_dp_agreed": "finished",
    "nan_skip_tp_agreed": "hang",
    "fori4": "finished",
    "fori3_peeled": "finished",
    "fori5": "finished",
    "fori3": "finished",
    "cond_fori4_vs_peeled": "finished",
    "cond_fori5_vs_fori3": "hang",
}

# The verdict meshtopo must give under rendezvous="op_id": one finding of one of these types;
# an empty set means no finding at all. ``cond_psum_vs_pmax`` finishes, but its members
# combine a psum with a pmax.
EXPECTED_TYPES: dict[str, set[str]] = {
    "cond_swapped_order": {"deadlock"},
    "cond_same_order": set(),
    "cond_same_order_channels": {"missing", "deadlock"},
    "cond_psum_vs_pmax": {"mismatch"},
    "while_partition_trip": {"missing", "deadlock"},
    "while_uniform_trip": set(),
    "pipeline_warmup_pp": {"missing", "deadlock"},
    "pipeline_warmup_dp": set(),
    "switch_three": {"missing", "mismatch", "deadlock"},
    "nan_skip_dp": {"may_diverge"},
    "nan_skip_dp_agreed": set(),
    "nan_skip_tp_agreed": {"may_diverge"},
    "fori4": set(),
    "fori3_peeled": set(),
    "fori5": set(),
    "fori3": set(),
    "cond_fori4_vs_peeled": set(),
    "cond_fori5_vs_fori3": {"missing", "deadlock"},
}

NAMES = sorted(TRUTH)
EVEN = frozenset(d for d in range(8) if (d // 4 + d % 4) % 2 == 0)  # 2x4 mesh, x + y even
ODD = frozenset(range(8)) - EVEN
Y_GROUPS = "replica_groups={{0,1,2,3},{4,5,6,7}}"


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    """Every program: those expected to finish one after another in one child, each
    expected to hang in a child of its own, all children at once, forks of one server that
    imported JAX. Each run holds the HLO the verdict tests read. (A program that hangs
    against expectation ends its child and is reported so; the rest of that child's programs
    go on in a fresh one.)"""
    wanted = NAMES
    finishing = [name for name in wanted if TRUTH[name] == "finished"]
    groups = [finishing, *([name] for name in wanted if TRUTH[name] == "hang")]
    done: dict[str, Run] = {}
    with Server() as server, ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [pool.submit(execute, group, server) for group in groups if group]
        for future in futures:
            done.update(future.result())
    return done


def _met(matrix: np.ndarray) -> set[tuple[int, int]]:
    """(device, tag) pairs that contributed to one psum of one-hot tags, each exactly once."""
    assert set(np.unique(matrix).tolist()) <= {0.0, 1.0}, matrix
    slots, devices = np.nonzero(matrix)
    return {(int(d), int(s)) for s, d in zip(slots, devices, strict=True)}


def _module(runs: dict[str, Run], name: str) -> mt.hlo.Module:
    return mt.hlo.parse_module(runs[name].text)


def _seen(findings: list[mt.order.Finding]) -> list[tuple[str, tuple[int, ...], str]]:
    return [(f.type, f.devices, f.message) for f in findings]


def _instruction_line(runs: dict[str, Run], name: str, instruction: str) -> str:
    (line,) = re.findall(rf"%{re.escape(instruction)} = .*", runs[name].text)
    return line


def test_the_registry_and_the_tables_agree() -> None:
    assert set(PROGRAMS) == set(TRUTH) == set(EXPECTED_TYPES)


@pytest.mark.parametrize("name", NAMES)
def test_what_the_program_really_does(name: str, runs: dict[str, Run]) -> None:
    # ``execute`` declares a hang only after the child compiled the program.
    assert runs[name].status == TRUTH[name], runs[name].stderr[-1000:]


@pytest.mark.parametrize("name", NAMES)
def test_meshtopo_verdict(name: str, runs: dict[str, Run]) -> None:
    """The verdict under XLA:CPU's rule (``op_id``), which is what the runs measure. Every
    program but ``cond_same_order_channels`` has one channel id, as JAX emits it, and then the
    default rule (``clique``) gives the same findings."""
    module = _module(runs, name)
    findings = mt.order.analyze(module, rendezvous="op_id").findings
    expected = EXPECTED_TYPES[name]
    if expected:
        assert any(f.type in expected for f in findings), _seen(findings)
    else:
        assert findings == [], _seen(findings)
    if name != "cond_same_order_channels":
        assert _seen(mt.order.analyze(module).findings) == _seen(findings)


def test_distinct_channels_meet_by_arrival_order_under_clique(runs: dict[str, Run]) -> None:
    """cond_same_order_channels hangs on XLA:CPU, whose rendezvous key holds the channel id:
    a psum of channel 1 never meets one of channel 3. Under the default rule it is clean:
    NCCL (XLA:GPU) orders a communicator by arrival, whatever the channel id, and both
    branches issue the same collectives (over y, then over x) in the same order."""
    assert mt.order.analyze(_module(runs, "cond_same_order_channels")).findings == []


def _findings(runs: dict[str, Run], name: str) -> list[mt.order.Finding]:
    return mt.order.analyze(_module(runs, name), rendezvous="op_id").findings


def test_the_swapped_order_is_a_cycle_between_the_parities(runs: dict[str, Run]) -> None:
    """cond_swapped_order: even devices wait in their psum over y for an odd member, which
    waits in its psum over x for an even one; every cycle alternates the parities."""
    cycles = [f for f in _findings(runs, "cond_swapped_order") if f.type == "deadlock"]
    assert cycles
    for finding in cycles:
        parities = [d in EVEN for d in finding.devices]
        assert len(parities) % 2 == 0 and all(
            p != q for p, q in zip(parities, parities[1:] + parities[:1], strict=True)
        ), finding.message


def test_distinct_channels_leave_each_parity_waiting_in_its_first_psum(
        runs: dict[str, Run]) -> None:
    """cond_same_order_channels under op_id: each parity waits in its own psum over y (the
    first of its branch), which the other parity never reaches."""
    findings = [f for f in _findings(runs, "cond_same_order_channels") if f.type == "missing"]
    assert {(frozenset(f.devices), frozenset(f.waiting)) for f in findings} == {
        (EVEN, ODD), (ODD, EVEN)}, _seen(findings)
    for finding in findings:
        (instruction,) = finding.instructions
        assert Y_GROUPS in _instruction_line(runs, "cond_same_order_channels", instruction)


def test_a_psum_meeting_a_pmax_is_a_mismatch_of_reductions(runs: dict[str, Run]) -> None:
    (finding,) = _findings(runs, "cond_psum_vs_pmax")
    assert finding.type == "mismatch" and finding.devices == tuple(range(8))
    assert "reduction" in finding.message and "garbage" in finding.message


def test_partitions_4_to_7_stop_a_trip_early(runs: dict[str, Run]) -> None:
    """while_partition_trip: devices 4-7 run two iterations, so 0-3 wait in the third."""
    (finding,) = _findings(runs, "while_partition_trip")
    assert finding.type == "missing"
    assert finding.devices == (4, 5, 6, 7) and finding.waiting == (0, 1, 2, 3)
    assert "iteration 2 of" in finding.message


def test_stage_0_never_enters_the_warmup_loop(runs: dict[str, Run]) -> None:
    """pipeline_warmup_pp: stage 0 (devices 0, 1) runs no iteration; the later stages of its
    pp groups wait in the first."""
    (finding,) = _findings(runs, "pipeline_warmup_pp")
    assert finding.type == "missing"
    assert finding.devices == (0, 1) and finding.waiting == (2, 3, 4, 5, 6, 7)
    assert "iteration 0 of" in finding.message


def test_the_branch_without_a_collective_leaves_the_others_waiting(runs: dict[str, Run]) -> None:
    """switch_three: devices 2 and 5 issue nothing; the psum and pmax devices meet each other
    (a mismatch) and wait for them."""
    findings = _findings(runs, "switch_three")
    missing = [f for f in findings if f.type == "missing"]
    assert missing and all(f.devices == (2, 5) for f in missing), _seen(findings)
    assert set().union(*(f.waiting for f in missing)) == {0, 1, 3, 4, 6, 7}
    assert any(f.type == "mismatch" for f in findings)


def _dp_group(message: str) -> tuple[int, int]:
    """The group a may_diverge message names, checked to be a dp group of the 2x4 mesh."""
    found = re.search(r"not uniform over group \[(\d+),(\d+)\]", message)
    assert found is not None, message
    low, high = int(found.group(1)), int(found.group(2))
    assert high == low + 4, message
    return low, high


def test_a_nan_in_one_shard_may_leave_its_dp_partner_waiting(runs: dict[str, Run]) -> None:
    """nan_skip_dp: the flag is the device's own, so a dp pair can split (the run: device 1
    skips, 5 waits in the psum). The finding names a dp group and a missing guest."""
    (finding,) = _findings(runs, "nan_skip_dp")
    assert finding.type == "may_diverge"
    _dp_group(finding.message)
    assert "the job hangs" in finding.message


def test_a_flag_agreed_over_tp_may_still_split_the_dp_groups(runs: dict[str, Run]) -> None:
    """nan_skip_tp_agreed: the flag is uniform over each tp group {0..3}, {4..7} but not over
    a dp group; the tp groups take opposite branches (the run: 0-3 skip, 4-7 wait)."""
    (finding,) = _findings(runs, "nan_skip_tp_agreed")
    assert finding.type == "may_diverge"
    _dp_group(finding.message)
    split = re.search(r"If devices \[([\d,]+)\] take branch \d and devices \[([\d,]+)\] branch",
                      finding.message)
    assert split is not None and {split.group(1), split.group(2)} == {"0,1,2,3", "4,5,6,7"}
    assert "the job hangs" in finding.message


def test_the_shorter_loop_leaves_the_longer_waiting_in_its_fourth_iteration(
        runs: dict[str, Run]) -> None:
    """cond_fori5_vs_fori3: devices 4-7 run 3 psums, 0-3 wait in their fourth."""
    (finding,) = _findings(runs, "cond_fori5_vs_fori3")
    assert finding.type == "missing"
    assert finding.devices == (4, 5, 6, 7) and finding.waiting == (0, 1, 2, 3)
    assert "iteration 3 of" in finding.message


@pytest.mark.parametrize("rendezvous", ["clique", "op_id"])
def test_mpmd_pipeliner_shapes(rendezvous: str, runs: dict[str, Run]) -> None:
    """The standalone modules as two programs of one MPMD run, devices 0-3 running the first
    and 4-7 the second (each module is compiled for 8 partitions, device assignment 0..7).
    Their SPMD twins give the truth: fori4 against fori3_peeled finishes
    (cond_fori4_vs_peeled), fori5 against fori3 hangs with 0-3 waiting in their fourth psum
    (cond_fori5_vs_fori3)."""
    for name in ("fori4", "fori3_peeled", "fori5", "fori3"):
        module = _module(runs, name)
        assert (module.replica_count, module.num_partitions) == (1, 8)
        assert module.device_assignment.array.reshape(-1).tolist() == list(range(8))
    assert TRUTH["cond_fori4_vs_peeled"] == "finished" and TRUTH["cond_fori5_vs_fori3"] == "hang"
    clean = mt.order.analyze([(_module(runs, "fori4"), [0, 1, 2, 3]),
                              (_module(runs, "fori3_peeled"), [4, 5, 6, 7])], rendezvous=rendezvous)
    assert clean.findings == [], _seen(clean.findings)
    hung = mt.order.analyze([(_module(runs, "fori5"), [0, 1, 2, 3]),
                             (_module(runs, "fori3"), [4, 5, 6, 7])], rendezvous=rendezvous)
    (finding,) = hung.findings
    assert finding.type in {"missing", "deadlock"}, _seen(hung.findings)
    assert finding.devices == (4, 5, 6, 7) and finding.waiting == (0, 1, 2, 3)
    assert "iteration 3 of" in finding.message


def test_psums_of_the_two_branches_meet_by_arrival_order(runs: dict[str, Run]) -> None:
    """cond_same_order: even devices tag their psums 0 (over y) and 1 (over x), odd devices
    2 and 3. Each psum holds both branches' contributions: the group's members met whatever
    instruction each of them issued."""
    result = runs["cond_same_order"].result
    assert result is not None and result.shape == (8, 3, 4, 8)
    even = {d for d in range(8) if (d // 4 + d % 4) % 2 == 0}
    for device in range(8):
        y_group = {4 * (device // 4) + k for k in range(4)}
        x_group = {device % 4, device % 4 + 4}
        assert _met(result[device, 0]) == {(d, 0 if d in even else 2) for d in y_group}
        assert _met(result[device, 1]) == {(d, 1 if d in even else 3) for d in x_group}


def test_distinct_channel_ids_keep_the_branches_apart(runs: dict[str, Run]) -> None:
    """The same program with channel ids 1, 2 in one branch and 3, 4 in the other hangs: the
    rendezvous key holds the channel id (``op_id``). (XLA:CPU names the key of a waiting
    member in a warning after 20 s in the rendezvous, later than a hang is declared here.)"""
    text = runs["cond_same_order_channels"].text
    assert sorted(re.findall(r"all-reduce\(.*channel_id=(\d+)", text)) == ["1", "2", "3", "4"]
    assert runs["cond_same_order_channels"].status == "hang"


def test_a_loop_psum_meets_the_psum_peeled_after_the_loop(runs: dict[str, Run]) -> None:
    """cond_fori4_vs_peeled: devices 0-3 tag their 4 loop psums 0; devices 4-7 tag their 3
    loop psums 1 and the psum after their loop 2. The fourth psum pairs the loop with the
    peeled copy."""
    result = runs["cond_fori4_vs_peeled"].result
    assert result is not None and result.shape == (8, 6, 3, 8)
    for device in range(8):
        for k in range(4):
            high = 1 if k < 3 else 2
            assert _met(result[device, k]) == {(d, 0 if d < 4 else high) for d in range(8)}
        assert _met(result[device, 4]) == set()


def test_a_psum_meets_a_pmax_and_all_get_one_reduction(runs: dict[str, Run]) -> None:
    """cond_psum_vs_pmax: devices 0-3 psum ``p + 1`` (8 equal elements), 4-7 pmax it. They
    meet (no hang) and every member gets the same garbage: XLA:CPU's all-reduce splits the
    buffer among the participants, each reducing its slice with its own reduction, so the
    elements of devices 0-3 are summed (36) and those of 4-7 maxed (8)."""
    result = runs["cond_psum_vs_pmax"].result
    assert result is not None and result.shape == (8, 8)
    np.testing.assert_array_equal(result, np.tile([36.0] * 4 + [8.0] * 4, (8, 1)))


def test_what_xla_makes_of_the_programs(runs: dict[str, Run]) -> None:
    """The compiled HLO: every psum is an all-reduce with channel_id=1 and global device ids;
    none is hoisted out of a branch or merged; a partition-dependent selector is a fusion of
    ``partition-id``; a fori_loop of fixed length keeps its loop with known_trip_count, a
    run-time trip count gives a while without one."""
    for name in NAMES:
        text = runs[name].text
        reduces = re.findall(r"= \S+ all-reduce\(.*", text)
        assert reduces and all("use_global_device_ids=true" in r for r in reduces), name
        if name != "cond_same_order_channels":
            assert all(", channel_id=1," in r for r in reduces), name
    counts = {name: len(re.findall(r"= \S+ all-reduce\(", runs[name].text))
              for name in NAMES}
    assert counts["cond_same_order"] == counts["cond_swapped_order"] == 4
    assert counts["switch_three"] == 2 and counts["cond_fori4_vs_peeled"] == 3
    for name in ("cond_same_order", "switch_three", "cond_fori4_vs_peeled"):
        (line,) = re.findall(r".* conditional\(.*", runs[name].text)
        selector = re.search(r"conditional\(%([\w.-]+)", line)
        assert selector is not None and "fusion" in selector.group(1), name
        assert re.search(rf"%{re.escape(selector.group(1))} = s32\[\] fusion\(%axis_index",
                         runs[name].text), name
    trips = {name: re.findall(r'"known_trip_count":\{"n":"(\d+)"\}', runs[name].text)
             for name in NAMES}
    assert trips["fori4"] == ["4"] and trips["fori3_peeled"] == ["3"]
    assert sorted(trips["cond_fori5_vs_fori3"]) == ["3", "5"]
    for name in ("while_partition_trip", "while_uniform_trip", "pipeline_warmup_pp"):
        assert trips[name] == [] and " while(" in runs[name].text, name

"""Hang logs written from the documented line formats (torch's ProcessGroupNCCL watchdog and
status lines, NCCL_DEBUG=INFO Init COMPLETE and opCount lines, XLA's rendezvous warnings), in
the shapes real reports show: launcher prefixes and timestamps, ranks interleaved across
per-host files, lines cut short."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.cli._main import main

pytestmark = pytest.mark.timeout(60)

HOST0 = """\
2026-12-01T10:00:00.100Z node0:1200:1200 [0] NCCL INFO ncclCommInitRank comm 0x55aa10 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0xabc123 - Init COMPLETE
2026-12-01T10:00:00.101Z node0:1201:1201 [1] NCCL INFO ncclCommInitRank comm 0x55bb20 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 2a000 commId 0xabc123 - Init COMPLETE
2026-12-01T10:00:00.300Z node0:1201:1201 [1] NCCL INFO ncclCommInitRank comm 0x55cc30 rank 0 nranks 2 cudaDev 1 nvmlDev 1 busId 2a000 commId 0xdef456 - Init COMPLETE
2026-12-01T10:00:01.000Z node0:1200:1200 [0] NCCL INFO AllReduce: opCount 28 sendbuff 0x7f00 recvbuff 0x7f00 count 1000 datatype 7 op 0 root 0 comm 0x55aa10 [nranks=4] stream 0x5600
2026-12-01T10:00:01.001Z node0:1201:1201 [1] NCCL INFO AllReduce: opCount 28 sendbuff 0x7f00 recvbuff 0x7f00 count 1000 datatype 7 op 0 root 0 comm 0x55bb20 [nranks=4] stream 0x5600
2026-12-01T10:00:01.002Z node0:1201:1201 [1] NCCL INFO AllGather: opCount 3 sendbuff 0x7f00 recvbuff 0x7f00 count 64 datatype 7 op 0 root 0 comm 0x55cc30 [nranks=2] stream 0x5600
[rank0]:[E1201 10:10:01.178116623 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1000, NumelOut=1000, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
[rank1]:[E1201 10:10:01.178116623 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1000, NumelOut=1
[rank0]:[E1201 10:10:01.178200000 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 0] Exception (either an error or timeout) detected by watchdog at work: 41, last enqueued NCCL work: 41, last completed NCCL work: 40.
[rank1]:[E1201 10:10:01.178200000 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 41, last enqueued NCCL work: 41, last completed NCCL work: 40.
"""
HOST1 = """\
node1:3300:3300 [0] NCCL INFO ncclCommInitRank comm 0x66aa10 rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0xabc123 - Init COMPLETE
node1:3301:3301 [1] NCCL INFO ncclCommInitRank comm 0x66bb20 rank 3 nranks 4 cudaDev 1 nvmlDev 1 busId 2a000 commId 0xabc123 - Init COMPLETE
node1:3300:3300 [0] NCCL INFO ncclCommInitRank comm 0x66cc30 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0xdef456 - Init COMPLETE
node1:3301:3301 [1] NCCL INFO AllReduce: opCount 27 sendbuff 0x7f00 recvbuff 0x7f00 count 1000 datatype 7 op 0 root 0 comm 0x66bb20 [nranks=4] stream 0x5600
node1:3300:3300 [0] NCCL INFO AllReduce: opCount 28 sendbuff 0x7f00 recvbuff 0x7f00 count 1000 datatype 7 op 0 root 0 comm 0x66aa10 [nranks=4] stream 0x5600
node1:3300:3300 [0] NCCL INFO AllGather: opCount 3 sendbuff 0x7f00 recvbuff 0x7f00 count 64 datatype 7 op 0 root 0 comm 0x66cc30 [nranks=2] stream 0x5600
[rank3]:[I1201 10:05:00.000000000 ProcessGroupNCCL.cpp:1700] [PG ID 0 PG GUID 0(default_pg) Rank 3] NCCL Work update periodically: last enqueued NCCL work: 39, last completed NCCL work: 39.
[rank3]:[E1201 10:10:02.000000000 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank 3] Received a dump signal due to a collective timeout from  rank 0 and we will try our best to dump the debug info. Last enqueued NCCL work: 40, last completed NCCL work: 40.This is most likely caused by incorrect usages
[rank2]:[E1201 10:10:01.178200000 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 2] Exception (either an error or timeout) detected by watchdog at work: 41, last enqueued NCCL work: 41, last completed NCCL work: 4
E1201 10:10:05.000 rendezvous.cc:100] [id=1] This thread has been waiting for `acquire clique for rank 3; clique=devices=[4,5,6,7]; is_p2p=0; run_id=-1558191007` for 10 seconds and may be stuck. Expected 4 threads to join the rendezvous, but not all of them arrived on time.
E1201 10:10:05.000 rendezvous.cc:100] [id=1] This thread has been waiting for `acquire clique for rank 1; clique=devices=[4,5,6,7]; is_p2p=0; run_id=-1558191007` for 10 seconds and may be stuck. Expected 4 threads to join the rendezvous, but not all of them arrived on time.
E1201 10:10:07.000 rendezvous.cc:100] [id=2] This thread has been waiting for `first call to collective operation 190; run_id=-851342065` for 20 seconds and may be stuck. All 2 threads joined the rendezvous, however the leader has not marked the rendezvous as completed.
"""


@pytest.fixture
def logs(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / "node0.log", tmp_path / "node1.out"]
    for path, text in zip(paths, (HOST0, HOST1), strict=True):
        path.write_text(text)
    return paths


def test_process_group_counts(logs: list[Path]) -> None:
    report = mt.order.from_logs(logs)
    (group,) = report.groups
    assert (group.pg_id, group.guid, group.desc) == ("0", "0", "default_pg")
    statuses = {r: (s.global_rank, s.enqueued, s.completed, s.blocked_seq, s.blocked_op,
                    s.numel_in, s.numel_out) for r, s in group.ranks.items()}
    assert statuses == {
        0: (0, 41, 40, 41, "ALLREDUCE", 1000, 1000),
        1: (1, 41, 40, 41, "ALLREDUCE", 1000, None),  # NumelOut cut short
        2: (2, 41, None, None, None, None, None),  # last completed cut short
        3: (3, 40, 40, None, None, None, None),  # the later status replaces the earlier
    }
    assert (group.behind, group.first_disagreement, group.disagreement_op) == (
        [3], 41, "ALLREDUCE")


def test_nccl_communicators_map_to_global_ranks(logs: list[Path]) -> None:
    report = mt.order.from_logs(logs)
    world, pair = report.comms
    assert (world.comm_id, world.nranks, pair.comm_id, pair.nranks) == (
        "0xabc123", 4, "0xdef456", 2)
    assert [(m.rank, m.host, m.pid, m.device, m.global_rank, m.op_count)
            for _, m in sorted(world.members.items())] == [
        (0, "node0", 1200, 0, 0, 0x28), (1, "node0", 1201, 1, 1, 0x28),
        (2, "node1", 3300, 0, 2, 0x28), (3, "node1", 3301, 1, 3, 0x27)]
    assert (world.behind, world.first_disagreement, world.disagreement_op) == (
        [3], 0x28, "AllReduce")
    assert [(m.rank, m.global_rank, m.op, m.op_count)
            for _, m in sorted(pair.members.items())] == [(0, 1, "AllGather", 3),
                                                           (1, 2, "AllGather", 3)]
    assert pair.first_disagreement is None


def test_rendezvous_warnings(logs: list[Path]) -> None:
    clique, call = mt.order.from_logs(logs).rendezvous
    assert (clique.devices, clique.expected, clique.ranks, clique.reports,
            clique.leader_stuck) == ([4, 5, 6, 7], 4, [3, 1], 2, False)
    assert clique.name == "acquire clique for; clique=devices=[4,5,6,7]; is_p2p=0; run_id=-1558191007"
    assert call.expected == 2 and call.leader_stuck and call.devices == []


def test_counts_and_cli(logs: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["order", "--logs", *map(str, logs), "--json"])
    assert exit_info.value.code == 1
    answer = json.loads(capsys.readouterr().out)
    assert (answer["lines"], answer["recognised"], answer["ok"]) == (22, 22, False)
    with pytest.raises(SystemExit) as exit_info:
        main(["order", "--logs", str(logs[0].parent)])
    out = capsys.readouterr().out
    assert "ranks [3] are behind; the ranks first disagree at #41 (ALLREDUCE)" in out
    assert "rank 3 = global rank 3 on node1 device 1 (pid 3301): last AllReduce opCount 39" in out


def test_quiet_logs_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.3\nstep 2 loss 2.1\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["order", "--logs", str(log)])
    assert exit_info.value.code == 0
    assert "2 lines, 0 of the watchdog" in capsys.readouterr().out


def test_a_group_with_nothing_enqueued_first_disagrees_at_one(tmp_path: Path) -> None:
    """torch's status starts at -1 (no work yet): the group's first collective is #1."""
    log = tmp_path / "pair.log"
    log.write_text(
        "[rank0]:[I1201 10:05:00.000000000 ProcessGroupNCCL.cpp:1700] [PG ID 1 PG GUID 1("
        "undefined) Rank 0] NCCL Work update periodically: last enqueued NCCL work: -1, last "
        "completed NCCL work: -1.\n"
        "[rank1]:[E1201 10:10:01.178200000 ProcessGroupNCCL.cpp:1785] [PG ID 1 PG GUID 1("
        "undefined) Rank 1] Exception (either an error or timeout) detected by watchdog at "
        "work: 1, last enqueued NCCL work: 1, last completed NCCL work: 0.\n")
    (group,) = mt.order.from_logs([log]).groups
    assert (group.pg_id, group.desc, group.behind, group.first_disagreement) == (
        "1", "undefined", [0], 1)

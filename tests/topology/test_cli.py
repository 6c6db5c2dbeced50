"""``meshtopo plan`` and ``meshtopo calibrate``: tables, JSON, --against, saved clusters and
bad input (exit 2, one stderr line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from meshtopo.cli import main

LOG = Path(__file__).parent / "data" / "a3mega_all_reduce_16.txt"
XML = Path(__file__).parent / "data" / "ibm_h100_topo.xml"


def run(capsys, *args):
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return done.value.code, out, err


def plan_json(capsys, *args):
    code, out, err = run(capsys, "plan", *args, "--json")
    assert (code, err) == (0, "")
    return json.loads(out)


def test_plan_table_lists_every_axis_and_collective(capsys):
    code, out, err = run(capsys, "plan", "--cluster", "h100-8x:4", "--mesh", "dp=4,tp=8")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("h100-8x: 4 hosts x 8 devices, nvlink 450 GB/s per device")
    assert sum(line.startswith("dp ") for line in lines) == 4
    assert lines[1] == "mesh['dp'=4,'tp'=8], 1.00 GiB per collective"
    # busbw at 450 GB/s; hierarchical and nccl as NVLS (SM90 default): 18 x 20.6 GB/s x 0.85 x
    # 8/9 + 25 us, and NCCL's NVLS graph of 8 heads at 40 GB/s (bus 476 GB/s).
    assert ["tp", "all-reduce", "4x8", "host", "1", "-", "1.75", "GiB", "4.18", "ms", "3.86", "ms",
            "3.97", "ms", "nvls/simple"] in [line.split() for line in lines]  # fmt: skip


def test_plan_header_of_one_host_is_singular(capsys):
    code, out, err = run(capsys, "plan", "--cluster", "h100-8x:1", "--mesh", "tp=8")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == ("h100-8x: 1 host x 8 devices, nvlink 450 GB/s per device, "
                                   "8 x ib 50 GB/s per host")


def test_plan_json_rows_and_against(capsys):
    payload = plan_json(capsys, "--cluster", "h100-8x:4", "--mesh", "dp=4,tp=8",
                        "--opcode", "all-reduce", "--size", "1GiB", "--against", "tp=8,dp=4")  # fmt: skip
    assert payload["size"] == 2**30
    assert [(r["axis"], r["tier"], r["hosts"]) for r in payload["rows"]] == [
        ("dp", "network", 4), ("tp", "host", 1)]  # fmt: skip
    assert payload["rows"][1]["seconds"]["busbw"] == pytest.approx(1.75 * 2**30 / 4.5e11)
    assert [r["nccl_algorithm"] for r in payload["rows"]] == ["ring/simple", "nvls/simple"]
    against = payload["against"]
    assert [(r["axis"], r["tier"]) for r in against["rows"]] == [("tp", "network"), ("dp", "host")]
    assert against["ratios"][1]["busbw"] == pytest.approx(18.79 / 4.18, rel=0.01)


def test_plan_against_a_device_order(capsys):
    order = ",".join(str(8 * (i % 4) + i // 4) for i in range(32))
    payload = plan_json(capsys, "--cluster", "h100-8x:4", "--mesh", "dp=4,tp=8",
                        "--opcode", "all-gather", "--against", order)  # fmt: skip
    assert [r["tier"] for r in payload["against"]["rows"]] == ["host", "network"]


def test_plan_on_a_torus_reports_axes_and_hops(capsys):
    payload = plan_json(capsys, "--cluster", "tpu-v5e:4x4", "--mesh", "y=4,x=4", "--opcode",
                        "all-gather", "--size", "32MiB")  # fmt: skip
    row = payload["rows"][0]
    assert (row["tier"], row["torus_axes"], row["ring_hops"], row["seconds"]["nccl"]) == (
        "domain", 1, 3, None)  # fmt: skip


def test_plan_reads_an_nccl_xml_dump(capsys):
    payload = plan_json(capsys, "--cluster", str(XML), "--mesh", "dp=2,tp=8", "--opcode", "all-reduce")
    assert payload["cluster"]["host_link"]["bandwidth"] == pytest.approx(3.708e11)
    assert payload["cluster"]["hosts"] == 2
    payload = plan_json(capsys, "--cluster", str(XML), "--hosts", "3", "--mesh", "dp=2,tp=8")
    assert payload["cluster"]["hosts"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster", "h200-9x", "--mesh", "a=8"], "error: --cluster: 'h200-9x' is neither a cluster file nor a preset; presets: a100-8x"),
        (["--cluster", "h100-8x", "--mesh", "a=16"], "the mesh has 16 devices but the cluster"),
        (["--cluster", "h100-8x", "--mesh", "a=8", "--size", "lots"], "--size: expected a number"),
        (["--cluster", "h100-8x", "--mesh", "a=8", "--opcode", "all-sort"], "no cost model for"),
    ],
)
def test_plan_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, out, err = run(capsys, "plan", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_calibrate_saves_a_cluster_plan_can_use(capsys, tmp_path):
    saved = tmp_path / "fitted.json"
    code, out, err = run(capsys, "calibrate", str(LOG), "--cluster", "h100-8x", "--save", str(saved))
    # 74.2 GB/s per NIC is past the preset's 50 GB/s line rate: said on stderr.
    assert code == 0 and err.startswith("warning: the fitted bandwidth per NIC, 74.2 GB/s, "
                                        "exceeds h100-8x's line rate of 50.0 GB/s")
    lines = out.splitlines()
    assert lines[0].startswith(
        "all-reduce over 16 ranks on 2 hosts: alpha 123.0 us, bus bandwidth 336.4 GB/s, fit error ")
    assert lines[1] == "  host: 3.4 us per step x 28, 450.0 GB/s per device"
    assert lines[2] == "  network: 13.9 us per step x 2, 74.2 GB/s per device"
    assert lines[3].split()[-2:] == ["bandwidth", "dominant"]
    assert lines[4].split()[-2:] == ["host", "latency"] and lines[34].split()[-2:] == ["host", "bandwidth"]
    payload = plan_json(capsys, "--cluster", str(saved), "--mesh", "dp=2,tp=8", "--opcode", "all-reduce")
    assert payload["cluster"]["network"]["bandwidth"] == pytest.approx(74.216e9, rel=0.001)
    # The saved cluster prices the logged collective as the fitted line: alpha + beta * 1 GiB.
    fit = json.loads(run(capsys, "calibrate", str(LOG), "--cluster", "h100-8x", "--json")[1])["fits"][0]
    whole = plan_json(capsys, "--cluster", str(saved), "--mesh", "n=16", "--opcode", "all-reduce")
    assert whole["rows"][0]["seconds"]["hierarchical"] == pytest.approx(fit["alpha"] + fit["beta"] * 2**30)


def test_calibrate_json(capsys):
    code, out, err = run(capsys, "calibrate", str(LOG), "--cluster", "h100-8x", "--json")
    assert (code, err) == (0, "")
    (fit,) = json.loads(out)["fits"]
    assert (fit["ranks"], fit["hosts"], len(fit["sizes"])) == (16, 2, 31)
    assert fit["sizes"][-1]["dominant"] == "bandwidth"
    assert fit["sizes"][-1]["dominant_term"] == "host_bandwidth"
    assert fit["sizes"][0]["dominant_term"] == "host_latency"
    assert set(fit["sizes"][0]["terms"]) == {"host_latency", "host_bandwidth", "network_latency",
                                             "network_bandwidth"}  # fmt: skip
    assert fit["tiers"]["host"] == {"alpha": 3.4e-6, "bandwidth": 4.5e11, "steps": 28}
    assert fit["tiers"]["network"]["steps"] == 2
    assert fit["tiers"]["network"]["alpha"] == pytest.approx(13.9e-6)


def test_calibrate_two_logs_sets_both_tiers(capsys, tmp_path):
    from .test_calibrate import synthetic_log

    host_log = tmp_path / "host.log"
    host_log.write_text(synthetic_log(20e-6, 3.6e11, 8, 1))
    code, out, err = run(capsys, "calibrate", str(LOG), str(host_log), "--cluster", "h100-8x", "--json")
    assert (code, err) == (0, "")
    payload = json.loads(out)
    assert [fit["hosts"] for fit in payload["fits"]] == [1, 2]
    assert payload["fits"][0]["tiers"]["network"] is None
    cluster = payload["cluster"]
    assert cluster["hosts"] == 2
    assert cluster["host_link"]["bandwidth"] == pytest.approx(3.6e11, rel=0.01)
    # The network is fitted against the calibrated host link, not the preset's.
    assert payload["fits"][1]["tiers"]["host"]["bandwidth"] == cluster["host_link"]["bandwidth"]
    assert cluster["network"]["bandwidth"] == pytest.approx(payload["fits"][1]["tiers"]["network"]["bandwidth"])
    # A saved one-host calibration works as --cluster for the two-host log later.
    saved = tmp_path / "host.json"
    assert run(capsys, "calibrate", str(host_log), "--cluster", "h100-8x", "--save", str(saved))[0] == 0
    later = json.loads(run(capsys, "calibrate", str(LOG), "--cluster", str(saved), "--json")[1])
    assert later["cluster"]["network"] == cluster["network"]


def test_plan_runs_as_a_process():
    result = subprocess.run(
        [sys.executable, "-m", "meshtopo", "plan", "--cluster", "p6-b200:4", "--mesh", "n=32",
         "--opcode", "all-reduce", "--size", "4GiB", "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    seconds = json.loads(result.stdout)["rows"][0]["seconds"]
    assert seconds["hierarchical"] == pytest.approx(24.73e-3, rel=0.001)


DUMP = """HloModule m, replica_count=1, num_partitions=16

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[1048576] parameter(0)
  ar = f32[1048576] all-reduce(p), channel_id=1, replica_groups=[2,8]<=[16], use_global_device_ids=true, to_apply=add
  ROOT ag = f32[2097152] all-gather(ar), channel_id=2, replica_groups=[8,2]<=[2,8]T(1,0), dimensions={0}, use_global_device_ids=true
}
"""


def test_inspect_cluster_adds_tier_and_times(capsys, tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(DUMP)
    code, out, err = run(capsys, "inspect", str(path), "--cluster", "h100-8x:2", "--json")
    assert (code, err) == (0, "")
    first, second = (c["topology"] for c in json.loads(out)["collectives"])
    assert (first["tier"], first["hosts"], first["link_bytes"]) == ("host", 1, 2 * 7 / 8 * 4 * 2**20)
    assert first["seconds"]["busbw"] == pytest.approx(2 * 7 / 8 * 4 * 2**20 / 4.5e11)
    assert (second["tier"], second["hosts"]) == ("network", 2)
    code, out, err = run(capsys, "inspect", str(path), "--cluster", "h100-8x:2")
    assert code == 0 and any(line.split()[:4] == ["ag", "1", "network", "2"] for line in out.splitlines())


def test_inspect_cluster_too_small_is_one_line(capsys, tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(DUMP)
    code, out, err = run(capsys, "inspect", str(path), "--cluster", "h100-8x")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "is not in the cluster 'h100-8x' of 8 devices" in err

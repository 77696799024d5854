# SPDX-License-Identifier: GPL-3.0-or-later
"""xsk_bench: parsing and window selection on real xdplab-xsk-bench output (fixtures), input checks, command line.

The fixtures in tests/unit/fixtures/xsk_bench are unedited stdout of the program on the virtual lab (see the README
there). Runs against the kernel are in tests/integration/test_xsk_bench.py.
"""

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _xsk as xsk
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import json_records
from ansible_collections.xdplab.testbed.plugins.modules import xsk_bench

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "xsk_bench")


def records(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json_records(f.read())


def params(**over):
    p = {
        "state": "measured", "binary": xsk.DEFAULT_BINARY, "name": "xsk_bench", "run_dir": "/run/xdplab/xsk_bench",
        "interface": "dut0", "mode": "rxdrop", "copy_mode": "auto", "xdp_mode": "native", "need_wakeup": True,
        "poll": False, "busy_poll": False, "busy_poll_budget": None, "busy_poll_timeout": None, "batch_size": 64,
        "frame_size": 4096, "unaligned": False, "queues": [0], "cpus": [], "warmup": 1.0, "interval": 1.0, "samples": 3,
        "stop_timeout": 10.0, "src_mac": None, "dst_mac": None, "src_ip": None, "dst_ip": None, "packet_len": 64,
        "dst_port": 12,
    }  # fmt: skip
    p.update(over)
    return p


TXPUSH = {"mode": "txpush", "dst_mac": "02:00:00:00:00:01", "src_ip": "10.0.0.2", "dst_ip": "10.0.0.1"}


# -- parsing ---------------------------------------------------------------------------------------------------
def test_parse_lines_skips_noise_and_a_cut_line():
    text = 'libbpf: warning\n{"type":"start","mono":1.0}\n\n{"type":"interval","mono":2.0,"rx"'
    assert json_records(text) == [{"type": "start", "mono": 1.0}]


def test_fixture_record_types_in_order():
    recs = records("rxdrop_copy_drv_2q.jsonl")
    kinds = [r["type"] for r in recs]
    assert kinds[0] == "start" and kinds[-1] == "summary"
    assert kinds[1:-1] == ["interval", "xdp_statistics"] * ((len(kinds) - 2) // 2)
    # every xdp_statistics record shares its interval's mono
    for interval, stats in zip(recs[1:-1:2], recs[2:-1:2]):
        assert interval["mono"] == stats["mono"]


# -- window selection ------------------------------------------------------------------------------------------
def test_window_skips_the_warmup_and_takes_samples():
    recs = records("rxdrop_copy_drv_2q.jsonl")
    intervals = xsk.of_type(recs, "interval")
    start = recs[0]["mono"]
    window = xsk.select_window(recs, warmup=1.0, samples=3)
    assert window == intervals[1:4]
    assert window[0]["mono"] - window[0]["interval_s"] >= start + 1.0 - xsk.WINDOW_SLACK
    # no warm-up: from the first interval
    assert xsk.select_window(recs, warmup=0, samples=2) == intervals[:2]
    # more samples than the run printed: what there is
    assert xsk.select_window(recs, warmup=1.0, samples=10) == intervals[1:]
    assert xsk.select_window([], warmup=0, samples=1) == []


def test_summarize_rxdrop_drv(check_measurement):
    recs = records("rxdrop_copy_drv_2q.jsonl")
    intervals = xsk.of_type(recs, "interval")
    res = xsk.summarize(recs, "rxdrop", warmup=1.0, samples=3)
    window = intervals[1:4]
    seconds = sum(r["interval_s"] for r in window)
    rx = sum(r["rx"] for r in window)
    assert res["packets"] == rx and rx > 0
    assert res["pps"] == pytest.approx(rx / seconds) and res["rx_pps"] == res["pps"] and res["tx_pps"] == 0
    assert res["window"] == {"start": window[0]["mono"] - window[0]["interval_s"], "end": window[-1]["mono"]}
    assert [s["mono"] for s in res["samples"]] == [r["mono"] for r in window]
    # per queue and per CPU add up to the total
    assert [q["queue"] for q in res["per_rxq"]] == [0, 1]
    assert sum(q["pps"] for q in res["per_rxq"]) == pytest.approx(res["pps"])
    assert sum(c["pps"] for c in res["per_cpu"]) == pytest.approx(res["pps"])
    assert {(q["queue"], q["cpu"]) for q in res["per_rxq"]} == {(0, 0), (1, 1)}
    assert res["bind_mode"] == "copy" and res["xdp_mode"] == "native" and res["driver"] == "veth"
    assert res["zerocopy"] == [{"queue": 0, "zerocopy": False}, {"queue": 1, "zerocopy": False}]
    assert res["version"] == "0.1.0" and res["program_id"] == recs[0]["prog_id"]
    assert res["summary"]["type"] == "summary" and res["summary"]["xdp_detached"] is True
    # the measurement: the window from the records' mono stamps, samples tiling it
    m = check_measurement(res["measurement"], "xsk_bench", samples=3)
    assert m["window"]["start"] == res["window"]["start"] and m["window"]["end"] == res["window"]["end"]
    assert m["packets"] == rx and m["pps"] == pytest.approx(res["pps"], rel=1e-3)
    assert [s["packets"] for s in m["samples"]] == [r["rx"] for r in window]
    assert [(q["queue"], q["cpu"]) for q in m["per_rxq"]] == [(0, 0), (1, 1)] and len(m["per_cpu"]) == 2
    assert m["source"]["counter"] == "rx" and m["source"]["bind_mode"] == "copy" and m["source"]["driver"] == "veth"
    assert m["imbalance"]["active_queues"] == [0, 1] and m["details"]["xdp_stats"] == res["xdp_stats"]


def test_xdp_stats_are_window_deltas():
    recs = records("rxdrop_copy_drv_2q.jsonl")
    stats = xsk.of_type(recs, "xdp_statistics")
    res = xsk.summarize(recs, "rxdrop", warmup=1.0, samples=3)
    # window = intervals 2..4: counters at interval 4 minus counters at interval 1
    before = {q["queue"]: q["stats"] for q in stats[0]["queues"]}
    after = {q["queue"]: q["stats"] for q in stats[3]["queues"]}
    for entry in res["xdp_stats"]:
        q = entry["queue"]
        for key in xsk.XDP_STAT_KEYS:
            assert entry[key] == after[q][key] - before[q][key]
    # the generator offered more than the copy-mode sockets took: the RX rings overflowed
    assert sum(e["rx_ring_full"] for e in res["xdp_stats"]) > 0


def test_xdp_stats_from_zero_without_warmup():
    recs = records("rxdrop_copy_drv_2q.jsonl")
    stats = xsk.of_type(recs, "xdp_statistics")
    res = xsk.summarize(recs, "rxdrop", warmup=0, samples=1)
    first = {q["queue"]: q["stats"] for q in stats[0]["queues"]}
    assert [e["rx_ring_full"] for e in res["xdp_stats"]] == [first[0]["rx_ring_full"], first[1]["rx_ring_full"]]


def test_summarize_skb_mode(check_measurement):
    res = xsk.summarize(records("rxdrop_copy_skb_2q.jsonl"), "rxdrop", warmup=1.0, samples=3)
    check_measurement(res["measurement"], "xsk_bench", samples=3)
    assert res["xdp_mode"] == "skb" and res["bind_mode"] == "copy" and res["pps"] > 0


def test_summarize_l2fwd_counts_rx_and_reports_tx(check_measurement):
    recs = records("l2fwd_copy_drv_2q.jsonl")
    res = xsk.summarize(recs, "l2fwd", warmup=1.0, samples=2)
    m = check_measurement(res["measurement"], "xsk_bench", samples=2)
    assert m["details"]["tx_pps"] > 0 and m["source"]["bench"] == "l2fwd"
    assert res["pps"] == res["rx_pps"] > 0 and res["tx_pps"] > 0
    summary = res["summary"]
    assert summary["bench"] == "l2fwd" and summary["tx"] == summary["rx"]  # every received frame went back out


def test_summarize_txpush_counts_tx(check_measurement):
    recs = records("txpush_auto_drv_1q.jsonl")
    res = xsk.summarize(recs, "txpush", warmup=0, samples=2)
    intervals = xsk.of_type(recs, "interval")[:2]
    assert res["pps"] == res["tx_pps"] == pytest.approx(sum(r["tx"] for r in intervals) / sum(r["interval_s"] for r in intervals))
    assert res["rx_pps"] == 0 and res["per_rxq"][0]["pps"] == res["pps"] and res["per_cpu"] == [{"cpu": 1, "pps": res["pps"]}]
    assert res["summary"]["options"]["pkt_len"] == 64 and res["summary"]["options"]["dst_port"] == 12
    m = check_measurement(res["measurement"], "xsk_bench", samples=2)
    assert m["source"]["counter"] == "tx" and m["packets"] == sum(r["tx"] for r in intervals)


def test_killed_run_has_no_summary(check_measurement):
    recs = records("rxdrop_killed.jsonl")
    res = xsk.summarize(recs, "rxdrop", warmup=0, samples=2)
    assert res["summary"] is None and res["pps"] == 0
    m = check_measurement(res["measurement"], "xsk_bench", samples=2)
    assert m["pps"] == 0.0 and m["ns_per_packet"] is None and m["imbalance"] is None
    with pytest.raises(xsk.XskBenchError, match="printed 2 of the 5 intervals"):
        xsk.summarize(recs, "rxdrop", warmup=0, samples=5)


def test_no_start_record_is_refused():
    recs = [r for r in records("rxdrop_copy_drv_2q.jsonl") if r["type"] != "start"]
    with pytest.raises(xsk.XskBenchError, match="printed 0 of the 3"):
        xsk.summarize(recs, "rxdrop", warmup=0, samples=3)


# -- input checks ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "over, message",
    [
        ({"interval": 0}, "interval must be a positive number"),
        ({"warmup": -1}, "warmup must be zero or more"),
        ({"samples": 0}, "samples must be at least 1"),
        ({"batch_size": 4096}, "batch_size must be 1..2048"),
        ({"busy_poll_budget": 8}, "busy_poll_budget needs busy_poll"),
        ({"busy_poll_timeout": 8}, "busy_poll_timeout needs busy_poll"),
        ({"queues": []}, "at least one RX queue"),
        ({"queues": [0, 0]}, "lists a queue twice"),
        ({"queues": [64]}, "queue ids must be 0..63"),
        ({"queues": [0, 1], "cpus": [1]}, "give one CPU per queue"),
        ({"queues": [0, 1], "cpus": [1, 1]}, "lists a CPU twice"),
        ({"mode": "txpush"}, "mode txpush needs dst_mac"),
        (dict(TXPUSH, packet_len=60), "packet_len=60 is outside 64..1518"),
        (dict(TXPUSH, packet_len=1518, frame_size=2048), None),
        (dict(TXPUSH, dst_port=0), "dst_port=0 is not a UDP port"),
        (dict(TXPUSH, dst_mac="02:00:00:00:00"), "is not a MAC address"),
        (dict(TXPUSH, src_ip="10.0.0.300"), "is not an IPv4 address"),
        ({"src_ip": "10.0.0.1"}, "src_ip only apply to mode txpush"),
    ],
)
def test_check_params_refuses(over, message):
    if message is None:
        assert xsk.check_params(params(**over)) == [0]
        return
    with pytest.raises(xsk.XskBenchError, match=message):
        xsk.check_params(params(**over))


def test_default_cpus_are_the_queue_ids():
    assert xsk.check_params(params(queues=[1, 0])) == [1, 0]
    assert xsk.check_params(params(queues=[0, 1], cpus=[1, 0])) == [1, 0]


@pytest.fixture
def sysfs(tmp_path):
    """A sysfs tree with a 2-queue veth dut0 (no device link) and CPUs 0-1 online."""
    for q in ("rx-0", "rx-1", "tx-0", "tx-1"):
        (tmp_path / "class" / "net" / "dut0" / "queues" / q).mkdir(parents=True)
    (tmp_path / "class" / "net" / "lo" / "queues" / "rx-0").mkdir(parents=True)
    (tmp_path / "devices" / "system" / "cpu").mkdir(parents=True)
    (tmp_path / "devices" / "system" / "cpu" / "online").write_text("0-1\n")
    binary = tmp_path / "xdplab-xsk-bench"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return tmp_path


@pytest.mark.parametrize(
    "over, driver, message",
    [
        ({"interface": "nope0"}, "veth", "interface nope0 does not exist in this network namespace; interfaces here: dut0, lo"),
        ({"queues": [0, 2]}, "veth", r"queue 2 does not exist: dut0 \(driver veth\) has 2 RX queues \(0..1\)"),
        ({"queues": [0], "cpus": [3]}, "veth", r"CPU 3 not online \(online: 0,1\)"),
        (
            {"copy_mode": "zerocopy"},
            "veth",
            r"interface dut0 \(driver veth\) does not support AF_XDP zero-copy; use copy_mode: copy",
        ),
    ],
)
def test_check_target_refuses(sysfs, over, driver, message):
    p = params(**over)
    with pytest.raises(xsk.XskBenchError, match=message):
        xsk.check_target(p, xsk.check_params(p), driver, str(sysfs / "xdplab-xsk-bench"), sysfs=str(sysfs))


def test_check_target_accepts_and_asks_for_the_role(sysfs):
    p = params(queues=[0, 1], copy_mode="zerocopy")
    # a driver not known to lack zero-copy is left to the kernel (the program reports a refused bind)
    assert xsk.check_target(p, [0, 1], "mlx5_core", str(sysfs / "xdplab-xsk-bench"), sysfs=str(sysfs)) == 2
    with pytest.raises(xsk.XskBenchError, match=r"run the role xdplab\.testbed\.bpf_programs"):
        xsk.check_target(p, [0, 1], "mlx5_core", str(sysfs / "missing"), sysfs=str(sysfs))


def test_sysfs_driver(tmp_path):
    dev = tmp_path / "class" / "net" / "eth0" / "device"
    dev.mkdir(parents=True)
    (tmp_path / "bus" / "pci" / "drivers" / "mlx5_core").mkdir(parents=True)
    os.symlink(tmp_path / "bus" / "pci" / "drivers" / "mlx5_core", dev / "driver")
    assert xsk.sysfs_driver("eth0", sysfs=str(tmp_path)) == "mlx5_core"
    assert xsk.sysfs_driver("veth0", sysfs=str(tmp_path)) is None


# -- command line ----------------------------------------------------------------------------------------------
def test_command_rxdrop_defaults():
    p = params()
    argv = xsk.command(p, [0], xsk.run_duration(p), "/bin/x")
    assert argv == ["/bin/x", "--dev", "dut0", "--mode", "rxdrop", "--queues", "0", "--cpus", "0", "--batch", "64",
                    "--frame-size", "4096", "--interval", "1", "--duration", "7", "--drv-mode"]  # fmt: skip


def test_command_every_option():
    p = params(
        **TXPUSH, src_mac="02:00:00:00:00:02", copy_mode="copy", xdp_mode="skb", need_wakeup=False, poll=True, busy_poll=True,
        busy_poll_budget=16, busy_poll_timeout=50, unaligned=True, frame_size=2048, queues=[0, 1], cpus=[1, 0],
        packet_len=128, dst_port=9000, interval=0.5,
    )  # fmt: skip
    argv = xsk.command(p, [1, 0], 3.5, "/bin/x")
    joined = " ".join(argv)
    for part in ("--mode txpush", "--queues 0,1", "--cpus 1,0", "--frame-size 2048", "--interval 0.5", "--duration 3.5",
                 "--copy", "--skb-mode", "--no-need-wakeup", "--unaligned", "--poll", "--busy-poll --busy-poll-budget 16",
                 "--busy-poll-timeout 50", "--src-mac 02:00:00:00:00:02", "--dst-mac 02:00:00:00:00:01",
                 "--src-ip 10.0.0.2", "--dst-ip 10.0.0.1", "--pkt-len 128", "--dst-port 9000"):  # fmt: skip
        assert part in joined
    assert "--zero-copy" in xsk.command(params(copy_mode="zerocopy"), [0], 1, "/bin/x")
    assert "--copy" not in xsk.command(params(copy_mode="auto"), [0], 1, "/bin/x")


# -- the module ------------------------------------------------------------------------------------------------
def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        xsk_bench.main()
    return json.loads(capsys.readouterr().out)


def test_module_check_mode_says_what_would_run(capsys, tmp_path):
    binary = tmp_path / "xdplab-xsk-bench"
    binary.write_text("#!/bin/sh\nexit 1\n")
    binary.chmod(0o755)
    res = run_module({"interface": "lo", "binary": str(binary), "copy_mode": "copy", "_ansible_check_mode": True}, capsys)
    assert not res.get("failed"), res
    assert res["changed"] is False and res["command"][0] == str(binary)
    assert res["msg"].startswith("would run: %s --dev lo --mode rxdrop" % binary)
    assert "pps" not in res


def test_module_refuses_a_missing_interface_before_running(capsys, tmp_path):
    res = run_module({"interface": "xd-xs-none0", "binary": str(tmp_path / "nothing")}, capsys)
    assert res["failed"] and "interface xd-xs-none0 does not exist in this network namespace" in res["msg"]


def test_module_absent_without_a_run_changes_nothing(capsys, tmp_path):
    res = run_module({"state": "absent", "run_dir": str(tmp_path / "run")}, capsys)
    assert res["changed"] is False and "removed" not in res


def test_run_duration_is_the_samplers_length_plus_two_intervals():
    p = params(warmup=2.0, interval=0.5, samples=4)
    assert xsk.sampler(p).seconds == 4.0 and xsk.run_duration(p) == 4.0 + 1.0 + 1

# SPDX-License-Identifier: GPL-3.0-or-later
"""cpu_usage and module_utils/cpustat against real /proc/stat captures (tests/unit/fixtures/proc_stat)."""

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpus
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat as cpustat
from ansible_collections.xdplab.testbed.plugins.modules import cpu_usage

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "proc_stat")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="ascii") as f:
        return f.read()


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        cpu_usage.main()
    return json.loads(capsys.readouterr().out)


def test_parse_real_proc_stat():
    stat = cpustat.parse_proc_stat(fixture("busy_cpu1_before.txt"))
    assert sorted(stat["cpus"]) == [0, 1]
    assert stat["all"] == [355741, 0, 131998, 915744, 3327, 0, 10003, 9865, 0, 0]
    assert stat["cpus"][1] == [211968, 0, 62992, 427761, 3106, 0, 3000, 4815, 0, 0]
    assert stat["btime"] == 1796056658


def test_busy_loop_on_cpu1_is_100_percent_user():
    before = cpustat.parse_proc_stat(fixture("busy_cpu1_before.txt"))
    after = cpustat.parse_proc_stat(fixture("busy_cpu1_after.txt"))
    per_cpu, agg = cpustat.usage_between(before, after, [0, 1])
    cpu0, cpu1 = per_cpu
    # CPU 1: +301 user ticks, nothing else moved
    assert cpu1 == {"cpu": 1, "busy": 100.0, "idle": 0.0, "user": 100.0, "nice": 0.0, "system": 0.0, "irq": 0.0,
                    "softirq": 0.0, "iowait": 0.0, "steal": 0.0, "guest": 0.0, "guest_nice": 0.0, "ticks": 301}
    # CPU 0: +4 system, +294 idle -> 298 ticks
    assert cpu0["ticks"] == 298
    assert cpu0["system"] == round(100 * 4 / 298, 2) and cpu0["idle"] == round(100 * 294 / 298, 2)
    assert cpu0["busy"] == pytest.approx(100 - 100 * 294 / 298, abs=0.01)
    # the aggregate line: +301 user, +4 system, +294 idle
    assert agg["ticks"] == 599 and agg["user"] == round(100 * 301 / 599, 2)
    assert agg["busy"] == pytest.approx(100 * 305 / 599, abs=0.01)


def test_background_pair_sums_to_100():
    before = cpustat.parse_proc_stat(fixture("background_before.txt"))
    after = cpustat.parse_proc_stat(fixture("background_after.txt"))
    per_cpu, agg = cpustat.usage_between(before, after, [0, 1])
    for row in [*per_cpu, agg]:
        parts = sum(row[k] for k in ("idle", "user", "nice", "system", "irq", "softirq", "iowait", "steal",
                                     "guest", "guest_nice"))
        assert parts == pytest.approx(100, abs=0.1)
        assert row["busy"] == pytest.approx(100 - row["idle"] - row["iowait"], abs=0.02)
    # CPU 0: +213 user +1 system +86 idle
    assert per_cpu[0]["ticks"] == 300 and per_cpu[0]["user"] == 71.0 and per_cpu[0]["idle"] == round(8600 / 300, 2)


def test_guest_is_taken_out_of_user_like_mpstat():
    # constructed counters (no guest ran on the capture machine): 50 ticks user of which 20 guest, 10 nice of
    # which 5 guest_nice, 40 idle -> total 100 ticks
    before = [0] * 10
    after = [50, 10, 0, 40, 0, 0, 0, 0, 20, 5]
    u = cpustat.usage(before, after)
    assert (u["user"], u["nice"], u["guest"], u["guest_nice"], u["idle"], u["busy"]) == (30.0, 5.0, 20.0, 5.0, 40.0, 60.0)
    assert u["ticks"] == 100


def test_iowait_is_not_busy():
    u = cpustat.usage([0] * 10, [10, 0, 10, 50, 30, 0, 0, 0, 0, 0])
    assert u["busy"] == 20.0 and u["iowait"] == 30.0


def test_counters_going_backwards_report_zero_ticks():
    u = cpustat.usage([10] * 10, [5] * 10)
    assert u["ticks"] == 0 and u["busy"] == 0.0


def test_cpu_list_syntax():
    # the one CPU-list helper (plugins/module_utils/_cpus.py) that cpu_usage reads the online CPUs with
    assert _cpus.parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert _cpus.parse_cpu_list("") == []
    with pytest.raises(_cpus.CpuListError):
        _cpus.parse_cpu_list("a-b")
    assert cpu_usage.online_cpus is _cpus.online_cpus and not hasattr(cpustat, "parse_cpu_list")


def test_snapshot_round_trip_through_json():
    stat = cpustat.parse_proc_stat(fixture("busy_cpu1_before.txt"))
    snap = json.loads(json.dumps(cpustat.make_snapshot(stat, 123.5, 100, "abc")))
    back = cpustat.check_snapshot(snap)
    assert back["cpus"][1] == stat["cpus"][1] and back["time"] == 123.5 and back["boot_id"] == "abc"


def test_snapshot_from_another_boot_is_refused():
    snap = cpustat.check_snapshot(cpustat.make_snapshot(cpustat.parse_proc_stat(fixture("busy_cpu1_before.txt")),
                                                        1.0, 100, "aaaa"))
    with pytest.raises(cpustat.CpuStatError, match="another boot"):
        cpustat.same_boot(snap, 1796056658, "bbbb")
    cpustat.same_boot(snap, 1796056658, "aaaa")
    snap["boot_id"] = None
    cpustat.same_boot(snap, 1796056659, None)  # btime jitter of a second is tolerated
    with pytest.raises(cpustat.CpuStatError, match="btime 1796056658, now 1796060000"):
        cpustat.same_boot(snap, 1796060000, None)


def test_malformed_since():
    with pytest.raises(cpustat.CpuStatError, match="missing"):
        cpustat.check_snapshot({"time": 1})
    with pytest.raises(cpustat.CpuStatError, match="snapshot dict"):
        cpustat.check_snapshot("not a dict")


# ---- the module, reading this machine's /proc/stat (read-only, fast) --------------------------------------------

def test_module_snapshot_then_since_in_check_mode(capsys):
    first = run_module({"snapshot_only": True, "_ansible_check_mode": True}, capsys)
    assert first["changed"] is False and first["per_cpu"] == [] and first["seconds"] == 0.0
    snap = first["snapshot"]
    assert snap["version"] == 1 and snap["ticks_per_second"] == os.sysconf("SC_CLK_TCK")
    assert sorted(int(c) for c in snap["cpus"]) == sorted(first["cpus"])
    second = run_module({"since": snap, "cpus": [0], "_ansible_check_mode": True}, capsys)
    assert second["changed"] is False
    assert [r["cpu"] for r in second["per_cpu"]] == [0]
    assert second["window"]["start"] == snap["time"] and second["window"]["end"] >= snap["time"]
    assert set(second["all"]) >= {"busy", "idle", "softirq", "irq", "system", "user", "iowait", "steal", "guest"}


def test_module_blocking_samples(capsys):
    res = run_module({"interval": 0.05, "samples": 2}, capsys)
    assert res["seconds"] >= 0.1 and len(res["samples"]) == 2
    assert res["samples"][0]["t"] >= 0.05
    assert res["snapshot"]["time"] == res["window"]["end"]


def test_module_refuses_offline_cpu(capsys):
    res = run_module({"cpus": [0, 4096], "snapshot_only": True}, capsys)
    assert res["failed"] and "CPU(s) 4096 not online" in res["msg"] and "online CPUs: 0" in res["msg"]


def test_module_refuses_since_from_another_boot(capsys):
    first = run_module({"snapshot_only": True}, capsys)
    snap = dict(first["snapshot"], boot_id="00000000-0000-0000-0000-000000000000")
    res = run_module({"since": snap}, capsys)
    assert res["failed"] and "another boot" in res["msg"]


def test_module_bad_parameters(capsys):
    res = run_module({"interval": 0}, capsys)
    assert res["failed"] and "interval must be positive" in res["msg"]
    res = run_module({"samples": 0}, capsys)
    assert res["failed"] and "samples must be at least 1" in res["msg"]
    res = run_module({"snapshot_only": True, "since": {"time": 1}}, capsys)
    assert res["failed"] and "exclude each other" in res["msg"]
    res = run_module({"since": {"time": 1}}, capsys)
    assert res["failed"] and "not a cpu_usage snapshot" in res["msg"]

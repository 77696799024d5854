# SPDX-License-Identifier: GPL-3.0-or-later
"""cpu_usage and module_utils/cpustat against real /proc/stat captures (tests/unit/fixtures/proc_stat)."""

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpu_usage, _cpus
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
    assert _cpu_usage.online_cpus is _cpus.online_cpus and not hasattr(cpustat, "parse_cpu_list")


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


# ---- precise sources: thread run time from real /proc/<pid>/task/<tid> captures (fixtures/proc_task) ------------

TASKS = os.path.join(os.path.dirname(__file__), "fixtures", "proc_task")


def task_fixture(name):
    with open(os.path.join(TASKS, name), encoding="ascii") as f:
        return f.read()


def test_parse_task_stat_of_a_napi_kthread():
    st = cpustat.parse_task_stat(task_fixture("napi_stat.txt"))
    assert st["comm"] == "napi/veth-dut0-304" and st["kthread"] is True and st["ppid"] == 2 and st["cpu"] == 1
    assert cpustat.allowed_cpus(task_fixture("napi_status.txt")) == [1]
    assert cpustat.parse_schedstat(task_fixture("napi_schedstat.txt")) > 0


def test_parse_task_stat_with_spaces_and_parentheses_in_comm():
    st = cpustat.parse_task_stat(task_fixture("oddcomm_stat.txt"))
    assert st["comm"] == "we (ird) x" and st["kthread"] is False and st["state"] == "S" and st["cpu"] == 1


def fake_proc(root, tasks):
    """A /proc tree from the real captures: tasks = {(pid, tid): (fixture prefix, runtime_ns, cpu)}."""
    for (pid, tid), (prefix, runtime, cpu) in tasks.items():
        d = root / str(pid) / "task" / str(tid)
        d.mkdir(parents=True, exist_ok=True)
        stat = task_fixture(f"{prefix}_stat.txt")
        head, _sep, tail = stat.rpartition(")")
        fields = tail.split()
        fields[36] = str(cpu)  # field 39, the CPU it last ran on
        (d / "stat").write_text(f"{tid} {head.split(' ', 1)[1]}) {' '.join(fields)}\n")
        (d / "schedstat").write_text(f"{runtime} 1000 10\n")
        (d / "status").write_text(task_fixture(f"{prefix}_status.txt"))
    return str(root)


def test_thread_usage_splits_work_from_foreign(tmp_path):
    before = cpustat.read_threads([1], proc=fake_proc(tmp_path / "a", {
        (10, 10): ("napi", 1_000_000_000, 1), (20, 20): ("bash", 500_000_000, 0), (30, 30): ("oddcomm", 7, 0)}))
    after = cpustat.read_threads([1], proc=fake_proc(tmp_path / "b", {
        (10, 10): ("napi", 1_250_000_000, 1), (20, 20): ("bash", 530_000_000, 1), (30, 30): ("oddcomm", 7, 0),
        (40, 40): ("bash", 2_000_000, 1)}))
    assert set(before) == {10, 20, 30}
    matcher = cpustat.WorkMatcher(interfaces=["veth-dut0"])
    work, foreign = cpustat.thread_usage(before, after, [1], 3.0, matcher)
    # the NAPI kthread may run on CPU 1 only: exact; 250 ms in 3 s
    assert work == [{"pid": 10, "tid": 10, "comm": "napi/veth-dut0-304", "cpu": 1, "runtime_ns": 250_000_000,
                     "busy": 8.333, "attribution": "affinity", "kernel": True, "role": "napi"}]
    # bash may run on 0-1 and last ran on 1: an estimate; a thread born in the window counts from 0;
    # the thread that did not run is left out
    assert [(f["tid"], f["runtime_ns"], f["attribution"], f["kernel"]) for f in foreign] == [
        (20, 30_000_000, "last_cpu", False), (40, 2_000_000, "last_cpu", False)]
    per_cpu = cpustat.per_cpu_runtime(foreign, [1], 3.0)
    assert per_cpu[1] == (32_000_000, 1.067)


def test_threads_round_trip_through_a_json_snapshot(tmp_path):
    threads = cpustat.read_threads([1], proc=fake_proc(tmp_path, {(10, 10): ("napi", 5, 1), (20, 21): ("bash", 9, 0)}))
    back = cpustat.threads_from_snapshot(json.loads(json.dumps(cpustat.threads_snapshot(threads))))
    assert back == threads
    with pytest.raises(cpustat.CpuStatError, match="malformed thread counters"):
        cpustat.threads_from_snapshot({"10": [1]})


def test_work_matcher_roles_and_truncated_napi_names():
    m = cpustat.WorkMatcher(interfaces=["enp65s0f0np0"], pids=[77], comms=["^dpdk-worker"])
    kthread = {"comm": "napi/enp65s0f0n", "kthread": True, "pid": 5}  # a 15-character comm of an older kernel
    assert m.role(kthread) == "napi"
    assert m.role({"comm": "napi/eth1-3", "kthread": True, "pid": 6}) is None
    assert m.role({"comm": "anything", "kthread": False, "pid": 77}) == "process"
    assert m.role({"comm": "dpdk-worker1", "kthread": False, "pid": 8}) == "comm"
    # a user process named like a NAPI thread is not one
    assert m.role({"comm": "napi/enp65s0f0np0-1", "kthread": False, "pid": 9}) is None


BPFTOOL_SHOW = os.path.join(TASKS, "bpftool_prog_show.json")


def test_bpf_run_stats_and_usage_from_bpftool_output():
    text = task_fixture("bpftool_prog_show.json")

    class Done:
        returncode, stdout, stderr = 0, text, ""

    calls = []
    stats = cpustat.bpf_run_stats([int(json.loads(text)["id"])], runner=lambda argv: calls.append(argv) or Done)
    (prog,) = list(stats.values())
    assert calls[0][:4] == ["bpftool", "-j", "prog", "show"] and prog["run_cnt"] > 0 and prog["run_time_ns"] > 0
    before = {prog["id"]: dict(prog, run_time_ns=0, run_cnt=0)}
    (u,) = cpustat.bpf_usage(before, stats, 2.0)
    assert u["source"] == "bpf_stats" and u["ns_per_run"] == round(prog["run_time_ns"] / prog["run_cnt"], 2)
    assert u["busy"] == round(100.0 * prog["run_time_ns"] / 2e9, 3)


def test_bpftool_failure_names_the_program():
    class Failed:
        returncode, stdout, stderr = 255, "", "Error: get by id (4242): No such file or directory"

    with pytest.raises(cpustat.CpuStatError, match="bpftool prog show id 4242 failed: Error: get by id"):
        cpustat.bpf_run_stats([4242], runner=lambda argv: Failed)


def test_module_reports_a_pinned_busy_loop_as_foreign_and_labels_sources(capsys):
    import subprocess
    import time

    cpu = max(os.sched_getaffinity(0))
    first = run_module({"cpus": [cpu], "snapshot_only": True}, capsys)
    assert first["snapshot"]["threads"], "no thread could run on the CPU?"
    loop = subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.5)
        # a thread that ended before the second reading is not seen: read while it runs
        res = run_module({"cpus": [cpu], "since": first["snapshot"], "work_comms": ["^no-such-work$"]}, capsys)
    finally:
        loop.kill()
        loop.wait()
    mine = [f for f in res["foreign"] if f["pid"] == loop.pid]
    assert mine and mine[0]["attribution"] == "affinity" and mine[0]["busy"] > 20
    assert res["foreign_flag"] is True and res["foreign_busy"] >= mine[0]["busy"]
    assert res["work"] == [] and res["busy_source"] == "proc_stat"
    assert res["sources"]["per_cpu.busy"] == "proc_stat" and res["sources"]["foreign"] == "schedstat"
    assert res["per_cpu"][0]["foreign_busy"] >= mine[0]["busy"]


def test_module_counts_work_threads_by_pid(capsys):
    import subprocess
    import time

    cpu = max(os.sched_getaffinity(0))
    loop = subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)
        first = run_module({"cpus": [cpu], "snapshot_only": True, "work_pids": [loop.pid]}, capsys)
        time.sleep(0.5)
        res = run_module({"cpus": [cpu], "since": first["snapshot"], "work_pids": [loop.pid]}, capsys)
    finally:
        loop.kill()
        loop.wait()
    assert [w["role"] for w in res["work"]] == ["process"] and res["busy_source"] == "schedstat"
    assert res["busy"] == res["per_cpu"][0]["work_busy"] > 20
    assert all(f["pid"] != loop.pid for f in res["foreign"])


def test_module_old_snapshot_without_threads_falls_back_to_proc_stat(capsys):
    first = run_module({"snapshot_only": True, "threads": False}, capsys)
    assert "threads" not in first["snapshot"]
    res = run_module({"since": first["snapshot"]}, capsys)
    assert "work" not in res and res["busy_source"] == "proc_stat" and "foreign" not in res["sources"]


def test_module_pins_itself_to_the_housekeeping_cpus(capsys, monkeypatch):
    cpu = min(os.sched_getaffinity(0))
    monkeypatch.setenv("XDPLAB_HOUSEKEEPING_CPUS", str(cpu))
    before = os.sched_getaffinity(0)
    try:
        res = run_module({"snapshot_only": True, "threads": False}, capsys)
        assert res["housekeeping"] == [cpu] and os.sched_getaffinity(0) == {cpu}
    finally:
        os.sched_setaffinity(0, before)


# ---- a process that starts and ends inside the window: testpmd's lcores (fixtures/proc_task/testpmd) ------------

TESTPMD = os.path.join(TASKS, "testpmd")
TESTPMD_PID, TESTPMD_LCORE = 31231, 31234


def test_read_process_threads_of_a_real_testpmd():
    threads = cpustat.read_process_threads(TESTPMD_PID, proc=os.path.join(TESTPMD, "end"))
    comms = {"dpdk-testpmd", "eal-intr-thread", "rte_mp_handle", "rte-worker-1", "telemetry-v2", "telemetry-v1"}
    assert {t["comm"] for t in threads.values()} == comms
    lcore = threads[TESTPMD_LCORE]
    assert lcore["allowed"] == [1] and lcore["cpu"] == 1 and lcore["runtime_ns"] == 1_323_404_015
    assert all(t["pid"] == TESTPMD_PID and t["kthread"] is False for t in threads.values())
    assert cpustat.read_process_threads(TESTPMD_PID + 1, proc=os.path.join(TESTPMD, "end")) == {}


def test_ended_reading_is_json_safe_and_none_for_a_gone_process():
    reading = cpustat.ended_reading(TESTPMD_PID, proc=os.path.join(TESTPMD, "end"), clock=lambda: 500.0)
    reading = json.loads(json.dumps(reading))
    assert reading["pid"] == TESTPMD_PID and reading["time"] == 500.0 and reading["version"] == cpustat.THREADS_VERSION
    assert reading["threads"][str(TESTPMD_LCORE)][1:] == [1_323_404_015, 1, 0, "rte-worker-1", "1"]
    assert cpustat.ended_reading(TESTPMD_PID, proc=os.path.join(TESTPMD, "missing")) is None


def window_around_testpmd(tmp_path):
    """The trial's CPU window on CPU 1: opened with only the NAPI kthread there, closed after testpmd was gone."""
    before = cpustat.read_threads([1], proc=fake_proc(tmp_path / "a", {(10, 10): ("napi", 1_000_000_000, 1)}))
    after = cpustat.read_threads([1], proc=fake_proc(tmp_path / "b", {(10, 10): ("napi", 1_500_000_000, 1)}))
    reading = cpustat.ended_reading(TESTPMD_PID, proc=os.path.join(TESTPMD, "end"), clock=lambda: 105.0)
    return before, after, reading


def test_testpmd_lcore_is_missed_by_the_closing_read_alone(tmp_path):
    before, after, _reading = window_around_testpmd(tmp_path)
    matcher = cpustat.WorkMatcher(interfaces=["veth-dut0"], comms=["^rte-worker"])
    work, foreign = cpustat.thread_usage(before, after, [1], 2.0, matcher)
    # the bug of issue 8: only the NAPI thread; the lcore's 1.32 s is in neither list
    assert [w["comm"] for w in work] == ["napi/veth-dut0-304"] and foreign == []


def test_testpmd_lcore_counts_through_its_ended_reading(tmp_path):
    before, after, reading = window_around_testpmd(tmp_path)
    merged = cpustat.merge_ended(after, [json.loads(json.dumps(reading))], 100.0, 110.0)
    matcher = cpustat.WorkMatcher(interfaces=["veth-dut0"], pids=[TESTPMD_PID])
    work, foreign = cpustat.thread_usage(before, merged, [1], 2.0, matcher)
    # born in the window: counted from 0; pinned to CPU 1: exact; the main lcore and EAL's threads are on CPU 0
    assert work == [
        {"pid": TESTPMD_PID, "tid": TESTPMD_LCORE, "comm": "rte-worker-1", "cpu": 1, "runtime_ns": 1_323_404_015,
         "busy": 66.17, "attribution": "affinity", "kernel": False, "ended": True, "role": "process"},
        {"pid": 10, "tid": 10, "comm": "napi/veth-dut0-304", "cpu": 1, "runtime_ns": 500_000_000, "busy": 25.0,
         "attribution": "affinity", "kernel": True, "role": "napi"}]
    assert foreign == []
    assert cpustat.per_cpu_runtime(work, [1], 2.0)[1] == (1_823_404_015, 91.17)


def test_a_cpu_busy_all_the_window_is_100_not_more():
    """Schedstat runtimes and the window's clock are two reads: a thread busy the whole window can sum to a little
    more than it (100.06 % was seen in test_controller_actions); the share is capped, the runtime kept as read."""
    entries = [{"cpu": 0, "runtime_ns": 2_001_200_000}, {"cpu": 1, "runtime_ns": 1_000_000_000}]
    assert cpustat.per_cpu_runtime(entries, [0, 1], 2.0) == {0: (2_001_200_000, 100.0), 1: (1_000_000_000, 50.0)}


def test_a_live_thread_wins_over_an_ended_reading_of_it(tmp_path):
    live = cpustat.read_process_threads(TESTPMD_PID, proc=os.path.join(TESTPMD, "end"))
    early = cpustat.ended_reading(TESTPMD_PID, proc=os.path.join(TESTPMD, "start"), clock=lambda: 101.0)
    merged = cpustat.merge_ended(live, [early], 100.0, 110.0)
    assert merged[TESTPMD_LCORE]["runtime_ns"] == 1_323_404_015 and "ended" not in merged[TESTPMD_LCORE]


def test_an_ended_reading_outside_the_window_or_malformed_is_refused(tmp_path):
    _before, after, reading = window_around_testpmd(tmp_path)
    with pytest.raises(cpustat.CpuStatError, match=r"read at 105.000, outside this window \(106.000..110.000"):
        cpustat.merge_ended(after, [reading], 106.0, 110.0)
    with pytest.raises(cpustat.CpuStatError, match=r"ended_threads\[0\] is not a thread reading"):
        cpustat.merge_ended(after, [{"pid": 1}], 100.0, 110.0)
    with pytest.raises(cpustat.CpuStatError, match="malformed thread counters"):
        cpustat.merge_ended(after, [dict(reading, threads={"1": ["x"]})], 100.0, 110.0)


def test_module_counts_an_ended_process_as_work(capsys):
    import time

    cpu = max(os.sched_getaffinity(0))
    first = run_module({"cpus": [cpu], "snapshot_only": True}, capsys)
    reading = cpustat.ended_reading(TESTPMD_PID, proc=os.path.join(TESTPMD, "end"), clock=time.monotonic)
    # the fixture's lcore was pinned to CPU 1; here it stands pinned to the CPU measured, under a tid no live thread has
    # (only the lcore: the fixture's other threads were pinned to CPU 0, which may be the CPU measured here)
    lcore = reading["threads"].pop(str(TESTPMD_LCORE))
    lcore[5] = str(cpu)
    reading["threads"] = {str(2 ** 22 + 1): lcore}
    time.sleep(0.05)
    res = run_module({"cpus": [cpu], "since": first["snapshot"], "ended_threads": [reading],
                      "work_pids": [TESTPMD_PID]}, capsys)
    ended = [w for w in res["work"] if w.get("ended")]
    assert [(w["comm"], w["runtime_ns"], w["attribution"], w["role"]) for w in ended] == [
        ("rte-worker-1", 1_323_404_015, "affinity", "process")]
    assert res["busy_source"] == "schedstat" and res["per_cpu"][0]["work_busy"] >= ended[0]["busy"]
    # the snapshot holds live threads only: the ended ones are gone for any later window
    assert str(2 ** 22 + 1) not in res["snapshot"]["threads"]
    late = dict(reading, time=res["window"]["end"] + 10)
    bad = run_module({"cpus": [cpu], "since": first["snapshot"], "ended_threads": [late]}, capsys)
    assert bad["failed"] and "outside this window" in bad["msg"]


def test_module_refuses_ended_threads_without_since(capsys):
    res = run_module({"ended_threads": [{"pid": 1, "time": 0, "threads": {}}]}, capsys)
    assert res["failed"] and "ended_threads needs since" in res["msg"]


def test_module_window_between_two_snapshots_another_module_took(capsys):
    import time

    cpu = max(os.sched_getaffinity(0))
    start = json.loads(json.dumps(cpustat.window_snapshot([cpu])))
    time.sleep(0.05)
    end = json.loads(json.dumps(cpustat.window_snapshot([cpu])))
    time.sleep(0.05)
    res = run_module({"cpus": [cpu], "since": start, "until": end}, capsys)
    assert not res.get("failed"), res.get("msg")
    # nothing is read now: the window is exactly the two snapshots'
    assert res["window"] == {"start": start["time"], "end": end["time"]}
    assert res["seconds"] == round(end["time"] - start["time"], 6) and res["snapshot"]["time"] == end["time"]
    assert res["per_cpu"][0]["cpu"] == cpu and "work_busy" in res["per_cpu"][0]
    for bad in ({"until": end}, {"since": start, "until": end, "bpf_prog_ids": [1]},
                {"since": start, "until": end, "ended_threads": [{"pid": 1, "time": 0, "threads": {}}]}):
        res = run_module(dict(bad, cpus=[cpu]), capsys)
        assert res["failed"] and "until ends a window opened by since" in res["msg"]
    res = run_module({"cpus": [cpu], "since": end, "until": start}, capsys)
    assert res["failed"] and "since was taken after" in res["msg"]

# SPDX-License-Identifier: GPL-3.0-or-later
"""cpu_usage against this machine's /proc/stat and sysstat's mpstat, with a busy loop pinned to the last CPU.

The module runs as Ansible runs it (own process, arguments from a JSON file), inside a network namespace of its
own (``xd-nf-<random>-cpu``) like the experiment runs it on the DUT. mpstat runs over the same window: its
figures and the module's must agree within a few points (the two read /proc/stat a few milliseconds apart).
"""

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
MODULE = "ansible_collections.xdplab.testbed.plugins.modules.cpu_usage"


@pytest.fixture
def netns(netlab):
    """A namespace of its own (the module reads /proc and /sys from inside one, as on the virtual lab)."""
    return netlab("xd-cpu", pairs=[], single=True, lo=False).ns


@pytest.fixture
def busy_cpu():
    """A shell busy loop pinned to the last online CPU, stopped afterwards."""
    cpu = max(os.sched_getaffinity(0))
    proc = subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.3)
        yield cpu
    finally:
        proc.kill()
        proc.wait()


def run(netns, tmp_path, args):
    path = tmp_path / f"args-{secrets.token_hex(4)}.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-m", MODULE, str(path)],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def mpstat(seconds, cpu):
    """Start ``mpstat -P cpu seconds 1 -o JSON`` (sysstat); returns the process."""
    return subprocess.Popen(["mpstat", "-P", str(cpu), "-o", "JSON", str(seconds), "1"], stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, LC_ALL="C", S_TIME_FORMAT="ISO"))


def mpstat_load(proc, cpu):
    data = json.loads(proc.communicate(timeout=30)[0])
    loads = data["sysstat"]["hosts"][0]["statistics"][0]["cpu-load"]
    return next(row for row in loads if str(row["cpu"]) == str(cpu))


@pytest.mark.skipif(shutil.which("mpstat") is None, reason="mpstat not installed (apt-get install sysstat)")
def test_since_snapshot_matches_mpstat(netns, tmp_path, busy_cpu):
    first = run(netns, tmp_path, {"snapshot_only": True, "cpus": [busy_cpu], "_ansible_check_mode": True})
    mp = mpstat(2, busy_cpu)
    time.sleep(2.05)
    second = run(netns, tmp_path, {"since": first["snapshot"], "cpus": [busy_cpu], "_ansible_check_mode": True})
    ref = mpstat_load(mp, busy_cpu)
    (row,) = second["per_cpu"]
    assert second["changed"] is False and row["cpu"] == busy_cpu
    assert row["busy"] > 80, row
    assert row["busy"] == pytest.approx(100 - ref["idle"] - ref["iowait"], abs=8), (row, ref)
    assert row["user"] == pytest.approx(ref["usr"], abs=8), (row, ref)
    assert second["seconds"] == pytest.approx(second["window"]["end"] - second["window"]["start"], abs=1e-5)
    assert 2.0 <= second["seconds"] < 4
    assert row["ticks"] == pytest.approx(second["seconds"] * second["ticks_per_second"], rel=0.15)


@pytest.mark.skipif(shutil.which("mpstat") is None, reason="mpstat not installed (apt-get install sysstat)")
def test_blocking_matches_mpstat(netns, tmp_path, busy_cpu):
    mp = mpstat(2, busy_cpu)
    res = run(netns, tmp_path, {"interval": 1, "samples": 2})
    ref = mpstat_load(mp, busy_cpu)
    row = next(r for r in res["per_cpu"] if r["cpu"] == busy_cpu)
    assert row["busy"] > 80 and row["busy"] == pytest.approx(100 - ref["idle"] - ref["iowait"], abs=8), (row, ref)
    assert len(res["samples"]) == 2 and all(
        next(r for r in s["per_cpu"] if r["cpu"] == busy_cpu)["busy"] > 80 for s in res["samples"])
    assert sorted(r["cpu"] for r in res["per_cpu"]) == res["cpus"] == sorted(os.sched_getaffinity(0))
    assert res["all"]["busy"] >= 100 / len(res["cpus"]) * 0.8


def test_snapshot_from_another_boot_fails(netns, tmp_path):
    first = run(netns, tmp_path, {"snapshot_only": True})
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
        assert first["snapshot"]["boot_id"] == f.read().strip()
    with open("/proc/stat", encoding="ascii") as f:
        btime = int(re.search(r"^btime (\d+)", f.read(), re.M).group(1))
    assert first["snapshot"]["btime"] == btime
    stale = dict(first["snapshot"], boot_id=None, btime=btime - 86400)
    res = run(netns, tmp_path, {"since": stale})
    assert res["failed"] and "another boot" in res["msg"] and "snapshot_only: true" in res["msg"]


# ---- the precise sources on a real paced XDP drop: NAPI kthread run time, BPF run time, foreign threads ----------

BPF_BUILD = os.path.join(ROOT, "bpf", "build")
STATS = "/proc/sys/kernel/bpf_stats_enabled"


def napi_threads(dev):
    """pids of the NAPI kthreads named napi/<dev>-<id>, newest last."""
    pids = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm", encoding="ascii") as f:
                    if f.read().startswith(f"napi/{dev}-"):
                        pids.append(int(pid))
            except OSError:
                pass
    return sorted(pids)


def ethtool_stats(ns, dev):
    out = subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-S", dev], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    return {k.strip(): int(v) for k, _sep, v in (line.partition(":") for line in out.splitlines()[1:]) if v.strip().isdigit()}


@pytest.fixture
def paced_lab(netlab, bpf_build):
    """tg0 -> dut0, threaded NAPI on dut0 pinned to the last CPU, xdp_bare_drop on dut0."""
    bpf_build("xdplab-trafficgen", "xdp_trafficgen.bpf.o", "xdp_bare_drop.bpf.o")
    lab = netlab("xd-cu", gro=["dut0"], threaded=["dut0"], lo=False, no_ipv6=True,
                 macs={"tg0": "02:00:00:00:01:01", "dut0": "02:00:00:00:01:02"})  # fmt: skip
    (napi,) = napi_threads("dut0")[-1:]
    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(napi, {cpu})
    lab.exec(lab.dut, "ip", "link", "set", "dev", "dut0", "xdpdrv", "obj", os.path.join(BPF_BUILD, "xdp_bare_drop.bpf.o"),
             "sec", "xdp")  # fmt: skip
    with open(STATS, encoding="ascii") as f:
        stats_before = f.read().strip()
    yield lab, napi, cpu
    with open(STATS, "w", encoding="ascii") as f:
        f.write(stats_before + "\n")


def test_paced_xdp_drop_is_measured_from_the_napi_thread_and_bpf_stats(paced_lab, tmp_path):
    lab, napi, cpu = paced_lab
    with open(STATS, "w", encoding="ascii") as f:
        f.write("0\n")
    opts = {"cpus": [cpu], "work_interfaces": ["dut0"], "bpf_interfaces": ["dut0"]}
    first = run(lab.dut, tmp_path, dict(opts, snapshot_only=True))
    assert first["bpf_stats_enabled"] == {"during": 1, "set_by_module": True, "restored": False}, first
    drops0, tg0 = ethtool_stats(lab.dut, "dut0"), ethtool_stats(lab.tg, "tg0")
    gen = subprocess.run(["ip", "netns", "exec", lab.tg, os.path.join(BPF_BUILD, "xdplab-trafficgen"), "--dev", "tg0",
                          "--src-mac", "02:00:00:00:01:01", "--dst-mac", "02:00:00:00:01:02", "--src-ip", "10.0.0.1",
                          "--dst-ip", "10.0.0.2", "--cpus", str(min(os.sched_getaffinity(0))), "--duration", "2",
                          "--rate", "250000", "--obj", os.path.join(BPF_BUILD, "xdp_trafficgen.bpf.o")],
                         capture_output=True, text=True, check=True)  # fmt: skip
    second = run(lab.dut, tmp_path, dict(opts, since=first["snapshot"]))
    drops = ethtool_stats(lab.dut, "dut0")["rx_queue_0_xdp_drops"] - drops0["rx_queue_0_xdp_drops"]
    sent = json.loads(gen.stdout.splitlines()[-1])["sent"]
    assert second.get("failed") is not True, second
    # the NAPI kthread is the DUT's work, charged exactly (it may run on that CPU only)
    (work,) = [w for w in second["work"] if w["tid"] == napi]
    assert work["role"] == "napi" and work["attribution"] == "affinity" and work["kernel"] is True
    assert second["busy_source"] == "schedstat" and second["busy"] == pytest.approx(work["busy"], abs=0.01)
    assert second["per_cpu"][0]["work_busy"] == pytest.approx(work["busy"], abs=0.01) and work["busy"] > 0
    # BPF: one run per frame the program dropped; the program is part of what the NAPI thread did
    (prog,) = second["bpf"]
    assert prog["source"] == "bpf_stats" and drops > 0.5 * sent, (prog, drops, sent)
    # run_cnt counts the runs inside the module's window; frames still in flight at its edges may differ
    assert abs(prog["run_cnt"] - drops) <= max(64, 0.001 * drops), (prog["run_cnt"], drops)
    assert 0 < prog["run_time_ns"] < work["runtime_ns"]
    assert second["bpf_stats_enabled"] == {"during": 1, "set_by_module": True, "restored": True}
    with open(STATS, encoding="ascii") as f:
        assert f.read().strip() == "0"
    assert second["sources"]["work"] == "schedstat" and second["sources"]["per_cpu.busy"] == "proc_stat"
    # every frame sent was either dropped by the program or refused at tg0 (the DUT's ring was full)
    refused = ethtool_stats(lab.tg, "tg0")["tx_queue_0_xdp_xmit_errors"] - tg0["tx_queue_0_xdp_xmit_errors"]
    # (a few frames may still sit in the ring when the counters are read)
    assert sent - 64 <= drops + refused <= sent, (drops, refused, sent)

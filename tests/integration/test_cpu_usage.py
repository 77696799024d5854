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

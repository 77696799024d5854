# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/_in_worker.py: a module of the collection run in a fork of this process, inside a network namespace of
this machine, as `ip netns exec` would run it (the trial phases' way on the virtual lab). Needs root (a namespace of
the test's own, with a veth pair in it; removed afterwards)."""

import json
import os
import subprocess
import sys
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _process
from ansible_collections.xdplab.testbed.plugins.plugin_utils import _in_worker

COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "collections")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a network namespace)")

# the arguments Ansible adds to every module's (ActionBase._update_module_args), the ones AnsibleModule reads
ANSIBLE_ARGS = {"_ansible_check_mode": False, "_ansible_no_log": False, "_ansible_diff": False,
                "_ansible_verbosity": 0, "_ansible_module_name": "x", "_ansible_remote_tmp": "/tmp"}  # fmt: skip


@pytest.fixture
def netns():
    name = f"iwtest-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "add", "iwa", "type", "veth", "peer", "name", "iwb"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_a_module_runs_in_the_namespace(netns):
    args = dict(ANSIBLE_ARGS, devices=["iwa"], snapshot_only=True)
    inside = _in_worker.run_module("xdplab.testbed.rx_counters", args, netns=netns)
    assert not inside.get("failed"), inside
    assert inside["snapshot"]["devices"]["iwa"]["driver"] == "veth"
    # the same call in this process's namespace, where iwa does not exist, fails naming it
    outside = _in_worker.run_module("xdplab.testbed.rx_counters", args, netns=None)
    assert outside.get("failed") and "interface iwa does not exist" in outside["msg"], outside
    assert not any(k.startswith("_ansible_") for k in inside)


def test_the_namespace_has_its_own_sysfs(netns):
    code = ("import json, os, sys; from ansible_collections.xdplab.testbed.plugins.plugin_utils import _in_worker;"
            "_in_worker.enter_netns(sys.argv[1]); print(json.dumps(sorted(os.listdir('/sys/class/net'))))")  # fmt: skip
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    out = subprocess.run([sys.executable, "-c", code, netns], capture_output=True, text=True, check=True, env=env).stdout
    assert json.loads(out) == ["iwa", "iwb", "lo"]


def test_a_failing_module_and_bad_arguments_come_back_as_failed_results(netns):
    bad = _in_worker.run_module("xdplab.testbed.xdp_program", dict(ANSIBLE_ARGS, interface="iwa", state="sideways"), netns)
    assert bad["failed"] and "state" in bad["msg"], bad
    missing = _in_worker.run_module("xdplab.testbed.no_such_module", dict(ANSIBLE_ARGS), netns)
    assert missing["failed"] and "no_such_module" in missing["msg"], missing


def test_only_this_collections_modules_run_in_the_worker():
    assert _in_worker.runs_in_worker("xdplab.testbed.xdp_stats")
    assert not _in_worker.runs_in_worker("ansible.builtin.copy")


# -- background jobs (start_module): started by one phase, read or ended by a later one (another process) -------------
def _wait_for(predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _in_netns(pid):
    return os.readlink(f"/proc/{pid}/ns/net")


def test_a_background_job_runs_in_the_namespace_and_leaves_its_result(netns, tmp_path):
    path = str(tmp_path / "job.json")
    # a window a second ahead: the job still runs when start_module returns
    args = dict(ANSIBLE_ARGS, devices=["iwa"], start_at=time.time() + 1.0, warmup=0, interval=0.2, samples=2)
    job = _in_worker.start_module("xdplab.testbed.rx_counters", args, path, netns=netns)
    # detached: its own session and process group, not a child of this process, stdio on /dev/null
    assert _in_worker.job_running(job)
    assert os.getsid(job["pid"]) == job["pid"] and os.getpgid(job["pid"]) == job["pid"]
    assert os.readlink(f"/proc/{job['pid']}/fd/1") == "/dev/null"
    with pytest.raises(ChildProcessError):
        os.waitpid(job["pid"], os.WNOHANG)
    assert _in_worker.job_result(job, path) is None
    _wait_for(lambda: _in_worker.job_result(job, path) is not None)
    result = _in_worker.job_result(job, path)
    assert not result.get("failed"), result
    # counted in the namespace (iwa exists only there), over the scheduled window
    assert "iwa" in result["deltas"] and result["measurement"]["window"]["seconds"] > 0, result
    _wait_for(lambda: not _in_worker.job_running(job))
    assert not os.path.exists(path + ".tmp")
    assert _in_worker.kill_module(job, path) is False
    assert not os.path.exists(path)


def test_a_failing_background_module_leaves_a_failed_result(netns, tmp_path):
    path = str(tmp_path / "job.json")
    job = _in_worker.start_module("xdplab.testbed.rx_counters", dict(ANSIBLE_ARGS, devices=["nosuch0"]), path, netns=netns)
    _wait_for(lambda: _in_worker.job_result(job, path) is not None)
    result = _in_worker.job_result(job, path)
    assert result["failed"] and "nosuch0" in result["msg"], result


def test_a_background_job_is_killed_with_its_module_and_leaves_no_file(netns, tmp_path):
    path = str(tmp_path / "job.json")
    # a window a minute ahead: the module sleeps in the namespace until it is killed
    args = dict(ANSIBLE_ARGS, devices=["iwa"], start_at=time.time() + 60, warmup=0, interval=1, samples=1)
    job = _in_worker.start_module("xdplab.testbed.rx_counters", args, path, netns=netns)
    # the module's process (the job's child, in its process group) has entered the namespace
    members = []

    def module_started():
        members[:] = [int(p) for p in os.listdir("/proc") if p.isdigit() and p != str(job["pid"]) and _pgid(int(p)) == job["pid"]]
        return bool(members) and _in_netns(members[0]) != _in_netns(os.getpid())

    _wait_for(module_started)
    assert _in_worker.kill_module(job, path) is True
    assert not _in_worker.job_running(job)
    _wait_for(lambda: all(_process.proc_start_time(p) is None or _pgid(p) != job["pid"] for p in members), 5)
    assert not os.path.exists(path) and not os.path.exists(path + ".tmp")
    # a second time, and for a pid that another process has now: nothing is signalled
    assert _in_worker.kill_module(job, path) is False
    assert _in_worker.kill_module({"pid": os.getpid(), "starttime": -1}, path) is False


def _pgid(pid):
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None

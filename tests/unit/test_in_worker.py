# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/_in_worker.py: a module of the collection run in a fork of this process, inside a network namespace of
this machine, as `ip netns exec` would run it (the trial phases' way on the virtual lab). Needs root (a namespace of
the test's own, with a veth pair in it; removed afterwards)."""

import json
import os
import subprocess
import sys

import pytest
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

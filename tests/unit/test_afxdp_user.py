# SPDX-License-Identifier: GPL-3.0-or-later
"""Module afxdp_user: a user's AF_XDP binary, one process per queue pinned to its CPU (real short processes)."""

from __future__ import annotations

import json
import os
import time

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.modules import afxdp_user


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        afxdp_user.main()
    return json.loads(capsys.readouterr().out)


def test_placeholders():
    assert afxdp_user.placeholder_errors(["--dev", "{interface}", "q{queue}", "{cpu}", "{{literal}}"]) == []
    errors = afxdp_user.placeholder_errors(["{iface}", "{queue"])
    assert "unknown placeholder(s) iface" in errors[0] and "'{queue'" in errors[1]
    assert afxdp_user.expand(["-i", "{interface}", "{queue}:{cpu}", "{{x}}"], "dut0", 1, 3) == ["-i", "dut0", "1:3", "{x}"]


def test_one_pinned_process_per_queue_then_stopped(tmp_path, capsys):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    base = {"binary": "/bin/sleep", "args": ["30"], "interface": "lo", "run_dir": str(tmp_path), "settle": 0.2}
    started = run(dict(base, queues=[0, 1], cpus=[cpu, cpu]), capsys)
    assert not started.get("failed"), started
    assert [p["queue"] for p in started["processes"]] == [0, 1] and started["command"] == ["/bin/sleep", "30"]
    for proc in started["processes"]:
        with open(f"/proc/{proc['pid']}/status") as f:
            allowed = next(line.split(":")[1].strip() for line in f if line.startswith("Cpus_allowed_list"))
        assert allowed == str(cpu)
    stopped = run({"state": "stopped", "run_dir": str(tmp_path)}, capsys)
    assert not stopped.get("failed") and len(stopped["processes"]) == 2, stopped
    assert all(p["signals"] == ["SIGINT"] and not p["ended_early"] for p in stopped["processes"])
    assert not os.path.isdir(tmp_path) or os.listdir(tmp_path) == []  # the run's files are gone
    assert run({"state": "absent", "run_dir": str(tmp_path)}, capsys)["changed"] is False


def test_a_process_that_ends_early_fails_the_stop(tmp_path, capsys):
    base = {"binary": "/bin/sh", "interface": "lo", "run_dir": str(tmp_path), "settle": 0.1, "queues": [0], "cpus": [0]}
    started = run(dict(base, args=["-c", "sleep 0.4; echo gone >&2; exit 3"]), capsys)
    assert not started.get("failed"), started
    time.sleep(0.8)
    stopped = run({"state": "stopped", "run_dir": str(tmp_path)}, capsys)
    assert stopped["failed"] and "exit" in stopped["msg"] and "gone" in stopped["msg"], stopped
    assert stopped["process"]["exit_status"] == 3


def test_a_process_that_cannot_start_is_named(tmp_path, capsys):
    res = run({"binary": "/bin/sh", "args": ["-c", "echo no socket >&2; exit 1"], "interface": "lo", "queues": [0],
               "cpus": [0], "run_dir": str(tmp_path), "settle": 0.5}, capsys)  # fmt: skip
    assert res["failed"] and "queue 0 (CPU 0)" in res["msg"] and "no socket" in res["msg"], res
    res = run({"binary": "/nonexistent", "interface": "lo", "queues": [0], "cpus": [0], "run_dir": str(tmp_path)}, capsys)
    assert res["failed"] and "not an executable file" in res["msg"]
    res = run({"binary": "/bin/sh", "interface": "lo", "queues": [0, 1], "cpus": [0], "run_dir": str(tmp_path)}, capsys)
    assert res["failed"] and "same length" in res["msg"]

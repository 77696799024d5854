# SPDX-License-Identifier: GPL-3.0-or-later
"""housekeeping and module_utils/_housekeeping: which tree is pinned (a /proc tree laid out like a real controller
and a real SSH session), and real affinity changes on this machine's processes."""

import json
import os
import subprocess
import sys
import time

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _housekeeping as hk
from ansible_collections.xdplab.testbed.plugins.modules import housekeeping


def fake_proc(root, procs):
    """procs = {pid: (ppid, comm, argv)}: the stat and cmdline files find_anchor and tree read."""
    for pid, (ppid, comm, argv) in procs.items():
        d = root / str(pid)
        (d / "task" / str(pid)).mkdir(parents=True)
        (d / "stat").write_text(f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0\n")
        (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    return str(root)


VENV_PY = "/work/main/.venv/bin/python"
CONTROLLER = {
    1: (0, "systemd", ["/sbin/init"]),
    90: (1, "bash", ["bash"]),
    100: (90, "make", ["make", "paper-drop-cpu"]),
    200: (100, "ansible-playboo", [VENV_PY, "/work/main/.venv/bin/ansible-playbook", "-i", "inventories/vlab"]),
    201: (200, "ansible-playboo", [VENV_PY, "/work/main/.venv/bin/ansible-playbook", "-i", "inventories/vlab"]),
    300: (201, "ip", ["ip", "netns", "exec", "xdplab-dut", "/bin/sh", "-c", "python3 module"]),
    301: (300, "sh", ["/bin/sh", "-c", "python3 module"]),
    302: (301, "python", [VENV_PY, "/root/.ansible/tmp/AnsiballZ_housekeeping.py"]),
    400: (200, "ansible-playboo", [VENV_PY, "/work/main/.venv/bin/ansible-playbook", "-i", "inventories/vlab"]),
}
SSH = {
    1: (0, "systemd", ["/sbin/init"]),
    10: (1, "sshd", ["sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups"]),
    11: (10, "sshd-session", ["sshd-session: lab [priv]"]),
    12: (11, "sshd-session", ["sshd-session: lab@notty"]),
    13: (12, "sh", ["/bin/sh", "-c", "sudo -H -S -n -u root /bin/sh -c 'python3'"]),
    14: (13, "sudo", ["sudo", "-H", "-S", "-n", "-u", "root", "/bin/sh"]),
    15: (14, "python3", ["/usr/bin/python3"]),
}


def test_anchor_is_the_controllers_main_process_not_a_fork(tmp_path):
    proc = fake_proc(tmp_path, CONTROLLER)
    anchor, kind = hk.find_anchor(302, proc=proc)
    assert kind == "controller" and anchor["pid"] == 200
    # the whole tree of the main process: its forks (201, 400) and what they run, not make or the shell
    assert sorted(hk.tree(200, proc=proc)) == [200, 201, 300, 301, 302, 400]


def test_anchor_on_a_remote_host_is_the_nearest_ssh_session(tmp_path):
    proc = fake_proc(tmp_path, SSH)
    anchor, kind = hk.find_anchor(15, proc=proc)
    assert kind == "ssh" and anchor["pid"] == 12


def test_no_anchor_outside_ansible_and_ssh(tmp_path):
    proc = fake_proc(tmp_path, {1: (0, "systemd", ["/sbin/init"]), 5: (1, "bash", ["bash"]), 6: (5, "python", ["python"])})
    assert hk.find_anchor(6, proc=proc) == (None, None)


@pytest.fixture
def sleeper_tree():
    """A real process with a child, both allowed on every CPU; killed afterwards."""
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    time.sleep(0.2)
    try:
        yield proc.pid
    finally:
        subprocess.run(["pkill", "-P", str(proc.pid)], check=False)
        proc.kill()
        proc.wait()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_pin_tree_moves_every_thread_and_leaves_pinned_work_alone(sleeper_tree):
    cpus = sorted(os.sched_getaffinity(0))
    hk_cpu, dut_cpu = cpus[0], cpus[-1]
    child = int(subprocess.run(["pgrep", "-P", str(sleeper_tree)], capture_output=True, text=True, check=True).stdout.split()[0])
    os.sched_setaffinity(child, {dut_cpu})  # like a testpmd lcore: bound to a DUT CPU only
    planned = hk.pin_tree(sleeper_tree, [hk_cpu], keep=[dut_cpu], check_mode=True)
    assert [m["pid"] for m in planned] == [sleeper_tree] and os.sched_getaffinity(sleeper_tree) == set(cpus)
    moved = hk.pin_tree(sleeper_tree, [hk_cpu], keep=[dut_cpu])
    assert moved == planned
    assert os.sched_getaffinity(sleeper_tree) == {hk_cpu} and os.sched_getaffinity(child) == {dut_cpu}
    assert hk.pin_tree(sleeper_tree, [hk_cpu], keep=[dut_cpu]) == []  # idempotent


def test_pin_self_from_state_file_and_environment(tmp_path, monkeypatch):
    before = os.sched_getaffinity(0)
    cpu = min(before)
    state = tmp_path / "hk.json"
    try:
        assert hk.pin_self(str(state), environ={}) is None  # nothing set: nothing done
        assert hk.write_state({"cpus": [cpu], "avoid": []}, str(state)) is True
        assert hk.write_state({"cpus": [cpu], "avoid": []}, str(state)) is False
        assert hk.pin_self(str(state), environ={}) == [cpu] and os.sched_getaffinity(0) == {cpu}
        os.sched_setaffinity(0, before)
        assert hk.pin_self(str(state), environ={hk.ENV: f"{cpu}"}) == [cpu]
        assert hk.pin_self(str(state), environ={hk.ENV: "4000"}) is None  # not a CPU here: left alone
    finally:
        os.sched_setaffinity(0, before)


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        housekeeping.main()
    return json.loads(capsys.readouterr().out)


def test_module_refuses_housekeeping_on_the_duts_cpus(capsys, tmp_path):
    res = run_module({"cpus": [0], "avoid": [0, 1], "state_file": str(tmp_path / "s.json")}, capsys)
    assert res["failed"] and res["msg"].startswith("xdplab_housekeeping_cpus 0 shares CPU 0 with xdplab_dut_cpus 0-1")
    res = run_module({"cpus": [4000], "state_file": str(tmp_path / "s.json")}, capsys)
    assert res["failed"] and "xdplab_housekeeping_cpus: CPU 4000 is not online on this host (online: " in res["msg"]
    assert not (tmp_path / "s.json").exists()


def test_module_in_check_mode_changes_nothing(capsys, tmp_path):
    before = os.sched_getaffinity(0)
    res = run_module({"cpus": [min(before)], "state_file": str(tmp_path / "s.json"), "_ansible_check_mode": True}, capsys)
    # pytest is not started by ansible-playbook or sshd: no tree to pin, only the state file (not in check mode)
    assert res["anchor"] is None and res["moved_count"] == 0 and res["changed"] is True
    assert not (tmp_path / "s.json").exists() and os.sched_getaffinity(0) == before


def test_module_pins_the_controller_tree_of_a_real_playbook(tmp_path):
    """ansible-playbook runs the module, then a command: the command (a later fork) runs on the housekeeping CPU."""
    cpu = min(os.sched_getaffinity(0))
    play = tmp_path / "play.yml"
    play.write_text(f"""
- hosts: all
  gather_facts: false
  tasks:
    - xdplab.testbed.housekeeping:
        cpus: [{cpu}]
        state_file: {tmp_path}/s.json
      register: pinned
    - ansible.builtin.command: grep Cpus_allowed_list /proc/self/status
      register: allowed
    - ansible.builtin.copy:
        dest: {tmp_path}/out.json
        content: "{{{{ {{'pinned': pinned, 'allowed': allowed.stdout}} | to_json }}}}"
        mode: "0644"
""")
    bindir = os.path.dirname(sys.executable)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([os.path.join(bindir, "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play),
                           "-e", f"ansible_python_interpreter={sys.executable}"], capture_output=True, text=True,
                          env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(root, "ansible.cfg")), cwd=root, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["pinned"]["anchor"]["kind"] == "controller" and out["pinned"]["moved_count"] >= 1
    assert out["allowed"].split()[-1] == str(cpu)
    assert json.loads((tmp_path / "s.json").read_text()) == {"cpus": [cpu], "avoid": []}


def test_state_file_named_by_the_environment_is_the_one_read(tmp_path):
    own = tmp_path / "own.json"
    assert hk.housekeeping_cpus(environ={hk.STATE_ENV: str(own)}) is None  # absent: nothing set
    hk.write_state({"cpus": [3], "avoid": []}, str(own))
    assert hk.housekeeping_cpus(environ={hk.STATE_ENV: str(own)}) == [3]
    assert hk.housekeeping_cpus(str(tmp_path / "other.json"), environ={hk.STATE_ENV: str(own)}) is None  # path wins

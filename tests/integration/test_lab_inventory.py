"""The hardware inventory (inventories/lab) is accepted by the same playbooks.

There is no ConnectX-5 DUT or T-Rex generator here, so the check run lets this machine stand in for
both hosts (connection local): that exercises every play, the input validation and the role
bpf_programs in check mode, up to the first task that needs the hardware. Check mode measures nothing.
"""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))


def playbook(*args):
    return subprocess.run(
        [PLAYBOOK, "-i", "inventories/lab", "playbooks/paper_drop.yml", *args],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip


def test_syntax_check():
    res = playbook("--syntax-check")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.root
def test_check_mode_plans_the_paper_matrix(tmp_path):
    res = playbook("--check", "-e", "ansible_connection=local", "-e", "ansible_python_interpreter=" + sys.executable,
                   "-e", "xdplab_results_dir=%s" % tmp_path)  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    # 6 DUT cores x 2 touch modes x 3 repetitions, planned and not run
    assert "36 trial(s) to run" in out
    assert "Record the trial" not in out
    # the T-Rex backend is not there yet: check mode says so instead of hiding it
    assert re.search(r"a real run would stop here: tg uses generator backend '+trex'+", " ".join(out.split()))
    assert not list(tmp_path.rglob("trials.jsonl"))


def test_a_real_run_refuses_an_unknown_backend_before_changing_anything(tmp_path):
    res = playbook("-e", "ansible_connection=local", "-e", "ansible_python_interpreter=" + sys.executable,
                   "-e", "xdplab_results_dir=%s" % tmp_path)  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0
    assert re.search(r"xdplab_generator_backend '+trex'+ is not a backend of xdplab.testbed.traffic_generator", out)
    # it failed in the first play: no testbed play ran
    assert "Build the data-plane programs" not in out

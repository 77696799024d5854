# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to the cpumap forwarding system (xdp_redirect_cpu, issue 9) is refused before anything changes: the CPU
that forwards (xdplab_dut_cpumap_cpu) must not be one of the DUT's receive CPUs, and must be a CPU number."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))


@pytest.mark.parametrize("cpu", [1, "first"], ids=["a-receive-cpu", "not-a-cpu"])
def test_the_cpumap_cpu_is_another_cpu(cpu, tmp_path):
    # --tags never_any: only the always-tagged input checks run, so a missed refusal changes nothing either
    extra = {"paper_forward_systems": ["xdp_redirect_cpu"], "xdplab_dut_cpumap_cpu": cpu}
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/vlab", "playbooks/paper_forward.yml", "-e", json.dumps(extra), "--tags",
         "never_any", "-e", "experiment_results_dir=%s" % tmp_path],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-2000:]
    assert ("xdp_redirect_cpu receives on the DUT's CPUs [1] and forwards from the cpumap's CPU, xdplab_dut_cpumap_cpu "
            "(default: the first of xdplab_housekeeping_cpus), which is '%s'" % cpu) in out, out[-2000:]
    assert "input error(s), nothing was changed" in out
    assert not list(tmp_path.rglob("*.jsonl"))

"""`--check` on a machine where the virtual lab was never built (issue 26 item 6): what a new user tries first.

It ends rc 0, plans from the inventory, prints the trial count and says what it could not read; the plays that would
reach a namespace that does not exist (tuning, bpf programs, DPDK, the run, the cleanup) end for that host instead of
going UNREACHABLE. It builds nothing: the namespaces are still absent afterwards.

Check mode changes nothing, but it reads the names of the virtual lab (xdplab-tg, xdplab-dut): run under the lab lock
(flock /tmp/xdplab-lab.lock). Where a virtual lab exists (someone else's run), the test is skipped, not the lab removed.
"""

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.no_traffic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PATH=BIN + ":" + os.environ.get("PATH", ""))
NAMESPACES = ("xdplab-dut", "xdplab-tg")


def lab_namespaces():
    return [n for n in NAMESPACES if os.path.exists(os.path.join("/run/netns", n))]


@pytest.fixture
def no_lab():
    if os.geteuid() != 0:
        pytest.skip("the virtual lab's check mode runs as root (its role vlab asserts root on the controller)")
    found = lab_namespaces()
    if found:
        pytest.skip("a virtual lab exists on this machine (%s): someone else's run; not removed" % ", ".join(found))
    yield
    assert lab_namespaces() == [], "check mode built a namespace"


@pytest.mark.parametrize("playbook", ["playbooks/paper_drop.yml", "xdplab.testbed.paper_drop"])
def test_check_on_a_lab_never_built_plans_from_the_inventory(no_lab, playbook, tmp_path):
    res = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", "inventories/vlab", playbook, "--check",
         "-e", "experiment_results_dir=%s" % tmp_path,
         "-e", '{"paper_drop_systems": ["xdp", "linux_raw"], "paper_drop_touch": ["no_touch"], "paper_drop_cores": [1]}'],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split()).replace("''", "'")
    assert res.returncode == 0, out[-4000:]
    assert "UNREACHABLE" not in out and "unreachable=0" in out
    # 2 systems x 1 core x 1 touch x 64 B x 3 repetitions
    assert re.search(
        r"paper_drop on dut \([^)]+\): the virtual lab is not up: namespaces xdplab-dut and xdplab-tg do not exist; "
        r"planned from the inventory: 6 trial\(s\) to run, 0 already recorded in " + re.escape(str(tmp_path)),
        out,
    ), out[-4000:]
    assert "Not read: the DUT's tuning (drift check) and its provenance" in out
    assert "check mode: no trial runs" in out
    assert not list(tmp_path.rglob("*"))

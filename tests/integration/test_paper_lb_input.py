# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to the load-balancer experiment (issue 27) gets a clear error before anything changes (playbooks/
paper_lb.yml's first play, filter lb_input_errors, module ipvs_service's probe): more reals than the program's reals
map holds, a packet that IPIP's 20 bytes push over the MTU, rp_filter on for IPVS tunnel mode, IPVS asked for on a
kernel without it (this machine: CONFIG_IP_VS is not set). Without a system list the default drops ipvs on such a
kernel and says why. Only the always-tagged checks run (--tags never_any): a missed refusal changes nothing either."""

import json
import os
import subprocess
import sys

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _lb

pytestmark = pytest.mark.no_traffic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
NO_IPVS = not _lb.ipvs_support()["supported"]
IPVS_RP_ON = {
    "experiment_systems": {
        "xdp_lb": {"impl": "lb", "lb": "bpf", "forward": "lb", "return_port": "ingress", "label": "xdp_lb"},
        "ipvs": {"impl": "lb", "lb": "ipvsadm", "forward": "lb", "return_port": "egress", "rp_filter": 1, "label": "IPVS"},
    }
}


def run(extra, tmp_path):
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/vlab", "playbooks/paper_lb.yml", "-e", json.dumps(extra), "--tags", "never_any",
         "-e", "experiment_results_dir=%s" % tmp_path],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    return res.returncode, " ".join((res.stdout + res.stderr).split())


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"xdplab_lb_systems": ["xdp_lb"], "lb_reals_per_vip": 5000},
            "dut: paper_lb reals_per_vip: 1 VIPs x 5000 reals = 5000 reals, more than the 4096 the program's reals map "
            "holds (bpf/xdp_lb.h LB_MAX_REALS)",
        ),
        (
            {"xdplab_lb_systems": ["xdp_lb"], "paper_lb_packet_len": [1500]},
            "dut: packet_len: 1500: its IPv4 packet (1482 bytes) + 20 bytes of the outer IPIP header = 1502, over the DUT "
            "port's MTU 1500",
        ),
        (
            dict(IPVS_RP_ON, xdplab_lb_systems=["ipvs"]),
            "experiment_systems.ipvs.rp_filter: 1: IPVS tunnel mode needs reverse-path filtering off",
        ),
    ],
    ids=["reals-over-the-map", "ipip-over-the-mtu", "rp-filter-on"],
)
def test_refused_before_any_change(extra, message, tmp_path):
    rc, out = run(extra, tmp_path)
    assert rc != 0, out[-2000:]
    assert message in out, out[-2000:]
    assert "input error(s), nothing was changed" in out
    assert not list(tmp_path.rglob("*.jsonl"))


@pytest.mark.skipif(not NO_IPVS, reason="this kernel has IPVS")
def test_ipvs_on_a_kernel_without_it(tmp_path):
    rc, out = run({"xdplab_lb_systems": ["xdp_lb", "ipvs"]}, tmp_path)
    assert rc != 0 and "input error(s), nothing was changed" in out, out[-2000:]
    assert "dut: paper_lb_systems: xdp_lb, ipvs: ipvs: the kernel" in out and "has no IPVS: /proc/net/ip_vs is absent" in out
    assert "CONFIG_IP_VS" in out, out[-2000:]


@pytest.mark.skipif(not NO_IPVS, reason="this kernel has IPVS")
def test_the_default_drops_ipvs_and_says_why(tmp_path):
    _rc, out = run({}, tmp_path)
    assert "paper_lb: IPVS is not measured on dut: the kernel" in out and "CONFIG_IP_VS" in out, out[-3000:]
    assert "input error(s), nothing was changed" not in out.split("IPVS is not measured", maxsplit=1)[0]

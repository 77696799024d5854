"""Bad input to the forwarding experiment (issue 9) gets a clear error before anything on the system changes:
an egress port that is the ingress port (XDP_REDIRECT, Linux and DPDK `mac` forwarding), testpmd `mac` on a PCI port
without the egress port's PCI address, a redirect to a port of another host (the generator's), a ring size the
driver refuses (veth has no rings; mlx5 takes 64 to 8192 descriptors), a queue-count axis apart from the cores
(seeds/004's rings are the cores axis)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
MLX5 = {"xdplab_dut_ports": [{"name": "veth-dut0", "driver": "mlx5_core"}]}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        # the input checks of every experiment refuse it first (module_utils/_experiment_input.py)
        ({"xdplab_dut_egress_interface": "veth-dut0"},
         "dut: xdplab_dut_egress_interface: veth-dut0 is also dut's xdplab_dut_interface; the two ports the DUT "
         "receives on and forwards out of are two interfaces"),
        ({"xdplab_dut_egress_interface": "veth-tg1"},
         "xdplab_dut_egress_interface veth-tg1 is a port of tg"),
        ({"paper_forward_ring_sizes": [256, 512]},
         "the veth driver has no RX/TX rings to size (ethtool -G: Operation not supported)"),
        (dict(MLX5, paper_forward_ring_sizes=[256, 16384]),
         "ring sizes [256, 16384] for veth-dut0 (driver mlx5_core): the driver takes 64 to 8192 descriptors per ring"),
        ({"paper_forward_systems": ["xdp_tx", "dpdk_mac"], "xdplab_dut_egress_interface": ""},
         "the systems dpdk_mac send out of a second port, but xdplab_dut_egress_interface is ''"),
        ({"paper_forward_systems": ["dpdk_mac"], "xdplab_dpdk_port": "0000:03:00.0"},
         "the systems dpdk_mac run testpmd `mac` from the ingress port (xdplab_dpdk_port 0000:03:00.0) to the egress "
         "port, but xdplab_dpdk_egress_port is ''"),
        ({"paper_forward_queues": [1, 4]},
         "paper_forward_queues [1, 4] is not an axis of this experiment. seeds/004's 1 ring and 24 rings are mlx5 "
         "channels, one per core"),
    ],
    ids=["egress-is-ingress", "egress-on-generator", "veth-rings", "mlx5-ring-limit", "dpdk-egress-is-ingress",
         "dpdk-pci-no-egress", "queue-axis"],
)
def test_refused_before_any_change(extra, message, tmp_path):
    # --tags never_any: only the always-tagged input checks run, so a missed refusal changes nothing either
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/vlab", "playbooks/paper_forward.yml", "-e", json.dumps(extra), "--tags", "never_any",
         "-e", "experiment_results_dir=%s" % tmp_path],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-2000:]
    assert message in out, out[-2000:]
    # in the first play, with every other wrong field of the input (validate.yml, module_utils/_experiment_input.py)
    assert "input error(s), nothing was changed" in out
    assert not list(tmp_path.rglob("*.jsonl"))

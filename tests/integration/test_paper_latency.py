# SPDX-License-Identifier: GPL-3.0-or-later
"""The latency experiment end to end (issue 9): the real playbooks/paper_latency.yml on inventories/vlab, one
DPDK testpmd macswap trial at 100 pps (net_af_xdp on the DUT's ingress veth, 1 repetition, 3 samples of 1 s).
testpmd starts in the system's setup, before the generator, and forwards until after the generator ended, so every
frame the generator stamped is in the sink's histogram or counted as lost, and at 100 pps none is lost. Programs
and packages are what the other lab tests installed (skipped here unless missing); no report. The namespaces are
the vlab's fixed xdplab-tg / xdplab-dut: run under the lab lock. Root.
"""

import os
import subprocess

import pytest

TINY = {
    "paper_latency_systems": ["dpdk_macswap"], "paper_latency_loads_mpps": [0.0001], "paper_latency_seconds": 3,
    "experiment_warmup": 1, "experiment_window_lead": 5, "experiment_drift_check": False, "xdplab_testbed_dpdk": False,
    "xdplab_testbed_tuning": False, "xdplab_dpdk_no_huge": True,
}  # fmt: skip


@pytest.mark.root
def test_paper_latency_dpdk_macswap_forwards_through_the_whole_run(lab_playbook):
    if subprocess.run(["sh", "-c", "command -v dpdk-testpmd"], capture_output=True, check=False).returncode:
        pytest.skip("needs dpdk-testpmd (role xdplab.testbed.dpdk, or apt-get install dpdk)")
    records = lab_playbook("paper_latency", TINY, installed=(
        "bin/xdplab-trafficgen", "lib/bpf/xdp_latency_sink.bpf.o", "lib/bpf/xdp_bare_drop.bpf.o"))
    assert [r["status"] for r in records] == ["ok"], [r.get("failure") for r in records]
    rec = records[0]
    assert rec["point"]["system"] == "dpdk_macswap"
    # testpmd macswap on one port: the frames come back to the generator's own port, where the sink times them
    assert rec["result"]["source"]["devices"] == ["veth-tg0"]
    assert rec["provenance"]["program"]["forward_mode"] == "macswap"
    assert "--forward-mode=macswap" in rec["provenance"]["program"]["command"]
    assert rec["result"]["details"]["dut_process"]["name"] == "testpmd"
    # testpmd forwarded over the generator's whole run and ended with it (the trial wrote the generator's end into its
    # window_end_file), not after its longest window (60 samples of 1 s here: the run + a 30 s lead + the margin)
    ran = rec["result"]["details"]["dut_process"]["window"]["seconds"]
    assert rec["generator"]["elapsed_s"] <= ran < rec["generator"]["elapsed_s"] + 15, (ran, rec["generator"])
    lat = rec["latency"]
    # every frame sent is in the histogram or lost, and testpmd forwarded all of them: it ran before the generator
    # started and after it ended (its start and stop frames would be lost otherwise)
    assert lat["accounted"] is True, lat
    assert lat["sent"] >= 250 and lat["count"] + lat["lost"] == lat["sent"], lat
    # frames without a stamp are not the generator's (the two namespaces' own, e.g. IPv6, which macswap sends back
    # too): counted apart, neither in sent nor as loss (4 in a 3 s run here)
    assert lat["lost"] == 0 and lat["unstamped"] < 0.01 * lat["sent"], lat
    assert 100 <= lat["min_ns"] <= lat["p50_ns"] <= lat["max_ns"] * 1.01, lat
    # every exit path: no testpmd left, no namespace
    assert subprocess.run(["pgrep", "-x", "dpdk-testpmd"], capture_output=True, check=False).returncode == 1
    assert not [n for n in os.listdir("/run/netns") if n.startswith("xdplab-")] if os.path.isdir("/run/netns") else True

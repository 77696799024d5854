# SPDX-License-Identifier: GPL-3.0-or-later
"""The load-balancer experiment end to end (issue 27, item 3): the real playbooks/paper_lb.yml on inventories/vlab,
xdp_lb only (this machine has no IPVS: the first play refuses ipvs by name, tested below without the lab), 1 core,
one VIP with 10 reals, 1,000 source addresses, one trial of 2 samples of 1 s. Checks: the
encapsulated frames are counted at the generator's own port (xdp_lb returns on the ingress port, XDP_TX), every
IPIP frame that came back had the outer destination of a real of its VIP and a right checksum (bpf/xdp_lb_check on
every frame), the balancer's LRU table hit (the flows repeat), the record's lb section is there and valid against
the schema, and the machine is left as found (no XDP program on the vlab's ports, no namespace). The namespaces are
the vlab's fixed xdplab-tg / xdplab-dut: run under the lab lock. Root.
"""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = {
    "xdplab_lb_systems": ["xdp_lb"],
    "paper_lb_repetitions": 1,
    "lb_reals_per_vip": 10,
    "experiment_samples": 2,
    "experiment_warmup": 1, "experiment_interval": 1, "experiment_drift_check": False,
    "experiment_generator_slack": 40, "experiment_window_lead": 5, "xdplab_testbed_dpdk": False,
    "xdplab_testbed_tuning": False,
}  # fmt: skip


def _validate(rec):
    jsonschema = pytest.importorskip("jsonschema")
    with open(os.path.join(ROOT, "docs", "trial_record.schema.json"), encoding="utf-8") as fh:
        jsonschema.validate(rec, json.load(fh))


@pytest.mark.root
def test_paper_lb_xdp_lb_encapsulates_to_the_reals(lab_playbook):
    records = lab_playbook("paper_lb", TINY, installed=(
        "bin/xdplab-trafficgen", "lib/bpf/xdp_lb.bpf.o", "lib/bpf/xdp_lb_check.bpf.o"))  # fmt: skip
    assert [r["status"] for r in records] == ["ok"], [r.get("failure") for r in records]
    rec = records[0]
    assert rec["point"]["system"] == "xdp_lb" and rec["point"]["cores"] == 1
    # counted where the IPIP frames come back: the generator's own port
    assert rec["result"]["source"]["at"] == "generator_rx" and rec["result"]["source"]["devices"] == ["veth-tg0"]
    assert rec["result"]["pps"] > 0 and rec["forwarding"]["return_port"] == "ingress"
    lb = rec["lb"]
    assert lb["system"] == "bpf" and lb["plan"]["vips"] == 1 and lb["plan"]["reals_per_vip"] == 10
    assert lb["plan"]["ring_size"] == 65537 and lb["plan"]["ring_fill"] == "maglev"
    check = lb["outer_dst_check"]
    # every IPIP frame that came back went to a real of its VIP, with a right outer checksum and source
    assert check["ipip"] > 0 and check["all_reals"], check
    assert check["other_vip"] == check["not_real"] == check["bad_csum"] == check["bad_src"] == 0, check
    # the balancer's own counters: the flows repeat, so the per-CPU LRU table hits; each of the 1,000 clients' flows
    # misses once per CPU that saw it (the vlab's DUT has one receive CPU; its NAPI may run on the other)
    assert lb["plan"]["sources"]["count"] == 1000
    assert lb["lru_hits"] > 0 and 1000 <= lb["lru_misses"] <= 2000, lb
    assert lb["counters"]["tx"] == lb["lru_hits"] + lb["lru_misses"]
    assert lb["per_vip"] and lb["per_vip"][0]["packets"] == lb["counters"]["tx"]
    # the far side received about what the balancer sent back (the check saw each frame the count counted)
    assert check["real_ok"] >= rec["result"]["packets"], (check, rec["result"])
    # the generator sent from the 1,000 seeded source addresses (h34g's sources)
    assert rec["generator"]["sources"]["count"] == 1000, rec["generator"].get("sources")
    _validate(rec)
    # left as found: no XDP program on the vlab's ports, no namespace of the vlab
    links = subprocess.run(["ip", "-all", "netns", "exec", "ip", "-d", "link"], capture_output=True, text=True,
                           check=False).stdout  # fmt: skip
    assert "xdp_lb" not in links
    assert "xdplab-dut" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout

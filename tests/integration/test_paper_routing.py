# SPDX-License-Identifier: GPL-3.0-or-later
"""The routing experiment end to end (issue 27): the real playbooks/paper_routing.yml on inventories/vlab with a small
table (the first 20,000 prefixes of playbooks/reference/bgp_table_ipv4.txt.gz) and the single route, one trial each
of xdp_router (bpf/xdp_router: bpf_fib_lookup, devmap redirect) and linux_forward on one core, 4,000 destinations
drawn in the table, short windows (1 repetition, 2 samples of 1 s, the window's lead 5 s), no destinations sweep.
Checked: every trial ok and counted where the frames come back, XDP above Linux with both tables, the router's fib
return codes counted (success and redirected, nothing else but a few frames the stack answers), the table installed
once per table value and kept for the next trial that shares it, its trie in the record, the destinations' count,
seed and sha256 the same for every trial, the records valid against the schema. The namespaces are the vlab's fixed
xdplab-tg / xdplab-dut: run under the lab lock. Root.
"""

import json
import os
import subprocess

import jsonschema
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(ROOT, "docs", "trial_record.schema.json")
TINY = {
    "paper_routing_systems": ["xdp_router", "linux_forward"],
    "paper_routing_tables": ["single", "full"],
    "paper_routing_repetitions": 1,
    "paper_routing_destinations_sweep": [],
    "experiment_routing_table_limit": 20000,
    "experiment_samples": 2,
    "experiment_warmup": 1, "experiment_interval": 1, "experiment_drift_check": False,
    "experiment_generator_slack": 60, "experiment_window_lead": 5, "xdplab_testbed_dpdk": False, "xdplab_testbed_tuning": False,
}  # fmt: skip


@pytest.mark.root
def test_paper_routing_xdp_above_linux_with_both_tables(lab_playbook):
    records = lab_playbook("paper_routing", TINY, installed=(
        "bin/xdplab-trafficgen", "lib/bpf/xdp_router.bpf.o", "lib/bpf/xdp_bare_drop.bpf.o", "lib/bpf/xdp_bench.bpf.o"))
    with open(SCHEMA) as handle:
        validator = jsonschema.Draft202012Validator(json.load(handle))
    for rec in records:
        errors = [e.message for e in validator.iter_errors(rec)]
        assert not errors, (rec["point"], errors)
    assert [r["status"] for r in records] == ["ok"] * 4, [r.get("failure") for r in records]
    # the matrix ordered by table: the single table's trials first, then the full table's
    by = {(r["point"]["table"], r["point"]["system"]): r for r in records}
    assert [r["point"]["table"] for r in records] == ["single", "single", "full", "full"]
    for table in ("single", "full"):
        xdp, linux = by[(table, "xdp_router")], by[(table, "linux_forward")]
        assert xdp["result"]["pps"] > linux["result"]["pps"], (table, xdp["result"]["pps"], linux["result"]["pps"])
        for rec in (xdp, linux):
            assert rec["result"]["source"]["at"] == "generator_rx", rec["point"]
            assert rec["forwarding"]["received_pps"] > 0, rec["point"]
    routing = {key: rec["result"]["details"]["routing"] for key, rec in by.items()}
    # installed by the first trial of each table, kept for the second (the same table), removed after the last trial
    # that uses it: the full table's first trial removed nothing (the single's two routes had gone already)
    assert routing[("single", "xdp_router")]["installed_now"] and routing[("single", "xdp_router")]["added"] == 2
    assert not routing[("single", "linux_forward")]["installed_now"]
    assert routing[("full", "xdp_router")]["installed_now"]
    assert routing[("full", "xdp_router")]["added"] == 20000 and routing[("full", "xdp_router")]["removed"] == 0
    assert not routing[("full", "linux_forward")]["installed_now"]
    assert routing[("full", "xdp_router")]["routes"] == 20000 and routing[("full", "xdp_router")]["install_s"] > 0
    # the second trial of the full table took fib_routes' fast path (its stamp: neither the file nor the routes read),
    # same routes, shorter read than the first trial's (which read both before it installed)
    assert routing[("full", "linux_forward")]["routes"] == 20000 and routing[("full", "linux_forward")]["added"] == 0
    assert routing[("full", "linux_forward")]["read_s"] < routing[("full", "xdp_router")]["read_s"], routing
    # the trie of the full table is deeper and larger than the single route's
    assert routing[("full", "xdp_router")]["trie"]["prefixes"] > 20000 > routing[("single", "xdp_router")]["trie"]["prefixes"]
    assert routing[("full", "xdp_router")]["trie"]["max_depth"] > routing[("single", "xdp_router")]["trie"]["max_depth"]
    # one list of destinations for every trial
    dests = {json.dumps(r["destinations"], sort_keys=True) for r in routing.values()}
    assert len(dests) == 1 and json.loads(dests.pop())["count"] == 4000
    # the router's lookups: what it received was found and redirected (a few frames the stack answers aside)
    for table in ("single", "full"):
        fib = routing[(table, "xdp_router")]
        assert fib["fib_lookup"] == "direct" and fib["count_fib"] is True
        counts = fib["fib_counts"]
        assert counts["success"] > 0 and counts["redirected"] >= 0.99 * counts["success"], counts
        assert counts.get("no_neigh", 0) == 0 and counts.get("fwd_disabled", 0) == 0, counts
        program = by[(table, "xdp_router")]["provenance"]["program"]
        assert program["name"] == "xdp_router" and program["variables"]["count_fib"] == 1, program
    # the machine as found: no route of the module's protocol left in the DUT's namespace (when the lab is still up)
    out = subprocess.run(["ip", "-n", "xdplab-dut", "-4", "route", "show", "proto", "211"], capture_output=True, text=True,
                         check=False)  # fmt: skip
    assert out.stdout.strip() == "", out.stdout[:500]

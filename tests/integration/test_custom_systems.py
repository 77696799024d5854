# SPDX-License-Identifier: GPL-3.0-or-later
"""A user's system in one line of inventory (issue 26), end to end: the real playbooks/paper_drop.yml on
inventories/vlab with ``xdplab_custom_systems`` naming a user's nftables ruleset (tests/integration/files/
custom_drop.nft) beside the built-in linux_raw, one trial each (1 core, 1 repetition, 1 sample of 1 s). The custom
system's record is ok, counted (> 0 pps) by the ruleset's own counted drop, and carries the file's sha256; afterwards
no table of the ruleset is left in the DUT's namespace. Programs, packages and tuning are what the other lab tests
installed (skipped here unless missing); no report. The namespaces are the vlab's fixed xdplab-tg / xdplab-dut: run
under the lab lock. Root.
"""

import hashlib
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RULESET = os.path.join(ROOT, "tests", "integration", "files", "custom_drop.nft")
DUT_NS = "xdplab-dut"


# one short trial per system on one core, no DPDK and no host tuning on the virtual lab
SHORT = {"paper_drop_cores": [1], "paper_drop_repetitions": 1, "experiment_samples": 1, "experiment_warmup": 1,
         "experiment_interval": 1, "experiment_generator_slack": 5, "experiment_drift_check": False,
         "xdplab_testbed_dpdk": False, "xdplab_testbed_tuning": False}  # fmt: skip


@pytest.mark.root
def test_paper_drop_runs_a_users_nftables_ruleset(lab_playbook):
    with open(RULESET, "rb") as f:
        sha256 = hashlib.sha256(f.read()).hexdigest()
    extra = {
        "xdplab_custom_systems": {"my_rules": {"kind": "linux", "ruleset": RULESET, "label": "my nft rules"}},
        "xdplab_drop_systems": ["linux_raw"],
        **SHORT,
    }
    records = lab_playbook("paper_drop", extra, installed=("bin/xdplab-trafficgen",))
    by_system = {r["point"]["system"]: r for r in records}
    assert sorted(by_system) == ["linux_raw", "my_rules"], records
    rec = by_system["my_rules"]
    assert rec["status"] == "ok", rec.get("failure")
    assert rec["result"]["pps"] > 0
    assert rec["result"]["source"]["mode"] == "ruleset" and rec["result"]["source"]["table"] == "inet xdplab_user_drop"
    program = rec["provenance"]["program"]
    assert program["given"] == {"ruleset": RULESET, "sha256": sha256}
    assert program["sha256"] == sha256 and program["tables"] == ["inet xdplab_user_drop"]
    assert rec["provenance"]["system"]["label"] == "my nft rules"
    assert by_system["linux_raw"]["status"] == "ok" and by_system["linux_raw"]["result"]["pps"] > 0
    # teardown removed exactly the ruleset's tables (and linux_raw's own)
    tables = subprocess.run(["ip", "netns", "exec", DUT_NS, "nft", "list", "tables"], capture_output=True, text=True,
                            check=False).stdout  # fmt: skip
    assert "xdplab_user_drop" not in tables, tables


XSK_BENCH = "/usr/local/lib/xdplab/bin/xdplab-xsk-bench"


@pytest.mark.root
def test_paper_drop_runs_a_users_af_xdp_binary(lab_playbook):
    """The project's own xdplab-xsk-bench given as a user's binary (one process per queue, placeholders filled in),
    counted by the driver's XDP_REDIRECT counters, beside the built-in af_xdp_copy; no process of it is left after."""
    args = ["--dev", "{interface}", "--queues", "{queue}", "--cpus", "{cpu}", "--copy", "--drv-mode", "--poll",
            "--duration", "0"]  # fmt: skip
    extra = {
        "xdplab_custom_systems": {"my_xsk": {"kind": "af_xdp", "binary": XSK_BENCH, "args": args}},
        # the kind's built-in system beside it (its own task files since the kind dispatches to bench_ or user_)
        "xdplab_drop_systems": ["af_xdp_copy"],
        **SHORT,
    }
    records = lab_playbook("paper_drop", extra, installed=("bin/xdplab-trafficgen", "bin/xdplab-xsk-bench"))
    with open(XSK_BENCH, "rb") as f:  # installed by the run when it was not this tree's
        sha256 = hashlib.sha256(f.read()).hexdigest()
    by_system = {r["point"]["system"]: r for r in records}
    assert sorted(by_system) == ["af_xdp_copy", "my_xsk"], records
    assert by_system["af_xdp_copy"]["status"] == "ok" and by_system["af_xdp_copy"]["result"]["pps"] > 0
    rec = by_system["my_xsk"]
    assert rec["status"] == "ok", rec.get("failure")
    assert rec["result"]["pps"] > 0
    assert rec["result"]["source"]["kind"] == "driver_counters", rec["result"]["source"]
    program = rec["provenance"]["program"]
    assert program["given"] == {"binary": XSK_BENCH, "sha256": sha256}
    assert program["command"][1:6] == ["--dev", "veth-dut0", "--queues", "0", "--cpus"], program
    left = subprocess.run(["pgrep", "-f", "bin/custom/my_xsk"], capture_output=True, text=True, check=False).stdout
    assert left == "", left

# SPDX-License-Identifier: GPL-3.0-or-later
"""A user's XDP program as a system in one line of inventory (issue 26): examples/xdp_udp_port_filter.bpf.c.

The example's one entry (examples/custom_system.yml) and nothing else: the role bpf_programs builds it on the target
with the lab's flags, paper_drop runs it beside `xdp` (paper_drop adds the inventory's own systems to its list), and
ab_compare compares it against `xdp`. Its records carry the source's path and sha256 and the program's tag, and it is
counted by the driver's counters (the program has no map). Bad input (a name that shadows a built-in system, a
source that is not there) fails in the first play, before the lab is built.
"""

import hashlib
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_ab_ndr import namespaces, records  # the virtual lab's namespaces, a run's records

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = os.path.join(ROOT, "inventories", "vlab")
ANSIBLE_PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
EXAMPLE = os.path.join(ROOT, "examples", "custom_system.yml")
SOURCE = os.path.join(ROOT, "examples", "xdp_udp_port_filter.bpf.c")
FAST = {"xdplab_testbed_dpdk": False, "xdplab_testbed_tuning": False, "experiment_drift_check": False,
        "experiment_warmup": 0.5, "experiment_interval": 1, "experiment_samples": 1,
        "experiment_generator_slack": 60}  # fmt: skip


@pytest.fixture(autouse=True)
def needs_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, XDP)")


def run(playbook, extra, results, timeout=600, skip_tags=None, example=True):
    cmd = [ANSIBLE_PLAYBOOK, "-i", INVENTORY, os.path.join(ROOT, "playbooks", playbook), "-e", json.dumps(extra),
           "-e", "experiment_results_dir=%s" % results]  # fmt: skip
    if example:
        cmd[4:4] = ["-e", "@" + EXAMPLE]
    if skip_tags:
        cmd += ["--skip-tags", skip_tags]
    res = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=timeout)
    return res.returncode, " ".join((res.stdout + res.stderr).split())


@pytest.mark.parametrize(
    ("custom", "message"),
    [
        (
            {"xdp": {"kind": "xdp", "source": SOURCE, "program": "xdp_udp_port_filter"}},
            "xdplab_custom_systems: xdp: the name shadows the built-in system 'xdp'",
        ),
        (
            {"mine": {"kind": "xdp", "source": "/nonexistent/mine.bpf.c", "program": "xdp_mine"}},
            "xdplab_custom_systems: mine: source: /nonexistent/mine.bpf.c is not a file on the controller",
        ),
        ({"mine": {"kind": "xdp", "source": SOURCE}}, "xdplab_custom_systems: mine: program: missing"),
    ],
)
def test_bad_custom_system_fails_in_the_first_play(custom, message, tmp_path):
    before = namespaces()
    rc, out = run("paper_drop.yml", {"xdplab_custom_systems": custom}, tmp_path, timeout=120, example=False)
    assert rc != 0 and message in out, out[-2000:]
    assert "Build the virtual lab" not in out and namespaces() == before
    assert not list(tmp_path.rglob("*.jsonl"))


def test_the_example_through_paper_drop_and_ab_compare(tmp_path):
    """One lab for both: testbed_up.yml with the example builds it (and the program), paper_drop and ab_compare run on
    it with the testbed's plays skipped (tag testbed); whatever fails, testbed_down.yml takes it down."""
    before = namespaces()
    with open(SOURCE, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    drop = dict(FAST, xdplab_drop_systems=["xdp"], paper_drop_cores=[1], paper_drop_touch=["no_touch"],
                paper_drop_repetitions=1)  # fmt: skip
    try:
        rc, out = run("testbed_up.yml", FAST, tmp_path, skip_tags="controller,tuning,dut_software")
        assert rc == 0, out[-3000:]
        rc, out = run("paper_drop.yml", drop, tmp_path, skip_tags="testbed")
        assert rc == 0, out[-3000:]
        recs = {r["point"]["system"]: r for r in records(tmp_path / "paper_drop" / "dut" / "trials.jsonl")}
        assert set(recs) == {"xdp", "udp_port_filter"}
        mine = recs["udp_port_filter"]
        assert mine["status"] == "ok" and mine["result"]["pps"] > 0
        assert mine["result"]["source"]["kind"] == "driver_counters"
        program = mine["provenance"]["program"]
        assert program["given"]["sha256"] == sha and program["given"]["source"].endswith("xdp_udp_port_filter.bpf.c")
        assert program["name"] == "xdp_udp_port_filter" and len(program["tag"]) == 16
        assert program["object"].endswith("/lib/bpf/custom/udp_port_filter.bpf.o")
        assert mine["provenance"]["system"]["label"] == "udp_port_filter"
        report = (tmp_path / "paper_drop" / "dut" / "report.md").read_text()
        assert "udp_port_filter" in report

        ab = dict(FAST, ab_compare_samples=3, ab_compare_a={"system": "xdp", "name": "xdp"},
                  ab_compare_b={"system": "udp_port_filter", "name": "udp_port_filter"})  # fmt: skip
        rc, out = run("ab_compare.yml", ab, tmp_path, skip_tags="testbed")
        assert rc == 0, out[-3000:]
        base = tmp_path / "ab_compare" / "dut"
        ok = [r for r in records(base / "trials.jsonl") if r["status"] == "ok"]
        assert sorted(r["point"]["system"] for r in ok) == ["udp_port_filter"] * 3 + ["xdp"] * 3
        result = json.loads((base / "ab_compare.json").read_text())["result"]
        assert result["n_a"] == result["n_b"] == 3 and result["verdict"] in out
    finally:
        subprocess.run([ANSIBLE_PLAYBOOK, "-i", INVENTORY, os.path.join(ROOT, "playbooks", "testbed_down.yml")],
                       cwd=ROOT, env=ENV, capture_output=True, check=False, timeout=300)  # fmt: skip
    assert namespaces() == before

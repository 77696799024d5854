# SPDX-License-Identifier: GPL-3.0-or-later
"""A/B comparison and NDR/PDR search: bad input to the real playbooks fails in the first play.

Identical A and B, N < 3, an unknown variant key, a loss ratio outside [0, 1), a rate above the generator's
ceiling (an A/B variant's offered load, the search's highest load): each run of playbooks/ab_compare.yml or
playbooks/ndr_pdr.yml stops before the virtual lab is built, no namespace is created and nothing is recorded.
Then one real A/B (no_touch against read, N = 3, interleaved) and one real NDR/PDR search (MLRsearch, wide
goals on a narrow load range) on the virtual lab, with short trials (FAST). The two share one lab: the fixture
`vlab` brings it up once (testbed_up.yml), both playbooks run with the testbed's plays skipped (tag testbed:
testbed_up.yml's and testbed_down.yml's), and the fixture takes it down after the last of them.
"""

import json
import os
import subprocess

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = os.path.join(ROOT, "inventories", "vlab")
ANSIBLE_PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
# the shortest trials that still measure: 0.5 s warm-up, one 1 s sample; no DPDK, no host tuning on the vlab.
# The generator's slack is long: the trial stops the generator once it has measured, and on a loaded machine
# Ansible took 8-10 s from the generator's start to its stop (with 2-3 s the generator had ended before the
# DUT's window opened, and the trial counted 0).
FAST = {"xdplab_testbed_dpdk": False, "xdplab_testbed_tuning": False, "experiment_drift_check": False,
        "experiment_preflight": False, "experiment_warmup": 0.5, "experiment_interval": 1, "experiment_samples": 1,
        "experiment_generator_slack": 60}  # fmt: skip


@pytest.fixture(autouse=True)
def needs_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, XDP)")


def namespaces():
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return {n["name"] for n in json.loads(out or "[]") if n["name"].startswith("xdplab-")}


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run(playbook, extra, results, timeout=300, skip_tags=None):
    cmd = [ANSIBLE_PLAYBOOK, "-i", INVENTORY, os.path.join(ROOT, "playbooks", playbook), "-e", json.dumps(extra),
           "-e", "experiment_results_dir=%s" % results]  # fmt: skip
    if skip_tags:
        cmd += ["--skip-tags", skip_tags]
    res = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=timeout)
    return res.returncode, " ".join((res.stdout + res.stderr).split())


# what the lab tests skip in their own playbook runs: the fixture `vlab` has brought the testbed up and takes it down
ON_THE_LAB = "testbed,experiment_report"


@pytest.fixture(scope="module")
def vlab(tmp_path_factory, skip_tags):
    """The virtual lab, built once for this file's lab tests (testbed_up.yml), torn down after the last one."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, XDP)")
    before = namespaces()
    logs = tmp_path_factory.mktemp("vlab")
    up_skip = skip_tags(("bin/xdplab-trafficgen", "lib/bpf/xdp_bench.bpf.o"))
    rc, out = run("testbed_up.yml", FAST, logs, timeout=600, skip_tags=up_skip)
    try:
        assert rc == 0, out[-3000:]
        yield
    finally:
        rc_down, out_down = run("testbed_down.yml", {}, logs, timeout=300)
        assert rc_down == 0, out_down[-3000:]
        assert namespaces() == before  # left as found


@pytest.mark.parametrize(
    ("playbook", "extra", "message"),
    [
        (
            "ab_compare.yml",
            {"ab_compare_b": {"touch": "no_touch"}, "ab_compare_a": {"touch": "no_touch"}},
            "A and B are the same variant",
        ),
        ("ab_compare.yml", {"ab_compare_samples": 2}, "N = 2 samples per variant; at least 3"),
        ("ab_compare.yml", {"ab_compare_b": {"tuoch": "read"}}, "variant B has unknown key(s) tuoch"),
        (
            "ab_compare.yml",
            {"ab_compare_b": {"touch": "read", "offered_mpps": 50}, "xdplab_generator_ceiling_pps": 4000000},
            "offered_mpps 50.0 of A/B is above the generator's ceiling (4.0 Mpps",
        ),
        ("ndr_pdr.yml", {"ndr_pdr_goals": [{"name": "NDR", "loss_ratio": 1.0}]}, "loss_ratio must be in [0, 1)"),
        ("ndr_pdr.yml", {"ndr_pdr_max_mpps": 50, "xdplab_generator_ceiling_pps": 4000000}, "at most the generator's ceiling"),
    ],
)
def test_bad_input_before_anything_changes(playbook, extra, message, tmp_path):
    before = namespaces()
    rc, out = run(playbook, extra, tmp_path, timeout=120)
    assert rc != 0 and message in out, out[-2000:]
    assert "Build the virtual lab" not in out and namespaces() == before
    assert not list(tmp_path.rglob("*.jsonl"))


def test_ab_compare_no_touch_against_read(vlab, tmp_path):
    rc, out = run("ab_compare.yml", dict(FAST, ab_compare_samples=3), tmp_path, timeout=600, skip_tags=ON_THE_LAB)
    assert rc == 0, out[-3000:]
    base = tmp_path / "ab_compare" / "dut"
    recs = sorted((r for r in records(base / "trials.jsonl") if r["status"] == "ok"), key=lambda r: r["started_at"])
    assert [r["point"]["variant"] for r in recs] == ["A", "B", "B", "A", "A", "B"]  # interleaved, counterbalanced
    assert {r["point"]["touch"] for r in recs if r["point"]["variant"] == "B"} == {"read"}
    assert all(r["result"]["pps"] > 0 for r in recs)
    res = json.loads((base / "ab_compare.json").read_text())["result"]
    assert res["n_a"] == res["n_b"] == 3 and res["ci"][0] <= res["relative"] <= res["ci"][1]
    assert res["metric"] == "pps" and res["verdict"] in out and (base / "ab_compare.png").stat().st_size > 10000
    # the same records compared on the NAPI thread's CPU time per packet (schedstat): every trial has it
    samples = json.loads((base / "ab_compare.json").read_text())["samples"]
    assert all(s["cpu_ns_per_packet"] > 0 for v in samples.values() for s in v)


def test_ndr_pdr_one_search(vlab, tmp_path):
    # one search of XDP_DROP with wide goals (50 % width, one 1 s trial per load) on 0.01-0.16 Mpps: a few
    # trials, not CSIT's ~60 (the range holds both bounds on this machine: BENCHMARKS.md, NDR ~0.03, PDR ~0.08)
    extra = dict(FAST, ndr_pdr_systems=["xdp"], ndr_pdr_searches=1, ndr_pdr_max_trials=12, ndr_pdr_max_mpps=0.16,
                 ndr_pdr_goals=[{"name": "NDR", "loss_ratio": 0.0, "relative_width": 0.5, "duration_sum": 1.0},
                                {"name": "PDR", "loss_ratio": 0.005, "relative_width": 0.5, "duration_sum": 1.0}])  # fmt: skip
    rc, out = run("ndr_pdr.yml", extra, tmp_path, timeout=600, skip_tags=ON_THE_LAB)
    assert rc == 0, out[-3000:]
    base = tmp_path / "ndr_pdr" / "dut"
    summary = records(base / "ndr_pdr.jsonl")
    assert len(summary) == 1
    s = summary[0]
    assert 0 < s["max_load_pps"] < s["ceiling_pps"]
    # step 0 is the generator's ceiling, then every trial of the search is a record, in order
    steps = sorted(r["point"]["step"] for r in records(base / "trials.jsonl") if r["status"] == "ok")
    assert steps == list(range(0, s["trials"] + 1))
    ndr, pdr = s["goals"]
    for goal in (ndr, pdr):
        lo, hi = goal["lower_bound_pps"], goal["upper_bound_pps"]
        assert lo is None or s["min_load_pps"] <= lo <= s["max_load_pps"]
        assert lo is None or hi is None or lo < hi <= lo / (1 - goal["relative_width"]) * 1.001
    if ndr["lower_bound_pps"] and pdr["lower_bound_pps"]:
        assert pdr["lower_bound_pps"] >= ndr["lower_bound_pps"]  # a loss allowed: at least the NDR
    assert 0.5 < s["pacing"]["min"] <= s["pacing"]["max"] < 1.5  # the generator sent about what was asked

# SPDX-License-Identifier: GPL-3.0-or-later
"""Several DUTs from one controller: the real playbook on two virtual labs, the schedule read from the records.

inventories/vlab_two_duts: dut1 and dut2 share the generator tg (one port each): their trials must take turns, so
the records' measurement windows (CLOCK_MONOTONIC, the same clock for every namespace of this machine) do not
overlap. inventories/vlab_two_pairs: dut1 and dut2 each have their own generator (tg1, tg2): their trials run in
the same round, so the windows overlap. One XDP drop trial per DUT (1 repetition, 2 samples of 1 s); the lab's
programs, packages and tuning are what the other lab tests installed (skipped here unless missing), no report.
Each run is the whole playbook (build the lab, plan, schedule, trial, tear down): ~60-80 module calls at ~1 s each
on a 2-CPU machine, so the two cost ~2-4 min together (docs/BENCHMARKS.md "Several DUTs").

The namespaces are xdplab-2d-* and xdplab-2g-*, but the CPUs are the machine's: run under the lab lock. Root.
"""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE_PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
# the programs a run needs; the role bpf_programs is skipped when they are installed from this tree
INSTALLED = ("bin/xdplab-trafficgen", "lib/bpf/xdp_bench.bpf.o")
TINY = {
    "paper_drop_systems": ["xdp"], "paper_drop_repetitions": 1, "paper_drop_touch": ["no_touch"],
    "experiment_samples": 2, "experiment_warmup": 1, "experiment_interval": 1, "experiment_drift_check": False,
    # a busy 2-CPU machine may take longer than warmup + samples between starting the generator and measuring
    "experiment_generator_slack": 60, "xdplab_testbed_dpdk": False, "xdplab_testbed_tuning": False,
    # the hosts' read-only preflight is test_preflight's; the generator-port check still runs (inventory only)
    "experiment_preflight": False,
}  # fmt: skip


@pytest.fixture(autouse=True)
def needs_venv():
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.skip("needs the repository's .venv (make venv)")


def needs_root():
    if os.geteuid() != 0:
        pytest.skip("needs root")


def lab_namespaces(prefix):
    try:
        return sorted(n for n in os.listdir("/run/netns") if n.startswith(prefix))
    except FileNotFoundError:
        return []


def run(inventory, results, *extra, skip=""):
    # skip: what the other lab tests did (skip_tags), and the lab's packages (make system-deps')
    res = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", os.path.join(ROOT, "inventories", inventory), os.path.join(ROOT, "playbooks", "paper_drop.yml"),
         "-e", json.dumps(TINY), "-e", "experiment_results_dir=%s" % results, "--skip-tags", skip, *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    windows = {}
    for dut in ("dut1", "dut2"):
        with open(os.path.join(results, "paper_drop", dut, "trials.jsonl")) as f:
            records = [json.loads(line) for line in f if line.strip()]
        assert [r["status"] for r in records] == ["ok"], records
        record = records[0]
        assert record["result"]["pps"] > 0, record["result"]
        assert record["provenance"]["generator"]["host"] == ("tg" if inventory == "vlab_two_duts" else "tg" + dut[-1])
        # each DUT was fed through its own port
        assert "veth-tg" + dut[-1] in record["generator"]["command"]
        windows[dut] = (record["result"]["window"]["start"], record["result"]["window"]["end"])
    return out, windows


def assert_left_as_found(prefix):
    assert lab_namespaces(prefix) == []
    assert not os.path.exists("/run/xdplab/generator") or not [
        f for _d, _s, files in os.walk("/run/xdplab/generator") for f in files if f.endswith(".state.json")
    ]


@pytest.mark.root
def test_duts_sharing_a_generator_take_turns(tmp_path, skip_tags):
    needs_root()
    out, w = run("vlab_two_duts", tmp_path, skip=skip_tags(INSTALLED, "vlab_install"))
    (s1, e1), (s2, e2) = w["dut1"], w["dut2"]
    assert e1 <= s2 or e2 <= s1, "shared-generator windows overlap: %s" % w
    assert "lane tg: dut1, dut2 take turns" in out
    assert "dut1: no trial failed; dut2: no trial failed" in " ".join(out.split())
    assert_left_as_found("xdplab-2d-")


@pytest.mark.root
def test_duts_with_their_own_generators_measure_at_once(tmp_path, skip_tags):
    needs_root()
    out, w = run("vlab_two_pairs", tmp_path, skip=skip_tags(INSTALLED, "vlab_install"))
    (s1, e1), (s2, e2) = w["dut1"], w["dut2"]
    overlap = min(e1, e2) - max(s1, s2)
    assert overlap > 0, "own-generator windows do not overlap: %s" % w
    assert "1 trial(s) of dut1 in 1 round(s)" in out
    assert_left_as_found("xdplab-2g-")


def test_two_duts_claiming_one_trex_port_are_refused_naming_both(tmp_path):
    """The hardware inventory with a second DUT on the same T-Rex port: refused before anything is read or changed."""
    extra = tmp_path / "second_dut.yml"
    second = {
        "xdplab_dut_interface": "cx6p1", "xdplab_dut_cpus": [0, 1, 2, 3], "xdplab_dut_mac": "ec:0d:9a:00:01:01",
        "xdplab_dut_ip": "198.18.1.2", "xdplab_generator_host": "tg", "xdplab_xdp_mode": "native",
        # T-Rex port 1 is 0000:03:00.1, but the DUT asks for port 0, which the lab's dut sends on
        "xdplab_dut_generator": {"interface": "0000:03:00.1", "options": {"port": 0}},
    }  # fmt: skip
    extra.write_text(json.dumps({"all": {"children": {"duts": {"hosts": {"dut2": second}}}}}))
    res = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", os.path.join(ROOT, "inventories", "lab"), "-i", str(extra),
         os.path.join(ROOT, "playbooks", "paper_drop.yml"), "--check", "-e", "ansible_connection=local",
         "-e", "ansible_python_interpreter=" + os.path.join(ROOT, ".venv", "bin", "python"),
         "-e", "experiment_results_dir=%s" % (tmp_path / "results")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0
    assert (
        "1 generator port(s) claimed twice, before anything changed: - dut (0000:03:00.0 (sends)) and dut2 (port 0 "
        "(sends)) claim the same port 0 of generator tg" in out.replace("\\n", " ")
    ), out[-3000:]
    # it stopped in the first play: no host was read, nothing built or recorded
    assert "PLAY [Controller tools" not in out and "Read each generator of the DUTs" not in out
    assert not (tmp_path / "results").exists()

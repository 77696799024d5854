"""Bad input to the experiment gets a clear error before anything on the system changes."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))


def namespaces():
    """The namespaces inventories/vlab would create (other tests may make their own meanwhile)."""
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return {n["name"] for n in json.loads(out or "[]") if n["name"].startswith("xdplab-")}


def run_paper_drop(extra, tmp_path):
    before = namespaces()
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/vlab", "playbooks/paper_drop.yml", "-e", json.dumps(extra),
         "-e", "experiment_results_dir=%s" % tmp_path],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-2000:]
    # stopped in the first play: no lab was built, nothing recorded
    assert "Build the virtual lab" not in out
    assert namespaces() == before
    assert not list(tmp_path.rglob("*.jsonl"))
    return out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"paper_drop_cores": [1, 3]}, "the matrix asks for 3 cores but dut receives on 1 CPU(s)"),
        ({"paper_drop_cores": [0]}, "cores (= stream_count, one flow per DUT core) must be whole numbers >= 1"),
        ({"paper_drop_cores": ["two"]}, "cores (= stream_count, one flow per DUT core) must be whole numbers >= 1"),
        ({"paper_drop_repetitions": 0}, "repetitions must be a whole number >= 1"),
        ({"paper_drop_packet_len": [32]}, "packet_len must be whole numbers from 64 to 1518"),
        ({"paper_drop_touch": ["lick"]}, "unknown touch mode(s) ['lick']"),
        ({"paper_drop_systems": ["vpp"]}, "unknown system 'vpp': the matrix's systems must be names of experiment_systems"),
        ({"paper_drop_systems": ["af_xdp_zerocopy"]}, "veth (the virtual lab's DUT port) has no AF_XDP zero-copy"),
        ({"xdplab_dut_cpus": []}, "dut: xdplab_dut_cpus must list the CPU numbers that receive traffic"),
        ({"xdplab_dut_cpus": ["one"]}, "dut: xdplab_dut_cpus must list the CPU numbers that receive traffic"),
    ],
)
def test_bad_matrix_is_refused_before_the_lab_is_built(extra, message, tmp_path):
    assert message in run_paper_drop(extra, tmp_path)

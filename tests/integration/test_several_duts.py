# SPDX-License-Identifier: GPL-3.0-or-later
"""Several DUTs from one controller: what the playbook refuses before anything changes.

Two DUTs that claim the same port of one T-Rex generator are refused in the first play, naming both: the lab
inventory (inventories/lab) with a second DUT, in --check, this machine standing in for the hosts (connection
local). The schedule's runs on the virtual lab (vlab_two_duts: windows never overlap; vlab_two_pairs: they do)
are docs/BENCHMARKS.md "Several DUTs".
"""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE_PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")


@pytest.fixture(autouse=True)
def needs_venv():
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.skip("needs the repository's .venv (make venv)")


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

"""The hardware inventory (inventories/lab) is accepted by the same playbooks.

There is no ConnectX-5 DUT or T-Rex generator here, so the check run lets this machine stand in for
both hosts (connection local): that exercises every play, the input validation and the role
bpf_programs in check mode, up to the first task that needs the hardware. Check mode measures nothing.
"""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))


def playbook(*args):
    return subprocess.run(
        [PLAYBOOK, "-i", "inventories/lab", "playbooks/paper_drop.yml", *args],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip


def test_syntax_check():
    res = playbook("--syntax-check")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.root
def test_check_mode_plans_the_paper_matrix(tmp_path):
    # no mlx5p1 and 2 CPUs instead of 6 here: the tuning and its drift check are the lab's own, and the host
    # preflight (which refuses exactly that, see test_preflight.py) is skipped to see the plan
    res = playbook("--check", "-e", "experiment_preflight=false", "-e", "ansible_connection=local",
                   "-e", "ansible_python_interpreter=" + sys.executable,
                   "-e", "experiment_results_dir=%s" % tmp_path, "-e", "xdplab_testbed_tuning=false",
                   "-e", "experiment_drift_check=false", "-e", "trex_check_pci=false", "-e", "trex_service=false")  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    # planned and not run: xdp 6 cores x 2 touch modes, dpdk 2 variants x 5 cores, 4 other systems x 6 cores
    # (vars/paper_drop.yml), x 3 repetitions
    assert "138 trial(s) to run" in out
    assert "Record the trial" not in out
    # the generator backend trex is registered: no warning that a real run would stop at it
    assert "a real run would stop here" not in out
    assert not list(tmp_path.rglob("trials.jsonl"))


def test_a_real_run_refuses_an_unknown_backend_before_changing_anything(tmp_path):
    # the lab's own backend (trex) is known, so name one that is not (extra vars win over host_vars)
    res = playbook("-e", "ansible_connection=local", "-e", "ansible_python_interpreter=" + sys.executable,
                   "-e", "experiment_results_dir=%s" % tmp_path, "-e", "xdplab_generator_backend=pktgen")  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0
    assert re.search(r"tg: xdplab_generator_backend: '+pktgen'+ is not a backend of xdplab.testbed.traffic_generator", out)
    assert re.search(r"known: trex, xdp_live", out)
    # it failed in the first play: no testbed play ran
    assert "Build the data-plane programs" not in out


TREX_RENDER = """
- name: Render the lab generator's T-Rex configuration into a temporary directory
  hosts: tg
  gather_facts: false
  roles:
    - role: xdplab.testbed.trex
      vars:
        trex_install: false
        trex_service: false
        trex_check_pci: false
        trex_cfg_path: {d}/trex_cfg.yaml
        trex_systemd_dir: {d}
        trex_runner_path: {d}/bin/xdplab-trex-run
        trex_lib_dir: {d}/trex
"""


@pytest.mark.root
def test_the_lab_generators_trex_cfg_renders_from_the_inventory(tmp_path):
    """inventories/lab/group_vars/generators/trex.yml + host_vars -> /etc/trex_cfg.yaml (rendered into tmp_path).

    trex_check_pci is off: this machine has no 0000:03:00.x devices (on the real generator preflight checks them).
    """
    import yaml

    play = tmp_path / "render.yml"
    play.write_text(TREX_RENDER.format(d=tmp_path))
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/lab", str(play), "-e", "ansible_connection=local",
         "-e", "ansible_python_interpreter=" + sys.executable, "-e", "ansible_become=false"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    cfg = yaml.safe_load((tmp_path / "trex_cfg.yaml").read_text())
    assert cfg[0]["interfaces"] == ["0000:03:00.0", "0000:03:00.1"]
    assert cfg[0]["port_info"][0] == {"dest_mac": "ec:0d:9a:00:00:01", "src_mac": "ec:0d:9a:00:00:11"}
    assert cfg[0]["c"] == 6 and cfg[0]["platform"]["dual_if"] == [{"socket": 0, "threads": [2, 3, 4, 5, 6, 7]}]
    unit = (tmp_path / "trex.service").read_text().splitlines()
    assert "ExecStart=/opt/trex/v3.04/t-rex-64 -i --cfg %s/trex_cfg.yaml" % tmp_path in unit


@pytest.mark.root
def test_site_check_mode_plans_the_whole_testbed():
    """site.yml --check against the lab: kernel, T-Rex, bpf programs, DPDK planned in order.

    This machine stands in for both hosts, so what needs the lab's hardware is switched off and
    said so: T-Rex's PCI check (no 0000:03:00.x here), its systemd unit (no systemd as PID 1), and the
    tuning and drift-check phases (no mlx5p1, 2 CPUs instead of 6).
    """
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/lab", "playbooks/site.yml", "--check", "-e", "ansible_connection=local",
         "-e", "ansible_python_interpreter=" + sys.executable, "-e", "trex_check_pci=false", "-e", "trex_service=false",
         "--skip-tags", "tuning,drift_check"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    # the phases ran in order, planning only
    order = [out.find(s) for s in ("Kernel from bpf-next", "T-Rex on the generators", "Build the data-plane programs",
                                   "Software the DUTs")]  # fmt: skip
    assert -1 not in order and order == sorted(order), order
    flat = " ".join(out.split())
    assert "would clone or update git://git.kernel.org/pub/scm/linux/kernel/git/bpf/bpf-next.git at 75d4e704fa8d" in flat
    assert "WARNING: trex_archive_sha256 is empty" in out

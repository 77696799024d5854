"""Role xdplab.testbed.bpf_programs in check mode on a target where nothing was ever built.

A first `--check` run against a new host is what a careful user does first; it used to fail at
`make -q -C <build dir>` because check mode does not make the build directory. The role's
directories point into tmp_path, so nothing outside it changes, and check mode must create nothing.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

# no_traffic: make test runs this file beside molecule's scenarios (pyproject.toml)
pytestmark = [pytest.mark.root, pytest.mark.no_traffic]

PLAY = """---
- name: Throwaway play for the bpf_programs role
  hosts: localhost
  connection: local
  gather_facts: true
  roles:
    - role: xdplab.testbed.bpf_programs
  post_tasks:
    - name: Hand the published fact to the test
      ansible.builtin.copy:
        content: "{{ bpf_programs_installed | to_json }}"
        dest: "{{ fact_file }}"
        mode: "0644"
      check_mode: false
"""


def test_check_mode_on_a_target_never_built_plans_the_build_and_creates_nothing(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    extra = {
        "bpf_programs_build_dir": str(build),
        "bpf_programs_prefix": str(prefix),
        "bpf_programs_install_packages": False,
        "ansible_python_interpreter": sys.executable,
        "fact_file": str(tmp_path / "installed.json"),
    }
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    done = subprocess.run(
        [PLAYBOOK, "-i", "localhost,", "--check", "-e", json.dumps(extra), str(play)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # the yaml callback folds long messages: compare with whitespace collapsed
    assert f"would build {build} and install to {prefix}" in " ".join(done.stdout.split()), done.stdout[-4000:]
    # nothing was built, so the published fact says every file is missing
    installed = json.loads((tmp_path / "installed.json").read_text())
    assert installed["trafficgen"]["exists"] is False and not any(o["exists"] for o in installed["objects"].values())
    assert not build.exists() and not prefix.exists(), "check mode must create nothing"

# SPDX-License-Identifier: GPL-3.0-or-later
"""A/B comparison and NDR/PDR search: bad input to the real playbooks fails in the first play.

Identical A and B, N < 3, an unknown variant key, a loss ratio outside [0, 1), a rate above the generator's
ceiling: each run of playbooks/ab_compare.yml or playbooks/ndr_pdr.yml stops before the virtual lab is built, no
namespace is created and nothing is recorded. (The tests of one A/B and one search on the lab are not in yet:
the lab lock was not free while this was written.)
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


@pytest.fixture(autouse=True)
def needs_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, XDP)")


def namespaces():
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return {n["name"] for n in json.loads(out or "[]") if n["name"].startswith("xdplab-")}


def run(playbook, extra, results, timeout=300):
    res = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", INVENTORY, os.path.join(ROOT, "playbooks", playbook), "-e", json.dumps(extra),
         "-e", "experiment_results_dir=%s" % results],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=timeout,
    )  # fmt: skip
    return res.returncode, " ".join((res.stdout + res.stderr).split())


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

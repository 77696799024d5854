"""The xdplab.testbed.netns connection against a real network namespace (root only)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (creates network namespaces)"),
]


def sh(*argv):
    return subprocess.run(argv, capture_output=True, text=True, check=True)


@pytest.fixture
def namespace(netlab):
    # one namespace holding both ends xv-it0 (up, with an address) / xv-it1; torn down by the netlab fixture
    lab = netlab("xv-it", single=True, pairs=[("xv-it0", "xv-it1")], macs={"xv-it0": "02:00:00:00:77:01"},
                 addresses={"xv-it0": "198.18.7.1/30"}, lo=False, up=["xv-it0"])  # fmt: skip
    return lab.ns


def ansible(tmp_path, inventory, host, *args):
    """Run ad-hoc `ansible` from the repository root; return (process, the host's JSON result from --tree)."""
    tree = tmp_path / "tree"
    done = subprocess.run(
        [os.path.join(BIN, "ansible"), "-i", str(inventory), "--tree", str(tree), host, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg")),
        check=False,
    )
    result_file = tree / host
    result = json.loads(result_file.read_text()) if result_file.exists() else None
    return done, result


def inventory(tmp_path, hosts):
    lines = [
        "all:",
        "  vars:",
        "    ansible_connection: xdplab.testbed.netns",
        '    ansible_python_interpreter: "{{ ansible_playbook_python }}"',
        "  hosts:",
    ]
    for host, ns in hosts.items():
        lines += [f"    {host}:", f"      ansible_host: {ns}"]
    path = tmp_path / "hosts.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_setup_facts_show_the_namespace_interfaces(tmp_path, namespace):
    inv = inventory(tmp_path, {"h": namespace})
    done, result = ansible(tmp_path, inv, "h", "-m", "ansible.builtin.setup", "-a", "gather_subset=network")
    assert done.returncode == 0, done.stdout + done.stderr
    facts = result["ansible_facts"]
    assert sorted(facts["ansible_interfaces"]) == ["lo", "xv-it0", "xv-it1"]
    assert facts["ansible_xv_it0"]["macaddress"] == "02:00:00:00:77:01"
    assert facts["ansible_xv_it0"]["ipv4"]["address"] == "198.18.7.1"
    # the root namespace's interfaces are not visible
    root_ifaces = set(os.listdir("/sys/class/net"))
    assert not (root_ifaces - {"lo"}) & set(facts["ansible_interfaces"])


def test_command_runs_inside_the_namespace(tmp_path, namespace):
    inv = inventory(tmp_path, {"h": namespace})
    done, result = ansible(tmp_path, inv, "h", "-m", "ansible.builtin.command", "-a", "ip -j link")
    assert done.returncode == 0, done.stdout + done.stderr
    links = json.loads(result["stdout"])
    assert sorted(link["ifname"] for link in links) == ["lo", "xv-it0", "xv-it1"]


def test_netns_name_overrides_ansible_host(tmp_path, namespace):
    inv = inventory(tmp_path, {"h": "not-a-namespace"})
    done, result = ansible(
        tmp_path, inv, "h", "-e", f"ansible_netns_name={namespace}", "-m", "ansible.builtin.command", "-a", "ip -j link"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "xv-it0" in result["stdout"]


def test_missing_namespace_is_unreachable_with_a_clear_message(tmp_path, namespace):
    inv = inventory(tmp_path, {"gone": "xv-it-missing"})
    done, result = ansible(tmp_path, inv, "gone", "-m", "ansible.builtin.ping")
    assert done.returncode != 0
    assert result.get("unreachable") is True
    assert "network namespace 'xv-it-missing' does not exist" in result["msg"]
    assert "ansible-playbook playbooks/vlab.yml" in result["msg"]
    assert namespace in result["msg"]  # existing namespaces are listed

# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to the roles host_tuning and nic gets a clear error naming the culprit before anything changes.

ansible-playbook runs both roles against real network namespaces ``xd-tu-<random>`` (the collection's netns
connection), each holding a veth pair n0/n1 with 4 queues, one inventory host per namespace: the seven refused
inputs are seven hosts of one run, each refused with its own message and its sysctl and channels read back
unchanged; the converge and the GRUB-file hosts share their runs. The roles' success path (converge,
idempotence, drift check) is also molecule/tuning.
"""

import json
import os
import re
import subprocess
import sys

import pytest

# no_traffic: make test runs this file beside molecule's scenarios (pyproject.toml)
pytestmark = [pytest.mark.root, pytest.mark.no_traffic]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")

PLAY = """---
- name: Tune a namespace
  hosts: tu
  gather_facts: false
  roles:
    - role: xdplab.testbed.host_tuning
    - role: xdplab.testbed.nic
"""


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def namespace(netlab):
    # one namespace holding both ends n0/n1 (4 queues each, left down); torn down by the netlab fixture
    return netlab("xd-tu", single=True, pairs=[("n0", "n1")], queues=4, lo=False, up=False).ns


def inventory(tmp_path, hosts):
    """hosts.yml with group tu (the play's hosts): {name: (namespace, variables)}; and play.yml."""
    (tmp_path / "hosts.yml").write_text(json.dumps({"all": {"children": {"tu": {"hosts": {
        name: {"ansible_host": ns, "ansible_connection": "xdplab.testbed.netns",
               "ansible_python_interpreter": sys.executable, **variables}
        for name, (ns, variables) in hosts.items()}}}}}))  # fmt: skip
    (tmp_path / "play.yml").write_text(PLAY)


class Run:
    """One ansible-playbook run over the inventory; its results one JSON line each, so every line of a host's
    results carries its [name]."""

    def __init__(self, tmp_path, *args, playbook=None, extra=None):
        argv = [PLAYBOOK, *args, "-i", str(tmp_path / "hosts.yml"), playbook or str(tmp_path / "play.yml")]
        res = subprocess.run(argv + (["-e", json.dumps(extra)] if extra else []), cwd=ROOT, timeout=300, check=False,
                             env=dict(ENV, ANSIBLE_CALLBACK_RESULT_FORMAT="json"), capture_output=True, text=True)  # fmt: skip
        self.rc, self.raw = res.returncode, res.stdout + res.stderr
        self.out = " ".join(self.raw.split())
        self.recap = dict(re.findall(r"^(\S+)\s+:\s+(ok=.*)$", self.raw, re.M))

    def of(self, host):
        """What the run said about host: its result lines, whitespace folded."""
        return " ".join(" ".join(line for line in self.raw.splitlines() if "[%s]" % host in line).split())


def state(ns):
    ratelimit = sh("ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.icmp_ratelimit").stdout.strip()
    cur = sh("ip", "netns", "exec", ns, "ethtool", "-l", "n0").stdout.split("Current hardware settings:")[1]
    return ratelimit, cur.split()


GOOD = {"host_tuning_sysctls": {"net.ipv4.icmp_ratelimit": 0}, "host_tuning_sysctl_persist": False,
        "nic_unsupported": "skip", "nic_ports": [{"name": "n0", "channels": {"rx": 2, "tx": 2}}]}


# Each bad input and the message that must name it; {host} is the inventory host that got it.
REFUSED = [
    ({"host_tuning_isolcpus": [0, 64, 99]}, "host_tuning_isolcpus names CPU(s) 64, 99 that do not exist on {host}"),
    ({"host_tuning_governor": "turbo"}, "unknown governor 'turbo' on {host}"),
    ({"host_tuning_sysctls": {"net.ipv4.no_such_key": 1}}, "unknown sysctl(s) net.ipv4.no_such_key on {host}"),
    ({"nic_ports": [{"name": "n0", "pci": "03:00.0"}]}, "needs name (an interface, at most 15 characters); pci as "
                                                        "domain:bus:device.function like 0000:03:00.0 (got 03:00.0)"),
    ({"nic_ports": [{"name": "n0", "mac": "02:58:44:54:55"}]}, "mac as a unicast MAC like ec:0d:9a:00:00:01 "
                                                               "(got 02:58:44:54:55)"),
    ({"nic_ports": [{"name": "n0", "channels": {"rx": 9}}]}, "n0: channels.rx=9 exceeds the maximum 4 (ethtool -l n0)"),
    ({"nic_ports": [{"name": "n0", "channels": {"rx": 2}}, {"name": "n1", "channels": {"tx": 5}}]},
     "n1: channels.tx=5 exceeds the maximum 4"),
]


def test_refused_before_any_change(tmp_path, netlab):
    # One ansible-playbook run over one namespace per bad input (hosts tu0..tu6, each with its own variables):
    # one start of Ansible instead of seven. Each host must fail with its own message and keep its state.
    hosts = {"tu%d" % i: (namespace(netlab), {**GOOD, **extra}) for i, (extra, _message) in enumerate(REFUSED)}
    inventory(tmp_path, hosts)
    before = {host: state(ns) for host, (ns, _variables) in hosts.items()}
    run = Run(tmp_path, "-f", str(len(hosts)))
    assert run.rc != 0, run.raw[-3000:]
    wrong = []
    for (host, (ns, _variables)), (extra, message) in zip(hosts.items(), REFUSED):
        if "failed=0" in run.recap.get(host, "failed=0"):
            wrong.append("%s (%s) was not refused: %s" % (host, extra, run.recap.get(host)))
        if message.format(host=host) not in run.of(host):
            wrong.append("%s (%s) lacks %r in: %s" % (host, extra, message.format(host=host), run.of(host)[-1500:]))
        # host_tuning refuses before its first change; a refused nic run leaves the channels alone
        after = state(ns)
        if not any(k.startswith("nic_") for k in extra):
            if after != before[host]:
                wrong.append("%s changed %s -> %s" % (host, before[host], after))
        elif after[1] != before[host][1]:
            wrong.append("%s changed its channels %s -> %s" % (host, before[host][1], after[1]))
    assert not wrong, "\n".join(wrong)


def test_converge_check_mode_idempotence_and_a_grub_file(tmp_path, netlab):
    # Two hosts in the same runs: conv converges GOOD (check mode alone first), grub edits a GRUB defaults file.
    # No GRUB on this VM: the role edits a GRUB defaults file in the test's directory and "regenerates" with touch.
    grub, marker = tmp_path / "grub", tmp_path / "update-grub-ran"
    grub.write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet isolcpus=3 splash"\nGRUB_CMDLINE_LINUX=""\n')
    extra = {"host_tuning_isolcpus": [1], "host_tuning_nohz_full": [1], "host_tuning_rcu_nocbs": [0, 1],
             "host_tuning_grub_file": str(grub), "host_tuning_grub_update_command": ["touch", str(marker)],
             "nic_ports": []}
    tu = namespace(netlab)
    inventory(tmp_path, {"conv": (tu, GOOD), "grub": (namespace(netlab), extra)})
    before = state(tu)
    run = Run(tmp_path, "--check", "--limit", "conv")
    assert run.rc == 0, run.raw[-3000:]
    assert state(tu) == before
    run = Run(tmp_path)
    assert run.rc == 0, run.raw[-3000:]
    assert "changed=2" in run.recap["conv"], run.raw[-3000:]
    assert state(tu)[0] == "0" and state(tu)[1][:4] == ["RX:", "2", "TX:", "2"]
    assert grub.read_text().splitlines()[1] == \
        'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash isolcpus=1 nohz_full=1 rcu_nocbs=0,1"'
    # (a debug result prints over several lines: looked for in the whole output, as the host's own message)
    assert marker.exists() and "grub: the kernel command line in" in run.out and "REBOOT to apply it" in run.out, \
        run.raw[-3000:]
    marker.unlink()
    run = Run(tmp_path)
    assert run.rc == 0, run.raw[-3000:]
    assert "changed=0" in run.recap["conv"] and "changed=0" in run.recap["grub"], run.raw[-3000:]
    assert not marker.exists()
    # the running kernel was not booted with it: the drift check names each item
    run = Run(tmp_path, playbook=os.path.join(ROOT, "playbooks", "drift_check.yml"),
              extra={**extra, "xdplab_drift_hosts": "grub"})
    assert run.rc != 0, run.raw[-3000:]
    assert "grub drifted from its tuning, refusing to measure (3 item(s)): cmdline.isolcpus expected 1, actual absent" \
        in run.out, run.raw[-3000:]
    assert "cmdline.rcu_nocbs expected 0,1, actual absent" in run.out

# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to the roles host_tuning and nic gets a clear error naming the culprit before anything changes.

ansible-playbook runs both roles against a real network namespace ``xd-tu-<random>`` (the collection's netns
connection) holding a veth pair n0/n1 with 4 queues; after each refused run the namespace's sysctl and the veth's
channels are read back unchanged. The roles' success path (converge, idempotence, drift check) is molecule/tuning.
"""

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.root

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


@pytest.fixture
def lab(tmp_path, netlab):
    # one namespace holding both ends n0/n1 (4 queues each, left down); torn down by the netlab fixture
    ns = netlab("xd-tu", single=True, pairs=[("n0", "n1")], queues=4, lo=False, up=False).ns
    (tmp_path / "hosts.yml").write_text(json.dumps({"all": {"hosts": {"tu": {
        "ansible_host": ns, "ansible_connection": "xdplab.testbed.netns",
        "ansible_python_interpreter": sys.executable}}}}))
    (tmp_path / "play.yml").write_text(PLAY)
    return {"ns": ns, "tmp": tmp_path}


def state(lab):
    ratelimit = sh("ip", "netns", "exec", lab["ns"], "sysctl", "-n", "net.ipv4.icmp_ratelimit").stdout.strip()
    cur = sh("ip", "netns", "exec", lab["ns"], "ethtool", "-l", "n0").stdout.split("Current hardware settings:")[1]
    return ratelimit, cur.split()


def play(lab, extra, *args):
    res = subprocess.run([PLAYBOOK, *args, "-i", str(lab["tmp"] / "hosts.yml"), str(lab["tmp"] / "play.yml"),
                          "-e", json.dumps(extra)], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300, check=False)
    return res.returncode, " ".join((res.stdout + res.stderr).split())


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
    hosts, labs = {}, []
    for i, (extra, _message) in enumerate(REFUSED):
        ns = netlab("xd-tu", single=True, pairs=[("n0", "n1")], queues=4, lo=False, up=False).ns
        labs.append({"ns": ns, "tmp": tmp_path})
        hosts["tu%d" % i] = {"ansible_host": ns, "ansible_connection": "xdplab.testbed.netns",
                             "ansible_python_interpreter": sys.executable, **GOOD, **extra}
    (tmp_path / "hosts.yml").write_text(json.dumps({"all": {"children": {"tu": {"hosts": hosts}}}}))  # group tu
    (tmp_path / "play.yml").write_text(PLAY)
    before = [state(lab) for lab in labs]
    # one JSON result per line, so every line of a host's results carries its [name]
    res = subprocess.run([PLAYBOOK, "-f", str(len(hosts)), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                         cwd=ROOT, env=dict(ENV, ANSIBLE_CALLBACK_RESULT_FORMAT="json"), capture_output=True,
                         text=True, timeout=300, check=False)  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    recap = dict(re.findall(r"^(tu\d+)\s+:\s+(.*)$", out, re.M))
    wrong = []
    for i, ((extra, message), lab) in enumerate(zip(REFUSED, labs)):
        host = "tu%d" % i
        mine = " ".join(" ".join(line for line in out.splitlines() if "[%s]" % host in line).split())
        if "failed=0" in recap.get(host, "failed=0"):
            wrong.append("%s (%s) was not refused: %s" % (host, extra, recap.get(host)))
        if message.format(host=host) not in mine:
            wrong.append("%s (%s) lacks %r in: %s" % (host, extra, message.format(host=host), mine[-1500:]))
        # host_tuning refuses before its first change; a refused nic run leaves the channels alone
        after = state(lab)
        if not any(k.startswith("nic_") for k in extra):
            if after != before[i]:
                wrong.append("%s changed %s -> %s" % (host, before[i], after))
        elif after[1] != before[i][1]:
            wrong.append("%s changed its channels %s -> %s" % (host, before[i][1], after[1]))
    assert not wrong, "\n".join(wrong)


def test_converge_check_mode_and_idempotence(lab):
    before = state(lab)
    rc, out = play(lab, GOOD, "--check")
    assert rc == 0, out[-3000:]
    assert state(lab) == before
    rc, out = play(lab, GOOD)
    assert rc == 0 and "changed=2" in out, out[-3000:]
    assert state(lab)[0] == "0" and state(lab)[1][:4] == ["RX:", "2", "TX:", "2"]
    rc, out = play(lab, GOOD)
    assert rc == 0 and "changed=0" in out, out[-3000:]


def test_kernel_command_line_through_a_grub_file(lab):
    # No GRUB on this VM: the role edits a GRUB defaults file in the test's directory and "regenerates" with touch.
    grub, marker = lab["tmp"] / "grub", lab["tmp"] / "update-grub-ran"
    grub.write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet isolcpus=3 splash"\nGRUB_CMDLINE_LINUX=""\n')
    extra = {"host_tuning_isolcpus": [1], "host_tuning_nohz_full": [1], "host_tuning_rcu_nocbs": [0, 1],
             "host_tuning_grub_file": str(grub), "host_tuning_grub_update_command": ["touch", str(marker)],
             "nic_ports": []}
    rc, out = play(lab, extra)
    assert rc == 0, out[-3000:]
    assert grub.read_text().splitlines()[1] == \
        'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash isolcpus=1 nohz_full=1 rcu_nocbs=0,1"'
    assert marker.exists() and "REBOOT to apply it" in out
    marker.unlink()
    rc, out = play(lab, extra)
    assert rc == 0 and "changed=0" in out and not marker.exists(), out[-3000:]
    # the running kernel was not booted with it: the drift check names each item
    res = subprocess.run([PLAYBOOK, "-i", str(lab["tmp"] / "hosts.yml"), os.path.join(ROOT, "playbooks", "drift_check.yml"),
                          "-e", json.dumps({**extra, "xdplab_drift_hosts": "tu"})], cwd=ROOT, env=ENV,
                         capture_output=True, text=True, timeout=300, check=False)
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-3000:]
    assert "tu drifted from its tuning, refusing to measure (3 item(s)): cmdline.isolcpus expected 1, actual absent" \
        in out, out[-3000:]
    assert "cmdline.rcu_nocbs expected 0,1, actual absent" in out

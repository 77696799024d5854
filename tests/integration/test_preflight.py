"""The read-only preflight stops an experiment before anything on the host changes (issue 8, item 4).

A hardware-shaped inventory (a T-Rex generator and two DUTs with interfaces ens1f0 and enp65s0f0np0 on PCI
0000:af:00.0 and 0000:41:00.0, DUT CPUs 0-7) whose hosts are all this 2-CPU machine (connection local): both
`--check` and a real run of playbooks/paper_drop.yml stop in the first play, naming every problem, and the host's
hugepages, the sysctls the roles set, XDP attachments, network namespaces and installed packages are as before.
On the virtual lab, a generator CPU that is the DUT's and the trex backend fail there too.
"""

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="a real run as root is what must change nothing"),
]

LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False}
DUTS = {
    "dut_a": {"xdplab_dut_interface": "ens1f0", "pci": "0000:af:00.0", "driver": "i40e", "mac": "3c:fd:fe:00:00:01",
              "ip": "198.18.0.2"},
    "dut_b": {"xdplab_dut_interface": "enp65s0f0np0", "pci": "0000:41:00.0", "driver": "mlx5_core", "mac": "b8:ce:f6:00:00:01",
              "ip": "198.18.0.6"},
}  # fmt: skip
GENERATOR_PORTS = ["0000:3b:00.0", "0000:3b:00.1"]


def hardware_inventory(path):
    """inventories/lab's tuning, DPDK and T-Rex group vars (what a real run would apply) + hosts that are this machine."""
    for rel in ("group_vars/duts/tuning.yml", "group_vars/duts/dpdk.yml", "group_vars/generators/trex.yml"):
        dest = path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(ROOT, "inventories", "lab", rel), dest)
    hosts = {"tg": dict(LOCAL, xdplab_generator_backend="trex", xdplab_generator_interface=GENERATOR_PORTS[0],
                        xdplab_generator_ports=GENERATOR_PORTS, xdplab_generator_cpus=list(range(2, 8)),
                        xdplab_generator_mac="ec:0d:9a:00:00:11", xdplab_generator_ip="198.18.0.1")}  # fmt: skip
    for name, d in DUTS.items():
        hosts[name] = dict(
            LOCAL,
            xdplab_dut_interface=d["xdplab_dut_interface"],
            xdplab_dut_ports=[{"name": d["xdplab_dut_interface"], "pci": d["pci"], "driver": d["driver"]}],
            xdplab_dut_cpus=list(range(8)),
            xdplab_dut_mac=d["mac"],
            xdplab_dut_ip=d["ip"],
            xdplab_generator_host="tg",
            xdplab_xdp_mode="native",
            xdplab_dpdk_port=d["pci"],
            xdplab_dpdk_main_lcore=0,
        )
    # two DUTs of one T-Rex, a port each (two claiming one port are refused first: test_several_duts.py)
    hosts["dut_b"]["xdplab_dut_generator"] = {"interface": GENERATOR_PORTS[1]}
    inventory = {"all": {"children": {"generators": {"hosts": {"tg": hosts["tg"]}},
                                      "duts": {"hosts": {n: hosts[n] for n in DUTS}}, "vlab": {"hosts": {}}}}}  # fmt: skip
    (path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return str(path / "hosts.yml")


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def sysctl_keys():
    """The sysctls the roles set: host_tuning_sysctls of the shipped inventories, and the hugepage count."""
    keys = {"vm.nr_hugepages", "net.core.bpf_jit_enable"}
    for path in glob.glob(os.path.join(ROOT, "inventories", "*", "group_vars", "*", "*.yml")):
        with open(path) as f:
            data = yaml.safe_load(f) or {}
        keys.update((data.get("host_tuning_sysctls") or {}).keys())
    return sorted(keys)


def xdp_attachments(ns=None):
    argv = ["ip", "-j", "-d", "link", "show"] if ns is None else ["ip", "-n", ns, "-j", "-d", "link", "show"]
    out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
    return {link["ifname"]: link.get("xdp") for link in json.loads(out or "[]") if link.get("xdp")}


def hugepage_files():
    """The hugepage pools: per size, and per NUMA node and size."""
    return sorted(
        glob.glob("/sys/kernel/mm/hugepages/*/nr_hugepages")
        + glob.glob("/sys/devices/system/node/node*/hugepages/*/nr_hugepages")
    )


def host_state():
    """What the roles would change on this machine, read without changing it."""
    netns = sorted(n["name"] for n in json.loads(subprocess.run(["ip", "-j", "netns", "list"], capture_output=True,
                                                                text=True, check=False).stdout or "[]"))  # fmt: skip
    packages = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\n"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    return {
        "hugepages": {p: read(p) for p in hugepage_files()},
        "sysctls": {k: read("/proc/sys/" + k.replace(".", "/")) for k in sysctl_keys()},
        "sysctl_file": os.path.exists("/etc/sysctl.d/90-xdplab.conf"),
        "smt": read("/sys/devices/system/cpu/smt/control"),
        "governors": sorted(set(filter(None, map(read, glob.glob("/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"))))),
        "netns": netns,
        "xdp": {ns or "": xdp_attachments(ns) for ns in [None, *netns]},
        "packages": (len(packages.splitlines()), hashlib.sha256(packages.encode()).hexdigest()),
        "run_xdplab": os.path.exists("/run/xdplab"),
    }


def paper_drop(inventory, *args, results, preflight=True):
    res = subprocess.run(
        [PLAYBOOK, "-i", inventory, "playbooks/paper_drop.yml", "-e", "experiment_results_dir=%s" % results, *args],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = res.stdout + res.stderr
    flat = " ".join(out.split())
    assert res.returncode != 0, out[-3000:]
    # it stopped in the read-only play: no play of testbed_up.yml started, nothing was recorded
    assert "PLAY [Controller tools" not in out and "PLAY [Tune the DUTs" not in out and "PLAY [Build the virtual lab" not in out
    # preflight=False: the input checks (validate) stopped it before the preflight read a host
    assert ("Read the DUT (read-only)" in out) == preflight, out[-3000:]
    assert not list(results.rglob("*.jsonl"))
    return flat


@pytest.mark.parametrize("mode", ["check", "real"])
def test_hardware_inventory_stops_in_the_read_only_play_and_changes_nothing(tmp_path, mode):
    inventory = hardware_inventory(tmp_path / "inventory")
    # the generator's trex_python answers as Python 3.12 does (Ubuntu 24.04's python3): v3.04's client does not import there
    python = tmp_path / "python3.12"
    python.write_text("#!/bin/sh\necho 3.12\n")
    python.chmod(0o755)
    before = host_state()
    out = paper_drop(inventory, "-e", "trex_python=%s" % python, *(["--check"] if mode == "check" else []),
                     results=tmp_path / "results")  # fmt: skip
    assert host_state() == before
    online = read("/sys/devices/system/cpu/online")
    assert online == "0-1", "the expected messages below are for this 2-CPU machine"
    expected = [
        # the DUTs: interface, PCI address, CPUs, CPUs shared with the generator on the same machine, the matrix
        r"dut_a: xdplab_dut_interface: ens1f0 does not exist on dut_a \(interfaces: [^)]*\blo\b",
        r"dut_b: xdplab_dut_interface: enp65s0f0np0 does not exist on dut_b \(interfaces: [^)]*\blo\b",
        r"dut_a: xdplab_dut_ports\[0\]\.pci: PCI device 0000:af:00\.0 is not present in /sys/bus/pci/devices on dut_a",
        r"dut_b: xdplab_dut_ports\[0\]\.pci: PCI device 0000:41:00\.0 is not present in /sys/bus/pci/devices on dut_b",
        r"dut_a: xdplab_dut_cpus: CPUs 2-7 are not online on dut_a \(online: 0-1\)",
        r"dut_b: xdplab_dut_cpus: CPUs 2-7 are not online on dut_b \(online: 0-1\)",
        r"dut_a: xdplab_dut_cpus: CPUs 2-7 are also in tg's xdplab_generator_cpus \(2-7\), and dut_a and tg are one machine",
        r"dut_a: cores: the matrix runs xdp on up to 8 cores, but only 2 of xdplab_dut_cpus \(0-7\) are online on dut_a",
        r"dut_a: cores: the matrix runs dpdk_vector on up to 7 cores, but DPDK has only 1 online CPU\(s\)",
        # the generator: its T-Rex ports, CPUs and T-Rex itself
        r"tg: xdplab_generator_interface: PCI device 0000:3b:00\.0 is not present in /sys/bus/pci/devices on tg",
        r"tg: xdplab_generator_ports\[1\]: PCI device 0000:3b:00\.1 is not present",
        r"tg: xdplab_generator_cpus: CPUs 2-7 are not online on tg \(online: 0-1\)",
        r"tg: xdplab_generator_backend: T-Rex is not installed on tg \(no /opt/trex/v3\.04/t-rex-64\) and cannot be installed",
        # issue 13 item 5: the runner's Python, before any trial (it was the runner's exit 2 in the first trial)
        r"tg: xdplab_generator_backend: on tg: T-Rex v3\.04's client does not import on Python 3\.12 \(%s\): releases "
        r"v2\.88\.\.v3\.07 run on Python <= 3\.11, v3\.08 and newer on Python <= 3\.12" % re.escape(str(python)),
    ]
    missing = [e for e in expected if not re.search(e, out)]
    assert not missing, (missing, out[-6000:])
    # every problem at once: one failed task per DUT, in the preflight
    assert len(re.findall(r"fatal: \[dut_[ab]\]", out)) == 2
    assert "failed=1" in out


VLAB = os.path.join(ROOT, "inventories", "vlab")
SMALL = '{"paper_drop_systems": ["xdp"], "paper_drop_repetitions": 1, "experiment_samples": 2}'


@pytest.mark.parametrize("mode", ["check", "real"])
def test_vlab_generator_cpu_on_the_duts_cpu_fails_in_the_first_play(tmp_path, mode):
    # refused by the input checks (validate, issue 26 item 6) before the preflight reads a host
    before = host_state()
    out = paper_drop(VLAB, "-e", SMALL, "-e", '{"xdplab_generator_cpus": [1]}', *(["--check"] if mode == "check" else []),
                     results=tmp_path, preflight=False)  # fmt: skip
    assert host_state() == before
    assert "tg: xdplab_generator_cpus: [1] overlaps dut's xdplab_dut_cpus" in out and "on the same machine (CPU 1)" in out, out[
        -3000:
    ]


def test_vlab_trex_backend_fails_in_preflight(tmp_path):
    before = host_state()
    out = paper_drop(VLAB, "-e", SMALL, "-e", "xdplab_generator_backend=trex", results=tmp_path)
    assert host_state() == before
    assert (
        "tg: xdplab_generator_backend: trex drives PCI ports through DPDK, but xdplab_generator_interface veth-tg0 is a "
        "veth end of the virtual lab, not a PCI address; the virtual lab's generator is xdp_live" in out
    ), out[-3000:]
    assert "tg: xdplab_generator_backend: T-Rex is not installed on tg" in out


@pytest.mark.parametrize(
    "layout, words",
    [
        ({"dut": [1], "generator": [1]}, "xdplab_cpu_layout: dut and generator overlap on CPU 1"),
        ({"dut": [1], "housekeeping": [1]}, "xdplab_cpu_layout: dut and housekeeping overlap on CPU 1"),
        ({"dut": [5]}, "xdplab_cpu_layout.dut: CPU 5 is not online on this host (online: 0-1)"),
    ],
)
def test_vlab_bad_cpu_layout_fails_in_the_first_play(tmp_path, layout, words):
    """Issue 28: the virtual lab's CPU layout (xdplab_cpu_layout) is checked before any change."""
    before = host_state()
    res = subprocess.run(
        [PLAYBOOK, "-i", VLAB, "playbooks/paper_drop.yml", "-e", "experiment_results_dir=%s" % tmp_path, "-e", SMALL,
         "-e", json.dumps({"xdplab_cpu_layout": layout})],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-3000:]
    assert host_state() == before
    assert words in out, out[-3000:]
    # it stopped in the first, read-only play, at the input's validation: nothing was brought up or recorded
    assert "PLAY [Check the experiment's input" in out and "PLAY [Build the virtual lab" not in out, out[-3000:]
    assert not list(tmp_path.rglob("*.jsonl"))

# SPDX-License-Identifier: GPL-3.0-or-later
"""The VM lab (role xdplab.testbed.vm_lab, inventories/vm, playbooks/vm_lab.yml) for real.

test_vm_lab_up_ssh_tuning_reboot_paper_drop_and_down is make test's: it boots the two VMs with the role (building the
cached Debian image first when it is not there: 2-6 min once), reaches both over SSH with the lab's key and become,
checks each answers with its virtio-net data NICs at the inventory's PCI addresses and MACs, with the inventory's
queues, and that the cables work; reboots the DUT VM through GRUB with host tuning and runs the drift check; runs a
short paper_drop over SSH; then tears the lab down and checks nothing is left: no qemu of the lab, no tap or bridge,
no overlay, no key. It prints each step's time, the boot time of each VM and which accelerator ran them. Under TCG
(the default) these are functional checks, not performance figures. The gated tests (make test-vm-lab) run every
drop system and the kernel role's install and reboot.

The other tests give the role bad input and check it stops with its message before anything starts.

Each lab here has its own name, interface prefix and two free SSH ports (never the inventory's `vm` / `vml` or
52201/52202, never xdplab-*), so a lab brought up with `make vm-lab-up` is not touched."""

import contextlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
INVENTORY = os.path.join(ROOT, "inventories", "vm")
PLAYBOOK = os.path.join(ROOT, "playbooks", "vm_lab.yml")
FACTS_PLAYBOOK = os.path.join(ROOT, "tests", "integration", "files", "vm_lab_facts.yml")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
VM_ROOT = "/var/lib/xdplab/vm_lab"
QEMU = "/usr/bin/qemu-system-x86_64"

# what inventories/vm/host_vars names: per VM, interface -> (PCI address, MAC)
EXPECTED = {
    "tg": {"ens4": ("0000:00:04.0", "02:58:44:56:00:01"), "ens5": ("0000:00:05.0", "02:58:44:56:00:03")},
    "dut": {"ens4": ("0000:00:04.0", "02:58:44:56:00:02"), "ens5": ("0000:00:05.0", "02:58:44:56:00:04")},
}
QUEUES = 2


def run(argv, timeout):
    return subprocess.run(argv, capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=timeout, check=False)


def playbook(extra, timeout=3600):
    return run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, PLAYBOOK, "-e", json.dumps(extra)], timeout)


def lab_facts(lab, facts_dir):
    """What each VM answers over SSH with become (tests/integration/files/vm_lab_facts.yml): {host: answer}."""
    p = lab.play(FACTS_PLAYBOOK, {"facts_dir": str(facts_dir)}, timeout=1200)
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-2000:]
    answers = {}
    for host in ("tg", "dut"):
        with open(os.path.join(facts_dir, host + ".json")) as f:
            answers[host] = json.load(f)
    return answers


def say(capsys, text):
    with capsys.disabled():
        print("\n[vm_lab] " + text, flush=True)


def lab_leftovers(lab_dir, prefix):
    """What of a lab exists: its qemu processes, interfaces and directory."""
    left = []
    p = subprocess.run(["pgrep", "-f", "^%s .*%s/" % (QEMU, lab_dir)], capture_output=True, text=True, check=False)
    if p.stdout.strip():
        left.append("qemu pids %s" % p.stdout.split())
    links = json.loads(subprocess.run(["ip", "-json", "link", "show"], capture_output=True, text=True, check=True).stdout)
    names = [link["ifname"] for link in links if link["ifname"].startswith(prefix + "-")]
    if names:
        left.append("interfaces %s" % names)
    if os.path.exists(lab_dir):
        left.append("directory %s: %s" % (lab_dir, sorted(os.listdir(lab_dir))))
    return left


BAD = [
    ({"cpus": 4096}, "cpus 1 to the controller's"),
    ({"nics": [{"link": "lonely", "pci": "0000:00:04.0", "mac": "02:58:44:56:0f:01"}]}, "link lonely has 1 NIC"),
    ({"nics": [{"link": "x", "pci": "0000:00:02.0", "mac": "02:58:44:56:0f:01"}]}, "02 is the disk"),
    ({"mgmt_mac": "03:00:00:00:00:01"}, "mgmt_mac a unicast lower-case MAC"),
    # a data NIC's virtio: qemu virtio-net-pci properties the role knows, on or off (checked before the link count)
    (
        {"nics": [{"link": "x", "pci": "0000:00:04.0", "mac": "02:58:44:56:0f:01", "virtio": {"mrg_rxbf": "off"}}]},
        "NIC 0000:00:04.0: virtio {'mrg_rxbf': 'off'}: unknown virtio-net property mrg_rxbf; known properties: mrg_rxbuf,",
    ),
    (
        {"nics": [{"link": "x", "pci": "0000:00:04.0", "mac": "02:58:44:56:0f:01", "virtio": {"mrg_rxbuf": "maybe"}}]},
        "value(s) maybe not on or off",
    ),
]


@pytest.mark.no_traffic
@pytest.mark.parametrize(
    "change,message",
    BAD,
    ids=["cpus", "one-ended-link", "disk-slot", "multicast-mac", "virtio-unknown-property", "virtio-bad-value"],
)
def test_vm_lab_bad_input_stops_before_anything(change, message):
    name = "pytestbad%s" % secrets.token_hex(2)
    vm = {"name": "solo", "ssh_port": 52299, "cpus": 1, "memory_mib": 256, "mgmt_mac": "02:58:44:56:0f:10"}
    vm.update(change)
    p = playbook({"vm_lab_name": name, "vm_lab_vms": [vm], "vm_lab_install_packages": False}, timeout=300)
    assert p.returncode != 0
    assert message in p.stdout, p.stdout[-3000:]
    assert not os.path.exists("%s/labs/%s" % (VM_ROOT, name))


@pytest.mark.no_traffic
def test_vm_lab_bad_option_type_fails_in_argument_spec():
    p = playbook({"vm_lab_accel": "hvf", "vm_lab_name": "pytestspec"}, timeout=300)
    assert p.returncode != 0
    assert "vm_lab_accel" in p.stdout and "hvf" in p.stdout, p.stdout[-3000:]


SITE = os.path.join(ROOT, "playbooks", "site.yml")
PAPER_DROP = os.path.join(ROOT, "playbooks", "paper_drop.yml")
# the short matrix TCG allows: one core, 64-byte frames, one repetition, a short window (functional, not performance)
SHORT_DROP = {
    "paper_drop_cores": [1],
    "paper_drop_packet_len": [64],
    "paper_drop_touch": ["no_touch"],
    "paper_drop_repetitions": 1,
    "experiment_warmup": 2,
    "experiment_samples": 3,
}
# the systems of make test's short paper_drop: XDP native on virtio_net (bpf/ compiled in the VMs, the generator
# xdp_live on tg) and DPDK on the port bound by PCI address; make test-vm-lab's test runs all six
MAKE_TEST_DROP_SYSTEMS = ["xdp", "dpdk_vector"]
DROP_SYSTEMS = ["xdp", "dpdk_vector", "dpdk_scalar", "af_xdp_copy", "linux_raw", "linux_conntrack"]


def records(results, experiment="paper_drop", dut="dut"):
    with open(os.path.join(results, experiment, dut, "trials.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def free_ports(n=2):
    """n ports of 127.0.0.1 where nothing listens now (bound, then closed)."""
    socks = [socket.socket() for _i in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def ports_inventory(tmp_path, hosts=None):
    """An inventory source that moves the lab's SSH forwards off the inventory's ports (another lab, e.g. make
    vm-lab-up's or another session's, may hold 52201/52202) to two free ports of 127.0.0.1: (inventory arguments,
    [tg's port, dut's port]). hosts: more variables per host."""
    ports = free_ports()
    hostvars = {"tg": {"ansible_port": ports[0]}, "dut": {"ansible_port": ports[1]}}
    for host, more in (hosts or {}).items():
        hostvars[host] = more
    path = tmp_path / "ports.yml"
    path.write_text(json.dumps({"all": {"hosts": hostvars}}))
    return ["-i", INVENTORY, "-i", str(path)], ports


class Lab:
    """A VM lab of a test's own: its name and interface prefix (never the inventory's vm / vml, never xdplab-*), and
    an inventory source on two free SSH ports."""

    def __init__(self, tmp_path):
        self.name = "pytest%s" % secrets.token_hex(2)
        self.prefix = "vmt%s" % secrets.token_hex(1)
        self.extra = {"vm_lab_name": self.name, "vm_lab_ifname_prefix": self.prefix}
        self.dir = "%s/labs/%s" % (VM_ROOT, self.name)
        self.inv, self.ports = ports_inventory(tmp_path)

    def play(self, path, more=None, *args, timeout=3600):
        return run(
            [os.path.join(BIN, "ansible-playbook"), *self.inv, path, "-e", json.dumps(dict(self.extra, **(more or {}))), *args],
            timeout,
        )

    def dut(self, command, timeout=600):
        """A shell command on the DUT VM over SSH with become: its stdout."""
        p = run(
            [
                os.path.join(BIN, "ansible"),
                *self.inv,
                "dut",
                "-b",
                "-e",
                json.dumps(self.extra),
                "-m",
                "ansible.builtin.shell",
                "-a",
                command,
            ],
            timeout,
        )
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
        return p.stdout.split(">>", 1)[1].strip()


@contextlib.contextmanager
def a_lab(capsys, tmp_path):
    """A VM lab of the test's own, up: yields its Lab. Always torn down after the body; when the body passed, the
    tear-down must pass and leave nothing, and the image cache must stay."""
    if os.geteuid() != 0:
        pytest.fail("needs root: the role makes host taps and bridges and writes %s" % VM_ROOT)
    lab = Lab(tmp_path)
    t0 = time.monotonic()
    try:
        up = lab.play(PLAYBOOK)
        assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-2000:]
        with open(os.path.join(lab.dir, "lab.json")) as f:
            lab.record = json.load(f)
        with open(os.path.join(lab.dir, "accelerator")) as f:
            lab.accelerator = f.read().strip()
        assert lab.accelerator == lab.record["accelerator"] and lab.accelerator in ("tcg", "kvm")
        # the build task's status line: changed when the image was built in this run, ok when it came from the cache
        build_task = up.stdout.split("Build the base image", 1)[1].split("TASK [", 1)[0]
        built = "built now" if "changed: [localhost]" in build_task else "from the cache"
        boots = [line.strip() for line in up.stdout.splitlines() if "boot to SSH" in line]
        say(
            capsys,
            "up in %.0f s (image %s, kernel %s, %s); accelerator %s%s; %s"
            % (
                time.monotonic() - t0,
                lab.record["image"]["key"],
                lab.record["image"]["kernel_release"],
                built,
                lab.accelerator,
                " (TCG: functional checks, not performance)" if lab.accelerator == "tcg" else "",
                boots,
            ),
        )
        assert os.path.exists(os.path.join(lab.dir, "id_ed25519"))
        yield lab
    finally:
        t3 = time.monotonic()
        down = lab.play(PLAYBOOK, {"vm_lab_state": "absent"})
        left = lab_leftovers(lab.dir, lab.prefix)
        say(
            capsys,
            "down in %.0f s; whole test %.0f s; left: %s" % (time.monotonic() - t3, time.monotonic() - t0, left or "nothing"),
        )
    assert down.returncode == 0, down.stdout[-4000:] + down.stderr[-2000:]
    assert left == []
    # the cache stays for the next lab
    assert any(
        os.path.exists(os.path.join(VM_ROOT, "cache", d, "base.qcow2")) for d in os.listdir(os.path.join(VM_ROOT, "cache"))
    )


def recap(out, host):
    line = next(line for line in out.splitlines() if line.startswith(host + " ") and "ok=" in line)
    return dict(kv.split("=") for kv in line.split(":", 1)[1].split())


def check_drop_records(capsys, lab, recs, systems):
    """Every record ok, of the systems asked, on virtio_net in the lab's VM, with a rate above 0; DPDK's name the PCI
    address they bound to uio_pci_generic and what held it before. Returns {(system, count mode): record}."""
    by = {}
    for r in recs:
        assert r["status"] == "ok", r
        by.setdefault((r["point"]["system"], r["provenance"]["measurement"].get("count_mode")), r)
    assert {s for s, _c in by} == set(systems), sorted(by)
    for (system, count), r in sorted(by.items(), key=lambda kv: str(kv[0])):
        dut = r["provenance"]["dut"]
        assert dut["driver"] == "virtio_net", (system, dut)
        assert dut["machine"]["vendor"] == "QEMU" and dut["machine"]["accelerator"] == lab.accelerator, dut["machine"]
        assert r["result"]["pps"] > 0, (system, r["result"])
        if system.startswith("dpdk"):
            program = r["provenance"]["program"]
            assert program["pci"] == ["0000:00:04.0"], program
            assert program["bound"][0]["pci"] == "0000:00:04.0", program
            assert program["bound"][0]["driver"] == "uio_pci_generic", program
            assert program["bound"][0]["previous"] == "virtio-pci", program
            # which RX function net_virtio took, in its own words (the DUT's ingress NIC has no mergeable buffers:
            # inventories/vm xdplab_vm_nic_options): the vector one when asked (vectorized=1), the scalar one else
            rx = program["rx_paths"][0]
            assert rx["driver"] == "net_virtio" and rx["rx_vector"] is (system == "dpdk_vector"), (system, rx)
        dpdk = r["provenance"]["program"] if system.startswith("dpdk") else None
        say(
            capsys,
            "%-16s count %-8s %8.0f pps (TCG, functional)%s"
            % (
                system,
                count,
                r["result"]["pps"],
                "; bound %s; rx path %s" % (dpdk["bound"][0], dpdk["rx_paths"][0]) if dpdk else "",
            ),
        )
    return by


def check_port_given_back(capsys, lab):
    """After testbed_down the port is the kernel's again: virtio-pci holds it and virtio_net names it ens4."""
    back = lab.dut(
        "basename $(readlink /sys/bus/pci/devices/0000:00:04.0/driver); ethtool -i ens4 | head -1; "
        "ethtool -i ens4 | grep bus-info; ls /run/xdplab/pci_driver 2>/dev/null | wc -l"
    )
    assert back.splitlines() == ["virtio-pci", "driver: virtio_net", "bus-info: 0000:00:04.0", "0"], back
    say(capsys, "after testbed_down: %s" % back.splitlines())


@pytest.mark.root
@pytest.mark.vm_lab
def test_vm_lab_up_ssh_tuning_reboot_paper_drop_and_down(capsys, tmp_path):
    """The VM lab in make test (TCG: functional, not performance). The role brings both VMs up (building the cached
    Debian image first when it is not there: 4-9 min once); over SSH with the lab's key and become each answers with
    its virtio-net data NICs at the inventory's PCI addresses and MACs and queues, and the cables carry frames; a
    second bring-up changes nothing. Then site.yml's tuning and drift check on the DUT VM: host_tuning writes
    isolcpus/nohz_full/rcu_nocbs of the DUT CPU into GRUB, update-grub in the VM, reboots it (host_tuning_reboot of
    inventories/vm) and /proc/cmdline has them; the nic role sets channels, rings and both IRQs of each queue through
    virtio-net and skips, with the driver's answer, what virtio-net does not have; the drift check passes; a second
    run changes nothing and does not reboot. Then a short paper_drop over SSH (XDP native on virtio_net, DPDK on the
    port bound by PCI address; testbed_up and testbed_down inside), its records checked and the port given back to
    virtio-pci. Then the lab goes and nothing of it may be left. The kernel role's install and reboot, and the six
    drop systems, are make test-vm-lab's (the kernel's first build on the controller takes about 50 min here)."""
    with a_lab(capsys, tmp_path) as lab:
        # facts over SSH with become: the data NICs at the inventory's PCI addresses and MACs, driver virtio_net,
        # with the inventory's queues (ethtool's pre-set maximum of combined channels); the cables carry frames
        t1 = time.monotonic()
        answers = lab_facts(lab, tmp_path)
        seen = {}
        for host, ports in EXPECTED.items():
            f = answers[host]["facts"]
            assert f["user_id"] == "root", "become did not give root on %s" % host
            assert f["hostname"] == host
            assert f["system_vendor"] == "QEMU", f["system_vendor"]
            for ifname, (pci, mac) in ports.items():
                info = dict(line.split(": ", 1) for line in answers[host]["drvinfo"][ifname].splitlines() if ": " in line)
                seen[(host, ifname)] = (info.get("bus-info"), f[ifname]["macaddress"], info.get("driver"), f[ifname]["module"])
                assert seen[(host, ifname)] == (pci, mac, "virtio_net", "virtio_net"), (host, ifname, seen[(host, ifname)])
            pre = answers[host]["channels"].split("Current hardware settings")[0]
            combined = [line.split()[-1] for line in pre.splitlines() if line.startswith("Combined")]
            assert combined == [str(QUEUES)], (host, answers[host]["channels"])
        assert len(answers["tg"]["pings"]) == 2
        for out in answers["tg"]["pings"]:
            assert " 0% packet loss" in out, out
        say(capsys, "over SSH with become in %.0f s: %s" % (time.monotonic() - t1, seen))

        # a second bring-up is a no-op: the VMs run, nothing is rebuilt or restarted
        again = lab.play(PLAYBOOK)
        assert again.returncode == 0, again.stdout[-4000:]
        r = recap(again.stdout, "localhost")
        assert r["changed"] == "0", r
        say(capsys, "second bring-up (converged): %s" % r)

        before = lab.dut("cat /proc/cmdline")
        assert "isolcpus" not in before, before
        t2 = time.monotonic()
        site = lab.play(SITE, None, "--tags", "tuning,drift_check")
        t_site = time.monotonic() - t2
        assert site.returncode == 0, site.stdout[-8000:] + site.stderr[-2000:]
        out = " ".join(site.stdout.split())
        rebooted = out.split("dut rebooted in ", 1)[1].split(")", 1)[0]
        assert "isolcpus=1 nohz_full=1 rcu_nocbs=1" in rebooted.split("/proc/cmdline:", 1)[1], rebooted
        assert "dut: no drift" in out, site.stdout[-4000:]
        # the NIC settings virtio-net has were set; what it has not was skipped with its answer
        assert "ens4: pause skipped: driver virtio_net: ethtool -a ens4: netlink error: Operation not supported" in out
        say(
            capsys,
            "site.yml --tags tuning,drift_check in %.0f s: rebooted in %s); drift check: no drift; %s"
            % (t_site, rebooted, recap(site.stdout, "dut")),
        )

        # what the DUT VM says after the reboot, read on its own
        irq = "$(basename $(readlink -f /sys/class/net/ens4/device))-$n"
        state = lab.dut(
            "cat /proc/cmdline /sys/devices/system/cpu/isolated /sys/devices/system/cpu/nohz_full; "
            "ethtool -l ens4 | tail -1; ethtool -g ens4 | sed -n '8p;11p'; "
            "for n in input.0 output.0; do i=$(awk -v n=" + irq + ' \'$NF==n {sub(":","",$1); print $1}\' '
            "/proc/interrupts); cat /proc/irq/$i/smp_affinity_list; done"
        )
        lines = state.splitlines()
        assert "isolcpus=1 nohz_full=1 rcu_nocbs=1" in lines[0] and lines[1:3] == ["1", "1"], lines
        assert lines[3].split() == ["Combined:", "1"], lines
        assert [line.split() for line in lines[4:6]] == [["RX:", "128"], ["TX:", "128"]], lines
        assert lines[6:8] == ["1", "1"], lines
        say(capsys, "DUT VM after the reboot: %s" % lines)

        t3 = time.monotonic()
        again = lab.play(SITE, None, "--tags", "tuning,drift_check")
        assert again.returncode == 0, again.stdout[-6000:]
        r = recap(again.stdout, "dut")
        assert r["changed"] == "0" and "rebooted in" not in again.stdout, (r, again.stdout[-3000:])
        say(capsys, "second run in %.0f s (converged, no reboot): %s" % (time.monotonic() - t3, r))

        # a short paper_drop over SSH (testbed_up inside: bpf/ sent and compiled in each VM, DPDK;
        # then the trials, then testbed_down): XDP native on virtio_net and DPDK on the port bound by PCI address
        results = str(tmp_path / "results")
        t4 = time.monotonic()
        # its testbed_up skips the tuning it would find converged (run twice just above): about a minute of TCG
        drop = lab.play(
            PAPER_DROP,
            dict(SHORT_DROP, experiment_results_dir=results, paper_drop_systems=MAKE_TEST_DROP_SYSTEMS),
            "--skip-tags",
            "tuning",
            timeout=3600,
        )
        assert drop.returncode == 0, drop.stdout[-10000:] + drop.stderr[-2000:]
        say(
            capsys,
            "paper_drop (testbed_up, %s, testbed_down; the smaller matrix of make test: make test-vm-lab runs "
            "all six systems) in %.0f s: %s"
            % (", ".join(MAKE_TEST_DROP_SYSTEMS), time.monotonic() - t4, recap(drop.stdout, "dut")),
        )
        check_drop_records(capsys, lab, records(results), MAKE_TEST_DROP_SYSTEMS)
        check_port_given_back(capsys, lab)


INVENTORY_BAD = [
    (
        {"xdplab_dpdk_port": "0000:00:06.0"},
        "VM dut: xdplab_dpdk_port names PCI address(es) 0000:00:06.0, which the VM "
        "does not have as a data NIC (its data NICs: 0000:00:04.0, 0000:00:05.0",
    ),
    (
        {
            "xdplab_dut_ports": [
                {"name": "ens4", "pci": "0000:00:04.0"},
                {"name": "ens5", "pci": "0000:00:05.0"},
                {"name": "ens7", "pci": "0000:00:07.0"},
            ]
        },
        "VM dut: xdplab_dut_ports names PCI address(es) 0000:00:07.0",
    ),
    ({"xdplab_dut_cpus": [1, 2]}, "VM dut: xdplab_dut_cpus [1, 2] names CPU(s) 2, but the VM has 2 vCPU(s) (0-1)"),
    (
        {"xdplab_generator_ports": ["0000:00:04.0", "0000:00:05.0", "0000:00:06.0"]},
        "VM tg: xdplab_generator_ports names PCI address(es) 0000:00:06.0",
    ),
    # -e ansible_host: what a host_vars edit would do to both VMs
    (
        {"ansible_host": "10.9.9.9"},
        "VM tg: the inventory reaches it at 10.9.9.9 (its ansible_host), but the lab serves its SSH only on 127.0.0.1:52201",
    ),
    # xdplab_vm_nic_options (both VMs read it when given as an extra var; tg is checked first)
    (
        {"xdplab_vm_nic_options": {"0000:00:06.0": {"mrg_rxbuf": "off"}}},
        "VM tg: xdplab_vm_nic_options names PCI address(es) 0000:00:06.0, which the VM does not have as a data NIC",
    ),
    (
        {"xdplab_vm_nic_options": {"0000:00:04.0": {"mrg_rxbuf": "off", "guest_tso": "off"}}},
        "VM tg, NIC 0000:00:04.0: virtio {'mrg_rxbuf': 'off', 'guest_tso': 'off'}: unknown virtio-net property guest_tso;",
    ),
]


@pytest.mark.no_traffic
@pytest.mark.parametrize(
    "change,message",
    INVENTORY_BAD,
    ids=["dpdk-port", "dut-port", "dut-cpus", "generator-port", "ansible-host", "nic-options-port", "nic-options-property"],
)
def test_vm_lab_inventory_bad_input_stops_before_any_vm(change, message):
    # inventories/vm's experiment variables against its VMs (vm_lab_vms[].uses): refused before anything starts
    name = "pytestinv%s" % secrets.token_hex(2)
    p = playbook(dict(change, vm_lab_name=name, vm_lab_ifname_prefix="vmtx"), timeout=300)
    assert p.returncode != 0
    assert message in " ".join(p.stdout.split()), p.stdout[-3000:]
    assert not os.path.exists("%s/labs/%s" % (VM_ROOT, name))


@pytest.mark.no_traffic
def test_vm_lab_inventory_dut_ingress_nic_without_mergeable_buffers_and_guest_offloads():
    # the DUT VM's qemu command line as the role renders it (tasks/vm.yml: lookup of qemu_argv.j2) from inventories/vm:
    # the DPDK port 0000:00:04.0 gets its xdplab_vm_nic_options, the egress NIC and tg's NICs qemu's defaults
    extra = {
        "vm_lab_accelerator": "tcg",
        "vm_lab_qemu": QEMU,
        "vm_lab_machine": "pc",
        "vm_lab_tcg_cpu": "max",
        "__vm_lab_vmdir": "/lab/VM",
        "__vm_lab_key": "/lab/id_ed25519",
        "__vm_lab_disk_slot": "0x2",
    }
    template = os.path.join(ROOT, "roles", "vm_lab", "templates", "qemu_argv.j2")
    argvs = {}
    for vm in ("dut", "tg"):
        p = subprocess.run(
            [
                os.path.join(BIN, "ansible"),
                "-i",
                INVENTORY,
                "localhost",
                "-m",
                "ansible.builtin.debug",
                "-e",
                json.dumps(dict(extra, __vm_lab_vm="{{ vm_lab_vms | selectattr('name', 'equalto', '%s') | first }}" % vm)),
                "-a",
                json.dumps({"msg": "{{ lookup('ansible.builtin.template', '%s') | from_json }}" % template}),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
            env=dict(ENV, ANSIBLE_CALLBACK_RESULT_FORMAT="json"),
        )
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
        argvs[vm] = json.loads(p.stdout.split("=>", 1)[1])["msg"]
    nics = {vm: [a for a in argv if a.startswith("virtio-net-pci,netdev=data")] for vm, argv in argvs.items()}
    assert nics["dut"] == [
        "virtio-net-pci,netdev=data0,mac=02:58:44:56:00:02,addr=0x04,mq=on,vectors=6,"
        "guest_ecn=off,guest_tso4=off,guest_tso6=off,guest_ufo=off,mrg_rxbuf=off",
        "virtio-net-pci,netdev=data1,mac=02:58:44:56:00:04,addr=0x05,mq=on,vectors=6",
    ]
    assert nics["tg"] == [
        "virtio-net-pci,netdev=data0,mac=02:58:44:56:00:01,addr=0x04,mq=on,vectors=6",
        "virtio-net-pci,netdev=data1,mac=02:58:44:56:00:03,addr=0x05,mq=on,vectors=6",
    ]


@pytest.mark.no_traffic
def test_host_tuning_reboot_refused_over_a_local_connection(tmp_path):
    # host_tuning_reboot on the controller itself: the GRUB file (the test's own, regenerated with touch) changes,
    # then the kernel role's tasks/reboot.yml refuses, naming the option, before anything reboots (ansible's reboot
    # action refuses a local connection too). Nothing else of the controller is touched: no SMT, governor,
    # irqbalance, hugepages or sysctls asked for (host_tuning_smt "on" is read only: the play stops before writes).
    grub, marker = tmp_path / "grub", tmp_path / "update-grub-ran"
    grub.write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\n')
    play = tmp_path / "play.yml"
    play.write_text(
        json.dumps(
            [
                {
                    "name": "host_tuning with its reboot on the controller",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Host tuning",
                            "ansible.builtin.include_role": {"name": "xdplab.testbed.host_tuning"},
                            "vars": {
                                "host_tuning_smt": "on",
                                "host_tuning_governor": None,
                                "host_tuning_irqbalance_stopped": False,
                                "host_tuning_isolcpus": [0],
                                "host_tuning_grub_file": str(grub),
                                "host_tuning_grub_update_command": ["touch", str(marker)],
                                "host_tuning_reboot": True,
                            },
                        }
                    ],
                }
            ]
        )
    )
    p = run(
        [
            os.path.join(BIN, "ansible-playbook"),
            "-i",
            "localhost,",
            str(play),
            "-e",
            json.dumps({"ansible_python_interpreter": sys.executable}),
        ],
        300,
    )
    out = " ".join(p.stdout.split())
    assert p.returncode != 0
    assert (
        "host_tuning_reboot is true but localhost is reached with connection local: the collection does not "
        "reboot the controller or a namespace of the virtual lab" in out
    ), p.stdout[-3000:]
    assert marker.exists() and 'isolcpus=0"' in grub.read_text()


@pytest.mark.root
@pytest.mark.vm_lab
@pytest.mark.skipif(
    os.environ.get("XDPLAB_VM_LAB") != "1",
    reason="all six drop systems and the driver's count on the VM lab under TCG (about 30 min): make test-vm-lab runs "
    "it (XDPLAB_VM_LAB=1); make test runs xdp and dpdk_vector over SSH in test_vm_lab_up_ssh_tuning_reboot_paper_drop_"
    "and_down",
)
def test_vm_lab_paper_drop_over_ssh(capsys, tmp_path):
    """paper_drop.yml over SSH on the VM lab: testbed_up (tuning with its reboot, bpf/ built on both VMs, DPDK from
    Debian in the DUT VM, the generator xdp_live on tg), then a short matrix of every drop system the guest has: XDP
    in virtio_net's native mode (counted by the program, then in a second run by the driver's rx_queue_N_xdp_drops),
    DPDK testpmd with net_virtio on the ingress port bound to uio_pci_generic by PCI address (vector and scalar
    RX), AF_XDP copy mode, Linux raw and conntrack. Each record must say driver virtio_net, the VM's machine facts,
    a rate above 0; DPDK's the PCI address it bound. After testbed_down the port is back on virtio-pci with its
    interface; then the lab goes and nothing of it may be left. TCG: functional checks, not performance."""
    results = str(tmp_path / "results")
    with a_lab(capsys, tmp_path) as lab:
        t1 = time.monotonic()
        drop = lab.play(PAPER_DROP, dict(SHORT_DROP, experiment_results_dir=results), timeout=5400)
        assert drop.returncode == 0, drop.stdout[-10000:] + drop.stderr[-2000:]
        say(
            capsys,
            "paper_drop (testbed_up, %s, testbed_down) in %.0f s: %s"
            % (", ".join(DROP_SYSTEMS), time.monotonic() - t1, recap(drop.stdout, "dut")),
        )

        t2 = time.monotonic()
        driver = lab.play(
            PAPER_DROP,
            dict(SHORT_DROP, experiment_results_dir=results + "-driver", paper_drop_systems=["xdp"], xdplab_xdp_count="driver"),
            timeout=3600,
        )
        assert driver.returncode == 0, driver.stdout[-10000:] + driver.stderr[-2000:]
        say(capsys, "paper_drop xdp counted by the driver in %.0f s" % (time.monotonic() - t2))

        by = check_drop_records(capsys, lab, records(results) + records(results + "-driver"), DROP_SYSTEMS)
        assert ("xdp", "driver") in by and ("xdp", "program") in by, sorted(by)
        check_port_given_back(capsys, lab)


# inventories/vm/group_vars/duts/kernel.yml: the kernel role builds on the controller (kernel_build_host: localhost)
# into this root, which outlives every lab; the DUT VM gets build/vm/ with the packages and the stamp
KERNEL_BUILD_ROOT = "/var/cache/xdplab/kernel-vm"
KERNEL_STAMP = os.path.join(KERNEL_BUILD_ROOT, "build", "vm", "xdplab-kernel.json")


@pytest.mark.root
@pytest.mark.vm_lab
@pytest.mark.skipif(
    os.environ.get("XDPLAB_VM_LAB") != "1",
    reason="installs a kernel built on the controller on the DUT VM and reboots into it under TCG (10-15 min; the "
    "kernel's first build on a 2-CPU controller takes about 50 min more, beyond make test's budget): make test-vm-lab "
    "runs it (XDPLAB_VM_LAB=1); make test reboots the DUT VM through GRUB with host tuning",
)
def test_vm_lab_kernel_built_on_the_controller_installed_booted_and_verified(capsys, tmp_path):
    """site.yml's kernel phase on the DUT VM (inventories/vm: kernel_build_host localhost): the role builds Debian's
    linux-source-6.1 as defconfig + vm-guest.config + bpf.config on the controller (or finds its stamp: the packages
    are cached in KERNEL_BUILD_ROOT between runs), copies the linux-image package and the stamp to the DUT VM, installs
    it there, makes it GRUB's saved default, reboots the VM over SSH and checks that uname -r and the running config
    are the build's. The DUT then answers uname -r = the build's release, GRUB_DEFAULT=saved and saved_entry = that
    kernel's entry. A second run changes nothing and does not reboot (same boot_id). Then the lab goes, nothing left."""
    if os.path.exists(KERNEL_STAMP):
        with open(KERNEL_STAMP) as f:
            cached = json.load(f)
        say(
            capsys,
            "kernel packages cached on the controller: %s, built %s in %s s (%s)"
            % (cached["release"], cached.get("built_at"), cached.get("seconds"), ", ".join(cached["debs"])),
        )
    else:
        say(
            capsys,
            "no kernel packages in %s yet: site.yml builds them on the controller first "
            "(defconfig-based 6.1, 30-60 min on 2 shared CPUs)" % KERNEL_BUILD_ROOT,
        )
    with a_lab(capsys, tmp_path) as lab:
        before = lab.dut("uname -r")

        t1 = time.monotonic()
        site = lab.play(SITE, None, "--tags", "kernel", timeout=3 * 3600)
        t_site = time.monotonic() - t1
        serial = os.path.join(lab.dir, "dut", "serial.log")
        with open(serial, errors="replace") as f:
            console = f.read()
        assert site.returncode == 0, site.stdout[-8000:] + site.stderr[-2000:] + "\nDUT console:\n" + console[-4000:]
        with open(KERNEL_STAMP) as f:
            stamp = json.load(f)
        release = stamp["release"]
        assert release != before, (release, before)
        out = " ".join(site.stdout.split())
        assert "dut rebooted into " in out, site.stdout[-6000:]
        rebooted = out.split("dut rebooted into ", 1)[1].split(")", 1)[0]
        assert rebooted.startswith(release + " in "), rebooted
        assert "running kernel %s is variant vm with its" % release in out, site.stdout[-4000:]
        say(
            capsys,
            "site.yml --tags kernel in %.0f s (DUT VM was on %s): rebooted into %s); drift check passed; %s"
            % (t_site, before, rebooted, recap(site.stdout, "dut")),
        )

        # what the DUT VM says on its own: the running kernel, GRUB's default, the saved entry, the package
        state = lab.dut(
            "uname -r; cat /proc/sys/kernel/random/boot_id; grep '^GRUB_DEFAULT=' /etc/default/grub; "
            "grub-editenv list | grep '^saved_entry='; dpkg-query -W -f '${Package} ${Version}\\n' "
            "'linux-image-%s'" % release
        )
        lines = state.splitlines()
        assert lines[0] == release, lines
        assert lines[2] == "GRUB_DEFAULT=saved", lines
        assert lines[3].startswith("saved_entry=") and lines[3].endswith(">Debian GNU/Linux, with Linux %s" % release), lines
        assert lines[4].startswith("linux-image-%s " % release), lines
        boot_id = lines[1]
        say(capsys, "DUT VM after the reboot: uname -r %s; %s; %s; %s" % (lines[0], lines[2], lines[3], lines[4]))
        # what its serial console showed of the new kernel's start (none under a quiet loglevel)
        banner = [line.strip() for line in console.splitlines() if "Linux version " + release in line]
        say(capsys, "DUT console: %s" % (banner[-1][:160] if banner else "no 'Linux version %s' line" % release))

        t2 = time.monotonic()
        again = lab.play(SITE, None, "--tags", "kernel")
        assert again.returncode == 0, again.stdout[-6000:]
        r = recap(again.stdout, "dut")
        assert r["changed"] == "0" and "rebooted into" not in again.stdout, (r, again.stdout[-3000:])
        assert lab.dut("cat /proc/sys/kernel/random/boot_id") == boot_id
        say(capsys, "second run in %.0f s (converged, no reboot, same boot_id): %s" % (time.monotonic() - t2, r))
    # the packages stay cached on the controller for the next run
    assert os.path.exists(KERNEL_STAMP)


def run_xdplab_entries():
    return sorted(os.listdir("/run/xdplab")) if os.path.isdir("/run/xdplab") else None


# seconds: measured 3.0-4.6 s for paper_drop.yml to stop here with two hosts down (nice -n 19, the loaded 2-CPU
# controller): ansible-playbook's start, the input checks, then one try per host (a refused port fails at once, and
# wait_for_connection pauses 1 s after it). The bound is the point: no 120 s ansible_timeout, no retry for minutes.
UNREACHABLE_BOUND_S = 30


@pytest.mark.no_traffic
@pytest.mark.parametrize("down,check", [(["dut", "tg"], False), (["dut", "tg"], True), (["tg"], False)],
                         ids=["both", "both-check-mode", "generator-only"])  # fmt: skip
def test_experiment_stops_the_whole_run_when_a_vm_does_not_answer(tmp_path, down, check):
    # issue 25: an unreachable host is a clear input error before anything changes - not Ansible's raw UNREACHABLE
    # and the run going on with the hosts it can reach. No VM is started: the inventory's SSH ports are closed ports.
    # the inventory's SSH ports moved to ports where nothing listens: the run meets a VM lab that is not up; with the
    # DUT made the controller itself (connection local, which the check does not try) only the generator is down
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inv, ports = ports_inventory(tmp_path, {} if "dut" in down else {"dut": local})
    results = tmp_path / "results"
    before = run_xdplab_entries()
    t0 = time.monotonic()
    p = run([os.path.join(BIN, "ansible-playbook"), *inv, PAPER_DROP, "-e", json.dumps({"experiment_results_dir": str(results)}),
             *(["--check"] if check else [])], 300)  # fmt: skip
    took = time.monotonic() - t0
    out = p.stdout + p.stderr
    flat = " ".join(out.split())
    assert p.returncode != 0, out[-3000:]
    assert (
        "%d host(s) this run needs did not answer; the run stops here, before anything changed on any host:" % len(down) in flat
    ), out[-3000:]
    for host, port in (("tg", ports[0]), ("dut", ports[1])):
        line = "- %s (%s) tried at 127.0.0.1 port %d as lab (connection ansible.builtin.ssh): " % (
            host,
            "DUT" if host == "dut" else "generator",
            port,
        )
        assert (line in out) == (host in down), out[-3000:]
        if host in down:
            assert (
                "ssh: connect to host 127.0.0.1 port %d: Connection refused. Is the VM lab up? make vm-lab-up" % port in flat
            ), out[-3000:]
    # the whole run stopped in the first play: no later play started (testbed_up's first would change the controller)
    assert "PLAY [Controller tools" not in out and "PLAY [Tune the DUTs" not in out and "PLAY [Run the matrix" not in out
    assert "PLAY [Every DUT and generator answers" not in out
    assert len(re.findall(r"^PLAY \[", out, re.M)) == 1, re.findall(r"^PLAY \[.*", out, re.M)
    assert not results.exists()
    assert run_xdplab_entries() == before
    assert took < UNREACHABLE_BOUND_S, took

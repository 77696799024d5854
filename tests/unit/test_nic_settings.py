# SPDX-License-Identifier: GPL-3.0-or-later
"""nic_settings planning against fixtures: an mlx5 port (outputs written in ethtool 6.1's layout, see
fixtures/ethtool/README.md; no ConnectX-5 here) and a veth end (real output of this machine). ethtool is faked
through AnsibleModule.run_command, /sys and /proc through temporary directories. The module against a real veth
pair is tests/integration/test_nic_settings.py."""

import json
import os

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpus
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.modules import nic_settings

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "ethtool")


def fixture(name):
    with open(os.path.join(FIX, name)) as fh:
        return fh.read()


MLX5_K = "Features for mlx5p1:\nrx-checksumming: on\nntuple-filters: off\nreceive-hashing: on\n"
READS = {"-i", "-l", "-g", "-a", "--show-priv-flags", "-n", "-k"}


class FakeNic:
    def __init__(self, monkeypatch, tmp_path, driver="mlx5", ifname="mlx5p1", mac="ec:0d:9a:00:00:01"):
        self.ran = []
        self.ifname = ifname
        if driver == "mlx5":
            self.answers = {"-i": fixture("mlx5_i_constructed.txt"), "-l": fixture("mlx5_l_constructed.txt"),
                            "-g": fixture("mlx5_g_constructed.txt"), "-a": fixture("mlx5_a_constructed.txt"),
                            "--show-priv-flags": fixture("mlx5_priv_flags_from_seed000.txt"),
                            "-n": fixture("mlx5_ntuple_constructed.txt"), "-k": MLX5_K}
            interrupts = fixture("hw_proc_interrupts_constructed.txt")
        elif driver == "virtio":
            self.answers = {"-i": fixture("vmdut_virtio_i.txt"), "-l": fixture("vmdut_virtio_l.txt"),
                            "-g": fixture("vmdut_virtio_g.txt"), "-k": fixture("vmdut_virtio_k.txt")}
            for opt, name in (("-a", "a"), ("-n", "n"), ("--show-priv-flags", "showprivflags")):
                self.answers[opt] = (1, "", fixture(f"vmdut_virtio_unsupported_{name}.txt"))
            interrupts = fixture("vmdut_proc_interrupts.txt")
        else:
            self.answers = {"-i": fixture("veth_i.txt"), "-l": fixture("veth_l.txt"), "-k": fixture("veth_k.txt")}
            for opt, name in (("-g", "g"), ("-a", "a"), ("-n", "n"), ("--show-priv-flags", "showprivflags")):
                self.answers[opt] = (1, "", fixture(f"veth_unsupported_{name}.txt"))
            interrupts = fixture("vm_proc_interrupts.txt")
        sysfs, procfs = tmp_path / "sys", tmp_path / "proc"
        (sysfs / "class/net" / ifname).mkdir(parents=True)
        (sysfs / "class/net" / ifname / "address").write_text(mac + "\n")
        if driver == "virtio":
            # /sys/class/net/ens4/device -> the virtio device under the PCI function, as in the VM
            (sysfs / "devices/pci0000:00/0000:00:04.0/virtio2").mkdir(parents=True)
            (sysfs / "class/net" / ifname / "device").symlink_to(sysfs / "devices/pci0000:00/0000:00:04.0/virtio2")
        self.refuse = {}  # ethtool write option -> (rc, out, err) the driver answers
        (sysfs / "devices/system/cpu").mkdir(parents=True)
        (sysfs / "devices/system/cpu/online").write_text("0-1\n")
        procfs.mkdir()
        (procfs / "interrupts").write_text(interrupts)
        for irq, aff in ((120, "0-1"), (121, "1"), (130, "0"), (131, "1"), (31, "0"), (32, "0"), (33, "1"), (34, "1")):
            (procfs / "irq" / str(irq)).mkdir(parents=True)
            (procfs / "irq" / str(irq) / "smp_affinity_list").write_text(aff + "\n")
        self.procfs = procfs
        monkeypatch.setattr(nic_settings.NicSettings, "SYSFS", str(sysfs))
        monkeypatch.setattr(nic_settings.NicSettings, "PROCFS", str(procfs))
        monkeypatch.setattr(basic.AnsibleModule, "run_command", self.run_command)
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self_, name, *a, **k: "/usr/sbin/ethtool")

    def run_command(self, argv, **_kw):
        assert argv[0] == "ethtool"
        opt = argv[1]
        if opt in READS:
            assert argv[2] == self.ifname
            answer = self.answers[opt]
            return answer if isinstance(answer, tuple) else (0, answer, "")
        self.ran.append(" ".join(argv))
        return self.refuse.get(opt, (0, "", ""))

    def affinity(self, irq):
        return (self.procfs / "irq" / str(irq) / "smp_affinity_list").read_text().strip()


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        nic_settings.main()
    return json.loads(capsys.readouterr().out)


MLX5 = {"interface": "mlx5p1", "pci": "0000:03:00.0", "mac": "EC:0D:9A:00:00:01", "channels": {"combined": 6},
        "rings": {"rx": 1024, "tx": 1024}, "pause": {"autoneg": False, "rx": False, "tx": False},
        "private_flags": {"rx_cqe_compress": False, "rx_striding_rq": "off"}, "ntuple_udp_flows": 3,
        "irq_cpus": [0, 1]}

PLANNED = [
    "ethtool -A mlx5p1 rx off tx off",
    "ethtool -K mlx5p1 ntuple on",
    "ethtool -N mlx5p1 delete 1021",
    "ethtool -N mlx5p1 flow-type udp4 dst-port 14 action 2",
]


def test_mlx5_plan_check_mode_then_apply(monkeypatch, tmp_path, capsys):
    nic = FakeNic(monkeypatch, tmp_path)
    res = run({**MLX5, "_ansible_check_mode": True, "_ansible_diff": True}, capsys)
    assert res["changed"] is True and nic.ran == [] and nic.affinity(120) == "0-1"
    irq_write = f"echo 0 > {nic.procfs}/irq/120/smp_affinity_list"
    assert res["commands"] == [*PLANNED, irq_write]
    assert {d["item"] for d in res["drift"]} == {"pause.rx", "pause.tx", "features.ntuple-filters",
                                                 "ntuple.udp4.dst_port=14", "irq_affinity.queue0"}
    assert next(d for d in res["drift"] if d["item"] == "ntuple.udp4.dst_port=14") == {
        "interface": "mlx5p1", "item": "ntuple.udp4.dst_port=14", "expected": "queue 2", "actual": "rule 1021 -> queue 5"}
    assert res["diff"]["before"]["pause"] == {"autoneg": False, "rx": True, "tx": True}
    assert res["diff"]["after"]["ntuple_rules"] == ["udp4 dst-port 12 -> queue 0", "udp4 dst-port 13 -> queue 1",
                                                    "udp4 dst-port 14 -> queue 2"]
    assert res["driver"] == "mlx5_core" and res["bus_info"] == "0000:03:00.0" and res["skipped_items"] == []

    res = run(MLX5, capsys)
    assert res["changed"] is True and nic.ran == PLANNED
    assert nic.affinity(120) == "0" and nic.affinity(121) == "1"


def test_mlx5_verify_changes_nothing(monkeypatch, tmp_path, capsys):
    nic = FakeNic(monkeypatch, tmp_path)
    res = run({**MLX5, "verify": True}, capsys)
    assert res["changed"] is False and nic.ran == [] and nic.affinity(120) == "0-1"
    assert len(res["drift"]) == 5 and res["commands"][0] == PLANNED[0]


def test_mlx5_nothing_to_do(monkeypatch, tmp_path, capsys):
    nic = FakeNic(monkeypatch, tmp_path)
    res = run({"interface": "mlx5p1", "channels": {"combined": 6}, "rings": {"rx": 1024}, "pause": {"autoneg": False},
               "private_flags": {"rx_cqe_moder": True}, "irq_affinity": [{"queue": 1, "cpus": [1]}],
               "ntuple_rules": [{"dst_port": 12, "queue": 0}, {"dst_port": 13, "queue": 1}]}, capsys)
    # ntuple-filters is off in MLX5_K: the only change is turning it on
    assert nic.ran == ["ethtool -K mlx5p1 ntuple on"] and res["drift"] == [
        {"interface": "mlx5p1", "item": "features.ntuple-filters", "expected": True, "actual": False}]


@pytest.mark.parametrize("args, msg", [
    ({"pci": "03:00.0"}, "pci '03:00.0' is not a PCI address"),
    ({"pci": "0000:04:00.0"}, "mlx5p1 is at PCI address 0000:03:00.0 (driver mlx5_core), not 0000:04:00.0"),
    ({"mac": "ec:0d:9a:00:00"}, "mac 'ec:0d:9a:00:00' is not a unicast MAC address"),
    ({"mac": "01:00:5e:00:00:01"}, "is not a unicast MAC"),
    ({"mac": "ec:0d:9a:00:00:02"}, "mlx5p1 has MAC ec:0d:9a:00:00:01, not ec:0d:9a:00:00:02"),
    ({"channels": {"combined": 64}}, "channels.combined=64 exceeds the maximum 63 (ethtool -l mlx5p1)"),
    ({"channels": {"rx": 2}}, "channels.rx=2 but the device has no rx channels"),
    ({"rings": {"rx": 16384}}, "rings.rx=16384 exceeds the maximum 8192"),
    ({"private_flags": {"rx_no_such_flag": False}}, "unknown private flag(s) ['rx_no_such_flag'] for driver mlx5_core"),
    ({"ntuple_udp_flows": 7}, "steer to queue(s) [6] but the port has 6 RX queue(s)"),
    ({"channels": {"combined": 2}, "ntuple_udp_flows": 3}, "steer to queue(s) [2] but the port has 2 RX queue(s)"),
    ({"irq_cpus": [0, 5]}, "irq_affinity queue 1: CPU(s) [5] are not online on this host (online: 0-1)"),
    ({"ntuple_rules": [{"dst_port": 12, "queue": 0}], "ntuple_udp_flows": 1}, "more than one rule for udp4 dst-port 12"),
    ({"interface": "nope0"}, "interface nope0 does not exist in this network namespace; interfaces here: mlx5p1"),
])
def test_bad_input_fails_before_any_change(monkeypatch, tmp_path, capsys, args, msg):
    # pause would change (rx/tx on): nothing may run when a later value is bad
    nic = FakeNic(monkeypatch, tmp_path)
    res = run({"interface": "mlx5p1", "pause": {"rx": False, "tx": False}, **args}, capsys)
    assert res["failed"] and msg in res["msg"], res["msg"]
    assert nic.ran == [] and nic.affinity(120) == "0-1"


def test_veth_unsupported_fails_or_is_skipped_with_the_reason(monkeypatch, tmp_path, capsys):
    nic = FakeNic(monkeypatch, tmp_path, driver="veth", ifname="b0")
    want = {"interface": "b0", "channels": {"rx": 1, "tx": 2}, "rings": {"rx": 256},
            "pause": {"autoneg": False, "rx": False, "tx": False}, "private_flags": {"rx_striding_rq": False},
            "ntuple_udp_flows": 2, "irq_cpus": [0, 1]}
    res = run(want, capsys)
    assert res["failed"] and "b0: rings is not supported: driver veth: ethtool -g b0: netlink error: Operation not" \
        in res["msg"] and "unsupported=skip" in res["msg"]
    assert nic.ran == []
    res = run({**want, "unsupported": "skip"}, capsys)
    assert [s["item"] for s in res["skipped_items"]] == ["rings", "pause", "private_flags", "ntuple_rules",
                                                         "irq_affinity"]
    assert "Cannot get RX class rule count: Operation not supported" in res["skipped_items"][3]["reason"]
    assert "driver veth has no per-queue IRQs" in res["skipped_items"][4]["reason"]
    assert nic.ran == ["ethtool -L b0 rx 1"] and res["drift"] == [
        {"interface": "b0", "item": "channels.rx", "expected": 1, "actual": 2}]


VIRTIO = {"interface": "ens4", "pci": "0000:00:04.0", "mac": "02:58:44:56:00:02", "channels": {"combined": 1},
          "rings": {"rx": 128, "tx": 256}, "pause": {"autoneg": False, "rx": False, "tx": False},
          "ntuple_udp_flows": 1, "irq_cpus": [1], "unsupported": "skip"}


def test_virtio_net_channels_rings_and_both_irqs_of_a_queue(monkeypatch, tmp_path, capsys):
    # the VM lab's DUT port (real ethtool output and /proc/interrupts of the VM): channels and rings through
    # virtio-net's ethtool, queue 0's RX and TX vectors (virtio2-input.0, virtio2-output.0) pinned by the virtio
    # device's name; pause and n-tuple steering skipped with the driver's answer
    nic = FakeNic(monkeypatch, tmp_path, driver="virtio", ifname="ens4", mac="02:58:44:56:00:02")
    res = run(VIRTIO, capsys)
    assert res["driver"] == "virtio_net" and res["bus_info"] == "0000:00:04.0"
    assert nic.ran == ["ethtool -L ens4 combined 1", "ethtool -G ens4 rx 128"]
    assert nic.affinity(31) == "1" and nic.affinity(32) == "1" and nic.affinity(33) == "1"
    assert [s["item"] for s in res["skipped_items"]] == ["pause", "ntuple_rules"]
    assert all("Operation not supported" in s["reason"] for s in res["skipped_items"])
    assert set(res["state"]["irq_affinity"]) == {"queue0", "queue0.tx"}
    # converged: the drift check finds nothing
    res = run({**VIRTIO, "verify": True, "channels": {"combined": 2}, "rings": {"rx": 256}}, capsys)
    assert res["drift"] == [] and res["changed"] is False


def test_virtio_net_refusals_are_named_per_setting(monkeypatch, tmp_path, capsys):
    nic = FakeNic(monkeypatch, tmp_path, driver="virtio", ifname="ens4", mac="02:58:44:56:00:02")
    # a ring size that is not a power of two: virtio-net answers ENOMEM; refused before any change
    res = run({**VIRTIO, "rings": {"rx": 200}}, capsys)
    assert res["failed"] and "rings.rx=200: driver virtio_net keeps its rings in split virtqueues, whose size is a " \
        "power of two" in res["msg"] and nic.ran == []
    # an older guest kernel (no ring resize): the write is refused; skipped, or failed, naming rings and why
    nic.refuse["-G"] = (1, "", "netlink error: Operation not supported")
    res = run(VIRTIO, capsys)
    rings = next(s for s in res["skipped_items"] if s["item"] == "rings")
    assert "driver virtio_net refuses to change it" in rings["reason"] and "VIRTIO_F_RING_RESET" in rings["reason"]
    assert nic.affinity(31) == "1"  # the settings after it still ran
    res = run({**VIRTIO, "unsupported": "fail", "pause": None, "ntuple_udp_flows": 0}, capsys)
    assert res["failed"] and "ens4: rings is not supported: driver virtio_net refuses to change it" in res["msg"]


def test_virtio_net_without_a_vector_per_queue(monkeypatch, tmp_path, capsys):
    # vectors too few: virtio-net shares one IRQ among its virtqueues (virtio2-virtqueues); named with the reason
    nic = FakeNic(monkeypatch, tmp_path, driver="virtio", ifname="ens4", mac="02:58:44:56:00:02")
    text = (nic.procfs / "interrupts").read_text()
    shared = "\n".join(line for line in text.splitlines() if "virtio2-" not in line)
    (nic.procfs / "interrupts").write_text(shared + "\n 31:  5  5  PCI-MSI 65537-edge      virtio2-virtqueues\n")
    res = run({"interface": "ens4", "irq_cpus": [1], "unsupported": "skip"}, capsys)
    reason = res["skipped_items"][0]["reason"]
    assert res["skipped_items"][0]["item"] == "irq_affinity" and "virtio2-input.0" in reason
    assert "vectors= at least 2 x queues + 2" in reason and "virtio2 has one for all its queues (virtio2-virtqueues)" in reason


def test_parsers_on_the_fixtures():
    assert ethtool.parse_rings(fixture("mlx5_g_constructed.txt"))["max"]["rx"] == 8192
    assert ethtool.parse_rings(fixture("mlx5_g_constructed.txt"))["current"]["tx push"] == "off"
    assert ethtool.parse_pause(fixture("mlx5_a_constructed.txt")) == {"autonegotiate": False, "rx": True, "tx": True}
    assert ethtool.parse_priv_flags(fixture("mlx5_priv_flags_from_seed000.txt")) == {
        "rx_cqe_moder": True, "tx_cqe_moder": False, "rx_cqe_compress": False, "rx_striding_rq": False}
    # the seed's flattened line holds the same flags and values
    seed = fixture("seed000_priv_flags_line.txt").split("Private flags for mlx5p1:")[1]
    pairs = [p.split(":") for p in seed.replace(" : ", ":").replace(": ", ":").split()]
    assert {k: v == "on" for k, v in pairs} == ethtool.parse_priv_flags(fixture("mlx5_priv_flags_from_seed000.txt"))
    rules = ethtool.parse_ntuple(fixture("mlx5_ntuple_constructed.txt"))
    assert [(r["loc"], r["dst_port"], r["queue"], r["wildcard"]) for r in rules] == [
        (1021, 14, 5, True), (1022, 13, 1, True), (1023, 12, 0, True)]
    assert ethtool.ntuple_rule_matches(rules[2], "udp4", 12, 0) and not ethtool.ntuple_rule_matches(rules[0], "udp4", 14, 2)
    narrowed = fixture("mlx5_ntuple_constructed.txt").replace("Src IP addr: 0.0.0.0 mask: 255.255.255.255",
                                                              "Src IP addr: 198.18.0.1 mask: 0.0.0.0", 1)
    assert ethtool.parse_ntuple(narrowed)[0]["wildcard"] is False
    irqs = ethtool.parse_interrupts(fixture("hw_proc_interrupts_constructed.txt"))
    assert ethtool.queue_irqs(irqs, ethtool.IRQ_NAME_PATTERNS["mlx5_core"], 2, pci="0000:03:00.0") == {0: 120, 1: 121}
    assert ethtool.queue_irqs(irqs, ethtool.IRQ_NAME_PATTERNS["i40e"], 3, interface="ens1f0") == {0: 130, 1: 131}
    vm = ethtool.parse_interrupts(fixture("vm_proc_interrupts.txt"))
    assert next(e for e in vm if e["irq"] == 38) == {"irq": 38, "counts": [0, 3986], "chip": "PCI-MSIX-0000:00:03.0 1-edge",
                                                     "name": "virtio2-input.0"}
    assert ethtool.parse_features(fixture("veth_k.txt"))["ntuple-filters"] == {"on": False, "fixed": True}
    assert nic_settings.format_cpu_list is _cpus.format_cpu_list and nic_settings.parse_cpu_list is _cpus.parse_cpu_list
    assert _cpus.format_cpu_list([5, 0, 1, 2, 3]) == "0-3,5" and _cpus.parse_cpu_list("0-3,5") == [0, 1, 2, 3, 5]
    assert ethtool.valid_pci("0000:03:00.0") and not ethtool.valid_pci("0000:03:00.8") and not ethtool.valid_pci("3:0.0")

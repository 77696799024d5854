"""host_preflight's checks against a fake sysfs/procfs tree in tmp_path (the shape of this VM's, see
fixtures/host_preflight/README.md), with ethtool/ip answered from real output captured here."""

import os
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.modules import host_preflight as hp

FIXTURES = Path(__file__).parent / "fixtures" / "host_preflight"
BOOT_ID = "297bf591-8d52-42cf-8377-6095947d0609"


class FakeHost:
    """A root directory with /sys, /proc, /etc and /run/netns laid out as on Linux."""

    def __init__(self, root, online="0-1", boot_id=BOOT_ID):
        self.root = root
        self.commands = []
        self.answers = {}
        self.write("proc/sys/kernel/random/boot_id", boot_id + "\n")
        self.write("etc/machine-id", "3d1219c7c4c5404aaa1f6d2a48adfda4\n")
        self.write("proc/sys/kernel/hostname", "vm\n")
        self.write("sys/devices/system/cpu/online", online + "\n")
        (root / "sys/class/net").mkdir(parents=True, exist_ok=True)
        (root / "sys/bus/pci/devices").mkdir(parents=True, exist_ok=True)

    def write(self, rel, text):
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def pci(self, address, driver=None, cls="0x020000"):
        dev = self.root / "sys/devices/pci0000:00" / address
        dev.mkdir(parents=True)
        (dev / "class").write_text(cls + "\n")
        if driver:
            drv = self.root / "sys/bus/pci/drivers" / driver
            drv.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(drv, dev), dev / "driver")
        os.symlink(os.path.relpath(dev, self.root / "sys/bus/pci/devices"), self.root / "sys/bus/pci/devices" / address)
        return dev

    def netdev(self, name, ifindex, pci=None, driver=None):
        if pci:
            dev = self.root / "sys/devices/pci0000:00" / pci
            if not dev.exists():
                dev = self.pci(pci, driver)
            node = dev / "net" / name
            node.mkdir(parents=True)
            os.symlink(os.path.relpath(dev, node), node / "device")
        else:
            node = self.root / "sys/devices/virtual/net" / name
            node.mkdir(parents=True)
        (node / "ifindex").write_text(f"{ifindex}\n")
        os.symlink(os.path.relpath(node, self.root / "sys/class/net"), self.root / "sys/class/net" / name)

    def run_command(self, argv):
        self.commands.append(argv)
        key = " ".join(argv)
        if key in self.answers:
            return 0, self.answers[key], ""
        return 1, "", "no such device"

    def check(self, **params):
        params.setdefault("host", "dut")
        params.setdefault("role", "dut")
        return hp.HostPreflight(params, run_command=self.run_command, root=str(self.root)).run_checks()


@pytest.fixture
def host(tmp_path):
    h = FakeHost(tmp_path)
    h.netdev("lo", 1)
    h.netdev("veth-dut0", 5)
    h.answers["ethtool -i veth-dut0"] = (FIXTURES / "ethtool_i_veth_linux6.18.txt").read_text()
    h.pci("0000:00:03.0", "virtio-pci")
    return h


def test_missing_interface_names_host_field_value_and_what_exists(host):
    res = host.check(interfaces=[{"field": "xdplab_dut_interface", "name": "ens1f0"}])
    assert res["errors"] == ["dut: xdplab_dut_interface: ens1f0 does not exist on dut (interfaces: lo, veth-dut0)"]
    assert res["problems"][0] == {"host": "dut", "field": "xdplab_dut_interface", "value": "ens1f0",
                                  "message": res["errors"][0]}  # fmt: skip
    assert res["changed"] is False


def test_cpus_not_online_in_one_message(host):
    res = host.check(cpus=[{"field": "xdplab_dut_cpus", "cpus": [0, 1, 2, 3, 4, 5, 6, 7]}])
    assert res["errors"] == ["dut: xdplab_dut_cpus: CPUs 2-7 are not online on dut (online: 0-1)"]
    res = host.check(cpus=[{"field": "xdplab_dut_cpus", "cpus": [1, 7]}])
    assert res["errors"] == ["dut: xdplab_dut_cpus: CPU 7 is not online on dut (online: 0-1)"]
    res = host.check(cpus=[{"field": "xdplab_dut_cpus", "cpus": ["one", 1]}])
    assert res["errors"] == ["dut: xdplab_dut_cpus: 'one' is not a CPU number (whole numbers, e.g. [1, 2])"]
    assert res["online_cpus"] == [0, 1]


def test_pci_port_present_and_bound_to_the_named_driver(host):
    host.pci("0000:41:00.0", "mlx5_core")
    host.pci("0000:00:01.0", "virtio-pci", cls="0xffff00")  # not a network device: not listed
    ok = host.check(interfaces=[{"field": "xdplab_dpdk_port", "name": "41:00.0", "driver": "mlx5_core"}])
    assert ok["errors"] == []
    assert ok["interfaces"][0] == {"field": "xdplab_dpdk_port", "name": "0000:41:00.0", "kind": "pci", "exists": True,
                                   "driver": "mlx5_core", "pci": "0000:41:00.0", "xdp_modes": [], "xdp_source": None}  # fmt: skip
    res = host.check(
        interfaces=[
            {"field": "xdplab_generator_ports[0]", "name": "0000:af:00.0"},
            {"field": "xdplab_dut_ports[0].pci", "name": "0000:41:00.0", "driver": "vfio-pci",
             "driver_field": "xdplab_dut_ports[0].driver"},
        ]
    )  # fmt: skip
    assert res["errors"] == [
        "dut: xdplab_generator_ports[0]: PCI device 0000:af:00.0 is not present in /sys/bus/pci/devices on dut "
        "(network devices: 0000:00:03.0 (virtio-pci), 0000:41:00.0 (mlx5_core))",
        "dut: xdplab_dut_ports[0].driver: PCI device 0000:41:00.0 is bound to mlx5_core, not vfio-pci",
    ]


def test_netdev_driver_pci_and_xdp_modes_from_sysfs_and_the_driver_table(host):
    host.netdev("ens1f0", 7, pci="0000:af:00.0", driver="i40e")
    host.netdev("eno1", 8, pci="0000:02:00.0", driver="e1000e")
    res = host.check(
        interfaces=[
            {"field": "xdplab_dut_interface", "name": "ens1f0", "driver": "i40e", "pci": "0000:af:00.0", "xdp_mode": "native"},
            {"field": "xdplab_dut_egress_interface", "name": "eno1", "xdp_mode": "native"},
            {"field": "xdplab_dut_interface", "name": "ens1f0", "pci": "0000:3b:00.0", "pci_field": "xdplab_dut_ports[0].pci"},
            {"field": "xdplab_dut_interface", "name": "ens1f0", "xdp_mode": "hw"},
        ]
    )  # fmt: skip
    found = {(i["name"], i["driver"], i["pci"], tuple(i["xdp_modes"]), i["xdp_source"]) for i in res["interfaces"]}
    assert ("ens1f0", "i40e", "0000:af:00.0", ("native", "skb"), "table") in found
    assert ("eno1", "e1000e", "0000:02:00.0", ("skb",), "table") in found
    assert res["errors"] == [
        "dut: xdplab_xdp_mode: native XDP is not supported by driver e1000e of eno1 on dut (XDP modes there: skb)",
        "dut: xdplab_dut_ports[0].pci: ens1f0 is PCI device 0000:af:00.0, not 0000:3b:00.0",
        "dut: xdplab_xdp_mode: hw XDP is not supported by driver i40e of ens1f0 on dut (XDP modes there: native, skb)",
    ]
    # no sysfs device link (veth): the driver comes from ethtool -i (real output)
    res = host.check(interfaces=[{"field": "xdplab_dut_interface", "name": "veth-dut0", "xdp_mode": "native", "driver": "veth"}])
    assert res["errors"] == [] and res["interfaces"][0]["driver"] == "veth" and res["interfaces"][0]["pci"] is None
    assert ["ethtool", "-i", "veth-dut0"] in host.commands


def test_kernel_xdp_features_decide_when_the_kernel_reports_them():
    assert hp.HostPreflight.modes_from(["basic", "redirect", "rx-sg"], "veth") == (["native", "skb"], "netlink")
    assert hp.HostPreflight.modes_from([], None) == (["skb"], "netlink")  # lo on Linux 6.18
    assert hp.HostPreflight.modes_from(["basic", "hw-offload"], "nfp") == (["native", "skb", "hw"], "netlink")
    assert hp.HostPreflight.modes_from(None, None) == (["skb"], None)


def test_namespace_interfaces_and_planned_veth_ends(host):
    # the virtual lab before testbed_up: no namespace yet, the veth end is planned
    res = host.check(netns="xdplab-dut", interfaces=[{"field": "xdplab_dut_interface", "name": "veth-dut0", "planned": "veth",
                                                      "xdp_mode": "native"}])  # fmt: skip
    assert res["errors"] == []
    assert res["interfaces"][0]["kind"] == "planned" and res["interfaces"][0]["xdp_modes"] == ["native", "skb"]
    res = host.check(netns="xdplab-dut", interfaces=[{"field": "xdplab_dut_interface", "name": "veth-dut0"}])
    assert res["errors"] == ["dut: xdplab_dut_interface: veth-dut0 does not exist: namespace xdplab-dut does not exist on dut"]
    # the namespace exists (a kept lab): its interfaces are listed with ip -n (real output)
    host.write("run/netns/h4fx", "")
    host.answers["ip -n h4fx -o link show"] = (FIXTURES / "ip_o_link_netns_linux6.18.txt").read_text()
    res = host.check(netns="h4fx", interfaces=[{"field": "xdplab_dut_interface", "name": "veth-dut0"}])
    assert res["errors"] == [
        "dut: xdplab_dut_interface: veth-dut0 does not exist in namespace h4fx on dut (interfaces: h4v0, lo)"
    ]
    host.answers["ip netns exec h4fx ethtool -i h4v0"] = (FIXTURES / "ethtool_i_veth_linux6.18.txt").read_text()
    res = host.check(netns="h4fx", interfaces=[{"field": "xdplab_dut_interface", "name": "h4v0", "driver": "veth"}])
    assert res["errors"] == [] and res["interfaces"][0]["driver"] == "veth"


def test_cpus_shared_with_a_generator_on_the_same_machine(host):
    mine = [{"field": "xdplab_dut_cpus", "cpus": [1]}]
    same = {"host": "tg", "field": "xdplab_generator_cpus", "cpus": [1], "identity": {"boot_id": BOOT_ID, "machine_id": "x"}}
    res = host.check(cpus=mine, peers=[same])
    assert res["errors"] == [
        "dut: xdplab_dut_cpus: CPU 1 is also in tg's xdplab_generator_cpus (1), and dut and tg are one machine "
        "(same boot_id); give them disjoint CPUs (online: 0-1)"
    ]
    # another machine may use the same CPU numbers
    other = dict(same, identity={"boot_id": "0b8a6c1e-0000-4000-8000-000000000000"})
    assert host.check(cpus=mine, peers=[other])["errors"] == []
    assert host.check(cpus=mine, peers=[dict(same, cpus=[0])])["errors"] == []
    assert hp.same_machine({"boot_id": "", "machine_id": "m"}, {"machine_id": "m"})
    assert not hp.same_machine({}, {})


def test_a_trex_python_its_client_does_not_import_on_is_refused_before_any_trial(host):
    # issue 13 item 5: the runner found out (exit 2) only when a trial started it
    host.pci("0000:3b:00.0", "vfio-pci")
    host.write("opt/trex/v3.04/t-rex-64", "#!/bin/sh\n")
    port = {"field": "xdplab_generator_ports[0]", "name": "0000:3b:00.0"}
    trex = {"dir": "/opt/trex/v3.04", "version": "v3.04", "python": "/usr/bin/python3"}
    asked = "/usr/bin/python3 -c " + hp.PYTHON_VERSION_CODE
    host.answers[asked] = "3.12\n"
    res = host.check(role="generator", host="tg", interfaces=[port], backend="trex", trex=trex)
    assert res["errors"] == [
        "tg: xdplab_generator_backend: on tg: T-Rex v3.04's client does not import on Python 3.12 (/usr/bin/python3): "
        "releases v2.88..v3.07 run on Python <= 3.11, v3.08 and newer on Python <= 3.12; set trex_python to such an "
        "interpreter (e.g. /usr/bin/python3.11) or pin a release that fits (trex_version)"
    ]
    assert ["/usr/bin/python3", "-c", hp.PYTHON_VERSION_CODE] in host.commands
    host.answers[asked] = "3.11\n"
    assert host.check(role="generator", host="tg", interfaces=[port], backend="trex", trex=trex)["errors"] == []
    assert (
        host.check(role="generator", host="tg", interfaces=[port], backend="trex", trex=dict(trex, version="v3.08"))["errors"]
        == []
    )
    del host.answers[asked]
    res = host.check(role="generator", host="tg", interfaces=[port], backend="trex", trex=trex)
    assert res["errors"] == ["tg: xdplab_generator_backend: the T-Rex runner's Python /usr/bin/python3 does not run on tg (rc 1)"]


def test_the_version_question_is_one_a_real_python_answers():
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", hp.PYTHON_VERSION_CODE], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "%d.%d" % sys.version_info[:2]


def test_generator_backend_fits_the_ports(host, tmp_path):
    veth = {"field": "xdplab_generator_interface", "name": "veth-tg0", "planned": "veth"}
    ok = host.check(role="generator", host="tg", netns="xdplab-tg", interfaces=[veth], backend="xdp_live")
    assert ok["errors"] == []
    trex = {"dir": "/opt/trex/v3.04", "installable": False, "why_not": "trex_archive_sha256 is empty"}
    res = host.check(role="generator", host="tg", netns="xdplab-tg", interfaces=[veth], backend="trex", trex=trex)
    assert res["errors"] == [
        "tg: xdplab_generator_backend: trex drives PCI ports through DPDK, but xdplab_generator_interface veth-tg0 is a "
        "veth end of the virtual lab, not a PCI address; the virtual lab's generator is xdp_live",
        "tg: xdplab_generator_backend: T-Rex is not installed on tg (no /opt/trex/v3.04/t-rex-64) and cannot be "
        "installed: trex_archive_sha256 is empty",
    ]
    # PCI ports, T-Rex installed (or installable): fine; xdp_live on a PCI port is not
    host.pci("0000:3b:00.0", "vfio-pci")
    host.write("opt/trex/v3.04/t-rex-64", "#!/bin/sh\n")
    port = {"field": "xdplab_generator_ports[0]", "name": "0000:3b:00.0"}
    assert host.check(role="generator", host="tg", interfaces=[port], backend="trex", trex=trex)["errors"] == []
    res = host.check(role="generator", host="tg", interfaces=[port], backend="xdp_live")
    assert res["errors"] == [
        "tg: xdplab_generator_backend: xdp_live sends through a veth end or a virtio_net port, but "
        "xdplab_generator_ports[0] is PCI device 0000:3b:00.0 (a PCI port needs backend trex)"
    ]
    host.netdev("ens2f0", 9, pci="0000:5e:00.0", driver="ice")
    res = host.check(role="generator", host="tg", interfaces=[{"field": "xdplab_generator_interface", "name": "ens2f0"}],
                     backend="xdp_live")  # fmt: skip
    assert res["errors"] == [
        "tg: xdplab_generator_backend: xdp_live sends through a veth end or a virtio_net port, but "
        "xdplab_generator_interface ens2f0 has driver ice (a NIC port needs backend trex)"
    ]


def test_matrix_cores_against_online_cpus_and_dpdks_main_lcore(host):
    systems = [{"system": "xdp", "impl": "xdp", "cores": 1}, {"system": "dpdk_vector", "impl": "dpdk", "cores": 1}]
    # the virtual lab: DUT CPU 1, testpmd's main lcore on CPU 0 (the generator's)
    assert host.check(matrix={"cpus": [1], "systems": systems, "dpdk_main_lcore": 0})["errors"] == []
    res = host.check(matrix={"cpus": [0, 1], "systems": [dict(s, cores=2) for s in systems], "dpdk_main_lcore": 0})
    assert res["errors"] == [
        "dut: cores: the matrix runs dpdk_vector on up to 2 cores, but DPDK has only 1 online CPU(s) of xdplab_dut_cpus "
        "(0-1) to forward on, on dut: its main lcore (xdplab_dpdk_main_lcore: 0) takes one of them (online: 0-1)"
    ]
    res = host.check(matrix={"cpus": list(range(8)), "systems": [dict(systems[0], cores=8)]})
    assert res["errors"] == [
        "dut: cores: the matrix runs xdp on up to 8 cores, but only 2 of xdplab_dut_cpus (0-7) are online on dut (online: 0-1)"
    ]
    res = host.check(matrix={"cpus": [1], "systems": systems[1:], "dpdk_main_lcore": 5})
    assert res["errors"] == ["dut: xdplab_dpdk_main_lcore: CPU 5 (DPDK's main lcore) is not online on dut (online: 0-1)"]


def test_every_problem_at_once_and_nothing_run_that_changes(host):
    res = host.check(
        interfaces=[{"field": "xdplab_dut_interface", "name": "ens1f0"}, {"field": "xdplab_dpdk_port", "name": "0000:af:00.0"}],
        cpus=[{"field": "xdplab_dut_cpus", "cpus": list(range(8))}],
        matrix={"cpus": list(range(8)), "systems": [{"system": "xdp", "impl": "xdp", "cores": 8}]},
    )
    assert [p["field"] for p in res["problems"]] == ["xdplab_dut_interface", "xdplab_dpdk_port", "xdplab_dut_cpus", "cores"]
    # only reading commands
    assert all(c[:2] in (["ethtool", "-i"], ["ip", "-n"]) or c[:3] == ["ip", "netns", "exec"] for c in host.commands)


def test_pci_address_and_wording_helpers():
    assert hp.pci_address("AF:00.0") == "0000:af:00.0"
    assert hp.pci_address("0000:41:00.1") == "0000:41:00.1"
    assert hp.pci_address("ens1f0") is None and hp.pci_address("0000:41:00.8") is None
    assert hp.cpu_words([7]) == "CPU 7 is" and hp.cpu_words([2, 3, 4]) == "CPUs 2-4 are"
    assert hp.listing([]) == "none"
    assert hp.listing([str(i) for i in range(10)]).endswith(", 7, ... (10 in all)")


def test_port_lists_from_the_inventory(host):
    host.netdev("ens1f0", 7, pci="0000:af:00.0", driver="i40e")
    host.pci("0000:3b:00.0", "vfio-pci")
    res = host.check(
        interfaces=[{"field": "xdplab_dut_interface", "name": "ens1f0"}],
        port_lists=[
            {"field": "xdplab_dut_ports", "ports": [{"name": "ens1f0", "pci": "0000:41:00.0", "driver": "mlx5_core"},
                                                    {"name": "ens1f1", "pci": "0000:3b:00.0", "driver": "vfio-pci"}]},
            {"field": "xdplab_generator_ports", "ports": ["0000:3b:00.0", "0000:3b:00.1"]},
        ],
    )  # fmt: skip
    assert res["errors"] == [
        "dut: xdplab_dut_ports[0].pci: ens1f0 is PCI device 0000:af:00.0, not 0000:41:00.0",
        "dut: xdplab_dut_ports[0].pci: PCI device 0000:41:00.0 is not present in /sys/bus/pci/devices on dut "
        "(network devices: 0000:00:03.0 (virtio-pci), 0000:3b:00.0 (vfio-pci), 0000:af:00.0 (i40e))",
        "dut: xdplab_generator_ports[1]: PCI device 0000:3b:00.1 is not present in /sys/bus/pci/devices on dut "
        "(network devices: 0000:00:03.0 (virtio-pci), 0000:3b:00.0 (vfio-pci), 0000:af:00.0 (i40e))",
    ]


def test_matrix_systems_from_the_experiment_matrix():
    axes = [
        {"system": ["xdp"], "touch": ["no_touch", "read"], "cores": [1, 2, 8]},
        {"system": ["dpdk_vector", "dpdk_scalar"], "cores": [1, 5]},
        {"system": ["xdp", "linux_raw"], "cores": ["3"]},
    ]
    impls = {"xdp": "xdp", "dpdk_vector": "dpdk", "dpdk_scalar": "dpdk", "linux_raw": "linux"}
    got = hp.matrix_systems({"axes": axes, "impls": impls, "systems": []})
    assert got == [
        {"system": "xdp", "impl": "xdp", "cores": 8},
        {"system": "dpdk_vector", "impl": "dpdk", "cores": 5},
        {"system": "dpdk_scalar", "impl": "dpdk", "cores": 5},
        {"system": "linux_raw", "impl": "linux", "cores": 3},
    ]
    assert hp.matrix_systems({"axes": {"system": ["xdp"], "cores": [2]}, "impls": impls}) == [
        {"system": "xdp", "impl": "xdp", "cores": 2}
    ]


def test_virtio_port_by_pci_and_name_for_the_dut_and_xdp_live(host):
    """The VM lab: a virtio-net port is PCI function 0000:00:04.0 on virtio-pci carrying virtio device virtio1 on
    virtio_net (its interface ens4); the inventory names driver virtio_net, and xdp_live sends through it."""
    dev = host.pci("0000:00:04.0", "virtio-pci")
    vdev = dev / "virtio1"
    vdev.mkdir()
    drv = host.root / "sys/bus/virtio/drivers/virtio_net"
    drv.mkdir(parents=True)
    os.symlink(os.path.relpath(drv, vdev), vdev / "driver")
    port = {"field": "xdplab_dut_ports[0]", "name": "0000:00:04.0", "pci": "0000:00:04.0", "driver": "virtio_net",
            "driver_field": "xdplab_dut_ports[0].driver"}  # fmt: skip
    assert host.check(interfaces=[port])["errors"] == []
    res = host.check(interfaces=[dict(port, driver="mlx5_core")])
    assert res["errors"] == [
        "dut: xdplab_dut_ports[0].driver: PCI device 0000:00:04.0 is bound to virtio-pci (its virtio device: "
        "virtio_net), not mlx5_core"
    ]
    gen = {"field": "xdplab_generator_ports[0]", "name": "0000:00:04.0"}
    assert host.check(role="generator", host="tg", interfaces=[gen], backend="xdp_live")["errors"] == []

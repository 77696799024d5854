# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/vm_lab/templates/qemu_argv.j2 (one VM's qemu command line) rendered by Ansible's own templar, as the role's
tasks/vm.yml renders it: a data NIC's ``virtio`` (qemu virtio-net-pci properties) goes into that NIC's ``-device``,
sorted by name, each on or off; a NIC without it keeps the command line it had. The preflight's refusal of an unknown
property is tests/integration/test_vm_lab.py (no_traffic), and so is the inventory's DUT rendered through ansible."""

import json
import os

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = os.path.join(ROOT, "roles", "vm_lab", "templates", "qemu_argv.j2")

# inventories/vm's DUT: ingress 0000:00:04.0, egress 0000:00:05.0, two queue pairs each
DUT = {
    "name": "dut",
    "ssh_port": 52202,
    "cpus": 2,
    "memory_mib": 1024,
    "mgmt_mac": "02:58:44:56:00:20",
    "mgmt_pci": "0000:00:03.0",
    "nics": [
        {"link": "ingress", "pci": "0000:00:04.0", "mac": "02:58:44:56:00:02", "queues": 2, "address": "198.18.0.2/30"},
        {"link": "egress", "pci": "0000:00:05.0", "mac": "02:58:44:56:00:04", "queues": 2, "address": "198.18.0.6/30"},
    ],
}


def argv(vm):
    variables = {
        "vm_lab_qemu": "/usr/bin/qemu-system-x86_64",
        "vm_lab_machine": "pc",
        "vm_lab_accelerator": "tcg",
        "vm_lab_tcg_cpu": "max",
        "vm_lab_ifname_prefix": "vml",
        "__vm_lab_key": "/lab/id_ed25519",
        "__vm_lab_vmdir": "/lab/dut",
        "__vm_lab_disk_slot": "0x2",
        "__vm_lab_vm": vm,
    }
    with open(TEMPLATE) as f:
        text = Templar(loader=DataLoader(), variables=variables).template(trust_as_template(f.read()))
    return json.loads(text)


def devices(args):
    return [args[i + 1] for i, a in enumerate(args) if a == "-device" and args[i + 1].startswith("virtio-net-pci,netdev=data")]


def with_virtio(virtio):
    vm = json.loads(json.dumps(DUT))
    vm["nics"][0]["virtio"] = virtio
    return vm


def test_without_virtio_the_data_nics_are_as_before():
    assert devices(argv(DUT)) == [
        "virtio-net-pci,netdev=data0,mac=02:58:44:56:00:02,addr=0x04,mq=on,vectors=6",
        "virtio-net-pci,netdev=data1,mac=02:58:44:56:00:04,addr=0x05,mq=on,vectors=6",
    ]
    # an empty mapping (what inventories/vm gives a NIC without xdplab_vm_nic_options) is the same command line
    assert argv(with_virtio({})) == argv(DUT)


def test_the_inventorys_ingress_options_go_on_that_nic_only_sorted_and_on_off():
    # inventories/vm/host_vars/dut.yml's xdplab_vm_nic_options["0000:00:04.0"]
    options = {"mrg_rxbuf": "off", "guest_tso4": "off", "guest_tso6": "off", "guest_ecn": "off", "guest_ufo": "off"}
    args = argv(with_virtio(options))
    assert devices(args) == [
        "virtio-net-pci,netdev=data0,mac=02:58:44:56:00:02,addr=0x04,mq=on,vectors=6,"
        "guest_ecn=off,guest_tso4=off,guest_tso6=off,guest_ufo=off,mrg_rxbuf=off",
        "virtio-net-pci,netdev=data1,mac=02:58:44:56:00:04,addr=0x05,mq=on,vectors=6",
    ]
    # nothing else of the command line moves (the tap, the fw_cfg files, the management NIC)
    assert [a for a in args if "mrg_rxbuf" not in a] == [a for a in argv(DUT) if not a.startswith("virtio-net-pci,netdev=data0")]


@pytest.mark.parametrize("value, rendered", [(False, "off"), (True, "on"), ("off", "off"), ("On", "on"), ("OFF", "off")])
def test_yaml_booleans_and_any_case_render_as_on_off(value, rendered):
    # an unquoted `off` in an inventory is YAML 1.1's false: qemu gets off either way
    assert devices(argv(with_virtio({"mrg_rxbuf": value})))[0].endswith(",vectors=6,mrg_rxbuf=" + rendered)


def test_a_single_queue_nic_gets_its_properties_after_its_address():
    vm = with_virtio({"packed": "on", "csum": "off"})
    vm["nics"][0]["queues"] = 1
    assert devices(argv(vm))[0] == "virtio-net-pci,netdev=data0,mac=02:58:44:56:00:02,addr=0x04,csum=off,packed=on"

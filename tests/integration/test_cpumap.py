# SPDX-License-Identifier: GPL-3.0-or-later
"""XDP_REDIRECT into a cpumap: received on one CPU, forwarded from another (issue 9's cpumap variant), on real veth.

Namespaces ``xd-cm-<random>-tg`` and ``-dut`` joined by two veth pairs (tg0 <-> dut0 ingress, tg1 <-> dut1 egress;
GRO on every end so each has NAPI). The module xdp_program attaches bpf/xdp_redirect_cpu's ``xdp_redirect_cpu`` to
dut0 with ``variables: {remote_cpu: R}`` and ``map_entries: {cpu_map: {R: {qsize, program: xdp_cpumap_fwd}},
tx_ports: {0: dut1}}``. The generator runs on CPU G, and so does dut0's receive path (veth's NAPI is scheduled on
the sending CPU); R is the other CPU. The ingress program never touches the devmap, so every frame counted at tg1
went through the cpumap program on CPU R. Checks: the entry reads back (queue size and its program), a second run
changes nothing, the cpumap kthread of the entry is bound to CPU R, the DUT enqueued what the generator sent, and
the far-side count (xdp_bare_drop on tg1) equals it and agrees within 1 % with tg1's own rx_packets. Bad input (a
cpumap entry naming a program that is not a cpumap program) is refused before anything changes.
"""

import json
import os

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "bpf", "build")
GEN = os.path.join(BUILD, "xdplab-trafficgen")
OBJ = os.path.join(BUILD, "xdp_redirect_cpu.bpf.o")
RATE, SECONDS, QSIZE = 50000, 2, 2048
GEN_CPU, REMOTE_CPU = 0, 1
MACS = {"tg0": "02:58:44:50:0e:01", "dut0": "02:58:44:50:0e:02", "tg1": "02:58:44:50:0e:03",
        "dut1": "02:58:44:50:0e:04"}


@pytest.fixture
def lab(netlab, bpf_build):
    if os.cpu_count() < 2:
        pytest.skip("a cpumap forwards from another CPU: needs 2 CPUs")
    bpf_build("xdplab-trafficgen", "xdp_redirect_cpu.bpf.o")
    lab = netlab("xd-cm", pairs=[("tg0", "dut0"), ("tg1", "dut1")], gro=["tg0", "dut0", "tg1", "dut1"],
                 macs=MACS, no_ipv6=True)
    return lab


def cpumap_kthread_cpus(map_id):
    """{pid: Cpus_allowed_list} of the kernel threads cpumap/<cpu>/map:<map_id>."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as fh:
                comm = fh.read().strip()
            if comm.startswith("cpumap/") and comm.endswith(f"/map:{map_id}"):
                with open(f"/proc/{pid}/status") as fh:
                    status = dict(line.split(":\t", 1) for line in fh.read().splitlines() if ":\t" in line)
                out[comm] = status["Cpus_allowed_list"].strip()
        except OSError:
            continue
    return out


def test_cpumap_forwards_from_the_other_cpu(lab):
    from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf

    base = {"interface": "dut0", "object": OBJ, "program": "xdp_redirect_cpu", "variables": {"remote_cpu": REMOTE_CPU}}
    # bad input first: a cpumap entry runs only a program loaded for a cpumap
    bad = lab.module(lab.dut, "xdp_program", dict(base, map_entries={
        "cpu_map": {REMOTE_CPU: {"qsize": QSIZE, "program": "xdp_redirect_cpu"}}, "tx_ports": {0: "dut1"}}))
    assert bad.get("failed") and "not xdp/cpumap" in bad["msg"], bad
    assert lab.xdp("dut0") is None, "a refused cpumap entry must change nothing"

    fwd = dict(base, map_entries={"cpu_map": {REMOTE_CPU: {"qsize": QSIZE, "program": "xdp_cpumap_fwd"}},
                                  "tx_ports": {0: "dut1"}})
    attached = lab.module(lab.dut, "xdp_program", fwd)
    assert attached["changed"] and not attached.get("failed"), attached
    ifindex = int(lab.exec(lab.dut, "cat", "/sys/class/net/dut1/ifindex").stdout)
    # tx_ports is a map of the cpumap program only: found through the cpumap entry
    assert attached["map_entries"] == {"cpu_map": {str(REMOTE_CPU): {"qsize": QSIZE, "program": "xdp_cpumap_fwd"}},
                                       "tx_ports": {"0": ifindex}}, attached
    assert attached["variables"]["remote_cpu"] == REMOTE_CPU
    again = lab.module(lab.dut, "xdp_program", fwd)
    assert again["changed"] is False and again["id"] == attached["id"], again

    cpu_map = libbpf.find_prog_map(attached["id"], name="cpu_map")
    assert cpu_map["type"] == libbpf.BPF_MAP_TYPE_CPUMAP
    # the kernel's thread for the entry, bound to the remote CPU
    assert cpumap_kthread_cpus(cpu_map["id"]) == {f"cpumap/{REMOTE_CPU}/map:{cpu_map['id']}": str(REMOTE_CPU)}

    drop = lab.module(lab.tg, "xdp_program", {"interface": "tg1", "object": os.path.join(BUILD, "xdp_bare_drop.bpf.o"),
                                              "program": "xdp_bare_drop"})
    assert drop["changed"], drop
    far_args = {"devices": ["tg1"], "extra_devices": ["tg0"]}
    dut_args = {"devices": ["dut0"], "extra_devices": ["dut1"], "at": "dut", "count": "if_rx_packets"}
    far0 = lab.module(lab.tg, "rx_counters", dict(far_args, snapshot_only=True))["snapshot"]
    dut0 = lab.module(lab.dut, "rx_counters", dict(dut_args, snapshot_only=True))["snapshot"]
    gen = lab.exec(lab.tg, GEN, "--dev", "tg0", "--src-mac", MACS["tg0"], "--dst-mac", MACS["dut0"],
                   "--src-ip", "10.78.0.1", "--dst-ip", "10.78.0.2", "--pkt-len", "64", "--flows", "1",
                   "--queues", "1", "--cpus", str(GEN_CPU), "--duration", str(SECONDS), "--rate", str(RATE),
                   "--obj", os.path.join(BUILD, "xdp_trafficgen.bpf.o"))
    sent = json.loads(gen.stdout.strip().splitlines()[-1])["sent"]
    far = lab.module(lab.tg, "rx_counters", dict(far_args, since=far0))
    dut = lab.module(lab.dut, "rx_counters", dict(dut_args, since=dut0))

    counted = far["counted"]
    assert sent > 0.8 * RATE * SECONDS, sent
    # the ingress program redirected every frame (into the cpumap) ...
    assert abs(dut["deltas"]["dut0"]["rx_queue_0_xdp_redirect"] - sent) <= 0.01 * sent, (dut["deltas"], sent)
    # ... and what came back out of dut1 can only have been sent by the cpumap program on the remote CPU
    assert abs(dut["deltas"]["dut1"]["tx_queue_0_xdp_xmit"] - sent) <= 0.01 * sent, (dut["deltas"], sent)
    assert abs(counted["packets"] - sent) <= 0.01 * sent, (counted, sent)
    assert counted["own_packets"] > 0 and abs(far["agreement"]) <= 1.0, counted

    for ns, dev in ((lab.dut, "dut0"), (lab.tg, "tg1")):
        assert lab.module(ns, "xdp_program", {"interface": dev, "state": "absent"})["changed"]

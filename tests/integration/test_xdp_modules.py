# SPDX-License-Identifier: GPL-3.0-or-later
"""Root-only tests of xdp_program, xdp_stats and testbed_facts against the real kernel.

Each test builds its own lab: two network namespaces named ``xp-<random>-dut`` / ``xp-<random>-gen`` joined by a
veth pair with 2 RX/TX queues (DUT side ``dut0``, generator side ``gen0``). The modules run as Ansible runs them:
a separate Python process inside ``ip netns exec`` reading its arguments from a JSON file (and once through the
``ansible`` CLI). Traffic is UDP from a Python socket in the generator namespace; XPS on gen0 maps CPU 0 to TX
queue 0 and CPU 1 to TX queue 1, and veth delivers TX queue q to the peer's RX queue q, so pinning the sender to
a CPU picks the DUT queue.
"""

import json
import os
import secrets
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
OBJECT = os.path.join(ROOT, "bpf", "build", "xdp_bench.bpf.o")
MODULES = "ansible_collections.xdplab.testbed.plugins.modules"
DUT_IP, GEN_IP = "10.201.0.1", "10.201.0.2"


def sh(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kw)


@pytest.fixture(scope="session")
def bench_object(bpf_build):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    bpf_build("xdp_bench.bpf.o")
    assert os.path.exists(OBJECT)
    return OBJECT


class Lab:
    """The XDP modules' view of a lab from the netlab fixture (tests/integration/conftest.py)."""

    def __init__(self, tmp_path, net):
        self.dut_ns, self.gen_ns = net.dut, net.gen
        self.tmp = tmp_path
        self.state_dir = str(tmp_path / "state")
        self.created = list(net.names)
        self.dut_mac = net.mac("dut0")
        # the DUT drops everything (ARP too): a static neighbour lets the generator send anyway
        sh("ip", "-n", self.gen_ns, "neigh", "replace", DUT_IP, "lladdr", self.dut_mac, "dev", "gen0",
           "nud", "permanent")
        for q in (0, 1):
            sh("ip", "netns", "exec", self.gen_ns, "sh", "-c",
               f"echo {1 << q:x} > /sys/class/net/gen0/queues/tx-{q}/xps_cpus")

    def module(self, name, args, ns=None):
        """Run module ``name`` like Ansible does (own process, args from a JSON file) in the DUT namespace."""
        path = self.tmp / f"args-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = dict(os.environ, PYTHONPATH=COLLECTIONS)
        proc = subprocess.run(["ip", "netns", "exec", ns or self.dut_ns, sys.executable, "-m", f"{MODULES}.{name}",
                               str(path)], capture_output=True, text=True, env=env, check=False)
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)

    def xdp(self, **args):
        args.setdefault("interface", "dut0")
        args.setdefault("state_dir", self.state_dir)
        return self.module("xdp_program", args)

    def link_xdp(self, ifname="dut0"):
        """What iproute2 says is attached: (id, tag, mode) or None."""
        link = json.loads(sh("ip", "-n", self.dut_ns, "-j", "-d", "link", "show", ifname).stdout)[0]
        xdp = link.get("xdp")
        if not xdp or "prog" not in xdp:
            return None
        return xdp["prog"]["id"], xdp["prog"]["tag"], xdp["mode"]

    def sender(self, cpu, count=None, seconds=None, pps=2000, delay=0.0):
        """Start a UDP sender in the generator namespace pinned to ``cpu`` (so to DUT RX queue ``cpu``)."""
        script = textwrap.dedent(f"""
            import socket, time
            time.sleep({delay})
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            batch, gap = 20, 20 / {pps}
            sent, start = 0, time.monotonic()
            limit, end = {count!r}, start + ({seconds!r} or 1e9)
            while (limit is None or sent < limit) and time.monotonic() < end:
                for _ in range(batch if limit is None else min(batch, limit - sent)):
                    s.sendto(b"x" * 18, ("{DUT_IP}", 9000 + sent % 4))
                    sent += 1
                time.sleep(max(0.0, start + sent / {pps} - time.monotonic()))
            print(sent)
        """)
        return subprocess.Popen(["ip", "netns", "exec", self.gen_ns, "taskset", "-c", str(cpu), sys.executable,
                                 "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def lab(tmp_path, bench_object, netlab):
    # dut0 <-> gen0 with 2 queues and addresses, no IPv6; the namespaces go with the netlab fixture, always
    net = netlab("xp", sides=("dut", "gen"), pairs=[("dut0", "gen0")], queues=2, no_ipv6=True,
                 addresses={"dut0": f"{DUT_IP}/24", "gen0": f"{GEN_IP}/24"})  # fmt: skip
    return Lab(tmp_path, net)


def attach_drop(lab, **extra):
    res = lab.xdp(object=OBJECT, program="xdp_bench_drop", **extra)
    assert res.get("failed") is not True, res
    return res


def test_attach_idempotent_replace_detach(lab):
    base = {"object": OBJECT, "program": "xdp_bench_drop"}
    # check mode: reports a change, attaches nothing
    res = lab.xdp(**base, _ansible_check_mode=True, _ansible_diff=True)
    assert res["changed"] is True and res["diff"]["before"] == {}
    assert res["diff"]["after"]["program"] == "xdp_bench_drop"
    assert lab.link_xdp() is None

    res = lab.xdp(**base)
    assert res["changed"] is True and res["name"] == "xdp_bench_drop" and res["mode"] == "native"
    first_id = res["id"]
    assert lab.link_xdp() == (first_id, res["tag"], 1)  # 1 = XDP_ATTACHED_DRV
    assert res["ifindex"] == int(sh("ip", "netns", "exec", lab.dut_ns, "cat", "/sys/class/net/dut0/ifindex").stdout)
    assert res["variables"] == {"touch_mode": 0, "redirect_ifindex": 0, "count_mode": 0}
    assert len(res["object_sha256"]) == 64

    # idempotent: same name, mode, .rodata and object checksum
    again = lab.xdp(**base)
    assert again["changed"] is False and again["id"] == first_id
    assert os.path.exists(os.path.join(lab.state_dir, f"prog-{first_id}.json"))

    # another .rodata value: replaced (XDP_FLAGS_REPLACE), value read back from the kernel
    res = lab.xdp(**base, variables={"touch_mode": 1})
    assert res["changed"] is True and res["id"] != first_id
    assert res["previous"]["id"] == first_id and res["variables"]["touch_mode"] == 1
    assert lab.link_xdp()[0] == res["id"]
    assert not os.path.exists(os.path.join(lab.state_dir, f"prog-{first_id}.json"))
    assert lab.xdp(**base, variables={"touch_mode": 1})["changed"] is False

    # an interface NAME for a *_ifindex variable
    res = lab.xdp(object=OBJECT, program="xdp_bench_redirect", variables={"redirect_ifindex": "lo"})
    assert res["changed"] is True and res["name"] == "xdp_bench_redirect"
    assert res["variables"]["redirect_ifindex"] == 1

    # generic mode: the old native program goes, the new one is in skb mode
    res = lab.xdp(**base, mode="skb")
    assert res["changed"] is True and res["mode"] == "skb"
    assert lab.link_xdp() == (res["id"], res["tag"], 2)  # 2 = XDP_ATTACHED_SKB

    # absent: check mode changes nothing, then detach, then nothing to do
    res = lab.xdp(state="absent", _ansible_check_mode=True)
    assert res["changed"] is True and lab.link_xdp() is not None
    res = lab.xdp(state="absent")
    assert res["changed"] is True and res["id"] is None and lab.link_xdp() is None
    assert lab.xdp(state="absent")["changed"] is False
    assert os.listdir(lab.state_dir) == []


def test_idempotent_through_the_ansible_cli(lab):
    args = json.dumps({"interface": "dut0", "object": OBJECT, "program": "xdp_bench_pass",
                       "variables": {"touch_mode": 2}, "state_dir": lab.state_dir})
    env = dict(os.environ, ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    results = []
    for run in range(2):
        tree = lab.tmp / f"tree{run}"  # ansible -t writes each host's result as JSON
        proc = subprocess.run(["ip", "netns", "exec", lab.dut_ns, ansible, "localhost", "-i", "localhost,", "-c",
                               "local", "-t", str(tree), "-m", "xdplab.testbed.xdp_program", "-a", args],
                              capture_output=True, text=True, env=env, cwd=ROOT, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        results.append(json.loads((tree / "localhost").read_text()))
    assert results[0]["changed"] is True and results[1]["changed"] is False
    assert results[0]["id"] == results[1]["id"] == lab.link_xdp()[0]
    assert results[1]["variables"]["touch_mode"] == 2


def test_stats_count_a_burst_on_the_right_queue_and_agree_with_ethtool(lab):
    attach_drop(lab)
    burst = 2000
    stats_args = {"interface": "dut0", "interval": 1.0, "samples": 4, "warmup": 0}
    # the module needs well under 1 s to start; the burst starts 2 s after launch and lasts 0.2 s
    sender = lab.sender(cpu=1, count=burst, pps=10000, delay=2.0)
    res = lab.module("xdp_stats", stats_args)
    sent = int(sender.communicate(timeout=30)[0])
    assert res.get("failed") is not True, res
    assert sent == burst
    assert res["packets"] == burst
    assert [e["queue"] for e in res["per_rxq"]] == [1]
    assert res["per_rxq"][0]["cpus"] == [1]
    assert res["rxq_cpu"] == [{"queue": 1, "cpu": 1, "pps": res["per_rxq"][0]["pps"]}]
    assert sum(s["packets"] for s in res["samples"]) == burst and len(res["samples"]) == 4
    assert res["errors_per_second"] == 0
    # ethtool -S of veth counts the same packets per RX queue over (almost) the same window
    eth = res["ethtool"]
    assert "rx_queue_0_xdp_packets" not in eth
    assert eth["rx_queue_1_xdp_packets"] == pytest.approx(res["per_rxq"][0]["pps"], rel=0.05)
    assert eth["rx_queue_1_xdp_drops"] == pytest.approx(eth["rx_queue_1_xdp_packets"])
    assert res["program"]["name"] == "xdp_bench_drop"


def measure(lab, rates, seconds=4.0):
    senders = [lab.sender(cpu=q, seconds=seconds, pps=pps) for q, pps in enumerate(rates)]
    try:
        return lab.module("xdp_stats", {"interface": "dut0", "interval": 1.0, "samples": 2, "warmup": 0.8})
    finally:
        for s in senders:
            s.communicate(timeout=30)


def test_stats_flag_an_uneven_spread_over_queues(lab):
    attach_drop(lab)
    even = measure(lab, [1500, 1500])
    assert even.get("failed") is not True, even
    assert [e["queue"] for e in even["per_rxq"]] == [0, 1]
    assert [e["cpus"] for e in even["per_rxq"]] == [[0], [1]]
    assert even["total_pps"] == pytest.approx(3000, rel=0.2)
    assert even["imbalance"]["imbalanced"] is False, even["imbalance"]
    uneven = measure(lab, [750, 2250])
    assert uneven["imbalance"]["imbalanced"] is True, uneven["imbalance"]
    assert uneven["imbalance"]["busiest_queue"] == 1 and uneven["imbalance"]["busiest_cpu"] == 1
    assert uneven["imbalance"]["max_over_mean"] == pytest.approx(1.5, abs=0.15)
    ratio = uneven["ethtool"]["rx_queue_1_xdp_packets"] / uneven["ethtool"]["rx_queue_0_xdp_packets"]
    assert ratio == pytest.approx(3.0, rel=0.15)


def test_errors_say_what_to_do(lab, tmp_path):
    res = lab.module("xdp_stats", {"interface": "dut0"})
    assert res["failed"] and "no XDP program attached on dut0" in res["msg"]

    sh("ip", "-n", lab.dut_ns, "link", "add", "xp-ifb0", "type", "ifb")
    sh("ip", "-n", lab.dut_ns, "link", "set", "xp-ifb0", "up")
    res = lab.xdp(interface="xp-ifb0", object=OBJECT, program="xdp_bench_drop")
    assert res["failed"] and res["changed"] is False
    assert res["msg"].startswith("driver of xp-ifb0 does not support native XDP; use mode: skb")
    res = lab.xdp(interface="xp-ifb0", object=OBJECT, program="xdp_bench_drop", mode="skb")
    assert res["changed"] is True and res["mode"] == "skb"
    assert lab.link_xdp("xp-ifb0")[0] == res["id"]

    bad_src = tmp_path / "bad.bpf.c"
    bad_src.write_text(textwrap.dedent("""
        #include <linux/bpf.h>
        #include <bpf/bpf_helpers.h>
        SEC("xdp") int xdp_unchecked(struct xdp_md *ctx)
        {
            unsigned char *data = (void *)(long)ctx->data;
            return data[20] ? XDP_DROP : XDP_PASS;   /* no bounds check: the verifier refuses it */
        }
        char _license[] SEC("license") = "GPL";
    """))
    bad_obj = tmp_path / "bad.bpf.o"
    sh("clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", str(bad_src), "-o",
       str(bad_obj))
    res = lab.xdp(object=str(bad_obj), program="xdp_unchecked")
    assert res["failed"] and "the kernel rejected xdp_unchecked" in res["msg"]
    assert "invalid access to packet" in res["verifier_log"]
    assert lab.link_xdp() is None

    res = lab.xdp(interface="xp-nope", object=str(bad_obj), program="xdp_unchecked")
    assert res["failed"] and "does not exist in this network namespace" in res["msg"] and "dut0" in res["msg"]
    # absent on an interface that is not there holds already: cleanup does not fail
    res = lab.xdp(interface="xp-nope", state="absent")
    assert not res.get("failed") and res["changed"] is False and res["ifindex"] is None


def test_testbed_facts_describe_the_dut(lab):
    attached = attach_drop(lab)
    res = lab.module("testbed_facts", {"interfaces": ["dut0"], "_ansible_check_mode": True})
    assert res["changed"] is False
    assert res["kernel"]["release"] == os.uname().release
    assert res["cpu"]["count"] == os.cpu_count() and len(res["cpu"]["online_list"]) >= 1
    assert res["tools"]["libbpf"].startswith("1.")
    (dut,) = res["interfaces"]
    assert dut["driver"] == "veth" and dut["channels"]["current"]["rx"] == 2
    assert dut["mac"] == lab.dut_mac and dut["mtu"] == 1500
    assert dut["xdp"] == {"id": attached["id"], "tag": attached["tag"], "name": "xdp_bench_drop", "mode": "native"}


BARE_OBJECT = os.path.join(ROOT, "bpf", "build", "xdp_bare_drop.bpf.o")


def stats_together(lab, argsets):
    """Run several xdp_stats at the same moment, each in its own process as Ansible's forks would; their results."""
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    procs = []
    for args in argsets:
        path = lab.tmp / f"args-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        procs.append(subprocess.Popen(["ip", "netns", "exec", lab.dut_ns, sys.executable, "-m", f"{MODULES}.xdp_stats",
                                       str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert out.strip(), err
        results.append(json.loads(out))
    return results


def test_driver_count_agrees_with_program_count_on_real_traffic(lab):
    """count: driver (veth's rx_queue_N_xdp_drops) and count: program (the rxq_stats map) of the same packets."""
    attach_drop(lab)
    window = {"interface": "dut0", "interval": 1.0, "samples": 3, "warmup": 1.0, "ethtool": False}
    senders = [lab.sender(cpu=q, seconds=7.0, pps=pps) for q, pps in enumerate((3000, 6000))]
    try:
        program, driver = stats_together(lab, [dict(window, count="program"), dict(window, count="driver")])
    finally:
        sent = [int(s.communicate(timeout=30)[0]) for s in senders]
    assert sum(sent) > 40000
    for res in (program, driver):
        assert res.get("failed") is not True, res
    pm, dm = program["measurement"], driver["measurement"]
    assert pm["source"]["kind"] == "program_map" and pm["source"]["count_mode"] == "program" == program["count_mode"]
    assert dm["source"] == {"kind": "driver_counters", "at": "dut", "count_mode": "driver", "interface": "dut0",
                            "driver": "veth", "action": "drop", "counter": "rx_queue_{queue}_xdp_drops",
                            "program": "xdp_bench_drop"}
    assert driver["driver"] == "veth" and driver["per_cpu"] == [] and len(dm["samples"]) == 3
    assert pm["pps"] == pytest.approx(9000, rel=0.2)
    print(f"count=program {pm['pps']:.1f} pps, count=driver {dm['pps']:.1f} pps, "
          f"windows start {abs(dm['window']['start'] - pm['window']['start']) * 1e3:.1f} ms apart")
    # the two windows start within a few ms of each other on a steady load: the rates agree within 1 %
    assert dm["pps"] == pytest.approx(pm["pps"], rel=0.01), (dm["pps"], pm["pps"])
    assert [q["queue"] for q in dm["per_rxq"]] == [q["queue"] for q in pm["per_rxq"]] == [0, 1]
    for d, p in zip(dm["per_rxq"], pm["per_rxq"]):
        assert d["pps"] == pytest.approx(p["pps"], rel=0.01), (d, p)
    assert dm["imbalance"]["busiest_queue"] == pm["imbalance"]["busiest_queue"] == 1


def test_driver_count_of_a_bare_program_without_maps(lab):
    """A bare XDP_DROP program has no map: count: driver counts its drops exactly; count: program says what to do."""
    res = lab.xdp(object=BARE_OBJECT, program="xdp_bare_drop")
    assert res.get("failed") is not True, res
    burst = 2000
    sender = lab.sender(cpu=1, count=burst, pps=10000, delay=2.0)
    res = lab.module("xdp_stats", {"interface": "dut0", "count": "driver", "interval": 1.0, "samples": 4})
    assert int(sender.communicate(timeout=30)[0]) == burst
    assert res.get("failed") is not True, res
    m = res["measurement"]
    assert m["packets"] == burst and [q["queue"] for q in m["per_rxq"]] == [1]
    assert m["source"]["program"] == "xdp_bare_drop" and res["program"]["map_id"] is None
    assert sum(s["packets"] for s in m["samples"]) == burst
    res = lab.module("xdp_stats", {"interface": "dut0", "samples": 1, "interval": 0.1})
    assert res["failed"] and "has no rxq_stats map" in res["msg"] and "count: driver" in res["msg"]

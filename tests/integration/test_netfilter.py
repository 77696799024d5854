# SPDX-License-Identifier: GPL-3.0-or-later
"""Root-only tests of netfilter_drop and netfilter_stats against the real kernel.

Each test builds its own lab: namespaces ``xd-nf-<random>-tg`` / ``xd-nf-<random>-dut`` joined by a veth pair (DUT
side ``dut0`` with GRO on, so frames go through veth's NAPI poll and then the stack; generator side ``tg0`` with
TSO off, else veth hands socket traffic straight to netif_rx and NAPI never runs). The modules run as Ansible runs
them (own process inside ``ip netns exec``, arguments from a JSON file; once through the ``ansible`` CLI). Traffic
is UDP from a Python socket in the generator namespace, so the number sent is known exactly.
"""

import json
import os
import secrets
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
MODULES = "ansible_collections.xdplab.testbed.plugins.modules"
DUT_IP, TG_IP = "10.211.0.1", "10.211.0.2"
BACKENDS = [("nftables", "iptables"), ("iptables", "iptables"), ("iptables", "iptables-legacy")]


def sh(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kw)


class Lab:
    """The netfilter tests' view of a lab from the netlab fixture (tests/integration/conftest.py)."""

    def __init__(self, tmp_path, net):
        self.dut_ns, self.tg_ns = net.dut, net.tg
        self.tmp = tmp_path
        self.created = list(net.names)
        mac = net.mac("dut0")
        sh("ip", "-n", self.tg_ns, "neigh", "replace", DUT_IP, "lladdr", mac, "dev", "tg0", "nud", "permanent")

    def module(self, name, args):
        path = self.tmp / f"args-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = dict(os.environ, PYTHONPATH=COLLECTIONS)
        proc = subprocess.run(["ip", "netns", "exec", self.dut_ns, sys.executable, "-m", f"{MODULES}.{name}",
                               str(path)], capture_output=True, text=True, env=env, check=False)
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)

    def dut(self, *argv, check=True):
        return sh("ip", "netns", "exec", self.dut_ns, *argv, check=check).stdout

    def sender(self, count, pps, ports=2, delay=0.0):
        """UDP to ports 12 .. 12+ports-1 of the DUT; prints the number sent."""
        script = textwrap.dedent(f"""
            import socket, time
            time.sleep({delay})
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sent, start = 0, time.monotonic()
            while sent < {count}:
                for _ in range(min(50, {count} - sent)):
                    s.sendto(b"x" * 18, ("{DUT_IP}", 12 + sent % {ports}))
                    sent += 1
                time.sleep(max(0.0, start + sent / {pps} - time.monotonic()))
            print(sent)
        """)
        return subprocess.Popen(["ip", "netns", "exec", self.tg_ns, "taskset", "-c", "0", sys.executable, "-c",
                                 script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def udp_seen(self):
        """UDP datagrams the DUT's UDP layer saw (delivered + no port), from /proc/net/snmp of the namespace."""
        lines = [ln.split() for ln in self.dut("cat", "/proc/net/snmp").splitlines() if ln.startswith("Udp:")]
        row = dict(zip(lines[0][1:], map(int, lines[1][1:])))
        return row["InDatagrams"] + row["NoPorts"]

    def ours_left(self, backend_binary):
        """Any trace of our objects, in both backends."""
        left = []
        if "xdplab" in self.dut("nft", "list", "tables", check=False):
            left.append("nft table")
        for binary in sorted({"iptables", backend_binary}):
            for table in ("raw", "mangle"):
                if "xdplab" in self.dut(binary, "-w", "-t", table, "-S", check=False):
                    left.append(f"{binary} {table}")
        return left


@pytest.fixture
def lab(tmp_path, netlab):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    for tool in ("nft", "iptables", "iptables-legacy", "ethtool"):
        if not any(os.path.exists(os.path.join(d, tool)) for d in ("/usr/sbin", "/sbin", "/usr/bin")):
            pytest.skip(f"{tool} not installed (apt-get install nftables iptables ethtool)")
    # dut0 <-> tg0 with addresses, GRO on dut0, TSO off on tg0, no IPv6; torn down by the netlab fixture
    net = netlab("xd-nf", sides=("dut", "tg"), pairs=[("dut0", "tg0")], gro=["dut0"], features={"tg0": {"tso": "off"}},
                 addresses={"dut0": f"{DUT_IP}/24", "tg0": f"{TG_IP}/24"}, no_ipv6=True)
    return Lab(tmp_path, net)


@pytest.mark.parametrize("mode", ["raw", "conntrack"])
@pytest.mark.parametrize(("backend", "binary"), BACKENDS)
def test_drop_count_idempotence_and_removal(lab, backend, binary, mode):
    base = {"backend": backend, "iptables_binary": binary, "interface": "dut0", "port_count": 2}
    # without a rule the test flows reach UDP (no listener: NoPorts)
    seen0 = lab.udp_seen()
    assert int(lab.sender(count=100, pps=5000).communicate(timeout=30)[0]) == 100
    assert lab.udp_seen() - seen0 == 100

    first = lab.module("netfilter_drop", dict(base, mode=mode))
    assert first["changed"] is True, first
    assert first["mode"] == mode and len(first["handles"]) == 1 and first["rules"][0]["packets"] == 0
    assert first["backend_version"].startswith("nftables v" if backend == "nftables" else "iptables v")
    again = lab.module("netfilter_drop", dict(base, mode=mode))
    assert again["changed"] is False and again["ruleset"] == first["ruleset"]
    other = "conntrack" if mode == "raw" else "raw"
    check = lab.module("netfilter_drop", dict(base, mode=other, _ansible_check_mode=True, _ansible_diff=True))
    assert check["changed"] is True and check["diff"]["before"] == first["ruleset"] != check["diff"]["after"]
    assert lab.module("netfilter_drop", dict(base, mode=mode))["changed"] is False  # check mode changed nothing

    # traffic while netfilter_stats samples: 3000 pps for 6 s; the window is 2.5 s from 1 s after the module starts
    seen0 = lab.udp_seen()
    sender = lab.sender(count=18000, pps=3000)
    stats = lab.module("netfilter_stats", {"backend": backend, "iptables_binary": binary, "mode": mode,
                                           "warmup": 1.0, "interval": 0.5, "samples": 5})
    sent = int(sender.communicate(timeout=60)[0])
    assert stats["changed"] is False and stats["mode"] == mode and stats["interface"] == "dut0"
    assert stats["pps"] == pytest.approx(3000, rel=0.35), stats
    assert len(stats["samples"]) == 5 and all(s["pps"] > 0 for s in stats["samples"])
    # timestamps are the midpoints of the reads: a slow first read (iptables under load) starts the window later
    window = stats["window"]["end"] - stats["window"]["start"]
    assert 1.5 <= window <= 3.5 and window == pytest.approx(sum(s["seconds"] for s in stats["samples"]), abs=1e-3)
    assert sum(c["pps"] for c in stats["per_cpu"]) >= 0.5 * stats["pps"]  # softnet: all protocols, whole machine
    assert stats["per_rxq"][0]["counter"] == "rx_queue_0_xdp_packets"
    assert stats["per_rxq"][0]["pps"] == pytest.approx(3000, rel=0.35)
    m = stats["measurement"]  # the one shape: the same numbers, the source says what counted
    assert m["source"] == {"kind": "netfilter_rule", "at": "dut", "backend": backend, "mode": mode,
                           "table": "xdplab", "interface": "dut0"}
    assert m["packets"] == stats["packets"] and m["pps"] == pytest.approx(stats["pps"], rel=1e-3)
    assert len(m["samples"]) == 5 and m["window"]["clock"] == "CLOCK_MONOTONIC"
    assert m["window"]["start"] == stats["window"]["start"] and m["per_rxq"] == stats["per_rxq"]
    if mode == "conntrack":
        # every packet went through conntrack (the rule only matches packets conntrack classified) but the
        # drop comes before the entry is confirmed, so none stays
        assert stats["conntrack_count"] == 0
    else:
        assert stats["conntrack_count"] is None

    # the rule counted every packet sent and none reached UDP
    final = lab.module("netfilter_drop", dict(base, mode=mode))
    assert final["changed"] is False
    assert final["rules"][0]["packets"] == sent == 18000
    assert lab.udp_seen() == seen0

    gone = lab.module("netfilter_drop", {"state": "absent", "backend": backend, "iptables_binary": binary})
    assert gone["changed"] is True and gone["rules"] == [] and gone["ruleset"] == ""
    assert lab.module("netfilter_drop", {"state": "absent", "backend": backend,
                                         "iptables_binary": binary})["changed"] is False
    assert lab.ours_left(binary) == []


def test_switching_backend_removes_the_other(lab):
    lab.module("netfilter_drop", {"interface": "dut0", "mode": "raw"})
    res = lab.module("netfilter_drop", {"interface": "dut0", "mode": "raw", "backend": "iptables"})
    assert res["changed"] is True and any("left by an earlier run" in str(w) for w in res.get("warnings", []))
    assert "xdplab" not in lab.dut("nft", "list", "tables") .replace("ip raw", "")
    assert lab.module("netfilter_drop", {"state": "absent", "backend": "iptables"})["changed"] is True
    assert lab.ours_left("iptables") == []


def test_other_rules_survive_absent(lab):
    lab.dut("nft", "add", "table", "inet", "someoneelse")
    lab.dut("iptables", "-w", "-t", "raw", "-A", "PREROUTING", "-p", "tcp", "--dport", "22", "-j", "ACCEPT")
    lab.module("netfilter_drop", {"interface": "dut0", "mode": "conntrack", "backend": "iptables"})
    lab.module("netfilter_drop", {"state": "absent", "backend": "iptables"})
    lab.module("netfilter_drop", {"interface": "dut0"})
    lab.module("netfilter_drop", {"state": "absent"})
    assert "someoneelse" in lab.dut("nft", "list", "tables")
    assert "--dport 22 -j ACCEPT" in lab.dut("iptables", "-w", "-t", "raw", "-S")
    assert lab.ours_left("iptables") == []


@pytest.mark.parametrize(("args", "msg"), [
    ({"interface": "dut0", "port_base": 65535, "port_count": 2}, "outside 1..65535"),
    ({"interface": "nosuch0"}, "interface nosuch0 does not exist in this network namespace"),
    ({"mode": "raw"}, "missing: interface"),
    ({"interface": "dut0", "mode": "notrack"}, "one of: raw, conntrack"),
    ({"interface": "dut0", "backend": "iptables", "iptables_binary": "iptables-nonexistent"},
     "install the Debian package iptables"),
])
def test_bad_input_changes_nothing(lab, args, msg):
    before = lab.dut("nft", "list", "ruleset")
    res = lab.module("netfilter_drop", args)
    assert res["failed"] and msg in res["msg"], res
    assert lab.dut("nft", "list", "ruleset") == before


def test_stats_without_the_rule(lab):
    res = lab.module("netfilter_stats", {"samples": 1, "interval": 0.1})
    assert res["failed"] and "table inet xdplab does not exist" in res["msg"]
    res = lab.module("netfilter_stats", {"samples": 1, "interval": 0.1, "backend": "iptables"})
    assert res["failed"] and "chain xdplab exists in neither" in res["msg"]


def test_check_and_diff_through_the_ansible_cli(lab):
    env = dict(os.environ, ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    args = json.dumps({"interface": "dut0", "mode": "conntrack", "port_base": 12, "port_count": 4})
    out = []
    for n, extra in enumerate((["--check", "--diff"], ["--diff"], [])):
        tree = lab.tmp / f"tree{n}"
        proc = subprocess.run(["ip", "netns", "exec", lab.dut_ns, ansible, "localhost", "-i", "localhost,", "-c", "local",
                               "-t", str(tree), "-m", "xdplab.testbed.netfilter_drop", "-a", args, *extra],
                              capture_output=True, text=True, env=env, cwd=ROOT, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        out.append((json.loads((tree / "localhost").read_text()), proc.stdout))
        if n == 0:
            assert "xdplab" not in lab.dut("nft", "list", "tables")  # check mode wrote nothing
    (check, check_out), (real, real_out), (again, _again_out) = out
    assert check["changed"] is True and real["changed"] is True and again["changed"] is False
    assert "+\t\tiifname \"dut0\" udp dport 12-15 ct state new,established,related counter drop" in check_out
    assert "ct state established,related,new counter drop" in real_out  # after: as nft lists it
    lab.module("netfilter_drop", {"state": "absent"})
    assert lab.ours_left("iptables") == []


def test_stats_window_is_monotonic_clock(lab):
    lab.module("netfilter_drop", {"interface": "dut0"})
    t0 = time.monotonic()
    res = lab.module("netfilter_stats", {"samples": 2, "interval": 0.2})
    t1 = time.monotonic()
    assert t0 <= res["window"]["start"] < res["window"]["end"] <= t1
    assert res["pps"] == 0.0 and res["packets"] == 0


USER_RULESET = os.path.join(ROOT, "tests", "integration", "files", "custom_drop.nft")


def test_users_ruleset_loaded_counted_and_removed_exactly(lab):
    """mode ruleset: a user's nftables file loaded as it is, counted by its counted drop, and on absent exactly its
    tables removed (another table stays); a ruleset that does not count its drops is refused and removed again."""
    with open(USER_RULESET) as f:
        text = f.read()
    lab.dut("nft", "add", "table", "inet", "someoneelse")
    first = lab.module("netfilter_drop", {"mode": "ruleset", "interface": "dut0", "ruleset": text})
    assert first["changed"] is True and first["tables"] == ["inet xdplab_user_drop"], first
    assert len(first["rules"]) == 1 and first["rules"][0]["packets"] == 0 and len(first["sha256"]) == 64
    again = lab.module("netfilter_drop", {"mode": "ruleset", "interface": "dut0", "ruleset": text,
                                          "tables": ["inet xdplab_user_drop"]})
    assert again["changed"] is False, again

    sender = lab.sender(count=9000, pps=3000)
    stats = lab.module("netfilter_stats", {"mode": "ruleset", "tables": ["inet xdplab_user_drop"], "interface": "dut0",
                                           "warmup": 0.5, "interval": 0.5, "samples": 3})
    sent = int(sender.communicate(timeout=60)[0])
    assert stats["mode"] == "ruleset" and stats["pps"] == pytest.approx(3000, rel=0.35), stats
    assert stats["measurement"]["source"]["table"] == "inet xdplab_user_drop"
    # the rule counted every packet sent (present reloads the ruleset, counters from 0: read them with nft)
    listing = json.loads(lab.dut("nft", "-j", "list", "table", "inet", "xdplab_user_drop"))
    counters = [e["counter"] for i in listing["nftables"] if "rule" in i for e in i["rule"]["expr"] if "counter" in e]
    assert [c["packets"] for c in counters] == [sent] and sent == 9000

    gone = lab.module("netfilter_drop", {"state": "absent", "tables": ["inet xdplab_user_drop"]})
    assert gone["changed"] is True and gone["ruleset"] == ""
    assert lab.module("netfilter_drop", {"state": "absent", "tables": ["inet xdplab_user_drop"]})["changed"] is False
    tables = lab.dut("nft", "list", "tables")
    assert "xdplab_user_drop" not in tables and "someoneelse" in tables

    uncounted = text.replace("counter drop", "drop")
    res = lab.module("netfilter_drop", {"mode": "ruleset", "interface": "dut0", "ruleset": uncounted})
    assert res["failed"] and "add `counter` before `drop`" in res["msg"], res
    assert "xdplab_user_drop" not in lab.dut("nft", "list", "tables")
    bad = lab.module("netfilter_drop", {"mode": "ruleset", "interface": "dut0", "ruleset": text.replace("udp", "udpx")})
    assert bad["failed"] and "nft -f -" in bad["msg"] and "xdplab_user_drop" not in lab.dut("nft", "list", "tables")

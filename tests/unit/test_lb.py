# SPDX-License-Identifier: GPL-3.0-or-later
"""The load balancer's plan and checks (plugins/module_utils/_lb.py, issue 27): the Maglev ring (every real ~1/N of
65,537 slots; a real removed gives away its slots and moves few others), the plan's addresses and the maps' layouts,
the sizes against bpf/xdp_lb.h, the bad input, the ipvsadm commands and what ipvsadm prints (fixtures in ipvsadm's
own format: tests/unit/fixtures/ipvsadm/), the IPVS probe on a fake /proc and /lib/modules, and the filter."""

import os
import re
from collections import Counter

import pytest
from ansible_collections.xdplab.testbed.plugins.filter.lb import lb_input_errors
from ansible_collections.xdplab.testbed.plugins.module_utils import _lb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ipvsadm")
REALS = [f"10.200.0.{i}" for i in range(1, 101)]
SYSTEMS = {
    "xdp_lb": {"impl": "lb", "lb": "bpf", "return_port": "ingress"},
    "ipvs": {"impl": "lb", "lb": "ipvsadm", "return_port": "egress", "rp_filter": 0},
    "xdp": {"impl": "xdp"},
}


def test_the_ring_gives_every_real_its_share():
    ring = _lb.maglev_ring(REALS)
    assert len(ring) == _lb.RING_SIZE == 65537
    shares = Counter(ring)
    assert sorted(shares) == list(range(100))
    # Maglev fills in turns: each real gets floor or ceil of 65,537 / 100
    assert min(shares.values()) >= 655 and max(shares.values()) <= 656, (min(shares.values()), max(shares.values()))
    # deterministic: the same reals, the same ring
    assert _lb.maglev_ring(REALS) == ring


def test_a_real_removed_moves_its_slots_and_few_others():
    ring = _lb.maglev_ring(REALS)
    gone = 37
    rest = REALS[:gone] + REALS[gone + 1 :]
    after = _lb.maglev_ring(rest)
    before_names = [REALS[i] for i in ring]
    after_names = [rest[i] for i in after]
    # every slot of the removed real goes to another real
    assert all(after_names[s] != REALS[gone] for s in range(len(ring)))
    # the others keep their slots but for a few (Maglev's minimal disruption, not zero: 370 of 65,537 here)
    moved = sum(1 for b, a in zip(before_names, after_names) if b != REALS[gone] and a != b)
    assert moved < 0.01 * len(ring), moved
    assert Counter(after).most_common(1)[0][1] <= 663


def test_the_plan_numbers_reals_across_vips():
    plan = _lb.plan("198.18.0.2", 12, 3, 100)
    assert [v["port"] for v in plan["vips"]] == [12, 13, 14]
    assert len(plan["reals"]) == 300 and len(set(plan["reals"])) == 300
    assert plan["vips"][1]["reals"][0] == "10.200.0.101" and plan["vips"][1]["real_indices"][0] == 100
    assert plan["outer_src"] == "198.18.0.2"
    start, slots = _lb.ring_values(plan)[2]
    assert start == 2 * 65537 and set(slots) == set(range(200, 300))


def test_the_maps_layouts():
    assert _lb.vip_key("198.18.0.2", 12, "udp") == bytes([198, 18, 0, 2, 0, 12, 17, 0])
    assert _lb.real_value("10.200.0.1") == bytes([10, 200, 0, 1, 0, 0, 0, 0])
    assert _lb.vip_meta(3, 1) == bytes([3, 0, 0, 0, 1, 0, 0, 0])
    assert _lb.ctl_value("198.18.0.2") == bytes([198, 18, 0, 2, 1, 0, 0, 0])


def test_the_sizes_are_the_headers():
    with open(os.path.join(ROOT, "bpf", "xdp_lb.h"), encoding="utf-8") as fh:
        text = fh.read()
    defines = dict(re.findall(r"^#define (LB_\w+) (\w+)", text, re.M))
    assert int(defines["LB_RING_SIZE"]) == _lb.RING_SIZE
    assert int(defines["LB_MAX_VIPS"]) == _lb.MAX_VIPS
    assert int(defines["LB_MAX_REALS"]) == _lb.MAX_REALS
    assert int(defines["LB_LRU_SIZE"]) == _lb.LRU_SIZE
    stats = re.search(r"enum lb_stat \{(.*?)\};", text, re.S).group(1)
    assert [n.lower() for n in re.findall(r"LB_STAT_(\w+)", stats) if n != "COUNT"] == list(_lb.STATS)
    checks = re.search(r"enum lb_check_stat \{(.*?)\};", text, re.S).group(1)
    assert [n.lower() for n in re.findall(r"LB_CHECK_(\w+)", checks) if n != "COUNT"] == list(_lb.CHECK_STATS)


@pytest.mark.parametrize(
    "lb, packet_lens, cores, expect",
    [
        ({"systems": ["xdp_lb"], "reals_per_vip": 100}, [64], [1, 2, 3, 4, 5, 6], []),
        ({"systems": ["xdp_lb"], "reals_per_vip": 1000}, [64], [1, 5], ["5 VIPs x 1000 reals = 5000 reals, more than the 4096"]),
        (
            {"systems": ["xdp_lb"], "reals_per_vip": 100},
            [64],
            [17],
            ["17 VIPs (one per core): the program's vip_map holds 1 to 16"],
        ),
        (
            {"systems": ["xdp_lb"]},
            [1500],
            [1],
            ["packet_len: 1500: its IPv4 packet (1482 bytes) + 20 bytes", "Send at most 1498"],
        ),
        ({"systems": ["xdp_lb"]}, [1498], [1], []),
        ({"systems": ["xdp"]}, [64], [1], ["'xdp' is not a load-balancer system"]),
        ({"systems": ["xdp_lb"], "reals_net": "10.200.0.0/28"}, [64], [1], ["reals_net: 10.200.0.0/28 has 14 addresses for 100"]),
    ],
)
def test_bad_input(lb, packet_lens, cores, expect):
    errors = _lb.lb_errors(lb, SYSTEMS, packet_lens, cores, host="dut1")
    assert len(errors) == len(expect[:1]) if expect else errors == [], errors
    for text in expect:
        assert any(text in e for e in errors), errors
    assert all(e.startswith("dut1: ") for e in errors)


def test_rp_filter_on_for_ipvs_tunnel_mode_is_refused():
    systems = dict(SYSTEMS, ipvs=dict(SYSTEMS["ipvs"], rp_filter=1))
    errors = lb_input_errors({"systems": ["ipvs"]}, systems, [64], [1])
    assert len(errors) == 1 and "experiment_systems.ipvs.rp_filter: 1" in errors[0] and "Set it to 0" in errors[0]
    assert lb_input_errors({"systems": ["ipvs"]}, SYSTEMS, [64], [1]) == []


def test_ipvsadm_commands():
    plan = _lb.plan("198.18.0.2", 12, 2, 3)
    cmds = _lb.ipvsadm_commands(plan)
    assert cmds[0] == ["ipvsadm", "-A", "-u", "198.18.0.2:12", "-s", "sh", "-b", "sh-port"]
    assert cmds[1] == ["ipvsadm", "-a", "-u", "198.18.0.2:12", "-r", "10.200.0.1", "-i", "-w", "1"]
    assert cmds[4][:4] == ["ipvsadm", "-A", "-u", "198.18.0.2:13"] and len(cmds) == 8
    assert cmds[7][5] == "10.200.0.6"
    assert _lb.ipvsadm_delete_commands(plan) == [
        ["ipvsadm", "-D", "-u", "198.18.0.2:12"],
        ["ipvsadm", "-D", "-u", "198.18.0.2:13"],
    ]


def _fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as fh:
        return fh.read()


def test_parse_ipvsadm_stats_fixture():
    parsed = _lb.parse_ipvsadm(_fixture("stats.txt"))
    assert parsed["kind"] == "stats" and parsed["columns"] == ["Conns", "InPkts", "OutPkts", "InBytes", "OutBytes"]
    first, second = parsed["services"]
    assert first["proto"] == "udp" and first["addr"] == "198.18.0.2:12" and first["values"]["InPkts"] == 4217
    assert [r["addr"] for r in first["reals"]] == ["10.200.0.1:12", "10.200.0.2:12"]
    assert sum(r["values"]["InPkts"] for r in first["reals"]) == first["values"]["InPkts"]
    # abbreviated counters (no --exact): K is 1000
    assert second["values"]["InPkts"] == 1_520_000 and second["values"]["InBytes"] == 69_920_000
    assert _lb.ipvs_totals(parsed)["InPkts"] == 4217 + 1_520_000


def test_parse_ipvsadm_rate_and_list_fixtures():
    rate = _lb.parse_ipvsadm(_fixture("rate.txt"))
    assert rate["kind"] == "rate" and rate["services"][0]["values"]["InPPS"] == 843
    listed = _lb.parse_ipvsadm(_fixture("list.txt"))
    assert listed["kind"] == "list" and listed["services"][0]["scheduler"] == "sh"
    assert listed["services"][0]["reals"][0] == {"addr": "10.200.0.1:12", "Forward": "Tunnel", "Weight": "1",
                                                 "ActiveConn": "0", "InActConn": "12"}  # fmt: skip
    with pytest.raises(_lb.LbError, match="no 'Prot LocalAddress:Port' header"):
        _lb.parse_ipvsadm("Can't initialize ipvs: Protocol not available\n")


def test_ipvs_support_on_fake_trees(tmp_path):
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    config = tmp_path / "config"
    config.write_text("CONFIG_NETFILTER=y\n# CONFIG_IP_VS is not set\n")
    missing = _lb.ipvs_support(str(proc), "6.1.0-test", [str(config)], str(tmp_path / "modules"))
    assert not missing["supported"] and missing["config"] is None
    assert "CONFIG_IP_VS" in missing["reason"] and "/proc/net/ip_vs" in missing["reason"]
    config.write_text("CONFIG_IP_VS=m\n")
    moddir = tmp_path / "modules" / "6.1.0-test" / "kernel" / "net" / "netfilter" / "ipvs"
    moddir.mkdir(parents=True)
    (moddir / "ip_vs.ko.xz").write_bytes(b"")
    module = _lb.ipvs_support(str(proc), "6.1.0-test", [str(config)], str(tmp_path / "modules"))
    assert module["supported"] and module["module"].endswith("ip_vs.ko.xz") and module["reason"] is None
    (proc / "net" / "ip_vs").write_text("")
    loaded = _lb.ipvs_support(str(proc), "6.1.0-test", [str(tmp_path / "nope")], str(tmp_path / "none"))
    assert loaded["supported"] and loaded["proc_ip_vs"]

# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils/netfilter, netfilter_drop and netfilter_stats against real captured output
(tests/unit/fixtures/netfilter/README.md); the real kernel path is in tests/integration/test_netfilter.py."""

import json
import os

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _netfilter as netfilter
from ansible_collections.xdplab.testbed.plugins.modules import netfilter_drop, netfilter_stats

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "netfilter")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


def run(main, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        main()
    return json.loads(capsys.readouterr().out)


# ---- Spec validation ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("kw", "msg"), [
    ({"mode": "notrack"}, "mode must be one of raw, conntrack"),
    ({"port_base": 0}, "outside 1..65535"),
    ({"port_base": 65535, "port_count": 2}, "UDP destination ports 65535..65536"),
    ({"port_count": 0}, "port_count must be at least 1"),
    ({"interface": ""}, "not a valid interface name"),
    ({"interface": "a" * 16}, "not a valid interface name"),
    ({"table": "1bad"}, "not a valid name"),
    ({"protocol": "tcp"}, "only protocol udp"),
])
def test_spec_refuses_bad_input(kw, msg):
    args = {"mode": "raw", "interface": "dut0"} | kw
    with pytest.raises(netfilter.NetfilterError, match=msg):
        netfilter.Spec(**args)


def test_spec_ports():
    spec = netfilter.Spec("raw", "dut0", 12, 4)
    assert spec.port_last == 15 and spec.ports_text("-") == "12-15" and spec.ports_text(":") == "12:15"
    assert netfilter.Spec("raw", "dut0", 65535, 1).ports_text() == "65535"


# ---- nftables: what we ask for equals what the kernel gives back -------------------------------------------

@pytest.mark.parametrize("mode", ["raw", "conntrack"])
def test_nft_desired_matches_real_listing(mode):
    parsed = netfilter.nft_parse(fixture(f"nft_{mode}_1000.json"))
    spec = netfilter.Spec(mode, "dut0", 12, 2)
    assert netfilter.nft_comparable(parsed) == netfilter.nft_desired(spec)
    assert netfilter.nft_mode_of(parsed) == mode
    assert parsed["version"] == "1.0.6"
    (chain,) = list(parsed["chains"].values())
    assert chain["hook"] == "prerouting" and chain["prio"] == (-300 if mode == "raw" else -150)
    (rule,) = chain["rules"]
    assert rule["packets"] == 1000 and rule["bytes"] == 46000 and rule["drop"] and rule["iifname"] == "dut0"
    assert rule["ct"] is (mode == "conntrack")


@pytest.mark.parametrize(("kw", "why"), [
    ({"interface": "dut1"}, "other interface"),
    ({"port_count": 3}, "other port range"),
    ({"port_base": 13}, "other first port"),
    ({"mode": "conntrack"}, "other mode"),
])
def test_nft_any_difference_is_a_change(kw, why):
    parsed = netfilter.nft_parse(fixture("nft_raw_1000.json"))
    spec = netfilter.Spec(**({"mode": "raw", "interface": "dut0", "port_base": 12, "port_count": 2} | kw))
    assert netfilter.nft_comparable(parsed) != netfilter.nft_desired(spec), why


def test_nft_counter_values_do_not_matter():
    doc = json.loads(fixture("nft_raw_1000.json"))
    for item in doc["nftables"]:
        if "rule" in item:
            item["rule"]["expr"][2]["counter"] = {"packets": 5, "bytes": 7}
    assert netfilter.nft_comparable(netfilter.nft_parse(doc)) == \
        netfilter.nft_desired(netfilter.Spec("raw", "dut0", 12, 2))


def test_nft_extra_rule_is_a_change():
    doc = json.loads(fixture("nft_raw_1000.json"))
    rule = next(i for i in doc["nftables"] if "rule" in i)
    doc["nftables"].append({"rule": dict(rule["rule"], handle=9)})
    assert netfilter.nft_comparable(netfilter.nft_parse(doc)) != \
        netfilter.nft_desired(netfilter.Spec("raw", "dut0", 12, 2))


def test_nft_texts():
    spec = netfilter.Spec("conntrack", "dut0", 12, 2)
    text = netfilter.nft_table_text(spec)
    assert "type filter hook prerouting priority mangle; policy accept;" in text
    assert 'iifname "dut0" udp dport 12-13 ct state new,established,related counter drop' in text
    script = netfilter.nft_replace_script(spec)
    assert script.startswith("table inet xdplab\ndelete table inet xdplab\ntable inet xdplab {")
    assert 'udp dport 12 counter drop' in netfilter.nft_table_text(netfilter.Spec("raw", "dut0", 12, 1))


# ---- iptables ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("binary", ["iptables", "iptables-legacy"])
def test_ipt_desired_matches_real_save(binary):
    spec = netfilter.Spec("conntrack", "dut0", 12, 2)
    state = {"raw": netfilter.ipt_parse_save(fixture(f"{binary}_raw_S_empty.txt"), "xdplab"),
             "mangle": netfilter.ipt_parse_save(fixture(f"{binary}_mangle_S.txt"), "xdplab")}
    assert state == netfilter.ipt_desired(spec)
    assert state["raw"] == {"chain": None, "jumps": 0}
    assert netfilter.Iptables.exists(state)
    assert state != netfilter.ipt_desired(netfilter.Spec("raw", "dut0", 12, 2))


def test_ipt_single_port_raw():
    state = netfilter.ipt_parse_save(fixture("iptables_raw_S_single_port.txt"), "xdplab")
    assert state == netfilter.ipt_desired(netfilter.Spec("raw", "dut0", 12, 1))["raw"]


@pytest.mark.parametrize("binary", ["iptables", "iptables-legacy"])
def test_ipt_counters(binary):
    (row,) = netfilter.ipt_parse_counters(fixture(f"{binary}_mangle_L_1000.txt"))
    assert row == {"num": 1, "packets": 1000, "bytes": 46000, "target": "DROP", "in": "dut0",
                   "extra": "udp dpts:12:13 ctstate NEW,RELATED,ESTABLISHED"}


def test_ipt_state_text():
    text = netfilter.Iptables.desired_text(netfilter.Spec("raw", "dut0", 12, 2))
    assert text == "*raw\n-N xdplab\n-A PREROUTING -j xdplab\n-A xdplab -i dut0 -p udp -m udp --dport 12:13 -j DROP\n"


# ---- softnet_stat and ethtool ------------------------------------------------------------------------------

def test_softnet_stat_real():
    before = netfilter.parse_softnet_stat(fixture("softnet_stat_before.txt"))
    after = netfilter.parse_softnet_stat(fixture("softnet_stat_after.txt"))
    assert sorted(after) == [0, 1]
    delta = netfilter.softnet_delta(before, after)
    # 1000 test frames plus whatever else the machine received in between
    assert sum(d["processed"] for d in delta.values()) >= 1000


def test_softnet_wraps_at_32_bits():
    before = {0: {"processed": 0xFFFFFFF0, "dropped": 0, "time_squeeze": 0}}
    after = {0: {"processed": 0x10, "dropped": 0, "time_squeeze": 0}}
    assert netfilter.softnet_delta(before, after)[0]["processed"] == 0x20


def test_softnet_old_format_uses_line_index():
    text = "00000010 00000000 00000001\n00000020 00000000 00000000\n"
    assert netfilter.parse_softnet_stat(text)[1]["processed"] == 0x20


def test_per_rxq_from_veth_xdp_packets():
    before = ethtool.parse_stats(fixture("ethtool_S_veth_before.txt"))
    after = ethtool.parse_stats(fixture("ethtool_S_veth_after_1000.txt"))
    rows = netfilter_stats.per_rxq_rates(before, after, 2.0)
    assert rows == [{"queue": 0, "pps": (after["rx_queue_0_xdp_packets"] - before["rx_queue_0_xdp_packets"]) / 2.0,
                     "counter": "rx_queue_0_xdp_packets"}]
    assert rows[0]["pps"] >= 500


def test_per_rxq_prefers_real_rx_counters():
    rows = netfilter_stats.per_rxq_rates({"rx_queue_0_packets": 10, "rx_queue_0_xdp_packets": 0},
                                         {"rx_queue_0_packets": 30, "rx_queue_0_xdp_packets": 5}, 1.0)
    assert rows == [{"queue": 0, "pps": 20.0, "counter": "rx_queue_0_packets"}]
    assert netfilter_stats.per_rxq_rates({}, {"peer_ifindex": 2}, 1.0) == []


# ---- modules: bad input fails before any command -------------------------------------------------------------

@pytest.fixture
def no_commands(monkeypatch):
    """Any command the module tries to run fails the test."""
    def refuse(self, args, **kw):
        raise AssertionError(f"ran {args}")
    monkeypatch.setattr(basic.AnsibleModule, "run_command", refuse)


def test_drop_unknown_mode_is_refused(no_commands, capsys):
    res = run(netfilter_drop.main, {"interface": "lo", "mode": "notrack"}, capsys)
    assert res["failed"] and "value of mode must be one of: raw, conntrack" in res["msg"]


def test_drop_unknown_backend_is_refused(no_commands, capsys):
    res = run(netfilter_drop.main, {"interface": "lo", "backend": "pf"}, capsys)
    assert res["failed"] and "nftables, iptables" in res["msg"]


def test_drop_port_range_is_refused(no_commands, capsys):
    res = run(netfilter_drop.main, {"interface": "lo", "port_base": 65530, "port_count": 10}, capsys)
    assert res["failed"] and "65530..65539" in res["msg"] and "outside 1..65535" in res["msg"]


def test_drop_interface_required_and_must_exist(no_commands, capsys):
    res = run(netfilter_drop.main, {"mode": "raw"}, capsys)
    assert res["failed"] and "state is present but all of the following are missing: interface" in res["msg"]
    res = run(netfilter_drop.main, {"interface": "nosuch0"}, capsys)
    assert res["failed"] and "interface nosuch0 does not exist in this network namespace" in res["msg"]


def test_missing_binary_names_the_debian_package(monkeypatch, no_commands, capsys):
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: None)
    res = run(netfilter_drop.main, {"interface": "lo"}, capsys)
    assert res["failed"] and "nft not found" in res["msg"] and "apt-get install nftables" in res["msg"]
    res = run(netfilter_drop.main, {"interface": "lo", "backend": "iptables", "iptables_binary": "iptables-legacy"},
              capsys)
    assert res["failed"] and "iptables-legacy not found" in res["msg"] and "apt-get install iptables" in res["msg"]
    res = run(netfilter_stats.main, {"backend": "iptables"}, capsys)
    assert res["failed"] and "apt-get install iptables" in res["msg"]


def test_stats_bad_parameters(no_commands, capsys):
    res = run(netfilter_stats.main, {"interval": 0}, capsys)
    assert res["failed"] and "interval must be a positive number" in res["msg"]
    res = run(netfilter_stats.main, {"samples": 0}, capsys)
    assert res["failed"] and "samples must be at least 1" in res["msg"]
    res = run(netfilter_stats.main, {"mode": "fast"}, capsys)
    assert res["failed"] and "raw, conntrack" in res["msg"]


# ---- netfilter_stats over a faked nft whose counter grows (real JSON shape from the fixture) -----------------

def test_stats_reads_growing_counter_in_check_mode(monkeypatch, capsys, check_measurement):
    doc = json.loads(fixture("nft_conntrack_1000.json"))
    calls = {"n": 0}

    def fake_run(self, args, **kw):
        if args[1:3] == ["-j", "list"]:
            calls["n"] += 1
            for item in doc["nftables"]:
                if "rule" in item:
                    item["rule"]["expr"][3]["counter"]["packets"] = 1000 * calls["n"]
            return 0, json.dumps(doc), ""
        if args[1] == "-S":
            return 0, fixture("ethtool_S_veth_after_1000.txt"), ""
        raise AssertionError(args)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", fake_run)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: f"/usr/sbin/{name}")
    res = run(netfilter_stats.main, {"interval": 0.05, "samples": 2, "_ansible_check_mode": True}, capsys)
    assert res["changed"] is False and res["mode"] == "conntrack" and res["interface"] == "dut0"
    assert res["packets"] == 2000 and [s["packets"] for s in res["samples"]] == [1000, 1000]
    assert res["pps"] == pytest.approx(2000 / res["seconds"], rel=1e-4)
    assert res["window"]["end"] - res["window"]["start"] == pytest.approx(res["seconds"], abs=1e-5)
    assert isinstance(res["conntrack_count"], int) or res["conntrack_count"] is None
    m = check_measurement(res["measurement"], "netfilter_rule", samples=2)
    assert m["packets"] == 2000 and m["pps"] == res["pps"] and m["source"]["mode"] == "conntrack"
    assert m["source"]["backend"] == "nftables" and m["source"]["interface"] == "dut0"
    assert m["details"]["conntrack_count"] == res["conntrack_count"]
    res = run(netfilter_stats.main, {"interval": 0.05, "samples": 1, "mode": "raw"}, capsys)
    assert res["failed"] and "is in conntrack mode, not raw" in res["msg"]


def test_stats_without_our_table(monkeypatch, capsys):
    monkeypatch.setattr(basic.AnsibleModule, "run_command",
                        lambda self, args, **kw: (1, "", fixture("nft_missing_table.stderr")))
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: f"/usr/sbin/{name}")
    res = run(netfilter_stats.main, {}, capsys)
    assert res["failed"] and "table inet xdplab does not exist" in res["msg"] and "netfilter_drop" in res["msg"]


def test_stats_on_the_fake_clock(monkeypatch, fake_clock, check_measurement):
    """The Sampler's warm-up and absolute schedule, ethtool read once after the warm-up and once after the window."""
    doc = json.loads(fixture("nft_raw_1000.json"))
    ethtool_reads = []

    def fake_run(self, args, **kw):
        if args[1:3] == ["-j", "list"]:
            for item in doc["nftables"]:
                if "rule" in item:
                    for expr in item["rule"]["expr"]:
                        if "counter" in expr:  # 500 drops per fake second
                            expr["counter"]["packets"] = int(500 * (fake_clock.now - 1000))
            return 0, json.dumps(doc), ""
        if args[1] == "-S":
            ethtool_reads.append(fake_clock.now)
            return 0, fixture("ethtool_S_veth_before.txt" if len(ethtool_reads) == 1 else "ethtool_S_veth_after_1000.txt"), ""
        raise AssertionError(args)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", fake_run)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: f"/usr/sbin/{name}")
    with patch_module_args({"warmup": 3, "interval": 2, "samples": 2}):
        module = basic.AnsibleModule(argument_spec=netfilter_stats.argument_spec(), supports_check_mode=True)
        res = netfilter_stats.NetfilterStats(module, clock=fake_clock, sleep=fake_clock.sleep).run()
    assert fake_clock.sleeps == [3.0, 2.0, 2.0]
    assert ethtool_reads == [1003.0, 1007.0]
    m = check_measurement(res["measurement"], "netfilter_rule", samples=2)
    assert m["window"]["start"] == 1003.0 and m["window"]["seconds"] == 4.0
    assert m["pps"] == 500.0 and m["packets"] == 2000 and m["source"]["mode"] == "raw"
    assert m["per_rxq"] == [{"queue": 0, "pps": 1001 / 4.0, "counter": "rx_queue_0_xdp_packets"}]


# ---- a user's nftables ruleset (mode ruleset, a custom system of kind linux) ---------------------------------

USER_RULESET = """#!/usr/sbin/nft -f
# comment with table inet not_a_table
define ports = 12-75
table inet xdplab_user_drop {
\tchain pre {
\t\ttype filter hook prerouting priority raw; policy accept;
\t\tudp dport $ports counter drop comment "table ip not_this"
\t}
}
add table ip6 extra; table netdev n2 { }
table ip plain
"""


def test_ruleset_tables_are_its_declarations():
    assert netfilter.nft_ruleset_tables(USER_RULESET) == ["inet xdplab_user_drop", "ip6 extra", "netdev n2", "ip plain"]
    assert netfilter.nft_ruleset_problems(USER_RULESET) == []


@pytest.mark.parametrize(("text", "why"), [
    ("", "is empty"),
    ("# only a comment\n", "declares no table"),
    ("flush ruleset\ntable inet t { }\n", "flush ruleset"),
    ('include "/etc/nft/x.nft"\ntable inet t { }\n', "include"),
    ("table inet t { }\ndelete table ip filter\n", "delete table"),
    ("table inet t { chain c {\n", "unbalanced braces"),
])
def test_ruleset_problems(text, why):
    assert any(why in p for p in netfilter.nft_ruleset_problems(text)), netfilter.nft_ruleset_problems(text)


def test_ruleset_load_script_replaces_its_tables_in_one_transaction():
    script = netfilter.nft_ruleset_load_script("table inet t { }", ["inet t"])
    assert script == "table inet t\ndelete table inet t\ntable inet t { }\n"


def test_counted_drops_of_a_real_listing():
    doc = fixture("nft_user_ruleset.json")
    rows = netfilter.nft_counted_drops(doc, ["inet xdplab_user_drop"])
    assert rows == [{"table": "inet xdplab_user_drop", "chain": "pre", "handle": 2, "packets": 1234, "bytes": 56000,
                     "iifname": None}]
    # table ip other: a drop without counter, a named counter, a counter that accepts: none is a counted drop
    assert netfilter.nft_counted_drops(doc, ["ip other"]) == []
    assert netfilter.nft_tables_of(doc) == {"inet xdplab_user_drop", "ip other"}


def test_table_key():
    assert netfilter.nft_table_key("inet x") == ("inet", "x")
    for bad in ("x", "inet", "pf x", "inet x;y", "inet x y"):
        with pytest.raises(netfilter.NetfilterError):
            netfilter.nft_table_key(bad)


def test_drop_ruleset_bad_input_fails_before_any_command(no_commands, capsys):
    res = run(netfilter_drop.main, {"interface": "lo", "mode": "ruleset"}, capsys)
    assert res["failed"] and "mode ruleset needs ruleset" in res["msg"]
    res = run(netfilter_drop.main, {"interface": "lo", "mode": "ruleset", "ruleset": "flush ruleset\n"}, capsys)
    assert res["failed"] and "declares no table" in res["msg"] and "flush ruleset" in res["msg"]
    res = run(netfilter_drop.main, {"interface": "lo", "mode": "ruleset", "ruleset": USER_RULESET,
                                    "tables": ["inet other"]}, capsys)
    assert res["failed"] and "are not the tables the ruleset declares" in res["msg"]
    res = run(netfilter_drop.main, {"state": "absent", "tables": ["pf x"]}, capsys)
    assert res["failed"] and "is not 'FAMILY NAME'" in res["msg"]
    res = run(netfilter_stats.main, {"mode": "ruleset"}, capsys)
    assert res["failed"] and "give its tables" in res["msg"]


def test_stats_counts_a_users_ruleset(monkeypatch, capsys):
    doc = json.loads(fixture("nft_user_ruleset.json"))
    calls = {"n": 0}

    def fake_run(self, args, **kw):
        if args[1:] == ["-j", "list", "ruleset"]:
            calls["n"] += 1
            for item in doc["nftables"]:
                if "rule" in item and item["rule"]["table"] == "xdplab_user_drop":
                    item["rule"]["expr"][1]["counter"]["packets"] = 500 * calls["n"]
            return 0, json.dumps(doc), ""
        raise AssertionError(f"ran {args}")

    monkeypatch.setattr(basic.AnsibleModule, "run_command", fake_run)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: "/usr/sbin/" + name)
    res = run(netfilter_stats.main, {"mode": "ruleset", "tables": ["inet xdplab_user_drop"], "ethtool": False,
                                     "warmup": 0, "interval": 0.01, "samples": 2, "interface": "dut0"}, capsys)
    assert not res.get("failed"), res
    assert res["mode"] == "ruleset" and res["packets"] == 1000 and res["pps"] > 0
    assert res["measurement"]["source"]["table"] == "inet xdplab_user_drop"
    assert res["measurement"]["source"]["mode"] == "ruleset" and res["measurement"]["source"]["backend"] == "nftables"

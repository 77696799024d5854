# SPDX-License-Identifier: GPL-3.0-or-later
"""The routing experiment's parsing (plugins/module_utils/_fib_routes.py): the prefix file (plain and gzip, bad lines
named with their numbers, host bits, duplicates, limit), /proc/net/fib_triestat as the kernel writes it (a fixture
captured on this machine with the full table of playbooks/reference in a namespace: 901,899 routes of proto 211 plus
the connected net), the xdp_router counters by name, the destinations drawn in the table."""

import gzip
import os

import netaddr
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_routes as fr
from ansible_collections.xdplab.testbed.plugins.module_utils import _systems

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "fib_triestat_full_table.txt")


def test_triestat_of_the_full_table():
    with open(FIXTURE) as handle:
        stat = fr.parse_triestat(handle.read())
    assert stat["leaf_size"] == 48 and stat["tnode_size"] == 40
    assert sorted(stat["tables"]) == ["local", "main"]
    main = stat["tables"]["main"]
    assert main == {
        "avg_depth": 2.22, "max_depth": 7, "leaves": 840393, "prefixes": 901902, "internal_nodes": 149110,
        "node_sizes": {1: 37, 2: 92783, 3: 26280, 4: 12708, 5: 8975, 6: 7958, 7: 368, 18: 1},
        "pointers": 1890534, "null_pointers": 901032, "total_kb": 109311,
    }  # fmt: skip
    # the node counts by child bits add up to the internal nodes
    assert sum(main["node_sizes"].values()) == main["internal_nodes"]


def test_triestat_without_tables():
    stat = fr.parse_triestat("Basic info: size of leaf: 48 bytes, size of tnode: 40 bytes.\n")
    assert stat == {"leaf_size": 48, "tnode_size": 40, "tables": {}}


def test_prefix_file_plain_and_gzip(tmp_path):
    text = "# a comment\n10.0.0.0/8\n\n1.0.0.0/24  # trailing\n10.0.0.0/8\n1.0.4.0/22\n"
    plain = tmp_path / "t.txt"
    plain.write_text(text)
    packed = tmp_path / "t.txt.gz"
    with gzip.open(packed, "wt") as handle:
        handle.write(text)
    for path in (plain, packed):
        assert fr.read_prefixes(str(path)) == ["10.0.0.0/8", "1.0.0.0/24", "1.0.4.0/22"]
        assert fr.read_prefixes(str(path), limit=2) == ["10.0.0.0/8", "1.0.0.0/24"]


def test_prefix_file_bad_lines_named(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("1.0.0.0/24\n1.2.3.4/24\nfoo\n300.1.1.0/24\n2001:db8::/32\n5.5.5.5\nbar\n")
    with pytest.raises(fr.FibRoutesError) as err:
        fr.read_prefixes(str(path))
    msg = str(err.value)
    assert "nothing was changed" in msg
    assert f"{path} line 2: '1.2.3.4/24': host bits set (the prefix is 1.2.3.0/24)" in msg
    assert f"{path} line 3: 'foo': not an IPv4 prefix" in msg
    assert f"{path} line 4: '300.1.1.0/24': not an IPv4 prefix" in msg
    assert f"{path} line 5: '2001:db8::/32': not an IPv4 prefix" in msg
    assert f"{path} line 6: '5.5.5.5': no prefix length (write a.b.c.d/len)" in msg
    # at most five named
    assert "line 7" not in msg


def test_prefix_file_missing_or_empty(tmp_path):
    with pytest.raises(fr.FibRoutesError, match="readable file"):
        fr.read_prefixes(str(tmp_path / "nope.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(fr.FibRoutesError, match="has no prefix"):
        fr.read_prefixes(str(empty))


def test_route_keys():
    assert fr.route_key("default") == "0.0.0.0/0"
    assert fr.route_key("1.2.3.4") == "1.2.3.4/32"
    assert fr.route_key("1.2.3.0/24") == "1.2.3.0/24"


def test_fib_counts_by_name_and_delta():
    named = fr.fib_counts({0: 10, 7: 2, 12: 1, 15: 10, 10: 0})
    assert named == {"success": 10, "no_neigh": 2, "slot_10": 0, "not_ipv4": 1, "redirected": 10}
    assert fr.counts_delta({"success": 30, "no_neigh": 2}, {"success": 10}) == {"success": 20, "no_neigh": 2}


def test_destinations_in_the_table_seeded_and_covered():
    prefixes = ["1.0.0.0/24", "1.0.4.0/22", "198.18.0.0/15", "8.8.8.8/32", "127.0.0.0/8"]
    exclude = ["198.18.0.0/15", *fr.MARTIAN]
    a = fr.draw_in_table(prefixes, 200, 7, exclude)
    assert a == fr.draw_in_table(prefixes, 200, 7, exclude) and a != fr.draw_in_table(prefixes, 200, 8, exclude)
    assert len(set(a)) == 200
    nets = [netaddr.IPNetwork(p) for p in prefixes]
    bad = netaddr.IPSet(exclude)
    for address in a:
        ip = netaddr.IPAddress(address)
        assert ip not in bad and any(ip in n for n in nets), address
    with pytest.raises(fr.FibRoutesError, match="give fewer destinations"):
        fr.draw_in_table(["8.8.8.8/32"], 2, 1)
    with pytest.raises(fr.FibRoutesError, match="at least 1"):
        fr.draw_in_table(prefixes, 0, 1)


def test_router_plan():
    system = {"name": "xdp_router", "impl": "forward", "forward": "xdp_router", "return_port": "egress"}
    plan = _systems.forward_plan(system, "veth-dut1", 0, {}, {})
    assert plan["xdp"] == {"object": "xdp_router", "program": "xdp_router", "variables": {"direct": 1, "count_fib": 1},
                           "map_entries": {"tx_ports": {"veth-dut1": "veth-dut1"}}}  # fmt: skip
    full = _systems.forward_plan(dict(system, fib_lookup="full", count_fib=False), "veth-dut1", 0, {}, {})
    assert full["xdp"]["variables"] == {"direct": 0, "count_fib": 0}
    with pytest.raises(_systems.SystemsError, match="fib_lookup 'fast' is not one of direct, full"):
        _systems.forward_plan(dict(system, fib_lookup="fast"), "veth-dut1", 0, {}, {})
    # only the routing matrix has the axes: another kind's trials are pinned to none / 0
    matrix = _systems.system_matrix(["xdp", "xdp_router"], {"table": ["full"], "destinations": [4000]},
                                    {"xdp": {"impl": "xdp"}, "xdp_router": system}, [1])  # fmt: skip
    assert {"system": ["xdp"], "table": ["none"], "destinations": [0]} in matrix
    assert {"system": ["xdp_router"], "table": ["full"], "destinations": [4000]} in matrix


ROUTING_SYSTEMS = {
    "xdp_router": {"impl": "forward", "forward": "xdp_router", "return_port": "egress"},
    "linux_forward": {"impl": "forward", "forward": "linux", "return_port": "egress"},
    "xdp_tx": {"impl": "forward", "forward": "xdp_tx", "return_port": "ingress"},
}


def test_routing_input_errors(tmp_path):
    from ansible_collections.xdplab.testbed.plugins.module_utils._experiment_input import routing_errors

    good = tmp_path / "table.txt"
    good.write_text("1.0.0.0/24\n1.0.4.0/22\n")
    options = {"experiment_systems": ROUTING_SYSTEMS, "experiment_routing_table_file": str(good)}
    matrix = [{"table": ["single", "full"], "system": ["xdp_router", "linux_forward"], "destinations": [4000],
               "packet_len": [64]}]  # fmt: skip
    assert routing_errors(matrix, options, {}) == []
    bad = tmp_path / "bad.txt"
    bad.write_text("1.0.0.0/24\n1.0.0.1/24\n")
    errors = routing_errors(
        [{"table": ["full", "huge"], "system": ["xdp_router", "xdp_tx"], "destinations": [-1, 70000],
          "packet_len": [64, 1519]}],
        dict(options, experiment_routing_table_file=str(bad), experiment_routing_table_limit=-2),
        {"xdplab_dut_mtu": 1500},
    )  # fmt: skip
    assert errors == [
        "table: ['huge'] is not one of none, single, full; the route table of a routing trial",
        "destinations: [-1, 70000]: give whole numbers from 1 to 65536 (the generator's list; 0: only the DUT's address)",
        'system: xdp_tx does not route (forward "xdp_tx"): a route table (the table axis) applies to linux_forward and '
        "xdp_router; give it table none or leave it out",
        "experiment_routing_table_limit: -2: give 0 (every prefix) or how many to install",
        "experiment_routing_table_file: the prefix file has lines that are not IPv4 prefixes; fix or remove them "
        f"(nothing was changed): {bad} line 2: '1.0.0.1/24': host bits set (the prefix is 1.0.0.0/24)",
        "dut: packet_len: [1519]: the IPv4 packet (packet_len - 18 bytes of Ethernet header and FCS) is over the DUT's "
        "MTU 1500 (xdplab_dut_mtu): the router answers FRAG_NEEDED instead of forwarding; give frames of at most 1518 bytes",
    ]
    missing = routing_errors(matrix, {"experiment_systems": ROUTING_SYSTEMS}, {})
    assert missing == [
        "experiment_routing_table_file: not set; name the prefix file (one IPv4 prefix a line, plain or .gz): the full "
        "table and where the destinations are drawn"
    ]


def test_ratio_rows_ns_added_is_the_full_tables_cost_per_packet():
    """The routing report's per-packet cost (module_utils/_ratios.py compare ns_added): 1e9/pps_full - 1e9/pps_single,
    ours and the paper's (usecase_routing.csv at 1 core: +153 ns Linux, +104 ns XDP)."""
    from ansible_collections.xdplab.testbed.plugins.module_utils import _ratios

    def rec(system, table, pps):
        return {"point": {"system": system, "table": table, "cores": 1}, "result": {"pps": pps}}

    records = [rec("xdp_router", "single", 1e6), rec("xdp_router", "single", 3e6), rec("xdp_router", "full", 1e6)]
    spec = _ratios.validate({
        "name": "cost", "compare": "ns_added", "per": ["cores"],
        "numerator": {"match": {"system": "xdp_router", "table": "full"}},
        "denominator": {"match": {"system": "xdp_router", "table": "single"}},
        "paper": {"file": "usecase_routing.csv", "numerator_column": "xdp_full_table_rx256_pps",
                  "denominator_column": "xdp_single_route_rx256_pps", "x": "cores"},
    })  # fmt: skip
    path = os.path.join(os.path.dirname(__file__), "..", "..", "playbooks", "reference", "usecase_routing.csv")
    with open(path) as handle:
        rows = _ratios.ratio_rows(records, spec, handle.read())
    # ours: the single route's median is 2 Mpps (500 ns), the full table's 1 Mpps (1000 ns)
    assert rows[0]["ours"] == pytest.approx(500.0)
    assert rows[0]["paper"] == pytest.approx(1e9 / 3446000 - 1e9 / 5356000) and round(rows[0]["paper"]) == 103
    assert "| cost | cores 1 | +500.0 ns | +103.5 ns |" in _ratios.to_markdown(rows)
    with pytest.raises(_ratios.RatioError, match="compare must be one of ratio, ns_added"):
        _ratios.validate(dict(spec, compare="diff"))


def test_route_tables_section_of_the_report():
    def rec(system, table, routing):
        return {"status": "ok", "point": {"system": system, "table": table, "destinations": 10},
                "result": {"details": {"routing": routing}}}  # fmt: skip

    trie = {"avg_depth": 2.2, "max_depth": 7, "leaves": 5, "prefixes": 6, "internal_nodes": 2, "total_kb": 1}
    dests = {"count": 10, "seed": 1, "sha256": "ab" * 32}
    records = [
        rec("xdp_router", "full", {"table": "full", "routes": 20000, "installed_now": True, "install_s": 0.5, "read_s": 1.0,
                                   "trie": trie, "destinations": dests,
                                   "fib_counts": {"success": 9, "no_neigh": 0, "redirected": 9}}),
        rec("linux_forward", "full", {"table": "full", "routes": 20000, "installed_now": False, "install_s": 0.0, "read_s": 3.0,
                                      "trie": trie, "destinations": dests}),
        {"status": "ok", "point": {"system": "xdp"}, "result": {"details": {}}},
    ]  # fmt: skip
    text = fr.routing_markdown(records)
    assert "| full | 20000 | 0.50 | 2.00 | 2.2 / 7 | 5 | 6 | 2 | 1 |" in text
    assert "| system | table | destinations | success | redirected |" in text and "| xdp_router | full | 10 | 9 | 9 |" in text
    assert "10, seed 1, sha256 abababababab" in text
    # another experiment's records: no section
    assert fr.routing_markdown(records[2:]) == ""


class RoutingPhases:
    """What _kind_forward's table decisions read of the phases: the play's variables."""

    def __init__(self, **variables):
        self.variables = variables

    def var(self, name, default=None):
        return self.variables.get(name, default)

    def flag(self, name, default=False):
        return bool(self.variables.get(name, default))


def test_the_table_stays_only_for_a_next_trial_with_the_same_table():
    from ansible_collections.xdplab.testbed.plugins.plugin_utils import _kind_forward as kf

    systems = dict(ROUTING_SYSTEMS)

    def planned(i, table, system="xdp_router"):
        return {"trial_id": f"t{i}", "point": {"system": system, "table": table}}

    pending = [planned(0, "single"), planned(1, "single", "linux_forward"), planned(2, "full"), planned(3, "full", "xdp_tx")]

    def stays(i, **more):
        return kf._routes_stay(RoutingPhases(__experiment_planned=pending[i], __experiment_pending=pending,
                                             __experiment_systems=systems, **more), pending[i]["point"]["table"])  # fmt: skip

    assert stays(0)  # the next trial routes with the same table
    assert not stays(1)  # the next one wants the full table
    assert not stays(2)  # the next one does not route (xdp_tx): the table goes
    assert not stays(3)  # the last trial
    # a failed trial with experiment_stop_on_failure: no trial follows, the table goes
    failed = [{"trial_id": "t0", "task": "x"}]
    assert not stays(0, experiment_stop_on_failure=True, experiment_failed_trials=failed)
    assert stays(0, experiment_stop_on_failure=False, experiment_failed_trials=failed)

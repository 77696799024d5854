# SPDX-License-Identifier: GPL-3.0-or-later
"""The DoS experiment's pure parts (issue 27, plugins/module_utils/_ddos.py): the TCP_RR tool's command lines and
output, the drop counters, the record's ddos section, the DoS table and the issue's check; its bad input
(plugins/module_utils/_experiment_input.py ddos_errors) refused by the validate step's filter before any change."""

import json

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _ddos as ddos
from ansible_collections.xdplab.testbed.plugins.module_utils import _record, _systems

OUT = "\n".join(json.dumps(o) for o in [
    {"type": "start", "mono": 1.0, "role": "client", "addr": "198.18.0.2:12865", "cpu": 0, "version": "0.1.0"},
    {"type": "warmup", "mono": 3.0, "seconds": 2.0, "transactions": 900},
    {"type": "interval", "t": 3.0, "mono": 6.0, "interval_s": 3.0, "transactions": 30000, "trans_per_s": 10000.0},
    {"type": "interval", "t": 6.0, "mono": 9.0, "interval_s": 3.0, "transactions": 36000, "trans_per_s": 12000.0},
    {"type": "interval", "t": 6.1, "mono": 9.1, "interval_s": 0.1, "transactions": 5, "trans_per_s": 50.0},
    {"type": "summary", "role": "client", "transactions": 66005, "elapsed_s": 6.1, "trans_per_s": 10820.5,
     "latency_us": {"mean": 92.0, "p50": 90.0, "p90": 99.0, "p99": 140.0, "max": 900.0}, "connected": True,
     "connects": 1, "connect_or_io_failures": 0, "request_size": 1, "response_size": 1, "version": "0.1.0"},
])  # fmt: skip


def test_command_lines():
    assert ddos.server_command("/x/xdplab-tcp-rr", "198.18.0.2", 12865, 0) == [
        "/x/xdplab-tcp-rr", "--listen", "198.18.0.2:12865", "--cpu", "0"]  # fmt: skip
    assert ddos.client_command("t", "198.18.0.2", 12865, 2, 12, 3) == [
        "t", "--connect", "198.18.0.2:12865", "--warmup", "2", "--duration", "12", "--interval", "3"]  # fmt: skip


def test_client_result_keeps_full_intervals_and_their_mean_and_sd():
    res = ddos.client_result(ddos.parse_lines(OUT), 3.0)
    # the last 0.1 s interval is left out of the samples (the paper's four 3-second samples are whole)
    assert [s["trans_per_s"] for s in res["samples"]] == [10000.0, 12000.0]
    assert res["trans_per_s"] == 11000.0 and res["trans_per_s_sd"] == pytest.approx(1414.2, abs=0.1)
    assert res["warmup_transactions"] == 900 and res["connected"] and res["latency_us"]["p99"] == 140.0


def test_output_without_a_summary_or_not_json_is_refused_naming_the_line():
    with pytest.raises(ddos.DdosError, match="no summary"):
        ddos.client_result(ddos.parse_lines(OUT.rsplit("\n", 1)[0]), 3.0)
    with pytest.raises(ddos.DdosError, match="line 2 is not JSON"):
        ddos.parse_lines('{"type": "start"}\nSegmentation fault')


def test_program_totals_and_where_dropped():
    raw = [[(5).to_bytes(8, "little"), (7).to_bytes(8, "little")], [(1).to_bytes(8, "little"), (0).to_bytes(8, "little")]]
    totals, per_cpu = ddos.program_totals(raw)
    assert totals == {"dropped": 12, "redirected": 1} and per_cpu == {"0": 5, "1": 7}
    moved = ddos.moved({"UdpNoPorts": 10, "UdpInErrors": 5}, {"UdpNoPorts": 3010, "UdpInErrors": 5}, ddos.SNMP_DROPS)
    assert moved == {"UdpNoPorts": 3000, "UdpInErrors": 0}
    where = ddos.where_dropped(moved, {"dropped": 600}, 300, 3.0)
    assert where == {"xdp_program_pps": 200.0, "xdp_driver_pps": 100.0, "udp_no_ports_pps": 1000.0,
                     "udp_in_errors_pps": 0.0, "udp_rcvbuf_errors_pps": 0.0}  # fmt: skip
    assert ddos.dropped_pps("stack", where) == 1000.0 and ddos.dropped_pps("none", where) == 0.0


def test_cpu_parties_name_who_runs_where():
    rows = [{"cpu": 0, "busy": 99.0, "user": 1, "system": 90, "softirq": 8}, {"cpu": 1, "busy": 40.0}]
    out = ddos.cpu_parties(rows, {"dut": [1], "app": [0], "generator": [0], "client": [0]})
    assert out[0]["roles"] == ["app", "client", "generator"] and out[1]["roles"] == ["dut"]


def _rec(system, pps, trans, udp_no_ports=0.0, xdp=None):
    return {"status": "ok", "point": {"system": system}, "ddos": {
        "tcp_rr": {"trans_per_s": trans, "trans_per_s_sd": 10.0}, "attack": {"offered_pps": pps, "achieved_pps": pps},
        "dropped": {"udp_no_ports_pps": udp_no_ports, "xdp_program_pps": xdp}, "cpus": []}}  # fmt: skip


def test_table_ratio_rows_and_the_issues_check():
    recs = [
        _rec("ddos_none", 0, 10000), _rec("ddos_none", 500000, 9000, 500000), _rec("ddos_none", 1000000, 3000, 800000),
        _rec("ddos_none", 2000000, 0, 800000), _rec("xdp_ddos_filter", 0, 10000),
        _rec("xdp_ddos_filter", 1000000, 9500, 0, 1e6), _rec("xdp_ddos_filter", 3000000, 8100, 0, 3e6),
        _rec("xdp_ddos_filter", 4000000, 5000, 0, 4e6),
    ]  # fmt: skip
    pts = ddos.points(recs)
    assert ddos.held(pts["ddos_none"]) == (500000, 2000000)
    assert ddos.held(pts["xdp_ddos_filter"]) == (3000000, None)
    assert ddos.linux_drop_rate(pts["ddos_none"]) == 800000.0
    # none falls to 0 at 2 Mpps, above the 0.8 Mpps drop rate; XDP holds 3 Mpps >= 3 x 0.8 Mpps
    assert ddos.check(pts) == {"linux_drop_pps": 800000.0, "none_falls_before": False, "xdp_holds_3x": True,
                               "xdp_holds_3x_against_control": None}  # fmt: skip
    paper = ddos.paper_rows("attack_pps,xdp_tcp_rr_trans_per_s,xdp_sd,no_xdp_tcp_rr_trans_per_s,no_xdp_sd\n"
                            "0,34524.7,33.0,34016.0,8.0\n3500000,,,0,0\n")  # fmt: skip
    assert paper[3500000] == {"xdp": None, "xdp_sd": None, "no_xdp": 0.0, "no_xdp_sd": 0.0}
    md = ddos.table_markdown(pts, paper)
    assert "| ddos_none | 0 | 0.00 | 10,000 | 10 | 100 % |" in md
    assert "| xdp_ddos_filter | 3 | 3.00 | 8,100 | 10 | 81 % |" in md
    assert "Linux drop rate (UDP to no port, the ddos_none row's UdpNoPorts ceiling): 0.80 Mpps." in md
    assert "| ddos_none | 0 | 0.00 | 10,000 | 10 | 100 % | - |" in md and "(against the control row: None)" in md


def test_held_against_the_control_row_leaves_out_what_the_generator_costs_the_client():
    """On a shared machine the control row (the flood to a sink, not the DUT) loses TCP_RR too: a row is judged
    against it at each rate; a rate the control row lacks is not judged."""
    recs = [
        _rec("ddos_control", 0, 10000), _rec("ddos_control", 500000, 6000), _rec("ddos_control", 1000000, 5000),
        _rec("ddos_control", 3000000, 5000),
        _rec("ddos_none", 0, 10000), _rec("ddos_none", 500000, 2000, 500000), _rec("ddos_none", 1000000, 0, 600000),
        _rec("xdp_ddos_filter", 0, 10000), _rec("xdp_ddos_filter", 500000, 5900, 0, 5e5),
        _rec("xdp_ddos_filter", 1000000, 4500, 0, 1e6), _rec("xdp_ddos_filter", 2000000, 1000, 0, 2e6),
        _rec("xdp_ddos_filter", 3000000, 4100, 0, 3e6),
    ]  # fmt: skip
    pts = ddos.points(recs)
    # of its own baseline the filter holds nothing (59 % at 0.5 Mpps); of the control row 98 %, 90 %, 82 %;
    # 2 Mpps is not judged (no control point there)
    assert ddos.held(pts["xdp_ddos_filter"]) == (0, None)
    assert ddos.held(pts["xdp_ddos_filter"], pts["ddos_control"]) == (3000000, None)
    assert ddos.held(pts["ddos_none"], pts["ddos_control"]) == (0, 1000000)
    assert ddos.check(pts) == {"linux_drop_pps": 600000.0, "none_falls_before": False, "xdp_holds_3x": False,
                               "xdp_holds_3x_against_control": True}  # fmt: skip
    md = ddos.table_markdown(pts, {})
    assert "| xdp_ddos_filter | 0.5 | 0.50 | 5,900 | 10 | 59 % | 98 % |" in md
    assert "| ddos_control | 0.5 | 0.50 | 6,000 | 10 | 60 % | - |" in md
    assert "| xdp_ddos_filter | 0.00 | - | 3.00 | XDP: above 80 % up to 19 Mpps, 0 at 23 Mpps |" in md
    assert "| ddos_control | 0.00 | - | - | - |" in md
    assert "with XDP it holds to at least 3x that rate: False (against the control row: True)." in md


def test_the_record_keeps_the_section_and_refuses_another_shape():
    meas = {"pps": 1.0, "window": {"start": 0, "end": 1, "seconds": 1}, "source": {"kind": "snmp", "at": "dut"}}
    args = {
        "experiment": "paper_ddos",
        "trial": {"trial_id": "t", "point": {"system": "ddos_none"}, "repetition": 1},
        "status": "ok",
        "started_at": "2026-01-01T00:00:00Z",
        "measurement": meas,
        "generator": {"sent": 1, "elapsed_s": 1, "offered_pps": 1.0},
    }
    attack = {"offered_pps": 0, "achieved_pps": 1.0}
    section = ddos.section({"trans_per_s": 5.0, "samples": []}, {}, attack, {"drop_at": "stack"})
    rec = _record.build_record(**args, ddos=section)
    assert rec["ddos"]["tcp_rr"]["trans_per_s"] == 5.0 and rec["ddos"]["drop_at"] == "stack"
    assert "ddos" not in _record.build_record(**args)
    with pytest.raises(_record.RecordError, match="ddos must be"):
        _record.build_record(**args, ddos={"tcp_rr": {}})


def test_the_kind_is_registered_with_a_provider_and_the_shared_cpumap_entries():
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PROVIDERS

    assert "ddos" in _systems.KINDS and "ddos" in PROVIDERS
    assert _systems.cpumap_entries(0, 2048) == {"0": {"qsize": 2048, "program": None}}
    # the forwarding cpumap uses the same helper (one place)
    plan = _systems.forward_plan({"forward": "xdp_redirect_cpu", "name": "x"}, "veth1", 0, {}, {})
    assert plan["xdp"]["map_entries"]["cpu_map"] == _systems.cpumap_entries(0, 2048, "xdp_cpumap_fwd")


# -- bad input: refused by the validate step (filter experiment_input_errors) before anything changes ----------------
DDOS_SYSTEMS = {"ddos_none": {"impl": "ddos", "filter": "none", "drop_at": "stack"}, "xdp": {"impl": "xdp"}}
GOOD = {"tcp_rr_port": 12865, "attack_port": 9, "max_pps": 16000000, "mtu": 1500}


def ddos_input_errors(tmp, ddos_input=None, mpps=(0, 1), packet_len=(64,), system="ddos_none", dut=None):
    from ansible_collections.xdplab.testbed.plugins.filter.experiment_input import experiment_input_errors
    from ansible_collections.xdplab.testbed.tests.unit.test_input_checks import IMPLS, _dut, _gen

    opts = {"experiment_name": "x", "experiment_repetitions": 1, "experiment_systems": DDOS_SYSTEMS,
            "experiment_results_dir": str(tmp), "experiment_warmup": 2, "experiment_interval": 3, "experiment_samples": 4,
            "experiment_generator_slack": 10, "experiment_window_lead": 10, "experiment_kept_up_share": 0.99,
            "experiment_latency_max_pps": 1000000, "experiment_ddos": dict(GOOD, **(ddos_input or {}))}  # fmt: skip
    matrix = {"system": [system], "cores": [1], "packet_len": list(packet_len), "offered_mpps": list(mpps)}
    return experiment_input_errors(
        opts, matrix, _dut(**(dut or {})), _gen(), IMPLS + ["ddos"], backends=["xdp_live"], touch_modes=["no_touch"],
        tcp_programs=["none"], afxdp_binds=["skb", "drv_copy"], generators=["tg"], vlab=["dut", "tg"], online_cpus="0-1",
    )  # fmt: skip


def test_good_ddos_input_passes(tmp_path):
    assert ddos_input_errors(tmp_path) == []


def test_an_app_cpu_that_is_not_a_cpu_number_is_refused(tmp_path):
    assert ddos_input_errors(tmp_path, dut={"xdplab_dut_cpumap_cpu": "1"}) == []
    assert ddos_input_errors(tmp_path, dut={"xdplab_dut_cpumap_cpu": 0}) == []
    assert ddos_input_errors(tmp_path, dut={"xdplab_dut_cpumap_cpu": "first"}) == [
        "dut: xdplab_dut_cpumap_cpu: \"first\" is not a CPU number: it is the DoS experiment's application CPU (the "
        "TCP_RR server's and xdp_ddos_filter's cpumap target); name one CPU of dut, or leave it out for the default (the "
        "first housekeeping CPU that no generator on this machine uses, else the DUT's last CPU)"
    ]
    # another experiment's matrix: not this check's (the forwarding experiment's cpumap CPU has its own)
    assert ddos_input_errors(tmp_path, system="xdp", dut={"xdplab_dut_cpumap_cpu": "first"}) == []


def test_attack_port_equal_to_the_tcp_rr_port_is_refused(tmp_path):
    assert ddos_input_errors(tmp_path, {"attack_port": 12865}) == [
        "dut: experiment_ddos_attack_port: 12865 is the TCP_RR port (experiment_ddos_tcp_rr_port, its control and data "
        "connection): the flood would hit the measured connection; give another attack port (9, the default)"
    ]


def test_attack_rate_above_the_generators_ceiling_is_refused(tmp_path):
    assert ddos_input_errors(tmp_path, {"max_pps": 2000000}, mpps=(0, 1, 3)) == [
        "dut: offered_mpps: attack rates [3000000.0] pps are above the generator's ceiling xdplab_generator_max_pps=2000000 "
        "pps; give rates at or below it (-e '{\"paper_ddos_offered_mpps\": [0, 1, 2]}'), or on a faster generator raise "
        "xdplab_generator_max_pps in the inventory"
    ]
    # another experiment's matrix is not the DoS experiment's: no ceiling of this check there
    assert ddos_input_errors(tmp_path, {"max_pps": 2000000}, mpps=(3,), system="xdp") == []


def test_packet_length_plus_20_over_the_mtu_is_refused(tmp_path):
    assert ddos_input_errors(tmp_path, packet_len=(64, 1498)) == []
    assert ddos_input_errors(tmp_path, packet_len=(64, 1499)) == [
        "dut: packet_len: [1499] bytes: the IP packet (packet_len - 18) + 20 bytes is over the DUT port's MTU "
        "xdplab_dut_mtu=1500; give packet_len at most 1498"
    ]


# -- the provider (plugin_utils/_kind_ddos.py): which modules it calls, in order, with what, on a stand-in phases ------
class FakeDdosPhases:
    """What the ddos provider uses of _trial.Phases, recording module calls, shell scripts and jobs."""

    def __init__(self, system, rate_pps=0, variables=None):
        import os

        import yaml

        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with open(os.path.join(root, "roles", "experiment", "defaults", "main.yml")) as fh:
            systems = yaml.safe_load(fh)["experiment_systems"]
        self.variables = {
            "__experiment_systems": systems, "__experiment_planned": {"point": {"system": system}},
            "__experiment_gen": {"host": "tg", "interface": "veth-tg0", "cpus": [0]}, "xdplab_housekeeping_cpus": [0],
            "xdplab_dut_interface": "veth-dut0", "xdplab_dut_ip": "198.18.0.2", "xdplab_bpf_prefix": "/p",
            "xdplab_generator_run_dir": "/run/g", "experiment_warmup": 2, "experiment_interval": 3, "experiment_samples": 4,
            "experiment_ddos_tcp_rr_port": 12865, "experiment_ddos_attack_port": 9, "experiment_ddos_baseline_pps": 1,
            "__experiment_xdp_program_keys": ["id"],
        }  # fmt: skip
        self.variables.update(variables or {})
        self.state = {"trial": {"name": system, "kind": "ddos", "rate_pps": rate_pps, "cpus": [1]}}
        self.calls, self.scripts, self.jobs = [], [], []

    @property
    def trial(self):
        return self.state["trial"]

    def var(self, name, default=None):
        value = self.variables.get(name)
        return default if value is None else value

    def host_var(self, host, name, default=None):
        return self.variables.get(f"{host}.{name}", default)

    def module(self, name, args):
        self.calls.append((name, {k: v for k, v in args.items() if v is not None}))
        return {"id": 7, "command": ["x"]}

    def shell(self, script, what):
        self.scripts.append(script)
        return {"rc": 0, "stdout": "1.3.1-1\n"}

    def start_job(self, name, module, args, limit_s):
        self.jobs.append((name, module, args, limit_s))

    def collect_job(self, name, timeout_s):
        return {"tcp_rr": {"trans_per_s": 100.0, "samples": []}}

    def sampling(self):
        return {"warmup": 2, "interval": 3, "samples": 4}

    def measured(self):
        return self.state.get("measured") or {}


def test_the_xdp_filter_row_attaches_the_filter_with_its_cpumap_and_floods_the_attack_port():
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_ddos import DdosProvider

    ph = FakeDdosPhases("xdp_ddos_filter", rate_pps=500000)
    program = DdosProvider.setup(ph)
    (server, srv_args), (attach, xdp_args) = ph.calls
    assert server == "xdplab.testbed.tcp_rr" and srv_args["state"] == "present" and srv_args["cpu"] == 0
    assert srv_args["addr"] == "198.18.0.2" and srv_args["port"] == 12865
    assert attach == "xdplab.testbed.xdp_program" and xdp_args["program"] == "xdp_ddos_filter"
    assert xdp_args["object"] == "/p/lib/bpf/xdp_ddos_filter.bpf.o"
    assert xdp_args["variables"] == {"attack_port_min": 9, "attack_port_max": 9, "app_cpu": 0, "count_mode": 1}
    assert xdp_args["map_entries"] == {"cpu_map": {"0": {"qsize": 2048, "program": None}}}
    assert ph.state["traffic"] == {"port_base": 9, "rate_pps": 500000}
    assert program["filter"] == "program" and program["drop_at"] == "program" and program["id"] == 7
    # the generator host: software TCP checksums, then the client as a job of the phases over warm-up + 4 x 3 s
    DdosProvider.far_setup(ph)
    assert "ethtool -K veth-tg0 tx off" in ph.scripts[-1]
    name, module, args, _limit = ph.jobs[0]
    assert (name, module, args["state"], args["warmup"], args["duration"], args["interval"], args["cpu"]) == (
        "tcp_rr", "xdplab.testbed.tcp_rr", "measured", 2.0, 12.0, 3.0, 0)  # fmt: skip
    DdosProvider.far_teardown(ph)
    assert "ethtool -K veth-tg0 tx $(cat /run/g/ddos-tx-csum.veth-tg0)" in ph.scripts[-1]


def test_the_baseline_offers_a_trickle_and_the_control_row_floods_a_sink():
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_ddos import SINK, SINK_MAC, DdosProvider

    ph = FakeDdosPhases("ddos_control", rate_pps=0)
    DdosProvider.setup(ph)
    # no filter on the DUT; the generator's rate 0 would be its full speed: the baseline offers 1 frame/s instead
    assert ph.calls[1] == ("xdplab.testbed.xdp_program", {"interface": "veth-dut0", "state": "absent"})
    assert ph.state["traffic"] == {"port_base": 9, "rate_pps": 1, "interface": SINK, "dst_mac": SINK_MAC}
    DdosProvider.far_setup(ph)
    assert f"ip link add {SINK} type veth" in ph.scripts[0]
    assert ph.calls[-1][1]["interface"] != "veth-dut0" and ph.calls[-1][1]["program"] == "xdp_bare_drop"


def test_the_peer_row_loads_xdp_filter_on_the_attack_port_and_the_record_gets_its_section():
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_ddos import DdosProvider

    ph = FakeDdosPhases("xdp_filter_peer", rate_pps=100000)
    program = DdosProvider.setup(ph)
    assert "xdp-filter load -m native -p allow veth-dut0" in ph.scripts[0]
    assert "xdp-filter port -m dst -p udp 9" in ph.scripts[0]
    assert program["peer"]["xdp_tools_version"] == ["1.3.1-1"]
    ph.state["side"] = DdosProvider.side_collect(ph)
    ph.state["measured"] = {"dut": {"dropped": {"xdp_driver_pps": 9.0}, "cpus": [{"cpu": 0, "busy": 1.0}, {"cpu": 1}]}}
    section = DdosProvider.record_extra(ph, {"offered_pps": 99000.0})["ddos"]
    assert section["tcp_rr"]["trans_per_s"] == 100.0 and section["drop_at"] == "driver"
    assert section["attack"] == {"port": 9, "offered_pps": 100000, "achieved_pps": 99000.0, "to": "dut"}
    assert section["cpus"][0]["roles"] == ["app", "client", "generator"] and section["cpus"][1]["roles"] == ["dut"]
    assert section["app_cpu"]["cpu"] == 0 and "the generator is another machine" in section["app_cpu"]["chosen_because"]


# -- the application's CPU (_ddos.app_cpu; the provider's _app_cpu): the generator's CPUs on the same machine -------
def test_the_app_cpu_on_hardware_is_the_first_housekeeping_cpu():
    # inventories/lab: the generator is another machine, so its CPUs 2-7 do not matter on the DUT
    cpu, why = ddos.app_cpu(None, [0], [1, 2, 3, 4, 5], [2, 3, 4, 5, 6, 7], same_machine=False)
    assert cpu == 0 and why == "the first of xdplab_housekeeping_cpus [0] (the generator is another machine)"
    # no housekeeping CPU named (inventories/lab as shipped: all six cores are the DUT's): the DUT's last
    cpu, why = ddos.app_cpu(None, [], [0, 1, 2, 3, 4, 5], [2, 3, 4, 5, 6, 7], same_machine=False)
    assert cpu == 5 and why == "the DUT's last CPU (xdplab_dut_cpus [0, 1, 2, 3, 4, 5]): xdplab_housekeeping_cpus is empty"


def test_the_app_cpu_on_the_2_cpu_vlab_is_the_duts_when_housekeeping_is_the_generators():
    # 2 CPUs: housekeeping, sender, receive NAPI and client all on CPU 0; the DUT on CPU 1
    cpu, why = ddos.app_cpu(None, [0], [1], [0, 0, 0], same_machine=True)
    assert cpu == 1
    assert why == (
        "the DUT's last CPU (xdplab_dut_cpus [1]): every CPU of xdplab_housekeeping_cpus [0] is also a generator's on "
        "this machine ([0]), so the application shares the DUT's CPU, not the generator's, as two machines would"
    )


def test_the_app_cpu_on_a_4_cpu_vlab_is_the_housekeeping_cpu_no_generator_uses():
    # 4 CPUs (the layout): housekeeping 0, DUT 1, generator 2, generator_rx 3
    cpu, why = ddos.app_cpu(None, [0], [1], [2, 3, 2], same_machine=True)
    assert cpu == 0 and why.startswith("the first of xdplab_housekeeping_cpus [0] that no generator on this machine")
    assert "receive NAPI and TCP_RR client: [2, 3])" in why
    # housekeeping 0 and 5, CPU 0 also a generator's (a mapping that shares it): the next housekeeping CPU
    assert ddos.app_cpu(None, [0, 5], [1, 2], [0, 3, 4], same_machine=True)[0] == 5


def test_an_explicit_app_cpu_wins_and_a_bad_one_is_refused():
    assert ddos.app_cpu(1, [0], [1], [0], same_machine=True) == (1, "xdplab_dut_cpumap_cpu")
    assert ddos.app_cpu("0", [0], [1], [0], same_machine=True) == (0, "xdplab_dut_cpumap_cpu")
    with pytest.raises(ddos.DdosError, match="xdplab_dut_cpumap_cpu: 'first' is not a CPU number"):
        ddos.app_cpu("first", [0], [1], [0], same_machine=True)
    with pytest.raises(ddos.DdosError, match="xdplab_dut_cpus is empty"):
        ddos.app_cpu(None, [0], [], [0], same_machine=True)


VLAB = {"groups": {"vlab": ["dut", "tg"]}, "inventory_hostname": "dut", "xdplab_dut_cpus": [1]}


@pytest.mark.parametrize(
    ("variables", "cpu", "because"),
    [
        ({}, 0, "the first of xdplab_housekeeping_cpus [0] (the generator is another machine)"),
        (VLAB, 1, "the DUT's last CPU (xdplab_dut_cpus [1]): every CPU"),
        (dict(VLAB, **{"__experiment_gen": {"host": "tg", "interface": "veth-tg0", "cpus": [2]},
                       "tg.xdplab_generator_rx_cpus": [3]}), 0, "no generator on this machine uses"),
        (dict(VLAB, **{"__experiment_gen": {"host": "tg", "interface": "veth-tg0", "cpus": [2]},
                       "tg.xdplab_generator_rx_cpus": [3], "tg.xdplab_tcp_rr_client_cpus": [0]}), 1, "the DUT's last"),
        (dict(VLAB, xdplab_dut_cpumap_cpu="1"), 1, "xdplab_dut_cpumap_cpu"),
    ],
    ids=["hardware", "vlab-2-cpus", "vlab-4-cpus", "vlab-4-cpus-client-on-housekeeping", "explicit"],
)  # fmt: skip
def test_the_provider_pins_the_server_and_the_cpumap_to_the_app_cpu_and_records_why(variables, cpu, because):
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_ddos import DdosProvider

    ph = FakeDdosPhases("xdp_ddos_filter", rate_pps=500000, variables=variables)
    program = DdosProvider.setup(ph)
    (_server, srv_args), (_attach, xdp_args) = ph.calls
    assert srv_args["cpu"] == cpu and xdp_args["variables"]["app_cpu"] == cpu and program["app_cpu"] == cpu
    assert list(xdp_args["map_entries"]["cpu_map"]) == [str(cpu)]
    ph.state["side"] = DdosProvider.side_collect(ph)
    ph.state["measured"] = {"dut": {"cpus": [{"cpu": 0, "busy": 1.0}, {"cpu": 1, "busy": 2.0}]}}
    section = DdosProvider.record_extra(ph, {"offered_pps": 1.0})["ddos"]
    assert section["app_cpu"]["cpu"] == cpu and because in section["app_cpu"]["chosen_because"]
    assert "app" in section["cpus"][cpu]["roles"]


def test_a_bad_explicit_app_cpu_fails_the_phase_before_anything_changes():
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_ddos import DdosProvider
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PhaseFailure

    ph = FakeDdosPhases("xdp_ddos_filter", variables={"xdplab_dut_cpumap_cpu": "first"})
    with pytest.raises(PhaseFailure, match="'first' is not a CPU number"):
        DdosProvider.setup(ph)
    assert ph.calls == []


def test_the_report_says_which_application_cpu_and_why(tmp_path, capsys):
    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.xdplab.testbed.plugins.modules import ddos_report

    why = "the DUT's last CPU (xdplab_dut_cpus [1]): every CPU of xdplab_housekeeping_cpus [0] is also a generator's"
    recs = [_rec("ddos_none", 0, 10000), _rec("ddos_none", 1000000, 2, 800000)]
    for rec in recs:
        rec["ddos"]["app_cpu"] = {"cpu": 1, "chosen_because": why}
    older = _rec("ddos_none", 2000000, 0, 800000)  # a record from before app_cpu was recorded: no line of its own
    (tmp_path / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*recs, older]))
    with patch_module_args({"results": str(tmp_path / "trials.jsonl")}), pytest.raises(SystemExit):
        ddos_report.main()
    out = json.loads(capsys.readouterr().out)
    line = f"Application CPU (the TCP_RR server's, xdp_ddos_filter's cpumap target): CPU 1, {why}."
    assert out["markdown"].count("Application CPU") == 1 and line in out["markdown"]
    assert line in (tmp_path / "ddos.md").read_text()
    # the records' CPUs do not say the application shares the DUT's CPU: no word of it
    assert "shares a CPU with the DUT's receive path" not in out["markdown"]


def test_the_report_says_why_when_the_application_shares_the_duts_cpu():
    """A record whose CPU list gives one CPU both roles, app and dut (the 2-CPU virtual lab), makes the report say
    what that costs the filter's row and what the paper's result needs; one with the roles apart says nothing."""
    rec = _rec("xdp_ddos_filter", 1000000, 5000, 0, 1e6)
    rec["ddos"]["cpus"] = [{"cpu": 0, "roles": ["client", "generator"]}, {"cpu": 1, "roles": ["app", "dut"]}]
    (line,) = ddos.app_cpu_lines([rec])
    assert line.startswith("The application shares a CPU with the DUT's receive path here") and "4 or more CPUs" in line
    rec["ddos"]["cpus"] = [{"cpu": 0, "roles": ["app"]}, {"cpu": 1, "roles": ["dut"]}, {"cpu": 2, "roles": ["generator"]}]
    assert ddos.app_cpu_lines([rec]) == []

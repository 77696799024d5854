# SPDX-License-Identifier: GPL-3.0-or-later
"""The TCP experiment's pieces (issue 10 part 2): iperf3's window sizes and command lines, what a real client
JSON says (tests/unit/fixtures/iperf3: real iperf3 3.12 output of this machine), the record's tcp section with
the driver's page/cache counters of seeds/002 (fixtures/ethtool/seed002_*: the seed's ethtool_stats.pl lines),
the headline and the seed's verdict row, and the AF_XDP table beside seeds/001's."""

import copy
import csv
import json
import os

import jsonschema
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool, _iperf3, _record, _seed_report, _tcp
from ansible_collections.xdplab.testbed.plugins.module_utils._generators import backend_for
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import GeneratorError

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures")
ROOT = os.path.join(HERE, "..", "..")
with open(os.path.join(ROOT, "docs", "trial_record.schema.json")) as _f:
    VALIDATOR = jsonschema.Draft202012Validator(json.load(_f))


def fixture(*parts):
    with open(os.path.join(FIX, *parts)) as f:
        return f.read()


@pytest.mark.parametrize(
    "text,expected",
    [
        ("4M", 4 * 1024**2),
        ("256K", 256 * 1024),
        ("1g", 1024**3),
        ("65536", 65536),
        ("default", None),
        ("", None),
        (None, None),
        ("0.5M", 512 * 1024),
    ],
)
def test_window_sizes(text, expected):
    assert _iperf3.window_bytes(text) == expected


@pytest.mark.parametrize("text", ["4 MB", "big", "-4M", "4MiB", "0"])
def test_a_window_that_is_not_a_size_is_refused(text):
    with pytest.raises(_iperf3.Iperf3Error, match=r"not a (positive )?size"):
        _iperf3.window_bytes(text)


def test_client_command_pins_and_sets_the_window():
    cmd = _iperf3.client_command("198.18.0.2", streams=6, seconds=9, omit=2, window="4M", cpus=[0])
    assert cmd[:3] == ["taskset", "-c", "0"]
    assert cmd[cmd.index("--parallel") + 1] == "6" and cmd[cmd.index("--window") + 1] == "4M"
    assert cmd[cmd.index("--omit") + 1] == "2" and "--json" in cmd
    assert "--window" not in _iperf3.client_command("198.18.0.2", window="default")
    with pytest.raises(_iperf3.Iperf3Error):
        _iperf3.client_command("198.18.0.2", window="lots")


def test_tcp_result_of_a_run_that_ended_by_itself():
    doc = _iperf3.parse_client_json(fixture("iperf3", "client_P2_w4M_omit1.json"))
    t = _iperf3.tcp_result(doc)
    end = doc["end"]["sum_received"]
    assert t["goodput_source"] == "receiver"
    assert t["goodput_gbit"] == pytest.approx(end["bytes"] * 8 / end["seconds"] / 1e9)
    assert t["retransmits"] == doc["end"]["sum_sent"]["retransmits"] and t["streams"] == 2 and t["omit_s"] == 1
    assert t["sock_bufsize"] == 4 * 1024**2 and t["version"].startswith("iperf 3")
    assert any(i["omitted"] for i in t["intervals"]) and not any(i["omitted"] for i in t["intervals"][-2:])


def test_tcp_result_of_a_run_stopped_by_sigint_uses_the_senders_intervals():
    doc = _iperf3.parse_client_json(fixture("iperf3", "client_sigint.json"))
    t = _iperf3.tcp_result(doc)
    assert t["goodput_source"] == "sender_intervals" and t["goodput_gbit"] > 0
    assert "interrupt" in t["error"]


def test_parse_refuses_no_json():
    with pytest.raises(_iperf3.Iperf3Error, match="nothing"):
        _iperf3.parse_client_json("")
    with pytest.raises(_iperf3.Iperf3Error, match="not a JSON"):
        _iperf3.parse_client_json("iperf3: error - unable to connect to server")


def test_the_generator_backend_refuses_bad_options(tmp_path):
    params = {
        "run_dir": str(tmp_path),
        "name": "t",
        "interface": "lo",
        "dst_ip": "127.0.0.1",
        "duration": 5,
        "stream_count": 1,
        "cpus": [0],
        "backend_options": {"window": "huge"},
    }
    backend = backend_for("iperf3")(params, None)
    with pytest.raises(GeneratorError, match="not a size"):
        backend.validate()
    params["backend_options"] = {"windw": "4M"}
    with pytest.raises(GeneratorError, match="does not know backend_options windw"):
        backend_for("iperf3")(params, None).validate()
    params["backend_options"] = {"streams": 6, "window": "4M", "time": 9, "omit": 2, "cpus": [0]}
    cmd = backend_for("iperf3")(params, None).command()
    assert cmd[cmd.index("--client") + 1] == "127.0.0.1" and cmd[cmd.index("--time") + 1] == "9"


def test_page_counters_of_the_seed_mlx5_lines():
    xdp = _ethtool.parse_ethtool_stats_pl(fixture("ethtool", "seed002_mlx5_xdp_lines.txt"))["mlx5p1"]
    counters = _tcp.page_counters(xdp)
    assert counters["rx_cache_busy"] == 6653761 and counters["rx_cache_reuse"] == 669481
    assert "rx_packets" not in counters and "rx_csum_unnecessary" not in counters


def tcp_input(driver_rates):
    t = _iperf3.tcp_result(_iperf3.parse_client_json(fixture("iperf3", "client_P2_w4M_omit1.json")))
    t["driver_rates"] = driver_rates
    return t


def test_tcp_section_cpu_split_and_cpu_per_gbit():
    per_cpu = [{"cpu": 1, "busy": 60.0, "user": 10.0, "system": 20.0, "softirq": 30.0, "irq": 0.0}]
    sec = _tcp.tcp_section(
        tcp_input({"veth-dut0": {"rx_queue_0_xdp_packets": 1000.0}}), 60.0, per_cpu, {"busy_source": "schedstat"}, "veth"
    )
    assert sec["cpu"]["softirq"] == 30.0 and sec["cpu"]["precise_source"] == "schedstat" and sec["cpu"]["busy"] == 60.0
    assert "tick-sampled" in sec["cpu"]["split_source"]
    assert sec["cpu_per_gbit"] == pytest.approx(60.0 / sec["goodput_gbit"])
    assert sec["driver_counters"] == {} and "veth has no page or cache counters" in sec["driver_counters_note"]
    with pytest.raises(_tcp.TcpError):
        _tcp.tcp_section({"retransmits": 1})


def test_the_record_carries_the_tcp_section_and_validates():
    base = json.loads(fixture("report", "base_record.json"))
    res = base["result"]
    from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement

    meas = _measurement.measurement(
        res["pps"], _measurement.window_of(res["window"]["start"], res["window"]["end"]), {"kind": "ethtool", "at": "dut"}
    )
    cpu = json.loads(fixture("report", "cpu_usage_vlab.json"))
    mlx5 = _ethtool.parse_ethtool_stats_pl(fixture("ethtool", "seed002_mlx5_nonxdp_lines.txt"))
    gen = copy.deepcopy(base["generator"])
    rec = _record.build_record(
        "xdp_pass_tcp",
        {"trial_id": "t1", "point": {"system": "tcp", "program": "none"}, "repetition": 1},
        "ok",
        started_at="2026-12-01T13:00:00Z",
        measurement=meas,
        cpu=cpu,
        generator=gen,
        provenance={"dut": {"driver": "mlx5_core"}},
        tcp=tcp_input(mlx5),
    )
    assert not list(VALIDATOR.iter_errors(json.loads(json.dumps(rec))))
    assert rec["tcp"]["driver_counters"]["rx_cache_reuse"] == 3548789
    assert rec["tcp"]["cpu"]["precise_busy"] == rec["result"]["cpu_busy"]
    assert "driver_rates" not in rec["tcp"]


def test_the_seed_verdict_row_is_its_own_numbers():
    seed = {"none": {"goodput_gbit": 89.7, "cpu_busy": 58}, "pass_native": {"goodput_gbit": 83.3, "cpu_busy": 100}}
    v = _seed_report.seed_verdict(seed)
    assert round(100 * v["cpu_change"]) == 72 and round(100 * v["goodput_change"]) == -7


def tcp_record(program, cpg, goodput=10.0):
    return {
        "status": "ok",
        "point": {"program": program, "streams": 1, "window": "default"},
        "result": {"pps": 1e5},
        "tcp": {
            "goodput_gbit": goodput,
            "cpu_per_gbit": cpg,
            "cpu": {"busy": cpg * goodput},
            "driver_counters": {},
            "driver_counters_note": "veth has none",
        },
    }


def test_headline_interval_of_cpu_per_gbit():
    recs = [tcp_record("none", v) for v in (5.0, 5.2, 4.9, 5.1)] + [tcp_record("pass_native", v) for v in (6.0, 6.3, 5.9, 6.1)]
    text, rows, heads = _seed_report.tcp_markdown(
        recs, {"none": {"goodput_gbit": 89.7, "cpu_busy": 58}, "pass_native": {"goodput_gbit": 83.3, "cpu_busy": 100}}, veth=True
    )
    (h,) = heads
    lo, hi = h["cpu_per_gbit"]["ci"]
    assert lo < h["cpu_per_gbit"]["relative"] < hi and 0.15 < h["cpu_per_gbit"]["relative"] < 0.25
    assert h["text"].startswith("XDP_PASS native costs ") and "more CPU per Gbit/s than no program (95 % CI" in h["text"]
    assert "+72.4 %" in text and "no DMA" in text
    _data, script = _seed_report.tcp_figure(rows, "x.png")
    assert "XDP_PASS native" in script and "set output 'x.png'" in script
    # too few repetitions: a headline without an interval that says why
    _t, _r, heads = _seed_report.tcp_markdown(recs[:1] + recs[4:5], {})
    assert "no interval" in heads[0]["text"]


def test_afxdp_table_has_no_blank_cell():
    with open(os.path.join(ROOT, "playbooks", "reference", "afxdp_rfc_v3.csv")) as f:
        ref = list(csv.DictReader(f))
    recs = [{"status": "ok", "point": {"mode": "rxdrop", "packet_len": 64, "bind": "skb", "cores": 1}, "result": {"pps": 1.5e6}}]
    text = _seed_report.afxdp_markdown(recs, ref, {"*/*/drv_zerocopy": "veth has no AF_XDP zero-copy"}, "1")
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| rxdrop") or line.startswith("| txpush") or line.startswith("| l2fwd")
    ]
    assert len(rows) == 6
    for row in rows:
        assert all(cell.strip() for cell in row.strip("|").split("|")), row
    assert "| rxdrop | 64 | 2.9 | 1.50 |" in text and "veth has no AF_XDP zero-copy" in text

"""Report tables from trial records (plugins/module_utils/_report.py)."""

import csv
import io
import json
import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _report as report

REFERENCE = os.path.join(os.path.dirname(__file__), "..", "..", "playbooks", "reference", "drop_vs_cores.csv")


def record(cores, touch, rep, pps, offered, limit, spread=1.0):
    return {
        "trial_id": "%s-%s-%s" % (cores, touch, rep),
        "status": "ok",
        "point": {"system": "xdp", "action": "drop", "touch": touch, "packet_len": 64, "cores": cores},
        "repetition": rep,
        "result": {"pps": pps, "queue_spread": spread},
        "generator": {"offered_pps": offered},
        "loss": {"pct": 100.0 * (offered - pps) / offered, "limit": limit,
                 "lost_at": "dut_rx_ring" if limit == "dut" else "none"},
        "provenance": {
            "dut": {"kernel_release": "6.18.44", "interface": "veth-dut0", "driver": "veth", "rx_queues": 1,
                    "tools": {"clang": "14.0.6", "libbpf": "1.1.2", "bpftool": None}},
            "program": {"name": "xdp_bench_drop", "tag": "abcd", "mode": "native", "object_sha256": "f" * 64},
            "generator": {"backend": "xdp_live", "version": "0.1.0"},
            "controller": {"collection_version": "0.1.0", "repo_commit": "10a00be"},
        },
    }


RECORDS = [
    record(1, "no_touch", 1, 5.9e6, 6.2e6, "dut"),
    record(1, "no_touch", 2, 6.1e6, 6.2e6, "dut"),
    record(1, "no_touch", 3, 6.0e6, 6.2e6, "dut"),
    record(2, "no_touch", 1, 7.0e6, 7.02e6, "generator", spread=1.4),
    record(1, "read", 1, 5.0e6, 6.0e6, "dut"),
]


def test_aggregate_mean_stdev_ns_and_limit():
    rows = report.aggregate(RECORDS)
    assert [(r["touch"], r["cores"]) for r in rows] == [("no_touch", 1), ("no_touch", 2), ("read", 1)]
    one = rows[0]
    assert one["repetitions"] == 3
    assert one["mpps_mean"] == pytest.approx(6.0)
    assert one["mpps_stdev"] == pytest.approx(0.1)
    assert one["ns_per_packet"] == pytest.approx(166.67, abs=0.01)
    assert one["limit"] == "dut"
    assert rows[1]["limit"] == "generator"
    assert rows[1]["queue_spread"] == 1.4
    assert rows[2]["mpps_stdev"] == 0.0


def test_reference_column_from_the_paper_csv():
    with open(REFERENCE) as f:
        text = f.read()
    assert report.load_reference(text, "xdp_drop_pps")[1] == pytest.approx(23.863471)
    rows = report.aggregate(RECORDS, report.reference_series(text, {"xdp": "xdp_drop_pps"}))
    assert rows[0]["paper_mpps"] == pytest.approx(23.86)
    assert rows[1]["paper_mpps"] == pytest.approx(45.51)
    # the paper's XDP series is no_touch: not drawn beside the read rows
    ref = report.reference_series(text, {"xdp": {"column": "xdp_drop_pps", "match": {"touch": "no_touch"}}})
    rows = report.aggregate(RECORDS, ref)
    assert [(r["touch"], r["paper_mpps"]) for r in rows] == [("no_touch", 23.86), ("no_touch", 45.51), ("read", None)]


def test_markdown_flags_offered_load_and_lists_provenance():
    rows = report.aggregate(RECORDS)
    md = report.to_markdown(rows, "XDP_DROP", report.provenance_lines(RECORDS))
    lines = md.splitlines()
    assert lines[0] == "## XDP_DROP"
    table = [line for line in lines if line.startswith("| xdp")]
    assert len(table) == 3
    assert "offered load *" in table[1] and "offered load *" not in table[0]
    assert "dut (lost at: dut_rx_ring)" in table[0]
    assert any(line.startswith("\\* offered load") for line in lines)
    assert any("kernel 6.18.44 on veth-dut0" in line and "tag abcd, native mode" in line for line in lines)
    assert any("tools: clang 14.0.6, libbpf 1.1.2;" in line for line in lines)
    assert any(line.endswith("collection 0.1.0 @10a00be") for line in lines)


def test_csv_round_trips():
    rows = report.aggregate(RECORDS)
    parsed = list(csv.DictReader(io.StringIO(report.to_csv(rows))))
    assert [p["cores"] for p in parsed] == ["1", "2", "1"]
    assert parsed[0]["paper_mpps"] == ""
    assert float(parsed[0]["mpps_mean"]) == pytest.approx(6.0)


def test_read_records_skips_cut_lines_and_failed_trials():
    text = "\n".join(json.dumps(r) for r in RECORDS[:2]) + '\n{"trial_id": "x", "status": "failed"}\n{"cut'
    records, bad = report.read_records(text)
    assert len(records) == 2
    assert bad == 1


def test_limit_of():
    assert report.limit_of(99, 100) == "generator"
    assert report.limit_of(98, 100) == "dut"
    assert report.limit_of(0, 0) == "dut"


FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "report")


def fixture_records(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return report.read_records(f.read())[0]


def test_every_matrix_axis_is_a_point_and_cpu_busy_is_shown():
    # paper_drop_cpu: the points differ only in their offered_mpps axis; they must not be merged
    records = fixture_records("paper_drop_cpu.jsonl")
    rows = report.aggregate(records)
    assert len(rows) == 15
    xdp = [r for r in rows if r["system"] == "xdp"]
    # offered_mpps is also a computed column: the axis becomes point_offered_mpps, ordered by value
    assert [r["point_offered_mpps"] for r in xdp] == [0.25, 0.5, 1, 2, 3]
    assert [r["cpu_busy"] for r in xdp] == [6.5, 10.8, 18.0, 31.0, 44.0]
    assert xdp[0]["offered_mpps"] == pytest.approx(0.25, abs=0.001)
    parsed = list(csv.DictReader(io.StringIO(report.to_csv(rows))))
    assert list(parsed[0])[:6] == ["system", "action", "touch", "packet_len", "cores", "point_offered_mpps"]
    assert parsed[0]["cpu_busy"] == "98.5"
    md = report.to_markdown(rows, "CPU", report.provenance_lines(records))
    header = md.splitlines()[2]
    assert "| cores | target Mpps | Mpps (mean) |" in header and "| CPU busy % | limit |" in header
    assert "| xdp drop | no_touch | 64 | 1 | 0.25 | 0.250 |" in md


def test_line_rate_limit_when_the_link_speed_is_known():
    assert report.wire_pps(100, 64) == pytest.approx(148809523.8, rel=1e-9)
    # the DUT kept up with 1.5 Mpps on a 1 Gbit/s link (1.488 Mpps of 64-byte frames): the wire was the limit
    assert report.limit_with_line_rate("generator", 1.5e6, 64, 1) == "line rate"
    assert report.limit_with_line_rate("generator", 1.0e6, 64, 1) == "generator"
    assert report.limit_with_line_rate("dut", 1.5e6, 64, 1) == "dut"
    assert report.limit_with_line_rate("generator", 1.5e6, 64, None) == "generator"
    recs = [record(1, "no_touch", 1, 14.8e6, 14.85e6, "generator")]
    assert report.aggregate(recs)[0]["limit"] == "generator"
    rows = report.aggregate(recs, link_speed_gbit=10)
    assert rows[0]["limit"] == "line rate"
    assert "line rate \u2020" in report.to_markdown(rows, "x")
    # a record's own link speed wins
    recs[0]["provenance"]["dut"]["link_speed_gbit"] = 100
    assert report.aggregate(recs, link_speed_gbit=10)[0]["limit"] == "generator"


def test_provenance_of_other_systems():
    lines = report.provenance_lines(fixture_records("paper_drop.jsonl"))
    dpdk = [line for line in lines if "DPDK rxonly (scalar RX): DPDK 22.11.11" in line]
    assert len(dpdk) == 1 and "max_simd_bitwidth 64" in dpdk[0] and "program ?" not in dpdk[0]
    assert any("Linux (raw table drop): backend nftables, mode raw" in line for line in lines)

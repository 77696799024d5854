"""Report tables from trial records (plugins/module_utils/_report.py).

The fixture files (fixtures/report/*.jsonl) are legacy records (written before the record schema existed:
no `schema` key), which the report still reads; the schema-1 records here are built by _record.build_record
from the same real trial (fixtures/report/base_record.json) and validated against docs/trial_record.schema.json.
"""

import copy
import csv
import io
import json
import os

import jsonschema
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl, _measurement, _record
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


def test_read_records_warns_of_cut_lines_and_leaves_out_failed_trials():
    text = "\n".join(json.dumps(r) for r in RECORDS[:2]) + '\n{"trial_id": "x", "status": "failed", "point": {}}\n{"cut'
    records, warnings = report.read_records(text, "trials.jsonl")
    assert len(records) == 2
    assert [(w.line, w.kind) for w in warnings] == [(4, _jsonl.CORRUPT)]
    assert str(warnings[0]).startswith("trials.jsonl:4: not valid JSON")


def test_a_record_of_an_unknown_schema_is_a_warning_not_a_row():
    text = json.dumps(RECORDS[0]) + "\n" + json.dumps(dict(RECORDS[1], schema=7)) + "\n"
    records, warnings = report.read_records(text, "t.jsonl")
    assert len(records) == 1
    assert str(warnings[0]).startswith("t.jsonl:2: schema 7: this collection reads schema 1")


def test_limit_of():
    assert _record.limit_of(99, 100) == "generator"
    assert _record.limit_of(98, 100) == "dut"
    assert _record.limit_of(0, 0) == "dut"


FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "report")


def fixture_records(name):
    records, warnings = report.load(os.path.join(FIXTURES, name))
    assert warnings == []
    return records


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
    assert "| cores | target Mpps | Mpps (mean) |" in header and "| CPU busy % | count mode | limit |" in header
    assert "| xdp drop | no_touch | 64 | 1 | 0.25 | 0.250 |" in md
    # legacy XDP records were counted by the program; the other systems have no count mode
    assert [r["count_mode"] for r in xdp] == ["program"] * 5
    assert {r["count_mode"] for r in rows if r["system"] != "xdp"} == {None}
    assert parsed[0]["count_mode"] == "" and "| offered load * | - |" in md


def test_line_rate_of_legacy_records_is_decided_when_read():
    # legacy records knew generator and dut only: the reader completes them with _record's verdict
    recs = [record(1, "no_touch", 1, 14.8e6, 14.85e6, "generator")]
    text = json.dumps(recs[0]) + "\n"
    assert report.aggregate(report.read_records(text)[0])[0]["limit"] == "generator"
    rows = report.aggregate(report.read_records(text, link_speed_gbit=10)[0])
    assert rows[0]["limit"] == "line rate"
    assert "line rate \u2020" in report.to_markdown(rows, "x")
    # a record's own link speed wins
    recs[0]["provenance"]["dut"]["link_speed_gbit"] = 100
    text = json.dumps(recs[0]) + "\n"
    assert report.aggregate(report.read_records(text, link_speed_gbit=10)[0])[0]["limit"] == "generator"


with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "trial_record.schema.json")) as _f:
    VALIDATOR = jsonschema.Draft202012Validator(json.load(_f))
with open(os.path.join(FIXTURES, "base_record.json")) as _f:
    BASE = json.load(_f)


def v1_record(rep, pps, offered, count_mode="driver", refused=0, link_speed_gbit=None):
    """A schema-1 record built from the real trial's inputs, at another rate; validated against the schema."""
    res = BASE["result"]
    meas = _measurement.measurement(
        pps,
        _measurement.window_of(res["window"]["start"], res["window"]["end"]),
        {"kind": "driver_counters" if count_mode == "driver" else "program_map", "at": "dut", "count_mode": count_mode},
        per_cpu=[{"cpu": 1, "pps": pps}],
        per_rxq=[{"queue": 0, "pps": pps}],
    )
    gen = copy.deepcopy(BASE["generator"])
    gen.update(offered_pps=offered, egress={"delivered": 0, "refused": refused})
    rec = _record.build_record(
        "paper_drop",
        {"trial_id": "v1-%d" % rep, "point": BASE["point"], "repetition": rep},
        "ok",
        started_at="2026-12-01T10:00:00Z",
        measurement=meas,
        generator=gen,
        provenance=BASE["provenance"],
        link_speed_gbit=link_speed_gbit,
    )
    errors = list(VALIDATOR.iter_errors(json.loads(json.dumps(rec))))
    assert not errors, [e.message for e in errors]
    return rec


def test_the_report_reads_the_recorded_verdict_and_aggregates_it_over_repetitions():
    # two repetitions the DUT could not keep up with, one it did: the point is the offered load's
    recs = [v1_record(1, 5.0e6, 6.2e6, refused=12_000_000), v1_record(2, 5.1e6, 6.2e6), v1_record(3, 6.19e6, 6.2e6)]
    assert [r["loss"]["limit"] for r in recs] == ["dut", "dut", "generator"]
    assert [r["loss"]["lost_at"] for r in recs] == ["dut_rx_ring", "path", "none"]
    (row,) = report.aggregate(recs)
    assert row["limit"] == "generator" and row["lost_at"] == "dut_rx_ring,path" and row["count_mode"] == "driver"
    # the report does not decide again: a verdict the record carries is the one shown
    recs[2]["loss"]["limit"] = "dut"
    assert report.aggregate(recs)[0]["limit"] == "dut"
    # line rate was decided when recorded (the report has no link speed of its own for schema-1 records)
    on_wire = v1_record(4, 5.95e6, 5.95e6, link_speed_gbit=4)
    assert report.aggregate([on_wire])[0]["limit"] == "line rate"


def test_schema_1_and_legacy_records_in_one_file(tmp_path):
    path = tmp_path / "trials.jsonl"
    legacy = fixture_records("paper_drop.jsonl")[:3]
    lines = [json.dumps(r, sort_keys=True) for r in legacy] + ["{not json"]
    lines += [json.dumps(v1_record(4, 5.6e6, 6.2e6, count_mode="program"), sort_keys=True)]
    path.write_text("\n".join(lines) + "\n")
    records, warnings = report.load(str(path))
    assert len(records) == 4 and [w.line for w in warnings] == [4]
    (row,) = report.aggregate(records)
    assert row["repetitions"] == 4 and row["count_mode"] == "program"
    md = report.to_markdown([row], "x")
    assert "| count mode |" in md.splitlines()[2] and "count mode: what counted" in md


def test_provenance_of_other_systems():
    lines = report.provenance_lines(fixture_records("paper_drop.jsonl"))
    dpdk = [line for line in lines if "DPDK rxonly (scalar RX): DPDK 22.11.11" in line]
    assert len(dpdk) == 1 and "max_simd_bitwidth 64" in dpdk[0] and "program ?" not in dpdk[0]
    assert any("Linux (raw table drop): backend nftables, mode raw" in line for line in lines)


def test_provenance_names_the_rx_path_when_the_driver_reports_no_burst_mode():
    # provenance.program.rx_paths (module testpmd's rx_paths): net_virtio's printed RX path, a burst mode where the
    # driver reports one, nothing for drivers that report neither (the line is then what it was without the key)
    records = [r for r in fixture_records("paper_drop.jsonl") if "scalar RX" in json.dumps(r["provenance"].get("system"))]
    before = report.provenance_lines(records)
    nulls = [{"port": 0, "name": "net_af_xdp0", "driver": "net_af_xdp", "rx_burst_mode": None, "rx_path": None,
              "rx_vector": None, "rx_path_note": None}]
    for rec in records:
        rec["provenance"]["program"]["rx_paths"] = nulls
    assert report.provenance_lines(records) == before
    records[0]["provenance"]["program"]["rx_paths"] = [
        {"port": 0, "name": "0000:00:04.0", "driver": "net_virtio", "rx_burst_mode": None, "rx_path": "mergeable buffer",
         "rx_vector": False, "rx_path_note": "disabled split ring vectorized rx for mrg_rxbuf enabled"}]
    line = next(x for x in report.provenance_lines(records[:1]) if "DPDK 22.11.11" in x)
    assert ("DPDK 22.11.11; RX 0000:00:04.0 net_virtio: mergeable buffer path (scalar), disabled split ring vectorized rx "
            "for mrg_rxbuf enabled; ") in line
    assert report.rx_path_summary([{"port": 1, "name": "0000:03:00.0", "driver": "mlx5_pci", "rx_burst_mode": "Vector AVX2",
                                    "rx_path": None}]) == "RX 0000:03:00.0 mlx5_pci: burst mode Vector AVX2"
    assert report.rx_path_summary([dict(nulls[0], rx_path="vectorized", rx_vector=True)]) == (
        "RX net_af_xdp0 net_af_xdp: vectorized path (vector)")


def test_a_real_schema_1_record_is_valid_and_read():
    # v1_record_vlab.json: line 1 of trials.jsonl of `playbooks/paper_drop.yml -i inventories/vlab` (xdp only,
    # 1 repetition, 2 samples) on 2026-12-01, written by trial_record (kernel_cmdline shortened); the machine was
    # shared with other runs, hence the rate
    with open(os.path.join(FIXTURES, "v1_record_vlab.json")) as f:
        rec = json.load(f)
    assert not [e.message for e in VALIDATOR.iter_errors(rec)]
    records, warnings = report.read_records(json.dumps(rec) + "\n")
    assert warnings == [] and records == [rec]
    (row,) = report.aggregate(records)
    assert row["count_mode"] == "program" and row["limit"] == rec["loss"]["limit"] == "dut"
    assert row["mpps_mean"] == pytest.approx(rec["result"]["pps"] / 1e6, abs=0.001)


def test_one_offered_rate_with_its_basis_in_csv_and_markdown():
    """The offered column is each record's loss.offered_pps (the generator's count over the window, or its run), and
    says which; a verdict without its own offered_pps takes the generator's over its run."""
    window = copy.deepcopy(RECORDS[:2])
    for rec in window:
        rec["loss"].update(offered_pps=6.1e6, offered_basis="window")
    mixed = [dict(copy.deepcopy(RECORDS[2]), trial_id="m"), RECORDS[4]]
    mixed[0]["loss"].update(offered_pps=6.0e6, offered_basis="run")
    legacy = copy.deepcopy(RECORDS[3])
    legacy["loss"]["offered_pps"] = 7.02e6  # a legacy verdict with a rate and no basis
    rows = report.aggregate([*window, *mixed, legacy])
    assert [(r["touch"], r["cores"], r["offered_mpps"], r["offered_basis"]) for r in rows] == [
        ("no_touch", 1, 6.067, "run,window"),
        ("no_touch", 2, 7.02, "unknown"),
        ("read", 1, 6.0, "run"),
    ]
    columns = report.csv_columns(rows)
    assert columns[columns.index("offered_mpps") + 1] == "offered_basis"
    parsed = list(csv.DictReader(io.StringIO(report.to_csv(rows))))
    assert [p["offered_basis"] for p in parsed] == ["run,window", "unknown", "run"]
    lines = report.to_markdown(rows, "T").splitlines()
    header = [c.strip() for c in lines[2].strip("|").split("|")]
    assert header[header.index("offered Mpps") + 1] == "offered over"
    row = [c.strip() for c in lines[4].strip("|").split("|")]
    assert row[header.index("offered Mpps")] == "6.067" and row[header.index("offered over")] == "run,window"
    assert len(lines[3].strip("|").split("|")) == len(header)
    assert any(line.startswith("offered: the generator's own count of the frames it sent") for line in lines)


def test_a_forwarding_point_lost_at_the_far_side_is_not_offered_load():
    """Issue 28: a trial the generator limited by losing what came back is not 'offered load *' (the DUT kept up)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "report", "forward_vlab_2cpu.jsonl")
    with open(here) as f:
        rec = next(r for r in map(json.loads, f) if r["point"]["system"] == "xdp_tx")
    rec = copy.deepcopy(rec)
    rec["loss"] = _record.forwarding_verdict(rec["loss"], rec["forwarding"])
    (row,) = report.aggregate([rec])
    assert (row["limit"], row["lost_at"]) == ("generator", "far_side")
    md = report.to_markdown([row], "x")
    assert "| generator (lost at: far_side) |" in md and "offered load *" not in md
    assert "far_side = sent by the DUT and refused or lost at the generator's receive ports" in md

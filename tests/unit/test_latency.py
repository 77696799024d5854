# SPDX-License-Identifier: GPL-3.0-or-later
"""_latency: the sink's bucket layout (bpf/xdp_latency.h) and the merge into an HdrHistogram."""

import os
import re

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _latency as latency

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def header_text():
    with open(os.path.join(ROOT, "bpf", "xdp_latency.h")) as f:
        return f.read()


def header_constants():
    text = header_text()
    return {m.group(1): m.group(2) for m in re.finditer(r"#define (LATENCY_\w+) (\S+)", text)}


def test_layout_mirrors_the_c_header():
    c = header_constants()
    assert int(c["LATENCY_SUB_BITS"]) == latency.SUB_BITS
    assert int(c["LATENCY_MAX_EXP"]) == latency.MAX_EXP
    assert int(c["LATENCY_MAX_STREAMS"]) == latency.MAX_STREAMS
    assert int(c["LATENCY_STAMP_MAGIC"].rstrip("U"), 16) == latency.STAMP_MAGIC
    # struct latency_summary: the fields in the header's order
    body = header_text().split("struct latency_summary {")[1].split("};")[0]
    assert tuple(re.findall(r"__u64 (\w+);", body)) == latency.SUMMARY_FIELDS
    assert latency.STAMP.size == 18  # fits the payload of a 64-byte frame (60 - 42)


def test_buckets_cover_100ns_to_10s_contiguously_within_1_percent():
    prev_high = 0
    for index in range(latency.BUCKETS):
        low, high = latency.bucket_bounds(index)
        assert low == prev_high, index
        prev_high = high
        assert latency.bucket_of(low) == index and latency.bucket_of(high - 1) == index
        if low >= 100:
            assert (high - low) / low <= 0.01, (index, low, high)
    assert prev_high == 1 << latency.MAX_EXP >= 10 * 10**9
    with pytest.raises(ValueError):
        latency.bucket_of(1 << latency.MAX_EXP)


def summary(**kw):
    out = dict.fromkeys(latency.SUMMARY_FIELDS, 0)
    out.update(kw)
    return out


def test_statistics_from_buckets():
    # 900 frames near 2 us, 100 near 50 us: p50 ~ 2 us, p99 ~ 50 us, 90 % under 10 us
    buckets = {latency.bucket_of(2000): 900, latency.bucket_of(50_000): 100}
    s = summary(count=1000, sum_ns=900 * 2000 + 100 * 50_000, min_ns=1990, max_ns=50_100)
    out = latency.statistics(buckets, s, streams=[(1000, 1)], sent=1002, seconds=10.0)
    assert out["p50_ns"] == pytest.approx(2000, rel=0.01)
    assert out["p90_ns"] == pytest.approx(2000, rel=0.01)
    assert out["p99_ns"] == pytest.approx(50_000, rel=0.01)
    assert out["average_ns"] == pytest.approx(6800)
    assert out["min_ns"] == 1990 and out["max_ns"] == 50_100
    assert out["share_under_10us"] == pytest.approx(0.9)
    assert out["lost"] == 2 and out["lost_after_last"] == 2 and out["accounted"] is True
    assert out["offered_pps"] == pytest.approx(100.2) and out["received_pps"] == pytest.approx(100.0)
    # the encoded histogram decodes to the same counts
    hist = latency.decode_hdr(out["histogram"]["encoded"])
    assert hist.get_total_count() == 1000
    cdf = latency.cdf_points(out["histogram"]["encoded"])
    assert cdf[-1][1] == pytest.approx(1.0) and cdf[0][1] == pytest.approx(0.9)


def test_sequence_loss_and_empty_sink():
    s = summary(count=10, sum_ns=10_000, min_ns=1000, max_ns=1000, seq_gaps=3, seq_late=1)
    out = latency.statistics({latency.bucket_of(1000): 10}, s, streams=[(13, 1), (0, 0)])
    assert out["lost_in_sequence"] == 2 and out["reordered"] == 1 and out["streams"] == 1
    assert "lost" not in out  # no sent given: nothing said about what never arrived
    empty = latency.statistics({}, summary(unstamped=5), sent=5)
    assert empty["count"] == 0 and empty["p50_ns"] is None and empty["lost"] == 5 and empty["accounted"] is True


def test_per_cpu_summaries_and_buckets_are_summed():
    a = latency.SUMMARY.pack(2, 300, 100, 200, 0, 0, 0, 0, 0, 1)
    b = latency.SUMMARY.pack(1, 50, 50, 50, 1, 0, 0, 0, 0, 0)
    idle = latency.SUMMARY.pack(*([0] * len(latency.SUMMARY_FIELDS)))
    s = latency.sum_summaries([a, b, idle])
    assert s["count"] == 3 and s["sum_ns"] == 350 and s["min_ns"] == 50 and s["max_ns"] == 200
    assert s["seq_gaps"] == 1 and s["unstamped"] == 1
    one, zero = latency.COUNTER.pack(1), latency.COUNTER.pack(0)
    assert latency.sum_buckets([[zero, zero], [one, one], [zero, one]]) == {1: 2, 2: 1}


def test_percentile_keys():
    assert [latency.percentile_key(p) for p in latency.PERCENTILES] == ["p50", "p90", "p99", "p99_9", "p99_99"]


def test_the_record_keeps_the_latency_section_and_the_schema_accepts_it():
    import importlib.util

    # the record fixtures and schema check of test_record.py (tests/unit/fixtures/base_record.json)
    spec = importlib.util.spec_from_file_location("_record_fixtures", os.path.join(os.path.dirname(__file__), "test_record.py"))
    test_record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(test_record)
    from ansible_collections.xdplab.testbed.plugins.module_utils import _record

    buckets = {latency.bucket_of(20_000): 99, latency.bucket_of(90_000): 1}
    section = latency.statistics(buckets, summary(count=100, sum_ns=2_070_000, min_ns=19_900, max_ns=90_100),
                                 streams=[(100, 1)], sent=100, seconds=1.0)  # fmt: skip
    rec = test_record.ok_record(experiment="paper_latency", latency=section)
    assert rec["latency"]["p50_ns"] == section["p50_ns"] and rec["latency"]["accounted"] is True
    with pytest.raises(_record.RecordError, match="latency must be"):
        test_record.ok_record(latency={"p50": 3})


def test_report_table_and_cdf_script():
    buckets = {latency.bucket_of(8_000): 50, latency.bucket_of(30_000): 50}
    lat = latency.statistics(buckets, summary(count=100, sum_ns=1_900_000, min_ns=7_990, max_ns=30_100),
                             streams=[(100, 1)], sent=100, seconds=1.0)  # fmt: skip
    recs = [
        {"status": "ok", "point": {"system": "xdp_tx", "offered_mpps": 0.0001}, "latency": lat, "repetition": 1,
         "provenance": {"system": {"label": "XDP_TX"}}},
        {"status": "ok", "point": {"system": "latency_floor", "offered_mpps": 0.0001}, "latency": lat, "repetition": 1},
        {"status": "failed", "point": {"system": "xdp_tx"}},
    ]  # fmt: skip
    rows = latency.report_rows(recs)
    assert [r["system"] for r in rows] == ["latency_floor", "xdp_tx"]  # the floor first, its own row
    assert rows[1]["offered_pps"] == 100 and rows[1]["share_below_10us_pct"] == 50.0 and rows[1]["average_us"] == 19.0
    md = latency.report_markdown(rows, [{"system": "xdp", "offered_pps": "100", "avg_us": "82"}], "T")
    assert "| XDP_TX | 100 |" in md and "| xdp | 100 | 82 |" in md
    script, data = latency.cdf_gnuplot(rows, "cdf", "T")
    assert "set logscale x" in script and len(data) == 2 and "XDP_TX @ 100 pps" in script


def test_trex_latency_stream_maps_into_the_same_fields():
    import json

    from ansible_collections.xdplab.testbed.plugins.module_utils import _trex

    with open(os.path.join(ROOT, "tests", "unit", "fixtures", "trex", "get_pgid_stats_latency.json")) as f:
        pgid = json.load(f)  # fixture: a T-Rex client's get_pgid_stats (see fixtures/trex/README.md)
    summary = _trex.latency_summary(pgid, 10, 0, 1, percentiles=latency.PERCENTILES, below_us=(10,))
    out = latency.from_trex(summary, seconds=11.4)
    assert out["count"] == 114 and out["sent"] == 114 and out["lost"] == 0 and out["accounted"] is True
    assert out["average_ns"] == 370_000 and out["min_ns"] == 47_000 and out["max_ns"] == 567_000
    # legacy buckets: a percentile is its bucket's upper edge (the 57th of 114 frames is in 400..500 us)
    assert out["p50_ns"] == 500_000 and out["histogram"]["kind"] == "trex_buckets"
    assert out["share_under_10us"] == 0.0 and out["offered_pps"] == pytest.approx(10.0)
    assert set(latency.percentile_key(p) + "_ns" for p in latency.PERCENTILES) <= set(out)

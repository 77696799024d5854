# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn an experiment's trial records (JSON lines) into tables: CSV and Markdown.

A row is one matrix point (system, action, touch, packet_len, cores) aggregated
over its repetitions: mean and sample standard deviation of the DUT's counted
rate, ns per packet, the per-queue spread, the offered load and which limit was hit.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics

POINT_KEYS = ("system", "action", "touch", "packet_len", "cores")
GENERATOR_LIMITED = "generator"
DUT_LIMITED = "dut"
# The DUT counted at least this share of what was offered: the offered load, not the DUT, was the limit.
KEPT_UP_SHARE = 0.99

CSV_COLUMNS = (
    "system", "action", "touch", "packet_len", "cores", "repetitions", "mpps_mean", "mpps_stdev",
    "ns_per_packet", "queue_spread", "offered_mpps", "loss_pct", "limit", "lost_at", "paper_mpps",
)


def read_records(text):
    """Parse JSON lines; returns (records, number of unparsable lines)."""
    records, bad = [], 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(rec, dict) and rec.get("status", "ok") == "ok":
            records.append(rec)
    return records, bad


def limit_of(counted_pps, offered_pps, kept_up_share=KEPT_UP_SHARE):
    """Which side limited a trial: the generator (DUT counted ~all it was offered) or the DUT."""
    if not offered_pps:
        return DUT_LIMITED
    return GENERATOR_LIMITED if counted_pps >= kept_up_share * offered_pps else DUT_LIMITED


def load_reference(text, column):
    """{cores: Mpps} from one column of a reference CSV of the paper (pps values)."""
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        value = row.get(column)
        if value:
            out[int(row["cores"])] = float(value) / 1e6
    return out


def _point(rec):
    return tuple(rec["point"].get(k) for k in POINT_KEYS)


def reference_series(text, columns):
    """{system: {"match": {axis: value}, "mpps": {cores: Mpps}}} from a reference CSV.

    columns maps a system to its CSV column, either as the column name or as
    {"column": name, "match": {axis: value}}: the paper's number is shown only beside
    rows whose point matches (the paper's XDP series is no_touch, say).
    """
    series = {}
    for system, spec in columns.items():
        if isinstance(spec, str):
            spec = {"column": spec}
        series[system] = {"match": spec.get("match") or {}, "mpps": load_reference(text, spec["column"])}
    return series


def aggregate(records, reference=None):
    """Rows, one per matrix point, in a stable order (system, action, touch, size, cores)."""
    reference = reference or {}
    groups = {}
    for rec in records:
        groups.setdefault(_point(rec), []).append(rec)
    rows = []
    for key in sorted(groups, key=lambda k: tuple(str(x) if not isinstance(x, int) else "%09d" % x for x in k)):
        recs = groups[key]
        pps = [r["result"]["pps"] for r in recs]
        offered = [r["loss"].get("offered_pps", r["generator"]["offered_pps"]) for r in recs]
        spreads = [r["result"].get("queue_spread") for r in recs if r["result"].get("queue_spread") is not None]
        losses = [r["loss"]["pct"] for r in recs]
        limits = {r["loss"]["limit"] for r in recs}
        lost_at = sorted({r["loss"].get("lost_at") for r in recs if r["loss"].get("lost_at") not in (None, "none")})
        mean = statistics.fmean(pps)
        point = dict(zip(POINT_KEYS, key))
        ref = reference.get(point["system"])
        paper = None
        if ref and all(point.get(k) == v for k, v in ref["match"].items()):
            paper = ref["mpps"].get(point["cores"])
        rows.append(
            {
                **point,
                "repetitions": len(recs),
                "mpps_mean": round(mean / 1e6, 3),
                "mpps_stdev": round(statistics.stdev(pps) / 1e6, 3) if len(pps) > 1 else 0.0,
                "ns_per_packet": round(1e9 / mean, 2) if mean > 0 else None,
                "queue_spread": round(max(spreads), 3) if spreads else None,
                "offered_mpps": round(statistics.fmean(offered) / 1e6, 3),
                "loss_pct": round(statistics.fmean(losses), 2),
                "limit": GENERATOR_LIMITED if GENERATOR_LIMITED in limits else DUT_LIMITED,
                "lost_at": ",".join(lost_at),
                "paper_mpps": round(paper, 2) if paper is not None else None,
            }
        )
    return rows


def to_csv(rows):
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in CSV_COLUMNS})
    return buf.getvalue()


def _fmt(value, spec="%s"):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return spec % value


def to_markdown(rows, title, provenance_lines=()):
    lines = [
        "## %s" % title,
        "",
        "| system | touch | size | cores | Mpps (mean) | stdev | ns/pkt | queue spread "
        "| offered Mpps | loss % | limit | paper Mpps |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    flagged = False
    for r in rows:
        limit = r["limit"]
        if limit == GENERATOR_LIMITED:
            limit = "offered load *"
            flagged = True
        elif r.get("lost_at"):
            limit = "%s (lost at: %s)" % (limit, r["lost_at"])
        system = r["system"] if not r.get("action") else "%s %s" % (r["system"], r["action"])
        lines.append(
            "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
            % (
                system, r["touch"], r["packet_len"], r["cores"], _fmt(r["mpps_mean"], "%.3f"),
                _fmt(r["mpps_stdev"], "%.3f"), _fmt(r["ns_per_packet"], "%.1f"), _fmt(r["queue_spread"], "%.2f"),
                _fmt(r["offered_mpps"], "%.3f"), _fmt(r["loss_pct"], "%.2f"), limit, _fmt(r["paper_mpps"], "%.2f"),
            )
        )
    lines.append("")
    if flagged:
        lines.append(
            "\\* offered load: the DUT counted >= %d%% of what the generator sent, so the generator, not the DUT, "
            "was the limit; the DUT's capacity is at least this rate." % round(KEPT_UP_SHARE * 100)
        )
    if any(r.get("lost_at") for r in rows):
        lines.append(
            "lost at: dut_rx_ring = the DUT's receive ring was full and the egress device refused frames "
            "(the DUT is the limit); path = lost between the generator and the DUT program."
        )
    lines.append(
        "queue spread: busiest active RX queue over the mean of active queues (1.00 = even RSS). "
        "paper: the XDP paper's testbed (Xeon E5-1650 v4, ConnectX-5, 64-byte frames), for comparison only."
    )
    if provenance_lines:
        lines += ["", "Provenance:"] + ["- %s" % p for p in provenance_lines]
    return "\n".join(lines) + "\n"


def provenance_lines(records):
    """Distinct provenance facts across the records, one readable line each."""
    seen = []
    for rec in records:
        prov = rec.get("provenance", {})
        dut = prov.get("dut", {})
        prog = prov.get("program", {})
        gen = prov.get("generator", {})
        controller = prov.get("controller", {})
        tools = ", ".join("%s %s" % (k, v) for k, v in sorted((dut.get("tools") or {}).items()) if v)
        line = (
            "kernel %s%s on %s (%s, %s queues); program %s tag %s, %s mode (object sha256 %s); tools: %s; "
            "generator %s %s; collection %s%s"
            % (
                dut.get("kernel_release", "?"),
                (" commit " + dut["kernel_commit"]) if dut.get("kernel_commit") else "",
                dut.get("interface", "?"),
                dut.get("driver", "?"),
                dut.get("rx_queues", "?"),
                prog.get("name", "?"),
                prog.get("tag", "?"),
                prog.get("mode", "?"),
                (prog.get("object_sha256") or "?")[:12],
                tools or "?",
                gen.get("backend", "?"),
                gen.get("version", ""),
                controller.get("collection_version", "?"),
                (" @" + controller["repo_commit"]) if controller.get("repo_commit") else "",
            )
        )
        if line not in seen:
            seen.append(line)
    return seen

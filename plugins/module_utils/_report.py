# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn an experiment's trial records (JSON lines) into tables: CSV and Markdown.

A row is one matrix point (system, action, touch, packet_len, cores, plus any other
axis the matrix has, such as variant or offered_mpps) aggregated over its repetitions:
mean and sample standard deviation of the DUT's counted rate, ns per packet, the
per-queue spread, the offered load, the DUT CPUs' busy %, which counter counted (count
mode: driver or program, for XDP) and which limit was hit (the generator, the DUT, or the
line rate of the link when its speed is known). The limit of each trial is the verdict its
record carries (plugins/module_utils/_record.py decides it once); a row aggregates the
verdicts of its repetitions. Records are read with the one JSON-lines reader (_jsonl).
"""

from __future__ import annotations

import csv
import io
import math
import statistics

from ansible_collections.xdplab.testbed.plugins.module_utils import _cpu_layout, _jsonl, _record
from ansible_collections.xdplab.testbed.plugins.module_utils._record import (
    GENERATOR_LIMITED,
    KEPT_UP_SHARE,
    LINE_RATE_LIMITED,
    LINE_RATE_SHARE,
)

POINT_KEYS = ("system", "action", "touch", "packet_len", "cores")

CSV_COLUMNS = (
    "system",
    "action",
    "touch",
    "packet_len",
    "cores",
    "repetitions",
    "mpps_mean",
    "mpps_stdev",
    "ns_per_packet",
    "queue_spread",
    "offered_mpps",
    "offered_basis",
    "loss_pct",
    "limit",
    "lost_at",
    "count_mode",
    "paper_mpps",
)
# computed columns of a row: a matrix axis of the same name is shown as point_<axis>
_COMPUTED = frozenset(CSV_COLUMNS[5:]) | {"cpu_busy"}
# headers of the Markdown table for axes beyond POINT_KEYS
AXIS_HEADERS = {"offered_mpps": "target Mpps", "variant": "variant"}


def read_records(text, source="<text>", link_speed_gbit=None):
    """The records of a trials.jsonl text the report reads, and warnings for the lines it cannot.

    Read with the one JSON-lines reader (_jsonl): a corrupt line is a warning naming source:line
    (the file is not touched). Records of schema 1 and legacy records (written before the schema
    existed, completed by _record.normalize with link_speed_gbit) are read; a record of another
    schema is a warning. Failed trials are left out. Returns (records with status ok, warnings).
    """
    numbered, warnings = _jsonl.parse_numbered(text, source)
    warnings = list(warnings)
    records = []
    for number, rec in numbered:
        try:
            rec = _record.normalize(rec, link_speed_gbit)
        except _record.UnreadableRecord as exc:
            warnings.append(_jsonl.LineWarning(source, number, "unreadable", "%s; not read" % exc))
            continue
        if rec.get("status", _record.STATUS_OK) == _record.STATUS_OK:
            records.append(rec)
    return records, warnings


def load(path, link_speed_gbit=None):
    """read_records of a file (FileNotFoundError when it does not exist)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return read_records(f.read(), path, link_speed_gbit)


def not_measured(text, source="<text>"):
    """The trials of a trials.jsonl text that ran to their end and were not a rate (h35v): failed records whose failure
    carries a verdict (a forwarding trial whose far side got nothing back, _record.nothing_forwarded), unless a later
    record of the same trial is ok (a re-run measured it). In file order; unreadable lines are read_records' warnings."""
    numbered, _warnings = _jsonl.parse_numbered(text, source)
    measured = {rec.get("trial_id") for _n, rec in numbered if rec.get("status", _record.STATUS_OK) == _record.STATUS_OK}
    out = []
    for _number, rec in numbered:
        verdict = (rec.get("failure") or {}).get("verdict") if rec.get("status") == _record.STATUS_FAILED else None
        if isinstance(verdict, dict) and rec.get("trial_id") not in measured:
            out.append(rec)
    return out


def not_measured_markdown(records):
    """The report's section naming the trials that were not a rate (not_measured), or "" when there is none."""
    if not records:
        return ""
    lines = [
        "### Trials that were not a rate",
        "",
        "Recorded with status failed (a re-run retries them) and left out of the table above: the far side received "
        "under %g %% of what the generator offered." % (100 * _record.FORWARDED_SHARE_MIN),
        "",
        "| system | size | cores | rep | offered Mpps | received pps | DUT rx / tx Mpps | stopped | check |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for rec in records:
        point, verdict = rec.get("point") or {}, rec["failure"]["verdict"]
        dut = verdict.get("dut") or {}
        system = point.get("system", "?") if not point.get("action") else "%s %s" % (point.get("system", "?"), point["action"])
        cells = [
            system,
            _fmt(point.get("packet_len")),
            _fmt(point.get("cores")),
            _fmt(rec.get("repetition")),
            _fmt((verdict.get("offered_pps") or 0) / 1e6, "%.3f"),
            _fmt(verdict.get("received_pps"), "%.0f"),
            "%s / %s" % (_fmt((dut.get("received_pps") or 0) / 1e6, "%.3f"), _fmt((dut.get("sent_pps") or 0) / 1e6, "%.3f")),
            "%s: %s" % (verdict.get("stopped_at"), verdict.get("where")),
            verdict.get("check"),
        ]
        lines.append("| %s |" % " | ".join(str(c).replace("|", "/") for c in cells))
    lines.append("")
    return "\n".join(lines)


def load_not_measured(path):
    """not_measured of a file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return not_measured(f.read(), path)


def load_reference(text, column):
    """{cores: Mpps} from one column of a reference CSV of the paper (pps values)."""
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        value = row.get(column)
        if value:
            out[int(row["cores"])] = float(value) / 1e6
    return out


def point_axes(records):
    """The matrix axes of the records: POINT_KEYS, then any other axis (variant, offered_mpps, ...) sorted."""
    extra = sorted({k for r in records for k in r.get("point", {}) if k not in POINT_KEYS})
    return POINT_KEYS + tuple(extra)


def axis_column(axis):
    """Row/CSV column of a matrix axis (an axis named like a computed column becomes point_<axis>)."""
    return "point_" + axis if axis in _COMPUTED else axis


def sort_key(values):
    """Order mixed values naturally: numbers by value (1 < 2 < 10), then strings, None last."""
    out = []
    for v in values:
        if v is None:
            out.append((2, 0, ""))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append((0, v, ""))
        else:
            out.append((1, 0, str(v)))
    return tuple(out)


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


def offered_basis(loss):
    """What a record's offered rate (loss.offered_pps) was counted over: window | run (the generator's whole run,
    also when the verdict has no offered_pps of its own and its generator's is taken); unknown for a legacy verdict
    with an offered_pps and no basis."""
    if "offered_pps" not in loss:
        return "run"
    return loss.get("offered_basis") or "unknown"


def aggregate(records, reference=None):
    """Rows, one per matrix point, in a stable order (system, action, touch, size, cores, other axes).

    The limit of a row is aggregated from the verdicts the records carry (decided once, when each
    trial was recorded: _record.loss_verdict) over the point's repetitions (_record.aggregate_limit).
    """
    reference = reference or {}
    axes = point_axes(records)
    groups = {}
    for rec in records:
        groups.setdefault(tuple(rec["point"].get(k) for k in axes), []).append(rec)
    rows = []
    for key in sorted(groups, key=sort_key):
        recs = groups[key]
        pps = [r["result"]["pps"] for r in recs]
        offered = [r["loss"].get("offered_pps", r["generator"]["offered_pps"]) for r in recs]
        bases = sorted({offered_basis(r["loss"]) for r in recs})
        spreads = [r["result"].get("queue_spread") for r in recs if r["result"].get("queue_spread") is not None]
        losses = [r["loss"]["pct"] for r in recs if r["loss"].get("pct") is not None]
        lost_at = sorted({r["loss"].get("lost_at") for r in recs if r["loss"].get("lost_at") not in (None, "none")})
        busy = [r["result"]["cpu_busy"] for r in recs if isinstance(r["result"].get("cpu_busy"), (int, float))]
        modes = sorted({m for m in (_record.count_mode_of(r) for r in recs) if m})
        mean = statistics.fmean(pps)
        point = dict(zip(axes, key))
        limit = _record.aggregate_limit(r["loss"]["limit"] for r in recs)
        ref = reference.get(point["system"])
        paper = None
        if ref and all(point.get(k) == v for k, v in ref["match"].items()):
            paper = ref["mpps"].get(point["cores"])
        rows.append(
            {
                **{axis_column(k): v for k, v in point.items()},
                "repetitions": len(recs),
                "mpps_mean": round(mean / 1e6, 3),
                "mpps_stdev": round(statistics.stdev(pps) / 1e6, 3) if len(pps) > 1 else 0.0,
                "ns_per_packet": round(1e9 / mean, 2) if mean > 0 else None,
                "queue_spread": round(max(spreads), 3) if spreads else None,
                "offered_mpps": round(statistics.fmean(offered) / 1e6, 3),
                "offered_basis": ",".join(bases),
                "loss_pct": round(statistics.fmean(losses), 2) if losses else None,
                "limit": limit,
                "lost_at": ",".join(lost_at),
                "count_mode": ",".join(modes) or None,
                "paper_mpps": round(paper, 2) if paper is not None else None,
                "cpu_busy": round(statistics.fmean(busy), 1) if busy else None,
            }
        )
    return rows


def _extra_columns(rows):
    """Columns of the axes beyond POINT_KEYS that the rows have, in their order."""
    known = set(CSV_COLUMNS) | {"cpu_busy"}
    out = []
    for row in rows:
        out += [k for k in row if k not in known and k not in out]
    return out


def csv_columns(rows):
    """CSV_COLUMNS with the other axes after cores and cpu_busy last when any row has it."""
    extra = _extra_columns(rows)
    columns = list(CSV_COLUMNS[:5]) + extra + list(CSV_COLUMNS[5:])
    if any(r.get("cpu_busy") is not None for r in rows):
        columns.append("cpu_busy")
    return columns


def to_csv(rows):
    columns = csv_columns(rows)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    return buf.getvalue()


def _fmt(value, spec="%s"):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return spec % value


def to_markdown(rows, title, provenance_lines=(), figures_markdown=""):
    """The table (one row per point), its notes, the provenance lines and (figures_markdown) the figures section."""
    extra = _extra_columns(rows)
    busy = any(r.get("cpu_busy") is not None for r in rows)
    headers = ["system", "touch", "size", "cores"] + [AXIS_HEADERS.get(c.replace("point_", "", 1), c) for c in extra]
    headers += ["Mpps (mean)", "stdev", "ns/pkt", "queue spread", "offered Mpps", "offered over", "loss %"]
    headers += ["CPU busy %"] if busy else []
    headers += ["count mode", "limit", "paper Mpps"]
    align = ["---", "---", "---:", "---:"] + ["---:"] * len(extra) + ["---:"] * 5 + ["---", "---:"] + (["---:"] if busy else [])
    align += ["---", "---", "---:"]
    lines = ["## %s" % title, "", "| %s |" % " | ".join(headers), "|%s|" % "|".join(align)]
    flagged, line_rate = False, False
    for r in rows:
        limit = r["limit"]
        if limit == GENERATOR_LIMITED and _record.LOST_AT_FAR_SIDE in (r.get("lost_at") or "").split(","):
            # issue 28: the generator lost what came back (far side), it did not keep the DUT busy
            limit = "%s (lost at: %s)" % (limit, r["lost_at"])
        elif limit == GENERATOR_LIMITED:
            limit = "offered load *"
            flagged = True
        elif limit == LINE_RATE_LIMITED:
            limit = "line rate †"
            line_rate = True
        elif r.get("lost_at"):
            limit = "%s (lost at: %s)" % (limit, r["lost_at"])
        system = r["system"] if not r.get("action") else "%s %s" % (r["system"], r["action"])
        cells = [system, r["touch"], r["packet_len"], r["cores"]] + [_fmt(r.get(c)) for c in extra]
        cells += [
            _fmt(r["mpps_mean"], "%.3f"),
            _fmt(r["mpps_stdev"], "%.3f"),
            _fmt(r["ns_per_packet"], "%.1f"),
            _fmt(r["queue_spread"], "%.2f"),
            _fmt(r["offered_mpps"], "%.3f"),
            _fmt(r.get("offered_basis")),
            _fmt(r["loss_pct"], "%.2f"),
        ]
        cells += [_fmt(r.get("cpu_busy"), "%.1f")] if busy else []
        cells += [_fmt(r.get("count_mode")), limit, _fmt(r["paper_mpps"], "%.2f")]
        lines.append("| %s |" % " | ".join(str(c) for c in cells))
    lines.append("")
    if flagged:
        lines.append(
            "\\* offered load: the DUT counted >= %d%% of what the generator sent, so the generator, not the DUT, "
            "was the limit; the DUT's capacity is at least this rate." % round(KEPT_UP_SHARE * 100)
        )
    if line_rate:
        lines.append(
            "† line rate: the generator offered >= %d%% of the link's line rate and the DUT kept up: the wire "
            "was the limit." % round(LINE_RATE_SHARE * 100)
        )
    if any(r.get("lost_at") for r in rows):
        lines.append(
            "lost at: dut_rx_ring = the DUT's receive ring was full and the egress device refused frames "
            "(the DUT is the limit); path = lost between the generator and the DUT program; in_dut = received by the "
            "DUT and not sent on; far_side = sent by the DUT and refused or lost at the generator's receive ports (the "
            "generator is the limit: it receives what comes back)."
        )
    if any(r.get("count_mode") for r in rows):
        lines.append(
            "count mode: what counted the XDP program's packets; driver = the driver's own per-queue XDP counters "
            "(a bare program without map writes), program = the program's per-CPU map (costs ns per packet)."
        )
    lines.append(
        "offered: the generator's own count of the frames it sent (each trial's loss.offered_pps), over the measurement "
        "window (window: its per-second records) or over its whole run (run: its records do not cover the window)."
    )
    lines.append(
        "queue spread: busiest active RX queue over the mean of active queues (1.00 = even RSS). "
        "paper: the XDP paper's testbed (Xeon E5-1650 v4, ConnectX-5, 64-byte frames), for comparison only."
    )
    if provenance_lines:
        lines += ["", "Provenance:"] + ["- %s" % p for p in provenance_lines]
    if figures_markdown:
        lines += ["", figures_markdown.rstrip("\n")]
    return "\n".join(lines) + "\n"


_PROGRAM_SKIP = {"command", "id", "interface", "system", "changed", "diff", "invocation", "binary", "testpmd"}


def _flat(prefix, value, out):
    if isinstance(value, dict):
        for k in sorted(value):
            _flat("%s.%s" % (prefix, k) if prefix else k, value[k], out)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool) and value != "":
        out.append("%s %s" % (prefix, value))
    elif isinstance(value, bool):
        out.append("%s %s" % (prefix, "yes" if value else "no"))


def rx_path_summary(rx_paths):
    """DPDK's RX function per port (provenance.program.rx_paths, module testpmd): the burst mode the driver reports,
    else the RX path it printed (net_virtio), e.g. ``RX 0000:00:04.0 net_virtio: vectorized path (vector)``; None
    when no port has either (net_af_xdp, net_af_packet, net_null in DPDK 22.11)."""
    out = []
    for entry in rx_paths if isinstance(rx_paths, list) else []:
        if not isinstance(entry, dict):
            continue
        if entry.get("rx_burst_mode"):
            what = "burst mode %s" % entry["rx_burst_mode"]
        elif entry.get("rx_path"):
            what = "%s path (%s)" % (entry["rx_path"], "vector" if entry.get("rx_vector") else "scalar")
            if entry.get("rx_path_note"):
                what += ", %s" % entry["rx_path_note"]
        else:
            continue
        out.append("RX %s %s: %s" % (entry.get("name") or entry.get("port"), entry.get("driver") or "?", what))
    return "; ".join(out) or None


def program_summary(prog):
    """One line of a system's provenance: XDP program name/tag/mode, DPDK version/SIMD, AF_XDP mode, netfilter ..."""
    prog = dict(prog or {})
    parts = []
    if prog.get("name") and prog.get("tag"):
        parts.append("program %s tag %s, %s mode" % (prog.pop("name"), prog.pop("tag"), prog.pop("mode", "?")))
    if prog.get("dpdk_version"):
        parts.append(str(prog.pop("dpdk_version")))
    rx = rx_path_summary(prog.pop("rx_paths", None))
    if rx:
        parts.append(rx)
    sha = prog.pop("object_sha256", None)
    if sha:
        parts.append("object sha256 %s" % str(sha)[:12])
    rest = []
    for key in sorted(prog):
        if key not in _PROGRAM_SKIP:
            _flat(key, prog[key], rest)
    return "; ".join(parts + ([", ".join(rest)] if rest else []))


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
        system = prov.get("system") or {}
        line = "kernel %s%s on %s (%s, %s queues); %s%s; tools: %s; generator %s %s; collection %s%s" % (
            dut.get("kernel_release", "?"),
            (" commit " + dut["kernel_commit"]) if dut.get("kernel_commit") else "",
            dut.get("interface", "?"),
            dut.get("driver", "?"),
            dut.get("rx_queues", "?"),
            ("%s: " % (system.get("label") or system.get("name"))) if system else "",
            program_summary(prog) or "?",
            tools or "?",
            gen.get("backend", "?"),
            gen.get("version", ""),
            controller.get("collection_version", "?"),
            (" @" + controller["repo_commit"]) if controller.get("repo_commit") else "",
        )
        layout = dut.get("cpu_layout")
        if isinstance(layout, dict):
            line += "; CPU layout: %s%s" % (
                _cpu_layout.summary(layout),
                "".join(" (%s)" % w for w in layout.get("shared") or ()),
            )
        if line not in seen:
            seen.append(line)
    return seen


# Several DUTs side by side (issue 12): each DUT's rows are aggregate()'s, one column per DUT.
SIDE_BY_SIDE_FIELDS = ("repetitions", "mpps_mean", "mpps_stdev", "offered_mpps", "limit")


def side_by_side(records_by_dut, reference=None):
    """(axes, rows): one row per matrix point any DUT measured, with each DUT's aggregate() values beside the others'.

    records_by_dut maps a DUT's name to its records (read_records). A row holds the point's axis columns
    (axis_column) and "duts": {dut: {repetitions, mpps_mean, mpps_stdev, offered_mpps, limit}} for the DUTs that
    measured the point (a DUT without it is absent there). The paper's number, where reference matches, is the
    same for every DUT (one value per row, "paper_mpps").
    """
    axes = point_axes([r for recs in records_by_dut.values() for r in recs])
    columns = [axis_column(a) for a in axes]
    table = {}
    for dut, recs in records_by_dut.items():
        for row in aggregate(recs, reference):
            key = tuple(row.get(c) for c in columns)
            entry = table.setdefault(key, {**dict(zip(columns, key)), "duts": {}, "paper_mpps": None})
            entry["duts"][dut] = {f: row[f] for f in SIDE_BY_SIDE_FIELDS}
            if row.get("paper_mpps") is not None:
                entry["paper_mpps"] = row["paper_mpps"]
    return axes, [table[k] for k in sorted(table, key=sort_key)]


def side_by_side_csv(axes, rows, duts):
    """CSV of side_by_side(): the axis columns, then <dut>_<field> for every DUT in the order given, paper_mpps."""
    columns = [axis_column(a) for a in axes]
    header = columns + ["%s_%s" % (d, f) for d in duts for f in SIDE_BY_SIDE_FIELDS] + ["paper_mpps"]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        cells = [row.get(c) for c in columns]
        for d in duts:
            values = row["duts"].get(d, {})
            cells += [values.get(f) for f in SIDE_BY_SIDE_FIELDS]
        writer.writerow(["" if c is None else c for c in cells + [row["paper_mpps"]]])
    return buf.getvalue()


def side_by_side_markdown(axes, rows, duts, title, provenance_by_dut=None):
    """One table, a column per DUT: "mean ± stdev (limit)" Mpps of each point; then each DUT's provenance lines."""
    shown = [a for a in axes if a not in ("action", "system")]
    headers = ["system"] + [{"packet_len": "size"}.get(a, AXIS_HEADERS.get(a, a)) for a in shown]
    headers += ["%s Mpps" % d for d in duts] + ["paper Mpps"]
    align = ["---"] + ["---:" if a in ("packet_len", "cores", "offered_mpps") else "---" for a in shown]
    align += ["---:"] * (len(duts) + 1)
    lines = ["## %s" % title, "", "| %s |" % " | ".join(headers), "|%s|" % "|".join(align)]
    for row in rows:
        system = row["system"] if not row.get("action") else "%s %s" % (row["system"], row["action"])
        cells = [system] + [_fmt(row.get(axis_column(a))) for a in shown]
        for d in duts:
            values = row["duts"].get(d)
            if values is None:
                cells.append("-")
                continue
            limit = "offered load *" if values["limit"] == GENERATOR_LIMITED else values["limit"]
            cells.append(
                "%s ± %s (%s, n=%d)"
                % (_fmt(values["mpps_mean"], "%.3f"), _fmt(values["mpps_stdev"], "%.3f"), limit, values["repetitions"])
            )
        cells.append(_fmt(row["paper_mpps"], "%.2f"))
        lines.append("| %s |" % " | ".join(str(c) for c in cells))
    lines += [
        "",
        "Each DUT's cell: the mean of its repetitions ± their sample standard deviation (the limit its trials hit, "
        "n = repetitions); - = the DUT did not measure the point. \\* offered load: the DUT counted >= %d%% "
        "of what the generator sent (the generator was the limit)." % round(KEPT_UP_SHARE * 100),
    ]
    for d in duts:
        prov = (provenance_by_dut or {}).get(d) or []
        if prov:
            lines += ["", "Provenance of %s:" % d] + ["- %s" % p for p in prov]
    return "\n".join(lines) + "\n"

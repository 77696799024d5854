# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reports of the seeds' own experiments, beside the generic experiment_report:

- ``tcp_report`` (playbooks/xdp_pass_tcp.yml, seeds/002): the headline "XDP_PASS costs X % more CPU per
  Gbit/s than no program (95 % CI)" per condition (streams x window), the seed's verdict row for its own
  numbers beside ours, a table per program and a gnuplot figure of CPU per Gbit/s by program;
- ``afxdp_report`` (playbooks/afxdp.yml, seeds/001): the RFC's table (rxdrop/txpush/l2fwd x 64/1500 bytes, XDP_SKB
  and XDP_DRV columns) beside ours in the same layout, every cell we could not run carrying its reason.

The interval is _abstats.compare's (Welch's t on log values, scipy), the statistics of issue 11.
Pure functions: records in, text out; the module seed_report writes the files.
"""

from __future__ import annotations

import statistics

from ansible_collections.xdplab.testbed.plugins.module_utils import _abstats

TCP_PROGRAMS = ("none", "pass_native", "pass_generic", "pass_read")
TCP_LABELS = {
    "none": "no program",
    "pass_native": "XDP_PASS native",
    "pass_generic": "XDP_PASS generic (skb)",
    "pass_read": "XDP_PASS native, header read",
}
VETH_NOTE = (
    "On veth (the virtual lab) the DUT port is not a NIC: there is no DMA and no driver page cache, so there are "
    "no rx_cache_*/page_pool counters and the seed's cause (mlx5's page cache working at half capacity with XDP) "
    "cannot occur. What XDP changes on veth instead: with a program attached, veth receives through its NAPI "
    "and must hand the program a linear buffer with XDP headroom, so it copies each skb that lacks it into a new "
    "page; and GRO and XDP interact - without XDP, GRO on veth merges the peer's segments into large skbs before "
    "the stack; with XDP, the program sees every frame first (native: per frame in veth's NAPI; generic: after "
    "the skb is built, linearised for the program). Compare packets/s and bytes per packet at the DUT per "
    "program to see which frames the stack got."
)


def _ok(records, experiment=None):
    return [
        r
        for r in records
        if r.get("status") == "ok"
        and isinstance(r.get("tcp"), dict)
        and (experiment is None or r.get("experiment") == experiment)
    ]


def _mean(values):
    values = [v for v in values if isinstance(v, (int, float))]
    return sum(values) / len(values) if values else None


def _f(value, fmt="%.2f"):
    return fmt % value if isinstance(value, (int, float)) else "-"


def _pct(frac):
    return "%+.1f %%" % (100.0 * frac) if isinstance(frac, (int, float)) else "-"


def _consistent(rec):
    """The record's tcp section with busy and CPU per Gbit/s from /proc/stat (one source for every trial)."""
    from ansible_collections.xdplab.testbed.plugins.module_utils import _tcp

    t = dict(rec["tcp"])
    busy = _tcp.proc_stat_busy((rec.get("result") or {}).get("cpu"))
    if busy is not None and t.get("goodput_gbit"):
        t["cpu"] = dict(t.get("cpu") or {}, busy=busy, busy_source="proc_stat (tick-sampled)")
        t["cpu_per_gbit"] = busy / t["goodput_gbit"]
    return t


def tcp_rows(records):
    """One row per (program, streams, window): n and the means of the record's tcp section."""
    groups = {}
    for r in _ok(records):
        p = r.get("point", {})
        key = (p.get("program", "none"), int(p.get("streams", 1)), str(p.get("window", "default")))
        groups.setdefault(key, []).append(r)
    rows = []
    for key in sorted(groups, key=lambda k: (TCP_PROGRAMS.index(k[0]) if k[0] in TCP_PROGRAMS else 99, k[1], k[2])):
        recs = groups[key]
        tcp = [_consistent(r) for r in recs]
        cpu = [t.get("cpu") or {} for t in tcp]
        pps = [(r.get("result") or {}).get("pps") for r in recs]
        counters = {}
        for t in tcp:
            for k, v in (t.get("driver_counters") or {}).items():
                counters.setdefault(k, []).append(v)
        rows.append(
            {
                "program": key[0],
                "streams": key[1],
                "window": key[2],
                "n": len(recs),
                "goodput_gbit": _mean([t.get("goodput_gbit") for t in tcp]),
                "cpu_busy": _mean([c.get("busy") for c in cpu]),
                "cpu_user": _mean([c.get("user") for c in cpu]),
                "cpu_system": _mean([c.get("system") for c in cpu]),
                "cpu_softirq": _mean([c.get("softirq") for c in cpu]),
                "busy_source": next((c.get("busy_source") for c in cpu if c.get("busy_source")), None),
                "cpu_per_gbit": _mean([t.get("cpu_per_gbit") for t in tcp]),
                "cpu_per_gbit_values": [t.get("cpu_per_gbit") for t in tcp if isinstance(t.get("cpu_per_gbit"), (int, float))],
                "goodput_values": [t.get("goodput_gbit") for t in tcp if isinstance(t.get("goodput_gbit"), (int, float))],
                "cpu_busy_values": [c.get("busy") for c in cpu if isinstance(c.get("busy"), (int, float))],
                "retransmits_per_s": _mean([t.get("retransmits_per_s") for t in tcp]),
                "dut_pps": _mean(pps),
                "driver_counters": {k: _mean(v) for k, v in sorted(counters.items())},
                "driver_counters_note": next((t.get("driver_counters_note") for t in tcp if t.get("driver_counters_note")), None),
            }
        )
    return rows


def _compare(a, b):
    try:
        return _abstats.compare(a, b)
    except (_abstats.ABStatsError, ValueError, ZeroDivisionError) as exc:
        return {"error": str(exc)}


def tcp_headlines(rows):
    """Each program against no program at the same streams and window: CPU per Gbit/s, with the 95 % CI."""
    base = {(r["streams"], r["window"]): r for r in rows if r["program"] == "none"}
    out = []
    for r in rows:
        a = base.get((r["streams"], r["window"]))
        if r["program"] == "none" or a is None:
            continue
        cmp_cpg = _compare(a["cpu_per_gbit_values"], r["cpu_per_gbit_values"])
        line = {
            "program": r["program"],
            "streams": r["streams"],
            "window": r["window"],
            "n_a": a["n"],
            "n_b": r["n"],
            "cpu_per_gbit": cmp_cpg,
            "cpu_change": (r["cpu_busy"] / a["cpu_busy"] - 1) if a["cpu_busy"] and r["cpu_busy"] is not None else None,
            "goodput_change": (r["goodput_gbit"] / a["goodput_gbit"] - 1)
            if a["goodput_gbit"] and r["goodput_gbit"] is not None
            else None,
            "cpg_change": (r["cpu_per_gbit"] / a["cpu_per_gbit"] - 1)
            if a["cpu_per_gbit"] and r["cpu_per_gbit"] is not None
            else None,
        }
        if "error" in cmp_cpg:
            text = "%s costs %s CPU per Gbit/s than no program (%d stream(s), window %s; no interval: %s)" % (
                TCP_LABELS.get(r["program"], r["program"]),
                _more(line["cpg_change"]),
                r["streams"],
                r["window"],
                cmp_cpg["error"],
            )
        else:
            lo, hi = cmp_cpg["ci"]
            text = "%s costs %s CPU per Gbit/s than no program (95 %% CI %s .. %s; %d stream(s), window %s, n = %d + %d)" % (
                TCP_LABELS.get(r["program"], r["program"]),
                _more(cmp_cpg["relative"]),
                _pct(lo),
                _pct(hi),
                r["streams"],
                r["window"],
                cmp_cpg["n_a"],
                cmp_cpg["n_b"],
            )
        line["text"] = text
        out.append(line)
    return out


def _more(frac):
    if not isinstance(frac, (int, float)):
        return "? %"
    return "%.1f %% %s" % (abs(100.0 * frac), "more" if frac >= 0 else "less")


def seed_verdict(seed):
    """The seed's own numbers as a verdict row: CPU +72 %, goodput -7 %, CPU per Gbit/s +86 %."""
    a, b = seed["none"], seed["pass_native"]
    cpg_a, cpg_b = a["cpu_busy"] / a["goodput_gbit"], b["cpu_busy"] / b["goodput_gbit"]
    return {
        "cpu_change": b["cpu_busy"] / a["cpu_busy"] - 1,
        "goodput_change": b["goodput_gbit"] / a["goodput_gbit"] - 1,
        "cpg_change": cpg_b / cpg_a - 1,
        "none": a,
        "pass_native": b,
    }


def tcp_markdown(records, seed, driver=None, veth=False, figure=None):
    rows = tcp_rows(records)
    heads = tcp_headlines(rows)
    lines = ["# What an XDP_PASS program costs TCP (seeds/002)", ""]
    if not rows:
        return "\n".join(lines + ["No TCP trial was recorded ok."]) + "\n", rows, heads
    lines += ["## Headline", ""]
    lines += ["- " + h["text"] for h in heads] or ["- no trial of no program and a program at the same streams and window"]
    lines += [
        "",
        "## The seed's verdict beside ours",
        "",
        "| who | condition | CPU busy | goodput | CPU per Gbit/s |",
        "|---|---|---|---|---|",
    ]
    if seed:
        v = seed_verdict(seed)
        lines.append(
            "| seed (%s) | XDP_PASS vs none | %s (%g -> %g %%) | %s (%g -> %g Gbit/s) | %s |"
            % (
                seed.get("source", "seeds/002"),
                _pct(v["cpu_change"]),
                v["none"]["cpu_busy"],
                v["pass_native"]["cpu_busy"],
                _pct(v["goodput_change"]),
                v["none"]["goodput_gbit"],
                v["pass_native"]["goodput_gbit"],
                _pct(v["cpg_change"]),
            )
        )
    for h in heads:
        lines.append(
            "| this run | %s vs none, %d stream(s), window %s | %s | %s | %s |"
            % (
                TCP_LABELS.get(h["program"], h["program"]),
                h["streams"],
                h["window"],
                _pct(h["cpu_change"]),
                _pct(h["goodput_change"]),
                _pct(h["cpg_change"]),
            )
        )
    lines += [
        "",
        "## Per program (means over the repetitions)",
        "",
        "| program | streams | window | n | goodput Gbit/s | DUT CPU busy % | user | sys | softirq | CPU % per Gbit/s "
        "| retransmits/s | DUT packets/s | driver page/cache counters /s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        counters = ", ".join("%s %.0f" % (k, v) for k, v in r["driver_counters"].items()) or (r["driver_counters_note"] or "-")
        lines.append(
            "| %s | %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
            % (
                TCP_LABELS.get(r["program"], r["program"]),
                r["streams"],
                r["window"],
                r["n"],
                _f(r["goodput_gbit"]),
                _f(r["cpu_busy"], "%.1f"),
                _f(r["cpu_user"], "%.1f"),
                _f(r["cpu_system"], "%.1f"),
                _f(r["cpu_softirq"], "%.1f"),
                _f(r["cpu_per_gbit"]),
                _f(r["retransmits_per_s"], "%.1f"),
                _f(r["dut_pps"], "%.0f"),
                counters,
            )
        )
    source = next((r["busy_source"] for r in rows if r["busy_source"]), "proc_stat")
    lines += [
        "",
        "CPU busy %% is the mean over the DUT's CPUs from cpu_usage's %s source; the user/sys/softirq split "
        "is /proc/stat's, which samples ticks (1/CONFIG_HZ s each), so the split is coarser than the busy %%." % source,
        "Goodput is iperf3's receiver side with the warm-up omitted; retransmits are the sender's (iperf3 --json).",
    ]
    if veth:
        lines += ["", "**On veth:** " + VETH_NOTE]
    if figure:
        lines += ["", "![CPU per Gbit/s by program](%s)" % figure]
    return "\n".join(lines) + "\n", rows, heads


def tcp_figure(rows, png):
    """(data text, gnuplot script): CPU % per Gbit/s by program, one cluster per (streams, window)."""
    conds = sorted({(r["streams"], r["window"]) for r in rows})
    progs = [p for p in TCP_PROGRAMS if any(r["program"] == p for r in rows)]
    by = {(r["program"], r["streams"], r["window"]): r for r in rows}
    data = ["# program " + " ".join("s%d_w%s" % c for c in conds)]
    for p in progs:
        vals = []
        for c in conds:
            r = by.get((p, c[0], c[1]))
            vals.append("%.4f" % r["cpu_per_gbit"] if r and r["cpu_per_gbit"] is not None else "NaN")
        data.append('"%s" %s' % (TCP_LABELS.get(p, p), " ".join(vals)))
    plots = ", ".join(
        "'$data' using %d:xtic(1) title '%d stream(s), window %s'" % (i + 2, c[0], c[1]) for i, c in enumerate(conds)
    )
    script = "\n".join(
        [
            "set terminal pngcairo size 900,500 noenhanced",
            "set output '%s'" % png,
            "set title 'TCP into the DUT: CPU busy %% per Gbit/s of goodput, by program (mean of the repetitions)'",
            "set style data histogram",
            "set style histogram cluster gap 1",
            "set style fill solid 0.8 border -1",
            "set ylabel 'DUT CPU busy % per Gbit/s'",
            "set yrange [0:*]",
            "set key top left",
            "set grid ytics",
            "$data << EOD",
            *data,
            "EOD",
            "plot " + plots,
            "",
        ]
    )
    return "\n".join(data) + "\n", script


# -- AF_XDP (seeds/001) ---------------------------------------------------------------------------------

AFXDP_BENCHES = ("rxdrop", "txpush", "l2fwd")
# the seeds' columns: XDP_SKB = generic XDP + copy; XDP_DRV = driver XDP, copy (the RFC had no zero-copy)
AFXDP_BINDS = ("skb", "drv_copy", "drv_zerocopy")
AFXDP_BIND_LABELS = {"skb": "XDP_SKB", "drv_copy": "XDP_DRV (copy)", "drv_zerocopy": "XDP_DRV zero-copy"}


def afxdp_cells(records):
    """{(bench, packet_len, bind): [Mpps of each repetition]} of the afxdp experiment's ok records."""
    cells = {}
    for r in records:
        if r.get("status") != "ok":
            continue
        p = r.get("point", {})
        key = (p.get("mode"), int(p.get("packet_len", 64)), p.get("bind"))
        pps = (r.get("result") or {}).get("pps")
        if isinstance(pps, (int, float)):
            cells.setdefault(key, []).append(pps / 1e6)
    return cells


def afxdp_markdown(records, reference_rows, reasons, cores=None):
    """The seeds' table beside ours. reference_rows: the CSV's rows (benchmark, packet_bytes, xdp_skb_mpps,
    xdp_drv_mpps); reasons: {"bench/len/bind" or "bench/*/bind" or "*/*/bind": why this testbed cannot run it}."""
    cells = afxdp_cells(records)
    ref = {(row["benchmark"], int(row["packet_bytes"])): row for row in reference_rows}
    failed = {}
    for r in records:
        if r.get("status") == "failed":
            p = r.get("point", {})
            failed[(p.get("mode"), int(p.get("packet_len", 64)), p.get("bind"))] = ((r.get("failure") or {}).get("error") or "")[
                :120
            ]

    def reason(bench, plen, bind):
        for key in ("%s/%s/%s" % (bench, plen, bind), "%s/*/%s" % (bench, bind), "*/*/%s" % bind, "%s/*/*" % bench):
            if key in reasons:
                return reasons[key]
        if (bench, plen, bind) in failed:
            return "failed: " + failed[(bench, plen, bind)]
        return "not in this run's matrix"

    def ours(bench, plen, bind):
        vals = cells.get((bench, plen, bind))
        if vals:
            med = statistics.median(vals)
            return "%.2f" % med + (" (%.2f-%.2f, n=%d)" % (min(vals), max(vals), len(vals)) if len(vals) > 1 else "")
        return "n/a: " + reason(bench, plen, bind)

    lines = [
        "# AF_XDP: the RFC v3 table (seeds/001) beside this testbed's",
        "",
        "Mpps; seeds: i40e 40G, two cores (one for the NAPI, one for the application), the RFC's samples/bpf "
        "xdpsock. Ours: xdplab-xsk-bench%s. A cell we cannot run says why." % (", %s core(s)" % cores if cores else ""),
        "",
        "| Benchmark | bytes | XDP_SKB (seeds) | XDP_SKB (ours) | XDP_DRV (seeds) | XDP_DRV copy (ours) "
        "| XDP_DRV zero-copy (ours) |",
        "|---|---|---|---|---|---|---|",
    ]
    order = [(b, n) for n in (64, 1500) for b in AFXDP_BENCHES]
    for bench, plen in order:
        row = ref.get((bench, plen))
        seed_skb = row["xdp_skb_mpps"] if row and row.get("xdp_skb_mpps") else ("NA" if row else "-")
        seed_drv = row["xdp_drv_mpps"] if row and row.get("xdp_drv_mpps") else ("NA*" if row else "-")
        if not row and bench == "txpush":
            seed_skb = seed_drv = "- (not in the RFC at %d B)" % plen
        lines.append(
            "| %s | %d | %s | %s | %s | %s | %s |"
            % (
                bench,
                plen,
                seed_skb,
                ours(bench, plen, "skb"),
                seed_drv,
                ours(bench, plen, "drv_copy"),
                ours(bench, plen, "drv_zerocopy"),
            )
        )
    lines += ["", "NA* (seeds): the RFC had no TX in XDP_DRV mode. The seeds' l2fwd XDP_DRV column sent with XDP_SKB."]
    return "\n".join(lines) + "\n"

# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The A/B comparison's report from trial records: samples, tables, the gnuplot figure (pure functions).

``samples(records, plan)`` picks the ok records of each variant's point (any block) in the order they ran;
``analyse`` runs _abstats.compare on them (blocks as the unit for a kernel comparison) on one of ``METRICS``;
``markdown``, ``csv_text``, ``figure_files`` render it. The module xdplab.testbed.ab_compare writes the files and
runs gnuplot.

The metrics (``METRICS``): ``pps``, the rate the DUT counted in its window (the default); and two costs per
packet that other tenants of the DUT's CPU do not change the way they change the rate (a tenant that takes the CPU
lowers the rate, but not what a packet costs the thread that handles it):
``cpu_ns_per_packet``, the run time of the DUT's work threads (threaded NAPI: napi/<if>-<id>; schedstat, exact per
thread; cpu_usage's ``work``) over the CPU window, divided by the packets of that window, taken as the counted
rate times the window's length (exact when the rate holds over the CPU window, as at a paced load the DUT keeps
up with); ``bpf_ns_per_packet``, the XDP program's own run time per run (kernel bpf_stats, cpu_usage's ``bpf``;
the role reads it for XDP at a paced load only, offered_mpps > 0).
"""

from __future__ import annotations

import csv
import io

from ansible_collections.xdplab.testbed.plugins.module_utils import _abstats, _figures

COLOURS = {"A": "#1f5fbf", "B": "#d62728"}

# metric -> the sample key, its unit and scale in tables and the figure, the words for B above/below A, and what
# the verdict says it compared (none for the rate)
METRICS = {
    "pps": {"unit": "Mpps", "scale": 1e-6, "higher": "faster", "lower": "slower", "what": None},
    "cpu_ns_per_packet": {
        "unit": "ns",
        "scale": 1.0,
        "higher": "slower",
        "lower": "faster",
        "what": "in the DUT thread's CPU time per packet (schedstat)",
    },
    "bpf_ns_per_packet": {
        "unit": "ns",
        "scale": 1.0,
        "higher": "slower",
        "lower": "faster",
        "what": "in the XDP program's run time per packet (bpf_stats)",
    },
}
NEEDS = {
    "cpu_ns_per_packet": "the DUT's work threads' run time (cpu_usage.work, busy_source schedstat: threaded NAPI) and a "
    "counted rate",
    "bpf_ns_per_packet": "the XDP program's bpf_stats (cpu_usage.bpf: an XDP system at a paced load, offered_mpps > 0)",
}


def cpu_ns_per_packet(result):
    """Run time (ns) of the DUT's work threads per packet over the CPU window; None when not measured."""
    cpu = (result or {}).get("cpu_usage") or {}
    work = [w.get("runtime_ns") for w in cpu.get("work") or () if isinstance(w, dict)]
    runtime = sum(w for w in work if isinstance(w, (int, float)))
    pps, seconds = (result or {}).get("pps"), cpu.get("seconds")
    if cpu.get("busy_source") != "schedstat" or not runtime or not pps or not seconds:
        return None
    return float(runtime) / (float(pps) * float(seconds))


def bpf_ns_per_packet(result):
    """The XDP program's run time (ns) per run over the CPU window (bpf_stats); None when not measured."""
    progs = [b for b in ((result or {}).get("cpu_usage") or {}).get("bpf") or () if isinstance(b, dict)]
    runs = sum(b.get("run_cnt") or 0 for b in progs)
    ns = sum(b.get("run_time_ns") or 0 for b in progs)
    return float(ns) / runs if runs and ns else None


def _base(point):
    return {k: v for k, v in (point or {}).items() if k != "block"}


def samples(records, plan):
    """{A: [sample], B: [sample]}: sample = {pps, cpu_ns_per_packet, bpf_ns_per_packet, block, started_at, trial_id,
    repetition, cpu_busy, limit}."""
    out = {"A": [], "B": []}
    want = {label: _base(plan["variants"][label]["point"]) for label in out}
    for rec in records:
        if rec.get("status", "ok") != "ok":
            continue
        point = rec.get("point") or {}
        label = point.get("variant")
        if label not in out or _base(point) != want[label]:
            continue
        result = rec.get("result") or {}
        out[label].append(
            {
                "pps": result.get("pps"),
                "cpu_ns_per_packet": cpu_ns_per_packet(result),
                "bpf_ns_per_packet": bpf_ns_per_packet(result),
                "block": point.get("block"),
                "repetition": rec.get("repetition"),
                "started_at": rec.get("started_at"),
                "trial_id": rec.get("trial_id"),
                "cpu_busy": result.get("cpu_busy"),
                "limit": (rec.get("loss") or {}).get("limit"),
            }
        )
    for label in out:
        out[label].sort(key=lambda s: (s["started_at"] or "", s["block"] or 0, s["repetition"] or 0))
    return out


def analyse(picked, plan, confidence=0.95, higher=None, lower=None, metric="pps"):
    """_abstats.compare of the picked samples' metric; blocks are the unit when the plan is a kernel comparison.
    higher/lower: the verdict's words (None: the metric's)."""
    if metric not in METRICS:
        raise _abstats.ABStatsError("unknown metric %r: one of %s" % (metric, ", ".join(METRICS)))
    a, b = picked["A"], picked["B"]
    missing = [s["trial_id"] for s in a + b if s[metric] is None]
    if missing:
        raise _abstats.ABStatsError(
            "%d of %d samples have no %s (trials %s): it needs %s"
            % (len(missing), len(a + b), metric, ", ".join(str(t) for t in missing[:3]), NEEDS.get(metric, metric))
        )
    m = METRICS[metric]
    blocks = plan.get("kernel")
    result = _abstats.compare(
        [s[metric] for s in a],
        [s[metric] for s in b],
        blocks_a=[s["block"] for s in a] if blocks else None,
        blocks_b=[s["block"] for s in b] if blocks else None,
        confidence=confidence,
    )
    result["metric"] = metric
    result["verdict"] = _abstats.verdict(
        result,
        plan["variants"]["A"]["name"],
        plan["variants"]["B"]["name"],
        higher or m["higher"],
        lower or m["lower"],
        plan.get("design"),
        what=m["what"],
    )
    result["limits"] = sorted({s["limit"] for s in a + b if s["limit"]})
    return result


def _pct(x):
    return "%+.2f %%" % (100.0 * x)


def _num(x, fmt):
    return fmt % x if x is not None else "-"


def markdown(result, picked, plan, title, stem="ab_compare"):
    va, vb = plan["variants"]["A"], plan["variants"]["B"]
    metric = result.get("metric", "pps")
    m = METRICS[metric]
    lines = ["# %s" % title, "", "**%s**" % result["verdict"], ""]
    lines += [
        "| | %s (A) | %s (B) |" % (va["name"], vb["name"]),
        "|---|---|---|",
        "| variant | `%s` | `%s` |" % (va["given"], vb["given"]),
        "| n (%ss) | %d | %d |" % (result["unit"], result["n_a"], result["n_b"]),
        "| metric | %s | %s |" % (metric, metric),
        "| geometric mean (%s) | %.4f | %.4f |" % (m["unit"], result["geomean_a"] * m["scale"], result["geomean_b"] * m["scale"]),
        "| CV | %.2f %% | %.2f %% |" % (100 * result["cv_a"], 100 * result["cv_b"]),
        "",
        "| B against A | value |",
        "|---|---|",
        "| relative difference | %s |" % _pct(result["relative"]),
        "| %g %% CI, Welch's t on the logs | %s to %s |"
        % (100 * result["confidence"], _pct(result["ci"][0]), _pct(result["ci"][1])),
        "| %g %% CI, bootstrap (%s, %d resamples) | %s to %s |"
        % (
            100 * result["confidence"],
            result["bootstrap"]["method"],
            result["bootstrap"]["n_resamples"],
            _pct(result["bootstrap"]["ci"][0]),
            _pct(result["bootstrap"]["ci"][1]),
        ),
        "| Welch's df, t, p | %.1f, %.2f, %.3g |" % (result["df"], result["t"], result["p_value"]),
        "| smallest difference this N detects (%d %% power) | %.2f %% |"
        % (round(100 * result["mdd_power"]), 100 * result["mdd"]),
        "| design | %s |" % plan.get("design"),
        "| limits recorded | %s |" % (", ".join(result["limits"]) or "-"),
        "",
        "Samples in the order they ran:",
        "",
        "| # | variant | block | Mpps | CPU ns/packet | BPF ns/packet | CPU busy % | limit | started |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = sorted([(s, lab) for lab in ("A", "B") for s in picked[lab]], key=lambda x: x[0]["started_at"] or "")
    for i, (s, lab) in enumerate(rows, 1):
        lines.append(
            "| %d | %s | %s | %.4f | %s | %s | %s | %s | %s |"
            % (
                i,
                lab,
                s["block"],
                s["pps"] / 1e6,
                _num(s.get("cpu_ns_per_packet"), "%.1f"),
                _num(s.get("bpf_ns_per_packet"), "%.1f"),
                _num(s["cpu_busy"], "%.1f"),
                s["limit"] or "-",
                s["started_at"],
            )
        )
    lines += ["", "![A against B](%s.png)" % stem, ""]
    return "\n".join(lines)


def csv_text(picked):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["variant", "block", "repetition", "pps", "cpu_ns_per_packet", "bpf_ns_per_packet", "cpu_busy", "limit",
                "started_at", "trial_id"])  # fmt: skip
    for lab in ("A", "B"):
        for s in picked[lab]:
            w.writerow([lab, s["block"], s["repetition"], s["pps"], s.get("cpu_ns_per_packet"), s.get("bpf_ns_per_packet"),
                        s["cpu_busy"], s["limit"], s["started_at"], s["trial_id"]])  # fmt: skip
    return buf.getvalue()


def figure_files(result, picked, plan, title, stem="ab_compare"):
    """{<stem>.gp, <stem>.dat, <stem>.ci.dat}: left, both distributions (every sample of the metric, jittered by
    its order, and the geometric mean); right, B against A with Welch's and the bootstrap's interval and 0."""
    metric = result.get("metric", "pps")
    m = METRICS[metric]
    rows = []
    for x, lab in ((1, "A"), (2, "B")):
        n = len(picked[lab])
        for i, s in enumerate(picked[lab]):
            rows.append("%s %.4f %.6f" % (lab, x - 0.25 + 0.5 * (i + 0.5) / max(n, 1), s[metric] * m["scale"]))
    dat = "# variant x %s\n" % m["unit"] + "\n".join(rows) + "\n"
    ci = "# method x relative_pct low_pct high_pct\nwelch 1 %.4f %.4f %.4f\nbootstrap 2 %.4f %.4f %.4f\n" % (
        100 * result["relative"],
        100 * result["ci"][0],
        100 * result["ci"][1],
        100 * result["relative"],
        100 * result["bootstrap"]["ci"][0],
        100 * result["bootstrap"]["ci"][1],
    )
    va, vb = plan["variants"]["A"]["name"], plan["variants"]["B"]["name"]
    gp = "\n".join(
        [
            "set terminal pngcairo noenhanced size 1400,800 font 'sans,13'",
            "set output '%s.png'" % stem,
            "set multiplot layout 1,2 title %s\\n%s"
            % (_figures.gp_string(title)[:-1], _figures.gp_string(result["verdict"])[1:]),
            "set title 'Samples (%s, %s), geometric mean dashed'" % (metric, m["unit"]),
            "set xtics (%s 1, %s 2)" % (_figures.gp_string("A: " + va), _figures.gp_string("B: " + vb)),
            "set xrange [0.5:2.5]",
            "set ylabel '%s'" % m["unit"],
            "set grid ytics",
            "plot '%s.dat' using (strcol(1) eq 'A' ? $2 : NaN):3 with points pt 7 ps 1.4 lc rgb '%s' title 'A', \\"
            % (stem, COLOURS["A"]),
            "     '%s.dat' using (strcol(1) eq 'B' ? $2 : NaN):3 with points pt 5 ps 1.4 lc rgb '%s' title 'B', \\"
            % (stem, COLOURS["B"]),
            "     '+' using (($1 < 1.5) ? $1 : NaN):(%.6f) with lines dt 2 lw 2 lc rgb '%s' notitle, \\"
            % (result["geomean_a"] * m["scale"], COLOURS["A"]),
            "     '+' using (($1 >= 1.5) ? $1 : NaN):(%.6f) with lines dt 2 lw 2 lc rgb '%s' notitle"
            % (result["geomean_b"] * m["scale"], COLOURS["B"]),
            "set title %s" % _figures.gp_string("B against A (%%), %g %% CI" % (100 * result["confidence"])),
            'set xtics ("Welch t (log)" 1, "bootstrap BCa" 2)',
            "set ylabel 'B / A - 1 (%)'",
            "set xzeroaxis lt -1 lw 2",
            "plot '%s.ci.dat' using 2:3:4:5 with yerrorbars pt 7 ps 1.8 lw 2 lc rgb '#333333' title 'B/A - 1, CI', \\" % stem,
            "     0 with lines lt -1 notitle",
            "unset multiplot",
            "",
        ]
    )
    return {stem + ".gp": gp, stem + ".dat": dat, stem + ".ci.dat": ci}

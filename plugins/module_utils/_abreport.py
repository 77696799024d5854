# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The A/B comparison's report from trial records: samples, tables, the gnuplot figure (pure functions).

``samples(records, plan)`` picks the ok records of each variant's point (any block) in the order they ran;
``analyse`` runs _abstats.compare on them (blocks as the unit for a kernel comparison); ``markdown``,
``csv_text``, ``figure_files`` render it. The module xdplab.testbed.ab_compare writes the files and runs gnuplot.
"""

from __future__ import annotations

import csv
import io

from ansible_collections.xdplab.testbed.plugins.module_utils import _abstats, _figures

COLOURS = {"A": "#1f5fbf", "B": "#d62728"}


def _base(point):
    return {k: v for k, v in (point or {}).items() if k != "block"}


def samples(records, plan):
    """{A: [sample], B: [sample]}: sample = {pps, block, started_at, trial_id, repetition, cpu_busy, limit}."""
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


def analyse(picked, plan, confidence=0.95, higher="faster", lower="slower"):
    """_abstats.compare of the picked samples; blocks are the unit when the plan is a kernel comparison."""
    a, b = picked["A"], picked["B"]
    blocks = plan.get("kernel")
    result = _abstats.compare(
        [s["pps"] for s in a],
        [s["pps"] for s in b],
        blocks_a=[s["block"] for s in a] if blocks else None,
        blocks_b=[s["block"] for s in b] if blocks else None,
        confidence=confidence,
    )
    result["verdict"] = _abstats.verdict(
        result, plan["variants"]["A"]["name"], plan["variants"]["B"]["name"], higher, lower, plan.get("design")
    )
    result["limits"] = sorted({s["limit"] for s in a + b if s["limit"]})
    return result


def _pct(x):
    return "%+.2f %%" % (100.0 * x)


def markdown(result, picked, plan, title):
    va, vb = plan["variants"]["A"], plan["variants"]["B"]
    lines = ["# %s" % title, "", "**%s**" % result["verdict"], ""]
    lines += [
        "| | %s (A) | %s (B) |" % (va["name"], vb["name"]),
        "|---|---|---|",
        "| variant | `%s` | `%s` |" % (va["given"], vb["given"]),
        "| n (%ss) | %d | %d |" % (result["unit"], result["n_a"], result["n_b"]),
        "| geometric mean (Mpps) | %.4f | %.4f |" % (result["geomean_a"] / 1e6, result["geomean_b"] / 1e6),
        "| CV | %.2f %% | %.2f %% |" % (100 * result["cv_a"], 100 * result["cv_b"]),
        "",
        "| B against A | value |",
        "|---|---|",
        "| relative difference | %s |" % _pct(result["relative"]),
        "| %g %% CI, Welch's t on log rates | %s to %s |"
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
        "| # | variant | block | Mpps | CPU busy % | limit | started |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = sorted([(s, lab) for lab in ("A", "B") for s in picked[lab]], key=lambda x: x[0]["started_at"] or "")
    for i, (s, lab) in enumerate(rows, 1):
        lines.append(
            "| %d | %s | %s | %.4f | %s | %s | %s |"
            % (
                i,
                lab,
                s["block"],
                s["pps"] / 1e6,
                "%.1f" % s["cpu_busy"] if s["cpu_busy"] is not None else "-",
                s["limit"] or "-",
                s["started_at"],
            )
        )
    lines += ["", "![A against B](ab_compare.png)", ""]
    return "\n".join(lines)


def csv_text(picked):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["variant", "block", "repetition", "pps", "cpu_busy", "limit", "started_at", "trial_id"])
    for lab in ("A", "B"):
        for s in picked[lab]:
            w.writerow([lab, s["block"], s["repetition"], s["pps"], s["cpu_busy"], s["limit"], s["started_at"], s["trial_id"]])
    return buf.getvalue()


def figure_files(result, picked, plan, title):
    """{ab_compare.gp, ab_compare.dat, ab_compare.ci.dat}: left, both distributions (every sample, jittered by
    its order, and the geometric mean); right, B against A with Welch's and the bootstrap's interval and 0."""
    rows = []
    for x, lab in ((1, "A"), (2, "B")):
        n = len(picked[lab])
        for i, s in enumerate(picked[lab]):
            rows.append("%s %.4f %.6f" % (lab, x - 0.25 + 0.5 * (i + 0.5) / max(n, 1), s["pps"] / 1e6))
    dat = "# variant x Mpps\n" + "\n".join(rows) + "\n"
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
            "set output 'ab_compare.png'",
            "set multiplot layout 1,2 title %s\\n%s"
            % (_figures.gp_string(title)[:-1], _figures.gp_string(result["verdict"])[1:]),
            "set title 'Samples (Mpps), geometric mean dashed'",
            "set xtics (%s 1, %s 2)" % (_figures.gp_string("A: " + va), _figures.gp_string("B: " + vb)),
            "set xrange [0.5:2.5]",
            "set ylabel 'Mpps'",
            "set grid ytics",
            "plot 'ab_compare.dat' using (strcol(1) eq 'A' ? $2 : NaN):3 with points pt 7 ps 1.4 lc rgb '%s' title 'A', \\"
            % COLOURS["A"],
            "     'ab_compare.dat' using (strcol(1) eq 'B' ? $2 : NaN):3 with points pt 5 ps 1.4 lc rgb '%s' title 'B', \\"
            % COLOURS["B"],
            "     '+' using (($1 < 1.5) ? $1 : NaN):(%.6f) with lines dt 2 lw 2 lc rgb '%s' notitle, \\"
            % (result["geomean_a"] / 1e6, COLOURS["A"]),
            "     '+' using (($1 >= 1.5) ? $1 : NaN):(%.6f) with lines dt 2 lw 2 lc rgb '%s' notitle"
            % (result["geomean_b"] / 1e6, COLOURS["B"]),
            "set title %s" % _figures.gp_string("B against A (%%), %g %% CI" % (100 * result["confidence"])),
            'set xtics ("Welch t (log)" 1, "bootstrap BCa" 2)',
            "set ylabel 'B / A - 1 (%)'",
            "set xzeroaxis lt -1 lw 2",
            "plot 'ab_compare.ci.dat' using 2:3:4:5 with yerrorbars pt 7 ps 1.8 lw 2 lc rgb '#333333' title 'B/A - 1, CI', \\",
            "     0 with lines lt -1 notitle",
            "unset multiplot",
            "",
        ]
    )
    return {"ab_compare.gp": gp, "ab_compare.dat": dat, "ab_compare.ci.dat": ci}

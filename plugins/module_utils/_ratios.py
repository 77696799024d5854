# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio rows of a report (issue 27): our ratio of two systems beside the paper's, per value of some axes.

Absolute rates do not compare across testbeds (the virtual lab's veth and shared CPUs are not the paper's
100G NICs), but the ratio of two systems measured on the same testbed does: XDP over Linux, the full table over
one route, XDP over IPVS, TCP_RR under attack over TCP_RR without. A spec:

    {name: "XDP / Linux",
     numerator: {match: {system: xdp_router}}, denominator: {match: {system: linux_forward}},
     per: [cores],                 # one row per value of these axes (none: one row)
     y: result.pps,                # the field compared (default), a dotted path or a point field
     paper: {file: usecase_routing.csv, numerator_column: xdp_single_route_rx256_pps,
             denominator_column: linux_single_route_pps, x: cores,
             axis: cores,           # which of `per` is matched against x (default the first)
             x_scale: 1,            # the CSV's x times this is compared with our axis value (1e-6: pps -> Mpps)
             denominator_at: null,  # a fixed x (the CSV's) for the paper's denominator (TCP_RR at attack 0)
             at: null}}             # the x (the CSV's) of the paper's ratio when per is empty

Ours, at each value of ``per``: the median of ``y`` over the numerator's trials there over the median over the
denominator's. A ``per`` axis that the denominator's match fixes (``attack_pps: 0``) does not split the
denominator: every row shares it (TCP_RR under attack over the one baseline). The paper's: the numerator column
over the denominator column at the row whose ``x`` is that value (at ``denominator_at`` for the denominator, when
given); empty where the paper has no such row or a cell is empty.
"""

from __future__ import annotations

import csv
import io
import statistics

from ansible_collections.xdplab.testbed.plugins.module_utils._figures import field
from ansible_collections.xdplab.testbed.plugins.module_utils._report import sort_key

SPEC_KEYS = ("name", "numerator", "denominator", "per", "y", "paper")
SIDE_KEYS = ("match",)
PAPER_KEYS = ("file", "numerator_column", "denominator_column", "x", "axis", "x_scale", "denominator_at", "at")
DEFAULT_Y = "result.pps"
# what the report says above the table
EXPLANATION = (
    "Ratios are what compare across testbeds: this lab's absolute rates (its links, CPUs and kernel) are not the "
    "paper's, but the ratio of two systems measured on the same testbed is. Ours: the median of the numerator's "
    "trials over the median of the denominator's; the paper's: its two numbers at the same x (empty where it has none)."
)
CSV_COLUMNS = ("ratio", "at", "ours", "paper", "numerator", "denominator", "numerator_trials", "denominator_trials",
               "paper_numerator", "paper_denominator")  # fmt: skip


class RatioError(ValueError):
    """A bad ratio spec or reference; the message names the ratio and what to change."""


def _where(index, spec):
    name = spec.get("name") if isinstance(spec, dict) else None
    return "ratios[%d]%s" % (index, " (%s)" % name if name else "")


def validate(spec, index=0):
    """A checked copy of one spec (defaults filled in); RatioError on anything wrong."""
    where = _where(index, spec)
    if not isinstance(spec, dict):
        raise RatioError("%s must be a mapping with name, numerator, denominator (and per, y, paper)" % where)
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise RatioError("%s: unknown key(s) %s; a ratio takes %s" % (where, ", ".join(unknown), ", ".join(SPEC_KEYS)))
    if not spec.get("name") or not isinstance(spec["name"], str):
        raise RatioError("%s needs a name (the table's first column), like 'XDP / Linux'" % where)
    out = {"name": spec["name"], "y": spec.get("y") or DEFAULT_Y}
    if not isinstance(out["y"], str):
        raise RatioError("%s: y must be a field path like result.pps, got %r" % (where, out["y"]))
    for side in ("numerator", "denominator"):
        value = spec.get(side)
        if not isinstance(value, dict) or not isinstance(value.get("match"), dict) or not value["match"]:
            raise RatioError(
                "%s needs %s: {match: {field: value, ...}} (point fields such as system, or dotted paths)" % (where, side)
            )
        extra = sorted(set(value) - set(SIDE_KEYS))
        if extra:
            raise RatioError("%s: %s takes only match, got %s" % (where, side, ", ".join(extra)))
        out[side] = {"match": dict(value["match"])}
    per = spec.get("per") or []
    if isinstance(per, str):
        per = [per]
    if not isinstance(per, list) or not all(isinstance(a, str) and a for a in per):
        raise RatioError("%s: per must be a list of axes (point fields) like [cores], got %r" % (where, spec.get("per")))
    out["per"] = list(per)
    out["paper"] = _validate_paper(spec.get("paper"), out["per"], where)
    return out


def _validate_paper(paper, per, where):
    if paper is None:
        return None
    if not isinstance(paper, dict):
        raise RatioError("%s: paper must be a mapping {file, numerator_column, denominator_column, x}" % where)
    unknown = sorted(set(paper) - set(PAPER_KEYS))
    if unknown:
        raise RatioError("%s: paper does not know %s; it takes %s" % (where, ", ".join(unknown), ", ".join(PAPER_KEYS)))
    for key in ("file", "numerator_column", "denominator_column", "x"):
        if not paper.get(key) or not isinstance(paper[key], str):
            raise RatioError("%s: paper needs %s (a CSV file and its columns)" % (where, key))
    out = dict(paper)
    out.setdefault("axis", per[0] if per else None)
    if per and out["axis"] not in per:
        raise RatioError("%s: paper.axis %r is not one of per %s" % (where, out["axis"], per))
    try:
        out["x_scale"] = float(paper.get("x_scale", 1.0))
    except (TypeError, ValueError):
        raise RatioError("%s: paper.x_scale must be a number, got %r" % (where, paper.get("x_scale"))) from None
    return out


def _float(value):
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _matches(rec, match):
    for key, want in match.items():
        values = want if isinstance(want, list) else [want]
        have = field(rec, key)
        if have not in values and str(have) not in [str(v) for v in values]:
            return False
    return True


def _same(a, b):
    return a == b or str(a) == str(b)


def paper_table(csv_text, paper, where="ratio"):
    """{x: row} of a reference CSV (x scaled by paper.x_scale); RatioError naming the columns it has."""
    reader = csv.DictReader(io.StringIO(csv_text))
    columns = reader.fieldnames or []
    for key in ("x", "numerator_column", "denominator_column"):
        if paper[key] not in columns:
            raise RatioError(
                "%s: %s has no column %r (paper.%s); its columns: %s"
                % (where, paper["file"], paper[key], key, ", ".join(columns))
            )
    out = {}
    for row in reader:
        x = _float(row[paper["x"]])
        if x is not None:
            out[x * paper["x_scale"]] = row
    return out


def _paper_row(table, x):
    value = _float(x)
    if value is None:
        return None
    for key, row in table.items():
        if abs(key - value) <= 1e-9 * max(1.0, abs(value)):
            return row
    return None


def _ratio(num, den):
    if num is None or den is None or den == 0:
        return None
    return num / den


def ratio_rows(records, spec, paper_csv=None, index=0):
    """The rows of one (validated) ratio spec: one per value of its per axes that both sides measured."""
    where = _where(index, spec)
    y = spec["y"]
    num_recs = [r for r in records if _matches(r, spec["numerator"]["match"]) and _float(field(r, y)) is not None]
    den_recs = [r for r in records if _matches(r, spec["denominator"]["match"]) and _float(field(r, y)) is not None]
    per = spec["per"]
    # per axes the denominator's match fixes do not split it (every row's denominator is the one it names)
    den_split = [a for a in per if a not in spec["denominator"]["match"]]
    keys = []
    for rec in num_recs:
        key = tuple(field(rec, a) for a in per)
        if key not in keys:
            keys.append(key)
    keys.sort(key=sort_key)
    paper = spec["paper"]
    table = paper_table(paper_csv, paper, where) if paper and paper_csv is not None else None
    rows = []
    for key in keys:
        at = dict(zip(per, key))
        nums = [_float(field(r, y)) for r in num_recs if all(_same(field(r, a), at[a]) for a in per)]
        dens = [_float(field(r, y)) for r in den_recs if all(_same(field(r, a), at[a]) for a in den_split)]
        if not dens:
            continue
        num_median, den_median = statistics.median(nums), statistics.median(dens)
        row = {
            "ratio": spec["name"],
            "per": at,
            "at": ", ".join("%s %s" % (a, at[a]) for a in per),
            "ours": _ratio(num_median, den_median),
            "numerator": num_median,
            "denominator": den_median,
            "numerator_trials": len(nums),
            "denominator_trials": len(dens),
            "paper": None,
            "paper_numerator": None,
            "paper_denominator": None,
        }
        if table is not None:
            if paper["axis"]:
                x = at.get(paper["axis"])
            else:
                x = float(paper["at"]) * paper["x_scale"] if _float(paper.get("at")) is not None else None
            num_row = _paper_row(table, x)
            den_x = paper.get("denominator_at")
            den_row = _paper_row(table, float(den_x) * paper["x_scale"]) if den_x is not None else num_row
            if num_row is not None and den_row is not None:
                row["paper_numerator"] = _float(num_row[paper["numerator_column"]])
                row["paper_denominator"] = _float(den_row[paper["denominator_column"]])
                row["paper"] = _ratio(row["paper_numerator"], row["paper_denominator"])
        rows.append(row)
    return rows


def _fmt_ratio(value):
    return "" if value is None else "%.2f" % value


def _fmt_number(value):
    if value is None:
        return ""
    if abs(value) >= 1e5:
        return "%.3g M" % (value / 1e6)
    return "%.4g" % value


def to_markdown(rows, skipped=()):
    """The report's section: the sentence, then a table of our ratio beside the paper's."""
    lines = ["## Ratios: ours beside the paper's", "", EXPLANATION, ""]
    if rows:
        lines += [
            "| ratio | at | ours | paper | ours: numerator / denominator (median) | trials |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                "| %s | %s | %s | %s | %s / %s | %d / %d |"
                % (
                    r["ratio"],
                    r["at"] or "all",
                    _fmt_ratio(r["ours"]),
                    _fmt_ratio(r["paper"]),
                    _fmt_number(r["numerator"]),
                    _fmt_number(r["denominator"]),
                    r["numerator_trials"],
                    r["denominator_trials"],
                )
            )
    for name in skipped:
        lines.append("")
        lines.append("Ratio %s: no trial matched both its numerator and its denominator; not shown." % name)
    return "\n".join(lines) + "\n"


def to_csv(rows):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        writer.writerow(["" if r[c] is None else r[c] for c in CSV_COLUMNS])
    return out.getvalue()

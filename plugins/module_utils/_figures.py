# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The paper's figures from trial records: gnuplot scripts, their data files and the Markdown about them.

A figure spec (a dict, see validate_spec) names the x and y of a point by field path
(``point.cores``, ``result.pps``, ``result.cpu_busy``), the point fields that make a line
(``[system, touch]``), a filter, and optionally a reference CSV of the paper drawn as dashed
lines. ``build`` turns records + spec into a Figure: the series (median of the repetitions with
min-max error bars), the reference series, the gnuplot script and data file texts. Rendering
(running gnuplot) is the module's business: everything here is pure and testable.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import statistics

from ansible_collections.xdplab.testbed.plugins.module_utils import _record
from ansible_collections.xdplab.testbed.plugins.module_utils import _report as report

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
DEFAULT_SIZE = (1400, 900)
MIN_SIZE = (1200, 800)
MIN_FONT = 12

# Colour families by system implementation: a system's series takes the next shade of its family,
# the paper's series of the same system its exact colour, dashed.
FAMILIES = {
    "xdp": ("#1f5fbf", "#56a0f0", "#0a2f6b", "#8ec5ff"),
    "dpdk": ("#d62728", "#ff8c1a", "#8c1010", "#f5a08c"),
    "af_xdp": ("#2ca02c", "#7fd35a", "#146314", "#b5e6a0"),
    "linux": ("#8e44ad", "#c774e8", "#5b2370", "#d9b3ec"),
}
FAMILY_ORDER = ("xdp", "dpdk", "af_xdp", "linux")  # the legend's order, as the paper's figures
OTHER_COLOURS = ("#8c6d1f", "#17a2b8", "#e377c2", "#555555", "#bcbd22", "#7f7f7f")
# gnuplot point types: filled square, circle, triangle up, triangle down, diamond, pentagon; and the open ones
FILLED_POINTS = (5, 7, 9, 11, 13, 15)
OPEN_POINTS = (4, 6, 8, 10, 12, 14)

SPEC_KEYS = {
    "name",
    "title",
    "x",
    "y",
    "x_scale",
    "y_scale",
    "series",
    "filter",
    "xlabel",
    "ylabel",
    "reference",
    "logscale",
    "xrange",
    "yrange",
    "xtics",
    "labels",
    "width",
    "height",
    "font_size",
    "errorbars",
    "key",
}
REFERENCE_KEYS = {"file", "x", "columns", "label_suffix", "y_scale", "x_scale", "rows", "testbed", "source"}
KEY_PLACES = ("below", "outside", "inside")


class SpecError(ValueError):
    """A figure spec that cannot be drawn; the message says what to change."""


# -- field paths -----------------------------------------------------------------------------------------------


def field(rec, path):
    """Value at a dotted path of a record (``result.cpu_busy``); a bare name is a point field. None if absent."""
    if "." not in path:
        path = "point." + path
    cur = rec
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
    return cur


def _number(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return int(number) if number.is_integer() and "." not in str(value) else number


# -- spec ------------------------------------------------------------------------------------------------------


def _float(spec, key, default):
    value = spec.get(key, default)
    number = _number(value)
    if number is None or number == 0:
        raise SpecError("figure %s: %s must be a non-zero number, got %r" % (spec.get("name"), key, value))
    return float(number)


def _range(name, key, value):
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2 or any(v is not None and _number(v) is None for v in value):
        raise SpecError("figure %s: %s must be [min, max] (null for automatic), got %r" % (name, key, value))
    return [None if v is None else _number(v) for v in value]


def validate_spec(spec, index=0):
    """A complete, checked copy of a figure spec; SpecError says what is wrong."""
    if not isinstance(spec, dict):
        raise SpecError("figures[%d] must be a mapping (name, x, y, series, ...), got %r" % (index, spec))
    name = spec.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise SpecError("figures[%d]: name must be a file name of letters, digits, '_', '-', '.' (got %r)" % (index, name))
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise SpecError("figure %s: unknown keys %s (known: %s)" % (name, unknown, ", ".join(sorted(SPEC_KEYS))))
    for key in ("x", "y"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise SpecError("figure %s: %s must be a field path such as point.cores or result.pps" % (name, key))
    series = spec.get("series", ["system"])
    if isinstance(series, str):
        series = [series]
    if not isinstance(series, list) or not series or not all(isinstance(s, str) and s for s in series):
        raise SpecError("figure %s: series must be a list of point fields such as [system, touch], got %r" % (name, series))
    flt = spec.get("filter") or {}
    if not isinstance(flt, dict):
        raise SpecError("figure %s: filter must map a point field to a value or a list of values, got %r" % (name, flt))
    logscale = spec.get("logscale") or []
    if isinstance(logscale, str):
        logscale = list(logscale)
    if not set(logscale) <= {"x", "y"}:
        raise SpecError("figure %s: logscale must list axes x and/or y, got %r" % (name, spec.get("logscale")))
    width, height = int(spec.get("width", DEFAULT_SIZE[0])), int(spec.get("height", DEFAULT_SIZE[1]))
    if width < MIN_SIZE[0] or height < MIN_SIZE[1]:
        raise SpecError("figure %s: at least %dx%d pixels, got %dx%d" % (name, MIN_SIZE[0], MIN_SIZE[1], width, height))
    font = int(spec.get("font_size", 14))
    if font < MIN_FONT:
        raise SpecError("figure %s: font_size must be at least %d (readable), got %d" % (name, MIN_FONT, font))
    xtics = spec.get("xtics")
    if xtics is not None and (not isinstance(xtics, list) or any(_number(t) is None for t in xtics)):
        raise SpecError("figure %s: xtics must be a list of numbers, got %r" % (name, xtics))
    key = spec.get("key", "below")
    if key not in KEY_PLACES:
        raise SpecError("figure %s: key must be one of %s, got %r" % (name, ", ".join(KEY_PLACES), key))
    labels = spec.get("labels") or {}
    if not isinstance(labels, dict):
        raise SpecError("figure %s: labels must map a series id (values joined by '/') to a legend label" % name)
    out = {
        "name": name,
        "title": str(spec.get("title") or name),
        "x": spec["x"],
        "y": spec["y"],
        "x_scale": _float(spec, "x_scale", 1),
        "y_scale": _float(spec, "y_scale", 1),
        "series": series,
        "filter": {k: (v if isinstance(v, list) else [v]) for k, v in flt.items()},
        "xlabel": str(spec.get("xlabel") or spec["x"]),
        "ylabel": str(spec.get("ylabel") or spec["y"]),
        "logscale": sorted(set(logscale)),
        "xrange": _range(name, "xrange", spec.get("xrange")),
        "yrange": _range(name, "yrange", spec.get("yrange")),
        "xtics": [_number(t) for t in xtics] if xtics else None,
        "labels": {str(k): str(v) for k, v in labels.items()},
        "width": width,
        "height": height,
        "font_size": font,
        "errorbars": bool(spec.get("errorbars", True)),
        "key": key,
        "reference": _validate_reference(name, spec.get("reference"), spec),
    }
    return out


def _validate_reference(name, ref, spec):
    if ref is None:
        return None
    if not isinstance(ref, dict) or not ref.get("file") or not ref.get("columns"):
        raise SpecError("figure %s: reference needs file (a CSV), x (its x column) and columns ({label: column})" % name)
    unknown = sorted(set(ref) - REFERENCE_KEYS)
    if unknown:
        raise SpecError("figure %s: unknown reference keys %s (known: %s)" % (name, unknown, ", ".join(sorted(REFERENCE_KEYS))))
    columns = []
    raw = ref["columns"]
    items = raw.items() if isinstance(raw, dict) else ((c.get("label"), c) if isinstance(c, dict) else (None, c) for c in raw)
    for label, col in items:
        if isinstance(col, str):
            col = {"column": col}
        if not isinstance(col, dict) or not isinstance(col.get("column"), str):
            raise SpecError("figure %s: reference column %r must be a CSV column name or {column, match}" % (name, label))
        match = col.get("match") or {}
        if not isinstance(match, dict):
            raise SpecError("figure %s: reference column %r: match must map point fields to values" % (name, label))
        columns.append({"label": str(label or col["column"]), "column": col["column"], "match": match})
    return {
        "file": ref["file"],
        "x": str(ref.get("x") or spec["x"].split(".")[-1]),
        "columns": columns,
        "label_suffix": ref.get("label_suffix"),
        "testbed": ref.get("testbed"),
        "source": str(ref.get("source") or "paper"),
        "x_scale": _float(ref, "x_scale", 1),
        "y_scale": _float(ref, "y_scale", spec.get("y_scale", 1)),
        "rows": {k: [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in (ref.get("rows") or {}).items()},
    }


# -- the paper's testbed -----------------------------------------------------------------------------------------


def paper_testbed(readme_text):
    """(short, long) description of the paper's testbed from the reference README, or (None, None)."""
    if not readme_text:
        return None, None
    m = re.search(r"Testbed of the paper:(.*?)(?:\n\s*\n|$)", readme_text, re.S)
    text = " ".join(m.group(1).split()) if m else readme_text
    cpu = re.search(r"Xeon\s+([A-Z]\d?-?\d{4}\w*(?:\s+v\d)?)", text)
    nic = re.search(r"(ConnectX-\d+(?:\s+Ex)?)(?:\s+(\d+G))?", text)
    kernel = re.search(r"kernel\s+([\w.-]+(?:\s+\d[\w.-]*)?)", text)
    dpdk = re.search(r"DPDK\s+(\d[\w.]*\d)", text)
    short = ", ".join(x for x in ((cpu.group(1) if cpu else None), (nic.group(1).replace(" Ex", "") if nic else None)) if x)
    long_parts = []
    if cpu:
        long_parts.append("Xeon " + cpu.group(1))
    if nic:
        long_parts.append(" ".join(x for x in nic.groups() if x))
    if kernel:
        long_parts.append("kernel " + kernel.group(1))
    if dpdk:
        long_parts.append("DPDK " + dpdk.group(1))
    return (short or None), (", ".join(long_parts) or None)


# -- series ----------------------------------------------------------------------------------------------------


def _matches(rec, flt):
    for key, values in flt.items():
        value = field(rec, key)
        if value not in values and str(value) not in [str(v) for v in values]:
            return False
    return True


def family_of(system, impl=None):
    """Colour family of a system (xdp, dpdk, af_xdp, linux) from its impl or its name's prefix; None if none fits."""
    if impl in FAMILIES:
        return impl
    for fam in sorted(FAMILIES, key=len, reverse=True):
        if system and (system == fam or str(system).startswith(fam + "_")):
            return fam
    return None


def _display(value):
    return str(value)


def _series_labels(keys, spec, sys_labels):
    """Legend labels: the system's label, then the other series fields that vary within that system."""
    fields = spec["series"]
    labels = {}
    for key in keys:
        sid = "/".join(str(v) for v in key)
        if sid in spec["labels"]:
            labels[key] = spec["labels"][sid]
            continue
        parts = []
        for i, (fname, value) in enumerate(zip(fields, key)):
            if fname == "system":
                parts.insert(0, sys_labels.get(value) or str(value))
                continue
            siblings = {k[i] for k in keys if all(k[j] == key[j] for j, f in enumerate(fields) if f == "system")}
            if len(siblings) > 1:
                parts.append(_display(value) if isinstance(value, str) else "%s %s" % (fname, value))
        if not parts:
            parts = [str(v) for v in key]
        labels[key] = parts[0] + (", " + ", ".join(parts[1:]) if len(parts) > 1 else "")
    return labels


def our_series(records, spec):
    """[{id, key, label, family, records, points: [{x, median, min, max, n}]}] in a stable order."""
    groups = {}
    sys_labels, impls = {}, {}
    for rec in records:
        if not _matches(rec, spec["filter"]):
            continue
        x, y = _number(field(rec, spec["x"])), _number(field(rec, spec["y"]))
        if x is None or y is None:
            continue
        key = tuple(field(rec, f) for f in spec["series"])
        groups.setdefault(key, {}).setdefault(x * spec["x_scale"], []).append((y * spec["y_scale"], rec))
        system = rec.get("point", {}).get("system")
        psys = (rec.get("provenance") or {}).get("system") or {}
        if psys.get("label"):
            sys_labels.setdefault(system, psys["label"])
        if psys.get("impl"):
            impls.setdefault(system, psys["impl"])

    def order(key):
        system = dict(zip(spec["series"], key)).get("system")
        fam = family_of(system, impls.get(system))
        return (FAMILY_ORDER.index(fam) if fam in FAMILY_ORDER else len(FAMILY_ORDER),) + report.sort_key(key)

    keys = sorted(groups, key=order)
    labels = _series_labels(keys, spec, sys_labels)
    out = []
    for key in keys:
        system = dict(zip(spec["series"], key)).get("system")
        points, recs = [], []
        for x in sorted(groups[key]):
            ys = [y for y, _rec in groups[key][x]]
            recs += [r for _y, r in groups[key][x]]
            points.append({"x": x, "median": statistics.median(ys), "min": min(ys), "max": max(ys), "n": len(ys)})
        out.append(
            {
                "id": "/".join(str(v) for v in key),
                "key": dict(zip(spec["series"], key)),
                "label": labels[key],
                "family": family_of(system, impls.get(system)),
                "records": recs,
                "points": points,
            }
        )
    return out


def reference_series(csv_text, ref, testbed_short=None):
    """[{label, column, match, points: [{x, y}]}] from a reference CSV; SpecError on a missing column."""
    reader = csv.DictReader(io.StringIO(csv_text))
    rows = [r for r in reader if all(str(r.get(k, "")).strip() in v for k, v in ref["rows"].items())]
    header = reader.fieldnames or []
    for col in [ref["x"]] + [c["column"] for c in ref["columns"]] + list(ref["rows"]):
        if col not in header:
            raise SpecError("reference %s has no column %r (columns: %s)" % (ref["file"], col, ", ".join(header)))
    suffix = ref["label_suffix"]
    if suffix is None:
        testbed = ref.get("testbed") or testbed_short
        suffix = " (%s)" % testbed if testbed else ""
    out = []
    for col in ref["columns"]:
        points = []
        for row in rows:
            x, y = _number(row.get(ref["x"])), _number(row.get(col["column"]))
            if x is None:
                raise SpecError("reference %s: x column %r has a non-number %r" % (ref["file"], ref["x"], row.get(ref["x"])))
            if y is not None:
                points.append({"x": x * ref["x_scale"], "y": y * ref["y_scale"]})
        out.append(
            {
                "label": "%s: %s%s" % (ref["source"], col["label"], suffix),
                "column": col["column"],
                "match": col["match"],
                "points": sorted(points, key=lambda p: p["x"]),
            }
        )
    return out


def assign_styles(series, refs):
    """Colour and point type for every series; a reference takes the colour of the series it matches (dashed)."""
    used = {}
    other = 0
    for i, s in enumerate(series):
        fam = s["family"]
        if fam:
            shade = used.get(fam, 0)
            used[fam] = shade + 1
            s["colour"] = FAMILIES[fam][shade % len(FAMILIES[fam])]
        else:
            s["colour"] = OTHER_COLOURS[other % len(OTHER_COLOURS)]
            other += 1
        s["point_type"] = FILLED_POINTS[i % len(FILLED_POINTS)]
    for j, r in enumerate(refs):
        match = next(
            (
                s
                for s in series
                if r["match"] and all(str(s["key"].get(k, field(s["records"][0], k))) == str(v) for k, v in r["match"].items())
            ),
            None,
        )
        r["matched"] = match["id"] if match else None
        if match:
            r["colour"] = match["colour"]
            r["point_type"] = OPEN_POINTS[FILLED_POINTS.index(match["point_type"])]
            continue
        fam = family_of(str(r["match"].get("system") or ""), None) or family_of(r["column"].split("_pps")[0], None)
        if fam is None:
            fam = next((f for f in sorted(FAMILIES, key=len, reverse=True) if r["column"].startswith(f + "_")), None)
        if fam:
            r["colour"] = FAMILIES[fam][used.get(fam, 0) % len(FAMILIES[fam])]
            used[fam] = used.get(fam, 0) + 1
        else:
            r["colour"] = OTHER_COLOURS[other % len(OTHER_COLOURS)]
            other += 1
        r["point_type"] = OPEN_POINTS[(len(series) + j) % len(OPEN_POINTS)]


# -- provenance and limits of a series -----------------------------------------------------------------------


def _distinct(values):
    out = []
    for v in values:
        if v not in (None, "") and v not in out:
            out.append(v)
    return out


def series_provenance(recs):
    """Readable provenance of the trials of one series: kernel, CPU, port, system, tools, generator, collection."""
    lines = []
    for rec in recs:
        prov = rec.get("provenance") or {}
        dut, gen, ctl = prov.get("dut") or {}, prov.get("generator") or {}, prov.get("controller") or {}
        tools = ", ".join("%s %s" % (k, v) for k, v in sorted((dut.get("tools") or {}).items()) if v)
        line = "; ".join(
            x
            for x in (
                "kernel %s%s"
                % (dut.get("kernel_release", "?"), (" commit " + dut["kernel_commit"]) if dut.get("kernel_commit") else ""),
                dut.get("cpu_model"),
                "%s (%s, %s RX queues)" % (dut.get("interface", "?"), dut.get("driver", "?"), dut.get("rx_queues", "?")),
                report.program_summary(prov.get("program")),
                ("tools: " + tools) if tools else "",
                "generator %s %s" % (gen.get("backend", "?"), gen.get("version", "")),
                "collection %s%s"
                % (ctl.get("collection_version", "?"), (" @" + ctl["repo_commit"]) if ctl.get("repo_commit") else ""),
            )
            if x
        )
        lines.append(line.strip())
    return _distinct(lines)


def series_limits(recs):
    """{limit: trials} over a series from the verdicts the records carry: generator, dut (with where it was lost), line rate."""
    counts = {}
    for rec in recs:
        loss = rec.get("loss") or {}
        limit = loss.get("limit") or "?"
        if limit == _record.DUT_LIMITED and loss.get("lost_at") not in (None, "", "none"):
            limit = "dut (lost at %s)" % loss["lost_at"]
        elif limit == _record.GENERATOR_LIMITED:
            limit = "generator (DUT kept up)"
        counts[limit] = counts.get(limit, 0) + 1
    return counts


def ours_testbed(records):
    """Our testbed in one line from the records' provenance: CPU model(s), kernel release(s), driver(s)."""
    duts = [(r.get("provenance") or {}).get("dut") or {} for r in records]
    cpus = _distinct([d.get("cpu_model") for d in duts])
    kernels = _distinct([d.get("kernel_release") for d in duts])
    ports = _distinct(["%s (%s)" % (d.get("interface"), d.get("driver")) for d in duts if d.get("driver")])
    gens = _distinct([((r.get("provenance") or {}).get("generator") or {}).get("backend") for r in records])
    parts = [" / ".join(cpus) or "CPU ?", "kernel " + (" / ".join(kernels) or "?")]
    if ports:
        parts.append(" / ".join(ports))
    if gens:
        parts.append("generator " + " / ".join(gens))
    return ", ".join(parts)


# -- gnuplot -------------------------------------------------------------------------------------------------


def gp_string(text):
    """A gnuplot double-quoted string (noenhanced text: _ and ^ stay as they are)."""
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def _num(value):
    return "%.6g" % value


def data_text(spec, series):
    lines = [
        "# %s: %s" % (spec["name"], spec["title"]),
        "# x = %s * %g, y = %s * %g; median of the repetitions, min, max, repetitions"
        % (spec["x"], spec["x_scale"], spec["y"], spec["y_scale"]),
        "# one block per series (gnuplot index 0, 1, ...)",
    ]
    for i, s in enumerate(series):
        if i:
            lines += ["", ""]
        lines.append("# index %d: %s (%s)" % (i, s["id"], s["label"]))
        lines.append("# x median min max n")
        lines += [
            "%s %s %s %s %d" % (_num(p["x"]), _num(p["median"]), _num(p["min"]), _num(p["max"]), p["n"]) for p in s["points"]
        ]
    return "\n".join(lines) + "\n"


def reference_data_text(spec, refs):
    ref = spec["reference"]
    lines = [
        "# %s: the paper's numbers from %s (x column %s * %g, y * %g)"
        % (spec["name"], os.path.basename(ref["file"]), ref["x"], ref["x_scale"], ref["y_scale"]),
        "# one block per column (gnuplot index 0, 1, ...)",
    ]
    for i, r in enumerate(refs):
        if i:
            lines += ["", ""]
        lines.append("# index %d: column %s (%s)" % (i, r["column"], r["label"]))
        lines.append("# x y")
        lines += ["%s %s" % (_num(p["x"]), _num(p["y"])) for p in r["points"]]
    return "\n".join(lines) + "\n"


def _all_integers(values):
    return bool(values) and all(float(v).is_integer() for v in values)


def _key_rows(series, refs):
    """Rows of a legend below the plot: ours in the left column, the paper's in the right one."""
    drawn = len([r for r in refs if r["points"]])
    return max(len(series), drawn) if drawn else (len(series) + 1) // 2


def picture_width(spec, series, refs):
    """The spec's width, or more when the two legend columns below the plot would not fit in it."""
    if spec["key"] != "below":
        return spec["width"]
    longest = max([len(s["label"]) for s in series] + [len(r["label"]) for r in refs] + [1])
    # gnuplot gives a key column about 0.88 em per character of its longest label, plus the sample line
    column = spec["font_size"] * (0.88 * longest + 1.5)
    return max(spec["width"], math.ceil(2 * column + 2 * spec["font_size"]))


def picture_height(spec, series, refs, footnotes):
    """The spec's height, or more when the legend below and the footnotes would leave the plot under half of it."""
    rows = _key_rows(series, refs) if spec["key"] == "below" else 0
    text_px = spec["font_size"] * 1.9 * (3.0 + 0.4 + 1.2 * len(footnotes) + rows + 0.6 + 3.4)
    return max(spec["height"], math.ceil(text_px / 0.5))


def script_text(spec, series, refs, footnotes):
    """The gnuplot script; it runs in the figure's directory: `gnuplot NAME.gp` writes NAME.png."""
    name = spec["name"]
    xs = sorted({p["x"] for s in series for p in s["points"]} | {p["x"] for r in refs for p in r["points"]})
    font = spec["font_size"]
    lines = [
        "# %s: %s" % (name, spec["title"]),
        "# written by xdplab.testbed.experiment_report; reproduce with: gnuplot %s.gp" % name,
        "set terminal pngcairo size %d,%d noenhanced font %s linewidth 1.5"
        % (picture_width(spec, series, refs), picture_height(spec, series, refs, footnotes), gp_string("DejaVu Sans,%d" % font)),
        "set output %s" % gp_string(name + ".png"),
        "set encoding utf8",
        "set title %s font %s" % (gp_string(spec["title"]), gp_string(",%d" % (font + 4))),
        "set xlabel %s" % gp_string(spec["xlabel"]),
        "set ylabel %s" % gp_string(spec["ylabel"]),
        "set grid xtics ytics mytics lt 1 lc rgb '#dcdcdc' lw 1, lt 1 lc rgb '#f0f0f0' lw 1",
        "set border 3 lw 1.2",
        "set tics nomirror out",
        "set bars small",
        "set pointsize 1.6",
    ]
    if spec["key"] == "outside":
        lines.append("set key outside right top vertical Left reverse samplen 3 spacing 1.3 width 1 box lc rgb '#a0a0a0'")
    elif spec["key"] == "below":
        lines.append("set key vertical Left reverse samplen 3 spacing 1.3 width -1")
    else:
        lines.append("set key inside left top vertical Left reverse samplen 3 spacing 1.3 opaque box lc rgb '#a0a0a0'")
    logx, logy = "x" in spec["logscale"], "y" in spec["logscale"]
    if logx:
        lines.append("set logscale x")
    if logy:
        lines.append("set logscale y")
        lines.append("set format y '%g'")
        ys = [v for s in series for p in s["points"] for v in (p["min"], p["max"])] + [p["y"] for r in refs for p in r["points"]]
        ys = [y for y in ys if y > 0]
        if ys and spec["yrange"] is None:
            # fit the data (gnuplot would extend to whole decades and leave most of the plot empty)
            lo, hi = min(ys) / 1.3, max(ys) * 1.3
            lines.append("set yrange [%s:%s]" % (_num(lo), _num(hi)))
            # label 1-2-5 steps: a decade or two of data would otherwise show one or two numbers
            tics = [m * 10**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
            lines.append("set ytics (%s)" % ", ".join(_num(t) for t in tics if lo <= t <= hi))
            lines.append("set mytics 10")
    xrange = spec["xrange"]
    if spec["xtics"]:
        lines.append("set xtics (%s)" % ", ".join(_num(t) for t in spec["xtics"]))
    elif logx and 0 < len(xs) <= 16 and xs[0] > 0:
        # a tick at every x of the data, but none crowding the one before it
        tics = [xs[0]]
        for x in xs[1:]:
            if x / tics[-1] >= 1.3:
                tics.append(x)
        lines.append("set xtics (%s)" % ", ".join(_num(t) for t in tics))
        if xrange is None:
            xrange = [xs[0] / 1.25, xs[-1] * 1.25]
    elif not logx and _all_integers(xs) and xs[-1] - xs[0] <= 16:
        # integer axis (cores): a tick per integer, half a step of room on each side
        lines.append("set xtics 1 format '%g'")
        lines.append("set mxtics 1")
        if xrange is None:
            xrange = [xs[0] - 0.5, xs[-1] + 0.5]
    if xrange is not None:
        lines.append("set xrange [%s:%s]" % tuple("*" if v is None else _num(v) for v in xrange))
    if spec["yrange"] is not None:
        lines.append("set yrange [%s:%s]" % tuple("*" if v is None else _num(v) for v in spec["yrange"]))
    elif not logy:
        lines.append("set yrange [0:*]")
        lines.append("set offsets 0, 0, graph 0.05, 0")
    # bottom up, in screen coordinates: footnotes (the testbeds), the legend (key below), the x axis labels
    height = picture_height(spec, series, refs, footnotes)
    key_rows = _key_rows(series, refs) if spec["key"] == "below" else 0
    line = font * 1.9 / height
    foot_top = (0.4 + 1.2 * len(footnotes)) * line
    for i, note in enumerate(footnotes):
        y = (0.6 + (len(footnotes) - 1 - i) * 1.2) * line
        lines.append(
            "set label %d %s at screen 0.012, screen %.4f left font %s tc rgb '#333333'"
            % (i + 1, gp_string(note), y, gp_string(",%d" % font))
        )
    key_top = foot_top
    if spec["key"] == "below":
        key_top = foot_top + (key_rows * 1.0 + 0.6) * line
        lines.append("set key at screen 0.012, screen %.4f left top maxrows %d" % (key_top, key_rows))
    lines.append("set bmargin at screen %.4f" % (key_top + 3.4 * line))
    lines.append("set tmargin at screen %.4f" % (1 - 3.0 * line))
    plots = []
    for i, s in enumerate(series):
        style = "yerrorlines" if spec["errorbars"] else "linespoints"
        using = "1:2:3:4" if spec["errorbars"] else "1:2"
        plots.append(
            "%s index %d using %s with %s lc rgb '%s' lw 2.5 dt 1 pt %d title %s"
            % (gp_string(name + ".dat"), i, using, style, s["colour"], s["point_type"], gp_string(s["label"]))
        )
    drawn = len([r for r in refs if r["points"]])
    if spec["key"] == "below" and drawn:
        # blank legend entries so that ours fill the left column and the paper's the right one
        plots += ["NaN with lines lc rgb '#ffffff' title ' '"] * (key_rows - len(series))
    for i, r in enumerate(refs):
        if r["points"]:
            plots.append(
                "%s index %d using 1:2 with linespoints lc rgb '%s' lw 2 dt (8,5) pt %d title %s"
                % (gp_string(name + ".ref.dat"), i, r["colour"], r["point_type"], gp_string(r["label"]))
            )
    if spec["key"] == "below" and drawn:
        plots += ["NaN with lines lc rgb '#ffffff' title ' '"] * (key_rows - drawn)
    lines.append("plot " + ", \\\n     ".join(plots))
    return "\n".join(lines) + "\n"


class Figure:
    """A figure built from records and a spec: series, reference series, texts of its files."""

    def __init__(self, spec, series, refs, footnotes):
        self.spec = spec
        self.series = series
        self.refs = refs
        self.footnotes = footnotes
        assign_styles(series, refs)
        self.files = {
            spec["name"] + ".dat": data_text(spec, series),
            spec["name"] + ".gp": script_text(spec, series, refs, footnotes),
        }
        if refs:
            self.files[spec["name"] + ".ref.dat"] = reference_data_text(spec, refs)
        self.png = spec["name"] + ".png"

    def summary(self):
        """What the module returns about the figure (no records)."""
        return {
            "name": self.spec["name"],
            "title": self.spec["title"],
            "series": [
                {"id": s["id"], "label": s["label"], "colour": s["colour"], "trials": len(s["records"]), "points": s["points"]}
                for s in self.series
            ],
            "reference": [
                {"label": r["label"], "column": r["column"], "matches": r["matched"], "points": r["points"]} for r in self.refs
            ],
        }

    def markdown(self, png_link):
        """Image link, a table of the medians, and per series its limits and provenance."""
        spec = self.spec
        lines = ["### %s" % spec["title"], "", "![%s](%s)" % (spec["title"], png_link), ""]
        lines.append(
            "x: `%s`%s; y: `%s`%s; each point is the median of the repetitions, bars min to max."
            % (
                spec["x"],
                " x %g" % spec["x_scale"] if spec["x_scale"] != 1 else "",
                spec["y"],
                " x %g" % spec["y_scale"] if spec["y_scale"] != 1 else "",
            )
        )
        lines += [
            "",
            "| series | %s | %s (median) | min | max | trials |" % (spec["xlabel"], spec["ylabel"]),
            "|---|---:|---:|---:|---:|---:|",
        ]
        for s in self.series:
            for p in s["points"]:
                lines.append(
                    "| %s | %s | %.3f | %.3f | %.3f | %d |" % (s["label"], _num(p["x"]), p["median"], p["min"], p["max"], p["n"])
                )
        for r in self.refs:
            for p in r["points"]:
                lines.append("| %s | %s | %.3f | - | - | - |" % (r["label"], _num(p["x"]), p["y"]))
        lines += ["", "Series (which limit each trial hit; provenance):", ""]
        for s in self.series:
            limits = series_limits(s["records"])
            lines.append(
                "- **%s** (`%s`, %d trials): limit %s"
                % (s["label"], s["id"], len(s["records"]), ", ".join("%s x%d" % (k, v) for k, v in sorted(limits.items())))
            )
            lines += ["  - %s" % p for p in series_provenance(s["records"])]
        for r in self.refs:
            lines.append(
                "- **%s**: column `%s` of `%s` (dashed)%s"
                % (
                    r["label"],
                    r["column"],
                    os.path.basename(spec["reference"]["file"]),
                    ", beside %s" % r["matched"] if r["matched"] else "",
                )
            )
        if self.footnotes:
            lines += ["", "Testbeds: " + " | ".join(self.footnotes)]
        return "\n".join(lines) + "\n"


def build(records, spec, reference_text=None, testbed=(None, None)):
    """A Figure from the records (as _report.read_records returns them) and a validated spec.

    reference_text is the reference CSV's text (if any).

    testbed: (short, long) text of the paper's testbed (legend suffix, footnote). None if nothing to draw.
    """
    series = our_series(records, spec)
    refs = reference_series(reference_text, spec["reference"], testbed[0]) if spec["reference"] and reference_text else []
    if not series:
        return None
    footnotes = ["ours: " + ours_testbed([r for s in series for r in s["records"]])]
    if refs:
        ref = spec["reference"]
        where = ref.get("testbed") or testbed[1] or testbed[0] or "the paper's testbed"
        footnotes.append("%s (dashed): %s" % (ref["source"], where))
    return Figure(spec, series, refs, footnotes)


def figures_markdown(figures, links, skipped=()):
    """The report's figures section: one subsection per figure, and the names of those not drawn."""
    if not figures and not skipped:
        return ""
    lines = ["## Figures", ""] + [f.markdown(links[f.spec["name"]]) for f in figures]
    if skipped:
        lines.append("Not drawn (no trial matched): %s\n" % ", ".join(skipped))
    return "\n".join(lines)

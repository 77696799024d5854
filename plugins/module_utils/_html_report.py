# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Static HTML pages of a results tree: an index of experiments and runs, a page per experiment, per run and per
pair of consecutive runs (issue 29).

A results tree is ``ROOT/<experiment>/<run>/trials.jsonl`` with, beside each records file, what the report step
wrote (report.csv, report.md, the figures' PNG and gnuplot sources, latency.csv) and, in docs/results, a
``run.json`` holding what the records cannot say (the command, where the records came from). ``discover`` lists the
runs; ``derive`` reads a run's machine, commit, time window and foreign CPU load from its records' provenance
(``run.json``'s ``derived`` part, rewritten by ``make report``); ``pages`` renders every page as text (nothing is
written here: the module xdplab.testbed.results_report writes them).

The pages are static: relative links, no script, no font or style from elsewhere; they open from file://. Each
trial's record is one click away (a <details> block on its run's page, anchored by its trial id). The comparison of
two runs puts _abstats.compare's verdict beside each matrix point that both runs measured at least twice.
"""

from __future__ import annotations

import csv
import json
import os

try:
    import jinja2

    HAS_JINJA2 = True
    JINJA2_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - jinja2 comes with ansible-core
    jinja2 = None
    HAS_JINJA2 = False
    JINJA2_IMPORT_ERROR = exc

from ansible_collections.xdplab.testbed.plugins.module_utils import _abstats, _report

RUN_META = "run.json"
RECORDS = "trials.jsonl"
TABLES = ("report.csv", "latency.csv", "side_by_side.csv", "ratios.csv")
NOT_RECORDED = "not recorded"
# the metrics the comparison of two runs tests: the record's field, its label, its scale, and the words for B's
# higher and lower value
COMPARE_METRICS = (
    ("result.pps", "Mpps counted", 1e-6, "faster", "slower"),
    ("result.cpu_busy", "DUT CPU busy %", 1.0, "busier", "less busy"),
)


class ResultsTreeError(ValueError):
    """A results tree that cannot be reported (no runs, an unreadable run.json)."""


def discover(root):
    """[(experiment, run, directory)] of every ROOT/<experiment>/<run>/trials.jsonl, sorted by name."""
    if not os.path.isdir(root):
        raise ResultsTreeError("no results directory at %s: run an experiment first, or name another root" % root)
    runs = []
    for experiment in sorted(os.listdir(root)):
        exp_dir = os.path.join(root, experiment)
        if not os.path.isdir(exp_dir):
            continue
        for run in sorted(os.listdir(exp_dir)):
            run_dir = os.path.join(exp_dir, run)
            if os.path.isfile(os.path.join(run_dir, RECORDS)):
                runs.append((experiment, run, run_dir))
    return runs


def _distinct(values):
    out = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def derive(records):
    """What a run's records say about it: trials, time window, commits, DUTs, machine, generator, foreign CPU load."""
    prov = [r.get("provenance") or {} for r in records]
    dut = [p.get("dut") or {} for p in prov]
    controller = [p.get("controller") or {} for p in prov]
    foreign = {"yes": 0, "no": 0, "not measured": 0}
    for rec in records:
        flag = (rec.get("result") or {}).get("cpu_foreign")
        foreign["not measured" if flag is None else "yes" if flag else "no"] += 1
    started = _distinct(r.get("started_at") for r in records)
    finished = _distinct(r.get("finished_at") for r in records)
    return {
        "trials": len(records),
        "trials_ok": sum(1 for r in records if r.get("status", "ok") == "ok"),
        "started_at": min(started) if started else None,
        "finished_at": max(finished) if finished else None,
        "commits": _distinct(c.get("repo_commit") for c in controller),
        "collection_versions": _distinct(c.get("collection_version") for c in controller),
        "ansible_versions": _distinct(c.get("ansible_version") for c in controller),
        "duts": _distinct(d.get("host") for d in dut),
        "machine": {
            "cpu_model": _distinct(d.get("cpu_model") for d in dut),
            "cpus_online": _distinct(len(d["cpus_online"]) for d in dut if isinstance(d.get("cpus_online"), list)),
            "kernel_release": _distinct(d.get("kernel_release") for d in dut),
            "driver": _distinct(d.get("driver") for d in dut),
        },
        "generators": _distinct(
            "%s %s" % ((p.get("generator") or {}).get("backend"), (p.get("generator") or {}).get("version") or "")
            for p in prov
            if (p.get("generator") or {}).get("backend")
        ),
        "cpu_foreign": foreign,
    }


def read_meta(run_dir):
    """run.json of a run ({} when there is none)."""
    path = os.path.join(run_dir, RUN_META)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as exc:
        raise ResultsTreeError("%s: not readable JSON (%s); fix or delete it" % (path, exc)) from None
    if not isinstance(meta, dict):
        raise ResultsTreeError("%s: a JSON object is expected, got %s" % (path, type(meta).__name__))
    return meta


def meta_text(meta, derived):
    """run.json's text with its derived part replaced (sorted keys, 2-space indent, a final newline)."""
    out = dict(meta)
    out["derived"] = derived
    return json.dumps(out, indent=2, sort_keys=True) + "\n"


def _field(rec, path):
    value = rec
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def point_key(point):
    return json.dumps(dict(point or {}), sort_keys=True)


def point_label(point):
    return ", ".join("%s %s" % (k, v) for k, v in sorted((point or {}).items()))


def read_csv(path):
    """(header, rows) of a CSV file; None when there is none."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return (rows[0], rows[1:]) if rows else None


def paper_testbed(reference_dir):
    """The 'Testbed of the paper:' paragraph of the reference README (None without one)."""
    path = os.path.join(reference_dir or "", "README.md")
    if not reference_dir or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.find("Testbed of the paper:")
    if start < 0:
        return None
    return " ".join(text[start:].split("\n\n")[0].split())


class Run:
    """One run: its records, meta and the files the report step wrote beside them."""

    def __init__(self, experiment, name, directory):
        self.experiment = experiment
        self.name = name
        self.directory = directory
        self.meta = read_meta(directory)
        self.records, self.warnings = _report.load(os.path.join(directory, RECORDS))
        with open(os.path.join(directory, RECORDS), encoding="utf-8", errors="replace") as f:
            numbered = [line for line in f.read().splitlines() if line.strip()]
        self.all_records = []
        for line in numbered:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                self.all_records.append(rec)
        self.derived = derive(self.all_records)
        # what the run's page lists: every file of the run but the page itself (and a page being written)
        self.files = sorted(f for f in os.listdir(directory) if f != "index.html" and not f.endswith(".tmp"))
        self.pngs = [f for f in self.files if f.endswith(".png")]
        self.tables = [(t, read_csv(os.path.join(directory, t))) for t in TABLES if t in self.files]
        self.title = self._title()

    def _title(self):
        for name in ("report.md", "latency.md"):
            path = os.path.join(self.directory, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    first = f.readline().strip()
                return first.lstrip("#").strip()
        return self.experiment

    @property
    def command(self):
        return self.meta.get("command") or NOT_RECORDED

    def trials(self):
        """Rows of the run page's trial list, with the record's JSON."""
        out = []
        for rec in self.all_records:
            result = rec.get("result") or {}
            out.append({
                "id": rec.get("trial_id") or "",
                "anchor": "trial-%s-%s" % (rec.get("trial_id") or "", (rec.get("started_at") or "").replace(":", "")),
                "point": point_label(rec.get("point")),
                "repetition": rec.get("repetition"),
                "status": rec.get("status"),
                "started_at": rec.get("started_at"),
                "pps": result.get("pps"),
                "cpu_busy": result.get("cpu_busy"),
                "cpu_foreign": result.get("cpu_foreign"),
                "limit": (rec.get("loss") or {}).get("limit"),
                "json": json.dumps(rec, indent=2, sort_keys=True),
            })  # fmt: skip
        return out


def compare(run_a, run_b, confidence=0.95):
    """Per matrix point both runs measured: each metric's means, their ratio and, with _abstats.MIN_SAMPLES trials a
    side or more, _abstats' verdict (else why there is none)."""
    def by_point(run):
        out = {}
        for rec in run.records:
            out.setdefault(point_key(rec.get("point")), []).append(rec)
        return out

    a, b = by_point(run_a), by_point(run_b)
    rows = []
    for key in sorted(set(a) & set(b), key=lambda k: _report.sort_key(list(json.loads(k).values()))):
        point = json.loads(key)
        for path, label, scale, higher, lower in COMPARE_METRICS:
            va = [_field(r, path) for r in a[key]]
            vb = [_field(r, path) for r in b[key]]
            va = [float(v) for v in va if isinstance(v, (int, float))]
            vb = [float(v) for v in vb if isinstance(v, (int, float))]
            if not va or not vb:
                continue
            row = {
                "point": point_label(point),
                "metric": label,
                "n_a": len(va),
                "n_b": len(vb),
                "mean_a": sum(va) / len(va) * scale,
                "mean_b": sum(vb) / len(vb) * scale,
                "relative": (sum(vb) / len(vb)) / (sum(va) / len(va)) - 1.0 if sum(va) else None,
                "verdict": None,
            }
            try:
                result = _abstats.compare(va, vb, confidence=confidence)
                row["relative"] = result["relative"]
                row["verdict"] = _abstats.verdict(
                    result, run_a.name, run_b.name, higher, lower, design="two separate runs, not interleaved"
                )
            except _abstats.ABStatsError as exc:
                row["verdict"] = "no verdict: %s" % exc
            rows.append(row)
    return rows


STYLE = """
body{font-family:sans-serif;margin:1.5em;max-width:110em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #bbb;padding:.2em .5em;font-size:.9em;text-align:left;vertical-align:top}
th{background:#eee}
td.num{text-align:right;font-variant-numeric:tabular-nums}
img{max-width:100%;border:1px solid #ddd}
pre{background:#f6f6f6;padding:.5em;overflow:auto;font-size:.8em}
details{margin:.2em 0}
.warn{color:#a00}
nav{margin-bottom:1em}
"""

BASE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title><style>{{ style }}</style></head>
<body><nav>{% for href, text in crumbs %}<a href="{{ href }}">{{ text }}</a> / {% endfor %}</nav>
<h1>{{ title }}</h1>
{% block body %}{% endblock %}
</body></html>
"""

MACROS = """
{% macro machine(d) -%}
{{ d.machine.cpu_model | join(', ') or '?' }}, {{ d.machine.cpus_online | join(', ') or '?' }} CPUs, kernel
{{ d.machine.kernel_release | join(', ') or '?' }} ({{ d.machine.driver | join(', ') or '?' }})
{%- endmacro %}
{% macro foreign(d) -%}
{% set f = d.cpu_foreign %}{% if f['yes'] %}<span class="warn">foreign CPU load in {{ f['yes'] }} of {{ d.trials }}
trials</span>{% elif f['no'] %}none seen ({{ f['no'] }} trials measured{% if f['not measured'] %}, {{ f['not measured'] }}
not{% endif %}){% else %}not measured{% endif %}
{%- endmacro %}
{% macro table(name, t) -%}
<table><caption>{{ name }}</caption><tr>{% for h in t[0] %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in t[1] %}<tr>{% for c in row %}<td{% if c and c.replace('.', '', 1).replace('-', '', 1).isdigit() %}
 class="num"{% endif %}>{{ c }}</td>{% endfor %}</tr>
{% endfor %}</table>
{%- endmacro %}
{% macro meta(run) -%}
<table>
<tr><th>run</th><td>{{ run.name }}</td></tr>
<tr><th>trials</th><td>{{ run.derived.trials }} ({{ run.derived.trials_ok }} ok)</td></tr>
<tr><th>time (UTC)</th><td>{{ run.derived.started_at }} to {{ run.derived.finished_at }}</td></tr>
<tr><th>commit</th><td>{{ run.derived.commits | join(', ') or '?' }} (collection
{{ run.derived.collection_versions | join(', ') }}, ansible-core {{ run.derived.ansible_versions | join(', ') }})</td></tr>
<tr><th>machine (DUT)</th><td>{{ machine(run.derived) }}</td></tr>
<tr><th>foreign CPU load</th><td>{{ foreign(run.derived) }}</td></tr>
<tr><th>generator</th><td>{{ run.derived.generators | join(', ') or '?' }}</td></tr>
<tr><th>command</th><td><code>{{ run.command }}</code>{% if run.meta.get('command_note') %}<br>{{ run.meta.command_note }}{%
 endif %}</td></tr>
{% if run.meta.get('source') %}<tr><th>records from</th><td>{% for s in run.meta.source %}<code>{{ s }}</code><br>{% endfor
 %}</td></tr>{% endif %}
</table>
{%- endmacro %}
"""

INDEX = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<p>Every table and figure here is generated from the trial records beside it ({{ records }}) by the collection's
report step; each run's page shows every trial's record.</p>
<h2>Experiments</h2>
<table><tr><th>experiment</th><th>title</th><th>runs</th><th>latest run</th></tr>
{% for e in experiments %}<tr><td><a href="{{ e.name }}/index.html">{{ e.name }}</a></td><td>{{ e.title }}</td>
<td class="num">{{ e.runs | length }}</td><td><a href="{{ e.name }}/{{ e.runs[-1].name }}/index.html">{{
 e.runs[-1].name }}</a></td></tr>
{% endfor %}</table>
<h2>Runs</h2>
<table><tr><th>experiment</th><th>run</th><th>time (UTC)</th><th>commit</th><th>machine (DUT)</th><th>trials</th>
<th>foreign CPU load</th><th>command</th></tr>
{% for e in experiments %}{% for r in e.runs %}<tr><td>{{ e.name }}</td><td><a href="{{ e.name }}/{{ r.name
 }}/index.html">{{ r.name }}</a></td><td>{{ r.derived.started_at }}</td><td>{{ r.derived.commits | join(', ') }}</td>
<td>{{ m.machine(r.derived) }}</td><td class="num">{{ r.derived.trials }}</td><td>{{ m.foreign(r.derived) }}</td>
<td><code>{{ r.command }}</code></td></tr>
{% endfor %}{% endfor %}</table>
{% endblock %}"""

EXPERIMENT = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<p>{{ exp.title }}</p>
<h2>Runs</h2>
<table><tr><th>run</th><th>time (UTC)</th><th>commit</th><th>machine (DUT)</th><th>foreign CPU load</th>
<th>compared with the run before</th></tr>
{% for r in exp.runs %}<tr><td><a href="{{ r.name }}/index.html">{{ r.name }}</a></td><td>{{ r.derived.started_at }}</td>
<td>{{ r.derived.commits | join(', ') }}</td><td>{{ m.machine(r.derived) }}</td><td>{{ m.foreign(r.derived) }}</td>
<td>{% if loop.index0 %}<a href="{{ compare_name(exp.runs[loop.index0 - 1], r) }}">{{ exp.runs[loop.index0 - 1].name }}
against {{ r.name }}</a>{% else %}-{% endif %}</td></tr>
{% endfor %}</table>
{% if trend %}<h2>Trend: the counted rate's mean (Mpps) by run</h2>
<table><tr><th>point</th>{% for r in exp.runs %}<th>{{ r.name }}</th>{% endfor %}</tr>
{% for label, cells in trend %}<tr><td>{{ label }}</td>{% for c in cells %}<td class="num">{{ c }}</td>{% endfor
 %}</tr>
{% endfor %}</table>{% endif %}
{% if reference %}<h2>The paper's numbers</h2>
<p>{{ reference.path }}{% if testbed %}. {{ testbed }}{% endif %}</p>
{{ m.table(reference.name, reference.table) }}{% endif %}
{% for r in exp.runs | reverse %}<h2 id="{{ r.name }}">Run {{ r.name }}</h2>
{{ m.meta(r) }}
{% for png in r.pngs %}<p><img src="{{ r.name }}/{{ png }}" alt="{{ png }}"></p>{% endfor %}
{% for name, t in r.tables %}{% if t %}{{ m.table(r.name ~ '/' ~ name, t) }}{% endif %}{% endfor %}
<p><a href="{{ r.name }}/index.html#trials">its {{ r.derived.trials }} trials and their records</a></p>
{% endfor %}
{% endblock %}"""

RUN = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<p>{{ run.title }}</p>
{{ m.meta(run) }}
<p>Files: {% for f in run.files %}<a href="{{ f }}">{{ f }}</a> {% endfor %}</p>
{% for png in run.pngs %}<p><img src="{{ png }}" alt="{{ png }}"></p>{% endfor %}
{% for name, t in run.tables %}{% if t %}{{ m.table(name, t) }}{% endif %}{% endfor %}
<h2 id="trials">Trials</h2>
<p>Each trial's record (its provenance: the DUT, the program, the generator, the controller) opens with a click.</p>
<table><tr><th>trial</th><th>point</th><th>rep</th><th>status</th><th>started (UTC)</th><th>pps</th>
<th>CPU busy %</th><th>foreign CPU load</th><th>limit</th></tr>
{% for t in trials %}<tr><td><a href="#{{ t.anchor }}">{{ t.id }}</a></td><td>{{ t.point }}</td>
<td class="num">{{ t.repetition }}</td><td>{{ t.status }}</td><td>{{ t.started_at }}</td><td class="num">{{ t.pps }}</td>
<td class="num">{{ t.cpu_busy }}</td><td>{{ t.cpu_foreign }}</td><td>{{ t.limit }}</td></tr>
{% endfor %}</table>
{% for t in trials %}<details id="{{ t.anchor }}"><summary>trial {{ t.id }}: {{ t.point }}, repetition
{{ t.repetition }}</summary><pre>{{ t.json }}</pre></details>
{% endfor %}
{% endblock %}"""

COMPARE = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<p>A = <a href="{{ a.name }}/index.html">{{ a.name }}</a>, B = <a href="{{ b.name }}/index.html">{{ b.name }}</a>.
Two runs taken one after the other, not interleaved: whatever changed between them (the commit, the kernel, the
machine's other load) is in the difference. "B against A" is the ratio of the means; a verdict (Welch's t and the
bootstrap on the logs, _abstats) needs {{ min_samples }} trials of a point on each side.</p>
<table><tr><th></th><th>A: {{ a.name }}</th><th>B: {{ b.name }}</th></tr>
<tr><th>commit</th><td>{{ a.derived.commits | join(', ') }}</td><td>{{ b.derived.commits | join(', ') }}</td></tr>
<tr><th>machine (DUT)</th><td>{{ m.machine(a.derived) }}</td><td>{{ m.machine(b.derived) }}</td></tr>
<tr><th>foreign CPU load</th><td>{{ m.foreign(a.derived) }}</td><td>{{ m.foreign(b.derived) }}</td></tr>
<tr><th>time (UTC)</th><td>{{ a.derived.started_at }}</td><td>{{ b.derived.started_at }}</td></tr>
<tr><th>command</th><td><code>{{ a.command }}</code></td><td><code>{{ b.command }}</code></td></tr>
</table>
<h2>Points both runs measured</h2>
<table><tr><th>point</th><th>metric</th><th>n A</th><th>mean A</th><th>n B</th><th>mean B</th><th>B against A</th>
<th>verdict</th></tr>
{% for r in rows %}<tr><td>{{ r.point }}</td><td>{{ r.metric }}</td><td class="num">{{ r.n_a }}</td>
<td class="num">{{ '%.3f' % r.mean_a }}</td><td class="num">{{ r.n_b }}</td><td class="num">{{ '%.3f' % r.mean_b }}</td>
<td class="num">{{ '%+.2f %%' % (100 * r.relative) if r.relative is not none else '-' }}</td><td>{{ r.verdict }}</td>
</tr>
{% endfor %}</table>
{% if not rows %}<p>The two runs have no matrix point in common.</p>{% endif %}
{% endblock %}"""


def compare_name(run_a, run_b):
    return "compare-%s-vs-%s.html" % (run_a.name, run_b.name)


def _env():
    if not HAS_JINJA2:
        raise ResultsTreeError("the HTML report needs jinja2 (it comes with ansible-core): %s" % JINJA2_IMPORT_ERROR)
    env = jinja2.Environment(
        loader=jinja2.DictLoader(
            {"base": BASE, "macros": MACROS, "index": INDEX, "experiment": EXPERIMENT, "run": RUN, "compare": COMPARE}
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.globals.update(style=STYLE, compare_name=compare_name, min_samples=_abstats.MIN_SAMPLES)
    return env


def trend(runs):
    """Rows (point, [mean Mpps per run or '-']) over every run of an experiment; [] with one run."""
    if len(runs) < 2:
        return []
    means, points = [], {}
    for run in runs:
        by = {}
        for rec in run.records:
            pps = _field(rec, "result.pps")
            if isinstance(pps, (int, float)):
                key = point_key(rec.get("point"))
                points.setdefault(key, rec.get("point"))
                by.setdefault(key, []).append(pps)
        means.append(by)
    order = sorted(points, key=lambda k: _report.sort_key(list(json.loads(k).values())))
    # the axes that vary name the row (cores 1, packet_len 64 everywhere say nothing)
    axes = sorted({a for p in points.values() for a in p})
    varying = [a for a in axes if len({json.dumps(p.get(a)) for p in points.values()}) > 1] or axes
    rows = []
    for k in order:
        cells = ["%.3f" % (sum(m[k]) / len(m[k]) * 1e-6) if k in m else "-" for m in means]
        rows.append((point_label({a: v for a, v in points[k].items() if a in varying}), cells))
    return rows


def pages(root, references=None, reference_dir=None, title="Results"):
    """{relative path: HTML text} of every page of the tree, and the runs read ({experiment: [Run]})."""
    found = discover(root)
    if not found:
        raise ResultsTreeError("no runs under %s: a run is <experiment>/<run>/%s" % (root, RECORDS))
    by_exp = {}
    for experiment, name, directory in found:
        by_exp.setdefault(experiment, []).append(Run(experiment, name, directory))
    env = _env()
    testbed = paper_testbed(reference_dir)
    experiments = []
    out = {}
    for experiment in sorted(by_exp):
        runs = sorted(by_exp[experiment], key=lambda r: (r.derived["started_at"] or "", r.name))
        exp = {"name": experiment, "runs": runs, "title": runs[-1].title}
        experiments.append(exp)
        reference = None
        ref_file = (references or {}).get(experiment)
        if ref_file:
            path = ref_file if os.path.isabs(ref_file) else os.path.join(reference_dir or "", ref_file)
            table = read_csv(path)
            if table is None:
                raise ResultsTreeError("%s: reference %s does not exist (see references, reference_dir)" % (experiment, path))
            reference = {"name": os.path.basename(path), "path": "from " + os.path.basename(path), "table": table}
        crumbs = [("../index.html", title)]
        out[os.path.join(experiment, "index.html")] = env.get_template("experiment").render(
            title="%s: %s" % (experiment, exp["title"]), crumbs=crumbs, exp=exp, trend=trend(runs),
            reference=reference, testbed=testbed,
        )  # fmt: skip
        for i, run in enumerate(runs):
            out[os.path.join(experiment, run.name, "index.html")] = env.get_template("run").render(
                title="%s run %s" % (experiment, run.name), run=run, trials=run.trials(),
                crumbs=[("../../index.html", title), ("../index.html", experiment)],
            )  # fmt: skip
            if i:
                a = runs[i - 1]
                out[os.path.join(experiment, compare_name(a, run))] = env.get_template("compare").render(
                    title="%s: %s against %s" % (experiment, a.name, run.name), a=a, b=run, rows=compare(a, run),
                    crumbs=crumbs + [("index.html", experiment)],
                )  # fmt: skip
    out["index.html"] = env.get_template("index").render(
        title=title, crumbs=[], experiments=experiments, records="<experiment>/<run>/" + RECORDS
    )
    return out, by_exp

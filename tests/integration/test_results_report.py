# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/results is what `make report` makes of its records, and its HTML report renders in a real browser (issue 29).

test_make_report_reproduces_docs_results copies every run's trials.jsonl and run.json of docs/results into a new
tree, runs `make report REPORT_ROOT=<that tree>` (the collection's own report step: experiment_report, latency_report,
results_report) and fails on any table, figure data, gnuplot script, run.json or HTML page that differs from the
committed one, or that one side has and the other not. The PNGs are only required to exist on both sides: gnuplot
builds draw the same data with different bytes. When it fails: run `make report` and commit docs/results.

The browser tests open the pages in Debian's Chromium, headless (installed here when missing): the DOM it dumps must
hold the headings, every run id and numbers of the tables; each page's screenshot must be a picture. No traffic, no
lab: the records are read, nothing else.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import tempfile

import pytest

pytestmark = pytest.mark.no_traffic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS_RESULTS = os.path.join(ROOT, "docs", "results")
COMPARED = (".csv", ".md", ".dat", ".gp", ".json", ".html")
INPUTS = ("trials.jsonl", "run.json")
# docs/results' own files that make report does not make: its README and the report's screenshot
NOT_MADE = {"README.md", "report_screenshot.png"}
# benchmarks' outputs quoted by docs/BENCHMARKS.md (bench/<run-id>/, no trials.jsonl): not the report's
NOT_MADE_UNDER = ("bench" + os.sep,)
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def ensure_debian_package(command, package):
    """The path of command, installing the Debian package that has it when it is missing (a fresh CI machine)."""
    path = shutil.which(command)
    if path:
        return path
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    argv = ["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=900", package]
    if subprocess.run(argv, env=env, capture_output=True, check=False).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, check=True)
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, "apt-get install %s failed: %s" % (package, proc.stderr[-2000:])
    path = shutil.which(command)
    assert path, "%s installed but %s is not on PATH" % (package, command)
    return path


def tree_files(root):
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def runs(root):
    return sorted(
        (exp, run)
        for exp in os.listdir(root)
        if os.path.isdir(os.path.join(root, exp))
        for run in os.listdir(os.path.join(root, exp))
        if os.path.isfile(os.path.join(root, exp, run, "trials.jsonl"))
    )


@pytest.fixture(scope="module")
def regenerated():
    """A copy of docs/results' records (trials.jsonl, run.json), put through `make report`."""
    ensure_debian_package("gnuplot", "gnuplot-nox")
    with tempfile.TemporaryDirectory(prefix="xdplab-report-") as tmp:
        tree = os.path.join(tmp, "results")
        for exp, run in runs(DOCS_RESULTS):
            os.makedirs(os.path.join(tree, exp, run))
            for name in INPUTS:
                src = os.path.join(DOCS_RESULTS, exp, run, name)
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(tree, exp, run, name))
        proc = subprocess.run(
            ["make", "-s", "--no-print-directory", "report", "REPORT_ROOT=" + tree],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, "make report failed:\n%s\n%s" % (proc.stdout[-4000:], proc.stderr[-4000:])
        yield tree


def test_docs_results_has_runs_with_their_inputs():
    found = runs(DOCS_RESULTS)
    assert len(found) >= 3, found
    for exp, run in found:
        with open(os.path.join(DOCS_RESULTS, exp, run, "run.json")) as f:
            meta = json.load(f)
        assert meta["run_id"] == run and meta["experiment"] == exp
        assert meta["command"], "%s/%s: run.json has no command (say 'not recorded' when it is not known)" % (exp, run)
        assert meta["derived"]["trials"] > 0 and meta["derived"]["commits"], (exp, run, meta["derived"])


def test_make_report_reproduces_docs_results(regenerated):
    made = {f for f in tree_files(regenerated) if f.endswith(COMPARED + (".png",))}
    committed = {f for f in tree_files(DOCS_RESULTS) if f.endswith(COMPARED + (".png",)) and not f.startswith(NOT_MADE_UNDER)}
    committed -= NOT_MADE
    assert sorted(made - committed) == [], "make report makes files docs/results lacks: run make report, commit them"
    assert sorted(committed - made) == [], "docs/results has files make report does not make: remove them"
    differ = []
    for rel in sorted(f for f in made if f.endswith(COMPARED)):
        with open(os.path.join(regenerated, rel), encoding="utf-8") as a, open(os.path.join(DOCS_RESULTS, rel)) as b:
            if a.read() != b.read():
                differ.append(rel)
    assert differ == [], "committed files differ from what make report makes (run make report, commit): %s" % differ


def chromium(url, *extra, timeout=180):
    binary = ensure_debian_package("chromium", "chromium")
    with tempfile.TemporaryDirectory(prefix="xdplab-chromium-") as profile:
        proc = subprocess.run(
            [binary, *CHROMIUM_FLAGS, "--user-data-dir=" + profile, *extra, url],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    assert proc.returncode == 0, "chromium failed (rc %d): %s" % (proc.returncode, proc.stderr[-2000:])
    return proc.stdout


def assert_screenshot(url, tmp_path, name):
    shot = tmp_path / name
    chromium(url, "--screenshot=%s" % shot, "--window-size=1400,1000", "--hide-scrollbars")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000, "%s: no picture of the page (%d bytes)" % (url, len(data))


@pytest.mark.parametrize("tree", ["docs", "made"])
def test_index_in_headless_chromium(tree, regenerated, tmp_path):
    root = DOCS_RESULTS if tree == "docs" else regenerated
    url = "file://" + os.path.join(root, "index.html")
    dom = chromium(url, "--dump-dom")
    for heading in ("<h1>Results</h1>", "<h2>Experiments</h2>", "<h2>Runs</h2>"):
        assert heading in dom, heading
    for exp, run in runs(root):
        assert ">%s<" % exp in dom and ">%s</a>" % run in dom, (exp, run)
        with open(os.path.join(root, exp, run, "run.json")) as f:
            derived = json.load(f)["derived"]
        assert derived["machine"]["cpu_model"][0] in dom and derived["commits"][0] in dom, (exp, run)
    assert_screenshot(url, tmp_path, "index.png")


def test_experiment_run_and_compare_pages_in_headless_chromium(tmp_path):
    exp = "paper_drop_cpu"
    found = [run for e, run in runs(DOCS_RESULTS) if e == exp]
    assert len(found) >= 2, found
    dom = chromium("file://" + os.path.join(DOCS_RESULTS, exp, "index.html"), "--dump-dom")
    assert "<h2>The paper's numbers</h2>" in dom and "xdp_cpu_busy_pct" in dom
    with open(os.path.join(DOCS_RESULTS, exp, found[-1], "report.csv")) as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        assert ">%s<" % row["mpps_mean"] in dom, row
    for run in found:
        assert '<h2 id="%s">Run %s</h2>' % (run, run) in dom and '<img src="%s/paper_drop_cpu_busy.png"' % run in dom
    assert_screenshot("file://" + os.path.join(DOCS_RESULTS, exp, "index.html"), tmp_path, "experiment.png")

    run_dom = chromium("file://" + os.path.join(DOCS_RESULTS, exp, found[-1], "index.html"), "--dump-dom")
    with open(os.path.join(DOCS_RESULTS, exp, found[-1], "trials.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    assert run_dom.count("<details ") == len(records)
    for rec in records:
        assert rec["trial_id"] in run_dom and rec["started_at"] in run_dom

    compare = "compare-%s-vs-%s.html" % (found[-2], found[-1])
    cmp_dom = chromium("file://" + os.path.join(DOCS_RESULTS, exp, compare), "--dump-dom")
    assert "<h2>Points both runs measured</h2>" in cmp_dom
    # these runs have 2 repetitions a point: every row says why it has no verdict (the verdict itself: test_html_report)
    verdicts = cmp_dom.count("no verdict: A has 2 samples: at least 3 are needed") + cmp_dom.count(" CI ")
    # every <tr> but the 6 of the two runs' table and the header of the points' table
    assert verdicts == cmp_dom.count("<tr>") - 7, "a row of %s without its verdict or the reason it has none" % compare

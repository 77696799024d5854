"""Every number README.md and docs/BENCHMARKS.md give comes from a committed record set (issue 29).

A measured number (digits with a unit: Mpps, pps, %, us, ns, ms, s, min, Gbit, x) stands either on a line that names a
run-id (``20261203T1510Z-2ac8ee4``: the directory docs/results/<experiment>/<run-id>/) and is found in that run's
tables, or in a Markdown table whose caption (the line before it) names a run-id, and then every row of the table is
a row of one of that run's Markdown tables, verbatim. Every run-id named must exist under docs/results.
"""

import glob
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RESULTS = os.path.join(ROOT, "docs", "results")
DOCS = ("README.md", os.path.join("docs", "BENCHMARKS.md"))
RUN_ID = re.compile(r"\b(\d{8}T\d{4}Z-[0-9a-f]{7}(?:-dirty)?)\b")
MEASURED = re.compile(r"(?<![\w.])([+-]?\d[\d,]*(?:\.\d+)?)\s*(?:Mpps|Kpps|pps|%|us|µs|ns|ms|s|min|Gbit|x)(?![\w])")


def run_dir(run_id):
    found = glob.glob(os.path.join(RESULTS, "*", run_id))
    assert len(found) == 1, "run-id %s names no run of docs/results (or several): %s" % (run_id, found)
    return found[0]


def run_text(run_id, exts=(".md", ".csv", ".json")):
    d = run_dir(run_id)
    return "\n".join(open(os.path.join(d, f), encoding="utf-8").read() for f in sorted(os.listdir(d)) if f.endswith(exts))


def blocks(lines):
    """(kind, start, lines): 'table' for consecutive lines starting with '|', else 'line' per line."""
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            yield "table", i, lines[i:j]
            i = j
        else:
            yield "line", i, [lines[i]]
            i += 1


def caption(lines, start):
    for k in range(start - 1, -1, -1):
        if lines[k].strip():
            return lines[k]
    return ""


@pytest.mark.parametrize("doc", DOCS)
def test_every_number_has_its_run(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        lines = f.read().splitlines()
    problems = []
    for kind, start, block in blocks(lines):
        if kind == "table":
            runs = RUN_ID.findall(caption(lines, start))
            if not runs:
                bad = [row for row in block if MEASURED.search(row)]
                problems += ["%s:%d: a number in a table without a run-id in its caption: %s" % (doc, start + 1, r)
                             for r in bad]  # fmt: skip
                continue
            texts = [run_text(r, (".md",)) for r in runs]
            for n, row in enumerate(block):
                if not any(row in t.splitlines() for t in texts):
                    problems.append("%s:%d: not a row of %s's tables: %s" % (doc, start + n + 1, runs, row[:100]))
            continue
        line = block[0]
        numbers = MEASURED.findall(line)
        if not numbers:
            continue
        runs = RUN_ID.findall(line)
        if not runs:
            problems.append("%s:%d: a number without a run-id: %s" % (doc, start + 1, line[:120]))
            continue
        texts = "\n".join(run_text(r) for r in runs)
        for number in numbers:
            if number.lstrip("+-").replace(",", "") not in texts:
                problems.append("%s:%d: %s is not in the tables of %s" % (doc, start + 1, number, runs))
    for line in lines:
        for run_id in RUN_ID.findall(line):
            run_dir(run_id)
    assert problems == []


def test_the_check_finds_a_number_without_its_run(tmp_path):
    """The rule above bites: a measured number in prose, and a table without its run's caption, are found."""
    assert MEASURED.findall("XDP forwards 0.889 Mpps and loses 49.65 %") == ["0.889", "49.65"]
    assert MEASURED.findall("issue 28, Debian 12, 64-byte frames, CPU 1") == []
    table = ["Some table:", "", "| a | b |", "|---|---|", "| x | 5 Mpps |"]
    kinds = [(kind, start) for kind, start, _lines in blocks(table)]
    assert ("table", 2) in kinds and caption(table, 2) == "Some table:"

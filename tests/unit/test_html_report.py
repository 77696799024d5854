"""The results tree's HTML pages (plugins/module_utils/_html_report.py, module results_report; issue 29).

The records are the fixture tests/unit/fixtures/report/paper_drop.jsonl (real records of the virtual lab with the
systems, cores and rates varied, see make_fixtures.py); run B of the comparison is that fixture with every rate
multiplied by 1.2 here, so the verdict has a known answer.
"""

import json
import os
import re

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _html_report as html

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "report", "paper_drop.jsonl")
REFERENCE_DIR = os.path.join(HERE, "..", "..", "playbooks", "reference")


def fixture_records():
    with open(FIXTURE) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_run(root, experiment, run, records, meta=None):
    d = root / experiment / run
    d.mkdir(parents=True)
    (d / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if meta is not None:
        (d / "run.json").write_text(json.dumps(meta))
    return d


@pytest.fixture
def tree(tmp_path):
    records = fixture_records()
    faster = json.loads(json.dumps(records))
    for rec in faster:
        rec["result"]["pps"] *= 1.2
        rec["started_at"] = "2027" + rec["started_at"][4:]
    write_run(tmp_path, "paper_drop", "a", records, {"run_id": "a", "command": "make paper-drop"})
    write_run(tmp_path, "paper_drop", "b", faster)
    return tmp_path


def test_derive_reads_machine_commit_time_and_foreign_load():
    records = fixture_records()
    d = html.derive(records)
    assert d["trials"] == len(records)
    assert d["started_at"] == min(r["started_at"] for r in records)
    assert d["finished_at"] == max(r["finished_at"] for r in records)
    assert d["commits"] == sorted({r["provenance"]["controller"]["repo_commit"] for r in records})
    assert d["machine"]["kernel_release"] == [records[0]["provenance"]["dut"]["kernel_release"]]
    assert sum(d["cpu_foreign"].values()) == len(records)
    flagged = sum(1 for r in records if r["result"].get("cpu_foreign"))
    assert d["cpu_foreign"]["yes"] == flagged


def test_compare_gives_the_verdict_where_each_side_has_enough_trials(tree):
    a = html.Run("paper_drop", "a", str(tree / "paper_drop" / "a"))
    b = html.Run("paper_drop", "b", str(tree / "paper_drop" / "b"))
    rows = [r for r in html.compare(a, b) if r["metric"] == "Mpps counted"]
    assert rows
    for row in rows:
        assert row["relative"] == pytest.approx(0.2)
        if row["n_a"] >= 3 and row["n_b"] >= 3:
            assert row["verdict"].startswith("b is 20.0 % faster than a (95 % CI"), row
        else:
            assert row["verdict"].startswith("no verdict: "), row


def test_pages_are_static_and_link_only_within_the_tree(tree):
    pages, runs = html.pages(str(tree), {"paper_drop": "drop_vs_cores.csv"}, REFERENCE_DIR, "My results")
    assert sorted(pages) == sorted(
        ["index.html", "paper_drop/index.html", "paper_drop/a/index.html", "paper_drop/b/index.html",
         "paper_drop/compare-a-vs-b.html"]
    )
    assert [r.name for r in runs["paper_drop"]] == ["a", "b"]
    for name, text in pages.items():
        assert "<script" not in text, name
        for link in re.findall(r'(?:href|src)="([^"]+)"', text):
            assert "://" not in link and not link.startswith("/"), (name, link)
            target = os.path.normpath(os.path.join(str(tree), os.path.dirname(name), link.split("#")[0]))
            assert target.startswith(str(tree)), (name, link)
    run_page = pages["paper_drop/a/index.html"]
    assert run_page.count("<details ") == len(fixture_records())
    assert "make paper-drop" in run_page
    assert html.NOT_RECORDED in pages["paper_drop/b/index.html"]
    assert "The paper's numbers" in pages["paper_drop/index.html"]
    assert "xdp_drop_pps" in pages["paper_drop/index.html"]


def test_bad_trees_are_refused_with_what_to_do(tmp_path):
    with pytest.raises(html.ResultsTreeError, match="run an experiment first"):
        html.pages(str(tmp_path / "missing"))
    with pytest.raises(html.ResultsTreeError, match="no runs under"):
        html.pages(str(tmp_path))
    d = write_run(tmp_path, "paper_drop", "a", fixture_records()[:1])
    (d / "run.json").write_text("{not json")
    with pytest.raises(html.ResultsTreeError, match="fix or delete it"):
        html.pages(str(tmp_path))
    (d / "run.json").write_text("{}")
    with pytest.raises(html.ResultsTreeError, match="does not exist"):
        html.pages(str(tmp_path), {"paper_drop": "nope.csv"}, REFERENCE_DIR)


def test_meta_text_keeps_the_hand_written_fields_and_replaces_derived():
    meta = {"run_id": "r", "command": "not recorded", "derived": {"old": 1}}
    out = json.loads(html.meta_text(meta, {"trials": 2}))
    assert out == {"run_id": "r", "command": "not recorded", "derived": {"trials": 2}}


def test_a_runs_ratio_table_is_on_its_page(tree):
    # issue 27: experiment_report's ratios.csv (ours beside the paper's) is one of the tables a run page shows
    (tree / "paper_drop" / "a" / "ratios.csv").write_text(
        "ratio,at,ours,paper,numerator,denominator,numerator_trials,denominator_trials,paper_numerator,paper_denominator\n"
        "XDP / Linux raw,cores 1,3.1,4.72,6000000.0,1935000.0,3,3,23863471.0,5051787.0\n"
    )
    pages, _runs = html.pages(str(tree), {}, REFERENCE_DIR, "My results")
    run_page = pages["paper_drop/a/index.html"]
    assert "<caption>ratios.csv</caption>" in run_page and "XDP / Linux raw" in run_page
    assert "ratios.csv" not in pages["paper_drop/b/index.html"]

"""Several DUTs in one table, a column per DUT (experiment_report side_by_side, _report.side_by_side).

The fixtures (fixtures/report/two_pairs/dut1.jsonl, dut2.jsonl) are the real records of one run of
tests/integration/test_several_duts.py's playbook on inventories/vlab_two_pairs: one XDP drop trial per DUT, each
DUT with its own generator, measured at the same time.
"""

import copy
import csv
import io
import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _report as report
from ansible_collections.xdplab.testbed.plugins.modules import experiment_report

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "report", "two_pairs")


def records(dut):
    recs, warnings = report.load(os.path.join(FIXTURES, dut + ".jsonl"))
    assert warnings == [] and len(recs) == 1
    return recs


def test_one_row_per_point_a_column_per_dut_from_each_duts_own_aggregate():
    by_dut = {"dut1": records("dut1"), "dut2": records("dut2")}
    read = copy.deepcopy(by_dut["dut1"][0])
    read["point"]["touch"] = "read"
    by_dut["dut1"].append(read)  # a point only dut1 measured
    axes, rows = report.side_by_side(by_dut)
    assert [(r["system"], r["touch"]) for r in rows] == [("xdp", "no_touch"), ("xdp", "read")]
    for dut in ("dut1", "dut2"):
        own = report.aggregate(records(dut))[0]
        assert rows[0]["duts"][dut] == {f: own[f] for f in report.SIDE_BY_SIDE_FIELDS}
    assert rows[0]["duts"]["dut1"]["mpps_mean"] != rows[0]["duts"]["dut2"]["mpps_mean"]
    assert list(rows[1]["duts"]) == ["dut1"]

    md = report.side_by_side_markdown(axes, rows, ["dut1", "dut2"], "Drop, two DUTs", {"dut1": ["kernel x"]})
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert table[0] == "| system | touch | size | cores | dut1 Mpps | dut2 Mpps | paper Mpps |"
    d1, d2 = rows[0]["duts"]["dut1"], rows[0]["duts"]["dut2"]
    assert table[1] == "| xdp drop | no_touch | 64 | 1 | %.3f ± 0.000 (dut, n=1) | %.3f ± 0.000 (dut, n=1) | - |" % (
        d1["mpps_mean"], d2["mpps_mean"])  # fmt: skip
    assert table[2].endswith("| - | - |")
    assert "Provenance of dut1:\n- kernel x" in md

    rows_csv = list(csv.DictReader(io.StringIO(report.side_by_side_csv(axes, rows, ["dut1", "dut2"]))))
    assert float(rows_csv[0]["dut2_mpps_mean"]) == d2["mpps_mean"] and rows_csv[1]["dut2_mpps_mean"] == ""
    assert rows_csv[0]["dut1_limit"] == "dut" and rows_csv[0]["dut1_repetitions"] == "1"


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        experiment_report.main()
    return json.loads(capsys.readouterr().out)


def test_module_writes_the_table_once_and_leaves_out_a_dut_without_records(tmp_path, capsys, monkeypatch):
    warned = []
    monkeypatch.setattr(experiment_report.AnsibleModule, "warn", lambda self, msg: warned.append(msg))
    args = {
        "side_by_side": {"dut1": os.path.join(FIXTURES, "dut1.jsonl"), "dut2": os.path.join(FIXTURES, "dut2.jsonl"),
                         "dut3": str(tmp_path / "no.jsonl")},
        "dest": str(tmp_path / "out"), "title": "Drop rate, side by side",
    }  # fmt: skip
    out = run_module(args, capsys)
    assert out["changed"] is True and out["trials"] == 2
    assert out["files"] == [str(tmp_path / "out" / "side_by_side.csv"), str(tmp_path / "out" / "side_by_side.md")]
    assert (tmp_path / "out" / "side_by_side.md").read_text() == out["markdown"]
    assert "| dut1 Mpps | dut2 Mpps |" in out["markdown"] and "dut3" not in out["markdown"]
    assert any("no trial records of dut3" in w for w in warned)
    assert run_module(args, capsys)["changed"] is False


def test_module_refuses_figures_with_side_by_side_and_needs_dest(tmp_path, capsys):
    both = {"side_by_side": {"dut1": os.path.join(FIXTURES, "dut1.jsonl")}}
    out = run_module(dict(both, dest=str(tmp_path), figures=[{"name": "f", "x": "cores", "y": "result.pps"}]), capsys)
    assert out["failed"] and "figures are drawn by each DUT's own report" in out["msg"]
    out = run_module(both, capsys)
    assert out["failed"] and "dest" in out["msg"]
    assert not os.listdir(tmp_path)

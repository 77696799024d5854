# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio rows of a report (issue 27): ours beside the paper's, from a fixture of records and the paper's CSVs."""

import csv
import io
import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _ratios as ratios
from ansible_collections.xdplab.testbed.plugins.module_utils import _report as report
from ansible_collections.xdplab.testbed.plugins.modules import experiment_report

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_DIR = os.path.join(HERE, "..", "..", "playbooks", "reference")


def reference(name):
    with open(os.path.join(REFERENCE_DIR, name)) as f:
        return f.read()


def rec(system, cores, pps, table="single", status="ok", **result):
    return {
        "trial_id": "%s-%s-%s-%s" % (system, table, cores, pps),
        "status": status,
        "point": {"system": system, "table": table, "cores": cores, "packet_len": 64},
        "result": dict({"pps": pps}, **result),
        "generator": {"offered_pps": 10e6},
        "loss": {"pct": 100.0 * (10e6 - pps) / 10e6, "limit": "dut", "lost_at": "dut_rx_ring", "offered_pps": 10e6},
    }


# routing-like: XDP and Linux by cores and table; medians 3.0e6 / 1.0e6 at 1 core (the outliers do not move them)
ROUTING = [
    rec("xdp_router", 1, 3.0e6), rec("xdp_router", 1, 3.2e6), rec("xdp_router", 1, 2.0e6),
    rec("linux_forward", 1, 1.0e6), rec("linux_forward", 1, 1.1e6), rec("linux_forward", 1, 0.5e6),
    rec("xdp_router", 2, 5.0e6), rec("linux_forward", 2, 2.5e6),
    rec("xdp_router", 3, 7.0e6),  # no Linux at 3 cores: no row
    rec("xdp_router", 1, 2.0e6, table="full"), rec("xdp_router", 1, 2.4e6, table="full"),
]  # fmt: skip
XDP_OVER_LINUX = {
    "name": "XDP / Linux",
    "numerator": {"match": {"system": "xdp_router", "table": "single"}},
    "denominator": {"match": {"system": "linux_forward", "table": "single"}},
    "per": ["cores"],
    "paper": {"file": "usecase_routing.csv", "numerator_column": "xdp_single_route_rx256_pps",
              "denominator_column": "linux_single_route_pps", "x": "cores"},
}  # fmt: skip


def test_ours_is_the_median_over_the_median_per_axis_value_and_the_paper_at_the_same_x():
    rows = ratios.ratio_rows(ROUTING, ratios.validate(XDP_OVER_LINUX), reference("usecase_routing.csv"))
    assert [r["per"] for r in rows] == [{"cores": 1}, {"cores": 2}]
    one, two = rows
    assert one["ours"] == pytest.approx(3.0) and one["numerator"] == 3.0e6 and one["denominator"] == 1.0e6
    assert (one["numerator_trials"], one["denominator_trials"]) == (3, 3)
    assert two["ours"] == pytest.approx(2.0)
    # the paper's ratio from usecase_routing.csv: XDP 5,356,000 over Linux 1,740,000 at one core
    assert one["paper"] == pytest.approx(5356000 / 1740000) and one["paper_numerator"] == 5356000.0
    assert two["paper"] == pytest.approx(10652000 / 3371000)


def test_full_over_single_and_a_ratio_without_per():
    spec = {"name": "full / single", "numerator": {"match": {"system": "xdp_router", "table": "full"}},
            "denominator": {"match": {"system": "xdp_router", "table": "single"}}, "per": ["cores"],
            "paper": {"file": "usecase_routing.csv", "numerator_column": "xdp_full_table_rx256_pps",
                      "denominator_column": "xdp_single_route_rx256_pps", "x": "cores"}}  # fmt: skip
    (row,) = ratios.ratio_rows(ROUTING, ratios.validate(spec), reference("usecase_routing.csv"))
    assert row["ours"] == pytest.approx(2.2e6 / 3.0e6)
    assert row["paper"] == pytest.approx(3446000 / 5356000)
    # no per: one row over every matching trial; the paper's at `at`
    spec = dict(spec, per=[], paper=dict(spec["paper"], at=1))
    (row,) = ratios.ratio_rows(ROUTING, ratios.validate(spec), reference("usecase_routing.csv"))
    assert row["at"] == "" and row["numerator_trials"] == 2 and row["denominator_trials"] == 5
    # the median of all five single-table XDP trials (2.0, 3.0, 3.2, 5.0, 7.0 Mpps) is 3.2 Mpps
    assert row["ours"] == pytest.approx(2.2e6 / 3.2e6) and row["paper"] == pytest.approx(3446000 / 5356000)


def ddos(system, attack_mpps, trans):
    out = rec(system, 1, 0.0, transactions_per_s=trans)
    out["point"].update(attack_mpps=attack_mpps)
    return out


def test_held_under_attack_over_the_one_baseline_with_a_scaled_x():
    records = [ddos("xdp_ddos_filter", 0, 30000.0), ddos("xdp_ddos_filter", 0, 32000.0), ddos("xdp_ddos_filter", 0, 31000.0),
               ddos("xdp_ddos_filter", 1, 27900.0), ddos("xdp_ddos_filter", 3, 15500.0),
               ddos("xdp_ddos_filter", 7, 0.0), ddos("none", 1, 100.0)]  # fmt: skip
    spec = {"name": "TCP_RR held (XDP)", "y": "result.transactions_per_s",
            "numerator": {"match": {"system": "xdp_ddos_filter"}},
            "denominator": {"match": {"system": "xdp_ddos_filter", "attack_mpps": 0}}, "per": ["attack_mpps"],
            "paper": {"file": "usecase_ddos.csv", "numerator_column": "xdp_tcp_rr_trans_per_s",
                      "denominator_column": "xdp_tcp_rr_trans_per_s", "x": "attack_pps", "x_scale": 1e-6,
                      "denominator_at": 0}}  # fmt: skip
    rows = ratios.ratio_rows(records, ratios.validate(spec), reference("usecase_ddos.csv"))
    assert [r["at"] for r in rows] == ["attack_mpps 0", "attack_mpps 1", "attack_mpps 3", "attack_mpps 7"]
    assert [r["denominator_trials"] for r in rows] == [3, 3, 3, 3]  # the one baseline under every row
    assert [r["ours"] for r in rows] == pytest.approx([1.0, 0.9, 0.5, 0.0])
    # the paper's: 32,234.6 at 1 Mpps and 30,630.2 at 3 Mpps over 34,524.7 at 0; it has no 7 Mpps row: empty
    assert rows[1]["paper"] == pytest.approx(32234.6 / 34524.7) and rows[2]["paper"] == pytest.approx(30630.2 / 34524.7)
    assert rows[3]["paper"] is None and rows[3]["paper_numerator"] is None


def test_markdown_says_why_and_csv_has_every_row():
    rows = ratios.ratio_rows(ROUTING, ratios.validate(XDP_OVER_LINUX), reference("usecase_routing.csv"))
    text = ratios.to_markdown(rows, skipped=["XDP / IPVS"])
    assert "Ratios are what compare across testbeds" in text
    assert "| XDP / Linux | cores 1 | 3.00 | 3.08 | 3 M / 1 M | 3 / 3 |" in text
    assert "Ratio XDP / IPVS: no trial matched both" in text
    table = list(csv.DictReader(io.StringIO(ratios.to_csv(rows))))
    assert [(r["ratio"], r["at"], r["ours"]) for r in table] == [
        ("XDP / Linux", "cores 1", "3.0"),
        ("XDP / Linux", "cores 2", "2.0"),
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"numerator": {"match": {"system": "a"}}, "denominator": {"match": {"system": "b"}}}, r"needs a name"),
        ({"name": "r", "denominator": {"match": {"system": "b"}}}, r"\(r\) needs numerator: \{match:"),
        ({"name": "r", "numerator": {"system": "a"}, "denominator": {"match": {"system": "b"}}}, r"needs numerator"),
        ({"name": "r", "numerator": {"match": {"system": "a"}}, "denominator": {"match": {"system": "b"}, "y": 1}},
         r"denominator takes only match"),
        ({"name": "r", "numerator": {"match": {"s": 1}}, "denominator": {"match": {"s": 2}}, "per": [1]}, r"per must be"),
        ({"name": "r", "numerator": {"match": {"s": 1}}, "denominator": {"match": {"s": 2}}, "paper": {"file": "f"}},
         r"paper needs numerator_column"),
        ({"name": "r", "numerator": {"match": {"s": 1}}, "denominator": {"match": {"s": 2}}, "per": ["cores"],
          "paper": {"file": "f", "numerator_column": "a", "denominator_column": "b", "x": "c", "axis": "z"}},
         r"paper.axis 'z' is not one of per"),
        ({"name": "r", "numerator": {"match": {"s": 1}}, "denominator": {"match": {"s": 2}}, "over": 1}, r"unknown key"),
    ],
)  # fmt: skip
def test_bad_specs_say_what_to_change(spec, message):
    with pytest.raises(ratios.RatioError, match=message):
        ratios.validate(spec)


def test_a_paper_column_that_does_not_exist_names_the_columns():
    spec = ratios.validate(dict(XDP_OVER_LINUX, paper=dict(XDP_OVER_LINUX["paper"], numerator_column="xdp_pps")))
    with pytest.raises(ratios.RatioError, match=r"usecase_routing.csv has no column 'xdp_pps' .*its columns: cores, linux"):
        ratios.ratio_rows(ROUTING, spec, reference("usecase_routing.csv"))


# -- the module: report.md's section, ratios.csv, and bad input before anything is written -------------------------
def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        experiment_report.main()
    return json.loads(capsys.readouterr().out)


def write_records(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_the_report_writes_the_ratio_section_and_csv(tmp_path, capsys):
    write_records(tmp_path / "trials.jsonl", ROUTING)
    out = run_module({"results": str(tmp_path / "trials.jsonl"), "reference_dir": REFERENCE_DIR,
                      "ratios": [XDP_OVER_LINUX, dict(XDP_OVER_LINUX, name="XDP / IPVS",
                                                      denominator={"match": {"system": "ipvs"}})]}, capsys)  # fmt: skip
    assert not out.get("failed"), out
    assert [(r["ratio"], r["at"]) for r in out["ratios"]] == [("XDP / Linux", "cores 1"), ("XDP / Linux", "cores 2")]
    md = (tmp_path / "report.md").read_text()
    assert "## Ratios: ours beside the paper's" in md and "| XDP / Linux | cores 2 | 2.00 | 3.16 |" in md
    assert "Ratio XDP / IPVS: no trial matched both" in md
    assert str(tmp_path / "ratios.csv") in out["files"]
    assert (tmp_path / "ratios.csv").read_text().splitlines()[0].startswith("ratio,at,ours,paper,")
    # the records' own report is unchanged by it (no ratios: no section, no ratios.csv)
    other = tmp_path / "plain"
    other.mkdir()
    write_records(other / "trials.jsonl", ROUTING)
    plain = run_module({"results": str(other / "trials.jsonl")}, capsys)
    assert plain["ratios"] == [] and "Ratios" not in plain["markdown"] and not (other / "ratios.csv").exists()
    assert plain["markdown"] == md.split("\n\n## Ratios")[0] + "\n"


def test_a_bad_ratio_fails_before_anything_is_written(tmp_path, capsys):
    write_records(tmp_path / "trials.jsonl", ROUTING)
    bad = dict(XDP_OVER_LINUX, paper=dict(XDP_OVER_LINUX["paper"], file="no_such.csv"))
    out = run_module({"results": str(tmp_path / "trials.jsonl"), "reference_dir": REFERENCE_DIR, "ratios": [bad]}, capsys)
    assert out["failed"] and "ratios[0] (XDP / Linux): cannot read" in out["msg"] and "no_such.csv" in out["msg"]
    assert not (tmp_path / "report.md").exists() and not (tmp_path / "ratios.csv").exists()


def test_fixture_records_load_as_the_report_reads_them(tmp_path):
    # the fixture goes through the report's own reader (legacy records without a schema key): nothing is dropped
    write_records(tmp_path / "trials.jsonl", ROUTING)
    records, warnings = report.load(str(tmp_path / "trials.jsonl"))
    assert warnings == [] and len(records) == len(ROUTING)

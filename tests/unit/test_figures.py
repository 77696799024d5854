"""The paper's figures from trial records (plugins/module_utils/_figures.py, experiment_report's figures option).

The records are fixtures (tests/unit/fixtures/report, see make_fixtures.py): real records of the virtual
lab with the systems, cores, loads and rates varied. Rendering runs the real gnuplot (Debian gnuplot-nox);
without it those tests are skipped, and the module's error for a missing gnuplot is tested.
"""

import json
import os
import shutil
import struct
import zlib

import pytest
from ansible.module_utils import _internal
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _figures as figures
from ansible_collections.xdplab.testbed.plugins.module_utils import _report as report
from ansible_collections.xdplab.testbed.plugins.modules import experiment_report

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "report")
REFERENCE_DIR = os.path.join(HERE, "..", "..", "playbooks", "reference")
GNUPLOT = shutil.which("gnuplot")
needs_gnuplot = pytest.mark.skipif(GNUPLOT is None, reason="gnuplot not installed (apt-get install gnuplot-nox)")

DROP_FIGURE = {
    "name": "paper_drop_mpps",
    "title": "Packet drop rate by number of DUT cores",
    "x": "point.cores",
    "y": "result.pps",
    "y_scale": 1e-6,
    "series": ["system", "touch"],
    "xlabel": "DUT cores",
    "ylabel": "Drop rate (Mpps)",
    "logscale": ["y"],
    "reference": {
        "file": "drop_vs_cores.csv",
        "x": "cores",
        "columns": {
            "XDP drop": {"column": "xdp_drop_pps", "match": {"system": "xdp", "touch": "no_touch"}},
            "DPDK rxonly": {"column": "dpdk_rxonly_pps", "match": {"system": "dpdk_vector"}},
            "Linux raw drop": {"column": "linux_raw_drop_pps", "match": {"system": "linux_raw"}},
        },
    },
}
CPU_FIGURE = {
    "name": "paper_drop_cpu_busy",
    "title": "DUT CPU usage by offered load",
    "x": "point.offered_mpps",
    "y": "result.cpu_busy",
    "series": ["system"],
    "xlabel": "Offered load (Mpps)",
    "ylabel": "CPU busy (%)",
    "logscale": ["x"],
    "yrange": [0, 105],
    "reference": {
        "file": "drop_cpu_usage.csv",
        "x": "offered_mpps",
        "columns": {
            "XDP drop": {"column": "xdp_cpu_busy_pct", "match": {"system": "xdp"}},
            "Linux drop": {"column": "linux_cpu_busy_pct", "match": {"system": "linux_raw"}},
        },
    },
}


def load(name):
    records, warnings = report.load(os.path.join(FIXTURES, name))
    assert warnings == []
    return records


def png_size(path):
    """(width, height) from a PNG's IHDR chunk, after checking the signature and the chunk's CRC."""
    with open(path, "rb") as f:
        data = f.read(33)
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    (crc,) = struct.unpack(">I", data[29:33])
    assert zlib.crc32(data[12:29]) == crc, "IHDR CRC mismatch"
    return struct.unpack(">II", data[16:24])


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        experiment_report.main()
    return json.loads(capsys.readouterr().out)


def blocks(text):
    """gnuplot index blocks of a data file: {comment of the block: [[numbers], ...]}."""
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith("# index "):
            current = out.setdefault(line.split(": ", 1)[1], [])
        elif line and not line.startswith("#") and current is not None:
            current.append([float(v) for v in line.split()])
    return out


# -- specs -----------------------------------------------------------------------------------------------------


def test_spec_defaults_and_errors():
    spec = figures.validate_spec({"name": "f", "x": "point.cores", "y": "result.pps"})
    assert spec["series"] == ["system"] and spec["width"] >= 1200 and spec["height"] >= 800 and spec["font_size"] >= 12
    assert spec["key"] == "below" and spec["errorbars"] is True
    bad = [
        ({"x": "point.cores", "y": "result.pps"}, "name must be a file name"),
        ({"name": "../f", "x": "point.cores", "y": "result.pps"}, "name must be a file name"),
        ({"name": "f", "y": "result.pps"}, "x must be a field path"),
        ({"name": "f", "x": "point.cores", "y": "result.pps", "colour": "red"}, "unknown keys \\['colour'\\]"),
        ({"name": "f", "x": "point.cores", "y": "result.pps", "width": 800}, "at least 1200x800"),
        ({"name": "f", "x": "point.cores", "y": "result.pps", "font_size": 9}, "at least 12"),
        ({"name": "f", "x": "point.cores", "y": "result.pps", "logscale": ["z"]}, "logscale must list axes"),
        ({"name": "f", "x": "point.cores", "y": "result.pps", "y_scale": 0}, "y_scale must be a non-zero number"),
        ({"name": "f", "x": "point.cores", "y": "result.pps", "reference": {"file": "a.csv"}}, "reference needs file"),
    ]
    for raw, message in bad:
        with pytest.raises(figures.SpecError, match=message):
            figures.validate_spec(raw)


def test_field_paths():
    rec = load("paper_drop.jsonl")[0]
    assert figures.field(rec, "point.cores") == 1
    assert figures.field(rec, "cores") == 1  # a bare name is a point field
    assert figures.field(rec, "result.per_cpu.0.cpu") == 1
    assert figures.field(rec, "result.nothing") is None


def test_paper_testbed_from_the_reference_readme():
    with open(os.path.join(REFERENCE_DIR, "README.md")) as f:
        short, long = figures.paper_testbed(f.read())
    assert short == "E5-1650 v4, ConnectX-5"
    assert long == "Xeon E5-1650 v4, ConnectX-5 Ex 100G, kernel bpf-next 4.17-rc7, DPDK 18.05"
    assert figures.paper_testbed("") == (None, None)


# -- series and reference ------------------------------------------------------------------------------------


def test_series_are_medians_with_min_max_and_labels_from_provenance():
    spec = figures.validate_spec(DROP_FIGURE)
    series = figures.our_series(load("paper_drop.jsonl"), spec)
    ids = [s["id"] for s in series]
    # the paper's order: XDP, DPDK, AF_XDP, Linux
    assert ids == ["xdp/no_touch", "xdp/read", "dpdk_scalar/no_touch", "dpdk_vector/no_touch", "af_xdp_copy/no_touch",
                   "linux_conntrack/no_touch", "linux_raw/no_touch"]  # fmt: skip
    xdp = series[0]
    assert xdp["label"] == "XDP, no_touch"  # touch varies within XDP: shown
    assert series[3]["label"] == "DPDK rxonly (vector RX)"  # not within DPDK: left out
    one, two = xdp["points"]
    assert (one["x"], one["n"]) == (1, 3)
    assert one["median"] == pytest.approx(5.6) and one["min"] == pytest.approx(5.376) and one["max"] == pytest.approx(5.88)
    assert two["median"] == pytest.approx(9.8)
    assert [p["x"] for p in series[3]["points"]] == [1]  # DPDK ran on one core only


def test_filter_keeps_matching_trials():
    spec = figures.validate_spec(dict(DROP_FIGURE, filter={"touch": "read", "cores": [2]}))
    series = figures.our_series(load("paper_drop.jsonl"), spec)
    assert [(s["id"], [p["x"] for p in s["points"]]) for s in series] == [("xdp/read", [2])]


def test_reference_series_and_colours_follow_the_matching_system():
    spec = figures.validate_spec(DROP_FIGURE)
    with open(os.path.join(REFERENCE_DIR, "drop_vs_cores.csv")) as f:
        fig = figures.build(load("paper_drop.jsonl"), spec, f.read(), ("E5-1650 v4, ConnectX-5", "Xeon E5-1650 v4"))
    refs = {r["label"]: r for r in fig.refs}
    xdp_ref = refs["paper: XDP drop (E5-1650 v4, ConnectX-5)"]
    assert xdp_ref["points"][0] == {"x": 1, "y": pytest.approx(23.863471)}
    assert len(xdp_ref["points"]) == 6 and len(refs["paper: DPDK rxonly (E5-1650 v4, ConnectX-5)"]["points"]) == 5
    by_id = {s["id"]: s for s in fig.series}
    assert xdp_ref["matched"] == "xdp/no_touch" and xdp_ref["colour"] == by_id["xdp/no_touch"]["colour"]
    assert refs["paper: DPDK rxonly (E5-1650 v4, ConnectX-5)"]["colour"] == by_id["dpdk_vector/no_touch"]["colour"]
    # distinct colours and markers for our series, one colour family per system implementation
    assert len({s["colour"] for s in fig.series}) == len(fig.series)
    assert len({s["point_type"] for s in fig.series}) == min(len(fig.series), len(figures.FILLED_POINTS))
    assert by_id["xdp/read"]["colour"] in figures.FAMILIES["xdp"]
    assert by_id["linux_conntrack/no_touch"]["colour"] in figures.FAMILIES["linux"]
    script = fig.files["paper_drop_mpps.gp"]
    assert "dt (8,5)" in script and "set logscale y" in script and "set xtics 1" in script
    assert "noenhanced" in script and 'font "DejaVu Sans,14"' in script
    assert fig.footnotes[0].startswith("ours: AMD EPYC, kernel 6.18.44-fc-v657")
    assert fig.footnotes[1] == "paper (dashed): Xeon E5-1650 v4"


def test_reference_errors_name_the_columns():
    spec = figures.validate_spec(dict(DROP_FIGURE, reference=dict(DROP_FIGURE["reference"], columns={"x": "nope_pps"})))
    with open(os.path.join(REFERENCE_DIR, "drop_vs_cores.csv")) as f:
        text = f.read()
    with pytest.raises(figures.SpecError, match="no column 'nope_pps'"):
        figures.build(load("paper_drop.jsonl"), spec, text)


def test_no_matching_trial_means_no_figure():
    spec = figures.validate_spec(dict(DROP_FIGURE, filter={"system": "nothing"}))
    assert figures.build(load("paper_drop.jsonl"), spec) is None


# -- the module ------------------------------------------------------------------------------------------------


def module_args(tmp_path, fixture, *specs, **extra):
    return dict(
        results=os.path.join(FIXTURES, fixture), dest=str(tmp_path), title="t", reference_dir=REFERENCE_DIR,
        figures=list(specs), **extra,
    )  # fmt: skip


@needs_gnuplot
def test_module_draws_the_drop_figure_and_is_idempotent(tmp_path, capsys):
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", DROP_FIGURE), capsys)
    assert res["changed"] is True, res
    png = str(tmp_path / "paper_drop_mpps.png")
    assert res["figures"] == [png]
    assert png_size(png) == (1400, 900)
    for name in ("paper_drop_mpps.gp", "paper_drop_mpps.dat", "paper_drop_mpps.ref.dat", "report.md", "report.csv"):
        assert str(tmp_path / name) in res["files"]
    data = blocks((tmp_path / "paper_drop_mpps.dat").read_text())
    assert data["xdp/no_touch (XDP, no_touch)"][0] == pytest.approx([1, 5.6, 5.376, 5.88, 3])
    assert data["linux_raw/no_touch (Linux (raw table drop))"][1] == pytest.approx([2, 2.4, 2.304, 2.52, 3])
    ref = blocks((tmp_path / "paper_drop_mpps.ref.dat").read_text())
    assert ref["column xdp_drop_pps (paper: XDP drop (E5-1650 v4, ConnectX-5))"][0] == pytest.approx([1, 23.8635])
    assert ref["column linux_raw_drop_pps (paper: Linux raw drop (E5-1650 v4, ConnectX-5))"][5] == pytest.approx([6, 29.4439])
    md = (tmp_path / "report.md").read_text()
    assert "![Packet drop rate by number of DUT cores](paper_drop_mpps.png)" in md
    assert "| XDP, no_touch | 1 | 5.600 | 5.376 | 5.880 | 3 |" in md
    assert "| paper: XDP drop (E5-1650 v4, ConnectX-5) | 1 | 23.863 | - | - | - |" in md
    assert "- **XDP, no_touch** (`xdp/no_touch`, 6 trials): limit dut (lost at dut_rx_ring) x6" in md
    assert "program xdp_bench_drop tag 639338302ed00df6, native mode" in md
    assert "DPDK 22.11.11" in md and "simd scalar" in md and "max_simd_bitwidth 64" in md
    assert "tools: bpftool 7.1.0, clang 14.0.6" in md
    assert "Testbeds: ours: AMD EPYC, kernel 6.18.44-fc-v657" in md
    # the table of the points is still there, with the rows of every system
    assert md.startswith("## t\n") and md.count("| dpdk_scalar drop | no_touch | 64 | 1 |") == 1
    # again: nothing changes, gnuplot is not run
    before = os.stat(png).st_mtime_ns
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", DROP_FIGURE), capsys)
    assert res["changed"] is False and os.stat(png).st_mtime_ns == before
    # a deleted PNG is drawn again from its (unchanged) script
    os.unlink(png)
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", DROP_FIGURE), capsys)
    assert res["changed"] is True and png_size(png) == (1400, 900)
    # the script redraws the figure by itself
    assert "set output \"paper_drop_mpps.png\"" in (tmp_path / "paper_drop_mpps.gp").read_text()


@needs_gnuplot
def test_module_draws_cpu_busy_by_offered_load(tmp_path, capsys):
    res = run_module(module_args(tmp_path, "paper_drop_cpu.jsonl", CPU_FIGURE, reference_label="E5-1650v4, ConnectX-5"), capsys)
    assert png_size(res["figures"][0]) == (1400, 900)
    data = blocks((tmp_path / "paper_drop_cpu_busy.dat").read_text())
    assert [row[0] for row in data["xdp (XDP)"]] == [0.25, 0.5, 1, 2, 3]
    assert data["xdp (XDP)"][0] == pytest.approx([0.25, 6.5, 6.305, 6.695, 2])
    assert data["linux_raw (Linux (raw table drop))"][4][1] == pytest.approx(98.5)
    ref = blocks((tmp_path / "paper_drop_cpu_busy.ref.dat").read_text())
    assert ref["column linux_cpu_busy_pct (paper: Linux drop (E5-1650v4, ConnectX-5))"][0] == pytest.approx([0.25, 21.0])
    details = res["figure_details"][0]
    assert [s["label"] for s in details["series"]] == ["XDP", "DPDK rxonly (vector RX)", "Linux (raw table drop)"]
    assert details["reference"][1]["matches"] == "linux_raw"
    md = (tmp_path / "report.md").read_text()
    # the table keeps the offered-load points apart and shows the CPU busy %
    assert "| target Mpps |" in md and "| CPU busy % |" in md
    linux = "- **Linux (raw table drop)** (`linux_raw`, 10 trials): limit "
    assert linux + "dut (lost at dut_rx_ring) x4, generator (DUT kept up) x6" in md
    script = (tmp_path / "paper_drop_cpu_busy.gp").read_text()
    assert "set logscale x" in script and "set xtics (0.25, 0.5, 1, 2, 3, 5, 10, 15, 20)" in script


@needs_gnuplot
def test_check_mode_writes_nothing(tmp_path, capsys):
    res = run_module(dict(module_args(tmp_path, "paper_drop.jsonl", DROP_FIGURE), _ansible_check_mode=True), capsys)
    assert res["changed"] is True and res["figures"] == [str(tmp_path / "paper_drop_mpps.png")]
    assert os.listdir(tmp_path) == []


def test_missing_gnuplot_fails_before_writing(tmp_path, capsys):
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", DROP_FIGURE, gnuplot="xdplab-no-such-gnuplot"), capsys)
    assert res["failed"] and "gnuplot-nox" in res["msg"] and "xdplab-no-such-gnuplot" in res["msg"]
    assert os.listdir(tmp_path) == []


def test_bad_spec_fails_before_writing(tmp_path, capsys):
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", dict(DROP_FIGURE, x=None)), capsys)
    assert res["failed"] and "x must be a field path" in res["msg"]
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", DROP_FIGURE, DROP_FIGURE), capsys)
    assert res["failed"] and "figure names must be unique" in res["msg"]
    assert os.listdir(tmp_path) == []


@needs_gnuplot
def test_missing_reference_file_is_a_clear_error(tmp_path, capsys):
    spec = dict(DROP_FIGURE, reference=dict(DROP_FIGURE["reference"], file="no_such.csv"))
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", spec), capsys)
    assert res["failed"] and "cannot read reference" in res["msg"] and "reference_dir" in res["msg"]


@needs_gnuplot
def test_figure_without_matching_trials_is_skipped_with_a_warning(tmp_path, capsys, monkeypatch):
    warned = []
    monkeypatch.setattr(experiment_report.AnsibleModule, "warn", lambda self, msg: warned.append(msg))
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", dict(DROP_FIGURE, filter={"system": "none"})), capsys)
    assert res["skipped_figures"] == ["paper_drop_mpps"] and res["figures"] == []
    assert [w for w in warned if w.startswith("figure paper_drop_mpps: no trial record")]
    assert "Not drawn (no trial matched): paper_drop_mpps" in (tmp_path / "report.md").read_text()


@needs_gnuplot
def test_other_sources_and_long_labels_widen_the_picture(tmp_path, capsys):
    spec = {
        "name": "dpdk_simd",
        "x": "point.cores",
        "y": "result.pps",
        "y_scale": 1e-6,
        "filter": {"system": ["dpdk_vector", "dpdk_scalar"]},
        "ylabel": "Mpps",
        "reference": {
            "file": "dpdk_simd_vs_cores.csv",
            "x": "rxqs_cores",
            "source": "seeds/000",
            "testbed": "DPDK 18.05 mlx5 PMD, ConnectX-5 Ex, Xeon E5-1650 v4",
            "columns": {"DPDK no-SSE RX": {"column": "dpdk_no_sse_pps", "match": {"system": "dpdk_scalar"}}},
        },
    }
    res = run_module(module_args(tmp_path, "paper_drop.jsonl", spec), capsys)
    label = "seeds/000: DPDK no-SSE RX (DPDK 18.05 mlx5 PMD, ConnectX-5 Ex, Xeon E5-1650 v4)"
    assert res["figure_details"][0]["reference"][0]["label"] == label
    assert res["figure_details"][0]["reference"][0]["matches"] == "dpdk_scalar"
    script = (tmp_path / "dpdk_simd.gp").read_text()
    assert "seeds/000 (dashed): DPDK 18.05 mlx5 PMD" in script
    # two legend columns of such labels do not fit in 1400 pixels: the picture is wider, as tall as asked
    width, height = png_size(res["figures"][0])
    assert width > 1400 and height == 900
    assert "size %d,%d" % (width, height) in script


def test_the_module_warns_of_a_corrupt_line_and_leaves_the_file_as_it_is(tmp_path, capsys, monkeypatch):
    # warnings go into the result as in a module process (a test that imported controller code flips it)
    monkeypatch.setattr(_internal, "is_controller", False)
    monkeypatch.setattr(ansible_warnings, "_global_warnings", {})
    with open(os.path.join(FIXTURES, "paper_drop.jsonl")) as f:
        lines = f.read().splitlines(keepends=True)
    lines[5] = lines[5][:90] + "\n"  # cut by a crash
    results = tmp_path / "trials.jsonl"
    results.write_text("".join(lines))
    before = results.read_bytes()
    res = run_module({"results": str(results), "title": "Drop"}, capsys)
    messages = [w["event"]["msg"] if isinstance(w, dict) else w for w in res["warnings"]]
    assert messages == [m for m in messages if m.startswith("%s:6: not valid JSON" % results)] and len(messages) == 1
    assert res["skipped_lines"] == 1 and res["trials"] == len(lines) - 1
    assert results.read_bytes() == before
    # the count-mode column: legacy XDP records were counted by the program
    md = (tmp_path / "report.md").read_text()
    assert "| count mode | limit | paper Mpps |" in md
    assert "count_mode" in (tmp_path / "report.csv").read_text().splitlines()[0]
    assert [r["count_mode"] for r in res["rows"] if r["system"] == "xdp"] == ["program"] * 4

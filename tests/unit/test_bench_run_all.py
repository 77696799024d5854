# SPDX-License-Identifier: GPL-3.0-or-later
"""benchmarks/run_all.py (make bench): every script runs to the end, an exceeded bound is reported, not an exit."""

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("run_all", os.path.join(ROOT, "benchmarks", "run_all.py"))
run_all = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(run_all)


def test_every_script_in_benchmarks_has_its_row():
    assert run_all.check_table() == []
    on_disk = run_all.scripts_on_disk()
    assert len(on_disk) >= 13 and set(on_disk) == set(run_all.SCRIPTS)


def test_the_scripts_with_a_bound_exit_bound_exceeded_for_it():
    """The scripts' own code says 3 where run_all reads 'bound exceeded' (a Python error or a shell failure is 1)."""
    bounded = sorted(n for n, s in run_all.SCRIPTS.items() if s.get("bound"))
    assert bounded == ["bpf_overhead.sh", "count_mode_overhead.py", "stats_accuracy.py"]
    with open(os.path.join(ROOT, "benchmarks", "bpf_overhead.sh")) as f:
        assert "exit (ovp > max) ? 3 : 0" in f.read()
    for name in ("count_mode_overhead.py", "stats_accuracy.py"):
        with open(os.path.join(ROOT, "benchmarks", name)) as f:
            text = f.read()
        assert "BOUND_EXCEEDED = 3" in text and "else BOUND_EXCEEDED" in text, name


@pytest.fixture
def fake_bench(tmp_path, monkeypatch):
    """A benchmarks/ of four small scripts: one within its bound, one above it, one that fails, one not run."""
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "a_ok.sh").write_text("echo 'figure a: 1.0 Mpps'\n")
    (bench / "b_bound.sh").write_text("echo 'overhead 18.5 %, limit 10 %' ; exit 3\n")
    (bench / "c_fails.sh").write_text("echo 'needs root' >&2; exit 3\n")  # 3 without a bound is a failure
    (bench / "d_needs.sh").write_text("echo never\n")
    scripts = {
        "a_ok.sh": {"argv": ["bash", "{script}"], "what": "a"},
        "b_bound.sh": {"argv": ["bash", "{script}"], "what": "b", "bound": "overhead <= 10 %"},
        "c_fails.sh": {"argv": ["bash", "{script}"], "what": "c"},
        "d_needs.sh": {"argv": ["bash", "{script}"], "what": "d", "needs": lambda: "no tree: build it first"},
    }
    monkeypatch.setattr(run_all, "HERE", str(bench))
    monkeypatch.setattr(run_all, "SCRIPTS", scripts)
    monkeypatch.setattr(run_all, "LOCK", str(tmp_path / "lab.lock"))
    return tmp_path / "results"


def one_run(results):
    (run_dir,) = (results / "bench").iterdir()
    return run_dir, json.loads((run_dir / "summary.json").read_text())


def test_every_script_runs_and_its_verdict_is_in_the_summary(fake_bench, capsys):
    rc = run_all.main(["run_all.py", "--results", str(fake_bench)])
    run_dir, summary = one_run(fake_bench)
    verdicts = {r["script"]: (r["verdict"], r["exit"]) for r in summary["scripts"]}
    assert verdicts == {"a_ok.sh": ("ok", 0), "b_bound.sh": ("bound exceeded", 3), "c_fails.sh": ("failed (exit 3)", 3),
                        "d_needs.sh": ("not run", None)}  # fmt: skip
    assert rc == 1  # c failed and d did not run
    assert (run_dir / "a_ok.txt").read_text().splitlines()[-1] == "figure a: 1.0 Mpps"
    assert "overhead 18.5 %, limit 10 %" in (run_dir / "b_bound.txt").read_text()
    assert "needs root" in (run_dir / "c_fails.txt").read_text()
    assert (run_dir / "d_needs.txt").read_text() == "not run: no tree: build it first\n"
    md = (run_dir / "summary.md").read_text()
    assert "| b_bound.sh | b | overhead <= 10 % | bound exceeded | 3 |" in md
    assert "| d_needs.sh | d | - | not run: no tree: build it first | - |" in md
    assert summary["environment"]["kernel"] and summary["environment"]["command"].startswith("run_all.py --results")
    out = capsys.readouterr().out
    assert "4 scripts: 1 ok, 1 bound exceeded (reported, not an error), 2 failed or not run" in out


def test_an_exceeded_bound_alone_exits_0(fake_bench):
    assert run_all.main(["run_all.py", "--results", str(fake_bench), "--only", "a_ok.sh,b_bound.sh"]) == 0
    _run_dir, summary = one_run(fake_bench)
    assert [r["verdict"] for r in summary["scripts"]] == ["ok", "bound exceeded"]


def test_a_script_without_a_row_is_refused_before_anything_runs(fake_bench, capsys):
    with open(os.path.join(run_all.HERE, "e_new.py"), "w"):
        pass
    assert run_all.main(["run_all.py", "--results", str(fake_bench)]) == 2
    assert "not in run_all.py's SCRIPTS (add a row: how it runs, its bound): e_new.py" in capsys.readouterr().err
    assert not fake_bench.exists()


def test_unknown_only_is_refused(fake_bench, capsys):
    assert run_all.main(["run_all.py", "--results", str(fake_bench), "--only", "nope.py"]) == 2
    assert "--only: no such script nope.py" in capsys.readouterr().err


def test_a_real_controller_only_script(tmp_path, monkeypatch):
    """ndr_replay.py (no lab, no root) through the runner: its table is its figure file."""
    monkeypatch.setattr(run_all, "LOCK", str(tmp_path / "lab.lock"))
    assert run_all.main(["run_all.py", "--results", str(tmp_path / "r"), "--only", "ndr_replay.py"]) == 0
    run_dir, summary = one_run(tmp_path / "r")
    assert summary["scripts"][0]["verdict"] == "ok"
    assert "| CSIT defaults (21 s sum) |" in (run_dir / "ndr_replay.txt").read_text()

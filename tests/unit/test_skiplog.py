# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/skiplog.py: what make test prints at its end about the tests it skipped, from real pytest runs."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "skiplog.py")

SOME_SKIP = """
import pytest

def test_runs():
    assert 1 + 1 == 2

@pytest.mark.skipif(True, reason="no cached kernel: make test-kernel-nobtf builds it")
def test_marked():
    pass

def test_skips_inside():
    pytest.skip("iperf3 missing")

@pytest.mark.xfail(reason="known bug 12")
def test_xfails():
    assert False
"""
MODULE_SKIP = """
import pytest
pytest.skip("whole module: needs root", allow_module_level=True)
"""


def pytest_run(tmp_path, skips_dir, files):
    tests = tmp_path / "t"
    tests.mkdir(exist_ok=True)
    for name, text in files.items():
        (tests / name).write_text(text)
    env = dict(os.environ, XDPLAB_SKIPS_DIR=str(skips_dir), PYTHONPATH=os.path.join(ROOT, "tests"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "skiplog", "-p", "no:cacheprovider", str(tests)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False)  # fmt: skip
    return proc


def report(skips_dir):
    return subprocess.run([sys.executable, SCRIPT, str(skips_dir)], capture_output=True, text=True, check=False)


def test_every_skip_is_named_with_its_reason(tmp_path):
    skips = tmp_path / "skips"
    proc = pytest_run(tmp_path, skips, {"test_a.py": SOME_SKIP, "test_b.py": MODULE_SKIP})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = report(skips)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "== skipped by make test's 1 pytest run(s) ==" in lines
    text = out.stdout
    assert "SKIPPED t/test_a.py::test_marked: no cached kernel: make test-kernel-nobtf builds it" in text
    assert "SKIPPED t/test_a.py::test_skips_inside: iperf3 missing (" in text
    assert "SKIPPED t/test_b.py: whole module: needs root" in text
    assert "XFAILED t/test_a.py::test_xfails: known bug 12" in text
    assert "test_runs" not in text
    assert lines[-1] == "3 skipped, 1 xfailed"


def test_two_runs_and_no_skip(tmp_path):
    skips = tmp_path / "skips"
    for _run in range(2):
        proc = pytest_run(tmp_path, skips, {"test_a.py": "def test_ok():\n    pass\n"})
        assert proc.returncode == 0, proc.stdout + proc.stderr
    out = report(skips)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-2:] == ["== skipped by make test's 2 pytest run(s) ==", "no test skipped"]


def test_no_run_logged_is_an_error_not_an_empty_list(tmp_path):
    out = report(tmp_path / "nothing")
    assert out.returncode != 0
    assert "no pytest run logged its skips" in out.stderr and "XDPLAB_SKIPS_DIR" in out.stderr

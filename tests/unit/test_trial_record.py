"""The module xdplab.testbed.trial_record: build the record, append it atomically, idempotent, check mode, diff.

The inputs are those of test_record.py: a measurement built from a real virtual-lab trial
(fixtures/report/base_record.json), a real cpu_usage result (fixtures/report/cpu_usage_vlab.json) and that
trial's generator summary. Every record the module writes is validated against docs/trial_record.schema.json.
"""

import copy
import json
import os
import signal
import sys
import time

import jsonschema
import pytest
from ansible.module_utils import _internal
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl, _measurement, _process, _report
from ansible_collections.xdplab.testbed.plugins.modules import trial_record

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "report")
with open(os.path.join(HERE, "..", "..", "docs", "trial_record.schema.json")) as _f:
    VALIDATOR = jsonschema.Draft202012Validator(json.load(_f))
with open(os.path.join(FIXTURES, "base_record.json")) as _f:
    BASE = json.load(_f)
with open(os.path.join(FIXTURES, "cpu_usage_vlab.json")) as _f:
    CPU = json.load(_f)


@pytest.fixture(autouse=True)
def module_side(monkeypatch):
    """Warnings go into the module's result, as in a module process (a test that imported controller code flips it)."""
    monkeypatch.setattr(_internal, "is_controller", False)
    monkeypatch.setattr(ansible_warnings, "_global_warnings", {})


def valid(rec):
    errors = list(VALIDATOR.iter_errors(rec))
    assert not errors, "\n".join("%s: %s" % ("/".join(map(str, e.path)), e.message) for e in errors)
    return rec


def measurement():
    res = BASE["result"]
    return _measurement.measurement(
        res["pps"],
        _measurement.window_of(res["window"]["start"], res["window"]["end"]),
        {"kind": "program_map", "at": "dut", "count_mode": "program"},
        per_cpu=res["per_cpu"],
        per_rxq=res["per_rxq"],
        samples=[{"t": i + 1.0, "seconds": 1.0, "packets": int(p), "pps": p} for i, p in enumerate(res["samples_pps"])],
        imbalance=res["imbalance"],
    )


def args(path, **kw):
    out = {
        "path": str(path),
        "experiment": "paper_drop",
        "trial": {"trial_id": BASE["trial_id"], "point": BASE["point"], "repetition": 1, "index": 1, "total": 3},
        "status": "ok",
        "started_at": "2026-11-30T17:15:00Z",
        "measurement": measurement(),
        "cpu": CPU,
        "generator": BASE["generator"],
        "provenance": dict(BASE["provenance"]),
    }
    out.update(kw)
    return out


FAILED = {
    "status": "failed",
    "measurement": None,
    "cpu": None,
    "failure": {
        "task": "Stop the generator and read what it sent",
        "error": "xdplab-trafficgen was killed by signal 9 (SIGKILL)",
        "process": {"pid": 4242, "exit_status": None, "signal": 9, "signal_name": "SIGKILL", "stderr_tail": ""},
    },
}


def run(module_args, capsys, check=False, diff=False):
    module_args = dict(module_args)
    if check:
        module_args["_ansible_check_mode"] = True
    if diff:
        module_args["_ansible_diff"] = True
    with patch_module_args(module_args), pytest.raises(SystemExit):
        trial_record.main()
    return json.loads(capsys.readouterr().out)


def lines_of(path):
    with open(path) as f:
        return f.read().splitlines()


def test_records_once_and_is_idempotent(tmp_path, capsys):
    path = tmp_path / "paper_drop" / "dut" / "trials.jsonl"
    first = run(args(path), capsys)
    assert first["changed"] is True and first["line"] == 1
    (line,) = lines_of(path)
    rec = valid(json.loads(line))
    assert rec == first["record"]
    assert rec["schema"] == 1 and rec["loss"]["limit"] == "dut" and rec["provenance"]["measurement"]["count_mode"] == "program"
    assert (os.stat(path).st_mode & 0o777) == 0o644
    again = run(args(path), capsys)
    assert again["changed"] is False and again["record"] == rec and again["line"] == 1
    assert len(lines_of(path)) == 1


def test_a_failed_trial_then_its_retry(tmp_path, capsys):
    path = tmp_path / "trials.jsonl"
    failed = run(args(path, **FAILED), capsys)
    assert failed["changed"] is True
    assert valid(failed["record"])["failure"]["process"]["signal_name"] == "SIGKILL"
    assert run(args(path, **FAILED), capsys)["changed"] is False
    # the same trial failing again on a re-run (another start) keeps both attempts' errors
    again = run(args(path, **dict(FAILED, started_at="2026-11-30T18:00:00Z")), capsys)
    assert again["changed"] is True and again["line"] == 2
    # the re-run measured: a new line, the failed one stays
    ok = run(args(path), capsys)
    assert ok["changed"] is True and ok["line"] == 3
    recs = [valid(json.loads(x)) for x in lines_of(path)]
    assert [r["status"] for r in recs] == ["failed", "failed", "ok"]
    # the report reads the ok one only
    records, warnings = _report.load(str(path))
    assert len(records) == 1 and warnings == []


def test_check_mode_and_diff_write_nothing(tmp_path, capsys):
    path = tmp_path / "sub" / "trials.jsonl"
    result = run(args(path), capsys, check=True, diff=True)
    assert result["changed"] is True and result["line"] == 1
    assert not path.exists() and not path.parent.exists()
    assert result["diff"]["before"] == ""
    assert valid(json.loads(result["diff"]["after"]))["trial_id"] == BASE["trial_id"]
    written = run(args(path), capsys, diff=True)
    assert json.loads(written["diff"]["after"])["trial_id"] == BASE["trial_id"]
    result = run(args(path), capsys, check=True, diff=True)
    assert result["changed"] is False and "diff" not in result


def test_a_cut_last_line_is_kept_and_the_record_starts_on_its_own_line(tmp_path, capsys):
    path = tmp_path / "trials.jsonl"
    with open(os.path.join(FIXTURES, "paper_drop.jsonl")) as f:
        lines = f.read().splitlines()
    cut = lines[1][:70]  # a crash cut the second record while writing it
    path.write_text(lines[0] + "\n" + cut)
    result = run(args(path), capsys)
    assert result["changed"] is True and result["line"] == 3
    # ansible-core 2.19 returns warnings as {"event": {"msg": ...}} summaries
    messages = [w["event"]["msg"] if isinstance(w, dict) else w for w in result["warnings"]]
    assert len(messages) == 1 and messages[0].startswith("%s:2: not valid JSON" % path), messages
    assert lines_of(path)[:2] == [lines[0], cut]
    valid(json.loads(lines_of(path)[2]))
    # the corrupt line keeps its warning, the report reads the two records
    records, warnings = _report.load(str(path))
    assert len(records) == 2 and [(w.line, w.kind) for w in warnings] == [(2, _jsonl.CORRUPT)]


def test_a_driver_count_mode_trial_that_hit_the_line_rate(tmp_path, capsys):
    path = tmp_path / "trials.jsonl"
    meas = measurement()
    meas["source"] = {"kind": "driver_counters", "at": "dut", "count_mode": "driver"}
    gen = copy.deepcopy(BASE["generator"])
    gen["offered_pps"] = meas["pps"]
    result = run(args(path, measurement=meas, generator=gen, link_speed_gbit=3.5), capsys)
    rec = valid(result["record"])
    assert rec["loss"]["limit"] == "line rate" and rec["loss"]["link_speed_gbit"] == 3.5
    rows = _report.aggregate(_report.load(str(path))[0])
    assert rows[0]["limit"] == "line rate" and rows[0]["count_mode"] == "driver"


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"measurement": None}, "trial_record: status ok needs measurement"),
        ({"generator": {"sent": 1}}, "offered_pps"),
        ({"status": "failed"}, "status is failed but all of the following are missing: failure"),
        ({"trial": {"trial_id": "x", "point": {"system": "xdp"}, "repetition": "two"}}, "repetition must be a whole number"),
    ],
)
def test_bad_inputs_fail_naming_the_field(tmp_path, capsys, kw, message):
    path = tmp_path / "trials.jsonl"
    result = run(args(path, **kw), capsys)
    assert result["failed"] is True and message in result["msg"]
    assert not path.exists()


def test_a_process_killed_mid_trial_is_recorded_with_its_signal_and_stderr(tmp_path, capsys):
    # a real process through the one process helper (contract 4): it writes to stderr, is killed by SIGKILL
    proc = _process.Process(str(tmp_path / "run"), "gen", kind="generator")
    code = "import sys, time; sys.stderr.write('sending on veth-tg0\\n'); sys.stderr.flush(); time.sleep(60)"
    state = proc.start([sys.executable, "-c", code])
    time.sleep(0.3)
    assert proc.send(signal.SIGKILL, state) and proc.wait(5.0, state)
    info = proc.exit(state, wait=5.0)
    process = _process.process_result(info)
    assert process["signal"] == 9 and process["signal_name"] == "SIGKILL"
    error = _process.failure_message("the generator (pid %d)" % process["pid"], info)
    failure = {"task": "Stop the generator and read what it sent", "error": error, "process": process}
    path = tmp_path / "trials.jsonl"
    rec = valid(run(args(path, status="failed", measurement=None, cpu=None, failure=failure), capsys)["record"])
    assert rec["failure"]["process"] == process
    assert "killed by signal 9 (SIGKILL)" in rec["failure"]["error"]
    assert rec["failure"]["process"]["stderr_tail"] == "sending on veth-tg0"

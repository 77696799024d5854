"""The one JSON-lines reader (plugins/module_utils/_jsonl.py) and its users.

Texts: the report fixtures (real records of the virtual lab, fixtures/report) and the real stdout of an
xdplab-xsk-bench run stopped by a signal (fixtures/xsk_bench/rxdrop_killed.jsonl); the corrupt and cut lines
are those texts cut where a crash or a kill would cut them.
"""

import hashlib
import os

import pytest
from ansible_collections.xdplab.testbed.plugins.filter import experiment
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl, _process

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = os.path.join(HERE, "fixtures", "report", "paper_drop.jsonl")
KILLED = os.path.join(HERE, "fixtures", "xsk_bench", "rxdrop_killed.jsonl")


def text_of(path):
    with open(path) as f:
        return f.read()


def test_a_records_file_is_read_whole():
    records, warnings = _jsonl.read(RECORDS)
    assert warnings == []
    assert len(records) == len(text_of(RECORDS).splitlines()) == 36
    assert all(isinstance(r, dict) and r["trial_id"] for r in records)


def test_a_corrupt_line_is_a_warning_naming_file_and_line_and_the_file_is_untouched(tmp_path):
    lines = text_of(RECORDS).splitlines(keepends=True)
    # line 3 cut by a crash in the middle, line 5 is not an object, line 6 is blank
    lines[2] = lines[2][:100] + "\n"
    lines[4] = "[1, 2]\n"
    lines.insert(5, "\n")
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(lines))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    numbered, warnings = _jsonl.read_numbered(str(path))
    assert [w.line for w in warnings] == [3, 5]
    assert [w.kind for w in warnings] == [_jsonl.CORRUPT, _jsonl.NOT_AN_OBJECT]
    assert all(w.corrupt for w in warnings)
    assert str(warnings[0]).startswith("%s:3: not valid JSON (" % path)
    assert "left as it is, not read" in str(warnings[0])
    assert str(warnings[1]) == "%s:5: a JSON list, not an object: left as it is, not read" % path
    assert [n for n, _r in numbered][:4] == [1, 2, 4, 7]
    assert len(numbered) == 36 - 2
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_a_cut_last_line_of_a_records_file_is_corrupt():
    text = text_of(RECORDS)
    records, warnings = _jsonl.parse(text[: len(text) - 40], "trials.jsonl")
    assert len(records) == 35
    assert [(w.line, w.kind) for w in warnings] == [(36, _jsonl.CORRUPT)]


def test_a_process_stdout_cut_by_a_kill_is_not_corruption():
    text = text_of(KILLED)
    full, warnings = _jsonl.parse(text, KILLED, stream=True)
    assert warnings == [] and full[0]["type"] == "start"
    cut = text.rstrip("\n")
    cut = cut[: len(cut) - 30]  # killed in the middle of writing its last record
    records, warnings = _jsonl.parse(cut, "xsk.out", stream=True)
    assert records == full[:-1]
    (warning,) = warnings
    assert warning.kind == _jsonl.CUT and not warning.corrupt
    last = len(text.splitlines())
    assert str(warning).startswith("xsk.out:%d: last line cut short (the process was stopped while writing it)" % last)


def test_process_stdout_skips_other_output_but_not_a_broken_line_in_the_middle():
    text = 'libbpf: loading\n{"type": "start"}\n{"type": "int\n{"type": "summary"}\n'
    records, warnings = _jsonl.parse(text, "gen.out", stream=True)
    assert [r["type"] for r in records] == ["start", "summary"]
    assert [(w.line, w.kind) for w in warnings] == [(3, _jsonl.CORRUPT)]
    # the same text as a records file: the libbpf line is corrupt too
    _records, warnings = _jsonl.parse(text, "trials.jsonl")
    assert [w.line for w in warnings] == [1, 3]


def test_json_records_of_a_process_uses_the_reader_and_can_hand_back_its_warnings():
    text = text_of(KILLED)
    assert _process.json_records(text) == _jsonl.parse(text, stream=True)[0]
    warnings = []
    records = _process.json_records(text[:-20], warnings, "xsk.out")
    assert len(records) == len(text.splitlines()) - 1
    assert [w.kind for w in warnings] == [_jsonl.CUT]


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        _jsonl.read("/nonexistent/trials.jsonl")
    assert _jsonl.read("/nonexistent/trials.jsonl", missing_ok=True) == ([], [])


def test_done_trial_ids_reads_with_the_reader_and_warns(monkeypatch):
    shown = []
    monkeypatch.setattr(experiment.display, "warning", shown.append)
    text = '{"trial_id": "a", "status": "ok"}\n{"trial_id": "b", "stat\n{"trial_id": "c"}\n'
    text += '{"trial_id": "d", "status": "failed"}\n'
    assert experiment.done_trial_ids(text, "results/x/trials.jsonl") == ["a", "c"]
    assert len(shown) == 1 and shown[0].startswith("done_trial_ids: results/x/trials.jsonl:2: not valid JSON")
    assert shown[0].endswith("(that trial, if it was one, runs again)")


def test_resume_from_a_file_with_a_corrupt_line_retries_that_trial(monkeypatch):
    shown = []
    monkeypatch.setattr(experiment.display, "warning", shown.append)
    matrix = {"system": ["xdp"], "cores": [1, 2]}
    first, second = experiment.experiment_trials(matrix, 1)
    text = '{"trial_id": "%s", "status": "ok"}\n{"trial_id": "%s", "status": "o' % (first["trial_id"], second["trial_id"])
    pending = experiment.experiment_trials(matrix, 1, done=text, source="results/e/dut/trials.jsonl")
    assert [t["trial_id"] for t in pending] == [second["trial_id"]]
    assert len(shown) == 1 and "results/e/dut/trials.jsonl:2: not valid JSON" in shown[0]


def test_a_process_run_hands_back_the_warnings_of_its_stdout(tmp_path):
    proc = _process.Process(str(tmp_path), "gen", kind="generator")
    with open(KILLED) as f:
        text = f.read()
    with open(proc.out_path, "w") as f:
        f.write(text[:-25])  # killed while writing its last record
    warnings = []
    records = proc.json_lines(warnings)
    assert len(records) == len(text.splitlines()) - 1
    assert [(w.source, w.kind) for w in warnings] == [(proc.out_path, _jsonl.CUT)]
    assert proc.json_lines() == records

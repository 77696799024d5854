"""A forwarding trial whose far side got nothing back (h35v, issue 25's leftover): the trial runner's phases
(plugins/plugin_utils/_trial.py) fail the record phase with the verdict, and the rescue's phase ``failed`` records it
with status failed, its verdict, measurement and forwarding section; a trial whose frames came back is recorded ok.

Inputs: the real paper_forward record of linux_forward on the 2-CPU virtual lab (fixtures/report/forward_vlab_2cpu.jsonl,
commit bf4ca8e); the broken trial is that record with its far side's count zeroed (constructed). The phases run with
the play's variables as task_vars and write a real trials.jsonl in a temporary directory.
"""

import copy
import json
import os

import jsonschema
import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _record
from ansible_collections.xdplab.testbed.plugins.modules import experiment_report
from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PhaseFailure, Phases

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "..", "docs", "trial_record.schema.json")) as _f:
    VALIDATOR = jsonschema.Draft202012Validator(json.load(_f))
with open(os.path.join(HERE, "fixtures", "report", "forward_vlab_2cpu.jsonl")) as _f:
    FORWARD = {r["point"]["system"]: r for r in map(json.loads, _f)}


class Templar:
    @staticmethod
    def template(value):
        return value


class Action:
    _templar = Templar()


def trial_state(rec, received_pps):
    """The state a forwarding trial's stop phase has: the trial's values, its measurement (the far side's, with the
    forwarding section in its details) and the generator's stopped summary."""
    fwd = copy.deepcopy(rec["forwarding"])
    fwd["received_pps"], fwd["received_packets"] = received_pps, int(received_pps * 5)
    measurement = copy.deepcopy(rec["result"])
    for key in ("cpu_busy", "cpu", "cpu_usage", "cpu_foreign"):
        measurement.pop(key, None)
    measurement["pps"] = received_pps
    measurement["details"] = dict(measurement.get("details") or {}, forwarding=fwd)
    trial = {"id": rec["trial_id"], "record": {"trial_id": rec["trial_id"], "point": rec["point"], "repetition": 1},
             "started_at": rec["started_at"], "system": {"name": "linux_forward"}}  # fmt: skip
    with open(os.path.join(HERE, "fixtures", "report", "cpu_usage_vlab.json")) as f:
        cpu = json.load(f)  # a real cpu_usage result of this machine
    return {"trial": trial, "measured": {"measurement": measurement}, "cpu": cpu,
            "generator": {"summary": copy.deepcopy(rec["generator"])}}  # fmt: skip


def phases(tmp_path, state, **more):
    rec = FORWARD["linux_forward"]
    task_vars = {
        "__experiment_state": state,
        "__experiment_records": str(tmp_path / "trials.jsonl"),
        "experiment_name": "paper_forward",
        "__experiment_planned": {"trial_id": rec["trial_id"], "point": rec["point"], "repetition": 1},
        # the run's provenance, as the record's
        "__experiment_dut_provenance": rec["provenance"]["dut"],
        "__experiment_gen_provenance": rec["provenance"]["generator"],
        "__experiment_timing": rec["provenance"]["trial"],
        "__experiment_controller": rec["provenance"]["controller"],
        **more,
    }
    return Phases(Action(), task_vars)


def records(tmp_path):
    with open(tmp_path / "trials.jsonl") as f:
        return [json.loads(line) for line in f]


def test_a_trial_that_came_back_passes_the_check(tmp_path):
    rec = FORWARD["linux_forward"]
    state = trial_state(rec, rec["forwarding"]["received_pps"])
    # no exception: the record phase goes on to write the ok record as before
    assert Phases.forwarded_check(state["measured"]["measurement"], state["generator"]["summary"]) is None
    # a measurement without a forwarding section (a drop or DoS trial) is not checked, whatever it counted
    drop = dict(state["measured"]["measurement"], pps=0.0, details={})
    assert Phases.forwarded_check(drop, state["generator"]["summary"]) is None


def test_a_trial_whose_far_side_got_nothing_is_recorded_failed_with_its_verdict(tmp_path):
    rec = FORWARD["linux_forward"]
    state = trial_state(rec, 0.0)
    with pytest.raises(PhaseFailure) as raised:
        Phases.forwarded_check(state["measured"]["measurement"], state["generator"]["summary"])
    failure = raised.value.result
    assert failure["failed"] and failure["verdict"]["stopped_at"] == _record.STOPPED_AFTER_DUT
    assert failure["msg"].startswith("nothing came back: the generator offered 1702759 pps and the far side received 0 pps")
    # the action plugin's failed result: the verdict and the trial's state (trial.yml's rescue reads both)
    failed_result = dict(state, failed=True, msg=failure["msg"], verdict=failure["verdict"])
    ph = phases(
        tmp_path,
        failed_result,
        ansible_failed_result=failed_result,
        __experiment_failure={"task": "Stop the generator, read what it sent and record the trial", "error": failure["msg"],
                              "process": None},
    )  # fmt: skip
    ph.failed()
    (written,) = records(tmp_path)
    errors = [e.message for e in VALIDATOR.iter_errors(written)]
    assert not errors, errors
    assert written["status"] == "failed" and "loss" not in written
    assert written["failure"]["verdict"] == failure["verdict"] and written["failure"]["error"] == failure["msg"]
    assert written["forwarding"]["received_pps"] == 0.0 and written["forwarding"]["dut"] == rec["forwarding"]["dut"]
    assert written["generator"]["offered_pps"] == rec["generator"]["offered_pps"]
    assert written["result"]["cpu"] == failed_result["cpu"]["per_cpu"] and written["result"]["cpu_busy"] is not None
    # another failure (no verdict) is recorded as before: no measurement, the partial summary only
    other = tmp_path / "other"
    other.mkdir()
    plain = dict(state, failed=True, msg="the generator died")
    phases(other, plain, ansible_failed_result=plain,
           __experiment_failure={"task": "Stop", "error": "the generator died", "process": None}).failed()  # fmt: skip
    (written,) = records(other)
    assert "verdict" not in written["failure"] and "result" not in written and "forwarding" not in written


def report(tmp_path, lines, capsys):
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    args = {"results": str(path), "dest": str(tmp_path / "report"), "title": "paper_forward"}
    with patch_module_args(args), pytest.raises(SystemExit):
        experiment_report.main()
    return json.loads(capsys.readouterr().out)


def test_the_report_names_a_trial_that_was_not_a_rate_and_leaves_it_out_of_the_table(tmp_path, capsys):
    rec = FORWARD["linux_forward"]
    state = trial_state(rec, 0.0)
    with pytest.raises(PhaseFailure) as raised:
        Phases.forwarded_check(state["measured"]["measurement"], state["generator"]["summary"])
    failed_result = dict(state, failed=True, msg=raised.value.result["msg"], verdict=raised.value.result["verdict"])
    made = tmp_path / "made"
    made.mkdir()
    phases(made, failed_result, ansible_failed_result=failed_result,
           __experiment_failure={"task": "Stop", "error": raised.value.result["msg"], "process": None}).failed()  # fmt: skip
    (failed,) = records(made)
    other = FORWARD["xdp_tx"]
    # the normal report: the two real records, no section
    (tmp_path / "a").mkdir()
    normal = report(tmp_path / "a", [rec, other], capsys)
    assert normal["trials"] == 2 and normal["not_measured"] == []
    assert "not a rate" not in normal["markdown"]
    # with the failed trial of another point beside them: named in its own section, the table as before
    failed["trial_id"], failed["point"] = "other", dict(rec["point"], cores=2)
    (tmp_path / "b").mkdir()
    out = report(tmp_path / "b", [rec, failed, other], capsys)
    assert out["trials"] == 2 and out["rows"] == normal["rows"]
    assert [(m["trial_id"], m["point"]["cores"]) for m in out["not_measured"]] == [("other", 2)]
    assert out["not_measured"][0]["error"].startswith("nothing came back")
    section = out["markdown"].split("### Trials that were not a rate", 1)[1]
    assert "| linux_forward | %s | 2 | 1 | 1.703 | 0 |" % rec["point"]["packet_len"] in section
    assert "after_dut: after the DUT: it sent the frames and the generator's receive ports counted none" in section
    # a re-run that measured it (an ok record of the same trial later in the file): no longer named
    measured = dict(copy.deepcopy(rec), trial_id="other", point=failed["point"])
    (tmp_path / "c").mkdir()
    out = report(tmp_path / "c", [rec, failed, other, measured], capsys)
    assert out["not_measured"] == [] and "not a rate" not in out["markdown"]


def test_no_recorded_trial_of_docs_results_would_have_been_a_verdict():
    """The rule against every real record in docs/results: the forwarding trials (paper_forward, paper_routing, paper_lb,
    paper_latency) all came back above the share, and the drop and DoS trials (the flood to a closed port returns
    nothing by design) have no forwarding section to check."""
    results = os.path.join(HERE, "..", "..", "docs", "results")
    checked, unchecked = 0, set()
    for directory, _dirs, files in os.walk(results):
        if "trials.jsonl" not in files:
            continue
        with open(os.path.join(directory, "trials.jsonl")) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("status") != "ok":
                    continue
                if "forwarding" not in rec:
                    unchecked.add(rec["experiment"])
                    continue
                verdict = _record.nothing_forwarded(rec["forwarding"], rec["generator"], rec["result"]["window"])
                assert verdict is None, (directory, rec["point"], verdict)
                checked += 1
    assert checked >= 60, checked
    assert {"paper_ddos", "paper_drop"} <= unchecked, unchecked

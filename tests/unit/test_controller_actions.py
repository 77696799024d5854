"""The action plugins of the controller-side modules (plugins/action, plugin_utils/_on_controller.py).

trial_record and ndr_pdr_search run in Ansible's worker process when their task runs on the controller, and as a
module process anywhere else (here: become, method su, root to root). Both paths are run through ansible-playbook on
the same inputs (test_trial_record.py's real virtual-lab record parts): the same record in the file, the same
idempotency, check mode and diff, the same argument-spec errors; Ansible names which ran: a failure of the
in-process path is an "Action failed", of the module process a "Module failed".
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.dirname(os.path.dirname(HERE))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")

import test_trial_record as recdata  # the record inputs of the module's own tests


def play(tmp_path, tasks, become, *flags):
    """Run the tasks on localhost; returns ({task name: result}, the run's output)."""
    for task in tasks:
        task.update(register="r_" + task["name"], ignore_errors=True, become=become, become_method="ansible.builtin.su")
    dump = [{"name": "results", "check_mode": False, "ansible.builtin.copy": {
        "dest": str(tmp_path / "results.json"), "mode": "0644",
        "content": "{{ {%s} | to_json }}" % ", ".join("'%s': r_%s" % (t["name"], t["name"]) for t in tasks)}}]  # fmt: skip
    book = tmp_path / "play.yml"
    book.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks + dump}]))
    cmd = [PLAYBOOK, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable, str(book)]
    res = subprocess.run(cmd + list(flags), cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=120)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    return json.loads((tmp_path / "results.json").read_text()), " ".join(res.stdout.split())


def record_task(name, path, **kw):
    return {"name": name, "xdplab.testbed.trial_record": recdata.args(path, **kw)}


@pytest.mark.parametrize("become", [False, True], ids=["in_process", "module_process"])
def test_trial_record_the_same_on_both_paths(become, tmp_path):
    path = tmp_path / "trials.jsonl"
    tasks = [record_task("first", path), record_task("again", path),
             {"name": "bad", "xdplab.testbed.trial_record": dict(recdata.args(path), status="failed")}]  # fmt: skip
    out, log = play(tmp_path, tasks, become, "--diff")
    first, again, bad = out["first"], out["again"], out["bad"]
    assert first["changed"] is True and first["line"] == 1 and "diff" in first
    (line,) = path.read_text().splitlines()
    assert recdata.valid(json.loads(line)) == first["record"]
    assert again["changed"] is False and again["line"] == 1 and again["record"] == first["record"]
    assert bad["failed"] is True and "status is failed but all of the following are missing: failure" in bad["msg"]
    assert ("Module failed: status is failed" if become else "Action failed: status is failed") in log


@pytest.mark.parametrize("become", [False, True], ids=["in_process", "module_process"])
def test_trial_record_check_mode_writes_nothing(become, tmp_path):
    path = tmp_path / "trials.jsonl"
    out, _log = play(tmp_path, [record_task("first", path)], become, "--check")
    assert out["first"]["changed"] is True and out["first"]["record"]["trial_id"] == recdata.BASE["trial_id"]
    assert not path.exists()


@pytest.mark.parametrize("become", [False, True], ids=["in_process", "module_process"])
def test_ndr_pdr_search_the_same_on_both_paths(become, tmp_path):
    task = {"name": "step", "xdplab.testbed.ndr_pdr_search": {
        "records": str(tmp_path / "trials.jsonl"), "search": 1, "point": {"system": "xdp"}, "ceiling_pps": 200000,
        "max_load_pps": 160000, "min_load_pps": 10000}}  # fmt: skip
    out, _log = play(tmp_path, [task], become)
    out = out["step"]
    # no trial recorded yet: MLRsearch's first trial, at the search's highest load
    assert out["done"] is False and out["next"]["step"] == 1 and out["next"]["load_pps"] == pytest.approx(160000)
    # what the search runs between, in every step (RETURN: returned on success)
    assert out["ceiling_pps"] == pytest.approx(200000) and out["max_load_pps"] == pytest.approx(160000)
    assert not (tmp_path / "trials.jsonl").exists()


def test_become_from_the_inventory_runs_the_module_process(tmp_path):
    path = tmp_path / "trials.jsonl"
    tasks = [{"name": "bad", "xdplab.testbed.trial_record": dict(recdata.args(path), status="failed")}]
    out, log = play(tmp_path, tasks, False, "-e", "ansible_become=true", "-e", "ansible_become_method=ansible.builtin.su")
    assert out["bad"]["failed"] is True and "Module failed: status is failed" in log


@pytest.mark.parametrize("become", [False, True], ids=["in_process", "module_process"])
def test_cpu_usage_between_two_snapshots_the_same_on_both_paths(become, tmp_path):
    """cpu_usage with since and until (a measure task's cpu_window) is arithmetic on the two snapshots: in the
    worker on this machine, a module process with become; the same figures either way (real /proc snapshots)."""
    from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement

    sampler = _measurement.Sampler(0, 0.2, 1, cpu_window_cpus=[0])
    sampler.run(lambda: None)
    window = sampler.cpu_window
    args = {"cpus": [0], "since": window["start"], "until": window["end"], "work_comms": ["^python"]}
    tasks = [{"name": "usage", "xdplab.testbed.cpu_usage": args},
             {"name": "bad", "xdplab.testbed.cpu_usage": dict(args, until={"version": 1})}]  # fmt: skip
    out, log = play(tmp_path, tasks, become)
    usage, bad = out["usage"], out["bad"]
    assert usage.get("failed") is not True, usage
    assert usage["cpus"] == [0] and usage["seconds"] == pytest.approx(window["end"]["time"] - window["start"]["time"], abs=1e-5)
    assert 0.0 <= usage["busy"] <= 100.0 and usage["busy_source"]
    assert usage["housekeeping"] is None if not become else "housekeeping" in usage
    assert bad["failed"] is True and "is not a cpu_usage snapshot" in bad["msg"]
    assert ("Module failed" if become else "Action failed") in log

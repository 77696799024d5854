#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a trial costs besides its traffic: Ansible's module runs and seconds per trial (issue 26).

A trial offers traffic for warm-up + samples x interval seconds (7 s by default; a forwarding trial also waits its
window's lead, experiment_window_lead, 10 s) and spends the rest of its time in the tasks around it: the system's
setup and teardown, the generator's start and stop, CPU snapshots, the record. Two ways to see that rest:

  --records TRIALS.JSONL   from a run's records (any run, e.g. docs/results/paper_drop/<run>/trials.jsonl): the
                           spacing between consecutive trials' started_at, the traffic seconds (warm-up + samples x
                           interval from provenance.trial, plus --window-lead for a record with a forwarding section)
                           and what is left, by system (median, min, max). started_at and finished_at are whole
                           seconds (%Y-%m-%dT%H:%M:%SZ), so each spacing is +-1 s: read medians, not single trials.
                           The last trial has no next one: its finished_at stands in (a few tenths short).
  --run                    a short paper_drop on the virtual lab (xdp and linux_raw, 1 core, 3 repetitions, 5 samples,
                           fresh), with the callback plugin benchmarks/callback_plugins/task_timeline.py enabled for
                           that run only (ANSIBLE_CALLBACK_PLUGINS, ANSIBLE_CALLBACKS_ENABLED): every task's name,
                           action, host and monotonic times. Per trial: tasks run, module runs (not skipped; the
                           controller-only actions, CONTROLLER_ONLY below, counted apart), seconds by action and by
                           task, and the seconds outside the traffic window. Needs root and the lab lock; the lab is
                           torn down after it (testbed_down.yml, as make paper-drop does).
  --timeline T --records R the same analysis from a kept timeline (--keep DIR of an earlier --run) and its records.

A task's seconds are its span: from its start to the next task's start, so the spans of a trial add up to its wall
time and include what the controller does between tasks (the result's callback, the next task's templating, an
included file's loading, counted on the include_tasks that loaded it). The traffic window sits inside the measure task
(the trial's longest); 'outside traffic' is the trial's wall time less the traffic seconds.

    .venv/bin/python benchmarks/trial_overhead.py --records docs/results/paper_drop/20261204T2149Z-f1f68f8/trials.jsonl
    flock /tmp/xdplab-lab.lock .venv/bin/python benchmarks/trial_overhead.py --run [--json out.json] [--keep DIR]

Quote ratios from one run: the machine is shared and noisy (the JSON has the load average before and after).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import gzip
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.dirname(sys.executable)
# actions that run in the controller's worker with no module process (Ansible's own action plugins)
CONTROLLER_ONLY = {"set_fact", "debug", "include_tasks", "import_tasks", "include_role", "meta", "assert", "fail",
                   "include_vars", "set_stats", "add_host", "group_by"}  # fmt: skip
RESULT_EVENTS = ("ok", "failed", "skipped", "unreachable")
# a trial: the tasks of these files (paths as short_path gives them), from trial.yml's first task, which every trial
# runs (trials.yml includes trial.yml once per round with one loop task: no task start of its own per trial)
TRIAL_FILE = "roles/experiment/tasks/trial.yml"
TRIAL_FIRST_TASK = "Whether this trial runs"
# timelines kept before round.yml was folded into trials.yml: a trial begins at round.yml's include of trial.yml
OLD_ROUND_FILE = "roles/experiment/tasks/round.yml"
TRIAL_FILES = tuple("roles/experiment/tasks/" + f for f in ("trial.yml", "round.yml", "cpu.yml", "systems/", "latency/"))
RUN_EXTRA_VARS = ['{"paper_drop_systems": ["xdp", "linux_raw"], "paper_drop_cores": [1]}',
                  "paper_drop_repetitions=3", "experiment_samples=5", "experiment_fresh=true"]  # fmt: skip


def short_action(action):
    for prefix in ("ansible.builtin.", "ansible.legacy."):
        if action.startswith(prefix):
            return action[len(prefix) :]
    return action


def short_path(path):
    """roles/experiment/tasks/trial.yml:123 of whichever checkout or collection link it was run from."""
    for marker in ("/roles/", "/playbooks/"):
        if marker in (path or ""):
            return path[path.rindex(marker) + 1 :]
    return path


def stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2), "max": round(max(values), 2),
            "n": len(values)}  # fmt: skip


def parse_at(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def traffic_seconds(record, window_lead):
    t = record["provenance"]["trial"]
    seconds = float(t["warmup_s"]) + float(t["interval_s"]) * int(t["samples"])
    lead = window_lead if record.get("forwarding") else 0.0
    return seconds + lead, lead


def open_text(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def load_records(path):
    with open_text(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    records.sort(key=lambda r: r["started_at"])
    run_json = os.path.join(os.path.dirname(path), "run.json")
    run = None
    if os.path.exists(run_json):
        with open(run_json) as f:
            r = json.load(f)
        run = {k: r.get(k) for k in ("run_id", "command", "command_note")}
    return records, run


def from_records(path, window_lead):
    """Per trial: spacing to the next trial's start, traffic seconds, what is left; by system."""
    records, run = load_records(path)
    precise = any("." in r["started_at"] for r in records)
    trials = []
    for i, r in enumerate(records):
        start = parse_at(r["started_at"])
        duration = parse_at(r["finished_at"]) - start
        spacing = parse_at(records[i + 1]["started_at"]) - start if i + 1 < len(records) else None
        traffic, lead = traffic_seconds(r, window_lead)
        basis = spacing if spacing is not None else duration
        row = {"trial_id": r["trial_id"], "system": r["point"]["system"], "status": r["status"],
               "started_at": r["started_at"], "spacing_s": spacing, "duration_s": duration, "traffic_s": traffic,
               "window_lead_s": lead, "non_traffic_s": basis - traffic, "basis": "spacing" if spacing is not None
               else "duration (last trial)"}  # fmt: skip
        window = (r.get("forwarding") or {}).get("window") or {}
        if window.get("realtime_start"):
            # the far side's window opened this long after started_at (setup, the generator's start, the lead, the
            # warm-up; started_at is whole seconds)
            row["window_open_after_s"] = round(window["realtime_start"] - start, 2)
        trials.append(row)
    by_system = {}
    for system in dict.fromkeys(t["system"] for t in trials):
        rows = [t for t in trials if t["system"] == system]
        by_system[system] = {k: stats([t[k] for t in rows]) for k in ("spacing_s", "duration_s", "traffic_s", "non_traffic_s")}
    return {"records": path, "run": run, "timestamp_precision": "sub-second" if precise else "1 s (whole seconds)",
            "window_lead_s": window_lead, "trials": trials, "by_system": by_system,
            "all": {k: stats([t[k] for t in trials]) for k in ("spacing_s", "traffic_s", "non_traffic_s")}}  # fmt: skip


def load_timeline(path):
    with open_text(path) as f:
        events = [json.loads(line) for line in f if line.strip()]
    for e in events:
        if "path" in e:
            e["path"] = short_path(e["path"])
    return events


def trial_spans(events):
    """[(start index, end index)] of each trial in events: a trial begins at trial.yml's first task (in a timeline
    kept before stop 33: at round.yml's include of trial.yml) and ends where the next one begins, the last one at the
    next task outside the trial's files (or the run's end)."""
    starts = [i for i, e in enumerate(events) if e["event"] == "task_start" and e["path"].startswith(OLD_ROUND_FILE)]
    if not starts:
        starts = [i for i, e in enumerate(events) if e["event"] == "task_start" and e["path"].startswith(TRIAL_FILE)
                  and TRIAL_FIRST_TASK in e.get("name", "")]  # fmt: skip
    spans = []
    for k, s in enumerate(starts):
        if k + 1 < len(starts):
            end = starts[k + 1]
        else:
            end = next((i for i in range(s + 1, len(events)) if events[i]["event"] == "task_start"
                        and not events[i]["path"].startswith(TRIAL_FILES)), len(events) - 1)  # fmt: skip
        spans.append((s, end))
    return spans


def analyse_trial(events, start, end):
    """One trial's tasks: counts, and seconds by action and by task (spans: task start to the next task start)."""
    t0, t1 = events[start]["t"], events[end]["t"]
    task_starts = [i for i in range(start, end) if events[i]["event"] == "task_start"]
    by_action, by_task, worker_by_action = collections.Counter(), collections.Counter(), collections.Counter()
    runs_by_action = collections.Counter()
    counts = collections.Counter()
    longest = (0.0, None)
    names = {}
    for n, i in enumerate(task_starts):
        e = events[i]
        nxt = events[task_starts[n + 1]]["t"] if n + 1 < len(task_starts) else t1
        span = nxt - e["t"]
        action = short_action(e["action"])
        results = [r for r in events[i:task_starts[n + 1] if n + 1 < len(task_starts) else end]
                   if r["event"] in RESULT_EVENTS and r.get("uuid") == e["uuid"]]  # fmt: skip
        ran = [r for r in results if r["event"] != "skipped"]
        counts["tasks"] += 1
        if not ran:
            counts["skipped"] += 1
            action_key = "(skipped: when false)"
        else:
            action_key = action
            runs = sum(r["items"] or 1 for r in ran)
            if any(r.get("modules") is not None for r in ran):
                # an action that says which modules it ran in a process of their own (xdplab.testbed.trial's phases):
                # those are the module runs; a phase that ran none is controller-only
                for r in ran:
                    for module in r.get("modules") or []:
                        runs_by_action[short_action(module)] += 1
                        counts["module_runs"] += 1
                    if not r.get("modules"):
                        counts["controller_only"] += 1
            else:
                counts["controller_only" if action in CONTROLLER_ONLY else "module_runs"] += runs
                if action not in CONTROLLER_ONLY:
                    runs_by_action[action] += runs
            for r in ran:
                if r.get("start") is not None:
                    worker_by_action[action] += r["t"] - r["start"]
        by_action[action_key] += span
        # by file:line and action: a task whose name templates the point (the program's name) is one task
        key = "%s [%s]" % (e["path"], action)
        by_task[key] += span
        names.setdefault(key, e["name"].replace("xdplab.testbed.experiment : ", ""))
        if span > longest[0]:
            longest = (span, action_key)
    return {"wall_s": t1 - t0, "counts": dict(counts), "by_action_s": dict(by_action), "by_task_s": dict(by_task),
            "task_names": names,
            "worker_by_action_s": dict(worker_by_action), "module_runs_by_action": dict(runs_by_action),
            "longest_action": longest[1]}  # fmt: skip


def from_timeline(timeline, records_path, window_lead):
    events = load_timeline(timeline)
    records, _run = load_records(records_path)
    spans = trial_spans(events)
    if len(spans) != len(records):
        raise SystemExit("trial_overhead.py: %d trials in the timeline, %d records in %s" % (
            len(spans), len(records), records_path))  # fmt: skip
    trials = []
    for (s, e), r in zip(spans, records):
        row = analyse_trial(events, s, e)
        traffic, lead = traffic_seconds(r, window_lead)
        row.update(trial_id=r["trial_id"], system=r["point"]["system"], status=r["status"], traffic_s=traffic,
                   window_lead_s=lead, outside_traffic_s=row["wall_s"] - traffic)  # fmt: skip
        trials.append(row)
    by_system = {}
    for system in dict.fromkeys(t["system"] for t in trials):
        rows = [t for t in trials if t["system"] == system]
        actions = sorted({a for t in rows for a in t["by_action_s"]})
        tasks = sorted({a for t in rows for a in t["by_task_s"]})
        by_system[system] = {
            "trials": len(rows),
            "wall_s": stats([t["wall_s"] for t in rows]),
            "traffic_s": stats([t["traffic_s"] for t in rows]),
            "outside_traffic_s": stats([t["outside_traffic_s"] for t in rows]),
            **{k: stats([t["counts"].get(k, 0) for t in rows]) for k in ("tasks", "skipped", "module_runs", "controller_only")},
            "by_action_s": {a: round(statistics.median(t["by_action_s"].get(a, 0.0) for t in rows), 3) for a in actions},
            "module_runs_by_action": {a: statistics.median(t["module_runs_by_action"].get(a, 0) for t in rows)
                                      for a in sorted({a for t in rows for a in t["module_runs_by_action"]})},
            "by_task_s": {a: round(statistics.median(t["by_task_s"].get(a, 0.0) for t in rows), 3) for a in tasks},
            "task_names": {a: next(t["task_names"][a] for t in rows if a in t["task_names"]) for a in tasks},
        }  # fmt: skip
    first, last = events[spans[0][0]]["t"], events[spans[-1][1]]["t"]
    return {"timeline": timeline, "records": records_path, "events": len(events),
            "run_s": round(events[-1]["t"] - events[0]["t"], 1), "before_first_trial_s": round(first - events[0]["t"], 1),
            "after_last_trial_s": round(events[-1]["t"] - last, 1), "trials": trials, "by_system": by_system}  # fmt: skip


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def run_lab(tmp, systems, repetitions, samples):
    """The short paper_drop with the timeline callback; (timeline path, trials.jsonl path, seconds, exit)."""
    results = os.path.join(tmp, "results")
    timeline = os.path.join(tmp, "timeline.jsonl")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
               XDPLAB_RESULTS_DIR=results, ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, "callback_plugins"),
               ANSIBLE_CALLBACKS_ENABLED="task_timeline", XDPLAB_TASK_TIMELINE=timeline)  # fmt: skip
    extra = [json.dumps({"paper_drop_systems": systems, "paper_drop_cores": [1]}), "paper_drop_repetitions=%d" % repetitions,
             "experiment_samples=%d" % samples, "experiment_fresh=true"]  # fmt: skip
    argv = [os.path.join(BIN, "ansible-playbook"), "playbooks/paper_drop.yml", "-i", "inventories/vlab"]
    for e in extra:
        argv += ["-e", e]
    t0 = time.monotonic()
    try:
        rc = subprocess.run(argv, cwd=ROOT, env=env, check=False).returncode
    finally:
        down = dict(env, ANSIBLE_CALLBACKS_ENABLED="", XDPLAB_TASK_TIMELINE="")
        subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "inventories/vlab", "playbooks/testbed_down.yml"], cwd=ROOT,
                       env=down, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    seconds = time.monotonic() - t0
    found = [os.path.join(d, f) for d, _s, fs in os.walk(os.path.join(results, "paper_drop")) for f in fs if f == "trials.jsonl"]
    return timeline, (found[0] if found else None), seconds, rc, shlex.join(argv)


def git(*args):
    proc = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def environment(argv):
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": git("rev-parse", "HEAD"),
            "tree_dirty": bool(git("status", "--porcelain", "--untracked-files=no")), "kernel": platform.release(),
            "cpus": os.cpu_count(), "command": " ".join(argv)}  # fmt: skip


def records_text(res):
    run = (res["run"] or {}).get("run_id") or res["records"]
    out = ["Run %s, from its records (timestamps: %s; a forwarding trial's window lead, %g s, counted as traffic):" % (
        run, res["timestamp_precision"], res["window_lead_s"]), ""]  # fmt: skip
    out += ["| system | trials | spacing s (median, min-max) | traffic s | not traffic s (median, min-max) |",
            "|---|---:|---|---:|---|"]  # fmt: skip
    for system, s in res["by_system"].items():
        sp, nt = s["spacing_s"] or s["duration_s"], s["non_traffic_s"]
        out.append("| %s %s | %d | %.0f (%.0f-%.0f) | %.0f | %.1f (%.0f-%.0f) |" % (
            run, system, s["traffic_s"]["n"], sp["median"], sp["min"], sp["max"], s["traffic_s"]["median"],
            nt["median"], nt["min"], nt["max"]))  # fmt: skip
    return out + [""]


def timeline_text(res, top):
    out = ["Timeline %s: %d trials; the run %.0f s, %.0f s of it before the first trial and %.0f s after the last." % (
        res["timeline"], len(res["trials"]), res["run_s"], res["before_first_trial_s"],
        res["after_last_trial_s"]), ""]  # fmt: skip
    out += ["Per trial (median): wall time, traffic (warm-up + window), the rest, tasks, skipped, module runs and "
            "controller-only actions (%s):" % ", ".join(sorted(CONTROLLER_ONLY)), ""]  # fmt: skip
    out += ["| system | trials | wall s | traffic s | outside traffic s | tasks | skipped | module runs | controller-only |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for system, s in res["by_system"].items():
        out.append("| %s | %d | %.2f | %.0f | %.2f | %.0f | %.0f | %.0f | %.0f |" % (
            system, s["trials"], s["wall_s"]["median"], s["traffic_s"]["median"], s["outside_traffic_s"]["median"],
            s["tasks"]["median"], s["skipped"]["median"], s["module_runs"]["median"],
            s["controller_only"]["median"]))  # fmt: skip
    systems = list(res["by_system"])
    longest = {sy: collections.Counter(t["longest_action"] for t in res["trials"] if t["system"] == sy).most_common(1)[0][0]
               for sy in systems}  # fmt: skip
    actions = sorted({a for s in res["by_system"].values() for a in s["by_action_s"]},
                     key=lambda a: -max(s["by_action_s"].get(a, 0.0) for s in res["by_system"].values()))  # fmt: skip
    out += ["", "Median seconds per trial by action, and its module runs (a task's span: its start to the next task's "
            "start; the measure module's span holds the traffic window):", ""]  # fmt: skip
    out += ["| action | " + " | ".join("%s s | %s runs" % (sy, sy) for sy in systems) + " |",
            "|---|" + "---:|---:|" * len(systems)]  # fmt: skip
    for a in actions:
        cells = []
        for sy in systems:
            s = res["by_system"][sy]
            v = s["by_action_s"].get(a)
            runs = s["module_runs_by_action"].get(a)
            cells += ["-" if v is None else "%.2f" % v, "-" if runs is None else "%g" % runs]
            if a == longest[sy] and v is not None:
                cells[-2] += " (%.2f besides the traffic)" % (v - s["traffic_s"]["median"])
        out.append("| %s | %s |" % (a, " | ".join(cells)))
    for system, s in res["by_system"].items():
        out += ["", "%s: the %d costliest tasks (median s per trial):" % (system, top), ""]
        out += ["| %s: task (file:line [action]) | s |" % system, "|---|---:|"]
        for a, v in sorted(s["by_task_s"].items(), key=lambda kv: -kv[1])[:top]:
            out.append("| %s: %s (%s) | %.2f |" % (system, s["task_names"][a], a, v))
    return out + [""]


def keep(folder, timeline, records, meta):
    """The run's raw data in folder: timeline.jsonl.gz, records.jsonl.gz, run_meta.json (what --timeline reads)."""
    os.makedirs(folder, exist_ok=True)
    for src, name in ((timeline, "timeline.jsonl.gz"), (records, "records.jsonl.gz")):
        with open(src, "rb") as f, gzip.open(os.path.join(folder, name), "wb") as g:
            shutil.copyfileobj(f, g)
    with open(os.path.join(folder, "run_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--records", action="append", default=[], help="a run's trials.jsonl (repeatable)")
    ap.add_argument("--run", action="store_true", help="run the short paper_drop on the virtual lab and time its tasks")
    ap.add_argument("--timeline", help="instead of --run: a folder --keep wrote (timeline, records, run_meta.json)")
    ap.add_argument("--systems", default="xdp,linux_raw")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--window-lead", type=float, default=10.0,
                    help="experiment_window_lead of the records' run (role default 10)")  # fmt: skip
    ap.add_argument("--top", type=int, default=12, help="tasks listed per system")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--md", help="write the tables printed here")
    ap.add_argument("--keep", help="with --run: keep the timeline, the run's records and its load in this folder")
    args = ap.parse_args()
    if not (args.records or args.run or args.timeline):
        ap.error("nothing to do: --records, --run or --timeline")
    if args.run and args.timeline:
        ap.error("--run or --timeline, not both")
    out = {"environment": environment(sys.argv)}
    text = []
    rc = 0
    if args.run:
        load_before = loadavg()
        with tempfile.TemporaryDirectory(prefix="xdplab-trial-overhead-") as tmp:
            timeline, records, seconds, rc, argv = run_lab(tmp, args.systems.split(","), args.repetitions, args.samples)
            out["run"] = {"command": argv, "exit": rc, "seconds": round(seconds, 1), "load_before": load_before,
                          "load_after": loadavg()}  # fmt: skip
            if records:
                out["timeline"] = from_timeline(timeline, records, args.window_lead)
                if args.keep:
                    keep(args.keep, timeline, records, dict(out["run"], environment=out["environment"]))
    elif args.timeline:
        with open(os.path.join(args.timeline, "run_meta.json")) as f:
            out["run"] = json.load(f)
        out["timeline"] = from_timeline(os.path.join(args.timeline, "timeline.jsonl.gz"),
                                        os.path.join(args.timeline, "records.jsonl.gz"), args.window_lead)  # fmt: skip
    if "run" in out:
        r = out["run"]
        text += ["The run: `%s`, exit %d after %.0f s; load average (1, 5, 15 min) before %s, after %s." % (
            r["command"], r["exit"], r["seconds"], " ".join(r["load_before"]), " ".join(r["load_after"])), ""]  # fmt: skip
    if "timeline" in out:
        text += timeline_text(out["timeline"], args.top)
    out["records"] = [from_records(p, args.window_lead) for p in args.records]
    for res in out["records"]:
        text += records_text(res)
    print("\n".join(text))
    if args.md:
        with open(args.md, "w") as f:
            f.write("\n".join(text))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every script in benchmarks/, one after another to the end, each one's figures written whatever its verdict.

`make bench` runs this. Each script runs with its defaults (SCRIPTS below: how it is invoked, whether it has a
bound) under the lab lock (/tmp/xdplab-lab.lock, held for the whole run: several scripts build their own
namespaces or the virtual lab, and their figures mean nothing beside another measurement). Its output (stdout and
stderr, also shown live) goes to RESULTS/bench/<run-id>/<script>.txt, its JSON where it writes one
(<script>.json), and summary.md / summary.json in that folder give, per script, its verdict, exit status and
seconds, with the run's provenance (date, commit, kernel, CPU, command).

Verdicts: ``ok`` (exit 0), ``bound exceeded`` (exit 3, BOUND_EXCEEDED, from a script that checks a bound: it ran
to the end, and its figures are written), ``failed (exit N)`` (it could not measure: root, a missing tool, an
error; its output says why) and ``not run`` (a precondition this runner checks is missing, named with what to do).

Exit status: 0 when every script ran to the end (ok or bound exceeded), 1 when any failed or did not run, 2 on
bad arguments. An exceeded bound is a finding, reported in the summary, not an error.

    .venv/bin/python benchmarks/run_all.py [--only a.py,b.sh] [--results DIR] [--list]
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import platform
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = sys.executable
LOCK = "/tmp/xdplab-lab.lock"
BOUND_EXCEEDED = 3
KERNEL_TREE = "/var/lib/xdplab/kernel-molecule/build/marker/linux"


def needs_kernel_tree():
    if os.path.exists(os.path.join(KERNEL_TREE, ".config")):
        return None
    return "no configured kernel tree at %s: `molecule converge -s kernel` makes it (then `make bench` again)" % KERNEL_TREE


# Every script of benchmarks/ (a script missing here is refused before anything runs), in the order they run:
# the controller-only ones first, the kernel build (every CPU for minutes) last.
#   argv: how it is run ({json}: the path of its JSON output in the run's folder)
#   bound: it exits BOUND_EXCEEDED when its figure misses its bound (its docstring names the bound)
#   needs: a precondition checked here (None when the script checks its own and says what is missing)
SCRIPTS = {
    "ndr_replay.py": {"argv": [PYTHON, "{script}"], "what": "MLRsearch replay cost (controller only)"},
    "ansible_task_cost.py": {"argv": [PYTHON, "{script}"], "what": "cost of one Ansible task by kind (controller only)"},
    "bpf_overhead.sh": {"argv": ["bash", "{script}"], "bound": "overhead <= MAX_OVERHEAD_PCT (10 %)",
                        "what": "xdp_bench_drop over a bare XDP_DROP, BPF_PROG_RUN"},
    "latency_cost.py": {"argv": [PYTHON, "{script}"], "what": "the in-band latency stamp's cost per packet"},
    "generator_ceiling.sh": {"argv": ["bash", "{script}"], "what": "xdplab-trafficgen's Mpps from one core"},
    "stats_accuracy.py": {"argv": [PYTHON, "{script}"], "bound": "xdp_stats within 1 % of the veth driver",
                          "what": "xdp_stats against veth's own counters"},
    "count_mode_overhead.py": {"argv": [PYTHON, "{script}", "--json", "{json}"],
                               "bound": "driver <= 1.03 x bare, program <= 1.02 x before count_mode",
                               "what": "what counting costs the DUT per packet"},
    "xsk_rxdrop.py": {"argv": [PYTHON, "{script}"], "what": "AF_XDP rxdrop against XDP_DROP"},
    "testpmd_veth_rxonly.py": {"argv": [PYTHON, "{script}"], "what": "testpmd rxonly, net_af_packet vs net_af_xdp"},
    "pacing_cpu.py": {"argv": [PYTHON, "{script}", "--json", "{json}"],
                      "what": "paced generator and the DUT CPU's sources (virtual lab)"},
    "systems_vs_xdp.py": {"argv": [PYTHON, "{script}"], "what": "each system's drop rate beside XDP_DROP (virtual lab)"},
    "several_duts.py": {"argv": [PYTHON, "{script}"], "what": "one DUT against two (virtual lab)"},
    "trial_overhead.py": {"argv": [PYTHON, "{script}", "--run", "--json", "{json}"],
                          "what": "Ansible's module runs and seconds per trial besides the traffic (virtual lab)"},
    "kernel_build.sh": {"argv": ["bash", "{script}"], "needs": needs_kernel_tree,
                        "what": "kernel package build time, no ccache / cold / warm"},
    # issue 27
    "lb_counter_cost.py": {"argv": [PYTHON, "{script}", "--json", "{json}"],
                           "what": "bpf/xdp_lb's counters per packet, BPF_PROG_RUN with and without them"},
}  # fmt: skip


def scripts_on_disk():
    return sorted(f for f in os.listdir(HERE) if f.endswith((".py", ".sh")) and f != os.path.basename(__file__))


def check_table():
    """Every script in benchmarks/ has its row, and every row its script: an error names the difference."""
    on_disk = set(scripts_on_disk())
    missing, stale = sorted(on_disk - set(SCRIPTS)), sorted(set(SCRIPTS) - on_disk)
    errors = []
    if missing:
        errors.append("not in run_all.py's SCRIPTS (add a row: how it runs, its bound): " + ", ".join(missing))
    if stale:
        errors.append("in SCRIPTS but not in benchmarks/ (remove the row): " + ", ".join(stale))
    return errors


def verdict(spec, rc):
    if rc == 0:
        return "ok"
    if rc == BOUND_EXCEEDED and spec.get("bound"):
        return "bound exceeded"
    return "failed (exit %d)" % rc


def git(*args):
    proc = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def provenance(argv):
    with open("/proc/cpuinfo") as f:
        model = next((x.split(":", 1)[1].strip() for x in f if x.startswith("model name")), "?")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": git("rev-parse", "HEAD"),
        "tree_dirty": bool(dirty) if dirty is not None else None,
        "kernel": platform.release(),
        "cpu": model,
        "cpus": os.cpu_count(),
        "command": shlex.join(argv),
    }


def run_one(name, spec, out_dir):
    """Run one script to its end, its output teed to the console and to out_dir/<name>.txt; its row of the summary."""
    stem = os.path.splitext(name)[0]
    row = {"script": name, "what": spec["what"], "bound": spec.get("bound"), "output": stem + ".txt"}
    reason = spec["needs"]() if spec.get("needs") else None
    if reason:
        row.update(verdict="not run", reason=reason, exit=None, seconds=0.0)
        with open(os.path.join(out_dir, row["output"]), "w") as f:
            f.write("not run: %s\n" % reason)
        print("== %s: not run: %s" % (name, reason), flush=True)
        return row
    json_path = os.path.join(out_dir, stem + ".json")
    argv = [a.format(script=os.path.join(HERE, name), json=json_path) for a in spec["argv"]]
    row["command"] = shlex.join(argv)
    print("== %s: %s" % (name, row["command"]), flush=True)
    start = time.monotonic()
    with open(os.path.join(out_dir, row["output"]), "w") as log:
        log.write("$ %s\n" % row["command"])
        log.flush()
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            log.write(line)
        rc = proc.wait()
    row.update(exit=rc, seconds=round(time.monotonic() - start, 1), verdict=verdict(spec, rc))
    if os.path.exists(json_path):
        row["json"] = os.path.basename(json_path)
    print("== %s: %s after %.0f s" % (name, row["verdict"], row["seconds"]), flush=True)
    return row


def summary_md(env, rows):
    lines = ["# make bench, %s" % env["date"], ""]
    lines += ["- %s: %s" % (k, env[k]) for k in ("commit", "tree_dirty", "kernel", "cpu", "cpus", "command")]
    lines += ["", "| script | what | bound | verdict | exit | s | figures |", "|---|---|---|---|---:|---:|---|"]
    for r in rows:
        figures = r["output"] + (", " + r["json"] if r.get("json") else "")
        verdict_cell = r["verdict"] + (": " + r["reason"] if r.get("reason") else "")
        lines.append("| %s | %s | %s | %s | %s | %.0f | %s |" % (
            r["script"], r["what"], r["bound"] or "-", verdict_cell, "-" if r["exit"] is None else r["exit"],
            r["seconds"], figures))  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--only", help="these scripts only, comma-separated (default: every one)")
    ap.add_argument("--results", default=os.environ.get("XDPLAB_RESULTS_DIR", os.path.join(ROOT, "results")),
                    help="write RESULTS/bench/<run-id>/ (default $XDPLAB_RESULTS_DIR or results/)")  # fmt: skip
    ap.add_argument("--list", action="store_true", help="print the scripts and how they run, run nothing")
    args = ap.parse_args(argv[1:])
    errors = check_table()
    names = list(SCRIPTS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in SCRIPTS]
        if unknown:
            errors.append("--only: no such script %s (choose from %s)" % (", ".join(unknown), ", ".join(SCRIPTS)))
    if errors:
        for e in errors:
            print("run_all.py: " + e, file=sys.stderr)
        return 2
    if args.list:
        for n in names:
            print("%-24s %s%s" % (n, SCRIPTS[n]["what"], "; bound: " + SCRIPTS[n]["bound"] if SCRIPTS[n].get("bound") else ""))
        return 0
    env = provenance(argv)
    run_id = env["date"].replace(":", "").replace("+0000", "Z")
    out_dir = os.path.join(args.results, "bench", run_id)
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    with open(LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("run_all.py: waiting for the lab lock %s (another measurement holds it)" % LOCK, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        for name in names:
            rows.append(run_one(name, SCRIPTS[name], out_dir))
            with open(os.path.join(out_dir, "summary.json"), "w") as f:  # after each script: an interrupted run keeps its rows
                json.dump({"environment": env, "scripts": rows}, f, indent=1)
    text = summary_md(env, rows)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(text)
    bad = [r for r in rows if r["verdict"] not in ("ok", "bound exceeded")]
    exceeded = [r for r in rows if r["verdict"] == "bound exceeded"]
    print()
    print(text)
    print("(%s)" % out_dir)
    print("%d scripts: %d ok, %d bound exceeded (reported, not an error), %d failed or not run" % (
        len(rows), len(rows) - len(bad) - len(exceeded), len(exceeded), len(bad)))  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

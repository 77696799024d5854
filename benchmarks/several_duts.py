#!/usr/bin/env python
"""Wall time of one DUT against two DUTs with their own generators (and two sharing one), on this machine.

Runs the real playbook (playbooks/paper_drop.yml) with a small XDP matrix (--trials per DUT: touch no_touch and
read, repetitions) on inventories/vlab_two_pairs, first limited to dut1 and its generator (one DUT), then both
pairs (two DUTs in parallel), then inventories/vlab_two_duts (two DUTs sharing tg: they take turns). Each run's
records give the span of its trials (first started_at to last finished_at: the trial phase, what the schedule
changes) and the total wall time of the playbook; the lab's packages, tuning, drift check and report are skipped
(--skip-tags, experiment_preflight false) as in tests/integration/test_several_duts.py. Prints one line per run and the ratios.

Needs root, the lab's programs installed (make paper-drop once) and the lab lock:

    flock /tmp/xdplab-lab.lock .venv/bin/python benchmarks/several_duts.py [--repetitions 2] [--runs one,pairs]

(one and pairs take ~4 min together with --repetitions 1 on this 2-CPU machine; run them in one hold, so their
ratio is of one load.)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
SKIP = "controller,vlab_install,tuning,dut_software,experiment_report,bpf_programs"
RUNS = {
    "one": ("one DUT", "vlab_two_pairs", "dut1,tg1,localhost"),
    "pairs": ("two DUTs, own generators", "vlab_two_pairs", None),
    "shared": ("two DUTs, one generator", "vlab_two_duts", None),
}


def stamp(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def run(inventory, limit, repetitions, results):
    extra = {
        "paper_drop_systems": ["xdp"], "paper_drop_repetitions": repetitions, "paper_drop_touch": ["no_touch", "read"],
        "experiment_samples": 3, "experiment_warmup": 1, "experiment_interval": 1, "experiment_drift_check": False,
        "experiment_generator_slack": 60, "xdplab_testbed_dpdk": False, "xdplab_testbed_tuning": False,
        "experiment_preflight": False,
    }  # fmt: skip
    cmd = [PLAYBOOK, "-i", os.path.join(ROOT, "inventories", inventory), os.path.join(ROOT, "playbooks", "paper_drop.yml"),
           "-e", json.dumps(extra), "-e", "experiment_results_dir=" + results, "--skip-tags", SKIP]  # fmt: skip
    if limit:
        cmd += ["--limit", limit]
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if res.returncode != 0:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), (res.stdout + res.stderr)[-3000:]))
    records = []
    for dut in sorted(os.listdir(os.path.join(results, "paper_drop"))):
        with open(os.path.join(results, "paper_drop", dut, "trials.jsonl")) as f:
            records += [dict(json.loads(line), dut=dut) for line in f if line.strip()]
    span = max(stamp(r["finished_at"]) for r in records) - min(stamp(r["started_at"]) for r in records)
    per_trial = sum(stamp(r["finished_at"]) - stamp(r["started_at"]) for r in records) / len(records)
    mpps = {
        d: [round(r["result"]["pps"] / 1e6, 2) for r in records if r["dut"] == d] for d in sorted({r["dut"] for r in records})
    }
    return {
        "trials": len(records), "wall_s": wall, "span_s": span, "per_trial_s": per_trial, "mpps": mpps,
        "load": (load, os.getloadavg()[0]),
    }  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--repetitions", type=int, default=2, help="repetitions of each of the 2 points (default 2)")
    ap.add_argument(
        "--runs", default="one,pairs,shared",
        help="which runs, in this order: one (dut1 alone), pairs (both, own generators), shared (both, one generator)",
    )  # fmt: skip
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root")
    runs = args.runs.split(",")
    unknown = [r for r in runs if r not in RUNS]
    if unknown:
        sys.exit("unknown run(s) %s: choose from %s" % (", ".join(unknown), ", ".join(RUNS)))
    out = {}
    for key in runs:
        name, inventory, limit = RUNS[key]
        with tempfile.TemporaryDirectory(prefix="several-duts-") as results:
            out[key] = r = run(inventory, limit, args.repetitions, results)
        print(
            "%-26s %2d trials  playbook %6.1f s  trials %6.1f s  (%.1f s per trial)  Mpps %s  load %.1f..%.1f"
            % (name, r["trials"], r["wall_s"], r["span_s"], r["per_trial_s"], r["mpps"], *r["load"]),
            flush=True,
        )
    if "one" not in out:
        return
    one = out["one"]
    if "pairs" in out:
        two = out["pairs"]
        print("two DUTs with own generators / one DUT: trials %.2fx, playbook %.2fx (2.0 = no parallelism, 1.0 = free)"
              % (two["span_s"] / one["span_s"], two["wall_s"] / one["wall_s"]))  # fmt: skip
    if "shared" in out:
        shared = out["shared"]
        print("two DUTs sharing a generator / one DUT: trials %.2fx, playbook %.2fx"
              % (shared["span_s"] / one["span_s"], shared["wall_s"] / one["wall_s"]))  # fmt: skip


if __name__ == "__main__":
    main()

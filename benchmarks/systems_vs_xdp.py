#!/usr/bin/env python
"""Each system's drop rate on this machine and its ratio to XDP_DROP measured in the same run.

Runs playbooks/paper_drop.yml on the virtual lab (inventories/vlab) with one DUT core, every
system of the drop experiment and R repetitions, into a throwaway results directory, then reads
the trial records and prints, per system, the median Mpps, its min-max, CPU busy %, the limit the
trials hit, and the ratio of the median to XDP_DROP's (no_touch) median from the SAME run (these
machines are shared and noisy: only ratios from one run are comparable). The lab is removed on
every exit path (the playbook's last play, and testbed_down.yml again if it was interrupted).

    .venv/bin/python benchmarks/systems_vs_xdp.py [--repetitions 3] [--samples 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.dirname(os.path.abspath(sys.executable))
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))


def run_experiment(results_dir, repetitions, samples):
    extra = {
        "paper_drop_cores": [1],
        "paper_drop_touch": ["no_touch"],
        "paper_drop_repetitions": repetitions,
        "experiment_samples": samples,
        "experiment_results_dir": results_dir,
    }
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", "inventories/vlab", "playbooks/paper_drop.yml",
           "-e", json.dumps(extra)]  # fmt: skip
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
    finally:
        subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", "inventories/vlab", "playbooks/testbed_down.yml"],
                       cwd=ROOT, env=ENV, capture_output=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        raise SystemExit("paper_drop.yml failed (exit %d)" % proc.returncode)


def summarise(records):
    by_system = {}
    for rec in records:
        if rec.get("status", "ok") != "ok":
            continue
        by_system.setdefault(rec["point"]["system"], []).append(rec)
    rows = []
    for system, recs in by_system.items():
        mpps = [r["result"]["pps"] / 1e6 for r in recs]
        busy = [r["result"].get("cpu_busy") for r in recs if r["result"].get("cpu_busy") is not None]
        rows.append({
            "system": system,
            "trials": len(recs),
            "median": statistics.median(mpps),
            "min": min(mpps),
            "max": max(mpps),
            "cpu_busy": statistics.median(busy) if busy else None,
            "limits": sorted({r["loss"]["limit"] for r in recs}),
            "provenance": recs[0]["provenance"].get("program", {}),
        })
    base = next((r["median"] for r in rows if r["system"] == "xdp"), None)
    for row in rows:
        row["ratio_to_xdp"] = row["median"] / base if base else None
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--keep", help="write the records here instead of a temporary directory")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xdplab-bench-") as tmp:
        results = args.keep or tmp
        run_experiment(results, args.repetitions, args.samples)
        records = []
        for dirpath, _dirs, files in os.walk(os.path.join(results, "paper_drop")):
            if "trials.jsonl" in files:
                with open(os.path.join(dirpath, "trials.jsonl")) as f:
                    records += [json.loads(line) for line in f if line.strip()]
        rows = summarise(records)
    kernel = records[0]["provenance"]["dut"]["kernel_release"] if records else "?"
    cpu = records[0]["provenance"]["dut"]["cpu_model"] if records else "?"
    print("# drop rate by system, one DUT core, 64-byte frames, %d repetitions; kernel %s; %s" % (args.repetitions, kernel, cpu))
    print("%-18s %6s %9s %19s %8s %10s  %s" % ("system", "trials", "Mpps", "min-max", "CPU %", "vs XDP", "limit"))
    for row in sorted(rows, key=lambda r: -r["median"]):
        print("%-18s %6d %9.3f %9.3f-%-9.3f %8s %10s  %s" % (
            row["system"], row["trials"], row["median"], row["min"], row["max"],
            "%.1f" % row["cpu_busy"] if row["cpu_busy"] is not None else "-",
            "%.2f" % row["ratio_to_xdp"] if row["ratio_to_xdp"] is not None else "-",
            ",".join(row["limits"])))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

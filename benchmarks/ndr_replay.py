#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""What replaying MLRsearch over the recorded trials costs the controller (plugins/module_utils/_ndrpdr.py).

Each step of an NDR/PDR search runs MLRsearch afresh over the search's records until it asks for a trial it has
no record of; the cost grows with the steps. This drives the real MLRsearch with a model DUT (constructed: it
takes up to --capacity pps and loses the excess, plus --noise relative jitter of its capacity per trial, seeded)
and prints, per goal set, the trials, the trial seconds, the replay time of the last step and of all steps.
No lab, no root.
"""

import argparse
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

from ansible_collections.xdplab.testbed.plugins.module_utils import _ndrpdr


def search(goals, capacity, noise, seed):
    rng = random.Random(seed)
    trials, replay = [], []
    while True:
        t0 = time.perf_counter()
        step = _ndrpdr.next_step(trials, goals, 1e4, 3e6)
        replay.append(time.perf_counter() - t0)
        if step["done"]:
            return step, trials, replay
        cap = capacity * (1 + rng.gauss(0, noise))
        sent = int(step["load"] * step["duration"])
        trials.append({"load": step["load"], "duration": step["duration"], "offered": sent,
                       "lost": int(max(0.0, step["load"] - cap) * step["duration"])})  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capacity", type=float, default=1.2e6)
    ap.add_argument("--noise", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print("| goals | trials | trial s | NDR Mpps | PDR Mpps | last step replay ms | all steps replay s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, dsum in (("CSIT defaults (21 s sum)", 21.0), ("duration sum 3 s", 3.0)):
        goals = [dict(g, duration_sum=dsum) for g in _ndrpdr.check_goals([])]
        step, trials, replay = search(goals, args.capacity, args.noise, args.seed)
        ndr, pdr = (g["conditional_throughput_pps"] or 0 for g in step["goals"])
        print(
            "| %s | %d | %.0f | %.4f | %.4f | %.1f | %.2f |"
            % (label, len(trials), sum(t["duration"] for t in trials), ndr / 1e6, pdr / 1e6, 1000 * replay[-1], sum(replay))
        )


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: GPL-3.0-or-later
"""benchmarks/trial_overhead.py (issue 26): its reading of committed records and of the kept timeline of its run."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("trial_overhead", os.path.join(ROOT, "benchmarks", "trial_overhead.py"))
trial_overhead = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(trial_overhead)
RESULTS = os.path.join(ROOT, "docs", "results")


def test_records_spacing_and_traffic_by_system():
    res = trial_overhead.from_records(os.path.join(RESULTS, "paper_drop", "20261204T2149Z-f1f68f8", "trials.jsonl"), 10.0)
    assert res["timestamp_precision"] == "1 s (whole seconds)"
    xdp = res["by_system"]["xdp"]
    assert xdp["traffic_s"]["median"] == 7 and xdp["spacing_s"]["median"] == 11 and xdp["non_traffic_s"]["median"] == 4
    assert res["trials"][-1]["basis"] == "duration (last trial)"
    fwd = trial_overhead.from_records(os.path.join(RESULTS, "paper_forward", "20261204T2145Z-f1f68f8", "trials.jsonl"), 10.0)
    assert fwd["by_system"]["xdp_tx"]["traffic_s"]["median"] == 17  # 2 s warm-up, 5 s window, 10 s lead


def test_the_kept_timeline_splits_into_its_trials():
    kept = os.path.join(RESULTS, "bench", "20261204T2334Z-761e1b7")
    res = trial_overhead.from_timeline(os.path.join(kept, "timeline.jsonl.gz"), os.path.join(kept, "records.jsonl.gz"), 10.0)
    assert len(res["trials"]) == 9 and set(res["by_system"]) == {"xdp", "linux_raw"}
    for t in res["trials"]:
        assert t["counts"] == {"tasks": 24, "skipped": 7, "module_runs": 7, "controller_only": 10}
        # the spans of a trial's tasks add up to its wall time; the measure task holds the traffic window
        assert abs(sum(t["by_action_s"].values()) - t["wall_s"]) < 1e-6
        assert t["longest_action"] in ("xdplab.testbed.xdp_stats", "xdplab.testbed.netfilter_stats")
        assert t["by_action_s"][t["longest_action"]] > t["traffic_s"] == 7

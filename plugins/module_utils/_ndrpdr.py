# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NDR/PDR with FD.io CSIT's MLRsearch (PyPI MLRsearch), step by step over trial records.

MLRsearch drives its measurer synchronously; a trial here is a run of the experiment role (Ansible), recorded
in trials.jsonl. So the search is replayed: ``next_step`` runs MultipleLossRatioSearch with a measurer that
answers from the search's recorded trials in order, and stops at the first trial it has no record of,
returning what to measure next (duration, load). The search is deterministic given its results, so the
replay asks for the same trials in the same order; a recorded trial that does not match what the search
asks (another configuration) is refused. A re-run resumes after the last recorded trial: Ctrl-C loses no
finished one.

A trial's counts come from the generator's own run (traffic_generator's summary): offered = frames sent,
lost = frames the DUT's receive ring refused (egress.refused). On veth a drop system loses frames there (the
record's loss verdict says where: lost_at dut_rx_ring); a loss after the ring is in the verdict's window
(lost_pps) and is returned per trial as path_loss_pps, beside.
"""

from __future__ import annotations

import time

# MLRsearch is imported when a search needs it (mlrsearch()), not with this file: it takes ~0.4 s to import, and
# every Ansible task that templates any of this collection's filters imports every filter file (ndr_pdr's among
# them, which imports this) afresh in its forked worker: 0.4 s per such task, about a third of a trial's tasks.
_MLRSEARCH = None

# CSIT's defaults (MLRsearch SearchGoal): NDR loss 0, PDR loss 0.5 %
DEFAULT_GOALS = (
    {"name": "NDR", "loss_ratio": 0.0},
    {"name": "PDR", "loss_ratio": 0.005},
)
GOAL_DEFAULTS = {
    "exceed_ratio": 0.5,
    "relative_width": 0.005,
    "initial_trial_duration": 1.0,
    "final_trial_duration": 1.0,
    "duration_sum": 21.0,
    "preceding_targets": 2,
    "expansion_coefficient": 2,
    "fail_fast": False,
}
LOAD_TOLERANCE = 1e-9


class SearchInputError(ValueError):
    """A search configuration MLRsearch refuses, or records that do not belong to this search."""


class _NeedTrial(Exception):
    def __init__(self, duration, load):
        super().__init__("need a trial at %r pps for %r s" % (load, duration))
        self.duration, self.load = duration, load


def mlrsearch():
    """The MLRsearch package (imported once, on first use); SearchInputError naming the fix when it is missing."""
    global _MLRSEARCH
    if _MLRSEARCH is None:
        try:
            import MLRsearch
        except ImportError as exc:  # pragma: no cover - in requirements.txt
            raise SearchInputError(
                "MLRsearch is not installed on the controller (%s): pip install -r requirements.txt" % exc
            ) from None
        _MLRSEARCH = MLRsearch
    return _MLRSEARCH


def check_goals(goals):
    """The goals with CSIT's defaults filled in; raises SearchInputError on a value MLRsearch refuses."""
    SearchGoal = mlrsearch().SearchGoal
    out = []
    for i, goal in enumerate(goals or DEFAULT_GOALS):
        full = dict(GOAL_DEFAULTS, **goal)
        name = full.pop("name", "goal%d" % (i + 1))
        lr = full.get("loss_ratio")
        if not isinstance(lr, (int, float)) or isinstance(lr, bool) or not 0.0 <= lr < 1.0:
            raise SearchInputError("goal %s: loss_ratio must be in [0, 1) (0 = NDR, 0.005 = PDR), got %r" % (name, lr))
        try:
            SearchGoal(**full)
        except (TypeError, ValueError) as exc:
            raise SearchInputError("goal %s: %s" % (name, exc)) from None
        out.append(dict(full, name=name))
    return out


class ReplayMeasurer:
    """Answers MLRsearch from recorded trials in order; raises _NeedTrial at the first one missing.

    MLRsearch's AbstractMeasurer only declares measure(); MultipleLossRatioSearch calls it and checks no type, so this
    need not subclass it (which would import MLRsearch with this file)."""

    def __init__(self, trials):
        self.trials = list(trials)
        self.used = 0

    def measure(self, intended_duration, intended_load):
        if self.used >= len(self.trials):
            raise _NeedTrial(float(intended_duration), float(intended_load))
        t = self.trials[self.used]
        if (
            abs(t["load"] - intended_load) > LOAD_TOLERANCE * max(intended_load, 1.0)
            or abs(t["duration"] - intended_duration) > 1e-9
        ):
            raise SearchInputError(
                "recorded trial %d of this search was at %r pps for %r s but the search asks for %r pps for %r s: "
                "the records were made with another configuration (set experiment_fresh=true, or another experiment_name)"
                % (self.used + 1, t["load"], t["duration"], intended_load, intended_duration)
            )
        self.used += 1
        return mlrsearch().MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=t["offered"],
            loss_count=t["lost"],
            offered_duration=t.get("offered_duration") or intended_duration,
        )


# The backends whose summary counts egress.refused, the search's loss (trial_of): the search is refused before any
# trial on any other, with the reason (playbooks/ndr_pdr.yml, filter ndr_pdr_backend_problem).
REFUSED_COUNTED_BY = ("xdp_live",)
NO_REFUSED_COUNT = {
    "trex": (
        "T-Rex's summary has no egress.refused (the frames the DUT refused, the search's loss): a T-Rex port's oerrors "
        "count its own TX errors, not the DUT's, and on hardware the DUT's loss is in its NIC's counters "
        "(rx_missed_errors, rx_discards_phy, rx_out_of_buffer), which a search trial does not read"
    ),
    "iperf3": "iperf3 offers TCP streams, which slow down instead of losing frames: its summary has no egress.refused",
}


def backend_problem(backend):
    """Why an NDR/PDR search cannot run on this generator backend ('' when it can)."""
    if backend in REFUSED_COUNTED_BY:
        return ""
    reason = NO_REFUSED_COUNT.get(backend) or "its summary has no egress.refused (the frames the DUT refused)"
    return (
        "an NDR/PDR search needs a generator that counts the frames the DUT refused; backend %s cannot: %s. Run the "
        "search on a backend that does (%s), or measure loss at fixed rates with the drop experiments"
        % (backend, reason, ", ".join(REFUSED_COUNTED_BY))
    )


def trial_of(record):
    """A search trial from a trial record: {step, load, duration, offered, lost, offered_pps, ...}."""
    point = record.get("point") or {}
    gen = record.get("generator") or {}
    loss = record.get("loss") or {}
    sent = gen.get("sent")
    refused = (gen.get("egress") or {}).get("refused")
    if sent is None or refused is None:
        raise SearchInputError(
            "trial %s has no generator counts (sent, egress.refused): not a search trial%s"
            % (record.get("trial_id"), "; " + backend_problem(gen["backend"]) if gen.get("backend") else "")
        )
    load = float(point["load_pps"])
    elapsed = gen.get("elapsed_s") or None
    return {
        "step": int(point["step"]),
        "load": load,
        "duration": float(point["trial_s"]),
        "offered": int(sent),
        "lost": int(refused),
        "offered_duration": float(elapsed) if elapsed else None,
        "offered_pps": gen.get("offered_pps"),
        "pacing": (float(gen["offered_pps"]) / load) if gen.get("offered_pps") and load else None,
        "loss_ratio": (refused / sent) if sent else 0.0,
        "counted_pps": (record.get("result") or {}).get("pps"),
        "path_loss_pps": max(0.0, (loss.get("lost_pps") or 0.0) - (loss.get("refused_pps") or 0.0)),
        "started_at": record.get("started_at"),
        "finished_at": record.get("finished_at"),
        "trial_id": record.get("trial_id"),
    }


def _rest(point):
    return {k: v for k, v in point.items() if k not in ("search", "step", "offered_mpps", "load_pps", "trial_s")}


def ceiling_of(records, search, base_point):
    """The generator's offered rate in the search's step 0 (the same point, unpaced); None before it ran."""
    for rec in records:
        point = rec.get("point") or {}
        if (
            rec.get("status", "ok") == "ok"
            and point.get("search") == search
            and point.get("step") == 0
            and _rest(point) == base_point
        ):
            return float((rec.get("generator") or {}).get("offered_pps") or 0) or None
    return None


def search_trials(records, search, base_point):
    """The ok trials of one search (point.search == search, the rest of the point == base_point), by step."""
    out = {}
    for rec in records:
        point = rec.get("point") or {}
        if rec.get("status", "ok") != "ok" or point.get("search") != search or point.get("step") in (None, 0):
            continue
        if _rest(point) != base_point:
            continue
        out[int(point["step"])] = trial_of(rec)
    steps = sorted(out)
    trials = []
    for i, s in enumerate(steps, 1):
        if s != i:
            break  # a gap (a trial not recorded yet): the replay stops there and asks for it again
        trials.append(out[s])
    return trials


def next_step(trials, goals, min_load, max_load, warmup_duration=None, search_duration_max=1e9):
    """Replay the search over its trials: ({done: False, step, duration, load}) or the final result."""
    goals = check_goals(goals)
    mlr = mlrsearch()
    config = mlr.Config()
    config.goals = [mlr.SearchGoal(**{k: v for k, v in g.items() if k != "name"}) for g in goals]
    config.min_load = float(min_load)
    config.max_load = float(max_load)
    config.search_duration_max = float(search_duration_max)
    config.warmup_duration = warmup_duration
    measurer = ReplayMeasurer(trials)
    search = mlr.MultipleLossRatioSearch(config=config)
    t0 = time.monotonic()
    try:
        results = search.search(measurer=measurer, debug=lambda _msg: None)
    except _NeedTrial as need:
        return {
            "done": False,
            "step": measurer.used + 1,
            "duration": need.duration,
            "load": need.load,
            "replay_s": time.monotonic() - t0,
        }
    out = {"done": True, "trials": measurer.used, "goals": []}
    for goal, gdef in zip(config.goals, goals):
        res = results[goal]
        lower = res.relevant_lower_bound
        upper = res.relevant_upper_bound
        ct = res.conditional_throughput
        out["goals"].append(
            {
                "name": gdef["name"],
                "loss_ratio": gdef["loss_ratio"],
                "exceed_ratio": gdef["exceed_ratio"],
                "relative_width": gdef["relative_width"],
                "lower_bound_pps": float(lower) if lower is not None else None,
                "upper_bound_pps": float(upper) if upper is not None else None,
                "conditional_throughput_pps": float(ct) if ct is not None else None,
            }
        )
    return out

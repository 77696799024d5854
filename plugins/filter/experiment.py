# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn an experiment's matrix into trials and find the ones still to run."""

from __future__ import annotations

import hashlib
import itertools
import json

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils._generators import backend_names
from ansible_collections.xdplab.testbed.plugins.module_utils._report import (
    GENERATOR_LIMITED,
    KEPT_UP_SHARE,
    limit_of,
    read_records,
)


def trial_id(point, repetition, identity=None):
    """Stable id of one trial: its matrix point, repetition and the DUT identity."""
    blob = json.dumps({"point": point, "repetition": repetition, "identity": identity or {}}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def done_trial_ids(results_text):
    """Trial ids already recorded in a JSON-lines results text (unparsable lines are skipped)."""
    if results_text is not None and not isinstance(results_text, str):
        raise AnsibleFilterError("done_trial_ids: expects the text of a JSON-lines results file, got %r" % type(results_text))
    records, _unparsable = read_records(results_text or "")
    return [r["trial_id"] for r in records if r.get("trial_id")]


def _matches(point, partial):
    return all(point.get(k) == v for k, v in partial.items())


def _sub_matrices(matrix, who="experiment_trials"):
    """A matrix is a mapping {axis: [values]} or a list of them (a union of sub-matrices)."""
    subs = matrix if isinstance(matrix, list) else [matrix]
    if not subs:
        raise AnsibleFilterError("%s: the matrix must be a non-empty mapping of axis -> list of values" % who)
    for sub in subs:
        if not isinstance(sub, dict) or not sub:
            raise AnsibleFilterError(
                "%s: the matrix must be a non-empty mapping of axis -> list of values "
                "(or a list of such mappings), got %r" % (who, sub)
            )
        for axis, values in sub.items():
            if not isinstance(values, list) or not values:
                raise AnsibleFilterError("%s: axis %r must be a non-empty list, got %r" % (who, axis, values))
    return subs


def matrix_axis(matrix, axis, default=None):
    """The values one axis takes anywhere in a matrix (or list of sub-matrices), in first-seen order.

    A sub-matrix without the axis contributes `default` when one is given.
    """
    seen = []
    for sub in _sub_matrices(matrix, "matrix_axis"):
        values = sub.get(axis, [default] if default is not None else [])
        for value in values:
            if value not in seen:
                seen.append(value)
    return seen


def experiment_trials(matrix, repetitions=3, done=None, identity=None, exclude=None):
    """Expand a matrix {axis: [values]} into trials, skipping those already done.

    matrix: a mapping {axis: [values]} (every combination is a point), or a list of such
    mappings whose points are joined in order (so that, say, only XDP varies the touch mode).
    done: a list of trial ids or the text of a JSON-lines results file.
    exclude: partial points ({axis: value}) that are not measured.
    Returns [{"trial_id", "point": {axis: value}, "repetition", "index", "total"}] in matrix order,
    repetitions innermost, for the trials not yet done.
    """
    subs = _sub_matrices(matrix)
    try:
        repetitions = int(repetitions)
    except (TypeError, ValueError):
        raise AnsibleFilterError("experiment_trials: repetitions must be a whole number, got %r" % (repetitions,)) from None
    if repetitions < 1:
        raise AnsibleFilterError("experiment_trials: repetitions must be at least 1, got %d" % repetitions)
    if isinstance(done, str):
        done = done_trial_ids(done)
    done = set(done or [])
    exclude = exclude or []
    if not isinstance(exclude, list) or not all(isinstance(e, dict) for e in exclude):
        raise AnsibleFilterError(
            "experiment_trials: exclude must be a list of partial points ({axis: value}), got %r" % (exclude,)
        )
    points = []
    for sub in subs:
        axes = list(sub)
        for combo in itertools.product(*(sub[a] for a in axes)):
            point = dict(zip(axes, combo))
            if point not in points and not any(_matches(point, e) for e in exclude):
                points.append(point)
    total = len(points) * repetitions
    trials = []
    index = 0
    for point in points:
        for rep in range(1, repetitions + 1):
            index += 1
            tid = trial_id(point, rep, identity)
            if tid in done:
                continue
            trials.append({"trial_id": tid, "point": point, "repetition": rep, "index": index, "total": total})
    return trials


# Where a trial's packets were lost (trial_loss lost_at -> explanation)
LOST_NOWHERE = "none"
LOST_AT_DUT_RING = "dut_rx_ring"
LOST_ON_THE_PATH = "path"
LOSS_PLACES = {
    LOST_NOWHERE: "nowhere: the DUT kept up with the offered load",
    LOST_AT_DUT_RING: "DUT receive ring full: the egress device refused frames",
    LOST_ON_THE_PATH: "between the generator and the DUT program (port, ring or driver)",
}


def offered_in_window(intervals, window):
    """Offered rate over a measurement window, from a generator's per-interval records.

    Each record covers (mono - interval_s, mono] on the host's monotonic clock; a record
    counts with the share of it that overlaps the window. None when the records do not
    cover at least half of the window (different hosts' clocks, or no timestamps).
    """
    if not window or not intervals:
        return None
    start, end = float(window["start"]), float(window["end"])
    if end <= start:
        return None
    sent = covered = 0.0
    for rec in intervals:
        if "mono" not in rec or not rec.get("interval_s"):
            return None
        r_end = float(rec["mono"])
        r_start = r_end - float(rec["interval_s"])
        overlap = min(end, r_end) - max(start, r_start)
        if overlap > 0:
            sent += rec["sent"] * overlap / (r_end - r_start)
            covered += overlap
    if covered < 0.5 * (end - start):
        return None
    return sent / covered


def trial_loss(counted_pps, generator_summary, window=None, kept_up_share=KEPT_UP_SHARE):
    """Where a trial lost packets and which side was the limit.

    counted_pps: what the system under test counted over `window` ({start, end} on the
    monotonic clock); generator_summary: the summary of xdplab.testbed.traffic_generator
    (offered_pps, elapsed_s, egress.refused, intervals). The offered load is taken over the
    same window when the generator's records allow it (offered_basis: window), else over
    the generator's whole run (offered_basis: run).
    """
    try:
        counted = float(counted_pps)
        offered = float(generator_summary["offered_pps"])
        share = float(kept_up_share)
    except (TypeError, ValueError, KeyError) as exc:
        raise AnsibleFilterError("trial_loss: needs counted pps and a generator summary with offered_pps (%s)" % exc) from exc
    try:
        in_window = offered_in_window(generator_summary.get("intervals"), window)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(
            "trial_loss: the generator's interval records or the window are malformed (%r); "
            "records need mono, interval_s and sent, the window start and end" % exc
        ) from exc
    basis = "run"
    if in_window is not None:
        offered, basis = in_window, "window"
    lost = max(offered - counted, 0.0)
    refused = (generator_summary.get("egress") or {}).get("refused")
    elapsed = generator_summary.get("elapsed_s") or 0
    refused_pps = refused / elapsed if refused is not None and elapsed else None
    limit = limit_of(counted, offered, share)
    if limit == GENERATOR_LIMITED:
        lost_at = LOST_NOWHERE
    elif refused_pps is not None and refused_pps >= 0.5 * lost:
        lost_at = LOST_AT_DUT_RING
    else:
        lost_at = LOST_ON_THE_PATH
    return {
        "offered_pps": offered,
        "offered_basis": basis,
        "counted_pps": counted,
        "lost_pps": lost,
        "pct": round(100.0 * lost / offered, 3) if offered else None,
        "refused_pps": refused_pps,
        "limit": limit,
        "lost_at": lost_at,
        "where": LOSS_PLACES[lost_at],
    }


def generator_backends(_ignored=None):
    """Names of the generator backends xdplab.testbed.traffic_generator knows."""
    return backend_names()


class FilterModule:
    def filters(self):
        return {
            "experiment_trials": experiment_trials,
            "matrix_axis": matrix_axis,
            "done_trial_ids": done_trial_ids,
            "trial_id": trial_id,
            "trial_loss": trial_loss,
            "generator_backends": generator_backends,
        }

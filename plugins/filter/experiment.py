# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn an experiment's matrix into trials and find the ones still to run."""

from __future__ import annotations

import hashlib
import itertools
import json

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl, _record

display = Display()


def trial_id(point, repetition, identity=None):
    """Stable id of one trial: its matrix point, repetition and the DUT identity."""
    blob = json.dumps({"point": point, "repetition": repetition, "identity": identity or {}}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def done_trial_ids(results_text, source="trials.jsonl"):
    """Trial ids recorded with status ok in a JSON-lines results text (a re-run retries failed trials).

    Read with the one JSON-lines reader: a line that is not a JSON object is a warning naming
    source:line (the file is not touched) and counts as not done.
    """
    if results_text is not None and not isinstance(results_text, str):
        raise AnsibleFilterError("done_trial_ids: expects the text of a JSON-lines results file, got %r" % type(results_text))
    records, warnings = _jsonl.parse(results_text or "", str(source))
    for warning in warnings:
        display.warning("done_trial_ids: %s (that trial, if it was one, runs again)" % warning)
    return [r["trial_id"] for r in records if r.get("trial_id") and r.get("status", _record.STATUS_OK) == _record.STATUS_OK]


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


def counterbalanced(rounds):
    """The items of `rounds` (a list of lists, one per round) in order, every second round reversed: A B, B A, A B, ...
    Neither a drift over the run nor an item's position inside its round then poses as a difference between items."""
    return [item for number, items in enumerate(rounds) for item in (items[::-1] if number % 2 else items)]


def experiment_trials(matrix, repetitions=3, done=None, identity=None, exclude=None, source="trials.jsonl", interleave=False):
    """Expand a matrix {axis: [values]} into trials, skipping those already done.

    matrix: a mapping {axis: [values]} (every combination is a point), or a list of such
    mappings whose points are joined in order (so that, say, only XDP varies the touch mode).
    done: a list of trial ids or the text of a JSON-lines results file (named `source` in the warnings
    of its corrupt lines).
    exclude: partial points ({axis: value}) that are not measured.
    interleave: order the trials round by round instead (every point once per repetition), every second round
    in reverse (A B, B A, A B, ...): counterbalanced, so that neither a drift over the run nor a trial's position
    inside its round poses as a difference between points.
    Returns [{"trial_id", "point": {axis: value}, "repetition", "index", "total"}] in matrix order,
    repetitions innermost (or round by round, with interleave), for the trials not yet done.
    """
    subs = _sub_matrices(matrix)
    try:
        repetitions = int(repetitions)
    except (TypeError, ValueError):
        raise AnsibleFilterError("experiment_trials: repetitions must be a whole number, got %r" % (repetitions,)) from None
    if repetitions < 1:
        raise AnsibleFilterError("experiment_trials: repetitions must be at least 1, got %d" % repetitions)
    if isinstance(done, str):
        done = done_trial_ids(done, source)
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
    if interleave:
        # by the repetition's own number, so that a resumed run keeps each round's order
        trials = counterbalanced([[t for t in trials if t["repetition"] == rep] for rep in range(1, repetitions + 1)])
    return trials


def generator_backends(_ignored=None):
    """Names of the generator backends xdplab.testbed.traffic_generator knows."""
    # imported here, not with the file: the generator backends take ~50 ms to import, and every task that templates
    # any of this collection's filters imports every filter file afresh in its worker (module_utils/_ndrpdr.py)
    from ansible_collections.xdplab.testbed.plugins.module_utils._generators import backend_names

    return backend_names()


class FilterModule:
    def filters(self):
        return {
            "experiment_trials": experiment_trials,
            "matrix_axis": matrix_axis,
            "done_trial_ids": done_trial_ids,
            "trial_id": trial_id,
            "generator_backends": generator_backends,
        }

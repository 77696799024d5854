# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The experiment's plan as filters: its matrix (``system_matrix``: each kind of system on its own axes), the trials of
the matrix still to run (``experiment_trials``), and the rounds in which several DUTs run them (``experiment_schedule``).

The schedule is static and computed once, on every DUT, from every DUT's pending trials: rounds. A round holds at
most one trial of each lane; a lane is the DUTs that must not measure at the same time (those sharing a generator
host, or all of them with mode serial). The experiment role includes trial.yml once per round for every DUT at once,
so the trials of one round run side by side and two rounds never overlap (roles/experiment/tasks/trials.yml,
docs/ARCHITECTURE.md "Several DUTs").
"""

from __future__ import annotations

import hashlib
import itertools
import json

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl, _record, _systems

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


def system_matrix(names, axes, systems, dut_cpus=(), dpdk_main_lcore=0):
    """The matrix of the named systems, each kind on its own axes (module_utils/_systems.py)."""
    try:
        return _systems.system_matrix(names, axes, systems, dut_cpus, dpdk_main_lcore)
    except _systems.SystemsError as exc:
        raise AnsibleFilterError(str(exc)) from None


MODES = ("generator", "serial")


def _lanes(duts, mode):
    lanes = {}
    for dut in sorted(duts):
        spec = duts[dut]
        if not isinstance(spec, dict) or "pending" not in spec:
            raise AnsibleFilterError("experiment_schedule: %s: needs {generator, pending}, got %r" % (dut, spec))
        key = "all DUTs" if mode == "serial" else str(spec.get("generator") or dut)
        lanes.setdefault(key, []).append(dut)
    return lanes


def experiment_schedule(duts, mode="generator"):
    """Rounds of trials: in each, at most one trial per lane; DUTs of a lane take turns trial by trial.

    duts: {dut: {generator: host, pending: [trial, ...]}}. Returns {rounds, lanes: {lane: [dut]},
    duts: {dut: {"<round>": trial}}} (round numbers as strings: keys of a mapping that survives
    Ansible's templating).
    """
    if mode not in MODES:
        raise AnsibleFilterError("experiment_schedule: mode must be one of %s, got %r" % (", ".join(MODES), mode))
    if not isinstance(duts, dict):
        raise AnsibleFilterError("experiment_schedule: expects a mapping {dut: {generator, pending}}, got %r" % (duts,))
    lanes = _lanes(duts, mode)
    out = {dut: {} for dut in duts}
    rounds = 0
    for members in lanes.values():
        queues = [list(duts[dut]["pending"] or []) for dut in members]
        slot = 0
        # round-robin over the lane's DUTs: dut1 trial 1, dut2 trial 1, dut1 trial 2, ...
        while any(queues):
            for dut, queue in zip(members, queues):
                if queue:
                    out[dut][str(slot)] = queue.pop(0)
                    slot += 1
        rounds = max(rounds, slot)
    return {"rounds": rounds, "lanes": lanes, "duts": out}


def _port_of(gen):
    """The generator ports one DUT claims: [(port id, how the inventory named it)]."""
    options = gen.get("options") or {}
    interface = gen.get("interface")
    if gen.get("backend") == "trex":
        ports = [str(p) for p in options.get("ports") or []]
        if options.get("port") is not None:
            tx = int(options["port"])
        elif str(interface) in ports:
            tx = ports.index(str(interface))
        elif str(interface).isdigit():
            tx = int(interface)
        else:
            tx = str(interface)
        claims = [(tx, "%s (sends)" % (interface if options.get("port") is None else "port %s" % tx))]
        claims += [(int(p), "port %s (receives)" % p) for p in options.get("rx_ports") or []]
        return claims
    return [(str(interface), str(interface))]


def generator_port_conflicts(duts):
    """Messages for every generator port that two DUTs claim: [] when every DUT has its own.

    duts: {dut: {host, backend, interface, options}} (each DUT's generator as the experiment role sees it:
    the generator host's xdplab_generator_* with the DUT's xdplab_dut_generator over them).
    """
    if not isinstance(duts, dict):
        raise AnsibleFilterError("generator_port_conflicts: expects a mapping {dut: generator}, got %r" % (duts,))
    owners = {}
    for dut in sorted(duts):
        gen = duts[dut] or {}
        for port, named in _port_of(gen):
            owners.setdefault((str(gen.get("host")), port), []).append((dut, named))
    errors = []
    for (host, port), claims in sorted(owners.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        if len(claims) < 2:
            continue
        who = " and ".join("%s (%s)" % (dut, named) for dut, named in claims)
        errors.append(
            "%s claim the same port %s of generator %s: give each DUT its own port "
            "(xdplab_dut_generator.interface, or with T-Rex options.port / options.rx_ports)" % (who, port, host)
        )
    return errors


class FilterModule:
    def filters(self):
        return {
            "experiment_trials": experiment_trials,
            "matrix_axis": matrix_axis,
            "done_trial_ids": done_trial_ids,
            "trial_id": trial_id,
            "generator_backends": generator_backends,
            "system_matrix": system_matrix,
            "experiment_schedule": experiment_schedule,
            "generator_port_conflicts": generator_port_conflicts,
        }

#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ndr_pdr_search
short_description: The next trial of an NDR/PDR search (FD.io CSIT's MLRsearch), or its result
version_added: 0.4.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Replays one NDR/PDR search of MLRsearch (the C(MLRsearch) package of FD.io CSIT, PyPI) over the trials already
    recorded for it in O(records), and returns either the next trial to measure (its offered load and duration)
    or, when the search has ended, its bounds and conditional throughput per goal.
  - A trial of the search is a trial record of the experiment role whose point has C(search) (O(search)),
    C(step) (1, 2, ...), C(load_pps), C(trial_s) and the rest equal to O(point). Its counts are the generator's own
    (frames sent; frames the DUT's receive ring refused, C(egress.refused)), over the generator's run.
  - MLRsearch is deterministic given its trial results, so the replay asks for the recorded trials in the same
    order; a re-run resumes after the last recorded one. A record that does not match what the search asks is an
    error (another configuration - start afresh).
  - When the search is done, appends its summary (bounds, conditional throughput, trials, wall time, pacing)
    to C(ndr_pdr.jsonl) beside O(records), once per search.
  - Runs on the controller (delegate_to localhost).
options:
  records:
    description: The experiment's trials.jsonl.
    type: path
    required: true
  search:
    description: Which search of the point (1, 2, ... - the repetitions of a search).
    type: int
    required: true
  point:
    description: The experiment point searched (matrix axes, without search, step, load_pps, trial_s, offered_mpps).
    type: dict
    required: true
  goals:
    description:
      - MLRsearch search goals (C(SearchGoal) fields) with a C(name). Empty - CSIT's defaults, NDR (loss ratio 0)
        and PDR (loss ratio 0.005), exceed ratio 0.5, relative width 0.005, 1 s trials, duration sum 21 s.
    type: list
    elements: dict
    default: []
  min_load_pps:
    description: The search's lowest load.
    type: float
    default: 10000
  max_load_pps:
    description:
      - The search's highest load; at most the generator's ceiling. Default O(ceiling_share) of the ceiling.
    type: float
  ceiling_pps:
    description:
      - The generator's ceiling on this testbed (so that a generator limit is never reported as the DUT's NDR).
        Default - the offered rate of the search's step 0 in O(records), a trial of the same point at the
        generator's full, unpaced rate.
    type: float
  ceiling_share:
    description: The highest load as a share of the ceiling when O(max_load_pps) is not given (the pacing's margin).
    type: float
    default: 0.9
  warmup_duration:
    description: Duration of MLRsearch's warm-up trial at the highest load (its result is not used); 0 - none.
    type: float
    default: 0
  max_trials:
    description: Fail rather than ask for more trials than this.
    type: int
    default: 200
notes:
  - Check mode computes the next step and writes nothing.
"""

EXAMPLES = r"""
- name: Next trial of the search
  xdplab.testbed.ndr_pdr_search:
    records: results/ndr_pdr/dut/trials.jsonl
    search: 1
    point: {system: xdp, action: drop, touch: no_touch, packet_len: 64, cores: 1}
    max_load_pps: 3000000
  delegate_to: localhost
  register: step
"""

RETURN = r"""
done:
  description: Whether the search has ended.
  returned: success
  type: bool
ceiling_pps:
  description: The generator's ceiling used (given, or step 0's offered rate), in every step of the search.
  returned: success
  type: float
max_load_pps:
  description: The search's highest load, in every step of the search.
  returned: success
  type: float
next:
  description: The trial to measure next, C({step, duration, load_pps, offered_mpps}) (not done).
  returned: success
  type: dict
result:
  description: >-
    The search's result (done) - goals [{name, loss_ratio, exceed_ratio, relative_width, lower_bound_pps,
    upper_bound_pps, conditional_throughput_pps, generator_limited}], trials, trial_seconds, wall_s, started_at,
    finished_at, pacing {min, max, mean} (achieved offered rate / requested), max_path_loss_pps, ceiling_pps,
    max_load_pps, per-trial list.
  returned: success
  type: dict
"""

import datetime
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl, _ndrpdr


def _ts(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ") if text else None


class Search:
    def __init__(self, module):
        self.module = module
        self.p = module.params

    def run(self):
        p = self.p
        records, warnings = _jsonl.read(p["records"], missing_ok=True)
        for w in warnings:
            self.module.warn(str(w))
        if p["ceiling_pps"] is None:
            p["ceiling_pps"] = _ndrpdr.ceiling_of(records, p["search"], p["point"])
        if p["ceiling_pps"] is None:
            self.module.fail_json(
                msg="no ceiling of the generator: give ceiling_pps or record step 0 of search %d first" % p["search"]
            )
        if p["max_load_pps"] is None:
            p["max_load_pps"] = p["ceiling_pps"] * p["ceiling_share"]
        if p["max_load_pps"] > p["ceiling_pps"]:
            self.module.fail_json(
                msg="the search's highest load %.0f pps is above the generator's ceiling %.0f pps on this testbed: a generator "
                "limit would pass for the DUT's NDR; lower ndr_pdr_max_mpps" % (p["max_load_pps"], p["ceiling_pps"])
            )
        try:
            trials = _ndrpdr.search_trials(records, p["search"], p["point"])
            step = _ndrpdr.next_step(trials, p["goals"], p["min_load_pps"], p["max_load_pps"], p["warmup_duration"] or None)
        except _ndrpdr.SearchInputError as exc:
            self.module.fail_json(msg=str(exc))
        if not step["done"]:
            if step["step"] > p["max_trials"]:
                self.module.fail_json(
                    msg="search %d needs a trial %d, more than max_trials %d" % (p["search"], step["step"], p["max_trials"])
                )
            return dict(
                changed=False,
                done=False,
                ceiling_pps=p["ceiling_pps"],
                max_load_pps=p["max_load_pps"],
                next={
                    "step": step["step"],
                    "duration": step["duration"],
                    "load_pps": step["load"],
                    "offered_mpps": step["load"] / 1e6,
                },
            )
        result = self._result(step, trials)
        changed = self._record(result)
        return dict(
            changed=changed, done=True, next={}, result=result, ceiling_pps=p["ceiling_pps"], max_load_pps=p["max_load_pps"]
        )

    def _result(self, step, trials):
        p = self.p
        used = trials[: step["trials"]]
        for goal in step["goals"]:
            # the highest load is below the ceiling; a lower bound there is the generator's figure, not the DUT's
            goal["generator_limited"] = goal["lower_bound_pps"] is not None and goal["upper_bound_pps"] is None
        pacing = [t["pacing"] for t in used if t["pacing"] is not None]
        starts = [_ts(t["started_at"]) for t in used if t["started_at"]]
        ends = [_ts(t["finished_at"]) for t in used if t["finished_at"]]
        return dict(
            search=p["search"],
            point=p["point"],
            goals=step["goals"],
            trials=len(used),
            trial_seconds=sum(t["duration"] for t in used),
            started_at=min(starts).strftime("%Y-%m-%dT%H:%M:%SZ") if starts else None,
            finished_at=max(ends).strftime("%Y-%m-%dT%H:%M:%SZ") if ends else None,
            wall_s=(max(ends) - min(starts)).total_seconds() if starts and ends else None,
            pacing={"min": min(pacing), "max": max(pacing), "mean": sum(pacing) / len(pacing)} if pacing else None,
            max_path_loss_pps=max((t["path_loss_pps"] for t in used), default=None),
            ceiling_pps=p["ceiling_pps"],
            max_load_pps=p["max_load_pps"],
            min_load_pps=p["min_load_pps"],
            per_trial=[
                {
                    k: t[k]
                    for k in (
                        "step",
                        "load",
                        "duration",
                        "offered",
                        "lost",
                        "loss_ratio",
                        "offered_pps",
                        "pacing",
                        "counted_pps",
                        "trial_id",
                    )
                }
                for t in used
            ],
        )

    def _record(self, result):
        path = os.path.join(os.path.dirname(os.path.abspath(self.p["records"])), "ndr_pdr.jsonl")
        key = [t["trial_id"] for t in result["per_trial"]]
        done, _w = _jsonl.read(path, missing_ok=True)
        if any([t["trial_id"] for t in r.get("per_trial", [])] == key for r in done):
            return False
        if not self.module.check_mode:
            _jsonl.append_line(path, json.dumps(result, sort_keys=True))
        return True


# the module's arguments, also validated by its action plugin when it runs on the controller (plugins/action)
ARGUMENT_SPEC = dict(
    records=dict(type="path", required=True),
    search=dict(type="int", required=True),
    point=dict(type="dict", required=True),
    goals=dict(type="list", elements="dict", default=[]),
    min_load_pps=dict(type="float", default=10000.0),
    max_load_pps=dict(type="float"),
    ceiling_pps=dict(type="float"),
    ceiling_share=dict(type="float", default=0.9),
    warmup_duration=dict(type="float", default=0.0),
    max_trials=dict(type="int", default=200),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**Search(module).run())


if __name__ == "__main__":
    main()

#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ab_compare
short_description: B against A from an A/B comparison's trial records, with confidence intervals and a verdict
version_added: 0.4.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads the trial records of an A/B comparison (playbooks/ab_compare.yml), picks each variant's samples (the ok
    records of its point, any block, in the order they ran) and compares their O(metric) - by default the rates
    (C(result.pps)).
  - The relative difference of B against A is that of the geometric means; its interval is Welch's t on the log
    rates (scipy.stats.ttest_ind, unequal variances). A bootstrap interval (scipy.stats.bootstrap, BCa, fixed seed)
    is given beside it as a check. For a kernel comparison the unit is the block (a boot) - one mean log rate per
    boot, so a difference between boots is not taken for one between kernels.
  - Writes, in O(dest) (default the records' directory), C(ab_compare.md) (the verdict, the statistics, the
    per-sample table), C(ab_compare.csv) (the samples), C(ab_compare.json) (the whole result), the figure
    C(ab_compare.png) (gnuplot; both distributions and the interval, its sources C(ab_compare.gp) and C(.dat) beside
    it), and appends the verdict as one JSON line to C(ab_verdicts.jsonl). With an O(metric) other than C(pps) the
    files are C(ab_compare_<metric>.*), so the same records can be compared on every metric.
  - Runs on the controller (delegate_to localhost). Needs scipy (requirements.txt) and gnuplot (gnuplot-nox).
options:
  records:
    description: The comparison's trials.jsonl.
    type: path
    required: true
  plan:
    description: The plan of the comparison (filter M(xdplab.testbed.ab_compare_plan)'s result).
    type: dict
    required: true
  dest:
    description: Directory for the report files; default the directory of O(records).
    type: path
  title:
    description: The report's title; default C(B against A).
    type: str
  metric:
    description:
      - What is compared. C(pps) - the rate the DUT counted in its window (C(result.pps)).
      - C(cpu_ns_per_packet) - the run time of the DUT's work threads (threaded NAPI, C(napi/<if>-<id>); schedstat,
        exact per thread; C(result.cpu_usage.work)) over the trial's CPU window, divided by the packets of that window
        (the counted rate times the window's length; exact when the rate holds over the window, as at a paced load
        the DUT keeps up with). Other tenants of the DUT's CPU lower the rate, but not what a packet costs the thread
        that handles it, so on a shared machine this shows smaller differences than the rate at the same N.
      - C(bpf_ns_per_packet) - the XDP program's own run time per run (kernel bpf_stats, C(result.cpu_usage.bpf));
        the role reads it for XDP systems at a paced load only (C(offered_mpps) > 0).
      - A sample without the metric fails the comparison and says what the metric needs.
    type: str
    choices: [pps, cpu_ns_per_packet, bpf_ns_per_packet]
    default: pps
  confidence:
    description: Confidence level of the intervals.
    type: float
    default: 0.95
  higher:
    description: The verdict's word for B above A; default the metric's (C(faster) for C(pps), C(slower) for a time
      per packet).
    type: str
  lower:
    description: The verdict's word for B below A; default the metric's (C(slower) for C(pps), C(faster) for a time
      per packet).
    type: str
  figure:
    description: Draw the figure with gnuplot.
    type: bool
    default: true
  gnuplot:
    description: The gnuplot executable.
    type: str
    default: gnuplot
notes:
  - Check mode computes the result and writes nothing. Idempotent - files are rewritten only when their content
    changes, and a verdict already in C(ab_verdicts.jsonl) is not appended again.
"""

EXAMPLES = r"""
- name: B against A from the records
  xdplab.testbed.ab_compare:
    records: results/ab_compare/dut/trials.jsonl
    plan: "{{ ab_compare_a | xdplab.testbed.ab_compare_plan(ab_compare_b, ab_compare_point, 15) }}"
  delegate_to: localhost
  register: ab

- name: The same records on the DUT thread's CPU time per packet (results/ab_compare/dut/ab_compare_cpu_ns_per_packet.md)
  xdplab.testbed.ab_compare:
    records: results/ab_compare/dut/trials.jsonl
    plan: "{{ ab_compare_a | xdplab.testbed.ab_compare_plan(ab_compare_b, ab_compare_point, 15) }}"
    metric: cpu_ns_per_packet
  delegate_to: localhost
"""

RETURN = r"""
verdict:
  description: The sentence to paste into a mailing-list post.
  returned: success
  type: str
  sample: B is 2.7 % slower than A (95 % CI 2.1-3.3 %, 15 samples each, interleaved)
result:
  description: >-
    The statistics (module_utils/_abstats.compare) - relative, ci, df, t, p_value, n_a, n_b, cv_a, cv_b, mdd,
    bootstrap {ci, method, n_resamples, seed}, significant, geomean_a, geomean_b, unit (sample or block), metric.
  returned: success
  type: dict
samples:
  description: >-
    The samples per variant, C({A, B}), each C({pps, cpu_ns_per_packet, bpf_ns_per_packet, block, repetition,
    started_at, trial_id, cpu_busy, limit}) (a metric that was not measured is null).
  returned: success
  type: dict
report:
  description: Path of ab_compare.md (ab_compare_<metric>.md).
  returned: success
  type: str
"""

import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _abreport, _abstats, _jsonl


class ABCompare:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.changed = False
        self.diff = {"before": "", "after": ""}

    def _write(self, path, text):
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    return False
        except FileNotFoundError:
            pass
        self.diff["after"] += "%s\n" % path
        if not self.module.check_mode:
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
        return True

    def run(self):
        try:
            records, warnings = _jsonl.read(self.p["records"])
        except FileNotFoundError:
            self.module.fail_json(msg="no trial records at %s: run playbooks/ab_compare.yml first" % self.p["records"])
        for w in warnings:
            self.module.warn(str(w))
        plan = self.p["plan"]
        picked = _abreport.samples(records, plan)
        try:
            result = _abreport.analyse(
                picked, plan, self.p["confidence"], self.p["higher"], self.p["lower"], metric=self.p["metric"]
            )
        except _abstats.ABStatsError as exc:
            self.module.fail_json(
                msg="cannot compare the records of %s: %s" % (self.p["records"], exc),
                samples={k: len(v) for k, v in picked.items()},
            )
        dest = self.p["dest"] or os.path.dirname(os.path.abspath(self.p["records"]))
        title = self.p["title"] or "%s against %s" % (plan["variants"]["B"]["name"], plan["variants"]["A"]["name"])
        if self.p["metric"] != "pps":
            title += " (%s)" % self.p["metric"]
        stem = "ab_compare" if self.p["metric"] == "pps" else "ab_compare_" + self.p["metric"]
        if not self.module.check_mode:
            os.makedirs(dest, exist_ok=True)
        files = {
            stem + ".md": _abreport.markdown(result, picked, plan, title, stem),
            stem + ".csv": _abreport.csv_text(picked),
            stem + ".json": json.dumps({"result": result, "samples": picked, "plan": plan}, indent=1, sort_keys=True) + "\n",
        }
        figure = _abreport.figure_files(result, picked, plan, title, stem) if self.p["figure"] else {}
        for name, text in files.items():
            self.changed = self._write(os.path.join(dest, name), text) or self.changed
        drawn = False
        for name, text in figure.items():
            drawn = self._write(os.path.join(dest, name), text) or drawn
        png = os.path.join(dest, stem + ".png")
        if figure and (drawn or not os.path.exists(png)) and not self.module.check_mode:
            gnuplot = self.module.get_bin_path(self.p["gnuplot"])
            if not gnuplot:
                self.module.fail_json(
                    msg="gnuplot (%s) not found on the controller: install gnuplot-nox or set figure: false" % self.p["gnuplot"]
                )
            rc, out, err = self.module.run_command([gnuplot, stem + ".gp"], cwd=dest)
            if rc != 0:
                self.module.fail_json(msg="gnuplot failed to draw %s (rc %d): %s" % (png, rc, (err or out)[-2000:]))
            self.changed = True
        self.changed = self._verdict_record(dest, result, picked, plan) or self.changed or drawn
        return dict(
            changed=self.changed,
            verdict=result["verdict"],
            result=result,
            samples=picked,
            report=os.path.join(dest, stem + ".md"),
            diff=self.diff,
        )

    def _verdict_record(self, dest, result, picked, plan):
        ids = sorted(s["trial_id"] for lab in picked for s in picked[lab])
        # the rate's key as before (verdicts recorded earlier are not appended again); another metric's has it in
        keyed = [plan["variants"]["A"]["given"], plan["variants"]["B"]["given"], ids]
        if result["metric"] != "pps":
            keyed.append(result["metric"])
        key = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:16]
        path = os.path.join(dest, "ab_verdicts.jsonl")
        done, _w = _jsonl.read(path, missing_ok=True)
        if any(r.get("verdict_id") == key for r in done):
            return False
        line = json.dumps(
            {
                "verdict_id": key,
                "verdict": result["verdict"],
                "metric": result["metric"],
                "result": result,
                "a": plan["variants"]["A"]["given"],
                "b": plan["variants"]["B"]["given"],
                "design": plan.get("design"),
                "trial_ids": ids,
            },
            sort_keys=True,
        )
        self.diff["after"] += line + "\n"
        if not self.module.check_mode:
            _jsonl.append_line(path, line)
        return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            records=dict(type="path", required=True),
            plan=dict(type="dict", required=True),
            dest=dict(type="path"),
            title=dict(type="str"),
            confidence=dict(type="float", default=0.95),
            metric=dict(type="str", default="pps", choices=list(_abreport.METRICS)),
            higher=dict(type="str"),
            lower=dict(type="str"),
            figure=dict(type="bool", default=True),
            gnuplot=dict(type="str", default="gnuplot"),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**ABCompare(module).run())


if __name__ == "__main__":
    main()

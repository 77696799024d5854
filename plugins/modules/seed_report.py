#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seed_report
short_description: The reports of the seeds' own experiments (AF_XDP table, XDP_PASS on TCP)
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads an experiment's trial records (contract 4, through _jsonl) and writes the seeds' report beside the generic
    report of M(xdplab.testbed.experiment_report).
  - O(kind=xdp_pass_tcp) (playbooks/xdp_pass_tcp.yml, seeds/002) writes C(tcp_report.md) - the headline "XDP_PASS
    costs X % more CPU per Gbit/s than no program (95 % CI)" per streams and window (Welch's t on log values, scipy,
    plugins/module_utils/_abstats.py), the seed's verdict row (+72 % CPU, -7 % goodput) beside ours, the table per
    program - and C(tcp_cpu_per_gbit.png) with its gnuplot source C(tcp_cpu_per_gbit.gp).
  - O(kind=afxdp) (playbooks/afxdp.yml, seeds/001) writes C(afxdp_report.md), the RFC's table (its CSV in
    O(reference)) beside ours in the seeds' layout; a cell this testbed cannot run carries the reason of O(reasons).
options:
  kind:
    description: Which report.
    type: str
    choices: [xdp_pass_tcp, afxdp]
    required: true
  results:
    description: The experiment's trials.jsonl on the controller.
    type: path
    required: true
  dest:
    description: Directory the report goes to.
    type: path
    required: true
  seed:
    description: "O(kind=xdp_pass_tcp) - the seed's numbers C({source, none: {goodput_gbit, cpu_busy}, pass_native: {...}})."
    type: dict
    default: {}
  reference:
    description: O(kind=afxdp) - the seeds' CSV (benchmark, packet_bytes, xdp_skb_mpps, xdp_drv_mpps).
    type: path
  reasons:
    description:
      - O(kind=afxdp) - why a cell cannot run here, by C(bench/packet_len/bind) with C(*) wildcards (for example
        C(*/*/drv_zerocopy) - veth has no zero-copy).
    type: dict
    default: {}
  veth:
    description: O(kind=xdp_pass_tcp) - the DUT port is a veth; the report says what differs from a NIC.
    type: bool
    default: false
  gnuplot:
    description: gnuplot binary (the figure is skipped with a warning when it is missing).
    type: str
    default: gnuplot
attributes:
  check_mode:
    support: full
    description: Builds the report and says whether a file would change, writes nothing.
  diff_mode:
    support: none
    description: Writes reports and changes no configuration, so there is no diff.
"""

EXAMPLES = r"""
- name: The TCP report
  xdplab.testbed.seed_report:
    kind: xdp_pass_tcp
    results: results/xdp_pass_tcp/dut/trials.jsonl
    dest: results/xdp_pass_tcp/dut
    seed: {none: {goodput_gbit: 89.7, cpu_busy: 58}, pass_native: {goodput_gbit: 83.3, cpu_busy: 100}}
  delegate_to: localhost
"""

RETURN = r"""
report:
  description: Path of the markdown report.
  type: str
  returned: always
headline:
  description: The headline lines (xdp_pass_tcp) or the table (afxdp).
  type: str
  returned: always
text:
  description: The whole report.
  type: str
  returned: always
figure:
  description: Path of the PNG (xdp_pass_tcp), null when not drawn.
  type: str
  returned: always
"""

import csv
import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl
from ansible_collections.xdplab.testbed.plugins.module_utils import _seed_report as sr


class SeedReport:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.changed = False

    def records(self):
        recs, warnings = _jsonl.read(self.p["results"], missing_ok=True)
        for w in warnings:
            self.module.warn(str(w))
        return recs

    def write(self, path, text):
        old = None
        if os.path.exists(path):
            with open(path) as f:
                old = f.read()
        if old == text:
            return False
        self.changed = True
        if not self.module.check_mode:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        return True

    def tcp(self):
        recs = self.records()
        rows = sr.tcp_rows(recs)
        png = os.path.join(self.p["dest"], "tcp_cpu_per_gbit.png")
        figure = None
        if rows:
            _data, script = sr.tcp_figure(rows, png)
            gp = os.path.join(self.p["dest"], "tcp_cpu_per_gbit.gp")
            redraw = self.write(gp, script) or not os.path.exists(png)
            if shutil.which(self.p["gnuplot"]):
                if redraw and not self.module.check_mode:
                    rc, _out, err = self.module.run_command([self.p["gnuplot"], gp])
                    if rc != 0:
                        self.module.warn("gnuplot failed on %s: %s" % (gp, err.strip()))
                figure = png
            else:
                self.module.warn("%s is not installed (apt-get install gnuplot-nox): no figure" % self.p["gnuplot"])
        text, rows, heads = sr.tcp_markdown(
            recs, self.p["seed"], veth=self.p["veth"], figure=os.path.basename(png) if figure else None
        )
        path = os.path.join(self.p["dest"], "tcp_report.md")
        self.write(path, text)
        return {"report": path, "text": text, "figure": figure, "headline": "\n".join(h["text"] for h in heads), "rows": rows}

    def afxdp(self):
        if not self.p["reference"]:
            self.module.fail_json(msg="kind afxdp needs reference: the seeds' CSV (playbooks/reference/afxdp_rfc_v3.csv)")
        with open(self.p["reference"]) as f:
            ref = list(csv.DictReader(f))
        recs = self.records()
        cores = sorted({r.get("point", {}).get("cores") for r in recs if r.get("point", {}).get("cores") is not None})
        text = sr.afxdp_markdown(recs, ref, self.p["reasons"], ",".join(str(c) for c in cores) or None)
        path = os.path.join(self.p["dest"], "afxdp_report.md")
        self.write(path, text)
        return {"report": path, "text": text, "figure": None, "headline": text}

    def run(self):
        result = {"xdp_pass_tcp": self.tcp, "afxdp": self.afxdp}[self.p["kind"]]()
        result["changed"] = self.changed
        return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kind=dict(type="str", required=True, choices=["xdp_pass_tcp", "afxdp"]),
            results=dict(type="path", required=True),
            dest=dict(type="path", required=True),
            seed=dict(type="dict", default={}),
            reference=dict(type="path"),
            reasons=dict(type="dict", default={}),
            veth=dict(type="bool", default=False),
            gnuplot=dict(type="str", default="gnuplot"),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**SeedReport(module).run())


if __name__ == "__main__":
    main()

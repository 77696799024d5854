#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: latency_report
short_description: The latency experiment's table beside the paper's, and its CDF figure
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads the trial records (docs/trial_record.schema.json) that have a C(latency) section and writes
    C(latency.csv) and C(latency.md) (ours, the floor as its own row, nothing subtracted; the paper's table
    beneath) and C(latency_cdf.png) (log x, one line per system and load, from each record's encoded HdrHistogram)
    with its gnuplot script and data beside it.
  - Runs on the controller; the figure needs gnuplot (Debian package gnuplot-nox) and the PyPI package hdrhistogram.
attributes:
  check_mode:
    support: full
    description: Reads the records and reports what would be written; writes nothing.
  diff_mode:
    support: none
    description: Writes reports and changes no configuration, so there is no diff.
options:
  results:
    description: The records (trials.jsonl).
    type: path
    required: true
  dest:
    description: Directory of the report.
    type: path
    required: true
  title:
    description: Title of the table and the figure.
    type: str
    default: Forwarding latency
  reference:
    description: The paper's latency table (CSV), shown beneath ours.
    type: path
  gnuplot:
    description: The gnuplot binary; the figure is skipped with a warning when it is missing.
    type: str
    default: gnuplot
"""

EXAMPLES = r"""
- name: Latency report
  xdplab.testbed.latency_report:
    results: results/paper_latency/dut/trials.jsonl
    dest: results/paper_latency/dut
    reference: playbooks/reference/latency.csv
"""

RETURN = r"""
rows:
  description: One row per system, load and repetition (microseconds).
  returned: always
  type: list
  elements: dict
  sample: [{system: latency_floor, offered_pps: 100, average_us: 9.2, p99_us: 21.3, accounted: true}]
files:
  description: The files written (or that would be).
  returned: always
  type: list
  elements: str
"""

import csv
import io
import os
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl
from ansible_collections.xdplab.testbed.plugins.module_utils import _latency as latency

CDF_NAME = "latency_cdf"


class LatencyReport:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.result = {"changed": False, "rows": [], "files": []}

    def write(self, name, text):
        path = os.path.join(self.p["dest"], name)
        self.result["files"].append(path)
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old != text:
            self.result["changed"] = True
            if not self.module.check_mode:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
        return old != text

    def run(self):
        records, warnings = _jsonl.read(self.p["results"], missing_ok=True)
        for w in warnings:
            self.module.warn(w)
        try:
            rows = latency.report_rows(records)
        except RuntimeError as exc:
            self.module.fail_json(msg=str(exc))
        reference = []
        if self.p["reference"]:
            with open(self.p["reference"], encoding="utf-8") as f:
                reference = list(csv.DictReader(f))
        if not self.module.check_mode:
            os.makedirs(self.p["dest"], exist_ok=True)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=latency.REPORT_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        self.write("latency.csv", buf.getvalue())
        self.write("latency.md", latency.report_markdown(rows, reference, self.p["title"]))
        script, data = latency.cdf_gnuplot(rows, CDF_NAME, self.p["title"] + " - CDF")
        redraw = False
        for name, text in data.items():
            redraw |= self.write(name, text)
        redraw |= self.write(CDF_NAME + ".gp", script)
        png = os.path.join(self.p["dest"], CDF_NAME + ".png")
        gnuplot = self.module.get_bin_path(self.p["gnuplot"])
        if not gnuplot:
            self.module.warn("gnuplot is not installed: no latency_cdf.png (apt-get install gnuplot-nox)")
        elif (redraw or not os.path.exists(png)) and not self.module.check_mode:
            proc = subprocess.run([gnuplot, CDF_NAME + ".gp"], cwd=self.p["dest"], capture_output=True, text=True,
                                  check=False)  # fmt: skip
            if proc.returncode:
                self.module.fail_json(msg=f"gnuplot failed on {CDF_NAME}.gp: {proc.stderr.strip()}", **self.result)
            self.result["changed"] = True
        self.result["files"].append(png)
        self.result["rows"] = [{k: v for k, v in r.items() if k != "encoded"} for r in rows]
        self.result["table"] = latency.report_markdown(rows, reference, self.p["title"])
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "results": {"type": "path", "required": True},
            "dest": {"type": "path", "required": True},
            "title": {"type": "str", "default": "Forwarding latency"},
            "reference": {"type": "path"},
            "gnuplot": {"type": "str", "default": "gnuplot"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**LatencyReport(module).run())


if __name__ == "__main__":
    main()

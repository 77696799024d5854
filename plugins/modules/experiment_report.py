#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: experiment_report
short_description: Turn an experiment's trial records into a CSV and a Markdown table
version_added: 0.1.0
description:
  - Reads the JSON-lines trial records an experiment wrote (one line per trial, see docs/ARCHITECTURE.md),
    aggregates the repetitions of each matrix point (mean, stdev, ns per packet, per-queue spread, offered
    load, loss) and writes C(report.csv) and C(report.md) next to them.
  - Where a reference CSV of the paper is given, a column shows the paper's number for the same system and
    core count, for comparison only (another testbed).
  - Runs on the controller (where the records are).
author:
  - xdplab.testbed developers
options:
  results:
    description: Path of the JSON-lines trial records.
    type: path
    required: true
  dest:
    description: Directory for report.csv and report.md (default, the directory of O(results)).
    type: path
  title:
    description: Title of the Markdown table.
    type: str
    default: Results
  reference:
    description: Path of a reference CSV with a C(cores) column (for example drop_vs_cores.csv).
    type: path
  reference_columns:
    description:
      - Map of system name to the reference CSV column holding its pps (for example xdp -> xdp_drop_pps), or to a
        mapping with keys C(column) (the CSV column) and C(match) (a partial point, axis -> value), so the paper's
        number is shown only beside matching rows (the paper's XDP drop series is touch no_touch).
    type: dict
    default: {}
notes:
  - Check mode computes the tables and reports whether the files would change, without writing them.
"""

EXAMPLES = r"""
- name: Tables of the drop experiment
  xdplab.testbed.experiment_report:
    results: results/paper_drop/trials.jsonl
    title: XDP_DROP by DUT cores
    reference: "{{ playbook_dir }}/reference/drop_vs_cores.csv"
    reference_columns:
      xdp: xdp_drop_pps
  delegate_to: localhost
  register: report

- name: Print it
  ansible.builtin.debug:
    msg: "{{ report.markdown.splitlines() }}"
"""

RETURN = r"""
rows:
  description: One aggregated row per matrix point.
  returned: always
  type: list
  elements: dict
  sample:
    - system: xdp
      action: drop
      touch: no_touch
      packet_len: 64
      cores: 1
      repetitions: 3
      mpps_mean: 5.912
      mpps_stdev: 0.021
      ns_per_packet: 169.1
      queue_spread: 1.0
      offered_mpps: 6.2
      loss_pct: 4.6
      limit: dut
      paper_mpps: 23.86
markdown:
  description: The Markdown table with its notes and provenance.
  returned: always
  type: str
csv:
  description: The CSV text.
  returned: always
  type: str
files:
  description: Paths of the written (or, in check mode, to be written) files.
  returned: always
  type: list
  elements: str
trials:
  description: Number of trial records read.
  returned: always
  type: int
skipped_lines:
  description: Lines of the records file that were not valid JSON (for example cut by a crash); they are ignored.
  returned: always
  type: int
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import report


class ExperimentReport:
    def __init__(self, module):
        self.module = module
        self.p = module.params

    def _reference(self):
        if not self.p["reference"]:
            return {}
        try:
            with open(self.p["reference"]) as f:
                text = f.read()
        except OSError as exc:
            self.module.fail_json(msg="cannot read reference %s: %s" % (self.p["reference"], exc))
        try:
            return report.reference_series(text, self.p["reference_columns"])
        except (KeyError, TypeError, ValueError) as exc:
            self.module.fail_json(msg="reference_columns do not fit %s: %r" % (self.p["reference"], exc))

    def _write(self, path, text):
        try:
            with open(path) as f:
                if f.read() == text:
                    return False
        except FileNotFoundError:
            pass
        if not self.module.check_mode:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        return True

    def run(self):
        try:
            with open(self.p["results"]) as f:
                records, bad = report.read_records(f.read())
        except FileNotFoundError:
            self.module.fail_json(msg="no trial records at %s: run the experiment first" % self.p["results"])
        rows = report.aggregate(records, self._reference())
        markdown = report.to_markdown(rows, self.p["title"], report.provenance_lines(records))
        csv_text = report.to_csv(rows)
        dest = self.p["dest"] or os.path.dirname(os.path.abspath(self.p["results"]))
        if not self.module.check_mode:
            os.makedirs(dest, exist_ok=True)
        files = [os.path.join(dest, "report.csv"), os.path.join(dest, "report.md")]
        changed = self._write(files[0], csv_text)
        changed = self._write(files[1], markdown) or changed
        return dict(
            changed=changed, rows=rows, markdown=markdown, csv=csv_text, files=files, trials=len(records), skipped_lines=bad
        )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results=dict(type="path", required=True),
            dest=dict(type="path"),
            title=dict(type="str", default="Results"),
            reference=dict(type="path"),
            reference_columns=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**ExperimentReport(module).run())


if __name__ == "__main__":
    main()

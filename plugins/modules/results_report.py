#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: results_report
short_description: Static HTML pages of a results tree (experiments, runs, trials, two runs compared)
version_added: 0.1.0
description:
  - Reads every run of a results tree, C(ROOT/<experiment>/<run>/trials.jsonl) with what the report step wrote beside
    it (M(xdplab.testbed.experiment_report)'s C(report.csv) and figures, M(xdplab.testbed.latency_report)'s
    C(latency.csv)), and writes static HTML pages into the tree, C(ROOT/index.html) (the experiments and every run
    with its machine, commit, foreign CPU load and command), C(ROOT/<experiment>/index.html) (the runs, a trend
    table of the counted rate by run, the paper's numbers, each run's figures and tables),
    C(ROOT/<experiment>/<run>/index.html) (one run, its tables, figures and every trial's record, one click away) and
    C(ROOT/<experiment>/compare-<A>-vs-<B>.html) for each run against the one before it (per matrix point both
    measured, the means, their ratio and, with three trials a side or more, the A/B statistics' verdict).
  - The pages need no server, no script and nothing from the internet; they open from C(file://).
  - With O(update_run_meta), rewrites each run's C(run.json) part C(derived) (the machine, commits, time window and
    foreign CPU load the records' provenance gives) and keeps the rest (the command, where the records came from);
    a run without C(run.json) gets one whose command is C(not recorded).
  - Runs on the controller, where the records are. Needs jinja2 (it comes with ansible-core); the verdicts need
    scipy.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  root:
    description: The results tree (for example C(results) or C(docs/results)).
    type: path
    required: true
  title:
    description: Title of the index page.
    type: str
    default: Results
  references:
    description:
      - Map of an experiment's name to the paper's CSV it is compared with (relative to O(reference_dir)); the
        experiment's page shows that table.
    type: dict
    default: {}
  reference_dir:
    description: Directory of the reference CSVs; its C(README.md) names the paper's testbed.
    type: path
  update_run_meta:
    description: Rewrite each run's C(run.json) derived part from its records (see the description).
    type: bool
    default: false
notes:
  - Check mode reports whether a page would change, writing nothing.
  - A page is written only when its text changed (idempotent).
"""

EXAMPLES = r"""
- name: HTML pages of the results tree
  xdplab.testbed.results_report:
    root: "{{ playbook_dir }}/../results"
    references:
      paper_drop: drop_vs_cores.csv
    reference_dir: "{{ playbook_dir }}/reference"
  delegate_to: localhost
"""

RETURN = r"""
files:
  description: Paths of the pages (and, with O(update_run_meta), the run.json files) written or, in check mode, to be.
  returned: always
  type: list
  elements: str
  sample: [results/index.html, results/paper_drop/index.html, results/paper_drop/dut/index.html]
changed_files:
  description: The subset of RV(files) whose text changed.
  returned: always
  type: list
  elements: str
runs:
  description: Number of runs read, by experiment.
  returned: always
  type: dict
  sample: {paper_drop: 1, paper_forward: 2}
"""

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils import _html_report as html


def _write(module, path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    if not module.check_mode:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", required=True),
            title=dict(type="str", default="Results"),
            references=dict(type="dict", default={}),
            reference_dir=dict(type="path"),
            update_run_meta=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    if not html.HAS_JINJA2:
        module.fail_json(msg=missing_required_lib("jinja2"), exception=str(html.JINJA2_IMPORT_ERROR))
    p = module.params
    try:
        pages, runs = html.pages(p["root"], p["references"], p["reference_dir"], p["title"])
    except html.ResultsTreeError as exc:
        module.fail_json(msg=str(exc))
    texts = {os.path.join(p["root"], rel): text for rel, text in pages.items()}
    if p["update_run_meta"]:
        for exp_runs in runs.values():
            for run in exp_runs:
                meta = dict(run.meta) or {"run_id": run.name, "experiment": run.experiment, "command": html.NOT_RECORDED}
                texts[os.path.join(run.directory, html.RUN_META)] = html.meta_text(meta, run.derived)
    files = sorted(texts)
    changed = [path for path in files if _write(module, path, texts[path])]
    module.exit_json(
        changed=bool(changed),
        files=files,
        changed_files=changed,
        runs={exp: len(r) for exp, r in runs.items()},
    )


if __name__ == "__main__":
    main()

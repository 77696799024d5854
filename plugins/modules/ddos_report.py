#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ddos_report
short_description: The DoS experiment's table (TCP_RR under a UDP flood) beside the paper's
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads the trial records of playbooks/paper_ddos.yml (their C(ddos) section) and writes C(ddos.md) beside them
    (or into O(dest)) - per system and attack rate TCP_RR transactions/s (mean of the samples) and sd, % of that
    system's baseline (attack rate 0) and of the control row (system ddos_control, the flood sent to a sink, not the
    DUT) at the same rate, the attack rate achieved, where the DUT dropped the flood and the application
    CPU's busy share, with the paper's numbers (O(reference), usecase_ddos.csv) beside at the same rates; then
    the ratio rows (TCP_RR held under attack) and the issue's check (without XDP TCP_RR falls to 0 before the
    flood reaches the Linux drop rate; with XDP it holds to at least 3x that rate, of its baseline and of the control
    row); last, the application CPU the
    records name (C(ddos.app_cpu)) and why it was chosen.
options:
  results:
    description: Path of the JSON-lines trial records.
    type: path
    required: true
  reference:
    description: The paper's numbers (usecase_ddos.csv).
    type: path
  dest:
    description: Directory for ddos.md (default, the directory of O(results)).
    type: path
attributes:
  check_mode:
    support: full
    description: Builds the table and writes nothing.
  diff_mode:
    support: none
    description: Nothing to compare (it writes the table anew).
"""

EXAMPLES = r"""
- name: The DoS table
  xdplab.testbed.ddos_report:
    results: results/paper_ddos/dut/trials.jsonl
    reference: playbooks/reference/usecase_ddos.csv
"""

RETURN = r"""
markdown:
  description: The table, the ratio rows and the check, in Markdown.
  type: str
  returned: always
check:
  description: C({linux_drop_pps, none_falls_before, xdp_holds_3x, xdp_holds_3x_against_control}) (null where not
    measured; the last one null without a control row).
  type: dict
  returned: always
path:
  description: Where ddos.md was written.
  type: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _ddos as ddos
from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl


def main():
    module = AnsibleModule(
        argument_spec=dict(results=dict(type="path", required=True), reference=dict(type="path"), dest=dict(type="path")),
        supports_check_mode=True,
    )
    p = module.params
    records, warnings = _jsonl.read_numbered(p["results"], missing_ok=True)
    for warning in warnings:
        module.warn(str(warning))
    labels = {}
    for _number, rec in records:
        system = (rec.get("point") or {}).get("system")
        label = ((rec.get("provenance") or {}).get("system") or {}).get("label")
        if system and label:
            labels[system] = label
    pts = ddos.points([rec for _number, rec in records])
    paper = {}
    if p["reference"]:
        with open(p["reference"], encoding="utf-8") as f:
            paper = ddos.paper_rows(f.read())
    markdown = "# TCP_RR under a UDP flood (paper_ddos)\n\n" + ddos.table_markdown(pts, paper, labels)
    markdown += "".join("\n" + line + "\n" for line in ddos.app_cpu_lines([rec for _number, rec in records]))
    path = os.path.join(p["dest"] or os.path.dirname(p["results"]), "ddos.md")
    changed = False
    if not module.check_mode:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(markdown)
        changed = True
    module.exit_json(changed=changed, markdown=markdown, check=ddos.check(pts), path=path)


if __name__ == "__main__":
    main()

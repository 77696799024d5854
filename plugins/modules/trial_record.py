#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trial_record
short_description: Record one trial of an experiment as a line of its JSON-lines results file
version_added: 0.3.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Builds the trial record (schema C(docs/trial_record.schema.json), version 1) from what the trial produced and
    appends it to O(path) as one JSON line. The record is built in Python (C(plugins/module_utils/_record.py)), not
    in Jinja; docs/ARCHITECTURE.md shows its shape.
  - A record with O(status=ok) carries the measurement (the measure task's C(measurement), contract 1) with the DUT
    CPUs' use from O(cpu), the generator's summary without its per-interval records, the limit verdict (C(loss),
    which side limited the trial, the generator, the DUT or the line rate, and where packets were lost) and the
    provenance, to which it adds C(provenance.measurement) (what counted, where, and for XDP the count mode).
  - The limit verdict is decided here, once; the report (M(xdplab.testbed.experiment_report)) only aggregates it over
    the repetitions of a point.
  - A record with O(status=failed) carries O(failure) (the failed task, its error, and the process that died - exit
    status or signal and the last lines of its stderr), and whatever else is known (O(generator), O(measurement)).
    A re-run of the experiment retries it; only records with status V(ok) count as done.
  - The line is appended atomically (one write under an exclusive lock, then fsync). A file whose last line was cut
    (a crash) gets a newline first, so the new record starts on a line of its own; lines already in the file are
    never changed or removed.
  - Idempotent - a trial already recorded with status V(ok) is not recorded again, nor a failed attempt already
    recorded with the same O(started_at); a trial that fails again on a re-run gets a record of its own, so every
    attempt's error is kept.
  - Runs where the results are, on the controller (C(delegate_to=localhost)).
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    description: Builds and checks the record and tells whether it would be appended, without writing.
  diff_mode:
    support: full
    description: The line that is (or would be) appended.
options:
  path:
    description:
      - The experiment's JSON-lines results file (C(<results_dir>/<experiment>/<dut>/trials.jsonl)). It and its
        directory are created when missing.
    type: path
    required: true
  experiment:
    description: Name of the experiment (for example V(paper_drop)).
    type: str
    required: true
  trial:
    description:
      - The trial, one entry of the filter P(xdplab.testbed.experiment_trials#filter) - C(trial_id), C(point) (the
        matrix point, axis to value), C(repetition) (from 1), C(index), C(total).
    type: dict
    required: true
  status:
    description: V(ok) for a trial that measured, V(failed) for one that did not (then O(failure) is required).
    type: str
    choices: [ok, failed]
    default: ok
  started_at:
    description: When the trial started, UTC in ISO 8601 (C(2026-12-01T09:30:00Z)). Required with O(status=ok).
    type: str
  measurement:
    description:
      - The measure task's C(measurement) (C(__experiment_measured.measurement)) - the one shape every measuring
        module returns (C(pps), C(window), C(source) with C(kind), C(at) and for XDP C(count_mode), C(per_cpu),
        C(per_rxq), C(samples), ...). Required with O(status=ok).
    type: dict
  cpu:
    description:
      - The result of M(xdplab.testbed.cpu_usage) over the measurement (its C(since) call). The record keeps
        C(per_cpu) as C(result.cpu), their mean busy % as C(result.cpu_busy) and the rest (sources, foreign
        processes) as C(result.cpu_usage); C(result.cpu_foreign) says whether other processes ran on the DUT's CPUs.
    type: dict
  generator:
    description:
      - The C(summary) M(xdplab.testbed.traffic_generator) returned when it stopped (C(offered_pps), C(elapsed_s),
        C(egress), C(intervals), C(version), C(command), ...). Required with O(status=ok). The record keeps it without
        its per-interval records, which only serve to take the offered load over the measurement's window.
    type: dict
  tcp:
    description:
      - The TCP experiment's trial (playbooks/xdp_pass_tcp.yml) - the iperf3 client's result (the generator summary's
        C(tcp)) with the DUT port's driver counter rates as C(driver_rates). The record's C(tcp) section gets it with
        the DUT's CPU split (user, system, softirq), CPU per Gbit/s and the driver's page/cache counters
        (plugins/module_utils/_tcp.py). Other experiments leave it out.
    type: dict
  forwarding:
    description:
      - The forwarding experiments' section (playbooks/paper_forward.yml, plugins/module_utils/_forwarding.py
        C(forwarding_section)) - forwarded pps as received at the generator's receive ports, the DUT's own counts,
        and where the rest was lost (refused at the DUT's ring, dropped in the DUT, lost on the way back). Kept as
        the record's C(forwarding). Other experiments leave it out.
    type: dict
  latency:
    description:
      - The latency experiment's section (playbooks/paper_latency.yml) - the C(latency) that
        M(xdplab.testbed.latency_stats) returned (average, min, max, percentiles, share under 10 us, loss, reordering,
        achieved offered rate, the encoded HdrHistogram). Kept as the record's C(latency). Other experiments leave it
        out.
    type: dict
  ddos:
    description:
      - The DoS experiment's section (playbooks/paper_ddos.yml, plugins/module_utils/_ddos.py) - the TCP_RR client's
        transactions/s under the flood, the attack as offered and achieved, where the DUT dropped it and every CPU's
        busy share. Kept as the record's C(ddos). Other experiments leave it out.
    type: dict
  provenance:
    description:
      - What the trial ran on - C(dut), C(system), C(program), C(generator), C(trial) (warm-up, interval, samples),
        C(controller). C(dut.link_speed_gbit), when known, sets the link speed of the line-rate verdict.
    type: dict
    default: {}
  kept_up_share:
    description: The DUT counted at least this share of the offered load - the generator, not the DUT, was the limit.
    type: float
    default: 0.99
  link_speed_gbit:
    description:
      - Speed of the DUT's link in Gbit/s (C(provenance.dut.link_speed_gbit) wins). A trial the DUT kept up with,
        offered at 95% or more of the link's line rate, is limited by the line rate. Unknown (veth) by default.
    type: float
  failure:
    description:
      - Why the trial failed, with O(status=failed) - C(task) (C(ansible_failed_task.name)), C(error)
        (C(ansible_failed_result.msg)) and C(process) (C(ansible_failed_result.process) of a module whose process
        died - C(pid), C(exit_status), C(signal), C(signal_name), C(stderr_tail)).
    type: dict
notes:
  - The file is read with the collection's one JSON-lines reader - a line that is not a JSON object is a warning naming
    C(file:line) and is left in the file as it is.
seealso:
  - module: xdplab.testbed.experiment_report
  - plugin: xdplab.testbed.experiment_trials
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Record the trial
  xdplab.testbed.trial_record:
    path: "{{ experiment_results_dir }}/{{ experiment_name }}/{{ inventory_hostname }}/trials.jsonl"
    experiment: "{{ experiment_name }}"
    trial: "{{ trial }}"
    status: ok
    started_at: "{{ __experiment_started }}"
    measurement: "{{ __experiment_measured.measurement }}"
    cpu: "{{ __experiment_cpu }}"
    generator: "{{ __experiment_generator_stopped.summary }}"
    provenance:
      dut: "{{ __experiment_dut_provenance }}"
      system: "{{ __experiment_system }}"
      program: "{{ __experiment_system_provenance }}"
      generator: "{{ __experiment_generator_provenance }}"
      trial: {warmup_s: "{{ experiment_warmup }}", interval_s: "{{ experiment_interval }}", samples: "{{ experiment_samples }}"}
      controller: "{{ __experiment_controller }}"
    kept_up_share: "{{ experiment_kept_up_share }}"
    link_speed_gbit: "{{ experiment_link_speed_gbit | default(omit) }}"
  delegate_to: localhost

- name: Record the failed trial (a re-run retries it)
  xdplab.testbed.trial_record:
    path: "{{ experiment_results_dir }}/{{ experiment_name }}/{{ inventory_hostname }}/trials.jsonl"
    experiment: "{{ experiment_name }}"
    trial: "{{ trial }}"
    status: failed
    started_at: "{{ __experiment_started | default(omit) }}"
    generator: "{{ __experiment_generator_stopped.summary | default(omit) }}"
    failure:
      task: "{{ ansible_failed_task.name | default('') }}"
      error: "{{ ansible_failed_result.msg | default(ansible_failed_result | string) }}"
      process: "{{ ansible_failed_result.process | default(omit) }}"
  delegate_to: localhost
"""

RETURN = r"""
record:
  description:
    - The trial record (docs/trial_record.schema.json) - appended, or the one already in the file when the trial was
      recorded with the same status before (then C(changed) is false).
  returned: always
  type: dict
  contains:
    schema:
      description: Version of the record's schema.
      type: int
      sample: 1
    trial_id:
      description: The trial's id (its matrix point, repetition and the DUT's identity).
      type: str
      sample: d010eae20fea9570
    status:
      description: V(ok) or V(failed).
      type: str
    point:
      description: The matrix point.
      type: dict
      sample: {system: xdp, action: drop, touch: no_touch, packet_len: 64, cores: 1}
    result:
      description: The measurement with C(cpu_busy), C(cpu), C(cpu_usage) and C(cpu_foreign).
      type: dict
      returned: status ok (and failed trials that measured)
    loss:
      description:
        - The limit verdict - C(offered_pps), C(offered_basis), C(counted_pps), C(lost_pps), C(pct), C(refused_pps),
          C(limit) (generator, dut, line rate), C(lost_at) (none, dut_rx_ring, path), C(where), C(kept_up_share),
          C(link_speed_gbit), C(line_rate_pps).
      type: dict
      returned: status ok
      sample: {limit: dut, lost_at: dut_rx_ring, offered_pps: 6182324.3, counted_pps: 5266458.7, pct: 14.814}
    failure:
      description: C(task), C(error) and C(process) of a failed trial.
      type: dict
      returned: status failed
path:
  description: The results file.
  returned: always
  type: str
line:
  description: The line of the file that holds the record (would hold it, in check mode).
  returned: always
  type: int
  sample: 12
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils._trial_record import ARGUMENT_SPEC, REQUIRED_IF, TrialRecorder


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, required_if=REQUIRED_IF, supports_check_mode=True)
    module.exit_json(**TrialRecorder(module).run())


if __name__ == "__main__":
    main()

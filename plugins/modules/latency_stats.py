#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: latency_stats
short_description: Read (or reset) the latency sink's histogram on an interface
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads the maps of C(xdp_latency_sink) (bpf/xdp_latency_sink.bpf.c) attached to O(interface) with
    M(xdplab.testbed.xdp_program) - the per-CPU log-linear histogram of latencies (buckets at most 0.78 % wide,
    0 ns to 17 s), the per-CPU summary (count, sum, min, max, sequence gaps, late frames) and the streams'
    sequence numbers.
  - The per-CPU histograms are summed and recorded, bucket by bucket at the bucket's midpoint, into an
    HdrHistogram (PyPI C(hdrhistogram)); the percentiles and the encoded histogram come from it. Average, min and
    max are the sink's exact values.
  - The frames are stamped by C(xdplab-trafficgen --latency-stamp) (M(xdplab.testbed.traffic_generator)
    option C(latency_stamp)) with C(bpf_ktime_get_ns()) when the generator's program runs; the sink reads the
    same clock (CLOCK_MONOTONIC of the same host) when its program runs.
  - O(state=reset) zeroes the maps (before a generator run, whose sequence numbers restart at 0).
  - O(state=measured) counts the stamped frames the sink receives over a window (O(warmup), then O(samples) x
    O(interval)) and returns the one measurement shape (C(measurement), at C(generator_rx)) - the measure task of
    the latency floor, where no DUT counts.
extends_documentation_fragment: []
attributes:
  check_mode:
    support: full
    description: V(read) and V(measured) only read; V(reset) reports a change and zeroes nothing.
  diff_mode:
    support: none
    description: Reads or zeroes a map and changes no configuration, so there is no diff.
options:
  interface:
    description: Interface the sink is attached to, in the network namespace the module runs in.
    type: str
    required: true
  state:
    description:
      - V(read) returns the statistics since the last reset; V(reset) zeroes the maps; V(measured) samples the
        received rate over a window.
    type: str
    choices: [read, reset, measured]
    default: read
  sent:
    description:
      - Frames the generator sent (its stopped summary's C(sent)). With it the result has C(lost), C(loss_pct)
        and C(accounted) (every frame sent is in the histogram or lost).
    type: int
  seconds:
    description: Length of the generator's run, for C(offered_pps) and C(received_pps).
    type: float
  warmup:
    description: Seconds before the window (O(state=measured)).
    type: float
    default: 2.0
  interval:
    description: Seconds per sample (O(state=measured)).
    type: float
    default: 1.0
  samples:
    description: Samples in the window (O(state=measured)).
    type: int
    default: 5
  encode:
    description: Return the encoded HdrHistogram (C(histogram.encoded), base64 of the compressed form).
    type: bool
    default: true
requirements:
  - libbpf.so.1 on the target
  - the PyPI package hdrhistogram in the Python of the module (on the virtual lab, the venv of the controller)
notes:
  - The stamp includes what happens to a frame between the generator program's run and the sink program's run
    on the same machine - the generator's batch flush, the DUT and the veth hops. The floor (generator straight to
    its sink) measures what the method itself adds.
"""

EXAMPLES = r"""
- name: Zero the sink before the run
  xdplab.testbed.latency_stats:
    interface: veth-tg1
    state: reset

- name: Read the latency after the generator stopped
  xdplab.testbed.latency_stats:
    interface: veth-tg1
    sent: "{{ stopped.summary.sent }}"
    seconds: "{{ stopped.summary.elapsed_s }}"
  register: latency
"""

RETURN = r"""
latency:
  description: The record's latency section (docs/trial_record.schema.json).
  returned: state=read
  type: dict
  contains:
    count:
      description: Stamped frames in the histogram.
      type: int
    average_ns:
      description: Mean latency (the sink's sum / count).
      type: float
    min_ns:
      description: Smallest latency.
      type: int
    max_ns:
      description: Largest latency.
      type: int
    p50_ns:
      description: Median from the HdrHistogram (also p90_ns, p99_ns, p99_9_ns, p99_99_ns).
      type: int
    share_under_10us:
      description: Share (0..1) of the frames in buckets wholly below 10 us (a lower bound).
      type: float
    lost:
      description: Frames sent and not received (needs O(sent)).
      type: int
    lost_in_sequence:
      description: Frames missing from the sequence numbers (gaps minus late arrivals).
      type: int
    reordered:
      description: Frames that arrived after a later one.
      type: int
    accounted:
      description: Whether count + out of range + lost equals O(sent).
      type: bool
    offered_pps:
      description: O(sent) / O(seconds), the achieved offered rate.
      type: float
    histogram:
      description: "{kind: hdrhistogram, lowest_ns, highest_ns, significant_digits, encoded}."
      type: dict
  sample:
    count: 5000
    average_ns: 21500.3
    p50_ns: 19007
    share_under_10us: 0.02
    lost: 0
    accounted: true
measurement:
  description: The one measurement shape (plugins/module_utils/_measurement.py) of the stamped frames received.
  returned: state=measured
  type: dict
  sample: {pps: 100.0, packets: 500, source: {kind: program_map, at: generator_rx, count_mode: program}}
program:
  description: The sink program read (id, name, tag).
  returned: always
  type: dict
  sample: {id: 812, name: xdp_latency_sin, tag: 1a2b3c4d5e6f7a8b}
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _latency as latency
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement as measurement


class LatencyStats:
    """Does the work; main() only wires it."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.result = {"changed": False, "interface": self.p["interface"], "program": None}

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def sink(self):
        try:
            ifindex = socket.if_nametoindex(self.p["interface"])
        except OSError:
            names = ", ".join(n for _i, n in socket.if_nameindex())
            self.fail(f"interface {self.p['interface']} does not exist in this network namespace; interfaces: {names}")
        try:
            maps = latency.SinkMaps(libbpf, ifindex)
        except LookupError as exc:
            self.fail(
                f"{self.p['interface']}: {exc}; attach program {latency.PROGRAM} of xdp_latency_sink.bpf.o with "
                f"xdplab.testbed.xdp_program first"
            )
        except libbpf.LibbpfError as exc:
            self.fail(f"cannot read the XDP program of {self.p['interface']}: {exc}")
        info = maps.program
        self.result["program"] = {"id": maps.prog_id, "name": info.get("name"), "tag": info.get("tag")}
        return maps

    def measure(self, maps):
        try:
            sampler = measurement.Sampler.from_params(self.p)
        except measurement.SamplingError as exc:
            self.fail(str(exc))

        def read():
            t0 = time.monotonic()
            summ = latency.sum_summaries(libbpf.read_percpu_array(maps.maps[latency.SUMMARY_MAP]["id"])[0])
            return (t0 + time.monotonic()) / 2.0, summ["count"]

        try:
            snaps = [snap for _t, snap in sampler.run(read)]
        except libbpf.LibbpfError as exc:
            self.fail(f"reading the sink's maps on {self.p['interface']} failed: {exc}")
        samples = measurement.samples_from_counts(snaps, lambda c: c)
        window = measurement.window_of(snaps[0][0], snaps[-1][0])
        packets = snaps[-1][1] - snaps[0][1]
        source = {"kind": "program_map", "at": measurement.AT_GENERATOR_RX, "count_mode": "program",
                  "interface": self.p["interface"], "program": latency.PROGRAM, "map": latency.SUMMARY_MAP}
        self.result["measurement"] = measurement.measurement(
            packets / window["seconds"] if window["seconds"] > 0 else 0.0, window, source, packets=packets,
            samples=samples,
        )
        return self.result

    def run(self):
        maps = self.sink()
        if self.p["state"] == "measured":
            return self.measure(maps)
        if self.p["state"] == "reset":
            self.result["changed"] = True
            if not self.module.check_mode:
                maps.reset()
            return self.result
        if self.p["seconds"] is not None and self.p["seconds"] <= 0:
            self.fail(f"seconds must be positive, got {self.p['seconds']}")
        try:
            buckets, summary, streams = maps.read()
            self.result["latency"] = latency.statistics(
                buckets, summary, streams, sent=self.p["sent"], seconds=self.p["seconds"], encode=self.p["encode"]
            )
        except libbpf.LibbpfError as exc:
            self.fail(f"reading the sink's maps on {self.p['interface']} failed: {exc}")
        except RuntimeError as exc:
            self.fail(str(exc))
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "interface": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["read", "reset", "measured"], "default": "read"},
            "warmup": {"type": "float", "default": 2.0},
            "interval": {"type": "float", "default": 1.0},
            "samples": {"type": "int", "default": 5},
            "sent": {"type": "int"},
            "seconds": {"type": "float"},
            "encode": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    module.exit_json(**LatencyStats(module).run())


if __name__ == "__main__":
    main()

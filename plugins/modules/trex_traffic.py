#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trex_traffic
short_description: Send a T-Rex stateless profile for a duration and return rates, drops and latency
version_added: 0.1.0
description:
  - Runs C(xdplab-trex-run) (installed by the role C(xdplab.testbed.trex)) on the generator host, which drives the
    T-Rex stateless server through its Python client (C(trex.stl.api.STLClient) from
    O(trex_dir)C(/automation/trex_control_plane/interactive)), and waits for it.
  - The runner resets (acquires) the ports, loads O(profile) with its tunables onto O(port), starts it with the
    multiplier for O(warmup) + O(duration) seconds, clears the counters after the warm-up, samples the
    counters every second, stops the traffic and reports per-port packets, rates and errors, and, with
    O(latency=true), the latency of a flow-stats latency stream with percentiles from T-Rex's histogram.
  - This is the blocking, direct interface; M(xdplab.testbed.traffic_generator) with
    O(xdplab.testbed.traffic_generator#module:backend=trex) runs the same runner detached for the experiment playbooks.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  trex_dir:
    description: T-Rex install directory (the role's C(trex_dir)).
    type: path
    default: /opt/trex/v3.04
  runner:
    description: Path of C(xdplab-trex-run).
    type: path
    default: /usr/local/lib/xdplab/bin/xdplab-trex-run
  lib_dir:
    description: Directory holding C(xdplab_trex.py) and C(profiles/) (the role's C(trex_lib_dir)).
    type: path
    default: /usr/local/lib/xdplab/trex
  python:
    description: Python interpreter for the runner (T-Rex's client needs Python 3).
    type: path
    default: /usr/bin/python3
  server:
    description: Address of the T-Rex server.
    type: str
    default: 127.0.0.1
  sync_port:
    description: T-Rex RPC (synchronous) port.
    type: int
    default: 4501
  async_port:
    description: T-Rex publisher (asynchronous) port.
    type: int
    default: 4500
  port:
    description: T-Rex port number (order of C(interfaces) in C(/etc/trex_cfg.yaml)) that sends.
    type: int
    default: 0
  rx_ports:
    description:
      - T-Rex ports the traffic comes back on (forwarding tests). With them the result counts RV(received) and
        RV(drops.not_received); without, only what was sent is known (a drop test's DUT does not send back).
    type: list
    elements: int
    default: []
  profile:
    description:
      - STL Python profile, a name under O(lib_dir)C(/profiles) or an absolute path. Shipped profiles
        V(udp_for_benchmarks.py) (the paper's), V(udp_multi_ip.py) (destination IP varied over flows) and
        V(udp_latency.py) (used when O(latency=true)).
    type: str
    default: udp_for_benchmarks.py
  tunables:
    description: More profile tunables (for example C(ip_count) of V(udp_multi_ip.py)); they win over the ones below.
    type: dict
    default: {}
  packet_len:
    description: Frame length on the wire including the 4-byte FCS (64..1518).
    type: int
    default: 64
  stream_count:
    description: Number of UDP flows; flow I(i) has destination port O(port_base)+I(i).
    type: int
    default: 1
  port_base:
    description: UDP destination port of flow 0.
    type: int
    default: 12
  src_ip:
    description: IPv4 source address of the frames.
    type: str
    default: 198.18.0.1
  dst_ip:
    description: IPv4 destination address (the first one for V(udp_multi_ip.py)).
    type: str
    default: 198.18.0.2
  src_mac:
    description: Source MAC written into the frames; empty takes the port's MAC (T-Rex default).
    type: str
    default: ""
  dst_mac:
    description: Destination MAC written into the frames; empty takes C(port_info.dest_mac) of C(trex_cfg.yaml).
    type: str
    default: ""
  rate_pps:
    description: Offered load in frames per second over all flows; V(0) uses O(mult).
    type: float
    default: 0
  mult:
    description:
      - T-Rex multiplier when O(rate_pps) is 0, as the console's C(-m) takes it, V(100%) (line rate),
        V(10mpps), V(2) (twice the profile's own rate), V(40gbps).
    type: str
    default: 100%
  duration:
    description: Seconds measured (after the warm-up).
    type: float
    default: 10
  warmup:
    description: Seconds sent before the counters are cleared (not part of the result).
    type: float
    default: 0
  latency:
    description:
      - Add a latency stream (flow-stats latency, C(STLFlowLatencyStats)) of O(latency_pps) beside the load
        (profile V(udp_latency.py)) and return RV(latency). T-Rex does not scale a latency stream by the multiplier
        (a fixed-rate stream), so the load takes any O(rate_pps) or O(mult), V(100%) too; a pps rate is the total with
        the latency stream's frames included.
    type: bool
    default: false
  latency_pps:
    description: Frames per second of the latency stream.
    type: float
    default: 1000
  pg_id:
    description: Flow-stats group id of the latency stream.
    type: int
    default: 7
  percentiles:
    description:
      - Latency percentiles to return, from T-Rex's HdrHistogram where the server runs with C(--hdrh) (the role's
        C(trex_hdrh)), else the upper edges of its legacy histogram's buckets (see RV(latency)).
    type: list
    elements: float
    default: [50, 90, 99, 99.9]
  check_server:
    description: Check that the server's RPC port accepts connections before running.
    type: bool
    default: true
  destinations:
    description:
      - "Destination addresses the frames walk round robin instead of the one O(dst_ip) (issue 27), drawn
        C({count, seed, within, exclude}) or given C({list: [...]}): the same keys, checks and lists as
        M(xdplab.testbed.traffic_generator)'s O(xdplab.testbed.traffic_generator#module:destinations)."
      - "Every stream carries the list in T-Rex's field engine (a C(value_list) flow variable written to C(IP.dst), the
        IPv4 checksum fixed per frame, the UDP checksum 0); T-Rex's cores share the walk (core I(k) of I(n) starts at
        entry I(k) and steps I(n)). At most 65,535 addresses a list (T-Rex's C(value_list)), and the streams with their
        lists must fit the server's 999,999-byte request: both are checked, with the numbers, before anything is sent."
      - The list file lives in a temporary directory for the run (removed after it).
    type: dict
  sources:
    description: Source addresses the frames walk round robin instead of the one O(src_ip), as O(destinations) (C(IP.src)).
    type: dict
  exclude:
    description: IPv4 nets (CIDRs or ranges) that neither O(destinations) nor O(sources) may hold, besides their own C(exclude).
    type: list
    elements: str
    default: []
notes:
  - Check mode validates the input, the installation and the server's port and returns the command; it sends nothing.
  - T-Rex cannot be installed or run on the project's build machine; the statistics parsing is unit-tested against
    the client's message shapes (tests/unit/fixtures/trex), see docs/TREX.md.
seealso:
  - module: xdplab.testbed.traffic_generator
"""

EXAMPLES = r"""
- name: 6 flows of 64-byte UDP at line rate for 30 s from T-Rex port 0 (the paper's drop test)
  xdplab.testbed.trex_traffic:
    port: 0
    packet_len: 64
    stream_count: 6
    mult: 100%
    duration: 30
    warmup: 2
  register: drop_load

- name: Forwarding latency at 1 Mpps, traffic back on port 1
  xdplab.testbed.trex_traffic:
    port: 0
    rx_ports: [1]
    rate_pps: 1000000
    latency: true
    latency_pps: 1000
    duration: 30
  register: fwd

- name: 64-byte UDP to 4,000 seeded random destinations outside the lab's nets, at 10 Mpps
  xdplab.testbed.trex_traffic:
    port: 0
    rx_ports: [1]
    stream_count: 6
    rate_pps: 10000000
    destinations: {count: 4000, seed: 1}
    exclude: [198.18.0.0/15]
    duration: 10
  register: routing

- name: Show p99
  ansible.builtin.debug:
    msg: "p99 <= {{ fwd.latency.percentiles_us.p99 }} us, max {{ fwd.latency.max_us }} us"
"""

RETURN = r"""
command:
  description: The runner's command line.
  returned: always
  type: list
  elements: str
sent:
  description: Frames sent on O(port) during the measured period.
  returned: success and not check mode
  type: int
  sample: 2604392161
received:
  description: Frames received on O(rx_ports) during the measured period (0 without O(rx_ports)).
  returned: success and not check mode
  type: int
elapsed_s:
  description: Seconds measured.
  returned: success and not check mode
  type: float
  sample: 30.001
tx_pps:
  description: Offered load, RV(sent) / RV(elapsed_s).
  returned: success and not check mode
  type: float
rx_pps:
  description: Received rate, RV(received) / RV(elapsed_s).
  returned: success and not check mode
  type: float
ports:
  description:
    - Per T-Rex port (key the port number as a string) the client's counters of the measured period
      (opackets, ipackets, obytes, ibytes, oerrors, ierrors) and its last rates (tx_pps, rx_pps, tx_bps, rx_bps,
      tx_bps_L1, rx_bps_L1, tx_util, rx_util).
  returned: success and not check mode
  type: dict
total:
  description: The same counters summed over all of the server's ports (the client's C(total)), not only the run's.
  returned: success and not check mode
  type: dict
drops:
  description: Where frames were lost, by counter.
  returned: success and not check mode
  type: dict
  contains:
    not_received:
      description: Frames sent minus frames received; null without O(rx_ports).
      type: int
    oerrors:
      description: Output errors on the TX port.
      type: int
    ierrors:
      description: Input errors on the RX ports.
      type: int
    queue_full:
      description: Frames T-Rex itself could not queue (a generator limit).
      type: int
latency:
  description:
    - With O(latency=true), the latency stream over the measured period (after the warm-up) - tx_pkts, rx_pkts,
      min_us, average_us, mean_us, max_us, jitter_us, errors (dropped, out_of_order, dup, seq_too_high,
      seq_too_low), histogram (bucket start in µs -> frames), samples, percentiles_us (p50, p90, p99, p99_9) and
      share_below_us (percent of frames at or below 10 and 100 µs).
    - percentiles_from says where percentiles_us, share_below_us and samples come from - V(hdrh) (the server's
      HdrHistogram, C(t-rex-64 --hdrh); the encoded histogram at the end in hdrh, the one read before the
      post-warm-up clear in hdrh_start, the measured period is their difference) or V(histogram_bucket_bounds)
      (the legacy histogram, where a percentile is only its bucket's upper edge).
    - average_us is T-Rex's low-pass filtered average (0.5 x previous + 0.5 x the latest 0.5 s period's mean), not
      the mean of the frames; mean_us (with the HdrHistogram only) is that mean.
    - min_max_from says what min_us and max_us are - V(hdrh) (the measured period's, to the HdrHistogram's 3
      significant digits) or V(trex_totals) (min_us is T-Rex's total_min since the stream started, the warm-up
      included; max_us is the client's total_max after the clear, the largest of T-Rex's per-period maxima the
      runner read, once per interval - a lower bound).
  returned: when O(latency=true) and not check mode
  type: dict
intervals:
  description: One record per second (t, mono, sent, pps, received, rx_pps, per-port rates and counters).
  returned: success and not check mode
  type: list
  elements: dict
version:
  description: T-Rex server version (C(get_server_version)).
  returned: success and not check mode
  type: str
  sample: T-Rex v3.04
warnings_trex:
  description: Warnings the T-Rex client gave during the run.
  returned: success and not check mode
  type: list
  elements: str
stopped_by:
  description: What ended the run (duration, SIGINT, SIGTERM, traffic ended).
  returned: success and not check mode
  type: str
destinations:
  description:
    - The run's destination list (O(destinations)) as a record keeps it - count, seed (null for a given list),
      within, exclude, drawn, sha256 (of the list, one address a line) and first (its first five addresses).
  returned: when O(destinations) was given and not check mode
  type: dict
sources:
  description: The run's source list (O(sources)), as RV(destinations).
  returned: when O(sources) was given and not check mode
  type: dict
"""

import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _trex as trex
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import GeneratorError, json_records
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.trex import TrexGenerator
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.xdp_live import write_list

BACKEND_KEYS = ("trex_dir", "runner", "lib_dir", "python", "server", "sync_port", "async_port", "port", "rx_ports",
                "profile", "tunables", "mult", "latency", "latency_pps", "pg_id", "percentiles", "check_server")  # fmt: skip


class TrexTraffic:
    def __init__(self, module):
        self.module = module
        p = module.params
        options = {k: p[k] for k in BACKEND_KEYS}
        options["warmup_s"] = p["warmup"]
        params = {
            "run_dir": "/nonexistent",  # not used: this module runs the runner in the foreground
            "name": "trex_traffic",
            "interface": str(p["port"]),
            "src_mac": p["src_mac"] or None,
            "dst_mac": p["dst_mac"] or None,
            "src_ip": p["src_ip"],
            "dst_ip": p["dst_ip"],
            "packet_len": p["packet_len"],
            "stream_count": p["stream_count"],
            "port_base": p["port_base"],
            "queues": 1,
            "duration": p["duration"],
            "rate_pps": p["rate_pps"],
            "backend_options": options,
            **{key: p[key] for key in ("destinations", "sources", "exclude") if p[key]},
        }
        self.generator = TrexGenerator(params, module.run_command)

    def run(self):
        p = self.module.params
        if p["stream_count"] < 1 or p["duration"] <= 0 or p["warmup"] < 0 or p["rate_pps"] < 0:
            raise GeneratorError("stream_count and duration must be positive, warmup and rate_pps not negative")
        self.generator.validate()
        lists = self.generator.lists
        if not lists:
            return self.send()
        # the profile reads each list from a file (tunables dst_list, src_list): one for this run, removed after it
        list_dir = tempfile.mkdtemp(prefix="xdplab-trex-traffic.")
        try:
            self.generator.run.run_dir = list_dir
            if not self.module.check_mode:
                for option, (addrs, _described) in lists.items():
                    write_list(self.generator.run.list_path(option), addrs)
            result = self.send()
        finally:
            shutil.rmtree(list_dir, ignore_errors=True)
        if not self.module.check_mode:
            result.update({option: described for option, (_addrs, described) in lists.items()})
        return result

    def send(self):
        command = self.generator.command()
        result = {"changed": True, "command": command}
        if self.module.check_mode:
            return result
        rc, out, err = self.module.run_command(command)
        records = json_records(out)
        final = next((r for r in reversed(records) if r.get("type") == "summary"), None)
        if rc != 0 or final is None:
            error = next((r.get("message") for r in reversed(records) if r.get("type") == "error"), None)
            raise GeneratorError("xdplab-trex-run failed (status %d): %s" % (rc, error or err.strip() or "no summary printed"))
        result.update(
            sent=final["sent"],
            received=final["received"],
            elapsed_s=final["elapsed_s"],
            tx_pps=final["pps"],
            rx_pps=final["rx_pps"],
            ports=final["ports"],
            total=final["total"],
            drops=final["drops"],
            intervals=[r for r in records if r.get("type") == "interval"],
            version=final.get("version", ""),
            warnings_trex=final.get("warnings", []),
            stopped_by=final.get("stopped_by", ""),
        )
        if "latency" in final:
            # the runner's Python may lack hdrhistogram: decode the HdrHistogram here then
            result["latency"] = trex.with_hdrh(final["latency"])
        return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            trex_dir=dict(type="path", default="/opt/trex/v3.04"),
            runner=dict(type="path", default="/usr/local/lib/xdplab/bin/xdplab-trex-run"),
            lib_dir=dict(type="path", default="/usr/local/lib/xdplab/trex"),
            python=dict(type="path", default="/usr/bin/python3"),
            server=dict(type="str", default="127.0.0.1"),
            sync_port=dict(type="int", default=4501),
            async_port=dict(type="int", default=4500),
            port=dict(type="int", default=0),
            rx_ports=dict(type="list", elements="int", default=[]),
            profile=dict(type="str", default="udp_for_benchmarks.py"),
            tunables=dict(type="dict", default={}),
            packet_len=dict(type="int", default=64),
            stream_count=dict(type="int", default=1),
            port_base=dict(type="int", default=12),
            src_ip=dict(type="str", default="198.18.0.1"),
            dst_ip=dict(type="str", default="198.18.0.2"),
            src_mac=dict(type="str", default=""),
            dst_mac=dict(type="str", default=""),
            rate_pps=dict(type="float", default=0.0),
            mult=dict(type="str", default="100%"),
            duration=dict(type="float", default=10.0),
            warmup=dict(type="float", default=0.0),
            latency=dict(type="bool", default=False),
            latency_pps=dict(type="float", default=1000.0),
            pg_id=dict(type="int", default=7),
            percentiles=dict(type="list", elements="float", default=[50, 90, 99, 99.9]),
            check_server=dict(type="bool", default=True),
            destinations=dict(type="dict"),
            sources=dict(type="dict"),
            exclude=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    try:
        result = TrexTraffic(module).run()
    except GeneratorError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()

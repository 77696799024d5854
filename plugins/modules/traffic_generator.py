#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: traffic_generator
short_description: Start and stop packet generators behind one interface
version_added: 0.1.0
description:
  - The one generator interface of xdplab.testbed. A trial starts traffic with O(state=started),
    measures the device under test, then stops it with O(state=stopped), which returns a summary of
    what was sent in the same shape for every backend.
  - Backend V(xdp_live) runs C(xdplab-trafficgen) (bpf/xdp_trafficgen.c) on the virtual lab, BPF_PROG_RUN
    with live frames, one sender thread per DUT RX queue, so flow I(i) (UDP destination port
    O(port_base)+I(i)) lands on DUT queue I(i mod queues), as the paper's T-Rex profile udp_for_benchmarks.py
    does with RSS on hardware.
  - The generator runs detached; its pid, output and parameters live under O(run_dir), so a later task,
    an C(always:) section or a cleanup playbook can stop it.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  backend:
    description:
      - Which generator produces the traffic. Known today, V(xdp_live); T-Rex (hardware) joins later.
      - With O(state=stopped) the backend that started the run is used, whatever this says.
    type: str
    default: xdp_live
  state:
    description:
      - V(started) starts the generator unless the same run already runs (then nothing changes).
      - V(stopped) stops a running generator (SIGINT, then SIGKILL after O(stop_timeout)) and returns its summary;
        with O(wait=true) it first lets the run end by itself.
      - A generator that died before it was stopped (killed by a signal, or exited with a non-zero status) makes
        the first V(stopped) fail, naming the signal or status and the last lines of its stderr; it returns what
        it can (RV(process), a partial RV(summary)). Any later V(stopped) of that run, or of a run that ended or
        was never started, is not an error and changes nothing (an C(always:) step can stop again safely).
      - V(absent) stops it if it runs and removes the run's files (and O(run_dir) if that leaves it empty).
    type: str
    choices: [started, stopped, absent]
    default: started
  name:
    description: Name of the run; files under O(run_dir) are named after it.
    type: str
    default: trial
  run_dir:
    description: Directory on the generator host for the run's pid, output and error files.
    type: path
    default: /run/xdplab/generator
  interface:
    description: Egress interface name on the generator host (required with O(state=started)).
    type: str
  src_mac:
    description: Source MAC of the frames.
    type: str
  dst_mac:
    description: Destination MAC of the frames (the DUT port's MAC).
    type: str
  src_ip:
    description: Source IPv4 address.
    type: str
  dst_ip:
    description: Destination IPv4 address.
    type: str
  packet_len:
    description: Frame length including the 4-byte FCS, as T-Rex's packet_len (64 is the paper's size).
    type: int
    default: 64
  stream_count:
    description: Number of UDP flows; flow I(i) has destination port O(port_base)+I(i).
    type: int
    default: 1
  port_base:
    description: UDP destination port of flow 0 (12 in the paper's profile).
    type: int
    default: 12
  queues:
    description: Number of RX queues of the DUT port (flows map to queue I(i mod queues)).
    type: int
    default: 1
  cpus:
    description: CPUs of the generator host that sender threads may use.
    type: list
    elements: int
    default: []
  duration:
    description: Seconds the generator runs unless stopped earlier.
    type: int
    default: 10
  batch:
    description: Frames per BPF_PROG_RUN batch (xdp_live).
    type: int
    default: 64
  rate_pps:
    description:
      - Offered load in frames per second over all flows; V(0) sends as fast as the generator can.
      - The CPU-usage experiment offers fixed loads with it. V(xdp_live) paces each sender thread and sends
        in bursts of about 25 ms of its share (one BPF_PROG_RUN call), so short-term rates are higher.
    type: float
    default: 0
  destinations:
    description:
      - "Destination addresses the frames walk round robin instead of the one O(dst_ip) (issue 27: the routing
        experiment's random destinations). Either drawn, C({count, seed, within, exclude}), or given,
        C({list: [...]}) (then C(within) and C(exclude) still check it)."
      - "Drawn: C(count) unique IPv4 addresses (1 to 65,536), in the order C(random.Random(seed)) picks
        them from C(within) (IPv4 CIDRs or C(first-last) ranges; default the unicast /8s
        C(1.0.0.0-223.255.255.255)) less the martian space (0/8, 127/8, 169.254/16, 224/4, 240/4: the one list is
        C(MARTIAN_NETS) in module_utils/_addresses.py) and less C(exclude) and O(exclude). The same seed
        and spec give the same list. Drawing needs the Python library netaddr on the generator host."
      - "Bad input (a count of 0 or more than the space holds, a C(within) wholly martian, a given address
        that is martian, excluded or twice in the list) fails before anything starts."
      - "Backend V(xdp_live) writes the list to C(<run_dir>/<name>.destinations.txt) for C(xdplab-trafficgen --dst-list)
        (each sender thread starts at its own place in it; the IPv4 checksum is right for every address).
        V(trex) and V(iperf3) refuse address lists."
      - RV(summary.destinations) records what was sent (count, seed, within, exclude, sha256 of the list, its first
        entries).
    type: dict
  sources:
    description:
      - Source addresses the frames walk round robin instead of the one O(src_ip) (the load balancer's 1,000 clients),
        the same keys and checks as O(destinations) (C(xdplab-trafficgen --src-list); RV(summary.sources)).
    type: dict
  exclude:
    description:
      - "IPv4 nets (CIDRs or ranges) that neither O(destinations) nor O(sources) may hold, besides their own
        C(exclude): the generator's and the DUT's local and connected nets, which the caller knows."
    type: list
    elements: str
    default: []
  backend_options:
    description:
      - Settings only one backend understands (for example the T-Rex server, ports and profile), passed to the
        backend unchanged; each backend documents its keys and rejects unknown ones.
    type: dict
    default: {}
  binary:
    description: Path of the generator program (xdp_live); default from the role xdplab.testbed.bpf_programs.
    type: path
  wait:
    description: With O(state=stopped), wait for the run to end by itself (at most O(duration) + O(stop_timeout)).
    type: bool
    default: false
  stop_timeout:
    description: Seconds to wait after SIGINT before SIGKILL.
    type: float
    default: 10
  remove:
    description:
      - With O(state=stopped), remove the run's files once its summary is read, as V(absent) does (RV(removed)),
        so that a trial's C(always:) step has nothing left to do and can be skipped; a later V(stopped) of that run
        then finds nothing to stop.
      - A run that died (the stop fails) or whose stop is only checked (check mode) keeps its files, for V(absent)
        to remove.
    type: bool
    default: false
notes:
  - Check mode reports whether a generator would be started or stopped and changes nothing.
  - On veth the DUT side needs an XDP program or GRO enabled, or the frames are refused (counted in RV(summary.egress)).
seealso:
  - module: xdplab.testbed.xdp_stats
"""

EXAMPLES = r"""
- name: Offer 4 flows of 64-byte UDP for 20 s to a DUT with 4 RX queues
  xdplab.testbed.traffic_generator:
    backend: xdp_live
    state: started
    interface: veth-tg0
    src_mac: "02:00:00:00:00:01"
    dst_mac: "02:00:00:00:00:02"
    src_ip: 198.18.0.1
    dst_ip: 198.18.0.2
    stream_count: 4
    queues: 4
    cpus: [0, 1, 2, 3]
    duration: 20

- name: The same to 4,000 seeded random destinations outside the lab's nets
  xdplab.testbed.traffic_generator:
    state: started
    interface: veth-tg0
    src_mac: "02:00:00:00:00:01"
    dst_mac: "02:00:00:00:00:02"
    src_ip: 198.18.0.1
    dst_ip: 198.18.0.2
    destinations: {count: 4000, seed: 1}
    exclude: [198.18.0.0/15]
    cpus: [0]
    duration: 20

- name: Stop it and keep what was sent
  xdplab.testbed.traffic_generator:
    state: stopped
  register: sent
"""

RETURN = r"""
running:
  description: Whether the generator runs after the task.
  returned: always
  type: bool
  sample: true
started_epoch:
  description:
    - When the generator was started, on CLOCK_REALTIME (epoch seconds), just after its process was launched (O(state=started)).
      A measuring module's O(xdplab.testbed.xdp_stats#module:warmup_from) counts its warm-up from it.
  returned: when O(state=started) started a run
  type: float
  sample: 1764890000.123456
pid:
  description: Process id of the generator (O(state=started)).
  returned: when started
  type: int
  sample: 4242
command:
  description: The command line of the generator.
  returned: always
  type: list
  elements: str
removed:
  description:
    - Files of the run that O(state=absent), or O(state=stopped) with O(remove=true), removed (or would remove in
      check mode).
  returned: when O(state=absent) or O(remove=true) removed files
  type: list
  elements: str
process:
  description:
    - How the generator process ended (O(state=stopped)), recorded by the supervisor that started it.
    - On a failed stop it is returned with the failure, for the trial record's C(failure.process).
  returned: when O(state=stopped) found a run
  type: dict
  contains:
    pid:
      description: Process id of the generator.
      type: int
      sample: 4242
    exit_status:
      description: Its exit status; null if a signal ended it or the status is unknown.
      type: int
      sample: 0
    signal:
      description: Number of the signal that ended it; null if it exited.
      type: int
      sample: 9
    signal_name:
      description: Name of that signal.
      type: str
      sample: SIGKILL
    stderr_tail:
      description: The last lines of its stderr.
      type: str
      sample: "xdplab-trafficgen: bpf_prog_test_run: No such device"
msg:
  description: What O(state=stopped) found when there was nothing to stop.
  returned: when O(state=stopped) found no running or unreported run
  type: str
  sample: the generator run 'trial' was stopped already
summary:
  description: What was sent, the same shape for every backend.
  returned: when O(state=stopped) and a run left output
  type: dict
  contains:
    backend:
      description: Backend that produced the traffic.
      type: str
      sample: xdp_live
    sent:
      description: Frames sent.
      type: int
      sample: 61234567
    elapsed_s:
      description: Seconds the generator sent for.
      type: float
      sample: 10.0
    offered_pps:
      description: Offered load, frames per second over the run.
      type: float
      sample: 6123456.7
    packet_len:
      description: Frame length with FCS.
      type: int
      sample: 64
    stream_count:
      description: Number of flows.
      type: int
      sample: 2
    queues:
      description: DUT RX queues the flows were spread over.
      type: int
      sample: 2
    threads:
      description: Per sender thread, its CPU, target queue, flows and frames sent.
      type: list
      elements: dict
    intervals:
      description: Per-second records of the run (time, frames, pps).
      type: list
      elements: dict
    egress:
      description:
        - Frames the egress device handed on (delivered) and refused because the receiver's ring was full
          (refused, loss caused by the DUT), from the egress interface counters; null where unknown.
      type: dict
    version:
      description: Version string of the generator program.
      type: str
    pacing:
      description:
        - "Backend xdp_live: how C(--rate) was held: V(program) (the program spaces the frames, xdplab-trafficgen
          0.2.0), V(calls) (userspace paces bursts: C(latency_stamp)), V(call_length) (no keeper: bursts as long
          as a call), V(none) (no rate). Null from an older generator."
      type: str
      sample: program
    schedule_dropped_s:
      description:
        - "Backend xdp_live: seconds of the paced schedule the senders dropped, in all, because one lagged more than
          20 ms behind it (its CPU was taken): frames not sent rather than sent late in a burst. Null from an older
          generator."
      type: float
      sample: 0.0
    destinations:
      description:
        - "The run's destination list (O(destinations)), only when it had one: C(count), C(seed) (null for a given
          list), C(within), C(exclude), C(drawn) (false: a given list), C(sha256) (of the list, one address a line) and
          C(first) (its first five addresses)."
      type: dict
      returned: when O(destinations) was given
    sources:
      description: The run's source list (O(sources)), as RV(summary.destinations).
      type: dict
      returned: when O(sources) was given
    complete:
      description:
        - False when the run printed no summary (it was killed) and these numbers come from its interval records.
      type: bool
      sample: true
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _process
from ansible_collections.xdplab.testbed.plugins.module_utils._generators import GeneratorError, backend_for
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import ProcessRun


def program_name(command):
    """The program of a command line: its first word, or the script an interpreter runs."""
    if not command:
        return "generator"
    first = os.path.basename(command[0])
    if first.startswith("python") and len(command) > 1:
        return os.path.basename(command[1])
    return first


class TrafficGenerator:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.run_files = ProcessRun(self.p["run_dir"], self.p["name"])
        self.result = {"changed": False, "running": False, "command": []}

    def backend(self, name):
        return backend_for(name)(self.p, self.module.run_command)

    def ensure_started(self):
        for key in ("stream_count", "queues", "duration", "batch"):
            if self.p[key] < 1:
                raise GeneratorError("%s must be a positive number, got %d" % (key, self.p[key]))
        if self.p["rate_pps"] < 0:
            raise GeneratorError("rate_pps must be 0 (as fast as possible) or a positive rate, got %s" % self.p["rate_pps"])
        backend = self.backend(self.p["backend"])
        backend.validate()
        run = self.run_files
        state = run.load_state()
        if run.running(state):
            if state.get("backend") == backend.name and state["params"].get("identity") == backend.identity():
                self.result.update(running=True, pid=state["pid"], command=state["command"])
                return
            if not self.module.check_mode:
                run.stop(self.p["stop_timeout"])
        self.result["changed"] = True
        self.result["command"] = backend.command()
        if self.module.check_mode:
            return
        state = backend.start()
        # the instant a measuring module's warm-up counts from (its warmup_from): the generator is running now
        self.result.update(running=True, pid=state["pid"], started_epoch=round(time.time(), 6))

    def ensure_stopped(self):
        """Stop the run and return its summary; a run that died before it was stopped fails, once.

        The first stop of a run records its outcome in the state file; a later stop of the same run
        (an always: step after the trial's own stop) returns that outcome again, changed=false, and never
        fails. A run that was never started is not an error either.
        """
        run = self.run_files
        state = run.load_state()
        if state is None:
            self.result["msg"] = "no generator run %r under %s: nothing to stop" % (self.p["name"], self.p["run_dir"])
            return
        self.result["command"] = state.get("command", [])
        if state.get("stop_reported") or state.get("exit_reported"):
            self.result.update(
                msg="the generator run %r was stopped already" % self.p["name"],
                process=state.get("process") or _process.process_result(run.exit(state)),
            )
            if state.get("summary") is not None:
                self.result["summary"] = state["summary"]
            return
        backend = self.backend(state.get("backend") or self.p["backend"])
        was_running = run.running(state)
        ended_by_itself = not was_running
        signals = []
        if was_running:
            self.result["changed"] = True
            if self.module.check_mode:
                self.result["running"] = True
                return
            if self.p["wait"] and run.wait(self.p["duration"] + self.p["stop_timeout"], state):
                ended_by_itself = True
            else:
                signals = run.stop(self.p["stop_timeout"])["signals"]
        exit_info = run.exit(state)
        process = _process.process_result(exit_info)
        self.result["process"] = process
        what = "the generator (%s, pid %s)" % (program_name(state.get("command")), state.get("pid"))
        summary, no_summary = None, None
        try:
            summary = backend.summary(state, partial=True)
        except GeneratorError as exc:
            no_summary = str(exc)
        if summary is not None:
            self.result["summary"] = summary
        if no_summary is None and not summary.get("complete", True):
            no_summary = "it printed no summary line in %s, only %d interval records" % (
                run.out_path,
                len(summary.get("intervals", [])),
            )
        error = None
        known = exit_info is not None and (exit_info.get("signal") is not None or exit_info.get("exit_status") is not None)
        complete = summary is not None and summary.get("complete", True)
        # died: it failed by itself (a signal we did not send: it may have been dying as we stopped it)
        died = _process.failed(exit_info) and (exit_info or {}).get("signal_name") not in signals
        if died and (known or not complete):
            when = "before it was stopped" if ended_by_itself or exit_info.get("signal") is not None else "when it was stopped"
            error = _process.failure_message(what, exit_info, when)
        elif not complete and "SIGKILL" in signals:
            error = "%s did not stop within %gs of SIGINT and was killed (SIGKILL); %s" % (
                what,
                self.p["stop_timeout"],
                no_summary,
            )
        elif not complete:
            error = "%s %s, but %s" % (what, _process.describe(exit_info), no_summary)
        elif died:
            self.module.warn("%s %s; its summary is used" % (what, _process.describe(exit_info)))
        run.update_state(stop_reported=True, summary=summary, process=process, error=error)
        if error:
            raise GeneratorError(error, process=process)
        if self.p["remove"]:
            self.remove_files()

    def remove_files(self):
        run = self.run_files
        leftovers = run.files()
        if leftovers:
            self.result["changed"] = True
            self.result["removed"] = leftovers
            if not self.module.check_mode:
                run.remove()

    def ensure_absent(self):
        run = self.run_files
        state = run.load_state()
        if state is not None and run.running(state):
            self.result["changed"] = True
            if not self.module.check_mode:
                run.stop(self.p["stop_timeout"])
        self.remove_files()

    def run(self):
        {"started": self.ensure_started, "stopped": self.ensure_stopped, "absent": self.ensure_absent}[self.p["state"]]()
        return self.result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            backend=dict(type="str", default="xdp_live"),
            state=dict(type="str", default="started", choices=["started", "stopped", "absent"]),
            name=dict(type="str", default="trial"),
            run_dir=dict(type="path", default="/run/xdplab/generator"),
            interface=dict(type="str"),
            src_mac=dict(type="str"),
            dst_mac=dict(type="str"),
            src_ip=dict(type="str"),
            dst_ip=dict(type="str"),
            packet_len=dict(type="int", default=64),
            stream_count=dict(type="int", default=1),
            port_base=dict(type="int", default=12),
            queues=dict(type="int", default=1),
            cpus=dict(type="list", elements="int", default=[]),
            duration=dict(type="int", default=10),
            batch=dict(type="int", default=64),
            rate_pps=dict(type="float", default=0.0),
            destinations=dict(type="dict"),
            sources=dict(type="dict"),
            exclude=dict(type="list", elements="str", default=[]),
            backend_options=dict(type="dict", default={}),
            binary=dict(type="path"),
            wait=dict(type="bool", default=False),
            stop_timeout=dict(type="float", default=10.0),
            remove=dict(type="bool", default=False),
        ),
        required_if=[("state", "started", ("interface", "src_mac", "dst_mac", "src_ip", "dst_ip"))],
        supports_check_mode=True,
    )
    runner = TrafficGenerator(module)
    try:
        result = runner.run()
    except GeneratorError as exc:
        extra = {"process": exc.process} if exc.process else {}
        module.fail_json(msg=str(exc), **dict(runner.result, **extra))
    module.exit_json(**result)


if __name__ == "__main__":
    main()

#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tcp_rr
short_description: TCP request/response transactions per second (xdplab-tcp-rr, netperf TCP_RR's pattern)
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Runs the project's C(xdplab-tcp-rr) (bpf/tcp_rr.c, installed by the role xdplab.testbed.bpf_programs) - one TCP
    connection with C(TCP_NODELAY), one transaction outstanding, 1 byte each way by default, as netperf's TCP_RR.
  - V(present) keeps its server running in the module's network namespace, pinned to O(cpu), detached, its pid and
    start time in O(run_dir)/O(name).state.json (the same bookkeeping as M(xdplab.testbed.iperf3_server), one
    helper, C(DetachedServer) of C(module_utils/_process.py)).
  - V(absent) stops the server (SIGTERM, then SIGKILL) and removes its files; nothing running is not an error.
  - V(measured) runs the client against O(addr):O(port) for O(warmup) + O(duration) seconds and returns its samples
    (one per O(interval)), their mean and standard deviation, and its latency percentiles. A connection that makes no
    progress (a flood that starves it) gives samples of 0, not an error.
  - The DoS experiment (playbooks/paper_ddos.yml) runs the server on the DUT and the client on the generator host.
options:
  state:
    description: V(present) and V(absent) for the server, V(measured) for a run of the client.
    type: str
    choices: [present, absent, measured]
    default: present
  addr:
    description: The server's address (V(present) - where it listens; V(measured) - where the client connects).
    type: str
  port:
    description: The server's TCP port.
    type: int
    default: 12865
  cpu:
    description: CPU the server or the client runs on (unpinned when absent).
    type: int
  warmup:
    description: Seconds the client runs before its samples (left out of them; V(measured)).
    type: float
    default: 0
  duration:
    description: Seconds of samples (V(measured)).
    type: float
    default: 10
  interval:
    description: Seconds per sample (V(measured)).
    type: float
    default: 1
  name:
    description: Name of the server's run; its files under O(run_dir) are named after it.
    type: str
    default: tcp-rr-server
  run_dir:
    description: Directory for the server's pid, output and error files.
    type: path
    default: /run/xdplab/tcp_rr
  binary:
    description: The xdplab-tcp-rr program.
    type: path
    default: /usr/local/lib/xdplab/bin/xdplab-tcp-rr
  stop_timeout:
    description: Seconds to wait after SIGTERM before SIGKILL.
    type: float
    default: 5
attributes:
  check_mode:
    support: full
    description: Says whether the server would be started, replaced or stopped; a client run is not made.
  diff_mode:
    support: none
    description: Its server is a process, not a file.
requirements:
  - xdplab-tcp-rr (role xdplab.testbed.bpf_programs)
seealso:
  - module: xdplab.testbed.iperf3_server
"""

EXAMPLES = r"""
- name: A TCP_RR server on the DUT's CPU 0
  xdplab.testbed.tcp_rr:
    state: present
    addr: 198.18.0.2
    cpu: 0

- name: Four 3-second samples of transactions/s
  xdplab.testbed.tcp_rr:
    state: measured
    addr: 198.18.0.2
    warmup: 2
    duration: 12
    interval: 3
"""

RETURN = r"""
command:
  description: The server's or the client's command line.
  type: list
  elements: str
  returned: always
pid:
  description: Process id of the server.
  type: int
  returned: state present
running:
  description: Whether the server runs when the module returns.
  type: bool
  returned: state present or absent
tcp_rr:
  description: >-
    The client's run (state measured): C(trans_per_s) and C(trans_per_s_sd) over its C(samples)
    ([{t, seconds, transactions, trans_per_s}]), C(transactions), C(latency_us) {mean, p50, p90, p99, max},
    C(connected), C(connects), C(failures), C(warmup_transactions), C(request_size), C(response_size), C(version).
  type: dict
  returned: state measured
"""

import os
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _ddos as ddos
from ansible_collections.xdplab.testbed.plugins.module_utils._process import DetachedServer, Process, ProcessError, tail


class TcpRr:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.server = DetachedServer(self.p["run_dir"], self.p["name"], "tcp_rr_server", self.p["stop_timeout"])
        self.result = {"changed": False, "command": []}

    def check(self):
        if not os.access(self.p["binary"], os.X_OK):
            raise ProcessError(
                f"{self.p['binary']} is not installed here: run the role xdplab.testbed.bpf_programs (it builds "
                "bpf/tcp_rr.c), or set binary"
            )
        if not self.p["addr"]:
            raise ProcessError(f"state {self.p['state']} needs addr (the server's IPv4 address)")
        online = set(Process.child_cpus())
        if self.p["cpu"] is not None and online and self.p["cpu"] not in online:
            raise ProcessError(f"cpu {self.p['cpu']} is not online here (online: {sorted(online)})")

    def present(self):
        self.check()
        wanted = ddos.server_command(self.p["binary"], self.p["addr"], self.p["port"], self.p["cpu"])
        now = self.server.status()
        self.result.update(command=wanted, running=now.running)
        if now.runs(wanted):
            self.result["pid"] = now.pid
            return
        self.result["changed"] = True
        if self.module.check_mode:
            return
        self.result.update(running=True, pid=self.server.start(wanted, {"port": self.p["port"]}, now))

    def absent(self):
        now = self.server.status()
        self.result.update(command=now.command, running=False)
        if self.server.leftovers(now):
            self.result["changed"] = True
            if not self.module.check_mode:
                self.server.stop(now)

    def measured(self):
        self.check()
        argv = ddos.client_command(self.p["binary"], self.p["addr"], self.p["port"], self.p["warmup"],
                                   self.p["duration"], self.p["interval"], self.p["cpu"])  # fmt: skip
        self.result["command"] = argv
        if self.module.check_mode:
            return
        limit = self.p["warmup"] + self.p["duration"] + 30
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=limit, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ProcessError(f"{argv[0]} did not end within {limit:g} s (its duration plus 30 s)") from exc
        if done.returncode != 0:
            raise ProcessError(f"{argv[0]} exited {done.returncode}: {tail(done.stderr)}")
        try:
            self.result["tcp_rr"] = ddos.client_result(ddos.parse_lines(done.stdout), self.p["interval"])
        except ddos.DdosError as exc:
            raise ProcessError(str(exc)) from exc

    def execute(self):
        {"present": self.present, "absent": self.absent, "measured": self.measured}[self.p["state"]]()
        return self.result


def argument_spec():
    return dict(
        state=dict(type="str", choices=["present", "absent", "measured"], default="present"),
        addr=dict(type="str"),
        port=dict(type="int", default=12865),
        cpu=dict(type="int"),
        warmup=dict(type="float", default=0.0),
        duration=dict(type="float", default=10.0),
        interval=dict(type="float", default=1.0),
        name=dict(type="str", default="tcp-rr-server"),
        run_dir=dict(type="path", default="/run/xdplab/tcp_rr"),
        binary=dict(type="path", default="/usr/local/lib/xdplab/bin/xdplab-tcp-rr"),
        stop_timeout=dict(type="float", default=5.0),
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    runner = TcpRr(module)
    try:
        result = runner.execute()
    except ProcessError as exc:
        module.fail_json(msg=str(exc), **runner.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()

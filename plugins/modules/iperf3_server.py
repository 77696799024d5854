#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: iperf3_server
short_description: Run an iperf3 server pinned to CPUs, on the DUT of the TCP experiment
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Keeps one C(iperf3 --server) (Debian's iperf3) running in the module's network namespace, pinned with
    C(taskset) to O(cpus), detached, its pid and start time in O(run_dir)/O(name).state.json so a later task or a
    cleanup can stop it (the same bookkeeping as the generators; the helper C(DetachedServer) of
    C(module_utils/_process.py), which M(xdplab.testbed.tcp_rr)'s server uses too).
  - The TCP experiment (playbooks/xdp_pass_tcp.yml) starts it in the setup of its system C(tcp); the client is the
    generator backend C(iperf3) of M(xdplab.testbed.traffic_generator), whose C(--window) the server applies to
    its data sockets (iperf3 passes the client's settings to the server).
options:
  state:
    description:
      - V(present) starts the server unless one with the same command line already runs (then nothing changes);
        one with another command line is stopped and replaced.
      - V(absent) stops it (SIGTERM, then SIGKILL) and removes its files; nothing running is not an error.
    type: str
    choices: [present, absent]
    default: present
  name:
    description: Name of the run; its files under O(run_dir) are named after it.
    type: str
    default: iperf3-server
  run_dir:
    description: Directory for the run's pid, output and error files.
    type: path
    default: /run/xdplab/iperf3
  port:
    description: TCP port the server listens on.
    type: int
    default: 5201
  bind:
    description: Address to listen on (default every address of the namespace).
    type: str
  cpus:
    description: CPUs the server runs on (C(taskset -c)); empty runs it unpinned.
    type: list
    elements: int
    default: []
  binary:
    description: iperf3 program.
    type: str
    default: iperf3
  stop_timeout:
    description: Seconds to wait after SIGTERM before SIGKILL.
    type: float
    default: 5
attributes:
  check_mode:
    support: full
    description: Says whether the server would be started, replaced or stopped, and does nothing.
  diff_mode:
    support: full
    description: The server's command line before and after.
requirements:
  - iperf3 and taskset (util-linux) on the target
seealso:
  - module: xdplab.testbed.traffic_generator
"""

EXAMPLES = r"""
- name: An iperf3 server on the DUT's CPU 1
  xdplab.testbed.iperf3_server:
    cpus: [1]
    bind: 198.18.0.2

- name: No server left
  xdplab.testbed.iperf3_server:
    state: absent
"""

RETURN = r"""
pid:
  description: Process id of the server (state present).
  type: int
  returned: when running
command:
  description: The server's command line.
  type: list
  elements: str
  returned: always
version:
  description: C(iperf3 --version)'s first line.
  type: str
  returned: state present
running:
  description: Whether the server runs when the module returns.
  type: bool
  returned: always
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _iperf3 as iperf3
from ansible_collections.xdplab.testbed.plugins.module_utils._process import DetachedServer, Process, ProcessError


class Iperf3Server:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.server = DetachedServer(self.p["run_dir"], self.p["name"], "iperf3_server", self.p["stop_timeout"])
        self.result = {"changed": False, "running": False, "command": []}

    def command(self):
        return iperf3.server_command(self.p["bind"], self.p["port"], self.p["cpus"], self.p["binary"])

    def check(self):
        binary = self.p["binary"]
        if not (os.access(binary, os.X_OK) or shutil.which(binary)):
            raise ProcessError("%s is not installed on this host: apt-get install iperf3" % binary)
        if self.p["cpus"] and not shutil.which("taskset"):
            raise ProcessError("taskset is not installed (util-linux); it pins the server to cpus")
        online = set(Process.child_cpus())
        missing = [c for c in self.p["cpus"] if online and c not in online]
        if missing:
            raise ProcessError("cpus %s are not online here (online: %s)" % (missing, sorted(online)))

    def version(self):
        rc, out, _err = self.module.run_command([self.p["binary"], "--version"])
        return out.splitlines()[0].strip() if rc == 0 and out else ""

    def present(self):
        self.check()
        wanted = self.command()
        now = self.server.status()
        self.result.update(command=wanted, version=self.version())
        self.diff(now.command if now.running else [], wanted)
        if now.runs(wanted):
            self.result.update(running=True, pid=now.pid)
            return
        self.result["changed"] = True
        if self.module.check_mode:
            return
        self.result.update(running=True, pid=self.server.start(wanted, {"port": self.p["port"]}, now))

    def absent(self):
        now = self.server.status()
        self.result["command"] = now.command
        self.diff(now.command if now.running else [], [])
        if self.server.leftovers(now):
            self.result["changed"] = True
            if not self.module.check_mode:
                self.server.stop(now)

    def diff(self, before, after):
        if self.module._diff:
            self.result["diff"] = {
                "before": " ".join(before) + "\n" if before else "",
                "after": " ".join(after) + "\n" if after else "",
            }

    def execute(self):
        {"present": self.present, "absent": self.absent}[self.p["state"]]()
        return self.result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            name=dict(type="str", default="iperf3-server"),
            run_dir=dict(type="path", default="/run/xdplab/iperf3"),
            port=dict(type="int", default=iperf3.DEFAULT_PORT),
            bind=dict(type="str"),
            cpus=dict(type="list", elements="int", default=[]),
            binary=dict(type="str", default="iperf3"),
            stop_timeout=dict(type="float", default=5.0),
        ),
        supports_check_mode=True,
    )
    server = Iperf3Server(module)
    try:
        result = server.execute()
    except ProcessError as exc:
        module.fail_json(msg=str(exc), **server.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()

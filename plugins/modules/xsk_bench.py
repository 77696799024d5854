#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: xsk_bench
short_description: Measure AF_XDP (rxdrop, txpush, l2fwd) with xdplab-xsk-bench
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Runs C(xdplab-xsk-bench) (bpf/xsk_bench.c, built and installed by the role xdplab.testbed.bpf_programs) on
    O(interface), with one AF_XDP socket per queue of O(queues), each served by a thread pinned to the matching CPU of
    O(cpus), and an XDP program redirecting RX queue I(q) to the socket of queue I(q), attached in O(xdp_mode).
  - The program runs in the background and times its own intervals (O(interval) is its reporting interval); the
    module reads its JSON lines and returns the mean rate over a window of O(samples) x O(interval) seconds that
    starts O(warmup) seconds after the sockets are up, with the window's CLOCK_MONOTONIC bounds (a generator's
    offered load can be cut to the same window), per queue and per CPU rates, the sockets' XDP_STATISTICS counters
    over the window, and the bind mode the kernel actually gave (copy or zero-copy).
  - RV(measurement) is the one measurement shape (doc fragment xdplab.testbed.measurement); its C(source) is
    C(kind=xsk_bench), C(at=dut), with the bench, the counter (C(rx) or C(tx)), bind mode, XDP mode and driver.
  - The program is always stopped before the module returns, and the module checks that its XDP program is no
    longer attached. The program attaches through a BPF link, so the kernel detaches it even if the program is
    killed.
  - O(state=absent) stops a run left behind in O(run_dir) (for example by an interrupted play) and removes its files.
  - Checks before anything runs, in the module's network namespace, that the interface exists, every queue is below
    its RX queue count, every CPU is online, zero-copy is not asked of a driver without it (veth) and the binary
    is installed.
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.sampling
  - xdplab.testbed.measurement
attributes:
  check_mode:
    support: full
    description: Validates the input and the target and returns the command that would run; runs nothing.
  diff_mode:
    support: none
    description: A run changes no configuration, so there is no diff.
options:
  state:
    description:
      - V(measured) runs the benchmark and returns its rates. The interface is left as found, so it reports no change.
      - V(absent) stops a leftover run recorded in O(run_dir) under O(name) and removes its files.
    type: str
    choices: [measured, absent]
    default: measured
  binary:
    description: Path of C(xdplab-xsk-bench).
    type: path
    default: /usr/local/lib/xdplab/bin/xdplab-xsk-bench
  name:
    description: Name of the run; its pid, output and error files in O(run_dir) are named after it.
    type: str
    default: xsk_bench
  run_dir:
    description: Directory for the run's files while it runs (removed after the measurement).
    type: path
    default: /run/xdplab/xsk_bench
  interface:
    description: Interface to bind the sockets to, in the module's network namespace. Required with O(state=measured).
    type: str
  mode:
    description:
      - V(rxdrop) receives and drops (frames go straight back to the fill ring); its rate is the RX rate.
      - V(txpush) sends a UDP frame template (O(src_mac), O(dst_mac), O(src_ip), O(dst_ip), O(packet_len),
        O(dst_port)); its rate is the TX completion rate.
      - V(l2fwd) receives, swaps the MAC addresses and sends back out of the same queue; its rate is the RX rate
        (RV(tx_pps) is what was sent back).
    type: str
    choices: [rxdrop, txpush, l2fwd]
    default: rxdrop
  copy_mode:
    description:
      - V(copy) binds with XDP_COPY, V(zerocopy) with XDP_ZEROCOPY (fails on a driver without it, such as veth),
        V(auto) lets the kernel pick (zero-copy where the driver has it). The result says what was used.
    type: str
    choices: [auto, copy, zerocopy]
    default: auto
  xdp_mode:
    description: Attach mode of the redirect program, V(native) (driver, XDP_FLAGS_DRV_MODE) or V(skb) (generic).
    type: str
    choices: [native, skb]
    default: native
  need_wakeup:
    description: Bind with XDP_USE_NEED_WAKEUP (the application wakes the kernel only when a ring asks for it).
    type: bool
    default: true
  poll:
    description:
      - Let each thread sleep in poll() until its socket has work, instead of spinning on the rings (xdpsock's C(-p)).
      - Spinning is right when the thread has a CPU to itself. When it shares a CPU with the queue's NAPI (on the
        virtual lab, with the generator or a threaded NAPI pinned to the same DUT CPU) a spinning thread takes the CPU
        from the softirq that fills its RX ring, and the rate falls to about one ring (2048 frames) per scheduler
        time slice; measured on veth with 2 shared vCPUs, rxdrop copy drv went from about 0.1 to 2-3 Mpps with poll.
    type: bool
    default: false
  busy_poll:
    description: Set SO_PREFER_BUSY_POLL, SO_BUSY_POLL and SO_BUSY_POLL_BUDGET on every socket (kernel >= 5.11).
    type: bool
    default: false
  busy_poll_budget:
    description: SO_BUSY_POLL_BUDGET (packets per busy poll); default O(batch_size). Needs O(busy_poll).
    type: int
  busy_poll_timeout:
    description: SO_BUSY_POLL in microseconds; default 20. Needs O(busy_poll).
    type: int
  batch_size:
    description: Descriptors handled per ring operation (1..2048).
    type: int
    default: 64
  frame_size:
    description: UMEM frame size in bytes.
    type: int
    choices: [2048, 4096]
    default: 4096
  unaligned:
    description: Register the UMEM with XDP_UMEM_UNALIGNED_CHUNK_FLAG.
    type: bool
    default: false
  queues:
    description: RX queue ids, one socket (and thread) each.
    type: list
    elements: int
    default: [0]
  cpus:
    description: CPU of each queue's thread (cpus[i] serves queues[i]); empty means the CPU with the queue's id.
    type: list
    elements: int
    default: []
  warmup:
    default: 1.0
  stop_timeout:
    description: Seconds to wait after SIGINT before SIGKILL when stopping the program.
    type: float
    default: 10
  src_mac:
    description: O(mode=txpush) source MAC; default the interface's.
    type: str
  dst_mac:
    description: O(mode=txpush) destination MAC.
    type: str
  src_ip:
    description: O(mode=txpush) source IPv4 address.
    type: str
  dst_ip:
    description: O(mode=txpush) destination IPv4 address.
    type: str
  packet_len:
    description: O(mode=txpush) frame length including the 4-byte FCS (64..1518), as T-Rex's packet_len.
    type: int
    default: 64
  dst_port:
    description: O(mode=txpush) UDP destination port (the source port is 9, discard).
    type: int
    default: 12
notes:
  - On veth the DUT side needs GRO on (or an XDP program on it, which this module attaches) for frames that a
    peer's XDP program redirects to be received; with O(xdp_mode=skb) GRO must be on.
  - With O(xdp_mode=skb) on veth every frame reaches generic XDP as RX queue 0 (veth does not record the RX queue
    in the skb), so only the socket of queue 0 receives; native mode keeps the veth RX queues apart.
  - RV(per_cpu) is by the CPU of the socket's thread; where the XDP program and the copy into the socket run is
    the CPU that runs the queue's NAPI (on veth, the sender's CPU).
seealso:
  - module: xdplab.testbed.xdp_stats
  - module: xdplab.testbed.traffic_generator
"""

EXAMPLES = r"""
- name: AF_XDP rxdrop in copy mode on two queues of the DUT port, threads on CPUs 2 and 3
  xdplab.testbed.xsk_bench:
    interface: dut0
    mode: rxdrop
    copy_mode: copy
    xdp_mode: native
    queues: [0, 1]
    cpus: [2, 3]
    warmup: 2
    samples: 5
  register: xsk

- name: Push 64-byte UDP frames out of queue 0
  xdplab.testbed.xsk_bench:
    interface: dut0
    mode: txpush
    copy_mode: copy
    dst_mac: "02:00:00:00:00:01"
    src_ip: 198.18.0.2
    dst_ip: 198.18.0.1

- name: Clean up after an interrupted run
  xdplab.testbed.xsk_bench:
    state: absent
"""

RETURN = r"""
measurement:
  description:
    - The one measurement shape (doc fragment xdplab.testbed.measurement, in the notes; docs/ARCHITECTURE.md), of
      RV(pps). Its window and samples come from the program's own records (each sample lasts from the previous
      record's C(mono) to its own, so the samples tile the window).
    - "C(source) is C({kind: xsk_bench, at: dut, bench, counter: rx or tx, bind_mode, xdp_mode, driver, interface});
      C(per_cpu) is by the CPU of each socket's thread; C(details) has C(rx_pps), C(tx_pps) and C(xdp_stats)."
  returned: when measured
  type: dict
  sample:
    pps: 600000.0
    packets: 1800000
    ns_per_packet: 1666.7
    per_cpu: [{cpu: 2, pps: 600000.0}]
    per_rxq: [{queue: 0, cpu: 2, pps: 600000.0, rx_pps: 600000.0, tx_pps: 0.0}]
    samples: [{t: 1.0, seconds: 1.0, packets: 600000, pps: 600000.0}]
    spread: {min_pps: 600000.0, max_pps: 600000.0, stdev_pps: 0.0, cv: 0.0}
    queue_spread: 1.0
    imbalance: {imbalanced: false, reason: "balanced: a single active CPU (CPU 2)"}
    window: {start: 7396.456, end: 7399.456, seconds: 3.0, clock: CLOCK_MONOTONIC}
    source: {kind: xsk_bench, at: dut, bench: rxdrop, counter: rx, bind_mode: copy, xdp_mode: native, driver: veth,
             interface: dut0}
    details: {rx_pps: 600000.0, tx_pps: 0.0, xdp_stats: []}
command:
  description: The program's command line (what would run, in check mode).
  returned: always
  type: list
  elements: str
pps:
  description: Mean rate over the window, frames per second; RX for rxdrop and l2fwd, TX for txpush.
  returned: when measured
  type: float
  sample: 1234567.8
rx_pps:
  description: Mean RX rate over the window (all queues).
  returned: when measured
  type: float
tx_pps:
  description: Mean TX (completed) rate over the window (all queues).
  returned: when measured
  type: float
packets:
  description: Frames counted for RV(pps) over the window.
  returned: when measured
  type: int
seconds:
  description: Length of the window in seconds (sum of its intervals).
  returned: when measured
  type: float
window:
  description: CLOCK_MONOTONIC bounds of the window, from the program's records.
  returned: when measured
  type: dict
  contains:
    start:
      description: Start of the first interval of the window.
      type: float
    end:
      description: End of the last interval of the window.
      type: float
samples:
  description: The window's intervals, each with mono (its end), interval_s, rx_pps and tx_pps.
  returned: when measured
  type: list
  elements: dict
per_rxq:
  description: Per queue over the window, its thread's cpu, pps (as RV(pps)), rx_pps and tx_pps.
  returned: when measured
  type: list
  elements: dict
  sample: [{"queue": 0, "cpu": 2, "pps": 600000.0, "rx_pps": 600000.0, "tx_pps": 0.0}]
per_cpu:
  description: pps by the CPU of the queue threads.
  returned: when measured
  type: list
  elements: dict
  sample: [{"cpu": 2, "pps": 600000.0}]
xdp_stats:
  description:
    - Per queue, the socket's XDP_STATISTICS counters over the window (rx_dropped, rx_invalid_descs, rx_ring_full,
      rx_fill_ring_empty_descs, tx_invalid_descs, tx_ring_empty_descs). rx_ring_full counts frames lost because
      the application did not keep up.
  returned: when measured
  type: list
  elements: dict
bind_mode:
  description: What the kernel gave, V(copy), V(zerocopy) (or V(mixed) if the queues differ), from XDP_OPTIONS.
  returned: when measured
  type: str
  sample: copy
zerocopy:
  description: Per queue, whether its socket is zero-copy.
  returned: when measured
  type: list
  elements: dict
xdp_mode:
  description: Attach mode of the redirect program, V(native) or V(skb).
  returned: when measured
  type: str
driver:
  description: Driver of the interface (ethtool -i).
  returned: when measured
  type: str
  sample: veth
program_id:
  description: Id the redirect program had while attached.
  returned: when measured
  type: int
version:
  description: Version of xdplab-xsk-bench.
  returned: when measured
  type: str
summary:
  description: The program's own summary record (totals, options, libbpf version, xdp_detached), null if it was killed.
  returned: when measured
  type: dict
threads:
  description:
    - The run time of each of the bench's threads, read from C(/proc/<pid>/task/<tid>/schedstat) just before the
      module stops it. The bench starts and ends inside the module, so a CPU window around this task that closes
      afterwards no longer sees its threads; pass this to M(xdplab.testbed.cpu_usage)'s
      O(xdplab.testbed.cpu_usage#module:ended_threads) and they count there. Null if the bench had already ended.
    - "Keys: C(version), C(pid), C(time) (CLOCK_MONOTONIC of the read), C(threads) (tid -> [pid, runtime_ns, last
      CPU, kernel thread 0/1, comm, allowed CPUs])."
  returned: when measured
  type: dict
  sample: {version: 1, pid: 5120, time: 7001.5, threads: {"5121": [5120, 2980000000, 1, 0, xdplab-xsk-benc, "1"]}}
removed:
  description: Files of a leftover run that O(state=absent) removed (or would remove in check mode).
  returned: when O(state=absent) found files
  type: list
  elements: str
process:
  description:
    - How the benchmark process ended when it died during the measurement (killed, or exited with an error);
      the module then fails naming the signal or status and the last lines of its stderr.
  returned: on failure, when the benchmark died during the measurement
  type: dict
  contains:
    pid:
      description: Process id of the benchmark.
      type: int
    exit_status:
      description: Its exit status; null if a signal ended it.
      type: int
    signal:
      description: Number of the signal that ended it; null if it exited.
      type: int
    signal_name:
      description: Name of that signal.
      type: str
      sample: SIGKILL
    stderr_tail:
      description: The last lines of its stderr.
      type: str
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat as cpustat
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement, _process
from ansible_collections.xdplab.testbed.plugins.module_utils import _xsk as xsk

POLL_S = 0.2


class XskBench:
    """Does the work; main() only wires it."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.run_files = _process.Process(self.p["run_dir"], self.p["name"], kind="xsk_bench")
        self.result = {"changed": False, "command": []}

    def driver(self):
        """Driver name: ethtool -i, else sysfs (None if neither knows)."""
        binary = self.module.get_bin_path("ethtool")
        if binary:
            try:
                return ethtool.driver_info(self.module.run_command, self.p["interface"], ethtool=binary).get("driver")
            except ethtool.EthtoolError:
                pass
        return xsk.sysfs_driver(self.p["interface"])

    def stop_leftover(self):
        state = self.run_files.load_state()
        if state is not None and self.run_files.running(state):
            self.result["changed"] = True
            if not self.module.check_mode:
                self.run_files.stop(self.p["stop_timeout"])
            return True
        return False

    def ensure_absent(self):
        self.stop_leftover()
        leftovers = self.run_files.files()
        if leftovers:
            self.result.update(changed=True, removed=leftovers)
            if not self.module.check_mode:
                self.run_files.remove()

    def wait_for_window(self, duration):
        """Records of the running program once the window is complete (or it ended).

        Unlike the other measuring modules this does not sample on _measurement.Sampler's schedule: the program
        counts in its own threads and prints one record per interval, stamped on CLOCK_MONOTONIC, so reading
        counters from here would only add a second, coarser clock. The Sampler validates the options and gives
        the run's length (_xsk.sampler, _xsk.run_duration); the window is cut from the records (_xsk.select_window).
        """
        deadline = time.monotonic() + duration + self.p["stop_timeout"]
        p = self.p
        while True:
            records = self.run_files.json_lines()
            window = xsk.select_window(records, p["warmup"], p["samples"])
            if len(window) == p["samples"]:
                end = window[-1]["mono"]
                if any(abs(r["mono"] - end) < 1e-6 for r in xsk.of_type(records, "xdp_statistics")):
                    return records
            if not self.run_files.running():
                return records
            if time.monotonic() > deadline:
                raise xsk.XskBenchError("no complete window after %gs: see %s" % (duration, self.run_files.err_path))
            time.sleep(POLL_S)

    def still_attached(self, prog_id, settle=2.0):
        """Whether the bench's program is still attached; a killed bench's BPF link is released by the kernel
        shortly after the process is gone, so this waits up to `settle` seconds for that."""
        try:
            ifindex = socket.if_nametoindex(self.p["interface"])
        except OSError:
            return False
        deadline = time.monotonic() + settle
        while prog_id != 0 and libbpf.attached_program(ifindex)[0] == prog_id:
            if time.monotonic() > deadline:
                return True
            time.sleep(0.05)
        return False

    def measure(self):
        p = self.p
        cpus = xsk.check_params(p)
        xsk.check_target(p, cpus, self.driver(), p["binary"])
        duration = xsk.run_duration(p)
        argv = xsk.command(p, cpus, duration, p["binary"])
        self.result["command"] = argv
        if self.module.check_mode:
            self.result["msg"] = "would run: %s" % " ".join(argv)
            return
        if self.stop_leftover():
            self.module.warn("stopped a leftover xdplab-xsk-bench run recorded in %s" % self.run_files.state_path)
        records = []
        stopped = state = None
        try:
            try:
                state = self.run_files.start(argv, {"interface": p["interface"]})
            except _process.ProcessError as exc:
                raise xsk.XskBenchError(str(exc)) from None
            records = self.wait_for_window(duration)
        finally:
            if state is not None and self.run_files.running(state):
                # its threads' run time, for the caller's CPU window that closes after the bench is gone
                self.result["threads"] = cpustat.ended_reading(state["pid"])
            # the one process helper: stopping a bench that already ended is no error, and says how it ended
            stopped = self.run_files.stop(p["stop_timeout"])
            records = self.run_files.json_lines() or records
            err = self.run_files.read_err().strip()
            starts = xsk.of_type(records, "start")
            prog_id = starts[0]["prog_id"] if starts else 0
            self.run_files.remove()
            if self.still_attached(prog_id):
                raise xsk.XskBenchError(
                    "XDP program id %d is still attached to %s after the run: detach it (ip link set dev %s xdp off)"
                    % (prog_id, p["interface"], p["interface"])
                )
        exit_info = stopped["exit"] if stopped else None
        if stopped and not stopped["was_running"] and _process.failed(exit_info):
            # it died during the measurement (killed, or an error): that, not a short window, is the cause
            self.result["process"] = _process.process_result(exit_info)
            pid = exit_info.get("pid")
            raise xsk.XskBenchError(
                _process.failure_message("xdplab-xsk-bench (pid %s)" % pid, exit_info, "during the measurement")
            )
        if not starts:
            raise xsk.XskBenchError("xdplab-xsk-bench did not start: %s" % (err or "no message"))
        summaries = xsk.of_type(records, "summary")
        if err and (not summaries or summaries[-1].get("stopped_by") == "error"):
            raise xsk.XskBenchError("xdplab-xsk-bench failed: %s" % err)
        try:
            self.result.update(xsk.summarize(records, p["mode"], p["warmup"], p["samples"]))
        except xsk.XskBenchError as exc:
            raise xsk.XskBenchError("%s%s" % (exc, "; it said: %s" % err if err else "")) from None
        if err:
            self.module.warn("xdplab-xsk-bench: %s" % err)

    def run(self):
        if self.p["state"] == "absent":
            self.ensure_absent()
        else:
            self.measure()
        return self.result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            _measurement.SAMPLING_ARGUMENT_SPEC,
            state=dict(type="str", default="measured", choices=["measured", "absent"]),
            binary=dict(type="path", default=xsk.DEFAULT_BINARY),
            name=dict(type="str", default="xsk_bench"),
            run_dir=dict(type="path", default="/run/xdplab/xsk_bench"),
            interface=dict(type="str"),
            mode=dict(type="str", default="rxdrop", choices=list(xsk.BENCH_MODES)),
            copy_mode=dict(type="str", default="auto", choices=list(xsk.COPY_MODES)),
            xdp_mode=dict(type="str", default="native", choices=list(xsk.XDP_MODES)),
            need_wakeup=dict(type="bool", default=True),
            poll=dict(type="bool", default=False),
            busy_poll=dict(type="bool", default=False),
            busy_poll_budget=dict(type="int"),
            busy_poll_timeout=dict(type="int"),
            batch_size=dict(type="int", default=64),
            frame_size=dict(type="int", default=4096, choices=list(xsk.FRAME_SIZES)),
            unaligned=dict(type="bool", default=False),
            queues=dict(type="list", elements="int", default=[0]),
            cpus=dict(type="list", elements="int", default=[]),
            warmup=dict(type="float", default=1.0),
            stop_timeout=dict(type="float", default=10.0),
            src_mac=dict(type="str"),
            dst_mac=dict(type="str"),
            src_ip=dict(type="str"),
            dst_ip=dict(type="str"),
            packet_len=dict(type="int", default=64),
            dst_port=dict(type="int", default=12),
        ),
        required_if=[("state", "measured", ("interface",))],
        supports_check_mode=True,
    )
    bench = XskBench(module)
    try:
        result = bench.run()
    except (xsk.XskBenchError, libbpf.LibbpfError, OSError) as exc:
        module.fail_json(msg=str(exc), **bench.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()

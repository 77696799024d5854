#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: testpmd
short_description: Measure packet rates with dpdk-testpmd for a fixed window, then stop it
version_added: 0.2.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Runs C(dpdk-testpmd) in interactive mode on a pseudo-terminal, starts forwarding, and reads
    C(show port xstats all) on the collection's one sampler (O(warmup) after C(start), then O(samples)+1 reads every
    O(interval) seconds on an absolute schedule; timestamps on CLOCK_MONOTONIC at the midpoint of each command, so
    the window can be matched with the traffic generator's per-second records), then sends C(stop) and C(quit).
  - RV(measurement) is the one measurement shape (doc fragment xdplab.testbed.measurement) of the RX rate of all
    ports; its C(source) is C(kind=testpmd), C(at=dut); C(per_cpu) are the forwarding lcores.
  - Returns the RX and TX packet rates per port and per RX queue (per-queue xstats C(rx_qN_packets), or testpmd's
    per-stream forward statistics for drivers without them), per forwarding lcore, and the burst mode each port's
    driver reports through C(show rxq info) and C(show txq info), for example C(Vector AVX2) or C(Scalar) (the
    proof of which SIMD path ran). Drivers that do not implement queue info (net_af_packet, net_af_xdp, net_null
    in DPDK 22.11) get null and a note.
  - net_virtio (a virtio-net PCI function, by its vendor and device ids in sysfs) reports no burst mode either, but
    prints the RX function it takes at INFO; for such a port the EAL command line gets
    C(--log-level=pmd.net.virtio.init:info --log-level=pmd.net.virtio.driver:info) (a few lines at start, nothing
    per packet) and each port's C(rx_path) (C(vectorized), C(mergeable buffer), C(standard), C(inorder), packed
    ring variants), C(rx_vector) and C(rx_path_note) (why a C(vectorized=1) was refused, e.g.
    C(disabled split ring vectorized rx for mrg_rxbuf enabled)) are read from testpmd's start-up output.
  - testpmd is always stopped, also on failure (C(quit), then SIGTERM, then SIGKILL), EAL's runtime directory
    C(/var/run/dpdk/<file_prefix>) is removed, and the XDP program net_af_xdp leaves on an interface when testpmd is
    killed is detached. While it runs its pid is recorded in O(run_dir) so O(state=absent) (or a teardown) can stop a
    leftover run after a crash.
  - Bad input is refused before testpmd starts, with what to do, for an unknown forward mode, a PCI address not
    in C(/sys/bus/pci/devices), a virtual device interface that does not exist, more queues than the interface
    has (net_af_xdp uses the combined channels of C(ethtool -l), as DPDK does; net_af_packet the interface's RX
    queues in C(/sys/class/net/IF/queues)), lcores that are not online CPUs, too few lcores for O(nb_cores),
    and missing hugepages. EAL and testpmd failures that remain (port not probed, more queues than a PCI port
    has) are mapped from testpmd's own messages to a clear error.
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.sampling
  - xdplab.testbed.measurement
attributes:
  check_mode:
    support: full
    description:
      - O(state=measured) reports the command that would run and C(changed=true) without starting testpmd
        (a measurement is not simulated). O(state=absent) says whether a leftover run would be stopped and which
        files would be removed.
  diff_mode:
    support: none
    description: A run changes no configuration, so there is no diff.
options:
  state:
    description:
      - C(measured) runs testpmd for the window and returns the rates.
      - C(absent) stops a leftover run recorded under O(name) in O(run_dir) and removes its files.
    type: str
    choices: [measured, absent]
    default: measured
  name:
    description: Name of the run (file names in O(run_dir), default O(file_prefix)).
    type: str
    default: testpmd
  run_dir:
    description: Directory for C(<name>.json) (pid while running) and C(<name>.log) (the session transcript).
    type: path
    default: /run/xdplab/testpmd
  binary:
    description: Path of dpdk-testpmd; default C(dpdk-testpmd) from PATH (Debian's dpdk package has /usr/bin/dpdk-testpmd).
    type: path
  ports:
    description:
      - Ports in testpmd's order. A PCI address (C(0000:03:00.0), optionally C(,devargs)) becomes C(-a ADDR[,devargs]);
        a virtual device spec (C(net_af_xdp0,iface=veth-dut0,start_queue=0,queue_count=1),
        C(net_af_packet0,iface=veth-dut0), C(net_null0)) becomes C(--vdev SPEC).
      - A net_af_packet device without C(qpairs) gets C(qpairs=max(rxq, txq)); a net_af_xdp device without
        C(queue_count) gets C(queue_count=rxq) (both reported in RV(notes)).
    type: list
    elements: str
    default: []
  devargs:
    description: Device arguments appended to every PCI port, e.g. C(rx_vec_en=0) for mlx5 (scalar RX).
    type: str
  forward_mode:
    description: testpmd forwarding mode.
    type: str
    choices: [rxonly, txonly, io, mac, macswap]
    default: rxonly
  lcores:
    description:
      - EAL lcores (CPU numbers). The first is the main lcore (runs the command line, not forwarding), the next
        O(nb_cores) forward packets. Default the first O(nb_cores)+1 online CPUs. All must be online CPUs.
    type: list
    elements: int
  nb_cores:
    description: Number of forwarding lcores.
    type: int
    default: 1
  rxq:
    description: RX queues per port.
    type: int
    default: 1
  txq:
    description: TX queues per port.
    type: int
    default: 1
  rxd:
    description: RX ring size (descriptors); testpmd's default when unset.
    type: int
  txd:
    description: TX ring size (descriptors); testpmd's default when unset.
    type: int
  burst:
    description: Packets per burst; testpmd's default (32) when unset.
    type: int
  mbufs:
    description: Total number of mbufs (C(--total-num-mbufs)); testpmd's default when unset.
    type: int
  rss:
    description: RSS hash, C(udp) (C(--rss-udp)), C(ip) (C(--rss-ip)) or C(none) (C(--disable-rss)); testpmd's default when unset.
    type: str
    choices: [udp, ip, none]
  max_simd_bitwidth:
    description:
      - EAL C(--force-max-simd-bitwidth). C(64) forbids vector code (scalar burst functions), C(128) allows SSE,
        C(256) AVX2, C(512) AVX-512. Unset leaves DPDK's default.
    type: int
    choices: [64, 128, 256, 512]
  no_huge:
    description: Run without hugepages (EAL C(--no-huge), memory from anonymous pages; needs O(memory_mb)).
    type: bool
    default: false
  memory_mb:
    description: EAL C(-m) (MiB). Default 1024 with O(no_huge=true) (testpmd's default mbuf pool needs ~400 MiB), else unset.
    type: int
  huge_dir:
    description: EAL C(--huge-dir), a hugetlbfs mount; default any mounted hugetlbfs.
    type: path
  file_prefix:
    description: EAL C(--file-prefix) (runtime directory C(/var/run/dpdk/<file_prefix>)); default C(xdplab-<name>).
    type: str
  warmup:
    default: 1.0
  extra_eal_args:
    description: More EAL arguments (before C(--)).
    type: list
    elements: str
    default: []
  extra_args:
    description: More testpmd arguments (after C(--)).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds testpmd may take to come up to its prompt, and per command.
    type: float
    default: 60.0
  window_end_file:
    description:
      - A file that may hold a time on CLOCK_REALTIME (epoch seconds, as text). Once that time has passed, the window
        ends at the next sample, before O(samples) if need be (at least one sample); a note says so. O(samples) is
        then the longest the window may last, not a length to wait out.
      - For a testpmd that must forward until traffic sent from elsewhere has ended, when that end is only known
        after testpmd started (the role xdplab.testbed.experiment's latency trials write the generator's end into
        it once the generator has started).
      - Removed when the measurement starts (a file an earlier run left never ends this one) and when it ends.
      - A file that does not hold a number is ignored (a note says so) and the window lasts O(samples).
    type: path
requirements:
  - dpdk-testpmd (Debian package dpdk-dev; DPDK 22.11 on Debian 12), root
  - hugepages mounted and reserved (role xdplab.testbed.dpdk) unless O(no_huge=true)
  - ethtool for net_af_xdp ports
notes:
  - On a veth, DPDK 22.11's net_af_xdp can use only queue 0 (veth has no combined channels, and net_af_xdp takes
    the combined channel count as its queue limit), so O(rxq) must be 1 there.
seealso:
  - module: xdplab.testbed.xdp_stats
  - module: xdplab.testbed.traffic_generator
"""

EXAMPLES = r"""
- name: Drop rate of DPDK AF_XDP on the virtual lab's DUT veth, scalar code
  xdplab.testbed.testpmd:
    ports: ["net_af_xdp0,iface=dut0,start_queue=0,queue_count=1"]
    forward_mode: rxonly
    lcores: [0, 1]
    nb_cores: 1
    max_simd_bitwidth: 64
    no_huge: true
    warmup: 2
    samples: 5
  register: dpdk

- name: mlx5 port with vector RX disabled, 4 queues on 4 cores
  xdplab.testbed.testpmd:
    ports: ["0000:03:00.0"]
    devargs: rx_vec_en=0
    lcores: [0, 1, 2, 3, 4]
    nb_cores: 4
    rxq: 4
    txq: 4
    rss: udp

- name: Stop whatever a crashed run left behind
  xdplab.testbed.testpmd:
    name: trial
    state: absent
"""

RETURN = r"""
measurement:
  description:
    - The one measurement shape (doc fragment xdplab.testbed.measurement, in the notes; docs/ARCHITECTURE.md), of the
      RX rate of all ports (RV(pps)).
    - "C(source) is C({kind: testpmd, at: dut, forward_mode, counter: rx_good_packets, per_rxq_source, ports});
      C(per_cpu) are the forwarding lcores (an lcore is its CPU), C(per_rxq) RV(per_rxq); C(details) has C(tx_pps)
      and C(rx_missed_pps)."
  returned: state=measured and not check mode
  type: dict
  sample:
    pps: 1473399.0
    packets: 4420197
    ns_per_packet: 678.7
    per_cpu: [{cpu: 1, pps: 1473399.0}]
    per_rxq: [{port: 0, queue: 0, packets: 4420197, pps: 1473399.0, lcore: 1}]
    samples: [{t: 1.0, seconds: 1.0, packets: 1473399, pps: 1473399.0}]
    spread: {min_pps: 1473399.0, max_pps: 1473399.0, stdev_pps: 0.0, cv: 0.0}
    queue_spread: 1.0
    imbalance: {imbalanced: false, reason: "balanced: a single active CPU (CPU 1)"}
    window: {start: 6940.51, end: 6943.51, seconds: 3.0, clock: CLOCK_MONOTONIC}
    source: {kind: testpmd, at: dut, forward_mode: rxonly, counter: rx_good_packets, per_rxq_source: xstats,
             ports: [net_af_xdp0]}
    details: {tx_pps: 0.0, rx_missed_pps: 966666.7}
pps:
  description: Received packets per second over the window, all ports (for rxonly, the drop rate).
  returned: state=measured and not check mode
  type: float
  sample: 1473399.0
tx_pps:
  description: Transmitted packets per second over the window, all ports.
  returned: state=measured and not check mode
  type: float
  sample: 0.0
seconds:
  description: Length of the window (monotonic clock).
  returned: state=measured and not check mode
  type: float
  sample: 3.0012
window:
  description: Start and end of the window on CLOCK_MONOTONIC (seconds), around the first and last counter read.
  returned: state=measured and not check mode
  type: dict
  sample: {start: 6940.51, end: 6943.51}
samples:
  description: Per sample, end time relative to the window start, its length and the RX/TX rates.
  returned: state=measured and not check mode
  type: list
  elements: dict
  sample: [{t: 1.0, seconds: 1.0, rx_pps: 1473399.0, tx_pps: 0.0}]
ports:
  description:
    - Per port over the window. C(rx_missed) is the driver's imissed (frames the device or kernel dropped because
      the ring was full), C(rx_nombuf) failed mbuf allocations. C(rx_burst_mode)/C(tx_burst_mode) are null when the
      driver does not report them (C(burst_mode_note) says why).
    - C(rx_path), C(rx_vector), C(rx_path_note), C(tx_path) are what net_virtio printed of its burst functions (null
      for a driver that prints none). C(rx_path) C(vectorized) is its SIMD RX (virtio_recv_pkts_vec), the others are
      scalar; C(rx_path_note) is the reason a C(vectorized=1) was refused.
  returned: state=measured and not check mode
  type: list
  elements: dict
  sample:
    - {port: 0, name: net_af_xdp0, driver: net_af_xdp, rx_pps: 1473399.0, tx_pps: 0.0, rx_packets: 4420197,
       tx_packets: 0, rx_missed: 2900000, rx_missed_pps: 966666.7, rx_nombuf: 0, rx_errors: 0, tx_errors: 0,
       rx_burst_mode: null, tx_burst_mode: null, burst_mode_note: "net_af_xdp: Operation not supported(-95)",
       max_rx_queues: 1, max_tx_queues: 1, devargs: "iface=dut0,start_queue=0,queue_count=1", rx_path: null,
       rx_vector: null, rx_path_note: null, tx_path: null}
rx_paths:
  description:
    - Per port, what says which RX function ran, for the trial record (provenance.program.rx_paths of the DPDK
      systems). The burst mode the driver reports, else the RX path it printed (net_virtio), else nulls.
  returned: state=measured and not check mode
  type: list
  elements: dict
  sample:
    - {port: 0, name: "0000:00:04.0", driver: net_virtio, rx_burst_mode: null, rx_path: mergeable buffer,
       rx_vector: false, rx_path_note: "disabled split ring vectorized rx for mrg_rxbuf enabled"}
per_rxq:
  description: Per RX queue, packets and packets per second over the window, and the lcore polling it.
  returned: state=measured and not check mode
  type: list
  elements: dict
  sample: [{port: 0, queue: 0, packets: 4420197, pps: 1473399.0, lcore: 1}]
per_rxq_source:
  description: C(xstats) (rx_qN_packets) or C(fwd_stats) (testpmd's per-stream forward statistics).
  returned: state=measured and not check mode
  type: str
  sample: xstats
per_lcore:
  description: Per forwarding lcore, the sum of its RX queues' rates and the (port, queue) pairs it polls.
  returned: state=measured and not check mode
  type: list
  elements: dict
  sample: [{lcore: 1, pps: 1473399.0, queues: [[0, 0]]}]
streams:
  description: testpmd's forwarding streams at C(start) (lcore, RX port/queue, TX port/queue).
  returned: state=measured and not check mode
  type: list
  elements: dict
run_totals:
  description: Forward statistics testpmd printed at C(stop), over the whole run (warm-up included).
  returned: state=measured and not check mode
  type: dict
version:
  description: DPDK version from the EAL banner.
  returned: state=measured and not check mode
  type: str
  sample: DPDK 22.11.11
simd:
  description: The SIMD limit asked for and the CPU's vector flags.
  returned: state=measured
  type: dict
  sample: {max_simd_bitwidth: 64, cpu_flags: [sse4_2, avx2]}
command:
  description: argv of testpmd.
  returned: always
  type: list
  elements: str
eal_log:
  description: The last lines testpmd printed while starting (EAL and driver messages).
  returned: state=measured and not check mode, and on failure
  type: list
  elements: str
no_huge:
  description: Whether testpmd ran without hugepages.
  returned: state=measured
  type: bool
warnings_seen:
  description: Warning lines from testpmd's output (also passed to Ansible's warnings).
  returned: state=measured and not check mode
  type: list
  elements: str
notes:
  description: What the module adjusted or could not tell (added devargs, unsupported burst mode, check mode).
  returned: always
  type: list
  elements: str
exit_status:
  description: testpmd's exit status (0 after a clean C(quit); negative is the signal that ended it).
  returned: state=measured and not check mode
  type: int
  sample: 0
failed_reason:
  description: On failure, what the session saw (the module's message says what to do).
  returned: on failure
  type: str
process:
  description:
    - How testpmd ended when it died during the session (killed, or exited by itself), recorded by the supervisor
      that started it; the module then fails naming the signal or status and the last lines testpmd printed.
  returned: on failure, when testpmd ended before the module quit it
  type: dict
  contains:
    pid:
      description: Process id of testpmd.
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
      description: The last lines of its output (stdout and stderr share its terminal).
      type: str
cpu_window:
  description:
    - Two M(xdplab.testbed.cpu_usage) snapshots (C(/proc/stat) and the threads that may run there) of the forwarding
      lcores' CPUs (C(cpus)), taken at the measurement window's start (after the warm-up, with the first counter
      read) and end (after the last), while testpmd polls. Pass C(start) as cpu_usage's
      O(xdplab.testbed.cpu_usage#module:since) and C(end) as its O(xdplab.testbed.cpu_usage#module:until), and the CPU
      figures cover exactly the window whose packets were counted (a window around the whole task also holds
      EAL's start and the warm-up, when the lcore does not poll yet). Null if /proc could not be read.
  returned: state=measured and not check mode
  type: dict
  sample: {cpus: [1], start: {version: 1, time: 6940.51}, end: {version: 1, time: 6945.52}}
threads:
  description:
    - The run time of each of testpmd's threads (the lcores, C(rte-worker-N) in DPDK 22.11; the main thread; EAL's control
      threads), read from C(/proc/<pid>/task/<tid>/schedstat) just before the module sends C(quit) (after C(stop)).
      testpmd starts and ends inside the module, so a CPU window around this task that closes afterwards no longer
      sees its threads; pass this to M(xdplab.testbed.cpu_usage)'s O(xdplab.testbed.cpu_usage#module:ended_threads)
      and they count there. Null if testpmd was already gone.
    - "Keys: C(version), C(pid), C(time) (CLOCK_MONOTONIC of the read) and C(threads) (tid -> [pid, runtime_ns, last
      CPU, kernel thread 0/1, comm, allowed CPUs]: the thread form of cpu_usage's snapshot)."
  returned: state=measured and not check mode
  type: dict
  sample: {version: 1, pid: 4242, time: 6944.12, threads: {"4242": [4242, 812000000, 0, 0, dpdk-testpmd, "0"],
           "4247": [4242, 5630000000, 1, 0, rte-worker-1, "1"]}}
stopped:
  description: For state=absent, the pid of the leftover run that was (or in check mode would be) stopped.
  returned: state=absent
  type: int
removed:
  description: Files removed (or in check mode to be removed).
  returned: state=absent
  type: list
  elements: str
"""

import json
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat as cpustat
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement
from ansible_collections.xdplab.testbed.plugins.module_utils import _testpmd as tp
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import online_cpus


class Testpmd:
    """Does the work; main() only wires it."""

    def __init__(self, module, clock=None, sleep=None):
        self.module = module
        self.p = dict(module.params)
        self.clock, self.sleep = clock or time.monotonic, sleep or time.sleep
        self.result = {"changed": False, "command": [], "notes": []}
        self.run_files = tp.RunFiles(self.p["run_dir"], self.p["name"])
        self.afxdp_ifaces = []
        self.realtime = time.time
        self.window_end_note = None

    def fail(self, msg, **kw):
        self.module.fail_json(msg=msg, **dict(self.result, **kw))

    # -------------------------------------------------------------------------------- validation (nothing changes)

    def validate(self):
        p = self.p
        if not re.match(r"^[A-Za-z0-9_.-]+$", p["name"]):
            self.fail("name %r may only hold letters, digits, '_', '.', '-'" % p["name"])
        p["file_prefix"] = p["file_prefix"] or "xdplab-%s" % p["name"]
        if not re.match(r"^[A-Za-z0-9_.-]+$", p["file_prefix"]):
            self.fail("file_prefix %r may only hold letters, digits, '_', '.', '-'" % p["file_prefix"])
        if not p["ports"]:
            self.fail("ports is empty: give at least one PCI address or virtual device (net_af_xdp0,iface=IF, ...)")
        for key in ("nb_cores", "rxq", "txq"):
            if p[key] < 1:
                self.fail("%s must be at least 1, got %d" % (key, p[key]))
        try:
            self.sampler = _measurement.Sampler.from_params(
                p, clock=self.clock, sleep=self.sleep, end_when=self.window_ended if p.get("window_end_file") else None)
        except _measurement.SamplingError as exc:
            self.fail(str(exc))
        for key in ("rxd", "txd", "burst", "mbufs", "memory_mb"):
            if p[key] is not None and p[key] < 1:
                self.fail("%s must be a positive number, got %d" % (key, p[key]))
        if p["timeout"] <= 0:
            self.fail("timeout must be a positive number of seconds, got %s" % p["timeout"])
        if p["forward_mode"] not in tp.FORWARD_MODES:  # argument_spec checks too; kept for direct callers
            self.fail("unknown forward_mode %r; use one of %s" % (p["forward_mode"], ", ".join(tp.FORWARD_MODES)))
        if p["no_huge"] and not p["memory_mb"]:
            p["memory_mb"] = 1024
        self.ports = []
        for spec in p["ports"]:
            try:
                self.ports.append(tp.parse_port(spec, p["devargs"]))
            except ValueError as exc:
                self.fail(str(exc))
        online = self.online_cpus()
        if p["lcores"] is None:
            if len(online) < p["nb_cores"] + 1:
                self.fail("nb_cores=%d needs %d lcores (one main lcore plus one per forwarding core) but only CPUs %s "
                          "are online" % (p["nb_cores"], p["nb_cores"] + 1, self.cpu_text(online)))
            p["lcores"] = online[: p["nb_cores"] + 1]
        lcores = p["lcores"]
        if len(set(lcores)) != len(lcores):
            self.fail("lcores %s lists a CPU twice" % lcores)
        missing = [c for c in lcores if c not in online]
        if missing:
            self.fail("lcores %s are not online CPUs (online: %s); pick lcores among them"
                      % (",".join(map(str, missing)), self.cpu_text(online)))
        if len(lcores) < p["nb_cores"] + 1:
            self.fail("nb_cores=%d needs %d lcores (the first, %d, is the main lcore and does not forward) but lcores "
                      "has %d: %s" % (p["nb_cores"], p["nb_cores"] + 1, lcores[0], len(lcores), lcores))
        binary = p["binary"] or self.module.get_bin_path("dpdk-testpmd")
        if not binary or not os.access(binary, os.X_OK):
            self.fail("dpdk-testpmd not found%s; install DPDK (Debian: apt-get install dpdk dpdk-dev, or role "
                      "xdplab.testbed.dpdk) or set binary" % (" at %s" % p["binary"] if p["binary"] else " in PATH"))
        p["binary"] = binary

    @staticmethod
    def cpu_text(cpus):
        return ",".join(map(str, cpus)) or "none"

    online_cpus = staticmethod(online_cpus)  # the one CPU-list helper; a seam for the unit tests
    pci_is_virtio_net = staticmethod(tp.pci_is_virtio_net)  # sysfs; a seam for the unit tests

    def preflight(self):
        """Checks of the machine: devices, interfaces, queue counts, hugepages."""
        p = self.p
        for i, port in enumerate(self.ports):
            if port["kind"] == "pci":
                if not os.path.exists(os.path.join("/sys/bus/pci/devices", port["address"])):
                    self.fail("PCI device %s is not on this machine (not in /sys/bus/pci/devices); list the NICs with "
                              "lspci -D or dpdk-devbind.py --status" % port["address"])
                # net_virtio prints its RX path at INFO only: the command line asks for it (rx_path in ports)
                self.ports[i] = dict(port, virtio_net=self.pci_is_virtio_net(port["address"]))
                continue
            iface = port["iface"]
            if port["driver"] in ("net_af_xdp", "net_af_packet"):
                if not iface:
                    self.fail("virtual device %s needs iface=<interface>" % port["spec"])
                if not os.path.exists(os.path.join("/sys/class/net", iface)):
                    here = ", ".join(sorted(os.listdir("/sys/class/net")))
                    self.fail("interface %s of %s does not exist in this network namespace (interfaces here: %s)"
                              % (iface, port["name"], here))
            if port["driver"] == "net_af_packet":
                kernel_rxq = self.kernel_queues(iface, "rx")
                if p["rxq"] > kernel_rxq:
                    self.fail("rxq=%d is more than the %d RX queues of interface %s (%s): lower rxq, or give the "
                              "interface more queues (ethtool -L, or numrxqueues for a veth)"
                              % (p["rxq"], kernel_rxq, iface, port["name"]))
                qpairs = int(port["args"].get("qpairs", "0") or 0)
                if qpairs and max(p["rxq"], p["txq"]) > qpairs:
                    self.fail("rxq=%d/txq=%d are more than qpairs=%d of %s: raise qpairs or lower rxq/txq"
                              % (p["rxq"], p["txq"], qpairs, port["name"]))
                if not qpairs and max(p["rxq"], p["txq"]) > 1:
                    port, added = tp.vdev_with_args(port, {"qpairs": str(max(p["rxq"], p["txq"]))})
                    self.result["notes"].append("%s: added %s" % (port["name"], added))
            if port["driver"] == "net_af_xdp":
                max_q, combined = self.af_xdp_limits(iface)
                start = int(port["args"].get("start_queue", "0") or 0)
                count = int(port["args"].get("queue_count", "0") or 0)
                if count and p["rxq"] > count:
                    self.fail("rxq=%d is more than queue_count=%d of %s: raise queue_count or lower rxq"
                              % (p["rxq"], count, port["name"]))
                count = count or p["rxq"]
                if count > combined or start + count > max_q:
                    self.fail("%s asks for queues %d..%d of %s, but DPDK's net_af_xdp can use %d queue(s) there "
                              "(combined channels of ethtool -l %s: %d, maximum %d; a veth has none, so only queue 0): "
                              "lower rxq/queue_count%s" % (port["name"], start, start + count - 1, iface, combined,
                                                           iface, combined, max_q,
                                                           "" if max_q == 1 else " or raise channels (ethtool -L %s "
                                                           "combined N)" % iface))
                if "queue_count" not in port["args"] and count > 1:
                    port, added = tp.vdev_with_args(port, {"queue_count": str(count)})
                    self.result["notes"].append("%s: added %s" % (port["name"], added))
                self.afxdp_ifaces.append(iface)
            self.ports[i] = port
        if not p["no_huge"]:
            self.check_hugepages()

    @staticmethod
    def kernel_queues(iface, kind):
        try:
            return len([q for q in os.listdir("/sys/class/net/%s/queues" % iface) if q.startswith(kind + "-")]) or 1
        except OSError:
            return 1

    def af_xdp_limits(self, iface):
        binary = self.module.get_bin_path("ethtool")
        if not binary:
            self.fail("ethtool is needed to read the channel count of %s for net_af_xdp; apt-get install ethtool" % iface)
        try:
            channels = ethtool.channels(self.module.run_command, iface, ethtool=binary)
        except ethtool.EthtoolError as exc:
            if "not supported" not in str(exc).lower():
                self.fail("reading channels of %s failed: %s" % (iface, exc))
            channels = None
        return tp.af_xdp_queue_limits(channels)

    def check_hugepages(self):
        free = 0
        base = "/sys/kernel/mm/hugepages"
        for size in os.listdir(base) if os.path.isdir(base) else []:
            with open(os.path.join(base, size, "free_hugepages")) as f:
                free += int(f.read())
        with open("/proc/mounts") as f:
            mounts = [line.split()[1] for line in f if line.split()[2:3] == ["hugetlbfs"]]
        if self.p["huge_dir"] and self.p["huge_dir"] not in mounts:
            self.fail("huge_dir %s is not a mounted hugetlbfs (mounted: %s)" % (self.p["huge_dir"], ", ".join(mounts) or "none"))
        if not free or not mounts:
            self.fail("no usable hugepages (free hugepages: %d, hugetlbfs mounts: %s): reserve 2 MiB hugepages and "
                      "mount hugetlbfs (role xdplab.testbed.dpdk), or set no_huge: true" % (free, ", ".join(mounts) or "none"))

    # -------------------------------------------------------------------------------- leftovers

    def stop_leftover(self, state):
        """Stop a recorded run that is still alive; clean what it leaves (runtime dir, XDP program)."""
        self.run_files.stop_recorded()
        self.cleanup_after(state.get("file_prefix"), state.get("afxdp_ifaces") or [], killed=True)

    def cleanup_after(self, file_prefix, afxdp_ifaces, killed):
        if file_prefix:
            tp.remove_runtime_dir(file_prefix)
        if not killed:
            return
        for iface in afxdp_ifaces:
            # net_af_xdp removes its XDP program on a clean quit only
            ip = self.module.get_bin_path("ip")
            if not ip:
                continue
            rc, out, _err = self.module.run_command([ip, "-j", "-d", "link", "show", "dev", iface])
            if rc != 0:
                continue
            xdp = (json.loads(out or "[{}]")[0] or {}).get("xdp") or {}
            name = (xdp.get("prog") or {}).get("name", "")
            if name.startswith("xsk_def_prog") or any("xsk_def_prog" in (a.get("prog") or {}).get("name", "")
                                                      for a in xdp.get("attached", [])):
                self.module.run_command([ip, "link", "set", "dev", iface, "xdp", "off"])
                self.result["notes"].append("detached net_af_xdp's XDP program %s from %s after a kill" % (name, iface))

    def ensure_absent(self):
        state = self.run_files.load()
        if state and not state.get("corrupt") and self.run_files.alive(state):
            self.result.update(changed=True, stopped=state["pid"], command=state.get("command", []))
            if not self.module.check_mode:
                self.stop_leftover(state)
        elif state and not state.get("corrupt") and not self.module.check_mode:
            self.cleanup_after(state.get("file_prefix"), state.get("afxdp_ifaces") or [], killed=True)
        files = self.run_files.files()
        if files:
            self.result.update(changed=True, removed=files)
            if not self.module.check_mode:
                self.run_files.remove()
        return self.result

    # -------------------------------------------------------------------------------- measurement

    def ensure_measured(self):
        self.validate()
        self.preflight()
        p = self.p
        command = tp.build_command(p, self.ports)
        self.result.update(command=command, changed=True, no_huge=p["no_huge"],
                           simd={"max_simd_bitwidth": p["max_simd_bitwidth"], "cpu_flags": self.cpu_flags()})
        if self.module.check_mode:
            self.result["notes"].append("check mode: testpmd was not started; a measurement is not simulated")
            return self.result
        leftover = self.run_files.load()
        if leftover and not leftover.get("corrupt") and self.run_files.alive(leftover):
            self.module.warn("stopped a leftover testpmd run %s (pid %d) before measuring" % (p["name"], leftover["pid"]))
            self.stop_leftover(leftover)
        os.makedirs(p["run_dir"], exist_ok=True)
        self.remove_window_end_file()
        session = None
        try:
            # through the one process helper: its supervisor records how testpmd ended, even after a kill -9
            session = tp.Session(command, log_path=self.run_files.log_path, run_files=self.run_files,
                                 extra_state={"file_prefix": p["file_prefix"], "afxdp_ifaces": self.afxdp_ifaces})
            self.measure(session)  # quit is sent by close()
        except tp.TestpmdError as exc:
            text = exc.transcript or (session.text() if session else "")
            self.result["eal_log"] = tp.eal_log_lines(text, 30)
            reason = tp.explain_failure(text, self.ports, p["lcores"], self.online_cpus())
            self.result["failed_reason"] = str(exc)
            self.close(session)
            if exc.process:
                self.result["process"] = exc.process
            if exc.process and exc.process.get("signal") is not None:
                # killed: the signal is the cause, whatever the transcript's last lines suggest
                self.fail("%s%s" % (exc, "; %s" % reason if reason else ""))
            self.fail(reason or "%s; see eal_log" % exc)
        finally:
            self.close(session)
            self.remove_window_end_file()
        return self.result

    def window_ended(self):
        """The sampler's end_when: window_end_file holds a time on CLOCK_REALTIME that has passed."""
        path = self.p["window_end_file"]
        try:
            with open(path) as f:
                text = f.read().strip()
        except FileNotFoundError:
            return False
        except OSError as exc:
            self.window_end_note = "window_end_file %s could not be read (%s): the window lasted its samples" % (path, exc)
            return False
        try:
            end = float(text)
        except ValueError:
            self.window_end_note = "window_end_file %s does not hold a time (%r): the window lasted its samples" % (
                path, text[:40])
            return False
        if self.realtime() < end:
            return False
        self.window_end_note = "the window ended before its %d samples: window_end_file's time %.3f had passed" % (
            self.p["samples"], end)
        return True

    def remove_window_end_file(self):
        path = self.p.get("window_end_file")
        if path and os.path.lexists(path):
            os.unlink(path)

    def close(self, session):
        if session is None or getattr(session, "closed", False):
            return
        session.closed = True
        rc = session.close()
        # a run that did not quit by itself (killed, or EAL exited early) may leave net_af_xdp's program behind
        self.cleanup_after(self.p["file_prefix"], self.afxdp_ifaces, killed=rc != 0)
        for path in (self.run_files.state_path, self.run_files.exit_path):
            if os.path.exists(path):
                os.unlink(path)
        self.result["exit_status"] = rc

    def cpu_snapshot(self, cpus):
        """cpu_usage's snapshot of the forwarding lcores' CPUs now (None, with a note, if /proc cannot be read)."""
        try:
            return cpustat.window_snapshot(cpus)
        except (OSError, cpustat.CpuStatError) as exc:
            self.result["notes"].append("no CPU snapshot of the window: %s" % exc)
            return None

    @staticmethod
    def cpu_flags():
        try:
            with open("/proc/cpuinfo") as f:
                flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
        except OSError:
            flags = []
        return [f for f in ("sse4_2", "avx2", "avx512f") if f in flags]

    def measure(self, s):
        p = self.p
        banner = tp.clean(s.until_prompt(p["timeout"]))
        self.result["version"] = tp.parse_version(banner)
        self.result["eal_log"] = tp.eal_log_lines(banner, 30)
        warnings = [ln.strip() for ln in banner.splitlines() if re.search(r"warning", ln, re.I)]
        self.result["warnings_seen"] = warnings
        if "No probed ethernet devices" in banner or re.search(r"failed to initialize", banner):
            raise tp.TestpmdError("testpmd started without all ports", s.text())
        summary_text, _a, _b = s.command("show port summary all", p["timeout"])
        summary = tp.parse_port_summary(summary_text)
        if len(summary) != len(self.ports):
            raise tp.TestpmdError("testpmd probed %d of %d ports" % (len(summary), len(self.ports)), s.text())
        port_extra = {}
        # what net_virtio said of its burst functions while testpmd started its ports (it reports no burst mode)
        paths = tp.parse_rx_paths(banner)
        for entry in summary:
            port = entry["port"]
            info = tp.parse_port_info(s.command("show port info %d" % port, p["timeout"])[0])
            rxq = tp.parse_queue_info(s.command("show rxq info %d 0" % port, p["timeout"])[0])
            txq = tp.parse_queue_info(s.command("show txq info %d 0" % port, p["timeout"])[0])
            note = None
            if not rxq["supported"] or not txq["supported"]:
                note = "%s: %s" % (entry["driver"], rxq["error"] or txq["error"])
                self.result["notes"].append("port %d (%s): the driver does not report queue info or burst mode (%s)"
                                            % (port, entry["name"], rxq["error"] or txq["error"]))
            elif rxq["burst_mode"] is None:
                note = "%s reports no burst mode" % entry["driver"]
            port_extra[port] = {"rx_burst_mode": rxq["burst_mode"], "tx_burst_mode": txq["burst_mode"],
                                "burst_mode_note": note, "max_rx_queues": info.get("max_rx_queues"),
                                "max_tx_queues": info.get("max_tx_queues"), "devargs": info.get("devargs"),
                                "rxd": rxq["descriptors"], "txd": txq["descriptors"]}
            # the driver's own words on its RX path (net_virtio), null for drivers that print none: see rx_burst_mode
            path = paths.get(port, {})
            port_extra[port].update({key: path.get(key) for key in ("rx_path", "rx_vector", "rx_path_note", "tx_path")})
        self.result["rx_paths"] = [
            {"port": e["port"], "name": e["name"], "driver": e["driver"], "rx_burst_mode": port_extra[e["port"]]["rx_burst_mode"],
             **{key: port_extra[e["port"]][key] for key in ("rx_path", "rx_vector", "rx_path_note")}}
            for e in summary
        ]
        start_text = s.command("start", p["timeout"])[0]
        mode, streams = tp.parse_streams(start_text)
        if mode is None:
            raise tp.TestpmdError("testpmd did not start forwarding: %s" % " ".join(start_text.split())[:300], s.text())
        self.result["streams"] = streams
        # the one sampler: warm-up, then samples + 1 xstats reads on an absolute schedule; each read is timed at the
        # midpoint of its command on the pty (sent, prompt back), the fwd stats read once after the warm-up
        fwd = {}

        forwarding = p["lcores"][1 : p["nb_cores"] + 1]
        cpu = {}

        def before_window():
            fwd["first"] = tp.parse_fwd_stats(s.command("show fwd stats all", p["timeout"])[0])
            cpu["start"] = self.cpu_snapshot(forwarding)

        def read():
            out, sent, done = s.command("show port xstats all", p["timeout"])
            return (sent + done) / 2.0, tp.parse_xstats(out)

        snaps = [snap for _t, snap in self.sampler.run(read, before_window=before_window)]
        if self.window_end_note:
            self.result["notes"].append(self.window_end_note)
        cpu["end"] = self.cpu_snapshot(forwarding)
        self.result["cpu_window"] = dict(cpu, cpus=forwarding) if cpu["start"] and cpu["end"] else None
        fwd_first = fwd["first"]
        fwd_last = tp.parse_fwd_stats(s.command("show fwd stats all", p["timeout"])[0])
        stop_text = s.command("stop", p["timeout"])[0]
        self.result["run_totals"] = tp.parse_fwd_stats(stop_text)
        summary_result = tp.summarize(snaps, streams, fwd_first, fwd_last, summary)
        self.result["measurement"] = tp.measurement_of(summary_result, snaps, mode)
        for entry in summary_result["ports"]:
            entry.update(port_extra.get(entry["port"], {}))
        self.result.update(summary_result)
        # the last thing before quit: its lcores' run time, for the caller's CPU window that closes after testpmd is
        # gone (cpu_usage ended_threads); from here to its exit testpmd only quits
        self.result["threads"] = cpustat.ended_reading(s.pid, clock=self.clock)
        for w in warnings:
            self.module.warn("testpmd: %s" % w)


def argument_spec():
    return dict(
        _measurement.SAMPLING_ARGUMENT_SPEC,
        state=dict(type="str", default="measured", choices=["measured", "absent"]),
        name=dict(type="str", default="testpmd"),
        run_dir=dict(type="path", default="/run/xdplab/testpmd"),
        binary=dict(type="path"),
        ports=dict(type="list", elements="str", default=[]),
        devargs=dict(type="str"),
        forward_mode=dict(type="str", default="rxonly", choices=list(tp.FORWARD_MODES)),
        lcores=dict(type="list", elements="int"),
        nb_cores=dict(type="int", default=1),
        rxq=dict(type="int", default=1),
        txq=dict(type="int", default=1),
        rxd=dict(type="int"),
        txd=dict(type="int"),
        burst=dict(type="int"),
        mbufs=dict(type="int"),
        rss=dict(type="str", choices=["udp", "ip", "none"]),
        max_simd_bitwidth=dict(type="int", choices=list(tp.SIMD_BITWIDTHS)),
        no_huge=dict(type="bool", default=False),
        memory_mb=dict(type="int"),
        huge_dir=dict(type="path"),
        file_prefix=dict(type="str"),
        warmup=dict(type="float", default=1.0),
        extra_eal_args=dict(type="list", elements="str", default=[]),
        extra_args=dict(type="list", elements="str", default=[]),
        timeout=dict(type="float", default=60.0),
        window_end_file=dict(type="path"),
    )


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[("state", "measured", ("ports",))],
        supports_check_mode=True,
    )
    runner = Testpmd(module)
    if module.params["state"] == "absent":
        module.exit_json(**runner.ensure_absent())
    module.exit_json(**runner.ensure_measured())


if __name__ == "__main__":
    main()

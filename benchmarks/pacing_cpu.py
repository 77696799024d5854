#!/usr/bin/env python
"""Paced generator and DUT CPU sources on the virtual lab, one run, alternating.

For each offered load (--rates, frames/s) and each generator binary (this tree's bpf/build/xdplab-trafficgen and,
with --old-binary, other builds, comma-separated, e.g. the one before the pacing change), R rounds alternating the
binaries:

* refused frames: veth-tg0's tx_queue_0_xdp_xmit_errors (the DUT's ring was full) against what the generator sent;
* counted: veth-dut0's rx_queue_0_xdp_drops (the driver's own counter, the reference) against what was sent;
* the DUT CPU (CPU of xdplab_dut_cpus[0]) from three sources over the same window: /proc/stat busy and user
  (tick-sampled), the NAPI kthread's run time (/proc/<pid>/schedstat, exact), and the XDP program's BPF run time
  (kernel.bpf_stats_enabled on during the window, off again after), plus the foreign user-space threads that ran
  on that CPU (module_utils/_cpustat, as cpu_usage reports them).

With --dut-variants, each round also alternates settings of the DUT's CPU, applied before a trial and undone after
it: `default` (as the lab leaves it), `fifo<N>` (the NAPI kthread at SCHED_FIFO priority N instead of SCHED_OTHER),
`poll` (the DUT CPU's cpuidle states other than POLL disabled: an idle DUT CPU polls instead of halting the vCPU, so
a wake-up of the NAPI thread needs no exit from a halted vCPU), `fifo<N>+poll` (both).

The DUT runs xdp_bare_drop (bpf/xdp_bare_drop.bpf.c: return XDP_DROP, no map writes). Brings the virtual lab up
with playbooks/vlab.yml when it is not there and removes it again at the end in that case. Run under the lab lock:

    flock /tmp/xdplab-lab.lock .venv/bin/python benchmarks/pacing_cpu.py [--rates 250000,1000000,2000000,3000000]
        [--rounds 2] [--seconds 3] [--old-binary /tmp/xdplab-trafficgen.old] [--dut-variants default,fifo50,poll]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat as cpustat

VENV_BIN = os.path.dirname(os.path.abspath(sys.executable))
TG, DUT = "xdplab-tg", "xdplab-dut"
TG_IF, DUT_IF = "veth-tg0", "veth-dut0"
DUT_CPU = 1
GEN_ARGS = ["--dev", TG_IF, "--src-mac", "02:58:44:50:00:01", "--dst-mac", "02:58:44:50:00:02",
            "--src-ip", "198.18.0.1", "--dst-ip", "198.18.0.2", "--cpus", "0"]  # fmt: skip


def sh(*argv, check=True):
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def ethtool(ns, dev):
    out = sh("ip", "netns", "exec", ns, "ethtool", "-S", dev).stdout
    stats = {}
    for line in out.splitlines()[1:]:
        key, _sep, value = line.strip().partition(":")
        if value.strip().lstrip("-").isdigit():
            stats[key] = int(value)
    return stats


def lab_up():
    if TG in sh("ip", "netns", "list").stdout and DUT in sh("ip", "netns", "list").stdout:
        return False
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "playbooks/vlab.yml"], cwd=ROOT, env=env,
                   check=True, capture_output=True)  # fmt: skip
    return True


def lab_down():
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "playbooks/vlab.yml", "-e", "vlab_state=absent"],
                   cwd=ROOT, env=env, check=False, capture_output=True)  # fmt: skip


def napi_thread():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm", encoding="ascii") as f:
                    if f.read().startswith(f"napi/{DUT_IF}-"):
                        return int(pid)
            except OSError:
                pass
    raise SystemExit(f"no NAPI kthread of {DUT_IF}: is threaded NAPI on (playbooks/vlab.yml)?")


def write_text(path, text):
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def cpuidle_states(cpu):
    """The cpuidle state directories of a CPU other than POLL (state0)."""
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle"
    if not os.path.isdir(base):
        return []
    out = []
    for name in sorted(os.listdir(base)):
        with open(os.path.join(base, name, "name"), encoding="ascii") as f:
            if f.read().strip() != "POLL":
                out.append(os.path.join(base, name))
    return out


class DutVariant:
    """A DUT CPU setting applied around one trial (see the module docstring); undone on every exit path."""

    def __init__(self, spec):
        self.spec = spec
        parts = spec.split("+")
        bad = [p for p in parts if p not in ("default", "poll") and not (p.startswith("fifo") and p[4:].isdigit())]
        if bad:
            raise SystemExit(f"--dut-variants: unknown setting(s) {', '.join(bad)} (default, fifo<N>, poll, a+b)")
        self.fifo = next((int(p[4:]) for p in parts if p.startswith("fifo")), None)
        self.poll = "poll" in parts
        self.undo = []

    def __enter__(self):
        if self.fifo is not None:
            pid = napi_thread()
            was = (os.sched_getscheduler(pid), os.sched_getparam(pid))
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(self.fifo))
            self.undo.append(lambda: os.sched_setscheduler(pid, was[0], was[1]))
        if self.poll:
            for state in cpuidle_states(DUT_CPU):
                path = os.path.join(state, "disable")
                with open(path, encoding="ascii") as f:
                    was_disabled = f.read().strip()
                with open(path, "w", encoding="ascii") as f:
                    f.write("1")
                self.undo.append(lambda path=path, was=was_disabled: write_text(path, was))
        return self

    def __exit__(self, *exc):
        while self.undo:
            self.undo.pop()()


def xdp_prog_id():
    info = json.loads(sh("ip", "-n", DUT, "-j", "-d", "link", "show", "dev", DUT_IF).stdout)[0]
    return info["xdp"]["prog"]["id"]


def one_trial(binary, rate, seconds, matcher):
    """Run the generator for `seconds`; measure the middle of the run (0.5 s in, 0.5 s before the end)."""
    gen = subprocess.Popen(["ip", "netns", "exec", TG, binary, *GEN_ARGS, "--duration", str(seconds), "--rate",
                            str(rate), "--obj", os.path.join(ROOT, "bpf/build/xdp_trafficgen.bpf.o")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    tg0, dut0 = ethtool(TG, TG_IF), ethtool(DUT, DUT_IF)
    time.sleep(0.5)
    prog = xdp_prog_id()
    stat0, t0 = cpustat.take()
    th0 = cpustat.read_threads([DUT_CPU])
    bpf0 = cpustat.bpf_run_stats([prog])
    time.sleep(seconds - 1.0)
    stat1, t1 = cpustat.take()
    th1 = cpustat.read_threads([DUT_CPU])
    bpf1 = cpustat.bpf_run_stats([prog])
    out, err = gen.communicate(timeout=seconds + 10)
    tg1, dut1 = ethtool(TG, TG_IF), ethtool(DUT, DUT_IF)
    summary = json.loads(out.strip().splitlines()[-1])
    window = t1 - t0
    (proc_cpu,), _rest = cpustat.usage_between(stat0, stat1, [DUT_CPU])
    work, foreign = cpustat.thread_usage(th0, th1, [DUT_CPU], window, matcher)
    (bpf,) = cpustat.bpf_usage(bpf0, bpf1, window)
    sent = summary["sent"]
    refused = tg1["tx_queue_0_xdp_xmit_errors"] - tg0["tx_queue_0_xdp_xmit_errors"]
    counted = dut1["rx_queue_0_xdp_drops"] - dut0["rx_queue_0_xdp_drops"]
    return {
        "binary": binary, "rate": rate, "sent": sent, "sent_pps": summary["pps"], "refused": refused,
        "refused_pct": 100.0 * refused / sent if sent else 0.0, "counted": counted,
        "counted_of_sent_pct": 100.0 * counted / sent if sent else 0.0,
        "proc_stat_busy": proc_cpu["busy"], "proc_stat_user": proc_cpu["user"],
        "napi_busy": sum(w["busy"] for w in work if w["role"] == "napi"),
        "bpf_busy": bpf["busy"], "bpf_ns_per_run": bpf["ns_per_run"],
        "foreign_user_busy": sum(f["busy"] for f in foreign if not f["kernel"]),
        "foreign_top": [(f["comm"], f["busy"]) for f in foreign if not f["kernel"]][:3],
        "stderr": err.strip()[-300:],
    }  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="250000,1000000,2000000,3000000")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--old-binary", help="other generator builds to alternate with, comma-separated")
    ap.add_argument("--dut-variants", default="default")
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("pacing_cpu.py: needs root (namespaces, XDP, bpf_stats)")
    subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "bpf")], check=True, capture_output=True)
    binaries = [os.path.join(ROOT, "bpf/build/xdplab-trafficgen")] + (args.old_binary.split(",") if args.old_binary else [])
    rates = [int(r) for r in args.rates.split(",")]
    variants = args.dut_variants.split(",")
    for spec in variants:
        DutVariant(spec)  # bad input fails before the lab is touched
    brought_up = lab_up()
    stats_was = cpustat.read_bpf_stats_enabled()
    rows = []
    try:
        napi_thread()
        sh("ip", "-n", DUT, "link", "set", "dev", DUT_IF, "xdpdrv", "obj",
           os.path.join(ROOT, "bpf/build/xdp_bare_drop.bpf.o"), "sec", "xdp")  # fmt: skip
        cpustat.write_bpf_stats_enabled(1)
        matcher = cpustat.WorkMatcher(interfaces=[DUT_IF])
        for _round in range(args.rounds):
            for rate in rates:
                for binary, spec in [(b, v) for b in binaries for v in variants]:
                    with DutVariant(spec):
                        rows.append(dict(one_trial(binary, rate, args.seconds, matcher), variant=spec))
                    r = rows[-1]
                    label = os.path.basename(r["binary"]) + " " + spec
                    print(f"{label:28} {rate / 1e6:5.2f} Mpps: sent {r['sent_pps'] / 1e6:.3f} Mpps, "
                          f"refused {r['refused_pct']:5.2f} %, counted {r['counted_of_sent_pct']:6.2f} % of sent; "
                          f"CPU {DUT_CPU}: /proc/stat {r['proc_stat_busy']:5.1f} % (user {r['proc_stat_user']:.1f}), "
                          f"NAPI thread {r['napi_busy']:5.2f} %, BPF {r['bpf_busy']:5.2f} % "
                          f"({r['bpf_ns_per_run']} ns/run), foreign user {r['foreign_user_busy']:.2f} % "
                          f"{r['foreign_top']}", flush=True)  # fmt: skip
    finally:
        if stats_was is not None:
            cpustat.write_bpf_stats_enabled(stats_was)
        sh("ip", "-n", DUT, "link", "set", "dev", DUT_IF, "xdpdrv", "off", check=False)
        if brought_up:
            lab_down()
    print()
    print("| generator | DUT CPU | offered Mpps | sent Mpps | refused % | counted % of sent | /proc/stat busy % | user % "
          "| NAPI thread % (schedstat) | BPF run time % (bpf_stats) | ns/packet (BPF) | foreign user % |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for binary, spec in [(b, v) for b in binaries for v in variants]:
        for rate in rates:
            rs = [r for r in rows if r["binary"] == binary and r["variant"] == spec and r["rate"] == rate]

            def med(key, rs=rs):
                return statistics.median(r[key] for r in rs if r[key] is not None)

            print(f"| {os.path.basename(binary)} | {spec} | {rate / 1e6:.2f} | {med('sent_pps') / 1e6:.3f} "
                  f"| {med('refused_pct'):.2f} "
                  f"| {med('counted_of_sent_pct'):.2f} | {med('proc_stat_busy'):.1f} | {med('proc_stat_user'):.1f} "
                  f"| {med('napi_busy'):.2f} | {med('bpf_busy'):.2f} | {med('bpf_ns_per_run'):.1f} "
                  f"| {med('foreign_user_busy'):.2f} |")  # fmt: skip
    print(f"\n(median of {args.rounds} round(s) of {args.seconds:g} s each, alternating; CPU figures over the middle "
          f"{args.seconds - 1:g} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

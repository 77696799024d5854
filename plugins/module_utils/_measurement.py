# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one measurement contract of every measuring module.

A measuring module (xdp_stats, netfilter_stats, testpmd, xsk_bench, cpu_usage, ethtool_stats,
the generator's receive side) does two things only:

1. it reads a snapshot of its counters, and lets ``Sampler`` decide *when*: a warm-up, then
   ``samples + 1`` snapshots on an absolute schedule (``start + i * interval``) so sampling never
   drifts, every timestamp on CLOCK_MONOTONIC (the clock the generator's records carry);
2. it returns ``measurement(...)``: one shape, documented once in the doc fragment
   ``xdplab.testbed.measurement`` and in docs/ARCHITECTURE.md (Contract "measurement").

Shape (keys always present; lists may be empty, numbers may be None where a source cannot know):

    pps            float  packets per second over the whole window
    packets        int    packets counted in the window (None when the source gives rates only)
    ns_per_packet  float  1e9 / pps (None without traffic)
    per_cpu        list   [{cpu, pps}] CPUs with traffic
    per_rxq        list   [{queue, pps[, cpus]}] RX queues with traffic
    samples        list   [{t, seconds, packets, pps}] one per interval, t from the window start
    spread         dict   how stable the samples were: {min_pps, max_pps, stdev_pps, cv}
    queue_spread   float  busiest RX queue / mean of the queues with traffic (None: one queue or none)
    imbalance      dict   verdict on the active CPUs and queues (see _xdp_counters.imbalance), or None
    window         dict   {start, end, seconds, clock: "CLOCK_MONOTONIC"}
    source         dict   {kind, at, ...}: what counted; kind e.g. program_map, driver_counters,
                          netfilter_rule, testpmd, xsk_bench, generator_rx, proc_stat, schedstat;
                          at: "dut" (the DUT counted) or "generator_rx" (counted where packets came back)
    details        dict   what only this source knows (testpmd ports, conntrack count, ethtool rates, ...)
"""

from __future__ import annotations

import math
import statistics
import time

CLOCK = "CLOCK_MONOTONIC"
AT_DUT = "dut"
AT_GENERATOR_RX = "generator_rx"
MEASUREMENT_KEYS = (
    "pps",
    "packets",
    "ns_per_packet",
    "per_cpu",
    "per_rxq",
    "samples",
    "spread",
    "queue_spread",
    "imbalance",
    "window",
    "source",
    "details",
)
# the sampling options every measuring module takes (doc fragment xdplab.testbed.sampling)
SAMPLING_ARGUMENT_SPEC = {
    "warmup": {"type": "float", "default": 0.0},
    "warmup_from": {"type": "float"},
    "interval": {"type": "float", "default": 1.0},
    "samples": {"type": "int", "default": 3},
}
# the CPU snapshots at the window's edges, for the modules that sample with Sampler and run no process of their own
# (doc fragment xdplab.testbed.sampling.cpu_window; testpmd brackets its own window: RV(cpu_window) there)
CPU_WINDOW_ARGUMENT_SPEC = {"cpu_window_cpus": {"type": "list", "elements": "int", "default": []}}


class SamplingError(ValueError):
    """The sampling options are out of range; the message names the option."""


class Sampler:
    """Warm-up, then samples + 1 snapshots every interval seconds on an absolute schedule (fewer when
    ``end_when()`` says the window is over).

    ``read()`` returns one snapshot of the counters (any object). ``run(read)`` returns
    ``[(t_monotonic, snapshot), ...]``: the first is the window's start, the last its end.
    ``clock`` and ``sleep`` are injectable so that tests need not wait.
    """

    def __init__(
        self,
        warmup=0.0,
        interval=1.0,
        samples=3,
        clock=time.monotonic,
        sleep=time.sleep,
        start_at=None,
        realtime=time.time,
        cpu_window_cpus=(),
        cpu_snapshot=None,
        end_when=None,
        warmup_from=None,
    ):
        self.warmup, self.interval, self.samples = float(warmup), float(interval), int(samples)
        self.clock, self.sleep = clock, sleep
        # end_when(): asked after each snapshot but the last; True ends the window there, before O(samples) (at least
        # one sample). For a process that must run until traffic sent from elsewhere has ended (testpmd's
        # window_end_file): its samples are an upper bound, not a length to wait out.
        self.end_when = end_when
        # cpu_window_cpus: cpu_usage snapshots of these CPUs at the window's edges (just after its first read and just
        # after its last), so the CPU figures cover the very window that was counted, with no module call around it.
        # cpu_snapshot(cpus) takes one (default: _cpustat.window_snapshot); the pair is in cpu_window after run().
        self.cpu_window_cpus = [int(c) for c in cpu_window_cpus or ()]
        self.cpu_snapshot = cpu_snapshot
        self.cpu_window = None
        # start_at: the warm-up's start on CLOCK_REALTIME (epoch seconds), shared by measurements taken on several
        # hosts at once, so their windows open at the same instant (within the hosts' clock offset)
        self.start_at = None if start_at is None else float(start_at)
        # warmup_from: the instant the warm-up counts from on CLOCK_REALTIME (the generator's start): the window opens
        # warmup seconds after it, or at once when the module starts later (a softer start_at: no other host's window
        # to meet, so starting late is not an error; warmup_waited says how long this module waited)
        self.warmup_from = None if warmup_from is None else float(warmup_from)
        self.warmup_waited = None
        self.realtime = realtime
        self.validate()

    @classmethod
    def from_params(cls, params, **kw):
        """A Sampler from a module's params (the keys of SAMPLING_ARGUMENT_SPEC, and start_at where it has one)."""
        return cls(
            params["warmup"],
            params["interval"],
            params["samples"],
            start_at=params.get("start_at"),
            cpu_window_cpus=params.get("cpu_window_cpus") or (),
            warmup_from=params.get("warmup_from"),
            **kw,
        )

    def validate(self):
        if not math.isfinite(self.interval) or self.interval <= 0:
            raise SamplingError(f"interval must be a positive number of seconds, got {self.interval}")
        if self.warmup < 0:
            raise SamplingError(f"warmup must be zero or more seconds, got {self.warmup}")
        if self.samples < 1:
            raise SamplingError(f"samples must be at least 1, got {self.samples}")
        if self.start_at is not None and (not math.isfinite(self.start_at) or self.start_at <= 0):
            raise SamplingError(f"start_at must be a time on CLOCK_REALTIME (epoch seconds), got {self.start_at}")
        if self.warmup_from is not None and (not math.isfinite(self.warmup_from) or self.warmup_from <= 0):
            raise SamplingError(f"warmup_from must be a time on CLOCK_REALTIME (epoch seconds), got {self.warmup_from}")

    @property
    def seconds(self):
        """How long run() takes: warm-up plus the window."""
        return self.warmup + self.interval * self.samples

    def wait_realtime(self):
        opens = self.start_at + self.warmup
        late = self.realtime() - opens
        if late > 0:
            raise SamplingError(
                f"started {late:.3f} s after the window's opening (start_at {self.start_at:.3f} + warmup "
                f"{self.warmup:g} s on CLOCK_REALTIME): give a start_at further ahead, or a longer warmup (role "
                f"xdplab.testbed.experiment: experiment_window_lead, experiment_warmup)"
            )
        self.sleep(-late)

    def wait_until(self, deadline):
        delay = deadline - self.clock()
        if delay > 0:
            self.sleep(delay)

    def run(self, read, before_window=None):
        """Snapshots on the schedule. before_window(): called once after the warm-up (e.g. an ethtool read).

        With start_at the window opens at start_at + warmup on CLOCK_REALTIME: a sampler that starts late has a
        shorter warm-up; one that starts after that instant raises SamplingError (its window could not be the
        others')."""
        if self.start_at is not None:
            self.wait_realtime()
        elif self.warmup_from is not None:
            self.warmup_waited = max(0.0, self.warmup_from + self.warmup - self.realtime())
            if self.warmup_waited > 0:
                self.sleep(self.warmup_waited)
        elif self.warmup > 0:
            self.sleep(self.warmup)
        if before_window is not None:
            before_window()
        snaps = [(self.clock(), read())]
        # after the first read, not before: the window opens on schedule (start_at: at the same instant as another
        # host's), and both snapshots lag their read by the same ~30-100 ms of reading every thread's schedstat
        cpu_start = self.take_cpu_snapshot()
        start = snaps[0][0]
        for i in range(1, self.samples + 1):
            self.wait_until(start + i * self.interval)
            snaps.append((self.clock(), read()))
            if i < self.samples and self.end_when is not None and self.end_when():
                break
        if cpu_start is not None:
            self.cpu_window = {"cpus": self.cpu_window_cpus, "start": cpu_start, "end": self.take_cpu_snapshot()}
        return snaps

    def take_cpu_snapshot(self):
        """A cpu_usage snapshot of cpu_window_cpus now (None without them)."""
        if not self.cpu_window_cpus:
            return None
        take = self.cpu_snapshot
        if take is None:
            from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat

            take = _cpustat.window_snapshot
        return take(self.cpu_window_cpus)


def window_of(t_start, t_end, realtime_start=None):
    """The window on CLOCK_MONOTONIC; realtime_start: its start on CLOCK_REALTIME, where windows of several hosts
    are compared (rx_counters)."""
    window = {"start": t_start, "end": t_end, "seconds": round(t_end - t_start, 6), "clock": CLOCK}
    if realtime_start is not None:
        window["realtime_start"] = realtime_start
    return window


def samples_from_counts(snaps, count):
    """Per-interval samples from ``[(t, snapshot)]`` and ``count(snapshot) -> cumulative packets``."""
    out = []
    t0 = snaps[0][0]
    for (ta, sa), (tb, sb) in zip(snaps, snaps[1:]):
        packets = count(sb) - count(sa)
        seconds = tb - ta
        out.append(
            {
                "t": round(tb - t0, 6),
                "seconds": round(seconds, 6),
                "packets": packets,
                "pps": packets / seconds if seconds > 0 else 0.0,
            }
        )
    return out


def sample_spread(samples):
    """How stable the per-interval rates were."""
    rates = [float(s["pps"]) for s in samples if s.get("pps") is not None]
    if not rates:
        return {"min_pps": None, "max_pps": None, "stdev_pps": None, "cv": None}
    mean = statistics.fmean(rates)
    stdev = statistics.stdev(rates) if len(rates) > 1 else 0.0
    return {
        "min_pps": min(rates),
        "max_pps": max(rates),
        "stdev_pps": stdev,
        "cv": (stdev / mean) if mean > 0 else None,
    }


def queue_spread(per_rxq):
    """Busiest RX queue over the mean of the queues with traffic; None with fewer than one queue of traffic."""
    rates = [float(q["pps"]) for q in per_rxq or () if q.get("pps")]
    if not rates:
        return None
    return max(rates) / (sum(rates) / len(rates))


def measurement(
    pps,
    window,
    source,
    *,
    packets=None,
    per_cpu=None,
    per_rxq=None,
    samples=None,
    imbalance=None,
    details=None,
):
    """The one measurement shape (see the module docstring). ``window``: a dict from window_of()."""
    pps = float(pps or 0.0)
    if math.isnan(pps) or pps < 0:
        raise ValueError(f"a measured rate must be a non-negative number, got {pps}")
    if "kind" not in source or "at" not in source:
        raise ValueError("a measurement's source names its kind and where it counted (at: dut or generator_rx)")
    samples = list(samples or [])
    per_rxq = list(per_rxq or [])
    return {
        "pps": pps,
        "packets": packets,
        "ns_per_packet": (1e9 / pps) if pps > 0 else None,
        "per_cpu": list(per_cpu or []),
        "per_rxq": per_rxq,
        "samples": samples,
        "spread": sample_spread(samples),
        "queue_spread": queue_spread(per_rxq),
        "imbalance": imbalance,
        "window": window,
        "source": dict(source),
        "details": dict(details or {}),
    }

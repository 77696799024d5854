# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record's ``tcp`` section (contract 4, additive): one TCP trial of playbooks/xdp_pass_tcp.yml.

From the iperf3 client's result (_iperf3.tcp_result, carried by the generator summary), the DUT's CPU usage
(cpu_usage over the trial's window) and the DUT port's driver counters (ethtool_stats' rates):

    goodput_gbit, retransmits, retransmits_per_s, streams, sock_bufsize, ...   (the client's)
    cpu {busy, busy_source, user, system, softirq, split_source}               (mean over the DUT's CPUs)
    cpu_per_gbit                                                               (busy % per Gbit/s of goodput)
    driver_counters {counter: per second} | {}, driver_counters_note           (page/cache counters)

busy comes from cpu_usage's most precise source (per-thread runtime, or /proc/stat); the user/system/softirq
split only exists in /proc/stat, which counts ticks (1/CONFIG_HZ s each): split_source says so.
"""

from __future__ import annotations

import re

# the driver's page and cache counters (seeds/002: mlx5 rx_cache_busy/full/reuse/empty/waive; page_pool
# statistics: mlx5 rx_pp_*, others *page_pool*)
PAGE_COUNTER_RE = re.compile(r"(^|_)(cache_|page_pool|pp_)")
CPU_SPLIT = ("user", "system", "softirq", "irq")
DROP_KEYS = ("driver_rates", "system_info")


class TcpError(ValueError):
    """A bad tcp section input; the message says which."""


def page_counters(rates):
    """The page/cache counters among a {counter: per second} mapping (ethtool_stats rates, or
    _ethtool.parse_ethtool_stats_pl's per-device mapping for one device)."""
    return {k: v for k, v in sorted((rates or {}).items()) if PAGE_COUNTER_RE.search(k)}


def flat_rates(rates):
    """ethtool_stats' rates are {device: {counter: rate}} or {counter: rate}: the counters of every device."""
    out = {}
    for key, value in (rates or {}).items():
        if isinstance(value, dict):
            for k, v in value.items():
                out[k] = out.get(k, 0) + v
        elif isinstance(value, (int, float)):
            out[key] = value
    return out


def cpu_split(per_cpu):
    """Mean user/system/softirq/irq % over the DUT's CPUs (cpu_usage per_cpu, from /proc/stat)."""
    rows = [c for c in per_cpu or () if isinstance(c, dict)]
    out = {}
    for key in CPU_SPLIT:
        vals = [float(c[key]) for c in rows if isinstance(c.get(key), (int, float))]
        out[key] = sum(vals) / len(vals) if vals else None
    return out


def proc_stat_busy(per_cpu):
    """Mean busy % of the DUT CPUs as /proc/stat counts it (cpu_usage per_cpu busy)."""
    vals = [float(c["busy"]) for c in per_cpu or () if isinstance(c, dict) and isinstance(c.get("busy"), (int, float))]
    return sum(vals) / len(vals) if vals else None


def tcp_section(tcp, cpu_busy=None, per_cpu=None, cpu_detail=None, driver=None):
    if not isinstance(tcp, dict):
        raise TcpError("tcp must be the iperf3 client's result (the generator summary's tcp), got %r" % type(tcp).__name__)
    if not isinstance(tcp.get("goodput_gbit"), (int, float)):
        raise TcpError("tcp needs goodput_gbit (Gbit/s), got %r" % (tcp.get("goodput_gbit"),))
    out = {k: v for k, v in tcp.items() if k not in DROP_KEYS}
    rates = flat_rates(tcp.get("driver_rates"))
    counters = page_counters(rates)
    out["driver_counters"] = counters
    if counters:
        out["driver_counters_note"] = None
    else:
        out["driver_counters_note"] = "%s has no page or cache counters in ethtool -S (no DMA page cache to read)" % (
            driver or "the driver"
        )
    split = cpu_split(per_cpu)
    detail = cpu_detail or {}
    # one source for every trial: /proc/stat's busy of the DUT CPUs (cpu_usage's precise source, per-thread
    # runtime, is kept beside it: it is not available for every trial, so trials would not compare)
    busy = proc_stat_busy(per_cpu)
    out["cpu"] = dict(
        busy=busy,
        busy_source="proc_stat (tick-sampled)",
        precise_busy=cpu_busy,
        precise_source=detail.get("busy_source"),
        split_source="proc_stat (tick-sampled)",
        **split,
    )
    gbit = tcp["goodput_gbit"]
    out["cpu_per_gbit"] = busy / gbit if isinstance(busy, (int, float)) and gbit > 0 else None
    return out

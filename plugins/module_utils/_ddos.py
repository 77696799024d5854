# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The DoS experiment's pure parts (issue 27, paper_ddos): the TCP_RR tool's command lines and output, the DUT's
drop counters, and the record's additive ``ddos`` section. No kernel access: unit tests drive it.

The experiment: TCP_RR transactions/s (bpf/tcp_rr.c, xdplab-tcp-rr: netperf TCP_RR's pattern) between a client in
the generator's namespace and a server on the DUT, while xdplab-trafficgen floods the DUT's address with UDP to a
port nobody listens on. Where the flood is dropped is the system: the stack (``UdpNoPorts``), the project's XDP
filter (its ``ddos_stats`` map), xdp-tools' xdp-bench redirect-cpu l4-filter (the driver's XDP drop counter), or
nowhere on the DUT (the control row: the flood goes to a sink beside it).
"""

from __future__ import annotations

import json
import math
import statistics

# the UDP counters of /proc/net/snmp that say where the stack dropped the flood
SNMP_DROPS = ("UdpNoPorts", "UdpInErrors", "UdpRcvbufErrors", "UdpInDatagrams")
# the DUT's counters of the TCP_RR connection itself
SNMP_TCP = ("TcpRetransSegs", "TcpInSegs", "TcpOutSegs", "TcpInCsumErrors", "TcpInErrs")
# ddos_stats of bpf/xdp_ddos_filter.bpf.c: key 0 dropped, key 1 redirected to the application CPU
PROGRAM_KEYS = ("dropped", "redirected")
TOOL = "xdplab-tcp-rr"


class DdosError(ValueError):
    """Output of the tool that is not what it writes, or a value out of range; the message says which."""


def server_command(binary, addr, port, cpu=None):
    """The TCP_RR server's argv (listening on addr:port, pinned to cpu)."""
    argv = [binary, "--listen", f"{addr}:{int(port)}"]
    if cpu is not None:
        argv += ["--cpu", str(int(cpu))]
    return argv


def client_command(binary, addr, port, warmup, duration, interval, cpu=None):
    """The TCP_RR client's argv: ``warmup`` seconds left out, then ``duration`` seconds in ``interval`` samples."""
    argv = [binary, "--connect", f"{addr}:{int(port)}", "--warmup", f"{float(warmup):g}",
            "--duration", f"{float(duration):g}", "--interval", f"{float(interval):g}"]  # fmt: skip
    if cpu is not None:
        argv += ["--cpu", str(int(cpu))]
    return argv


def app_cpu(explicit, housekeeping, dut_cpus, generator_cpus, same_machine):
    """The application's CPU (the TCP_RR server's, and xdp_ddos_filter's cpumap target) and why: (cpu, chosen_because).

    ``explicit`` (xdplab_dut_cpumap_cpu) wins. Otherwise the first of ``housekeeping`` (xdplab_housekeeping_cpus)
    that no generator uses where the generator is the same machine (``same_machine``: the virtual lab;
    ``generator_cpus``: its senders, its receive NAPI threads, the TCP_RR client); where every housekeeping CPU is
    also a generator's (the 2-CPU vlab: CPU 0), or there is none, the DUT's last CPU (``dut_cpus``), the split two
    machines would have: the DUT's work on its CPU, the generator's on another."""
    if explicit not in (None, ""):
        try:
            return int(explicit), "xdplab_dut_cpumap_cpu"
        except (TypeError, ValueError):
            raise DdosError(
                f"xdplab_dut_cpumap_cpu: {explicit!r} is not a CPU number: name one CPU of the DUT in the inventory "
                "(host_vars), or leave it out for the default"
            ) from None
    housekeeping = [int(c) for c in housekeeping or ()]
    used = sorted({int(c) for c in generator_cpus or ()}) if same_machine else []
    free = [c for c in housekeeping if c not in used]
    if free:
        if same_machine:
            why = (f"the first of xdplab_housekeeping_cpus {housekeeping} that no generator on this machine uses "
                   f"(the generator's senders, receive NAPI and TCP_RR client: {used})")  # fmt: skip
        else:
            why = f"the first of xdplab_housekeeping_cpus {housekeeping} (the generator is another machine)"
        return free[0], why
    dut = [int(c) for c in dut_cpus or ()]
    if not dut:
        raise DdosError(
            "no application CPU: xdplab_dut_cpus is empty and no housekeeping CPU is free; name one as "
            "xdplab_dut_cpumap_cpu in the inventory (host_vars)"
        )
    if housekeeping:
        why = (f"the DUT's last CPU (xdplab_dut_cpus {dut}): every CPU of xdplab_housekeeping_cpus {housekeeping} is "
               f"also a generator's on this machine ({used}), so the application shares the DUT's CPU, not the "
               "generator's, as two machines would")  # fmt: skip
    else:
        why = f"the DUT's last CPU (xdplab_dut_cpus {dut}): xdplab_housekeeping_cpus is empty"
    return dut[-1], why


def parse_lines(text):
    """The JSON objects of the tool's stdout, in order; a line that is not JSON raises naming it."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise DdosError(f"{TOOL} stdout line {number} is not JSON: {line[:200]!r}") from None
        if not isinstance(obj, dict) or "type" not in obj:
            raise DdosError(f"{TOOL} stdout line {number} has no type: {line[:200]!r}")
        out.append(obj)
    return out


def client_result(lines, interval):
    """The client's run as the record keeps it: its samples (one per full interval: a last, shorter one is left
    out), their mean and sd (the paper's four 3-second samples), and the summary's latency and totals."""
    summary = next((o for o in lines if o["type"] == "summary"), None)
    if summary is None:
        raise DdosError(f"{TOOL} wrote no summary line (it was killed, or is older than 0.1.0)")
    samples = [
        {"t": o["t"], "seconds": o["interval_s"], "transactions": o["transactions"], "trans_per_s": o["trans_per_s"]}
        for o in lines
        if o["type"] == "interval" and float(o["interval_s"]) >= 0.9 * float(interval)
    ]
    rates = [float(s["trans_per_s"]) for s in samples]
    warmup = next((o for o in lines if o["type"] == "warmup"), {})
    return {
        "trans_per_s": round(statistics.fmean(rates), 1) if rates else 0.0,
        "trans_per_s_sd": round(statistics.stdev(rates), 1) if len(rates) > 1 else 0.0,
        "samples": samples,
        "transactions": summary["transactions"],
        "elapsed_s": summary["elapsed_s"],
        "latency_us": summary.get("latency_us") or {},
        "connected": bool(summary.get("connected")),
        "connects": summary.get("connects"),
        "failures": summary.get("connect_or_io_failures"),
        "warmup_transactions": warmup.get("transactions"),
        "request_size": summary.get("request_size"),
        "response_size": summary.get("response_size"),
        "version": summary.get("version"),
    }


def program_totals(values):
    """{dropped, redirected} summed over CPUs from read_percpu_array's values (a list per key of per-CPU bytes),
    and {cpu: dropped} for the CPUs that dropped."""
    totals, per_cpu = {}, {}
    for key, name in enumerate(PROGRAM_KEYS):
        per = [int.from_bytes(raw[:8], "little") for raw in (values[key] if key < len(values) else [])]
        totals[name] = sum(per)
        if name == "dropped":
            per_cpu = {str(cpu): n for cpu, n in enumerate(per) if n}
    return totals, per_cpu


def moved(before, after, names):
    """{name: after - before} of counters (a counter that went down was reset: counted from zero)."""
    out = {}
    for name in names:
        a, b = before.get(name), after.get(name)
        if isinstance(a, int) and isinstance(b, int):
            out[name] = b - a if b >= a else b
    return out


def where_dropped(stack, program, driver_drops, seconds):
    """Per second over the window: the flood's drops by where they happened."""

    def rate(n):
        return round(n / seconds, 1) if n is not None and seconds > 0 else None

    return {
        "xdp_program_pps": rate(program.get("dropped")) if program else None,
        "xdp_driver_pps": rate(driver_drops),
        "udp_no_ports_pps": rate(stack.get("UdpNoPorts", 0)),
        "udp_in_errors_pps": rate(stack.get("UdpInErrors", 0)),
        "udp_rcvbuf_errors_pps": rate(stack.get("UdpRcvbufErrors", 0)),
    }


def dropped_pps(system_drop_at, where):
    """The drop rate the system's own counter saw (the measurement's pps): ``program``, ``driver``, ``stack`` or
    ``none`` (the control row: the DUT sees no flood)."""
    key = {"program": "xdp_program_pps", "driver": "xdp_driver_pps", "stack": "udp_no_ports_pps"}.get(system_drop_at)
    return float(where.get(key) or 0.0) if key else 0.0


def cpu_parties(per_cpu, roles):
    """[{cpu, busy, softirq, system, user, roles}] of every CPU, with the parties that run there (roles: {name: [cpus]})."""
    out = []
    for row in per_cpu:
        names = sorted(name for name, cpus in roles.items() if row["cpu"] in {int(c) for c in cpus or ()})
        out.append({k: row.get(k) for k in ("cpu", "busy", "user", "system", "softirq")} | {"roles": names})
    return out


def section(client, dut, attack, system, app=None):
    """The record's additive ``ddos`` section: the TCP_RR client's result, what the DUT counted (drops by where,
    the stack's UDP and TCP counters, CPUs), the attack as offered and as the generator sent it, and the application's
    CPU (``app``: {cpu, chosen_because}, app_cpu's)."""
    achieved = attack.get("achieved_pps")
    if achieved is not None and (not isinstance(achieved, (int, float)) or math.isnan(achieved)):
        raise DdosError(f"attack achieved_pps {achieved!r} is not a number")
    return {
        "tcp_rr": client,
        "attack": attack,
        "drop_at": system.get("drop_at"),
        "dropped": dut.get("dropped") or {},
        "stack": dut.get("stack") or {},
        "program": dut.get("program"),
        "cpus": dut.get("cpus") or [],
        "sink": system.get("sink", False),
    } | ({"app_cpu": app} if app is not None else {})


# -- the DoS table (module ddos_report) ---------------------------------------------------------------------------
# a point "holds" at this share of its row's baseline, as the paper's "above 80 %"; it has "fallen to 0" below ZERO
HOLD_SHARE = 0.8
ZERO_SHARE = 0.05
# the row that sends the same flood to a sink on the generator host, not to the DUT (system ddos_control)
CONTROL_ROW = "ddos_control"


def points(records):
    """{system: {attack pps offered: {trans_per_s, sd, reps, achieved_pps, dropped, app_cpu_busy}}} of the ok records
    with a ddos section (the mean of the repetitions; sd: their spread, or the samples' with one repetition)."""
    grouped = {}
    for rec in records:
        ddos = rec.get("ddos")
        if rec.get("status", "ok") != "ok" or not isinstance(ddos, dict):
            continue
        system = (rec.get("point") or {}).get("system")
        offered = int((ddos.get("attack") or {}).get("offered_pps") or 0)
        grouped.setdefault(system, {}).setdefault(offered, []).append(rec)
    out = {}
    for system, by_rate in grouped.items():
        for offered, recs in sorted(by_rate.items()):
            rates = [float(r["ddos"]["tcp_rr"].get("trans_per_s") or 0) for r in recs]
            sd = statistics.stdev(rates) if len(rates) > 1 else float(recs[0]["ddos"]["tcp_rr"].get("trans_per_s_sd") or 0)
            last = recs[-1]["ddos"]
            app = [c for c in last.get("cpus") or [] if "app" in (c.get("roles") or [])]
            out.setdefault(system, {})[offered] = {
                "trans_per_s": statistics.fmean(rates),
                "sd": sd,
                "reps": len(recs),
                "achieved_pps": statistics.fmean(float(r["ddos"]["attack"].get("achieved_pps") or 0) for r in recs),
                "dropped": last.get("dropped") or {},
                "cpus": last.get("cpus") or [],
                "app_cpu_busy": app[0].get("busy") if app else None,
            }
    return out


def paper_rows(csv_text):
    """{attack_pps: {xdp, xdp_sd, no_xdp, no_xdp_sd}} of usecase_ddos.csv (empty cells: None)."""
    lines = [line.split(",") for line in csv_text.strip().splitlines()]
    head, rows = lines[0], lines[1:]
    out = {}

    def num(cells, key):
        text = (cells.get(key) or "").strip()
        return float(text) if text else None

    for row in rows:
        cells = dict(zip(head, row))
        out[int(float(cells["attack_pps"]))] = {
            "xdp": num(cells, "xdp_tcp_rr_trans_per_s"), "xdp_sd": num(cells, "xdp_sd"),
            "no_xdp": num(cells, "no_xdp_tcp_rr_trans_per_s"), "no_xdp_sd": num(cells, "no_xdp_sd"),
        }  # fmt: skip
    return out


def held(by_rate, reference=None):
    """(highest attack rate at which the row holds HOLD_SHARE of its baseline with every lower rate holding too,
    lowest rate at which it is below ZERO_SHARE) in pps; None where there is no baseline or no such rate.
    With ``reference`` (the control row's points: the same flood sent to a sink, not the DUT) the share at each rate
    is of the control row's trans/s at that rate instead: what the flood costs through the DUT, without what the
    generator and the client cost each other on a shared machine. A rate the control row lacks is not judged."""
    base = (by_rate.get(0) or {}).get("trans_per_s")
    if not base:
        return None, None
    hold, zero, holding = 0, None, True
    for rate, p in sorted(by_rate.items()):
        if reference is None:
            share = p["trans_per_s"] / base
        else:
            ref = (reference.get(rate) or {}).get("trans_per_s")
            if not ref:
                continue
            share = p["trans_per_s"] / ref
        if zero is None and share < ZERO_SHARE:
            zero = rate
        holding = holding and share >= HOLD_SHARE
        if holding:
            hold = rate
    return hold, zero


def linux_drop_rate(by_rate):
    """The stack's UDP-to-no-port drop ceiling: the highest UdpNoPorts rate the ddos_none row counted."""
    return max((float((p["dropped"] or {}).get("udp_no_ports_pps") or 0) for p in by_rate.values()), default=0.0)


def _fmt(value, digits=0):
    return "-" if value is None else f"{value:,.{digits}f}"


def app_cpu_lines(records):
    """The report's line on the application CPU: each distinct ``ddos.app_cpu`` of the ok records (one per run unless
    the inventory changed between them), with why it was chosen; [] for records before it was recorded."""
    seen, shared = [], False
    for rec in records:
        app = (rec.get("ddos") or {}).get("app_cpu") if rec.get("status") == "ok" else None
        if app and app not in seen:
            seen.append(app)
        if rec.get("status") == "ok":
            shared = shared or any({"app", "dut"} <= set(c.get("roles") or []) for c in (rec.get("ddos") or {}).get("cpus") or [])
    lines = [f"Application CPU (the TCP_RR server's, xdp_ddos_filter's cpumap target): CPU {a.get('cpu')}, "
             f"{a.get('chosen_because')}." for a in seen]  # fmt: skip
    if shared:
        lines.append(
            "The application shares a CPU with the DUT's receive path here, so with the filter the flood's XDP work and "
            "the application compete for that CPU: the paper's cpumap sends the application's traffic to a CPU of its "
            "own. Its result (TCP_RR held above 80 % to many times the Linux drop rate) needs a CPU for the "
            "application that neither the DUT's receive path nor a generator uses: a hardware inventory, or a virtual "
            "lab of 4 or more CPUs."
        )
    return lines


def table_markdown(pts, paper, labels=None, none_row="ddos_none", xdp_row="xdp_ddos_filter", control_row=CONTROL_ROW):
    """The DoS table (trans/s mean and sd per row and attack rate, % of the row's baseline and of the control row at
    the same rate, the paper's beside), the ratio rows (TCP_RR held under attack) and the issue's check, as Markdown."""
    labels = labels or {}
    control = pts.get(control_row) or {}
    lines = [
        "| system | attack offered (Mpps) | achieved (Mpps) | TCP_RR trans/s | sd | % of baseline | % of control "
        "| dropped where (kpps) | app CPU busy % | paper XDP trans/s | paper no-XDP trans/s |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for system in sorted(pts):
        by_rate = pts[system]
        base = (by_rate.get(0) or {}).get("trans_per_s")
        for rate, p in sorted(by_rate.items()):
            share = f"{100 * p['trans_per_s'] / base:.0f} %" if base else "-"
            ref_rate = (control.get(rate) or {}).get("trans_per_s")
            of_control = f"{100 * p['trans_per_s'] / ref_rate:.0f} %" if ref_rate and system != control_row else "-"
            where = ", ".join(f"{k.replace('_pps', '')} {v / 1000:,.0f}" for k, v in sorted((p["dropped"] or {}).items()) if v)
            ref = paper.get(rate) or {}
            lines.append(
                f"| {labels.get(system, system)} | {rate / 1e6:g} | {p['achieved_pps'] / 1e6:.2f} | {_fmt(p['trans_per_s'])} "
                f"| {_fmt(p['sd'])} | {share} | {of_control} | {where or '-'} | {_fmt(p['app_cpu_busy'], 1)} "
                f"| {_fmt(ref.get('xdp'))} "
                f"| {_fmt(ref.get('no_xdp'))} |"
            )
    lines += [
        "",
        "TCP_RR held under attack (held: >= 80 % of the row's baseline at this and every lower rate; fallen: below 5 %;"
        " against control: the same shares of the control row's trans/s at each rate, the flood sent to a sink, so what"
        " the generator and the client cost each other on a shared machine is left out):",
        "",
        "| row | held up to (Mpps) | fallen to 0 at (Mpps) | held against control up to (Mpps) | paper |",
        "|---|---:|---:|---:|---|",
    ]
    paper_text = {none_row: "no XDP: 59 % at 3 Mpps, 0 at 3.5 Mpps", xdp_row: "XDP: above 80 % up to 19 Mpps, 0 at 23 Mpps"}
    for system in sorted(pts):
        hold, zero = held(pts[system])
        vs_control = held(pts[system], control)[0] if control and system != control_row else None
        lines.append(f"| {labels.get(system, system)} | {_fmt(None if hold is None else hold / 1e6, 2)} | "
                     f"{_fmt(None if zero is None else zero / 1e6, 2)} | "
                     f"{_fmt(None if vs_control is None else vs_control / 1e6, 2)} | "
                     f"{paper_text.get(system, '-')} |")  # fmt: skip
    verdict = check(pts, none_row, xdp_row, control_row)
    lines += ["", f"Linux drop rate (UDP to no port, the {none_row} row's UdpNoPorts ceiling): "
              f"{_fmt(verdict['linux_drop_pps'] / 1e6 if verdict['linux_drop_pps'] else None, 2)} Mpps.",
              f"Without XDP TCP_RR falls to 0 before that rate: {verdict['none_falls_before']}; with XDP it holds to at "
              f"least 3x that rate: {verdict['xdp_holds_3x']} (against the control row: "
              f"{verdict['xdp_holds_3x_against_control']})."]  # fmt: skip
    return "\n".join(lines) + "\n"


def check(pts, none_row="ddos_none", xdp_row="xdp_ddos_filter", control_row=CONTROL_ROW):
    """The issue's Done when for the virtual lab: {linux_drop_pps, none_falls_before, xdp_holds_3x,
    xdp_holds_3x_against_control} (None: not measured; the last one None without a control row)."""
    none = pts.get(none_row) or {}
    rate = linux_drop_rate(none) if none else 0.0
    _hold, zero = held(none) if none else (None, None)
    xdp = pts.get(xdp_row) or {}
    xdp_hold, _zero = held(xdp) if xdp else (None, None)
    control = pts.get(control_row) or {}
    xdp_vs_control = held(xdp, control)[0] if xdp and control else None
    return {
        "linux_drop_pps": rate or None,
        "none_falls_before": None if not none or not rate else (zero is not None and zero <= rate),
        "xdp_holds_3x": None if xdp_hold is None or not rate else xdp_hold >= 3 * rate,
        "xdp_holds_3x_against_control": None if xdp_vs_control is None or not rate else xdp_vs_control >= 3 * rate,
    }

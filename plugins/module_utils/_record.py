# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trial record: built once, in Python, with the one limit verdict.

``build_record(...)`` turns what a trial produced (the measurement of contract 1, the DUT's CPU use,
the generator's stopped summary, the provenance) into the one JSON object a line of
``trials.jsonl`` holds. Its shape is ``docs/trial_record.schema.json`` (``SCHEMA_VERSION``), shown
in docs/ARCHITECTURE.md ("Contract 4: the trial record"). The module ``xdplab.testbed.trial_record``
writes it; the report (``_report.py``, ``_figures.py``) reads it.

The limit verdict is decided here and nowhere else (``loss_verdict``): which side limited the
trial (the generator: the DUT counted at least ``kept_up_share`` of the offered load; the line rate:
the same, offered at >= ``LINE_RATE_SHARE`` of the link's line rate; else the DUT) and where the
lost packets went (``lost_at``). The report only aggregates the recorded verdicts over the
repetitions of a point (``aggregate_limit``). Records written before the schema existed (no
``schema`` key) are read through ``normalize``, which completes their verdict with the same code.

``wire_pps`` is the one line-rate formula (the filter ``xdplab.testbed.wire_pps`` calls it).
"""

from __future__ import annotations

import copy
import datetime
import math

from ansible_collections.xdplab.testbed.plugins.module_utils import _tcp

SCHEMA_VERSION = 1
# versions this code reads (None: a record written before the schema existed, read as legacy)
READABLE_SCHEMAS = (1,)

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUSES = (STATUS_OK, STATUS_FAILED)

GENERATOR_LIMITED = "generator"
DUT_LIMITED = "dut"
LINE_RATE_LIMITED = "line rate"
LIMITS = (GENERATOR_LIMITED, DUT_LIMITED, LINE_RATE_LIMITED)
# The DUT counted at least this share of what was offered: the offered load, not the DUT, was the limit.
KEPT_UP_SHARE = 0.99
# Offered at least this share of the link's line rate (and the DUT kept up): the wire was the limit.
LINE_RATE_SHARE = 0.95
WIRE_OVERHEAD_BYTES = 20  # preamble 7 + SFD 1 + inter-frame gap 12
MIN_FRAME = 64

# Where a trial's packets were lost (loss.lost_at -> loss.where)
LOST_NOWHERE = "none"
LOST_AT_DUT_RING = "dut_rx_ring"
LOST_ON_THE_PATH = "path"
# forwarding (issue 28): the DUT received the frames and did not send them on
LOST_IN_DUT = "in_dut"
# forwarding (issue 28): the DUT sent the frames and the far side (the generator's receive ports) did not count them
LOST_AT_FAR_SIDE = "far_side"
LOSS_PLACES = {
    LOST_NOWHERE: "nowhere: the DUT kept up with the offered load",
    LOST_AT_DUT_RING: "DUT receive ring full: the egress device refused frames",
    LOST_ON_THE_PATH: "between the generator and the DUT program (port, ring or driver)",
    LOST_IN_DUT: "in the DUT: received and not sent on (dropped by the stack or the program)",
    LOST_AT_FAR_SIDE: "at the far side: the DUT sent the frames and the generator's receive ports refused or lost them",
}

# A forwarding trial whose far side got nothing back (h35v, issue 25's leftover): the generator offered frames and the
# generator's receive ports counted under this share of them. Not a rate but a broken path (a redirect to a port with
# no peer, a missing neighbour, a wrong MAC, a DUT that did not forward): recorded as a failed trial whose failure
# carries the verdict (NOTHING_FORWARDED, where the frames stopped, what to check). 0.1 %: a path that works returned
# at least 3 % of what was offered in every forwarding trial recorded so far (62 trials in docs/results; the lowest,
# 3.06 %, Linux forwarding offered 4.5 Mpps on the virtual lab), and stray frames (neighbour discovery, ARP) on the
# receive ports stay far under 0.1 % of any offered rate the experiments use.
NOTHING_FORWARDED = "nothing_forwarded"
FORWARDED_SHARE_MIN = 0.001
# where the frames of such a trial stopped (failure.verdict.stopped_at), from the forwarding section's counts
STOPPED_BEFORE_DUT = "before_dut"
STOPPED_IN_DUT = "in_dut"
STOPPED_AT_EGRESS_PEER = "dut_egress_peer"
STOPPED_AFTER_DUT = "after_dut"
STOPPED_UNKNOWN = "unknown"
STOPPED_PLACES = {
    STOPPED_BEFORE_DUT: (
        "before the DUT: its ingress port counted none of the frames the generator offered",
        "the cabling (the generator's sending interface and the DUT port's peer), that the DUT port is up, and the "
        "destination MAC the generator writes (xdplab_dut_mac)",
    ),
    STOPPED_IN_DUT: (
        "in the DUT: its ingress port received the frames and none was sent on",
        "the system's forwarding target (XDP_REDIRECT's devmap entry or egress ifindex, XDP_TX's action), for a router "
        "the route and the neighbour of the return address (bpf_fib_lookup's result, `ip route get`, ip_forward), and "
        "the drop counters of forwarding.dut.per_port",
    ),
    STOPPED_AT_EGRESS_PEER: (
        "at the DUT's egress: its ports sent none of the frames and their peers refused them",
        "that the egress port and its peer are up and can take redirected frames (on veth: an XDP program or GRO on "
        "the peer; forwarding.dut.per_port's tx_dropped and xdp_xmit_errors)",
    ),
    STOPPED_AFTER_DUT: (
        "after the DUT: it sent the frames and the generator's receive ports counted none",
        "the destination MAC the DUT writes (its neighbour entry of the return address, the system's dst MAC), the "
        "cabling of the return port (forwarding.return_port) and that the far side's counting program is attached "
        "on forwarding.receive_ports",
    ),
    STOPPED_UNKNOWN: (
        "unknown: the DUT's ports counted nothing (a port bound to DPDK has no kernel counters)",
        "the forwarding process's own counters (its output), the destination MAC it writes and the cabling of the "
        "return port (forwarding.return_port)",
    ),
}

# what the record keeps of the generator's summary: everything but the per-interval records
GENERATOR_DROP_KEYS = ("intervals",)
# what the record keeps of cpu_usage's result beside per_cpu: not Ansible's keys, not the raw snapshot
CPU_DROP_KEYS = ("changed", "failed", "invocation", "warnings", "deprecations", "snapshot", "per_cpu", "msg", "skipped")
PROCESS_KEYS = ("pid", "exit_status", "signal", "signal_name", "stderr_tail")
ERROR_MAX_CHARS = 8000


class RecordError(ValueError):
    """The inputs of a record are incomplete or malformed; the message names the field and what to pass."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- line rate -------------------------------------------------------------------------------------------


def wire_pps(link_speed_gbit, frame_size=64):
    """Line rate in packets per second of a link (Gbit/s) for frames of frame_size bytes.

    A frame occupies frame_size + 20 bytes of wire time (preamble 7, SFD 1, inter-frame gap 12):
    a 64-byte frame takes 84 bytes, so 100 Gbit/s carries 148.8 Mpps.
    """
    return float(link_speed_gbit) * 1e9 / ((float(frame_size) + WIRE_OVERHEAD_BYTES) * 8)


def _speed(value):
    """A link speed in Gbit/s, or None when unknown (None, "", 0 or not a number)."""
    try:
        speed = float(value) if value not in (None, "", 0) else None
    except (TypeError, ValueError):
        return None
    return speed if speed and math.isfinite(speed) and speed > 0 else None


def link_speed_of(rec, default=None):
    """The DUT link's speed in Gbit/s: the record's provenance.dut.link_speed_gbit, else default (None: unknown)."""
    speed = _speed(((rec.get("provenance") or {}).get("dut") or {}).get("link_speed_gbit"))
    return speed if speed is not None else _speed(default)


def line_rate_limit(limit, offered_pps, packet_len, link_speed_gbit, share=LINE_RATE_SHARE):
    """A generator-limited trial offered at (nearly) line rate was limited by the wire, not by the generator."""
    speed = _speed(link_speed_gbit)
    if limit != GENERATOR_LIMITED or speed is None or not offered_pps:
        return limit
    return LINE_RATE_LIMITED if float(offered_pps) >= share * wire_pps(speed, packet_len or MIN_FRAME) else limit


# -- the limit verdict -----------------------------------------------------------------------------------


def offered_in_window(intervals, window):
    """Offered rate over a measurement window, from a generator's per-interval records.

    Each record covers (mono - interval_s, mono] on the host's monotonic clock; a record counts with
    the share of it that overlaps the window. None when the records do not cover at least half of
    the window (different hosts' clocks, or no timestamps).
    """
    if not window or not intervals:
        return None
    start, end = float(window["start"]), float(window["end"])
    if end <= start:
        return None
    sent = covered = 0.0
    for rec in intervals:
        if "mono" not in rec or not rec.get("interval_s"):
            return None
        r_end = float(rec["mono"])
        r_start = r_end - float(rec["interval_s"])
        overlap = min(end, r_end) - max(start, r_start)
        if overlap > 0:
            sent += rec["sent"] * overlap / (r_end - r_start)
            covered += overlap
    if covered < 0.5 * (end - start):
        return None
    return sent / covered


def limit_of(counted_pps, offered_pps, kept_up_share=KEPT_UP_SHARE):
    """Which side limited a trial: the generator (DUT counted ~all it was offered) or the DUT."""
    if not offered_pps:
        return DUT_LIMITED
    return GENERATOR_LIMITED if counted_pps >= kept_up_share * offered_pps else DUT_LIMITED


def loss_verdict(counted_pps, generator_summary, window=None, kept_up_share=KEPT_UP_SHARE, link_speed_gbit=None, packet_len=None):
    """Where a trial lost packets and which side was the limit (the one verdict).

    counted_pps: what the system under test counted over ``window`` ({start, end} on the monotonic
    clock); generator_summary: traffic_generator's stopped summary (offered_pps, elapsed_s,
    egress.refused, intervals). The offered load is taken over the same window when the generator's
    records allow it (offered_basis: window), else over the generator's whole run (offered_basis: run).
    link_speed_gbit (None: unknown) and packet_len decide whether a kept-up trial hit the line rate.
    Raises RecordError on missing or malformed inputs.
    """
    try:
        counted = float(counted_pps)
        offered = float(generator_summary["offered_pps"])
        share = float(kept_up_share)
    except (TypeError, ValueError, KeyError) as exc:
        raise RecordError(
            "the loss verdict needs the counted pps (measurement.pps) and the generator's stopped summary with "
            "offered_pps (generator); got %r" % (exc,)
        ) from exc
    if not 0 < share <= 1:
        raise RecordError("kept_up_share must be in (0, 1], got %r" % kept_up_share)
    try:
        in_window = offered_in_window(generator_summary.get("intervals"), window)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordError(
            "the generator's interval records or the measurement window are malformed (%r); records need mono, "
            "interval_s and sent, the window start and end" % (exc,)
        ) from exc
    basis = "run"
    if in_window is not None:
        offered, basis = in_window, "window"
    lost = max(offered - counted, 0.0)
    refused = (generator_summary.get("egress") or {}).get("refused")
    elapsed = generator_summary.get("elapsed_s") or 0
    refused_pps = refused / elapsed if refused is not None and elapsed else None
    limit = limit_of(counted, offered, share)
    if limit == GENERATOR_LIMITED:
        lost_at = LOST_NOWHERE
    elif refused_pps is not None and refused_pps >= 0.5 * lost:
        lost_at = LOST_AT_DUT_RING
    else:
        lost_at = LOST_ON_THE_PATH
    speed = _speed(link_speed_gbit)
    packet_len = packet_len or generator_summary.get("packet_len") or MIN_FRAME
    return {
        "offered_pps": offered,
        "offered_basis": basis,
        "counted_pps": counted,
        "lost_pps": lost,
        "pct": round(100.0 * lost / offered, 3) if offered else None,
        "refused_pps": refused_pps,
        "limit": line_rate_limit(limit, offered, packet_len, speed),
        "lost_at": lost_at,
        "where": LOSS_PLACES[lost_at],
        "kept_up_share": share,
        "link_speed_gbit": speed,
        "line_rate_pps": wire_pps(speed, packet_len) if speed is not None else None,
    }


def forwarding_verdict(loss, forwarding, cpu_layout=None):
    """The loss verdict of a forwarding trial, with the far side considered (issue 28).

    ``loss`` is loss_verdict()'s over what came back; ``forwarding`` the record's forwarding section, whose ``lost``
    splits the loss into refused at the DUT's receive ring, dropped in the DUT, and lost on the way back (the DUT
    sent it, the generator's receive ports did not count it: their ring refused it). When the DUT did not keep up
    with what it was offered, the side that lost most is the limit: the DUT (its ring or its own drops), or the far
    side, which is the generator's (``generator``, lost_at ``far_side``): a generator that receives what comes back
    on its own CPUs offers less and refuses more. ``loss.sides`` keeps both sides' losses per second.
    ``cpu_layout``: the record's provenance.dut.cpu_layout, where the virtual lab says whether the generator's
    receive NAPI shares its sender CPUs (named in ``where``).
    """
    lost = (forwarding or {}).get("lost") or {}
    loss = dict(loss)

    def rate(key):
        v = lost.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

    refused, dropped, back = rate("refused_at_dut_ring_pps"), rate("dropped_in_dut_pps"), rate("lost_on_way_back_pps")
    loss["sides"] = {"dut_pps": refused + dropped, "far_side_pps": back}
    if loss.get("limit") != DUT_LIMITED:
        return loss
    if back > refused + dropped:
        loss["limit"], loss["lost_at"] = GENERATOR_LIMITED, LOST_AT_FAR_SIDE
        where = LOSS_PLACES[LOST_AT_FAR_SIDE]
        if isinstance(cpu_layout, dict) and "generator_rx" in cpu_layout and not cpu_layout.get("generator_rx"):
            where += " (its receive NAPI runs on the sender CPUs: no CPU was left for it)"
        loss["where"] = where
    elif refused or dropped:
        loss["lost_at"] = LOST_AT_DUT_RING if refused >= dropped else LOST_IN_DUT
        loss["where"] = LOSS_PLACES[loss["lost_at"]]
    return loss


def _rate(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def nothing_forwarded(forwarding, generator_summary, window=None, share=FORWARDED_SHARE_MIN):
    """The verdict of a forwarding trial whose far side got nothing back, or None (a rate was measured).

    ``forwarding``: the record's forwarding section (_forwarding.forwarding_section); ``generator_summary`` and
    ``window``: loss_verdict()'s, for the offered load over the far side's window. The verdict is given when the
    generator offered frames and the far side received under ``share`` of them (FORWARDED_SHARE_MIN). Where the frames
    stopped comes from the DUT's own counts in the section: its ingress port's rx (none: before the DUT), its ports' tx
    and what their peers refused (neither: in the DUT; only refused: at the egress peer), else after the DUT.
    Returns {verdict, stopped_at, where, check, offered_pps, received_pps, share_min, dut: {received_pps, sent_pps,
    refused_by_peer_pps}} (failure.verdict of the schema); a record without a forwarding section (a drop or DoS
    experiment) never has one.
    """
    if not isinstance(forwarding, dict) or not isinstance(generator_summary, dict):
        return None
    if not generator_summary.get("offered_pps"):
        return None
    offered = loss_verdict(0, generator_summary, window)["offered_pps"]
    received = _rate(forwarding.get("received_pps"))
    if offered <= 0 or received >= share * offered:
        return None
    dut = forwarding.get("dut") or {}
    dut_rx, dut_tx, refused = (_rate(dut.get(k)) for k in ("received_pps", "sent_pps", "refused_by_peer_pps"))
    if not dut.get("per_port") and not (dut_rx or dut_tx or refused):
        stopped = STOPPED_UNKNOWN
    elif dut_rx < share * offered:
        stopped = STOPPED_BEFORE_DUT
    elif dut_tx + refused < share * dut_rx:
        stopped = STOPPED_IN_DUT
    elif dut_tx < share * dut_rx:
        # (only where nothing was sent: veth counts an XDP_TX frame that arrived in tx_dropped too, a working
        # xdp_tx trial's refused_by_peer_pps equals its sent_pps)
        stopped = STOPPED_AT_EGRESS_PEER
    else:
        stopped = STOPPED_AFTER_DUT
    where, check = STOPPED_PLACES[stopped]
    return {
        "verdict": NOTHING_FORWARDED,
        "stopped_at": stopped,
        "where": where,
        "check": check,
        "offered_pps": offered,
        "received_pps": received,
        "share_min": share,
        "dut": {"received_pps": dut_rx, "sent_pps": dut_tx, "refused_by_peer_pps": refused},
    }


def nothing_forwarded_error(verdict):
    """The failed trial's error (failure.error, the run summary's line) of a nothing_forwarded verdict."""
    return (
        "nothing came back: the generator offered %.0f pps and the far side received %.0f pps (under %g %% of it: not a "
        "rate); the frames stopped %s (DUT ingress rx %.0f pps, DUT tx %.0f pps, refused by its peers %.0f pps). Check %s"
        % (
            verdict["offered_pps"],
            verdict["received_pps"],
            100 * verdict["share_min"],
            verdict["where"],
            verdict["dut"]["received_pps"],
            verdict["dut"]["sent_pps"],
            verdict["dut"]["refused_by_peer_pps"],
            verdict["check"],
        )
    )


def aggregate_limit(limits):
    """One limit for the repetitions of a point from their recorded verdicts.

    A repetition the DUT kept up with shows the DUT can do at least that rate, so the point is the
    offered load's (line rate before generator), and the DUT's only when every repetition was.
    """
    limits = set(limits)
    for limit in (LINE_RATE_LIMITED, GENERATOR_LIMITED):
        if limit in limits:
            return limit
    return DUT_LIMITED


# -- building the record ---------------------------------------------------------------------------------


def _mean_busy(per_cpu):
    busy = [c["busy"] for c in per_cpu or () if isinstance(c, dict) and isinstance(c.get("busy"), (int, float))]
    return float(sum(busy) / len(busy)) if busy else None


def _cpu_parts(cpu):
    """(cpu_busy, per_cpu, cpu_usage detail, foreign flag) from cpu_usage's result (None: not measured)."""
    if not cpu:
        return None, [], None, None
    if not isinstance(cpu, dict):
        raise RecordError("cpu must be cpu_usage's registered result (a mapping with per_cpu), got %r" % type(cpu).__name__)
    per_cpu = list(cpu.get("per_cpu") or [])
    detail = {k: v for k, v in cpu.items() if k not in CPU_DROP_KEYS}
    foreign = cpu.get("foreign")
    flag = cpu.get("foreign_flag", cpu.get("flagged"))
    if flag is None and foreign is not None:
        flag = bool(foreign)
    # cpu_usage's `busy` comes from its most precise source (busy_source: schedstat or proc_stat)
    busy = cpu.get("busy")
    busy = float(busy) if isinstance(busy, (int, float)) and not isinstance(busy, bool) else _mean_busy(per_cpu)
    return busy, per_cpu, detail, (bool(flag) if flag is not None else None)


def _measurement(measurement, required):
    if not measurement:
        if required:
            raise RecordError(
                "status ok needs measurement: the measure task's measurement (__experiment_measured.measurement, "
                "contract 1: pps, window, source, ...)"
            )
        return None
    if not isinstance(measurement, dict):
        raise RecordError("measurement must be a mapping (contract 1), got %r" % type(measurement).__name__)
    missing = [k for k in ("pps", "window", "source") if k not in measurement]
    if missing:
        raise RecordError(
            "measurement lacks %s: pass the measuring module's `measurement` key (_measurement.measurement), "
            "not its whole result" % ", ".join(missing)
        )
    source = measurement.get("source")
    if not isinstance(source, dict) or not source.get("kind") or not source.get("at"):
        raise RecordError(
            "measurement.source must name its kind and where it counted (at: dut or generator_rx), got %r" % (source,)
        )
    return copy.deepcopy(measurement)


def _generator(generator, required):
    if not generator:
        if required:
            raise RecordError("status ok needs generator: traffic_generator's stopped result's summary (offered_pps, ...)")
        return None
    if not isinstance(generator, dict):
        raise RecordError("generator must be traffic_generator's summary (a mapping), got %r" % type(generator).__name__)
    return {k: copy.deepcopy(v) for k, v in generator.items() if k not in GENERATOR_DROP_KEYS}


def _failure(failure):
    if not isinstance(failure, dict):
        raise RecordError(
            "status failed needs failure: {task, error, process} (ansible_failed_task.name, ansible_failed_result.msg, "
            "the failed module's process), got %r" % (failure,)
        )
    error = failure.get("error")
    if error is not None and not isinstance(error, str):
        error = str(error)
    if error and len(error) > ERROR_MAX_CHARS:
        error = error[: ERROR_MAX_CHARS // 2] + " [...] " + error[-ERROR_MAX_CHARS // 2 :]
    process = failure.get("process")
    if process:
        if not isinstance(process, dict):
            raise RecordError("failure.process must be the {pid, exit_status, signal, signal_name, stderr_tail} of contract 4")
        process = {k: copy.deepcopy(process.get(k)) for k in PROCESS_KEYS}
    out = {"task": str(failure.get("task") or ""), "error": error or "", "process": process or None}
    verdict = failure.get("verdict")
    if verdict is not None:
        # a trial that ran to its end and was not a measurement (nothing_forwarded): the verdict and its counts
        known = isinstance(verdict, dict) and verdict.get("verdict") == NOTHING_FORWARDED
        if not known or verdict.get("stopped_at") not in STOPPED_PLACES:
            raise RecordError(
                "failure.verdict must be what nothing_forwarded() returns ({verdict: %s, stopped_at, where, check, ...}), "
                "got %r" % (NOTHING_FORWARDED, verdict)
            )
        out["verdict"] = copy.deepcopy(verdict)
    return out


def _trial(trial):
    if not isinstance(trial, dict):
        raise RecordError("trial must be one entry of experiment_trials ({trial_id, point, repetition, index, total})")
    tid, point, rep = trial.get("trial_id"), trial.get("point"), trial.get("repetition")
    if not isinstance(tid, str) or not tid:
        raise RecordError("trial.trial_id must be a non-empty string, got %r" % (tid,))
    if not isinstance(point, dict) or not point:
        raise RecordError("trial.point must be the matrix point (a non-empty mapping), got %r" % (point,))
    try:
        rep = int(rep)
    except (TypeError, ValueError):
        raise RecordError("trial.repetition must be a whole number, got %r" % (rep,)) from None
    if rep < 1:
        raise RecordError("trial.repetition counts from 1, got %d" % rep)
    return tid, copy.deepcopy(point), rep


def build_record(
    experiment,
    trial,
    status,
    started_at=None,
    measurement=None,
    cpu=None,
    generator=None,
    provenance=None,
    kept_up_share=KEPT_UP_SHARE,
    link_speed_gbit=None,
    failure=None,
    finished_at=None,
    tcp=None,
    forwarding=None,
    latency=None,
    ddos=None,
):
    """The trial record (docs/trial_record.schema.json) of one trial. Raises RecordError naming a bad input.

    status ok: measurement (contract 1) and generator (the stopped summary) are required; cpu
    (cpu_usage's result), the loss verdict and the provenance go in. status failed: failure
    ({task, error, process}) is required; what is known of the rest (a measurement, the generator's
    summary) is kept, without a verdict.
    """
    if status not in STATUSES:
        raise RecordError("status must be ok or failed, got %r" % (status,))
    if not isinstance(experiment, str) or not experiment:
        raise RecordError("experiment must be the experiment's name, got %r" % (experiment,))
    tid, point, rep = _trial(trial)
    ok = status == STATUS_OK
    if ok and not started_at:
        raise RecordError("status ok needs started_at (when the trial started, UTC ISO 8601)")
    meas = _measurement(measurement, ok)
    gen = _generator(generator, ok)
    if provenance is not None and not isinstance(provenance, dict):
        raise RecordError("provenance must be a mapping {dut, system, program, generator, trial, controller}")
    prov = copy.deepcopy(provenance or {})
    if gen is not None:
        prov["generator"] = dict(prov.get("generator") or {})
        for key in ("version", "command"):
            if key in gen and key not in prov["generator"]:
                prov["generator"][key] = gen[key]
    if meas is not None:
        prov["measurement"] = dict(meas["source"])
    rec = {
        "schema": SCHEMA_VERSION,
        "trial_id": tid,
        "experiment": experiment,
        "status": status,
        "point": point,
        "repetition": rep,
        "started_at": started_at or None,
        "finished_at": finished_at or utc_now(),
        "provenance": prov,
    }
    if meas is not None:
        busy, per_cpu, detail, foreign = _cpu_parts(cpu)
        meas.update({"cpu_busy": busy, "cpu": per_cpu, "cpu_usage": detail, "cpu_foreign": foreign})
        rec["result"] = meas
    if gen is not None:
        rec["generator"] = gen
    if tcp is not None and meas is not None:
        # the TCP experiment's section (_tcp.tcp_section): goodput, retransmits, CPU split, CPU per Gbit/s
        try:
            rec["tcp"] = _tcp.tcp_section(
                tcp, meas.get("cpu_busy"), meas.get("cpu"), meas.get("cpu_usage"), (prov.get("dut") or {}).get("driver")
            )
        except _tcp.TcpError as exc:
            raise RecordError(str(exc)) from None
    if forwarding is None and meas is not None and isinstance((meas.get("details") or {}).get("forwarding"), dict):
        # a forwarding system's measure task carries its section in the measurement's details (systems/forward)
        forwarding = meas["details"].pop("forwarding")
    if forwarding is not None and meas is not None:
        # the forwarding experiments' section (_forwarding.forwarding_section): received where frames came back,
        # the DUT's own counts, and where the rest was lost
        if not isinstance(forwarding, dict) or "received_pps" not in forwarding or "lost" not in forwarding:
            raise RecordError("forwarding must be the section _forwarding.forwarding_section builds "
                              "(received_pps, dut, lost, ...), got %r" % (forwarding,))
        rec["forwarding"] = copy.deepcopy(forwarding)
    if meas is not None and isinstance((meas.get("details") or {}).get("lb"), dict):
        # the load-balancer experiment's section (plugin_utils/_kind_lb.py): the plan, the balancer's counters, the
        # far side's check of the outer destination
        rec["lb"] = meas["details"].pop("lb")
    if latency is not None and meas is not None:
        # the latency experiment's section (module latency_stats, plugins/module_utils/_latency.py statistics)
        if not isinstance(latency, dict) or "count" not in latency or "histogram" not in latency:
            raise RecordError("latency must be the section module latency_stats returns "
                              "(count, average_ns, p50_ns, ..., histogram), got %r" % (latency,))
        rec["latency"] = copy.deepcopy(latency)
    if ddos is not None and meas is not None:
        # the DoS experiment's section (module_utils/_ddos.py section): TCP_RR under the flood, where it was dropped
        if not isinstance(ddos, dict) or "tcp_rr" not in ddos or "attack" not in ddos:
            raise RecordError("ddos must be the section _ddos.section builds (tcp_rr, attack, dropped, ...), got %r" % (ddos,))
        rec["ddos"] = copy.deepcopy(ddos)
    if ok:
        speed = link_speed_of(rec, link_speed_gbit)
        rec["loss"] = loss_verdict(meas["pps"], generator, meas["window"], kept_up_share, speed, point.get("packet_len"))
        if "forwarding" in rec:
            rec["loss"] = forwarding_verdict(rec["loss"], rec["forwarding"], (prov.get("dut") or {}).get("cpu_layout"))
    else:
        rec["failure"] = _failure(failure)
    return rec


# -- reading records -------------------------------------------------------------------------------------


class UnreadableRecord(ValueError):
    """A record this code cannot read (a newer schema, or not a trial record at all)."""


def schema_of(rec):
    """A record's schema version; None for a record written before the schema existed."""
    return rec.get("schema")


def _forwarding_sent(rec):
    """A record whose forwarding section still calls its sending port's count offered_pps (before issue 29) with it
    named sent_pps: the trial's one offered rate is loss.offered_pps (loss.offered_basis). Copies what it changes."""
    fwd = rec.get("forwarding")
    if not isinstance(fwd, dict) or "offered_pps" not in fwd:
        return rec
    fwd = dict(fwd)
    sent = fwd.pop("offered_pps")
    fwd.setdefault("sent_pps", sent)
    return dict(rec, forwarding=fwd)


def normalize(rec, link_speed_gbit=None):
    """A record as the report reads it: schema 1 as it is; a legacy record (no ``schema``) completed.

    A legacy record's verdict knew generator and dut only: the line rate is decided here with the
    same code as build_record's (the record's provenance.dut.link_speed_gbit, else link_speed_gbit).
    Any record's forwarding.offered_pps (before issue 29) becomes forwarding.sent_pps (_forwarding_sent).
    Raises UnreadableRecord for a schema this code does not know.
    """
    version = schema_of(rec)
    if version is not None:
        if version not in READABLE_SCHEMAS:
            raise UnreadableRecord(
                "schema %r: this collection reads schema %s and records without a schema (legacy); update the collection"
                % (version, ", ".join(str(v) for v in READABLE_SCHEMAS))
            )
        return _forwarding_sent(rec)
    if not isinstance(rec.get("point"), dict) or "trial_id" not in rec:
        raise UnreadableRecord("not a trial record (no schema, no trial_id or point)")
    rec = copy.deepcopy(rec)
    if rec.get("status", STATUS_OK) == STATUS_FAILED and "failure" not in rec:
        rec["failure"] = {"task": rec.get("failed_task", ""), "error": rec.get("error", ""), "process": None}
    loss = rec.get("loss")
    if isinstance(loss, dict) and loss.get("limit"):
        offered = loss.get("offered_pps") or (rec.get("generator") or {}).get("offered_pps")
        speed = link_speed_of(rec, link_speed_gbit)
        loss["limit"] = line_rate_limit(loss["limit"], offered, rec["point"].get("packet_len"), speed)
    return _forwarding_sent(rec)


def count_mode_of(rec):
    """Which counter counted an XDP trial: driver | program; None for systems that have no such choice.

    From the measurement's source (provenance.measurement, result.source). Legacy XDP records were
    all counted by the program's map (xdp_stats read rxq_stats): program.
    """
    for source in ((rec.get("provenance") or {}).get("measurement"), (rec.get("result") or {}).get("source")):
        if isinstance(source, dict) and source.get("count_mode"):
            return source["count_mode"]
    if schema_of(rec) is None:
        prov = rec.get("provenance") or {}
        program = str((prov.get("program") or {}).get("name") or "")
        if (prov.get("system") or {}).get("impl") == "xdp" or program.startswith("xdp_bench"):
            return "program"
    return None

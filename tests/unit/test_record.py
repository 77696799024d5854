"""The trial record (plugins/module_utils/_record.py): built once, in Python, with the one limit verdict.

Inputs: the measurement is built with _measurement.measurement from the result of a real virtual-lab trial
(tests/unit/fixtures/report/base_record.json, xdp_stats on veth, 2026-11-30); the CPU use is a real
cpu_usage result of this machine (fixtures/report/cpu_usage_vlab.json); the generator summary is that
trial's real summary, to which the tests add per-interval records shaped like xdplab-trafficgen's (constructed:
the real trial's intervals were not recorded). Every record built here is validated against
docs/trial_record.schema.json.
"""

import copy
import json
import os

import jsonschema
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement, _record, _report

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "report")
SCHEMA_PATH = os.path.join(HERE, "..", "..", "docs", "trial_record.schema.json")
with open(SCHEMA_PATH) as _f:
    SCHEMA = json.load(_f)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def valid(rec):
    """The record, after checking it against the JSON Schema (every error listed on failure)."""
    errors = sorted(VALIDATOR.iter_errors(json.loads(json.dumps(rec))), key=lambda e: list(e.path))
    assert not errors, "\n".join("%s: %s" % ("/".join(map(str, e.path)), e.message) for e in errors)
    return rec


def load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


BASE = load("base_record.json")
CPU = load("cpu_usage_vlab.json")


def measurement(count_mode="program", pps=None):
    res = BASE["result"]
    pps = res["pps"] if pps is None else pps
    start, end = res["window"]["start"], res["window"]["end"]
    samples = [{"t": float(i + 1), "seconds": 1.0, "packets": int(p), "pps": p} for i, p in enumerate(res["samples_pps"])]
    source = {"kind": "program_map" if count_mode == "program" else "driver_counters", "at": "dut", "count_mode": count_mode}
    return _measurement.measurement(
        pps,
        _measurement.window_of(start, end),
        source,
        packets=int(pps * (end - start)),
        per_cpu=res["per_cpu"],
        per_rxq=[{"queue": q["queue"], "pps": q["pps"], "cpus": q["cpus"]} for q in res["per_rxq"]],
        samples=samples,
        imbalance=res["imbalance"],
        details={"ethtool": res["ethtool"]},
    )


def generator(offered=6182324.0, refused=None, with_intervals=True):
    gen = copy.deepcopy(BASE["generator"])
    if refused is not None:
        gen["egress"]["refused"] = refused
    if with_intervals:
        start = BASE["result"]["window"]["start"]
        # constructed: one record per second over the window, as xdplab-trafficgen prints them
        gen["intervals"] = [
            {"type": "interval", "mono": start - 1 + i, "interval_s": 1.0, "sent": int(offered), "pps": offered} for i in range(8)
        ]
    return gen


TRIAL = {"trial_id": BASE["trial_id"], "point": BASE["point"], "repetition": 1, "index": 1, "total": 3}
PROVENANCE = {k: v for k, v in BASE["provenance"].items() if k != "generator"}
PROVENANCE["generator"] = {k: v for k, v in BASE["provenance"]["generator"].items() if k not in ("version", "command")}


def ok_record(**kw):
    args = dict(
        experiment="paper_drop",
        trial=TRIAL,
        status="ok",
        started_at="2026-11-30T17:15:00Z",
        measurement=measurement(),
        cpu=CPU,
        generator=generator(),
        provenance=PROVENANCE,
        finished_at="2026-11-30T17:15:13Z",
    )
    args.update(kw)
    return valid(_record.build_record(**args))


def test_the_schema_is_a_valid_json_schema_of_this_version():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema"]["const"] == _record.SCHEMA_VERSION
    # the verdict's values are the schema's
    assert set(SCHEMA["$defs"]["loss"]["properties"]["limit"]["enum"]) == set(_record.LIMITS)
    assert set(SCHEMA["$defs"]["loss"]["properties"]["lost_at"]["enum"]) == set(_record.LOSS_PLACES)


def test_an_ok_record_has_the_schema_the_measurement_the_cpu_and_the_verdict():
    rec = ok_record()
    assert rec["schema"] == _record.SCHEMA_VERSION == 1
    assert (rec["trial_id"], rec["status"], rec["repetition"]) == (BASE["trial_id"], "ok", 1)
    assert rec["point"] == BASE["point"]
    assert rec["result"]["pps"] == pytest.approx(BASE["result"]["pps"])
    assert set(_measurement.MEASUREMENT_KEYS) <= set(rec["result"])
    # cpu: per_cpu kept, their mean busy %, the rest without Ansible's keys and the raw snapshot
    assert rec["result"]["cpu"] == CPU["per_cpu"]
    assert rec["result"]["cpu_busy"] == pytest.approx(CPU["per_cpu"][0]["busy"])
    assert "snapshot" not in rec["result"]["cpu_usage"] and "changed" not in rec["result"]["cpu_usage"]
    assert rec["result"]["cpu_usage"]["window"] == CPU["window"]
    assert rec["result"]["cpu_foreign"] is None  # this cpu_usage does not tell
    # the generator summary without its per-interval records; its version and command in the provenance
    assert "intervals" not in rec["generator"] and rec["generator"]["offered_pps"] == BASE["generator"]["offered_pps"]
    assert rec["provenance"]["generator"]["version"] == "0.1.0"
    assert rec["provenance"]["generator"]["command"][0].endswith("xdplab-trafficgen")
    # what counted, where, and the count mode
    assert rec["provenance"]["measurement"] == {"kind": "program_map", "at": "dut", "count_mode": "program"}
    assert _record.count_mode_of(rec) == "program"
    # the verdict of the real trial: the DUT's ring was full (veth refused 1.49 Mpps of 6.18 offered)
    loss = rec["loss"]
    assert loss["offered_basis"] == "window" and loss["offered_pps"] == pytest.approx(6182324.0)
    assert loss["limit"] == "dut" and loss["lost_at"] == "dut_rx_ring"
    assert loss["pct"] == pytest.approx(BASE["loss"]["pct"], abs=0.01)
    assert loss["refused_pps"] == pytest.approx(BASE["loss"]["refused_pps"])
    assert loss["link_speed_gbit"] is None and loss["line_rate_pps"] is None


def test_the_record_is_json_and_the_inputs_are_not_changed():
    gen = generator()
    before = copy.deepcopy(gen)
    rec = ok_record(generator=gen)
    assert gen == before
    assert json.loads(json.dumps(rec, allow_nan=False)) == rec


def test_driver_count_mode_is_recorded():
    rec = ok_record(measurement=measurement("driver"))
    assert rec["provenance"]["measurement"]["count_mode"] == "driver"
    assert rec["result"]["source"]["kind"] == "driver_counters"
    assert _record.count_mode_of(rec) == "driver"


def test_kept_up_is_generator_limited_and_line_rate_needs_the_link_speed():
    pps = 6182324.0
    rec = ok_record(measurement=measurement(pps=pps), generator=generator(refused=0))
    assert rec["loss"]["limit"] == "generator" and rec["loss"]["lost_at"] == "none"
    # 6.18 Mpps of 64-byte frames on a 4 Gbit/s link (line rate 5.95 Mpps): the wire was the limit
    rec = ok_record(measurement=measurement(pps=pps), generator=generator(refused=0), link_speed_gbit=4)
    assert rec["loss"]["limit"] == "line rate"
    assert rec["loss"]["line_rate_pps"] == pytest.approx(4e9 / (84 * 8))
    # the DUT's own link speed in the provenance wins over the option
    prov = copy.deepcopy(PROVENANCE)
    prov["dut"]["link_speed_gbit"] = 100
    rec = ok_record(measurement=measurement(pps=pps), generator=generator(refused=0), link_speed_gbit=4, provenance=prov)
    assert rec["loss"]["limit"] == "generator" and rec["loss"]["link_speed_gbit"] == 100


def test_offered_over_the_run_when_the_intervals_do_not_cover_the_window():
    rec = ok_record(generator=generator(with_intervals=False))
    assert rec["loss"]["offered_basis"] == "run"
    assert rec["loss"]["offered_pps"] == BASE["generator"]["offered_pps"]


def test_a_failed_record_names_the_task_the_error_and_the_process():
    process = {"pid": 4242, "exit_status": None, "signal": 9, "signal_name": "SIGKILL",
               "stderr_tail": "xdplab-trafficgen: sending on veth-tg0\n"}  # fmt: skip
    rec = valid(
        _record.build_record(
            "paper_drop",
            TRIAL,
            "failed",
            started_at="2026-11-30T17:15:00Z",
            generator=generator(),
            provenance=PROVENANCE,
            failure={"task": "Stop the generator and read what it sent", "error": "the generator died: signal 9 (SIGKILL)",
                     "process": dict(process, extra="dropped")},
        )
    )  # fmt: skip
    assert rec["status"] == "failed" and "loss" not in rec and "result" not in rec
    assert rec["failure"]["task"] == "Stop the generator and read what it sent"
    assert rec["failure"]["error"] == "the generator died: signal 9 (SIGKILL)"
    assert rec["failure"]["process"] == process  # only the keys of contract 4
    assert rec["generator"]["offered_pps"] == BASE["generator"]["offered_pps"]


def test_a_failed_record_before_anything_started():
    rec = valid(_record.build_record("paper_drop", TRIAL, "failed", failure={"task": "Set up", "error": "no such device"}))
    assert rec["started_at"] is None and rec["failure"]["process"] is None
    assert rec["finished_at"].endswith("Z")


def test_a_long_error_is_shortened_at_its_middle():
    rec = valid(_record.build_record("x", TRIAL, "failed", failure={"task": "t", "error": "a" * 5000 + "b" * 5000}))
    error = rec["failure"]["error"]
    assert len(error) < 8100 and error.startswith("a") and error.endswith("b") and "[...]" in error


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"status": "done"}, "status must be ok or failed"),
        ({"measurement": None}, "needs measurement"),
        ({"measurement": {"pps": 1.0}}, "lacks window, source"),
        ({"measurement": dict(measurement(), source={"kind": "program_map"})}, "where it counted"),
        ({"generator": None}, "needs generator"),
        ({"generator": {"sent": 1}}, "offered_pps"),
        ({"started_at": None}, "needs started_at"),
        ({"trial": {"trial_id": "", "point": {"a": 1}, "repetition": 1}}, "trial_id"),
        ({"trial": {"trial_id": "x", "point": {}, "repetition": 1}}, "trial.point"),
        ({"trial": {"trial_id": "x", "point": {"a": 1}, "repetition": 0}}, "counts from 1"),
        ({"kept_up_share": 1.5}, "kept_up_share"),
        ({"cpu": [1, 2]}, "cpu must be cpu_usage"),
        ({"status": "failed", "failure": None}, "needs failure"),
    ],
)
def test_bad_inputs_name_the_field(kw, message):
    args = dict(experiment="e", trial=TRIAL, status="ok", started_at="2026-11-30T17:15:00Z", measurement=measurement(),
                generator=generator())  # fmt: skip
    args.update(kw)
    with pytest.raises(_record.RecordError, match=message):
        _record.build_record(**args)


def test_the_verdict_by_itself():
    verdict = _record.loss_verdict(5_990_000, {"offered_pps": 6_000_000, "elapsed_s": 10, "egress": {"refused": 0}})
    assert verdict["limit"] == "generator" and verdict["lost_at"] == "none" and verdict["pct"] == pytest.approx(0.167)
    verdict = _record.loss_verdict(5_900_000, {"offered_pps": 6_200_000, "elapsed_s": 10, "egress": {"refused": 3_000_000}})
    assert (verdict["limit"], verdict["lost_at"]) == ("dut", "dut_rx_ring")
    verdict = _record.loss_verdict(20e6, {"offered_pps": 25e6, "elapsed_s": 10, "egress": {"refused": None}})
    assert (verdict["limit"], verdict["lost_at"], verdict["refused_pps"]) == ("dut", "path", None)
    assert _record.loss_verdict(0, {"offered_pps": 0})["limit"] == "dut"


def test_aggregate_limit_over_repetitions():
    assert _record.aggregate_limit(["dut", "dut"]) == "dut"
    assert _record.aggregate_limit(["dut", "generator", "dut"]) == "generator"
    assert _record.aggregate_limit(["generator", "line rate"]) == "line rate"
    assert _record.aggregate_limit([]) == "dut"


def test_wire_pps_is_the_one_formula():
    assert _record.wire_pps(100) == pytest.approx(148809523.8, rel=1e-9)
    assert _record.wire_pps(10, 1518) == pytest.approx(10e9 / (1538 * 8))
    assert _record.line_rate_limit("generator", 1.5e6, 64, 1) == "line rate"
    assert _record.line_rate_limit("generator", 1.0e6, 64, 1) == "generator"
    assert _record.line_rate_limit("dut", 1.5e6, 64, 1) == "dut"
    assert _record.line_rate_limit("generator", 1.5e6, 64, None) == "generator"


def test_legacy_records_are_read_and_completed():
    legacy = copy.deepcopy(BASE)
    assert _record.schema_of(legacy) is None
    assert _record.normalize(legacy) == legacy
    # legacy XDP trials were all counted by the program's map (xdp_bench_drop's rxq_stats)
    assert _record.count_mode_of(legacy) == "program"
    dpdk = copy.deepcopy(legacy)
    dpdk["provenance"]["program"] = {"dpdk_version": "DPDK 22.11.11"}
    assert _record.count_mode_of(dpdk) is None
    dpdk["provenance"]["system"] = {"impl": "xdp"}
    assert _record.count_mode_of(dpdk) == "program"
    kept_up = copy.deepcopy(legacy)
    kept_up["loss"].update(limit="generator", offered_pps=14.8e6)
    assert _record.normalize(kept_up, link_speed_gbit=10)["loss"]["limit"] == "line rate"
    assert kept_up["loss"]["limit"] == "generator"  # normalize copies
    failed = {"trial_id": "x", "status": "failed", "point": {"system": "xdp"}, "failed_task": "Set up", "error": "boom"}
    assert _record.normalize(failed)["failure"] == {"task": "Set up", "error": "boom", "process": None}


def test_a_newer_schema_or_a_foreign_object_is_unreadable():
    with pytest.raises(_record.UnreadableRecord, match="schema 2"):
        _record.normalize(dict(ok_record(), schema=2))
    with pytest.raises(_record.UnreadableRecord, match="not a trial record"):
        _record.normalize({"type": "summary"})
    rec = ok_record()
    assert _record.normalize(rec) is rec


def test_the_schema_refuses_what_the_record_must_not_be():
    rec = ok_record()
    for broken in (
        dict(rec, schema=2),
        dict(rec, status="failed"),  # a failed record has failure and no verdict
        dict(rec, loss=dict(rec["loss"], limit="network")),
        dict(rec, generator=dict(rec["generator"], intervals=[])),
        dict(rec, extra=1),
        {k: v for k, v in rec.items() if k != "loss"},
    ):
        assert list(VALIDATOR.iter_errors(json.loads(json.dumps(broken))))


# -- the verdict by itself (moved here with it from the filter trial_loss) ----------------------------------


def test_loss_generator_limited_when_dut_counts_everything():
    verdict = _record.loss_verdict(5_990_000, {"offered_pps": 6_000_000, "elapsed_s": 10, "egress": {"refused": 0}})
    assert verdict["limit"] == "generator"
    assert verdict["pct"] == pytest.approx(0.167, abs=1e-3)
    assert verdict["where"].startswith("nowhere")


def test_loss_dut_limited_and_located_at_the_full_ring():
    # 6.2 Mpps offered, 5.9 Mpps dropped by XDP, 0.3 Mpps refused by the veth (ring full)
    verdict = _record.loss_verdict(5_900_000, {"offered_pps": 6_200_000, "elapsed_s": 10, "egress": {"refused": 3_000_000}})
    assert verdict["limit"] == "dut"
    assert verdict["lost_pps"] == pytest.approx(300_000)
    assert verdict["refused_pps"] == pytest.approx(300_000)
    assert "ring full" in verdict["where"]
    assert verdict["lost_at"] == "dut_rx_ring"


def test_loss_dut_limited_elsewhere_when_egress_unknown():
    verdict = _record.loss_verdict(20e6, {"offered_pps": 25e6, "elapsed_s": 10, "egress": {"refused": None}})
    assert verdict["limit"] == "dut"
    assert verdict["refused_pps"] is None
    assert "between the generator" in verdict["where"]


def test_loss_needs_a_summary():
    with pytest.raises(_record.RecordError, match="offered_pps"):
        _record.loss_verdict(1, {})


def intervals(start, rates):
    """Per-second generator records ending at start+1, start+2, ..."""
    return [{"mono": start + i + 1, "interval_s": 1.0, "sent": r} for i, r in enumerate(rates)]


def test_offered_load_is_cut_to_the_measurement_window():
    # ramp-up second at 1 Mpps, then 6 Mpps; the window covers seconds 2..4 only
    summary = {"offered_pps": 4.0e6, "elapsed_s": 5, "egress": {"refused": 0},
               "intervals": intervals(100.0, [1e6, 6e6, 6e6, 6e6, 1e6])}  # fmt: skip
    verdict = _record.loss_verdict(5.95e6, summary, {"start": 101.0, "end": 104.0})
    assert verdict["offered_basis"] == "window"
    assert verdict["offered_pps"] == pytest.approx(6e6)
    assert verdict["limit"] == "generator"
    # the whole-run average would have hidden that the DUT kept up
    assert _record.loss_verdict(5.95e6, dict(summary, intervals=[]))["offered_basis"] == "run"


def test_partial_overlap_is_weighted():
    summary = {"offered_pps": 0, "intervals": intervals(0.0, [2e6, 4e6])}
    verdict = _record.loss_verdict(3e6, summary, {"start": 0.5, "end": 1.5})
    assert verdict["offered_pps"] == pytest.approx(3e6)


def test_records_from_another_clock_fall_back_to_the_run():
    summary = {"offered_pps": 5e6, "intervals": intervals(5000.0, [5e6, 5e6])}
    verdict = _record.loss_verdict(4e6, summary, {"start": 10.0, "end": 12.0})
    assert verdict["offered_basis"] == "run"
    assert verdict["offered_pps"] == 5e6


def test_malformed_generator_records_are_a_record_error():
    summary = {"offered_pps": 1e6, "intervals": [{"mono": 2.0, "interval_s": 1.0}]}
    with pytest.raises(_record.RecordError, match="malformed"):
        _record.loss_verdict(1e6, summary, {"start": 1.0, "end": 2.0})


# -- forwarding: the far side in the verdict (issue 28) ----------------------------------------------------------------
# fixture: two real records of paper_forward on the 2-CPU virtual lab (commit bf4ca8e, 2026-12-02, copied from its
# trials.jsonl): xdp_tx, whose frames came back to the generator's one CPU, and linux_forward
FORWARD = {}
with open(os.path.join(FIXTURES, "forward_vlab_2cpu.jsonl")) as _f:
    for _line in _f:
        _rec = json.loads(_line)
        FORWARD[_rec["point"]["system"]] = _rec


def test_a_forwarding_trial_lost_at_the_far_side_is_the_generators():
    rec = FORWARD["xdp_tx"]
    lost = rec["forwarding"]["lost"]
    # what the record says: lost on the way back (0.79 Mpps) outweighs what the DUT refused or dropped (0.07 Mpps)
    assert lost["lost_on_way_back_pps"] > lost["refused_at_dut_ring_pps"] + lost["dropped_in_dut_pps"]
    assert rec["loss"]["limit"] == _record.DUT_LIMITED  # the verdict as recorded then, without the far side
    loss = _record.forwarding_verdict(rec["loss"], rec["forwarding"])
    assert (loss["limit"], loss["lost_at"]) == (_record.GENERATOR_LIMITED, _record.LOST_AT_FAR_SIDE)
    assert loss["sides"]["far_side_pps"] == pytest.approx(lost["lost_on_way_back_pps"])
    assert loss["sides"]["dut_pps"] == pytest.approx(lost["refused_at_dut_ring_pps"] + lost["dropped_in_dut_pps"])
    assert "receive NAPI runs on the sender CPUs" not in loss["where"]
    # the virtual lab's layout says the generator had no receive CPU of its own: the verdict names it
    shared = _record.forwarding_verdict(rec["loss"], rec["forwarding"], {"generator": [0], "generator_rx": []})
    assert "its receive NAPI runs on the sender CPUs" in shared["where"]
    assert rec["loss"]["limit"] == _record.DUT_LIMITED, "the input is not changed"


def test_a_forwarding_trial_lost_in_the_dut_stays_the_duts():
    rec = FORWARD["linux_forward"]
    loss = _record.forwarding_verdict(rec["loss"], rec["forwarding"])
    assert (loss["limit"], loss["lost_at"]) == (_record.DUT_LIMITED, _record.LOST_AT_DUT_RING)
    more_dropped = copy.deepcopy(rec["forwarding"])
    more_dropped["lost"]["dropped_in_dut_pps"] = 10 * more_dropped["lost"]["refused_at_dut_ring_pps"]
    loss = _record.forwarding_verdict(rec["loss"], more_dropped)
    assert (loss["limit"], loss["lost_at"]) == (_record.DUT_LIMITED, _record.LOST_IN_DUT)


def test_a_kept_up_forwarding_trial_keeps_its_verdict_and_the_record_carries_both_sides():
    rec = FORWARD["xdp_tx"]
    kept_up = dict(rec["loss"], limit=_record.GENERATOR_LIMITED, lost_at=_record.LOST_NOWHERE)
    loss = _record.forwarding_verdict(kept_up, rec["forwarding"])
    assert (loss["limit"], loss["lost_at"]) == (_record.GENERATOR_LIMITED, _record.LOST_NOWHERE)
    # build_record applies it to a record with a forwarding section, and the result meets the schema
    full = ok_record(experiment="paper_forward", forwarding=copy.deepcopy(rec["forwarding"]), measurement=measurement(pps=1.0))
    assert full["loss"]["limit"] == _record.GENERATOR_LIMITED and full["loss"]["lost_at"] == _record.LOST_AT_FAR_SIDE
    assert set(full["loss"]["sides"]) == {"dut_pps", "far_side_pps"}


def test_a_generator_address_list_is_kept_in_the_record():
    # issue 27: traffic_generator's summary carries the lists the frames walked; the record keeps them as they are
    listed = {"count": 4000, "seed": 1, "within": ["1.0.0.0-223.255.255.255"], "exclude": ["10.0.0.0/8"],
              "drawn": True, "sha256": "ab" * 32, "first": ["35.101.177.245", "147.183.88.74"]}  # fmt: skip
    rec = ok_record(generator=dict(generator(), destinations=listed))
    assert rec["generator"]["destinations"] == listed and "sources" not in rec["generator"]
    bad = copy.deepcopy(rec)
    bad["generator"]["destinations"]["sha256"] = "not a digest"
    assert list(VALIDATOR.iter_errors(bad)), "the schema takes a sha256 of 64 hex digits only"


# -- forwarding: a trial whose far side got nothing back (h35v, issue 25's leftover) -----------------------------------
# Inputs: the two real paper_forward records above (FORWARD); the broken ones are those records with the counts a broken
# path leaves (constructed from them: the far side's count zeroed, and where the frames stopped, the DUT's too).


def broken(system="linux_forward", far=0.0, dut_rx=None, dut_tx=None, refused=None, per_port=None):
    """The real record's forwarding section with the far side's count (and optionally the DUT's) replaced."""
    fwd = copy.deepcopy(FORWARD[system]["forwarding"])
    fwd["received_pps"], fwd["received_packets"] = far, int(far * 5)
    for key, value in (("received_pps", dut_rx), ("sent_pps", dut_tx), ("refused_by_peer_pps", refused)):
        if value is not None:
            fwd["dut"][key] = value
    if per_port is not None:
        fwd["dut"]["per_port"] = per_port
    return fwd


def test_forwarding_trials_that_came_back_get_no_verdict():
    for system, rec in FORWARD.items():
        assert _record.nothing_forwarded(rec["forwarding"], rec["generator"], rec["result"]["window"]) is None, system
    # the lowest share a working path returned in docs/results (3.06 %, linux_forward offered 4.5 Mpps) is a rate
    rec = FORWARD["linux_forward"]
    low = broken(far=0.0306 * rec["generator"]["offered_pps"])
    assert _record.nothing_forwarded(low, rec["generator"], rec["result"]["window"]) is None
    # records without a forwarding section (drop, DoS: nothing returns by design) are never checked
    assert _record.nothing_forwarded(None, rec["generator"]) is None
    assert _record.nothing_forwarded(rec["forwarding"], {"offered_pps": 0}) is None  # nothing offered


@pytest.mark.parametrize(
    ("counts", "stopped_at"),
    [
        ({}, _record.STOPPED_AFTER_DUT),  # the DUT received and sent them as recorded, nothing came back
        ({"dut_rx": 0.0, "dut_tx": 0.0, "refused": 0.0}, _record.STOPPED_BEFORE_DUT),
        ({"dut_tx": 0.0, "refused": 0.0}, _record.STOPPED_IN_DUT),
        ({"dut_tx": 0.0, "refused": 1.0e6}, _record.STOPPED_AT_EGRESS_PEER),
        ({"dut_rx": 0.0, "dut_tx": 0.0, "refused": 0.0, "per_port": {}}, _record.STOPPED_UNKNOWN),
    ],
)
def test_a_forwarding_trial_whose_far_side_got_nothing_says_where_the_frames_stopped(counts, stopped_at):
    rec = FORWARD["linux_forward"]
    # 3 stray frames in 5 s (neighbour discovery) are still nothing
    verdict = _record.nothing_forwarded(broken(far=0.6, **counts), rec["generator"], rec["result"]["window"])
    assert verdict["verdict"] == _record.NOTHING_FORWARDED and verdict["stopped_at"] == stopped_at
    assert verdict["offered_pps"] == rec["generator"]["offered_pps"] and verdict["received_pps"] == 0.6
    assert (verdict["where"], verdict["check"]) == _record.STOPPED_PLACES[stopped_at]
    error = _record.nothing_forwarded_error(verdict)
    assert error.startswith("nothing came back: the generator offered 1702759 pps and the far side received 1 pps")
    assert verdict["where"] in error and verdict["check"] in error


def test_a_nothing_forwarded_trial_is_a_failed_record_with_its_counts_and_no_rate():
    rec = FORWARD["xdp_tx"]
    fwd = broken("xdp_tx")
    verdict = _record.nothing_forwarded(fwd, rec["generator"], rec["result"]["window"])
    # veth counts a working XDP_TX trial's sent frames in tx_dropped too: sent and "refused" alike is after the DUT
    assert verdict["stopped_at"] == _record.STOPPED_AFTER_DUT
    meas = measurement(pps=0.0)
    meas["details"]["forwarding"] = fwd
    failed = valid(
        _record.build_record(
            "paper_forward",
            TRIAL,
            "failed",
            started_at="2026-12-02T02:04:00Z",
            measurement=meas,
            generator=copy.deepcopy(rec["generator"]),
            provenance=PROVENANCE,
            failure={"task": "Stop the generator, read what it sent and record the trial",
                     "error": _record.nothing_forwarded_error(verdict), "process": None, "verdict": verdict},
        )
    )  # fmt: skip
    assert failed["status"] == "failed" and "loss" not in failed, "no limit verdict: not a measurement"
    assert failed["failure"]["verdict"] == verdict and failed["forwarding"] == fwd and failed["result"]["pps"] == 0.0
    # the report reads only status ok: the trial is not a rate (the real record beside it is)
    records, warnings = _report.read_records(json.dumps(failed) + "\n" + json.dumps(rec) + "\n")
    assert [r["status"] for r in records] == ["ok"] and not warnings
    # a verdict that is not nothing_forwarded's is an error naming what to pass
    with pytest.raises(_record.RecordError, match=r"failure\.verdict must be what nothing_forwarded"):
        _record.build_record("x", TRIAL, "failed", failure={"task": "t", "error": "e", "verdict": {"verdict": "odd"}})
    bad = copy.deepcopy(failed)
    bad["failure"]["verdict"]["stopped_at"] = "somewhere"
    assert list(VALIDATOR.iter_errors(bad)), "the schema names the places"

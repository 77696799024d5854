"""The A/B plan (filter ab_compare_plan), its report helpers, and the NDR/PDR replay of MLRsearch.

The A/B plan and the report are fed fixed inputs. The NDR/PDR replay is driven by a model DUT (constructed, not
measured: it forwards up to a fixed capacity and loses the excess), so the known answer is that capacity; the
search itself is the real MLRsearch package.
"""

import json
import os
import shutil
import subprocess

import pytest
from ansible.errors import AnsibleFilterError
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.filter.ab_compare import ab_compare_plan
from ansible_collections.xdplab.testbed.plugins.filter.ndr_pdr import ndr_pdr_backend_problem, ndr_pdr_goals
from ansible_collections.xdplab.testbed.plugins.module_utils import _abreport, _abstats, _ndrpdr, _trex
from ansible_collections.xdplab.testbed.plugins.module_utils._generators import backend_names
from ansible_collections.xdplab.testbed.plugins.modules import ndr_pdr_search

SYSTEMS = {"xdp": {"impl": "xdp"}, "linux_raw": {"impl": "linux"}}
POINT = {"system": "xdp", "action": "drop", "packet_len": 64, "cores": 1}


def test_plan_interleaves_a_and_b():
    plan = ab_compare_plan({"touch": "no_touch"}, {"touch": "read"}, POINT, 15, systems=SYSTEMS)
    assert [b["variant"] for b in plan["blocks"][:6]] == ["A", "B", "B", "A", "A", "B"]  # counterbalanced
    assert len(plan["blocks"]) == 30 and all(b["size"] == 1 for b in plan["blocks"])
    assert plan["variants"]["B"]["point"] == dict(POINT, touch="read", variant="B")
    assert plan["variants"]["B"]["matrix"]["touch"] == ["read"] and plan["design"] == "interleaved"


def test_plan_system_settings_sysctl_generator():
    plan = ab_compare_plan(
        {"count": "program", "sysctl": {"net.core.busy_poll": 0}, "generator": {"batch": 64}},
        {"count": "driver", "sysctl": {"net.core.busy_poll": 50}, "generator": {"batch": 16}},
        dict(POINT, touch="no_touch"),
        5,
        systems=SYSTEMS,
    )
    assert plan["variants"]["B"]["system_settings"] == {"count": "driver"}
    assert plan["variants"]["B"]["sysctl"] == {"net.core.busy_poll": "50"}
    assert plan["variants"]["A"]["generator"] == {"batch": 64}


def test_plan_kernel_blocks_per_boot():
    plan = ab_compare_plan({"kernel": "base"}, {"kernel": "patched"}, POINT, 15, samples_per_boot=5, systems=SYSTEMS)
    assert plan["kernel"] and [(b["variant"], b["block"], b["size"]) for b in plan["blocks"]] == [
        ("A", 1, 5),
        ("B", 1, 5),
        ("B", 2, 5),
        ("A", 2, 5),
        ("A", 3, 5),
        ("B", 3, 5),
    ]


def test_plan_a_a_run_is_allowed_when_asked():
    plan = ab_compare_plan({"touch": "read"}, {"touch": "read"}, POINT, 3, same=True, systems=SYSTEMS)
    assert plan["same"] and len(plan["blocks"]) == 6


@pytest.mark.parametrize(
    "a, b, kwargs, message",
    [
        ({"touch": "read"}, {"touch": "read"}, {}, "A and B are the same variant"),
        ({"touch": "read"}, {"touch": "no_touch"}, {"same": True}, "A/A run.*A and B differ"),
        ({"touch": "read"}, {"touchy": "read"}, {}, "variant B has unknown key"),
        ({"touch": "read"}, {"touch": "no_touch"}, {"samples": 2}, "N = 2 samples per variant"),
        ({"system": "nope"}, {"touch": "no_touch"}, {}, "system 'nope' is not in experiment_systems"),
        ({"sysctl": {"net.core.a": 1}}, {"sysctl": {"net.core.b": 1}}, {}, "same sysctl keys"),
        ({"kernel": "a"}, {"touch": "read"}, {}, "kernel on both sides"),
        ({"kernel": "a"}, {"kernel": "b"}, {"samples": 10, "samples_per_boot": 5}, "2 boot"),
        ({"kernel": "a"}, {"kernel": "b"}, {"samples": 15, "samples_per_boot": 4}, "multiple of"),
    ],
)
def test_plan_bad_input(a, b, kwargs, message):
    args = {"samples": 15, "same": False}
    args.update(kwargs)
    with pytest.raises(AnsibleFilterError, match=message):
        ab_compare_plan(a, b, POINT, args["samples"], kwargs.get("samples_per_boot"), args["same"], SYSTEMS)


def _record(variant, pps, i, block=1):
    return {
        "status": "ok",
        "trial_id": "t%s%d" % (variant, i),
        "repetition": 1,
        "started_at": "2026-12-01T13:%02d:00Z" % i,
        "point": dict(POINT, touch="no_touch" if variant == "A" else "read", variant=variant, block=block),
        "result": {"pps": pps, "cpu_busy": 99.0},
        "loss": {"limit": "dut"},
    }


def test_report_picks_each_variant_and_renders(tmp_path):
    plan = ab_compare_plan({"touch": "no_touch"}, {"touch": "read"}, POINT, 3, systems=SYSTEMS)
    recs = []
    for i in range(3):
        recs += [_record("A", 1.00e6 + 1000 * i, 2 * i), _record("B", 0.92e6 + 1000 * i, 2 * i + 1)]
    recs.append(dict(_record("B", 5e6, 9), status="failed"))  # failed: not a sample
    recs.append(dict(_record("B", 5e6, 10), point=dict(POINT, touch="no_touch", variant="B", block=1)))  # another point
    picked = _abreport.samples(recs, plan)
    assert [s["pps"] for s in picked["B"]] == [0.92e6, 0.921e6, 0.922e6]
    result = _abreport.analyse(picked, plan)
    assert result["significant"] and result["relative"] < -0.07
    assert result["verdict"].startswith("B is 8.0 % slower than A (95 % CI")
    md = _abreport.markdown(result, picked, plan, "t")
    assert md.count("\n| ") >= 6 + 2 + 6 and "bootstrap (BCa, 9999 resamples)" in md
    files = _abreport.figure_files(result, picked, plan, "t")
    assert set(files) == {"ab_compare.gp", "ab_compare.dat", "ab_compare.ci.dat"}
    assert len(files["ab_compare.dat"].splitlines()) == 7
    json.dumps(result)  # the result is JSON (the module returns and writes it)
    if shutil.which("gnuplot"):  # the real gnuplot draws it (a `$1 eq 'A'` on a string column was an error)
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        res = subprocess.run(["gnuplot", "ab_compare.gp"], cwd=tmp_path, capture_output=True, text=True, check=False)
        assert res.returncode == 0 and not res.stderr, res.stderr
        assert (tmp_path / "ab_compare.png").stat().st_size > 10000


def _cost_record(variant, i, pps, napi_ns_per_packet, bpf_ns):
    """A record whose cpu_usage has what a real trial's has (work thread run time over a 6.5 s CPU window, bpf)."""
    rec = _record(variant, pps, i)
    seconds = 6.5
    rec["result"]["cpu_usage"] = {
        "busy_source": "schedstat",
        "seconds": seconds,
        "work": [{"comm": "napi/veth-dut0-2019", "role": "napi", "runtime_ns": napi_ns_per_packet * pps * seconds}],
        "bpf": [{"id": 41, "name": "xdp_bench_drop", "run_cnt": int(pps * seconds), "run_time_ns": int(pps * seconds) * bpf_ns}],
    }
    return rec


def test_report_compares_a_cost_per_packet_not_the_rate(tmp_path):
    # the rates are noisy (another tenant on the DUT CPU) and equal on average; what a packet costs is not
    plan = ab_compare_plan({"touch": "no_touch"}, {"touch": "read"}, POINT, 3, systems=SYSTEMS)
    recs = []
    for i, pps in enumerate((1.0e6, 0.5e6, 0.8e6)):
        recs.append(_cost_record("A", 2 * i, pps, 250.0 + i, 30 + i))
        recs.append(_cost_record("B", 2 * i + 1, 1.3e6 - pps, 270.0 + i, 60 + 2 * i))
    picked = _abreport.samples(recs, plan)
    assert [round(s["cpu_ns_per_packet"], 6) for s in picked["A"]] == [250.0, 251.0, 252.0]
    assert [s["bpf_ns_per_packet"] for s in picked["B"]] == [60.0, 62.0, 64.0]
    assert not _abreport.analyse(picked, plan)["significant"]  # the rate: no difference
    cpu = _abreport.analyse(picked, plan, metric="cpu_ns_per_packet")
    assert cpu["metric"] == "cpu_ns_per_packet" and cpu["significant"]
    expect = (270.0 * 271.0 * 272.0) ** (1 / 3) / (250.0 * 251.0 * 252.0) ** (1 / 3) - 1
    assert cpu["relative"] == pytest.approx(expect, rel=1e-9)
    assert cpu["verdict"].startswith("B is 8.0 % slower than A in the DUT thread's CPU time per packet (schedstat) (95 % CI")
    bpf = _abreport.analyse(picked, plan, metric="bpf_ns_per_packet", higher="costlier", lower="cheaper")
    assert bpf["verdict"].startswith("B is 100.0 % costlier than A in the XDP program's run time per packet")
    md = _abreport.markdown(cpu, picked, plan, "t", "ab_compare_cpu_ns_per_packet")
    assert "| geometric mean (ns) | 250.9987 | 270.9988 |" in md and "(ab_compare_cpu_ns_per_packet.png)" in md
    files = _abreport.figure_files(cpu, picked, plan, "t", "ab_compare_cpu_ns_per_packet")
    assert "set output 'ab_compare_cpu_ns_per_packet.png'" in files["ab_compare_cpu_ns_per_packet.gp"]
    assert files["ab_compare_cpu_ns_per_packet.dat"].splitlines()[1].endswith(" 250.000000")
    if shutil.which("gnuplot"):
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        res = subprocess.run(["gnuplot", "ab_compare_cpu_ns_per_packet.gp"], cwd=tmp_path, capture_output=True, text=True,
                             check=False)  # fmt: skip
        assert res.returncode == 0 and not res.stderr, res.stderr


def test_report_says_what_a_missing_metric_needs():
    plan = ab_compare_plan({"touch": "no_touch"}, {"touch": "read"}, POINT, 3, systems=SYSTEMS)
    recs = [_record("A", 1e6, 2 * i) for i in range(3)] + [_record("B", 1e6, 2 * i + 1) for i in range(3)]
    picked = _abreport.samples(recs, plan)
    with pytest.raises(_abstats.ABStatsError, match=r"6 of 6 samples have no bpf_ns_per_packet .*paced load"):
        _abreport.analyse(picked, plan, metric="bpf_ns_per_packet")
    with pytest.raises(_abstats.ABStatsError, match="unknown metric 'rate'"):
        _abreport.analyse(picked, plan, metric="rate")


def test_goals_defaults_and_bad_loss_ratio():
    goals = ndr_pdr_goals([])
    assert [(g["name"], g["loss_ratio"], g["exceed_ratio"], g["relative_width"], g["duration_sum"]) for g in goals] == [
        ("NDR", 0.0, 0.5, 0.005, 21.0),
        ("PDR", 0.005, 0.5, 0.005, 21.0),
    ]
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(AnsibleFilterError, match=r"loss_ratio must be in \[0, 1\)"):
            ndr_pdr_goals([{"loss_ratio": bad}])
    with pytest.raises(AnsibleFilterError, match="exceed"):
        ndr_pdr_goals([{"loss_ratio": 0.0, "exceed_ratio": 1.0}])


def _search(capacity, goals, max_load=3e6):
    trials = []
    while True:
        step = _ndrpdr.next_step(trials, goals, 1e4, max_load)
        if step["done"]:
            return step, trials
        assert step["step"] == len(trials) + 1
        sent = int(step["load"] * step["duration"])
        trials.append(
            {
                "load": step["load"],
                "duration": step["duration"],
                "offered": sent,
                "lost": int(max(0.0, step["load"] - capacity) * step["duration"]),
            }
        )


def test_replay_finds_the_model_dut_capacity():
    goals = [dict(g, duration_sum=3.0) for g in ndr_pdr_goals([])]
    step, trials = _search(1.2e6, goals)
    ndr, pdr = step["goals"]
    assert ndr["lower_bound_pps"] <= 1.2e6 < ndr["upper_bound_pps"]
    assert ndr["upper_bound_pps"] / ndr["lower_bound_pps"] - 1 <= 0.0051
    # PDR tolerates 0.5 % loss: its bound lies above capacity, within capacity / 0.995
    assert 1.2e6 <= pdr["lower_bound_pps"] <= 1.2e6 / 0.995
    assert step["trials"] == len(trials)
    # replaying the same records gives the same answer without asking for a trial
    assert _ndrpdr.next_step(trials, goals, 1e4, 3e6) == step


def test_replay_refuses_records_of_another_configuration():
    goals = [dict(g, duration_sum=3.0) for g in ndr_pdr_goals([])]
    _step, trials = _search(1.2e6, goals)
    with pytest.raises(_ndrpdr.SearchInputError, match="another configuration"):
        _ndrpdr.next_step(trials, goals, 1e4, 2e6)


def test_search_trials_from_records_in_step_order_up_to_a_gap():
    base = dict(POINT, touch="no_touch")

    def rec(step, load, refused, status="ok"):
        return {
            "status": status,
            "trial_id": "s%d" % step,
            "started_at": "2026-12-01T13:00:0%dZ" % step,
            "point": dict(base, search=1, step=step, load_pps=load, trial_s=1.0, offered_mpps=load / 1e6),
            "generator": {"sent": 1000000, "egress": {"refused": refused}, "elapsed_s": 2.5, "offered_pps": 0.99 * load},
            "loss": {"lost_pps": 0.0, "refused_pps": 0.0},
            "result": {"pps": load},
        }

    recs = [rec(2, 2e6, 10), rec(1, 3e6, 500), rec(4, 1e6, 0), dict(rec(3, 1.5e6, 0), status="failed")]
    recs.append(
        {
            "status": "ok",
            "point": dict(base, search=1, step=0, load_pps=0, trial_s=1.0, offered_mpps=0),
            "generator": {"offered_pps": 3.3e6},
        }
    )
    trials = _ndrpdr.search_trials(recs, 1, base)
    assert [t["step"] for t in trials] == [1, 2]  # step 3 failed: the replay asks for it again
    assert trials[0]["lost"] == 500 and trials[0]["loss_ratio"] == 0.0005 and trials[0]["pacing"] == pytest.approx(0.99)
    assert _ndrpdr.ceiling_of(recs, 1, base) == 3.3e6 and _ndrpdr.ceiling_of(recs, 2, base) is None


def test_search_module_refuses_a_load_above_the_measured_ceiling(tmp_path, capsys):
    # step 0 measured the generator at 3.3 Mpps; a search up to 4 Mpps would report the generator's limit as the NDR
    base = dict(POINT, touch="no_touch")
    path = tmp_path / "trials.jsonl"
    step0 = {
        "status": "ok",
        "trial_id": "s0",
        "point": dict(base, search=1, step=0, load_pps=0, trial_s=1.0, offered_mpps=0),
        "generator": {"sent": 3300000, "egress": {"refused": 0}, "offered_pps": 3.3e6},
    }
    path.write_text(json.dumps(step0) + "\n")
    args = {"records": str(path), "search": 1, "point": base, "goals": ndr_pdr_goals([]), "max_load_pps": 4e6}
    with patch_module_args(args), pytest.raises(SystemExit):
        ndr_pdr_search.main()
    out = json.loads(capsys.readouterr().out)
    assert out["failed"] and "above the generator's ceiling 3300000 pps" in out["msg"] and "ndr_pdr_max_mpps" in out["msg"]
    assert path.read_text() == json.dumps(step0) + "\n" and not (tmp_path / "ndr_pdr.jsonl").exists()


def _trex_generator_summary():
    """A T-Rex backend's summary from the client's statistics (tests/unit/fixtures/trex/get_stats_port0.json, a
    fixture of the stateless client's shape), through the backend's own code."""
    with open(os.path.join(os.path.dirname(__file__), "fixtures", "trex", "get_stats_port0.json")) as f:
        stats = json.load(f)
    stats = {int(k) if k.isdigit() else k: v for k, v in stats.items()}
    final = _trex.run_summary(
        stats, [0], [], 10.0, {"pkt_len": 64, "flows": 6, "version": "T-Rex v3.04", "tx_ports": [0], "mult": "100%"}
    )
    return _trex.generator_summary(final, [{"type": "interval"}], ["xdplab-trex-run"], {"queues": 6, "rate_pps": 0})


def test_a_trex_trial_has_no_refused_count_and_the_search_says_why():
    gen = _trex_generator_summary()
    assert gen["backend"] == "trex" and gen["sent"] > 0 and gen["egress"]["refused"] is None
    rec = {
        "status": "ok",
        "trial_id": "t1",
        "point": dict(POINT, touch="no_touch", search=1, step=1, load_pps=1e6, trial_s=1.0, offered_mpps=1.0),
        "generator": gen,
    }
    with pytest.raises(_ndrpdr.SearchInputError, match=r"trial t1 has no generator counts .*backend trex cannot: T-Rex's"):
        _ndrpdr.trial_of(rec)


def test_the_search_refuses_every_backend_without_a_refused_count():
    assert ndr_pdr_backend_problem("xdp_live") == ""
    trex = ndr_pdr_backend_problem("trex")
    assert trex.startswith("an NDR/PDR search needs a generator that counts the frames the DUT refused; backend trex")
    assert "oerrors count its own TX errors" in trex and "(xdp_live)" in trex
    assert "TCP streams" in ndr_pdr_backend_problem("iperf3")
    assert "backend pktgen cannot: its summary has no egress.refused" in ndr_pdr_backend_problem("pktgen")
    assert "backend  cannot" in ndr_pdr_backend_problem("")
    # every backend the collection has is decided: it counts refused frames, or the reason it does not is written
    for name in backend_names():
        assert name in _ndrpdr.REFUSED_COUNTED_BY or name in _ndrpdr.NO_REFUSED_COUNT, name

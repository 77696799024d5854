# SPDX-License-Identifier: GPL-3.0-or-later
"""The one sampler and the one measurement shape (plugins/module_utils/_measurement.py), and their doc fragments."""

import ast
import os

import pytest
import yaml
from ansible_collections.xdplab.testbed.plugins.doc_fragments import attributes, sampling
from ansible_collections.xdplab.testbed.plugins.doc_fragments import measurement as measurement_doc
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEASURING = ("xdp_stats", "netfilter_stats", "ethtool_stats", "testpmd", "xsk_bench")


def test_sampler_warms_up_then_keeps_an_absolute_schedule(fake_clock):
    clock = fake_clock
    clock.now = 100.0
    reads = []

    def read():
        reads.append(clock.now)
        clock.now += 0.3  # a slow read: the schedule must not drift by it
        return len(reads)

    sampler = _measurement.Sampler(warmup=2.0, interval=1.0, samples=3, clock=clock, sleep=clock.sleep)
    snaps = sampler.run(read)
    assert clock.sleeps[0] == 2.0
    assert [t for t, _s in snaps] == [102.0, 103.0, 104.0, 105.0]
    assert [s for _t, s in snaps] == [1, 2, 3, 4]
    assert clock.sleeps[1:] == pytest.approx([0.7, 0.7, 0.7])
    assert sampler.seconds == 5.0


def test_sampler_ends_early_when_end_when_says_so_and_never_before_one_sample(fake_clock):
    fake_clock.now = 10.0
    asked = []

    def over():  # the window is over from 12.5 on; the sampler asks after each snapshot but the first and the last
        asked.append(fake_clock.now)
        return fake_clock.now >= 12.5

    def sampler(samples, end_when):
        return _measurement.Sampler(0, 1.0, samples, clock=fake_clock, sleep=fake_clock.sleep, end_when=end_when)

    snaps = sampler(10, over).run(lambda: fake_clock.now)
    # the window ends at the first sample after 12.5
    assert [t for t, _s in snaps] == [10.0, 11.0, 12.0, 13.0] and asked == [11.0, 12.0, 13.0]
    # one already over at the first sample: one sample, not none
    assert len(sampler(5, lambda: True).run(lambda: 0)) == 2
    # never asked past the last sample: the samples stay the longest the window lasts
    assert len(sampler(2, lambda: False).run(lambda: 0)) == 3


def test_sampler_before_window_runs_after_the_warmup(fake_clock):
    clock = fake_clock
    order = []
    _measurement.Sampler(1.0, 0.5, 1, clock=clock, sleep=clock.sleep).run(
        lambda: order.append(("read", clock.now)), before_window=lambda: order.append(("before", clock.now)))
    assert order == [("before", 1001.0), ("read", 1001.0), ("read", 1001.5)]


def test_sampler_brackets_its_window_with_cpu_snapshots(fake_clock):
    """cpu_window_cpus: one cpu_usage snapshot just after the first read and one just after the last, nothing else."""
    clock = fake_clock
    order = []

    def snapshot(cpus):
        order.append(("cpu", clock.now, tuple(cpus)))
        return {"version": 1, "time": clock.now}

    sampler = _measurement.Sampler.from_params({"warmup": 1.0, "interval": 0.5, "samples": 2, "cpu_window_cpus": [1]},
                                               clock=clock, sleep=clock.sleep, cpu_snapshot=snapshot)  # fmt: skip
    sampler.run(lambda: order.append(("read", clock.now)))
    assert order == [("read", 1001.0), ("cpu", 1001.0, (1,)), ("read", 1001.5), ("read", 1002.0), ("cpu", 1002.0, (1,))]
    assert sampler.cpu_window == {"cpus": [1], "start": {"version": 1, "time": 1001.0},
                                  "end": {"version": 1, "time": 1002.0}}  # fmt: skip
    # without CPUs: no snapshot, no window
    plain = _measurement.Sampler(0, 0.5, 1, clock=clock, sleep=clock.sleep, cpu_snapshot=snapshot)
    plain.run(lambda: None)
    assert plain.cpu_window is None and len(order) == 5


def test_sampler_cpu_window_is_one_cpu_usage_takes_as_since_and_until():
    """The real snapshots (this machine's /proc) in the form cpu_usage checks for since and until."""
    from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat

    sampler = _measurement.Sampler(0, 0.05, 1, cpu_window_cpus=[0])
    sampler.run(lambda: None)
    start, end = _cpustat.check_snapshot(sampler.cpu_window["start"]), _cpustat.check_snapshot(sampler.cpu_window["end"])
    assert end["time"] - start["time"] >= 0.04 and "threads" in sampler.cpu_window["end"]


def test_samplers_given_one_start_open_their_windows_at_the_same_instant(fake_clock):
    """Two hosts' samplers (the far side, the DUT) started at different times with one start_at on CLOCK_REALTIME
    take their first snapshot at start_at + warmup: the later one warms up for less."""
    firsts = []
    for started in (500.0, 502.5):
        clock = fake_clock.__class__(start=started)  # each run has its own CLOCK_REALTIME reading, same epoch
        snaps = _measurement.Sampler(warmup=1.0, interval=1.0, samples=2, clock=clock, sleep=clock.sleep,
                                     start_at=503.0, realtime=clock).run(lambda c=clock: c.now)
        firsts.append([t for t, _s in snaps])
    assert firsts == [[504.0, 505.0, 506.0], [504.0, 505.0, 506.0]]


def test_a_sampler_that_starts_after_the_window_opened_says_so(fake_clock):
    fake_clock.now = 504.5
    sampler = _measurement.Sampler(warmup=1.0, interval=1.0, samples=2, clock=fake_clock, sleep=fake_clock.sleep,
                                   start_at=503.0, realtime=fake_clock)
    with pytest.raises(_measurement.SamplingError, match=r"started 0.500 s after the window's opening.*further ahead"):
        sampler.run(lambda: 0)
    assert fake_clock.sleeps == []


def test_warmup_from_counts_the_warmup_from_the_generators_start(fake_clock):
    """warmup_from (the generator's start): a module that starts 0.4 s after it waits 1.6 s of a 2 s warm-up; one that
    starts after the warm-up has ended opens its window at once (not an error: no other host's window to meet)."""
    fake_clock.now = 100.4
    sampler = _measurement.Sampler(warmup=2.0, interval=1.0, samples=1, clock=fake_clock, sleep=fake_clock.sleep,
                                   warmup_from=100.0, realtime=fake_clock)
    snaps = sampler.run(lambda: fake_clock.now)
    assert [t for t, _s in snaps] == [pytest.approx(102.0), pytest.approx(103.0)]
    assert sampler.warmup_waited == pytest.approx(1.6)
    fake_clock.now = 105.0
    late = _measurement.Sampler(warmup=2.0, interval=1.0, samples=1, clock=fake_clock, sleep=fake_clock.sleep,
                                warmup_from=100.0, realtime=fake_clock)
    assert [t for t, _s in late.run(lambda: 0)] == [pytest.approx(105.0), pytest.approx(106.0)]
    assert late.warmup_waited == 0.0


@pytest.mark.parametrize("kw,word", [({"interval": 0}, "interval"), ({"warmup": -1}, "warmup"), ({"samples": 0}, "samples"),
                                     ({"start_at": float("nan")}, "start_at"), ({"warmup_from": -5.0}, "warmup_from")])
def test_sampler_names_the_bad_option(kw, word):
    with pytest.raises(_measurement.SamplingError, match=word):
        _measurement.Sampler(**kw)


def test_measurement_shape_from_counts(check_measurement):
    snaps = [(10.0, 0), (11.0, 1000), (12.0, 3000)]
    samples = _measurement.samples_from_counts(snaps, lambda n: n)
    m = _measurement.measurement(1500.0, _measurement.window_of(10.0, 12.0), {"kind": "program_map", "at": "dut"},
                                 packets=3000, per_rxq=[{"queue": 0, "pps": 500.0}, {"queue": 1, "pps": 1000.0}],
                                 samples=samples)
    check_measurement(m, "program_map", samples=2)
    assert [s["pps"] for s in m["samples"]] == [1000.0, 2000.0]
    assert m["queue_spread"] == pytest.approx(1000 / 750)
    assert m["spread"]["min_pps"] == 1000.0 and m["spread"]["max_pps"] == 2000.0


def test_measurement_refuses_a_source_without_kind_or_at():
    with pytest.raises(ValueError, match="at: dut or generator_rx"):
        _measurement.measurement(1.0, _measurement.window_of(0, 1), {"kind": "x"})


# ---------------------------------------------------------------------------------------------- doc fragments


def docs_of(module):
    with open(os.path.join(ROOT, "plugins", "modules", module + ".py")) as f:
        tree = ast.parse(f.read())
    return {n.targets[0].id: n.value.value for n in tree.body
            if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") in ("DOCUMENTATION", "RETURN")}


def test_the_measurement_fragment_documents_every_key_of_the_shape():
    notes = " ".join(yaml.safe_load(measurement_doc.ModuleDocFragment.DOCUMENTATION)["notes"])
    for key in _measurement.MEASUREMENT_KEYS:
        assert f"C({key})" in notes, key
    for key in ("kind", "at", "count_mode", "CLOCK_MONOTONIC"):
        assert key in notes


def test_the_sampling_fragment_matches_the_argument_spec():
    options = yaml.safe_load(sampling.ModuleDocFragment.DOCUMENTATION)["options"]
    assert set(options) == set(_measurement.SAMPLING_ARGUMENT_SPEC)
    for name, spec in _measurement.SAMPLING_ARGUMENT_SPEC.items():
        assert options[name]["type"] == spec["type"] and options[name].get("default") == spec.get("default")


def test_attribute_fragments_describe_both_attributes():
    for text in (attributes.ModuleDocFragment.DOCUMENTATION, attributes.ModuleDocFragment.READ_ONLY):
        attrs = yaml.safe_load(text)["attributes"]
        assert set(attrs) == {"check_mode", "diff_mode"} and all(a["description"] for a in attrs.values())


@pytest.mark.parametrize("module", MEASURING)
def test_every_measuring_module_uses_the_fragments_and_returns_measurement(module):
    docs = docs_of(module)
    doc, ret = yaml.safe_load(docs["DOCUMENTATION"]), yaml.safe_load(docs["RETURN"])
    fragments = doc["extends_documentation_fragment"]
    assert "xdplab.testbed.sampling" in fragments and "xdplab.testbed.measurement" in fragments
    assert any(f.startswith("xdplab.testbed.attributes") for f in fragments)
    # the sampling options come from the fragment; a module only restates a different default
    for name in _measurement.SAMPLING_ARGUMENT_SPEC:
        assert set(doc["options"].get(name, {})) <= {"default"}, (module, name)
    assert ret["measurement"]["type"] == "dict" and "xdplab.testbed.measurement" in str(ret["measurement"]["description"])

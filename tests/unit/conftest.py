# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit-test fixtures: the one check of the ``measurement`` shape (plugins/module_utils/_measurement.py), used on
every measuring module's output, and a fake monotonic clock for the Sampler (fixtures, because the tests run with
``--import-mode=importlib`` and cannot import each other)."""

import math

import pytest

# The collection is imported lazily, inside the helpers: test_connection_netns.py installs Ansible's collection
# loader (init_plugin_loader) when it is collected, and a package of the collection imported before that (at
# conftest import) makes every later import fail with "collection metadata was not loaded".


@pytest.fixture(autouse=True)
def _no_live_housekeeping(tmp_path, monkeypatch):
    """Modules run here (in-process or by ansible-playbook) pin themselves to the housekeeping CPUs of the host's
    state file: while a lab run is up, /run/xdplab/housekeeping.json pinned the test process to that CPU and
    later tests saw one CPU. Every unit test reads a state file of its own instead (none unless it writes one)."""
    monkeypatch.setenv("XDPLAB_HOUSEKEEPING_STATE", str(tmp_path / "no-housekeeping.json"))
    monkeypatch.delenv("XDPLAB_HOUSEKEEPING_CPUS", raising=False)


class FakeClock:
    """A monotonic clock that only moves when the code under test sleeps (plus ``step`` per reading)."""

    def __init__(self, start=1000.0, step=0.0):
        self.now, self.step, self.sleeps = float(start), float(step), []

    def __call__(self):
        self.now += self.step
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def assert_measurement(m, kind, at="dut", samples=None):
    """``m`` has exactly the keys of the shape, with the types the doc fragment promises; returns it."""
    from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement

    assert set(m) == set(_measurement.MEASUREMENT_KEYS), sorted(set(m) ^ set(_measurement.MEASUREMENT_KEYS))
    assert isinstance(m["pps"], float) and m["pps"] >= 0 and not math.isnan(m["pps"])
    assert m["packets"] is None or isinstance(m["packets"], int)
    if m["pps"] > 0:
        assert m["ns_per_packet"] == 1e9 / m["pps"]
    else:
        assert m["ns_per_packet"] is None
    assert m["source"]["kind"] == kind and m["source"]["at"] == at
    w = m["window"]
    assert w["clock"] == "CLOCK_MONOTONIC" and w["end"] >= w["start"]
    assert abs(w["seconds"] - (w["end"] - w["start"])) < 1e-5
    for entry in m["per_cpu"]:
        assert isinstance(entry["cpu"], int) and entry["pps"] >= 0
    for entry in m["per_rxq"]:
        assert isinstance(entry["queue"], int) and (entry["pps"] is None or entry["pps"] >= 0)
    for s in m["samples"]:
        assert {"t", "seconds", "packets", "pps"} <= set(s), s
        assert s["seconds"] > 0
    if samples is not None:
        assert len(m["samples"]) == samples
    if m["samples"]:
        # the samples tile the window
        assert abs(sum(s["seconds"] for s in m["samples"]) - w["seconds"]) < 1e-4
        assert abs(m["samples"][-1]["t"] - w["seconds"]) < 1e-4
        assert m["spread"]["min_pps"] <= m["spread"]["max_pps"]
    assert set(m["spread"]) == {"min_pps", "max_pps", "stdev_pps", "cv"}
    assert isinstance(m["details"], dict)
    if m["packets"] is not None and w["seconds"] > 0:
        assert abs(m["pps"] - m["packets"] / w["seconds"]) <= 1e-4 * max(1.0, m["pps"])  # seconds: rounded to 1 us
    return m


@pytest.fixture
def check_measurement():
    """``check_measurement(m, kind, at="dut", samples=None)`` asserts the shape of one measurement."""
    return assert_measurement


@pytest.fixture
def fake_clock():
    """A FakeClock at t=1000; pass ``clock=fake_clock, sleep=fake_clock.sleep`` to a Sampler."""
    return FakeClock()

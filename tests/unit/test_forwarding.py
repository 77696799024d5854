# SPDX-License-Identifier: GPL-3.0-or-later
"""The forwarding accounting (plugins/module_utils/_forwarding.py) on the counters of a real XDP_REDIRECT run.

The numbers are the deltas `ethtool -S` and `ip -s link` showed on the virtual lab (kernel 6.1, 2 CPUs) over a
3-second overloaded run of xdp_fwd_redirect_map veth-dut0 -> devmap -> veth-dut1, bpf/xdp_bare_drop on veth-tg1:
the generator offered 3798976 frames, veth-dut0's ring took 684512 (tx_queue_0_xdp_xmit_errors on veth-tg0 counted
the 3114464 refused), the DUT redirected them all, veth-tg1's ring took 184592 (veth-dut1 tx_queue_0_xdp_xmit_errors
the 499920 refused) and the drop program counted exactly those.
"""

import copy
import json
import os
import subprocess

import jsonschema
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _forwarding as fw
from ansible_collections.xdplab.testbed.plugins.module_utils import _record

with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "trial_record.schema.json")) as _f:
    SCHEMA = json.load(_f)

SENT, TAKEN, BACK, REFUSED_BACK = 3798976, 684512, 184592, 499920


def snap(t, devices):
    return {"t": t, "devices": {d: {"driver": "veth", "stats": s} for d, s in devices.items()}}


def far_snaps():
    zero = {"rx_queue_0_xdp_packets": 0, "rx_queue_0_xdp_drops": 0, "if_rx_packets": 11, "tx_queue_0_xdp_xmit": 0,
            "tx_queue_0_xdp_xmit_errors": 0}
    before = snap(10.0, {"veth-tg1": dict(zero), "veth-tg0": dict(zero)})
    after = snap(13.0, {
        "veth-tg1": dict(zero, rx_queue_0_xdp_packets=BACK, rx_queue_0_xdp_drops=BACK, if_rx_packets=11 + BACK),
        "veth-tg0": dict(zero, tx_queue_0_xdp_xmit=TAKEN, tx_queue_0_xdp_xmit_errors=SENT - TAKEN)})
    return before, after


def dut_deltas():
    return {
        "veth-dut0": {"if_rx_packets": TAKEN, "rx_queue_0_xdp_packets": TAKEN, "rx_queue_0_xdp_redirect": TAKEN,
                      "rx_queue_0_drops": 0, "if_tx_packets": 0, "if_tx_dropped": 0},
        "veth-dut1": {"if_tx_packets": BACK, "if_tx_dropped": REFUSED_BACK, "tx_queue_0_xdp_xmit": BACK,
                      "tx_queue_0_xdp_xmit_errors": REFUSED_BACK},
    }


def test_counted_at_the_generator_receive_port():
    before, after = far_snaps()
    far = fw.counted({"devices": {"veth-tg1": before["devices"]["veth-tg1"]}},
                     {"devices": {"veth-tg1": after["devices"]["veth-tg1"]}})
    assert far["packets"] == BACK and far["counter"] == "rx_queue_{queue}_xdp_drops"
    assert far["own_packets"] == BACK and far["agreement_pct"] == 0.0
    assert far["per_rxq"] == [{"device": "veth-tg1", "queue": 0, "packets": BACK}]


def test_no_drop_program_shows_as_disagreement():
    before, after = far_snaps()
    after["devices"]["veth-tg1"]["stats"]["rx_queue_0_xdp_drops"] = 0
    far = fw.counted({"devices": {"veth-tg1": before["devices"]["veth-tg1"]}},
                     {"devices": {"veth-tg1": after["devices"]["veth-tg1"]}})
    assert far["packets"] == 0 and far["agreement_pct"] == -100.0


def test_where_the_rest_was_lost():
    before, after = far_snaps()
    far = fw.counted({"devices": {"veth-tg1": before["devices"]["veth-tg1"]}},
                     {"devices": {"veth-tg1": after["devices"]["veth-tg1"]}})
    dut = fw.dut_counts(dut_deltas(), "veth-dut0")
    assert dut == {"received": TAKEN, "sent": BACK, "refused_by_peer": REFUSED_BACK, "per_port": dut["per_port"]}
    sec = fw.forwarding_section(far, dut, 3.0, return_port="egress", receive_ports=["veth-tg1"],
                                gen_tx_interface="veth-tg0", gen_deltas=fw.device_deltas(before, after),
                                window={"start": 10.0, "end": 13.0, "seconds": 3.0})
    assert sec["received_pps"] == pytest.approx(BACK / 3)
    assert sec["sent_pps"] == pytest.approx(SENT / 3) and "offered_pps" not in sec
    lost = sec["lost"]
    assert lost["refused_at_dut_ring_pps"] == pytest.approx((SENT - TAKEN) / 3)
    assert lost["dropped_in_dut_pps"] == 0
    assert lost["lost_on_way_back_pps"] == pytest.approx(REFUSED_BACK / 3)
    # every frame the sending port put out is in exactly one place
    total = sec["received_pps"] + lost["refused_at_dut_ring_pps"] + lost["dropped_in_dut_pps"] + lost["lost_on_way_back_pps"]
    assert total == pytest.approx(sec["sent_pps"])


def test_xdp_tx_sent_back_is_counted_once():
    """The DUT's counters of a real XDP_TX trial (kernel 6.18.44, make paper-forward at 2026-12-02 00:59 UTC, 5 s):
    veth-dut0's own tx_packets / tx_dropped already hold XDP_TX's frames and errors (128 and 1,472 apart: the two
    reads are not the same instant); summing them accounted for 195 % of what the generator offered."""
    deltas = {"veth-dut0": {"if_rx_dropped": 427552, "if_rx_packets": 8428960, "if_tx_dropped": 4035392,
                            "if_tx_packets": 4393568, "rx_queue_0_xdp_packets": 8430560, "rx_queue_0_xdp_tx": 4393696,
                            "rx_queue_0_xdp_tx_errors": 4036864},
              "veth-dut1": {}}
    dut = fw.dut_counts(deltas, "veth-dut0")
    assert dut["sent"] == 4393696 and dut["refused_by_peer"] == 4036864
    # nothing dropped in the DUT: all it received went back or was refused by the generator's ring
    assert dut["received"] - dut["sent"] - dut["refused_by_peer"] == pytest.approx(0, abs=0.001 * dut["received"])


def test_xdp_tx_counts_its_own_send_back():
    deltas = {"veth-dut0": {"if_rx_packets": 1000, "rx_queue_0_xdp_tx": 900, "rx_queue_0_xdp_tx_errors": 60,
                            "if_tx_packets": 0}}
    assert fw.dut_counts(deltas, "veth-dut0")["sent"] == 900
    assert fw.dut_counts(deltas, "veth-dut0")["refused_by_peer"] == 60


def test_the_record_lifts_the_section_from_the_measurement():
    before, after = far_snaps()
    far = fw.counted({"devices": {"veth-tg1": before["devices"]["veth-tg1"]}},
                     {"devices": {"veth-tg1": after["devices"]["veth-tg1"]}})
    window = {"start": 10.0, "end": 13.0, "seconds": 3.0, "clock": "CLOCK_MONOTONIC"}
    sec = fw.forwarding_section(far, fw.dut_counts(dut_deltas(), "veth-dut0"), 3.0, return_port="egress",
                                receive_ports=["veth-tg1"], gen_tx_interface="veth-tg0",
                                gen_deltas=fw.device_deltas(before, after), window=window)
    meas = {"pps": BACK / 3, "packets": BACK, "window": window, "details": {"forwarding": sec},
            "source": {"kind": "driver_counters", "at": "generator_rx"}}
    rec = _record.build_record("paper_forward", {"trial_id": "t1", "point": {"system": "xdp_redirect", "cores": 1},
                                                 "repetition": 1}, "ok", started_at="2026-12-01T13:00:00Z",
                               measurement=meas, generator={"offered_pps": SENT / 3, "sent": SENT, "elapsed_s": 3.0})
    assert rec["forwarding"]["received_packets"] == BACK and "forwarding" not in rec["result"]["details"]
    assert rec["provenance"]["measurement"]["at"] == "generator_rx"
    # one offered rate per trial: the loss verdict's, with its basis; the section's count is what the port sent
    assert rec["loss"]["offered_pps"] == pytest.approx(SENT / 3) and rec["loss"]["offered_basis"] == "run"
    assert "offered_pps" not in rec["forwarding"] and rec["forwarding"]["sent_pps"] == pytest.approx(SENT / 3)
    validator = jsonschema.Draft202012Validator(SCHEMA["properties"]["forwarding"])  # the section's part of the schema
    assert list(validator.iter_errors(json.loads(json.dumps(rec["forwarding"])))) == []
    # a record written before issue 29 (schema 1, its section's count named offered_pps) reads with sent_pps
    older = copy.deepcopy(rec)
    older["forwarding"]["offered_pps"] = older["forwarding"].pop("sent_pps")
    assert list(validator.iter_errors(json.loads(json.dumps(older["forwarding"])))) == []
    read = _record.normalize(older)
    assert read["forwarding"]["sent_pps"] == pytest.approx(SENT / 3) and "offered_pps" not in read["forwarding"]
    assert "sent_pps" not in older["forwarding"]  # normalize copies
    assert _record.normalize(rec) == rec


def test_devmap_entries_resolve_interfaces_of_this_host_only():
    from ansible_collections.xdplab.testbed.plugins.modules import xdp_program

    assert xdp_program.resolve_map_entries({"tx_ports": {"0": "lo", 1: 7}}) == {"tx_ports": {0: 1, 1: 7}}
    with pytest.raises(ValueError, match="veth-not-here does not exist in this network namespace"):
        xdp_program.resolve_map_entries({"tx_ports": {0: "veth-not-here"}})
    # a key may be an interface name too (bpf/xdp_router's devmap keyed by the egress ifindex, issue 27)
    assert xdp_program.resolve_map_entries({"tx_ports": {"lo": "lo"}}) == {"tx_ports": {1: 1}}
    with pytest.raises(ValueError, match="key 'a' is neither an integer nor an interface name here: interface a does not"):
        xdp_program.resolve_map_entries({"tx_ports": {"a": 1}})


def test_the_dut_window_offset_is_its_opening_after_the_far_sides():
    """Both windows opened from one start_at: the section says how far apart, on CLOCK_REALTIME; without a realtime
    start (bracketing reads, T-Rex's runner) it does not guess."""
    before, after = far_snaps()
    far = fw.counted({"devices": {"veth-tg1": before["devices"]["veth-tg1"]}},
                     {"devices": {"veth-tg1": after["devices"]["veth-tg1"]}})
    dut = fw.dut_counts(dut_deltas(), "veth-dut0")
    kw = {"return_port": "egress", "receive_ports": ["veth-tg1"], "gen_tx_interface": "veth-tg0",
          "gen_deltas": fw.device_deltas(before, after)}
    sec = fw.forwarding_section(far, dut, 3.0, window={"start": 10.0, "realtime_start": 1700000000.25},
                                dut_window={"start": 7.0, "realtime_start": 1700000000.2512}, dut_seconds=3.0, **kw)
    assert sec["dut_window_offset_s"] == pytest.approx(0.0012)
    sec = fw.forwarding_section(far, dut, 3.0, window={"start": 10.0}, dut_window={"start": 7.0}, **kw)
    assert sec["dut_window_offset_s"] is None


def test_rx_counters_on_two_hosts_share_one_window(tmp_path):
    """rx_counters with start_at opens its window at start_at + warmup on CLOCK_REALTIME and says when; it refuses
    start_at with a bracketing read, which has no schedule."""
    from ansible_collections.xdplab.testbed.plugins.modules import rx_counters

    stats = tmp_path / "veth-dut0" / "statistics"
    stats.mkdir(parents=True)
    for name in fw.IF_STATS:
        (stats / name).write_text("0\n")

    class Clock:
        now = 2000.0

        def __call__(self):
            return self.now

        def sleep(self, seconds):
            self.now += seconds
            (stats / "rx_packets").write_text("%d\n" % int((self.now - 2000.0) * 1000))

    class Module:
        def __init__(self, **params):
            self.params = {k: v.get("default") for k, v in rx_counters.argument_spec().items()}
            self.params.update(devices=["veth-dut0"], count="if_rx_packets", at="dut", **params)

        def run_command(self, argv, **kwargs):
            return 0, "driver: veth\n", ""

        def fail_json(self, msg, **kwargs):
            raise AssertionError(msg)

    clock = Clock()
    counters = rx_counters.RxCounters(Module(start_at=2002.0, warmup=1.0, interval=0.5, samples=2), clock=clock,
                                      wait=clock.sleep, sysfs=str(tmp_path), realtime=clock)
    counters.readers["veth-dut0"] = type("Reader", (), {"read": lambda self: {}})()
    got = counters.run()["measurement"]
    assert got["window"]["realtime_start"] == 2003.0 and got["window"]["start"] == 2003.0
    assert got["window"]["seconds"] == 1.0 and got["packets"] == 1000
    with pytest.raises(AssertionError, match="start_at schedules a sampled window"):
        rx_counters.RxCounters(Module(start_at=2002.0, snapshot_only=True), clock=clock, wait=clock.sleep,
                               sysfs=str(tmp_path), realtime=clock).run()


def test_rx_counters_reads_the_interface_counters_around_ethtool(tmp_path):
    """The interface's own rx_packets is read just before and just after `ethtool -S` and taken at the midpoint, so
    a slow ethtool process (under load) does not show up as a disagreement between the two counts."""
    from ansible_collections.xdplab.testbed.plugins.modules import rx_counters

    stats = tmp_path / "veth-tg1" / "statistics"
    stats.mkdir(parents=True)
    for name in fw.IF_STATS:
        (stats / name).write_text("0\n")
    live = {"rx": 1000}

    class Module:
        def __init__(self):
            self.params = {k: v.get("default") for k, v in rx_counters.argument_spec().items()}
            self.params.update(devices=["veth-tg1"], ethtool="ethtool")

        def run_command(self, argv, **kwargs):
            if argv[1] == "-i":
                return 0, "driver: veth\n", ""
            # ethtool -S takes long enough for 600 more frames to arrive; it reads its counter halfway
            (stats / "rx_packets").write_text("%d\n" % (live["rx"] + 600))
            return 0, "NIC statistics:\n     rx_queue_0_xdp_drops: %d\n" % (live["rx"] + 300), ""

        def fail_json(self, msg, **kwargs):
            raise AssertionError(msg)

    (stats / "rx_packets").write_text("%d\n" % live["rx"])
    counters = rx_counters.RxCounters(Module(), sysfs=str(tmp_path))
    counters.readers["veth-tg1"] = None  # as where the kernel refuses the ioctl: the ethtool process
    got = counters.read_device("veth-tg1")
    assert got["driver"] == "veth" and got["read"] == "ethtool"
    assert got["stats"]["rx_queue_0_xdp_drops"] == 1300 and got["stats"]["if_rx_packets"] == 1300
    assert got["own_spread"]["if_rx_packets"] == 600

    # in-process (the ioctl): the driver read sits between the two sysfs reads as well, and the spread says how far
    # the own counter moved meanwhile
    class Reader:
        def read(self):
            (stats / "rx_packets").write_text("%d\n" % (live["rx"] + 2))
            return {"rx_queue_0_xdp_drops": live["rx"] + 1}

    (stats / "rx_packets").write_text("%d\n" % live["rx"])
    counters.readers["veth-tg1"] = Reader()
    got = counters.read_device("veth-tg1")
    assert got["read"] == "ioctl" and got["own_spread"]["if_rx_packets"] == 2
    assert got["stats"]["rx_queue_0_xdp_drops"] == got["stats"]["if_rx_packets"] == 1001


def test_driver_statistics_in_process_are_ethtool_s():
    """_ethtool_ioctl reads what `ethtool -S` prints (same names, same order, values that only grow between the
    two reads), on the first interface of this machine that has driver statistics."""
    import shutil

    from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool, _ethtool_ioctl

    ethtool = shutil.which("ethtool") or "/usr/sbin/ethtool"
    if not os.access(ethtool, os.X_OK):
        pytest.skip("needs ethtool")
    for dev in sorted(os.listdir("/sys/class/net")):
        proc = subprocess.run([ethtool, "-S", dev], capture_output=True, text=True, check=False)
        if proc.returncode == 0 and _ethtool.parse_stats(proc.stdout):
            break
    else:
        pytest.skip("no interface here has driver statistics")
    reader = _ethtool_ioctl.DriverStats(dev)
    try:
        before = reader.read()
        text = subprocess.run([ethtool, "-S", dev], capture_output=True, text=True, check=True).stdout
        after = reader.read()
    finally:
        reader.close()
    printed = _ethtool.parse_stats(text)
    assert list(before) == list(printed) == list(after), dev
    # counters only grow; a few (peer_ifindex, ring sizes) are not counters but stay put
    assert all(before[k] <= printed[k] <= after[k] or before[k] == after[k] for k in printed), dev
    with pytest.raises(OSError, match="No such device"):
        _ethtool_ioctl.DriverStats("xdplab-none0")

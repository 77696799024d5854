# SPDX-License-Identifier: GPL-3.0-or-later
"""T-Rex's per-port RX counters as the far side of a forwarding trial (issue 9, hardware), through the real client.

No T-Rex server can run here, so the chain is driven from a FIXTURE of real T-Rex output:
fixtures/trex/get_stats_forwarding.json is ``STLClient.get_stats()`` of a real 10-second two-port run at 100 %
through a DUT (ports 0 and 1 both send and receive), pasted verbatim by its author as a comment in a public test
script (see fixtures/trex/README.md).

1. The real client (PyPI lbr-trex-client, trex-core v3.04's client) turns the server's replies into that output:
   fixtures/trex/real_client_stats_probe.py runs STLClient's own stats code in a child interpreter with its RPC
   transport replaced by one that answers get_port_stats / get_global_stats. The replies are the fixture mapped
   back into the server's format (counters as they are; the four m_total_* rates are what PortStats.to_dict copies
   into tx/rx_bps/pps). The client recomputes the L1 rates, the utilisations and the total from them, and they
   equal the pasted output: so the fixture has the real client's shape, and so do the records built from it.
2. The runner's interval records (_trex.interval_record on the client's outputs, as xdplab-trex-run prints them)
   are read by the module rx_counters with source trex: the far-side count is port 1's ipackets over the window
   between two records (their mono times), in the measurement shape with source.at generator_rx.
3. The record's forwarding section (_forwarding.forwarding_section, as the filter builds it) from that far side
   and a DUT's counters: received, offered (T-Rex port 0's opackets), loss split, the T-Rex-unknowable part null.
"""

import copy
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _forwarding as fw
from ansible_collections.xdplab.testbed.plugins.module_utils import _trex as trex
from ansible_collections.xdplab.testbed.plugins.modules import rx_counters

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "trex")
PROBE = os.path.join(FIXTURES, "real_client_stats_probe.py")
SPEC = importlib.util.find_spec("lbr_trex_client")  # found, not imported: trex/__init__ swaps yaml/scapy modules

COUNTERS = ("opackets", "ipackets", "obytes", "ibytes", "oerrors", "ierrors")
# the runner's run: port 0 sends, the frames come back on port 1 (PCI addresses in trex_cfg.yaml order)
TREX_PORTS = ["0000:03:00.0", "0000:03:00.1"]
TX, RX = 0, 1
# the fixture's run: counters cleared, then 10 s of traffic (duration=10 in the script that printed it)
MONO0, SECONDS = 5000.0, 10.0
LINK_GBPS = 10  # tx_util 99.9 % at 9.99 Gb/s L1: a 10G port


def fixture():
    with open(os.path.join(FIXTURES, "get_stats_forwarding.json")) as fh:
        return json.load(fh)


def server_reply(port_stats):
    """get_port_stats' reply (trex-core CGlobalStats::port_stats_to_json) for one port of a get_stats output."""
    reply = {k: port_stats[k] for k in COUNTERS}
    reply.update(m_total_tx_bps=port_stats["tx_bps"], m_total_tx_pps=port_stats["tx_pps"],
                 m_total_rx_bps=port_stats["rx_bps"], m_total_rx_pps=port_stats["rx_pps"], m_cpu_util=0.0)
    return reply


@pytest.fixture(scope="module")
def client_stats():
    """[get_stats after clear_stats, get_stats at the end of the run] as the real client builds them."""
    if SPEC is None:
        pytest.skip("lbr-trex-client is missing: pip install -r requirements-test.txt")
    got = fixture()
    end = {"ports": {p: server_reply(got[p]) for p in ("0", "1")}, "global": {"m_" + k: v for k, v in got["global"].items()}}
    cleared = {"ports": {p: {k: 0 for k in end["ports"][p]} for p in ("0", "1")}, "global": {k: 0 for k in end["global"]}}
    request = {"system_ports": [{"index": 0}, {"index": 1}], "speed_gbps": LINK_GBPS, "ports": [0, 1],
               "samples": [cleared, end]}
    proc = subprocess.run([sys.executable, PROBE], input=json.dumps(request), capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout)
    assert answer["client"] == os.path.dirname(SPEC.origin)  # the installed client ran, not a copy
    assert answer["methods"] == ["get_global_stats", "get_port_stats"]
    return answer["stats"]


def test_the_real_client_makes_the_fixture_from_the_servers_replies(client_stats):
    got, built = fixture(), client_stats[1]
    for port in ("0", "1", "total"):
        assert set(built[port]) == set(trex.PORT_KEYS)
        assert built[port] == pytest.approx(got[port], rel=1e-12), port
    # the global keys the fixture's (older) client printed; queue_full is m_total_queue_full on the server
    for key in set(got["global"]) - {"queue_full"}:
        assert built["global"][key] == pytest.approx(got["global"][key]), key
    # cleared: every counter 0, as after the runner's clear_stats
    assert all(client_stats[0][p][k] == 0 for p in ("0", "1") for k in COUNTERS)


class FakeModule:
    def __init__(self, params, check_mode=False):
        spec = rx_counters.argument_spec()
        self.params = {k: v.get("default") for k, v in spec.items()}
        self.params.update(params)
        self.check_mode = check_mode

    def fail_json(self, msg, **kwargs):
        raise AssertionError(msg)

    def run_command(self, *args, **kwargs):  # source trex runs no command
        raise AssertionError("source trex must not run ethtool")


def runner_records(client_stats):
    """The runner's interval records over the two samples (xdplab-trex-run: interval_record(previous, current))."""
    first = trex.interval_record(None, client_stats[0], [TX], [RX], MONO0, 0.0, 0.0)
    second = trex.interval_record(client_stats[0], client_stats[1], [TX], [RX], MONO0 + SECONDS, SECONDS, SECONDS)
    return json.loads(json.dumps(first)), json.loads(json.dumps(second))  # through JSON, as the file holds them


def run(params, clock=None):
    now = [MONO0 + 100.0]

    def tick():
        return now[0]

    def wait(seconds):
        now[0] += seconds

    mod = FakeModule(params)
    return rx_counters.RxCounters(mod, clock=clock or tick, wait=wait).run()


def far_args(out):
    return {"source": "trex", "devices": [TREX_PORTS[RX]], "extra_devices": [TREX_PORTS[TX]],
            "trex_ports": TREX_PORTS, "trex_output": str(out), "trex_wait": 1.0}


def test_the_far_side_is_port_1s_ipackets_over_the_window(tmp_path, client_stats):
    first, second = runner_records(client_stats)
    out = tmp_path / "t1.out"
    out.write_text(json.dumps({"type": "start", "version": "v3.04"}) + "\n" + json.dumps(first) + "\n")
    before = run(dict(far_args(out), snapshot_only=True))["snapshot"]
    assert before["t"] == MONO0 and before["devices"][TREX_PORTS[RX]]["port"] == RX
    with open(out, "a") as fh:
        fh.write(json.dumps(second) + "\n" + '{"type": "interval", "cut')  # a last line cut by a kill is no record
    far = run(dict(far_args(out), since=before))

    got = fixture()
    m = far["measurement"]
    assert m["source"] == {"kind": "trex_port_counters", "at": "generator_rx", "counter": "ipackets",
                           "devices": [TREX_PORTS[RX]], "ports": [RX]}
    assert m["packets"] == got["1"]["ipackets"] == far["counted"]["packets"]
    assert m["window"]["seconds"] == pytest.approx(SECONDS)
    assert m["pps"] == pytest.approx(got["1"]["ipackets"] / SECONDS)
    assert m["details"]["per_port"] == {TREX_PORTS[RX]: {"port": RX, "packets": got["1"]["ipackets"],
                                                         "pps": pytest.approx(got["1"]["ipackets"] / SECONDS)}}
    # no second counter on a T-Rex port: the agreement is unknown, not 0
    assert far["agreement"] is None and m["details"]["agreement_pct"] is None
    assert far["deltas"][TREX_PORTS[TX]]["opackets"] == got["0"]["opackets"]


def test_the_forwarding_section_from_trex_and_the_dut(tmp_path, client_stats):
    first, second = runner_records(client_stats)
    out = tmp_path / "t1.out"
    out.write_text(json.dumps(first) + "\n")
    before = run(dict(far_args(out), snapshot_only=True))["snapshot"]
    out.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    far = run(dict(far_args(out), since=before))
    got = fixture()
    sent, back = got["0"]["opackets"], got["1"]["ipackets"]
    # the DUT's own counters over its window (mlx5 ports by their interface statistics): it took every frame, the
    # egress port sent 0.5 % fewer than it received and T-Rex counted what the egress port sent
    dut_sent = back
    dut = fw.dut_counts({"mlx5p1": {"if_rx_packets": sent, "if_tx_packets": 0, "if_tx_dropped": 0},
                         "mlx5p2": {"if_tx_packets": dut_sent, "if_tx_dropped": 0}}, "mlx5p1")
    m = far["measurement"]
    section = fw.forwarding_section(far["counted"], dut, m["window"]["seconds"], return_port="egress",
                                    receive_ports=m["source"]["devices"], gen_tx_interface=TREX_PORTS[TX],
                                    gen_deltas=far["deltas"], window=m["window"], dut_window=m["window"],
                                    dut_seconds=SECONDS)
    assert section["received_pps"] == pytest.approx(back / SECONDS)
    assert section["sent_pps"] == pytest.approx(sent / SECONDS)
    assert section["receive_ports"] == [TREX_PORTS[RX]] and section["counter"] == "ipackets"
    # a T-Rex port has no counter of frames the DUT's ring refused: unknown (the DUT's NIC counters say it)
    assert section["lost"]["refused_at_dut_ring_pps"] is None
    assert section["lost"]["dropped_in_dut_pps"] == pytest.approx((sent - dut_sent) / SECONDS)
    assert section["lost"]["lost_on_way_back_pps"] == pytest.approx(0.0)


def test_without_rx_ports_the_runner_has_no_receive_port_to_count(tmp_path, client_stats):
    record = trex.interval_record(None, client_stats[1], [TX], [], MONO0, 0.0, 0.0)  # rx_ports not given
    out = tmp_path / "t1.out"
    out.write_text(json.dumps(record) + "\n")
    with pytest.raises(AssertionError, match=r"has no T-Rex port 1.*backend_options\.rx_ports"):
        run(dict(far_args(out), snapshot_only=True))


def test_a_device_that_names_no_trex_port_and_a_silent_runner(tmp_path):
    out = tmp_path / "t1.out"
    with pytest.raises(AssertionError, match="'mlx5p2' names no T-Rex port"):
        run(dict(far_args(out), devices=["mlx5p2"], snapshot_only=True))
    with pytest.raises(AssertionError, match="give trex_output"):
        run(dict(far_args(out), trex_output=None, snapshot_only=True))
    out.write_text(json.dumps({"type": "error", "message": "no server"}) + "\n")
    with pytest.raises(AssertionError, match=r"no new interval record of xdplab-trex-run .* within 1 s"):
        run(dict(far_args(out), snapshot_only=True))


def test_a_since_snapshot_must_be_older_than_the_newest_record(tmp_path, client_stats):
    first, _second = runner_records(client_stats)
    out = tmp_path / "t1.out"
    out.write_text(json.dumps(first) + "\n")
    before = run(dict(far_args(out), snapshot_only=True))["snapshot"]
    # no newer record than the snapshot: waiting for one, then a clear error (no zero-length window)
    with pytest.raises(AssertionError, match="no new interval record"):
        run(dict(far_args(out), since=copy.deepcopy(before)))


FAKE = os.path.join(FIXTURES, "fake_trex", "automation", "trex_control_plane", "interactive")
SYSTEM_PYTHON = "/usr/bin/python3"  # the test double imports Debian's scapy (python3-scapy)
# the global keys the runner reads (_trex.run_summary: drops.queue_full and the summary's global section)
RUNNER_GLOBAL_KEYS = {"queue_full", "cpu_util", "rx_cpu_util", "bw_per_core", "tx_pps", "rx_pps", "rx_drop_bps"}


def test_the_test_doubles_get_stats_has_the_real_clients_shape(client_stats):
    # issue 13 item 10: the double answered only the ports asked for and summed only those into total
    code = ("import json, sys; sys.path.insert(0, %r)\nfrom trex.stl.api import STLClient\nc = STLClient(); c.connect()\n"
            "c.clear_stats(ports=[0]); print(json.dumps(c.get_stats(ports=[0])))") % FAKE  # fmt: skip
    proc = subprocess.run([SYSTEM_PYTHON, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode and "No module named 'scapy'" in proc.stderr:
        pytest.skip("needs /usr/bin/python3 with scapy (apt install python3-scapy)")
    assert proc.returncode == 0, proc.stderr
    fake, real = json.loads(proc.stdout), client_stats[1]
    # every port of the server whatever `ports` asks for, and total over them all, with the real key sets
    assert set(fake) == set(real) == {"0", "1", "total", "global"}
    for key in ("0", "1", "total"):
        assert set(fake[key]) == set(real[key]) == set(trex.PORT_KEYS)
    assert all(fake["total"][k] == fake["0"][k] + fake["1"][k] for k in trex.PORT_KEYS)
    assert set(fake["global"]) >= RUNNER_GLOBAL_KEYS and set(real["global"]) >= RUNNER_GLOBAL_KEYS

"""xdplab-trex-run and the profiles, run for real against a test double of the T-Rex client.

No T-Rex server can run here, so tests/unit/fixtures/trex/fake_trex stands in for trex.stl.api (a fake
STLClient whose counters grow at the multiplier's rate). What runs for real: the runner script (argument
handling, warm-up, interval sampling, SIGINT, the summary), the statistics code it imports from
plugins/module_utils/_trex.py, the profiles building frames with the real scapy, and the generator backend
`trex` spawning and stopping the runner through ProcessRun. Needs /usr/bin/python3 with scapy (Debian
python3-scapy); T-Rex bundles its own scapy.
"""

import json
import os
import shutil
import signal
import subprocess
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _trex as trex
from ansible_collections.xdplab.testbed.plugins.module_utils._generators import backend_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = os.path.join(ROOT, "roles", "trex", "files")
RUNNER = os.path.join(FILES, "xdplab-trex-run")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "trex")
PYTHON = "/usr/bin/python3"


def _has_scapy():
    if not os.access(PYTHON, os.X_OK):
        return False
    return subprocess.run([PYTHON, "-c", "import scapy.layers.l2"], capture_output=True, check=False).returncode == 0


pytestmark = pytest.mark.skipif(not _has_scapy(), reason="needs /usr/bin/python3 with scapy (apt install python3-scapy)")


@pytest.fixture
def install(tmp_path):
    """A T-Rex-shaped install dir holding the fake client, and the role's lib dir (as the role lays it out)."""
    trex_dir = tmp_path / "opt" / "v3.04"
    shutil.copytree(os.path.join(FIXTURES, "fake_trex"), trex_dir)
    (trex_dir / "t-rex-64").write_text("#!/bin/sh\nexit 1\n")
    lib = tmp_path / "lib" / "trex"
    shutil.copytree(os.path.join(FILES, "profiles"), lib / "profiles")
    shutil.copy(os.path.join(ROOT, "plugins", "module_utils", "_trex.py"), lib / "xdplab_trex.py")
    return {"trex_dir": str(trex_dir), "lib_dir": str(lib), "tmp": tmp_path}


def runner(install, *args, env=None, **kw):
    cmd = [PYTHON, RUNNER, args[0], "--trex-dir", install["trex_dir"], "--lib-dir", install["lib_dir"], *args[1:]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=dict(os.environ, **(env or {})), check=False, **kw)


def records(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_ping_reports_the_server_version(install):
    res = runner(install, "ping")
    assert res.returncode == 0, res.stderr
    assert records(res.stdout) == [
        {"type": "ping", "server": "127.0.0.1", "sync_port": 4501, "version": "v3.04-fake", "mode": "STL", "ports": 2}
    ]


def test_ping_of_an_unreachable_server_fails_clearly(install):
    res = runner(install, "ping", "--server", "192.0.2.1", env={"FAKE_TREX_DOWN": "1"})
    assert res.returncode == 3
    assert "the T-Rex server at 192.0.2.1:4501 does not answer" in res.stderr


def test_missing_install_says_to_run_the_role(install, tmp_path):
    res = subprocess.run(
        [PYTHON, RUNNER, "ping", "--trex-dir", str(tmp_path / "nope"), "--lib-dir", install["lib_dir"]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 2 and "run the role xdplab.testbed.trex" in res.stderr


def test_a_lib_dir_without_xdplab_trex_is_a_json_error(install, tmp_path):
    res = runner(install, "ping")
    assert res.returncode == 0, res.stderr
    res = runner(dict(install, lib_dir=str(tmp_path / "nothing")), "ping")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    (error,) = records(res.stdout)
    assert error["type"] == "error" and error["message"].startswith("cannot import xdplab_trex from %s" % (tmp_path / "nothing"))


def test_bad_multiplier_and_profile_are_refused(install):
    res = runner(install, "run", "--mult", "fast")
    assert res.returncode == 2 and "is not a T-Rex multiplier" in res.stderr
    res = runner(install, "run", "--profile", "nope.py")
    assert res.returncode == 2 and "nope.py does not exist" in res.stderr


def test_a_run_prints_intervals_and_a_summary(install):
    streams = install["tmp"] / "streams.json"
    t0 = time.monotonic()
    res = runner(
        install,
        "run",
        "--port",
        "0",
        "--rx-port",
        "1",
        "--mult",
        "2mpps",
        "--duration",
        "2.2",
        "--warmup",
        "0.5",
        "--tunable",
        "packet_len=64",
        "--tunable",
        "stream_count=3",
        env={"FAKE_TREX_RX": "1", "FAKE_TREX_STREAMS": str(streams)},
    )
    took = time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    recs = records(res.stdout)
    intervals = [r for r in recs if r["type"] == "interval"]
    final = recs[-1]
    assert final["type"] == "summary" and final["stopped_by"] == "duration"
    assert len(intervals) == 3  # at 1 s, 2 s and the end (2.2 s)
    assert final["elapsed_s"] == pytest.approx(2.2, abs=0.15)
    # the warm-up is not counted: 2 Mpps over about 2.2 s, not 2.7 s
    assert final["sent"] == pytest.approx(2e6 * final["elapsed_s"], rel=0.08)
    assert final["received"] == pytest.approx(final["sent"] * 0.99, rel=0.01)
    assert final["drops"]["not_received"] == final["sent"] - final["received"]
    assert sum(r["sent"] for r in intervals) == pytest.approx(final["sent"], rel=0.08)
    assert final["pkt_len"] == 64 and final["flows"] == 3 and final["mult"] == "2mpps" and final["version"] == "T-Rex v3.04-fake"
    assert took < 10
    # the profile built 3 real 60-byte frames (64 with the FCS), ports 12, 13, 14 from port 9
    built = json.loads(streams.read_text())
    assert [s["dport"] for s in built] == [12, 13, 14]
    assert {s["len_without_fcs"] for s in built} == {60} and {s["sport"] for s in built} == {9}


def test_sigint_stops_the_traffic_and_still_prints_the_summary(install):
    cmd = [
        PYTHON,
        RUNNER,
        "run",
        "--trex-dir",
        install["trex_dir"],
        "--lib-dir",
        install["lib_dir"],
        "--mult",
        "1mpps",
        "--duration",
        "60",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    final = records(out)[-1]
    assert final["type"] == "summary" and final["stopped_by"] == "SIGINT"
    assert 0.5 < final["elapsed_s"] < 4 and final["sent"] > 0  # started ~2.5 s before, less the slow start-up


def test_total_is_over_all_of_the_servers_ports_as_the_client_sums_it(install):
    # issue 13 item 10: the real get_stats() sums every port into 'total', not the ports asked for; port 1 receives here
    # but is not an RX port of the run, so it is in total and not in received
    res = runner(install, "run", "--mult", "1mpps", "--duration", "1", "--interval", "1", env={"FAKE_TREX_RX": "1"})
    assert res.returncode == 0, res.stderr
    final = records(res.stdout)[-1]
    assert final["received"] == 0 and set(final["ports"]) == {"0"}
    assert final["total"]["opackets"] == final["sent"] > 0
    assert final["total"]["ipackets"] == pytest.approx(final["sent"] * 0.99, rel=1e-3)


def test_the_clients_own_sigint_on_a_lost_connection_is_an_error(install):
    # issue 13 item 7: the client SIGINTs its own process when its async thread loses the server; that is no user stop
    res = runner(install, "run", "--mult", "1mpps", "--duration", "5", "--interval", "0.2", env={"FAKE_TREX_LOSE_AFTER": "0.5"})
    assert res.returncode == 3, res.stdout
    final = records(res.stdout)[-1]
    assert final["type"] == "error" and not any(r["type"] == "summary" for r in records(res.stdout))
    assert final["message"] == (
        "the connection to the T-Rex server at 127.0.0.1:4501 was lost during the run: "
        "*** [subscriber] - timeout on receiving server heartbeat"
    )


def test_latency_run_reports_percentiles(install):
    res = runner(
        install,
        "run",
        "--profile",
        "udp_latency.py",
        "--mult",
        "1",
        "--duration",
        "1",
        "--rx-port",
        "1",
        "--tunable",
        "load_pps=1000000",
        "--tunable",
        "pg_id=10",
        "--latency-pgid",
        "10",
        env={"FAKE_TREX_RX": "1", "FAKE_TREX_PGID_FIXTURE": os.path.join(FIXTURES, "get_pgid_stats_latency.json")},
    )
    assert res.returncode == 0, res.stderr
    lat = records(res.stdout)[-1]["latency"]
    assert lat["percentiles_us"]["p99"] == 600 and lat["max_us"] == 567 and lat["samples"] == 114


def test_latency_is_read_before_the_clear_every_interval_and_at_the_end(install):
    # issue 13 item 9: the runner read the latency once at the end, so max_us was T-Rex's last period's maximum and
    # the HdrHistogram's percentiles counted the warm-up. The double answers with the real client's readings
    # (get_pgid_stats_client_run.json, checked in test_trex_client).
    calls = install["tmp"] / "calls.jsonl"
    env = {"FAKE_TREX_RX": "1", "FAKE_TREX_CALLS": str(calls),
           "FAKE_TREX_PGID_FIXTURE": os.path.join(FIXTURES, "get_pgid_stats_client_run.json")}  # fmt: skip
    res = runner(install, "run", "--profile", "udp_latency.py", "--mult", "1mpps", "--duration", "1", "--interval", "1",
                 "--warmup", "0.2", "--settle", "0", "--rx-port", "1", "--tunable", "pg_id=7", "--latency-pgid", "7",
                 env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    order = [c["method"] for c in records(calls.read_text())]
    assert order == ["reset", "clear_stats", "start", "get_pgid_stats", "clear_stats", "get_pgid_stats", "get_pgid_stats"]
    lat = records(res.stdout)[-1]["latency"]
    # the client's total_max after the clear, with a reading at the interval: 130 µs, not the end's last_max 40
    assert lat["max_us"] == 130 and lat["rx_pkts"] == lat["samples"] == 1000
    with open(os.path.join(FIXTURES, "get_pgid_stats_client_run.json")) as f:
        start = json.load(f)[0]
    assert lat["hdrh_start"] == start["latency"]["7"]["latency"]["hdrh"]
    # /usr/bin/python3 has no hdrhistogram: the controller decodes the measured period's HdrHistogram
    assert trex.with_hdrh(lat)["percentiles_us"] == {"p50": 8, "p90": 15, "p99": 40, "p99_9": 130}


def test_a_multiplier_reaches_start_normalised_and_a_refused_one_touches_no_port(install):
    # issue 13 item 3: start() gets the lowercase, trimmed form (the one decode_multiplier takes, test_trex_client)
    calls = install["tmp"] / "calls.jsonl"
    res = runner(install, "run", "--mult", " 10Mpps ", "--duration", "0.2", "--interval", "0.2", "--settle", "0",
                 env={"FAKE_TREX_CALLS": str(calls)})  # fmt: skip
    assert res.returncode == 0, res.stderr
    (start,) = [c for c in records(calls.read_text()) if c["method"] == "start"]
    assert start["mult"] == "10mpps" == trex.normalize_mult(" 10Mpps ")
    calls.unlink()
    res = runner(install, "run", "--mult", "10 mpps", env={"FAKE_TREX_CALLS": str(calls)})
    assert res.returncode == 2 and records(res.stdout)[0]["type"] == "error" and not calls.exists()


def profile_streams(install, profile, **tunables):
    """Build a profile's streams with the fake client's load_py (real scapy frames)."""
    out = install["tmp"] / ("%s.json" % profile)
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "from trex.stl.api import STLProfile\n"
        "STLProfile.load_py(%r, port_id=0, tunables=%r)\n"
    ) % (
        os.path.join(install["trex_dir"], "automation/trex_control_plane/interactive"),
        os.path.join(install["lib_dir"], "profiles", profile),
        [x for k, v in sorted(tunables.items()) for x in ("--" + k, str(v))],
    )
    res = subprocess.run(
        [PYTHON, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, FAKE_TREX_STREAMS=str(out)),
        check=False,
    )
    return res, (json.loads(out.read_text()) if out.exists() else None)


def test_udp_for_benchmarks_frames(install):
    res, streams = profile_streams(
        install,
        "udp_for_benchmarks.py",
        packet_len=128,
        stream_count=6,
        dst_mac="ec:0d:9a:00:00:01",
        src_mac="ec:0d:9a:00:00:11",
        dst_ip="198.18.0.2",
    )
    assert res.returncode == 0, res.stderr
    assert [s["dport"] for s in streams] == list(range(12, 18))
    assert {s["len_without_fcs"] for s in streams} == {124}
    assert {s["dst_mac"] for s in streams} == {"ec:0d:9a:00:00:01"} and {s["mac_dst_override_mode"] for s in streams} == {1}
    assert {s["pps"] for s in streams} == {1}  # equal shares; the multiplier scales


def test_old_style_keyword_tunables_still_work(install):
    code = (
        "import sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
        "import udp_for_benchmarks\n"
        "s = udp_for_benchmarks.register().get_streams(packet_len=64, stream_count=2)\n"
        "print(len(s), len(s[0].packet.pkt))\n"
    ) % (
        os.path.join(install["trex_dir"], "automation/trex_control_plane/interactive"),
        os.path.join(install["lib_dir"], "profiles"),
    )
    res = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["2", "60"]


def test_multi_ip_varies_the_destination(install):
    res, streams = profile_streams(install, "udp_multi_ip.py", stream_count=4, dst_ip="198.18.0.254")
    assert res.returncode == 0, res.stderr
    assert [s["dst_ip"] for s in streams] == ["198.18.0.254", "198.18.0.255", "198.18.1.0", "198.18.1.1"]
    _res, streams = profile_streams(install, "udp_multi_ip.py", stream_count=4, ip_count=2)
    assert [s["dst_ip"] for s in streams] == ["198.18.0.2", "198.18.0.3", "198.18.0.2", "198.18.0.3"]
    assert [s["dport"] for s in streams] == [12, 13, 14, 15]


def test_latency_profile_rates_and_group(install):
    res, streams = profile_streams(install, "udp_latency.py", stream_count=2, load_pps=1000000, latency_pps=100, pg_id=5)
    assert res.returncode == 0, res.stderr
    assert [(s["pps"], s["pg_id"], s["dport"]) for s in streams] == [(500000.0, None, 12), (500000.0, None, 13), (100.0, 5, 14)]
    assert streams[-1]["len_without_fcs"] == 60


def test_profiles_refuse_bad_tunables(install):
    res, _streams = profile_streams(install, "udp_for_benchmarks.py", packet_len=40)
    assert res.returncode != 0 and "packet_len=40 is outside 64..1518" in res.stderr
    res, _streams = profile_streams(install, "udp_for_benchmarks.py", stream_count=10, port_base=65530)
    assert res.returncode != 0 and "leaves the UDP port range" in res.stderr


def test_backend_trex_start_stop_summary(install, tmp_path):
    """traffic_generator's lifecycle with backend trex: spawn the runner, stop it with SIGINT, read the summary."""
    run_dir = tmp_path / "run"
    params = {
        "run_dir": str(run_dir),
        "name": "trial",
        "interface": "0000:03:00.0",
        "src_mac": "ec:0d:9a:00:00:11",
        "dst_mac": "ec:0d:9a:00:00:01",
        "src_ip": "198.18.0.1",
        "dst_ip": "198.18.0.2",
        "packet_len": 64,
        "stream_count": 2,
        "port_base": 12,
        "queues": 2,
        "cpus": [],
        "duration": 30,
        "rate_pps": 500000.0,
        "batch": 64,
        "backend_options": {
            "ports": ["0000:03:00.0", "0000:03:00.1"],
            "python": PYTHON,
            "runner": RUNNER,
            "lib_dir": install["lib_dir"],
            "trex_dir": install["trex_dir"],
            "check_server": False,
        },
    }
    gen = backend_for("trex")(params, None)
    gen.validate()
    state = gen.start()
    try:
        assert gen.run.running(state)
        time.sleep(2.2)
        assert gen.run.stop(timeout=15)
        summary = gen.summary(gen.run.load_state())
    finally:
        gen.run.stop(timeout=5)
        gen.run.remove()
    assert summary["backend"] == "trex" and summary["stream_count"] == 2 and summary["queues"] == 2
    assert summary["offered_pps"] == pytest.approx(500000, rel=0.1)
    assert summary["trex"]["stopped_by"] == "SIGINT" and summary["trex"]["mult"] == "500000pps"
    assert summary["intervals"] and summary["egress"]["refused"] is None
    assert summary["command"][:3] == [PYTHON, RUNNER, "run"]
    assert not run_dir.exists()


def run_module(args, capsys):
    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.xdplab.testbed.plugins.modules import trex_traffic

    with patch_module_args(args), pytest.raises(SystemExit):
        trex_traffic.main()
    return json.loads(capsys.readouterr().out)


def module_args(install, **over):
    args = {"trex_dir": install["trex_dir"], "lib_dir": install["lib_dir"], "runner": RUNNER, "python": PYTHON,
            "check_server": False, "duration": 1.2, "stream_count": 4, "rate_pps": 300000}  # fmt: skip
    args.update(over)
    return args


def test_module_trex_traffic_runs_and_returns_rates(install, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_TREX_RX", "1")
    monkeypatch.setenv("FAKE_TREX_PGID_FIXTURE", os.path.join(FIXTURES, "get_pgid_stats_client_run.json"))
    res = run_module(module_args(install, rx_ports=[1], warmup=0.3, latency=True, pg_id=7), capsys)
    assert not res.get("failed"), res
    # the runner's /usr/bin/python3 has no hdrhistogram: the module decodes the measured period's HdrHistogram
    assert res["latency"]["percentiles_from"] == "hdrh" and res["latency"]["percentiles_us"]["p99"] == 40
    assert res["changed"] and res["stopped_by"] == "duration" and res["version"] == "T-Rex v3.04-fake"
    assert res["tx_pps"] == pytest.approx(300000, rel=0.1) and res["received"] == pytest.approx(res["sent"] * 0.99, rel=0.01)
    assert set(res["ports"]) == {"0", "1"} and res["drops"]["not_received"] == res["sent"] - res["received"]
    assert res["intervals"] and "--mult 300000pps" in " ".join(res["command"])


def test_module_check_mode_validates_and_sends_nothing(install, capsys):
    res = run_module(module_args(install, _ansible_check_mode=True), capsys)
    assert res["changed"] and "sent" not in res and res["command"][2] == "run"
    res = run_module(module_args(install, _ansible_check_mode=True, trex_dir="/nonexistent/v3.04"), capsys)
    assert res["failed"] and "run the role xdplab.testbed.trex" in res["msg"]
    res = run_module(module_args(install, _ansible_check_mode=True, check_server=True, sync_port=1), capsys)
    assert res["failed"] and "127.0.0.1:1 is not reachable" in res["msg"]


def test_module_reports_a_server_that_does_not_answer(install, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_TREX_DOWN", "1")
    res = run_module(module_args(install), capsys)
    assert res["failed"] and "xdplab-trex-run failed (status 3)" in res["msg"] and "Failed to get server response" in res["msg"]


def test_backend_trex_sends_address_lists_and_records_them(install, tmp_path, monkeypatch):
    """Issue 27 on T-Rex: the backend writes the lists as run files, the runner hands them to the profile (dst_list,
    src_list), whose every stream carries them in its field engine program; the summary keeps what the record keeps."""
    streams_log = tmp_path / "streams.json"
    monkeypatch.setenv("FAKE_TREX_STREAMS", str(streams_log))
    run_dir = tmp_path / "run"
    params = {
        "run_dir": str(run_dir), "name": "trial", "interface": "0000:03:00.0", "src_mac": "ec:0d:9a:00:00:11",
        "dst_mac": "ec:0d:9a:00:00:01", "src_ip": "198.18.0.1", "dst_ip": "198.18.0.2", "packet_len": 64,
        "stream_count": 2, "port_base": 12, "queues": 1, "cpus": [], "duration": 30, "rate_pps": 100000.0, "batch": 64,
        "destinations": {"count": 50, "seed": 7}, "sources": {"list": ["10.1.0.1", "10.1.0.2", "10.1.0.3"]},
        "exclude": ["198.18.0.0/15"],
        "backend_options": {"ports": ["0000:03:00.0", "0000:03:00.1"], "python": PYTHON, "runner": RUNNER,
                            "lib_dir": install["lib_dir"], "trex_dir": install["trex_dir"], "check_server": False},
    }  # fmt: skip
    gen = backend_for("trex")(params, None)
    gen.validate()
    dsts, described = gen.lists["destinations"]
    state = gen.start()
    try:
        assert gen.run.running(state)
        # the list files as xdp_live writes them (one address a line), named in the runner's tunables
        assert (run_dir / "trial.destinations.txt").read_text() == "".join(a + "\n" for a in dsts)
        assert "dst_list=%s" % (run_dir / "trial.destinations.txt") in state["command"]
        time.sleep(1.5)
        assert gen.run.stop(timeout=15)
        summary = gen.summary(gen.run.load_state())
    finally:
        gen.run.stop(timeout=5)
        gen.run.remove()
    streams = json.loads(streams_log.read_text())
    assert len(streams) == 2
    for s in streams:
        vm = {(c["kind"], c.get("name") or c.get("fv_name")): c for c in s["vm"]}
        assert vm["flow_var", "xdplab_dst"]["value_list"] == dsts and vm["flow_var", "xdplab_src"]["value_list"] == [
            "10.1.0.1", "10.1.0.2", "10.1.0.3"]  # fmt: skip
        assert vm["flow_var", "xdplab_dst"]["op"] == "inc" and vm["flow_var", "xdplab_dst"]["split_to_cores"] is True
        assert vm["write_flow_var", "xdplab_dst"]["pkt_offset"] == "IP.dst"
        assert vm["write_flow_var", "xdplab_src"]["pkt_offset"] == "IP.src"
        assert vm["fix_ipv4", None]["offset"] == "IP"
        assert s["dst_ip"] == dsts[0] and s["src_ip"] == "10.1.0.1" and s["udp_chksum"] == 0
    assert summary["destinations"] == described and summary["sources"]["drawn"] is False
    assert summary["sources"]["count"] == 3 and summary["destinations"]["count"] == 50
    # the lists are run files: removed with the run
    assert not run_dir.exists()


def test_module_trex_traffic_sends_address_lists(install, capsys, monkeypatch, tmp_path):
    streams_log = tmp_path / "streams.json"
    monkeypatch.setenv("FAKE_TREX_STREAMS", str(streams_log))
    lists = {"destinations": {"count": 20, "seed": 3}, "sources": {"list": ["10.1.0.1", "10.1.0.2"]},
             "exclude": ["198.18.0.0/15"]}  # fmt: skip
    res = run_module(module_args(install, stream_count=2, **lists), capsys)
    assert not res.get("failed"), res
    assert res["destinations"]["count"] == 20 and res["destinations"]["seed"] == 3 and res["sources"]["drawn"] is False
    dsts = next(c for c in json.loads(streams_log.read_text())[0]["vm"] if c.get("name") == "xdplab_dst")["value_list"]
    assert dsts[:5] == res["destinations"]["first"] and len(dsts) == 20
    # the list files lived in a directory of the run's own, gone after it
    list_file = next(arg.split("=", 1)[1] for arg in res["command"] if arg.startswith("dst_list="))
    assert list_file.endswith("/trex_traffic.destinations.txt") and not os.path.exists(os.path.dirname(list_file))
    # limits are refused with the number before anything is sent
    res = run_module(module_args(install, destinations={"count": 65536}), capsys)
    assert res["failed"] and "destinations has 65536 addresses; T-Rex's field engine holds at most 65535" in res["msg"]
    res = run_module(module_args(install, _ansible_check_mode=True, destinations={"count": 0}), capsys)
    assert res["failed"] and "destinations.count must be a whole number" in res["msg"]

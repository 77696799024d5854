"""T-Rex helpers: multipliers, PCI addresses, the client's statistics shapes (fixtures) and the backend's input.

The statistics fixtures are the T-Rex stateless client's message shapes (tests/unit/fixtures/trex/README.md
says where each value comes from); no T-Rex server runs here.
"""

import json
import os
import socket

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _trex as trex
from ansible_collections.xdplab.testbed.plugins.module_utils._generators import BACKENDS, GeneratorError, backend_names
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.trex import OPTIONS, TrexGenerator, options, port_for

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "trex")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def int_keys(obj):
    """The fixture as the live client returns it: integer port, pg id and bucket keys."""
    if isinstance(obj, dict):
        return {(int(k) if isinstance(k, str) and k.isdigit() else k): int_keys(v) for k, v in obj.items()}
    return obj


# -- multipliers and addresses ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "mult, expected",
    [
        ("10mpps", (10.0, "mpps")),
        ("100%", (100.0, "%")),
        ("2", (2.0, "")),
        ("1.5", (1.5, "")),
        ("500kpps", (500.0, "kpps")),
        ("40gbps", (40.0, "gbps")),
        ("10MPPS", (10.0, "mpps")),
    ],
)
def test_t_rex_multipliers_parse(mult, expected):
    assert trex.parse_mult(mult) == expected


@pytest.mark.parametrize("mult", ["", "fast", "10 mpps", "-1", "0", "0mpps", "101%", "10mbit", "1e6pps"])
def test_bad_multipliers_are_refused_with_the_accepted_forms(mult):
    with pytest.raises(trex.TrexError, match=r"mult=|greater than zero|cannot exceed"):
        trex.parse_mult(mult)


def test_rate_pps_becomes_a_pps_multiplier_and_wins_over_the_default():
    assert trex.mult_for(2_500_000.4, "100%") == "2500000pps"
    assert trex.mult_for(0, "100%") == "100%"
    assert trex.mult_pps("10mpps") == 10e6
    assert trex.mult_pps("100%") is None
    with pytest.raises(trex.TrexError):
        trex.mult_for(0, "lots")


@pytest.mark.parametrize(
    "pci, ok",
    [
        ("0000:03:00.0", True),
        ("0000:af:00.7", True),
        ("03:00.0", False),
        ("0000:03:00.8", False),
        ("0000:03:00", False),
        (None, False),
        ("mlx5p1", False),
    ],
)
def test_pci_addresses(pci, ok):
    assert trex.valid_pci(pci) is ok


def test_tunables_are_passed_argv_style_like_t_rex_2_84_and_later():
    args = trex.tunables_args({"stream_count": 6, "packet_len": 64, "dst_mac": "", "src_mac": None})
    assert args == ["--packet_len", "64", "--stream_count", "6"]


# -- statistics (fixtures of the client's shapes) -----------------------------------------------------
def test_port_row_reads_the_clients_port_dict():
    stats = fixture("get_stats_port0.json")
    row = trex.port_row(stats["0"])
    assert row["opackets"] == 10001 and row["obytes"] == 1040104 and row["ipackets"] == 0
    assert row["tx_pps"] == pytest.approx(995.4486083984375)
    assert row["tx_bps_L1"] == pytest.approx(987485.0273437499)
    # the same with the live client's integer keys
    assert trex.port_rows(int_keys(stats), [0]) == {0: row}


def test_unavailable_values_count_as_zero():
    row = trex.port_row({"opackets": "N/A", "tx_pps": None, "rx_pps": float("nan")})
    assert row["opackets"] == 0 and row["tx_pps"] == 0.0 and row["rx_pps"] == 0.0


def test_interval_record_is_shaped_like_xdplab_trafficgen():
    before = int_keys(fixture("get_stats_port0.json"))
    after = json.loads(json.dumps(before))
    after["0"]["opackets"] += 995
    rec = trex.interval_record(before, int_keys(after), [0], [], mono=1234.5, t=1.0, dt=1.0)
    assert rec["type"] == "interval" and rec["sent"] == 995 and rec["pps"] == 995
    assert rec["mono"] == 1234.5 and rec["received"] == 0
    assert rec["ports"]["0"]["tx_pps"] == pytest.approx(995.4486083984375)


def test_summary_totals_and_drops():
    stats = int_keys(fixture("get_stats_port0.json"))
    out = trex.run_summary(stats, [0], [], 10.0, {"pkt_len": 64, "flows": 1, "version": "T-Rex v3.04"})
    assert out["type"] == "summary" and out["sent"] == 10001 and out["pps"] == 1000
    assert out["drops"] == {"not_received": None, "oerrors": 0, "ierrors": 0, "queue_full": 0}
    assert out["global"]["cpu_util"] == pytest.approx(0.009603138081729412)
    assert out["version"] == "T-Rex v3.04"
    # a forwarding setup: port 0 sends, port 1 receives 9000 of the 10001
    fwd = json.loads(json.dumps(fixture("get_stats_port0.json")))
    fwd["1"] = dict(fwd["0"], opackets=0, ipackets=9000, obytes=0)
    out = trex.run_summary(fwd, [0], [1], 10.0, {})
    assert out["received"] == 9000 and out["drops"]["not_received"] == 1001 and out["rx_pps"] == 900


def test_histogram_buckets_as_the_t_rex_example_reads_them():
    assert trex.bucket_range(0) == (0, 10)
    assert trex.bucket_range(20) == (20, 30)
    assert trex.bucket_range(300) == (300, 400)
    assert trex.bucket_range("1000") == (1000, 2000)


def test_latency_percentiles_from_the_clients_histogram():
    pgid = fixture("get_pgid_stats_latency.json")
    lat = trex.latency_summary(pgid, 10, tx_port=0, rx_port=1)
    assert lat["samples"] == 114 and lat["tx_pkts"] == 114 and lat["rx_pkts"] == 114
    assert (lat["min_us"], lat["average_us"], lat["max_us"], lat["jitter_us"]) == (47, 370.0, 567, 191)
    # cumulative 2, 3, 5, 26, 41, 56, 103, 114 over buckets 40, 80, 90, 100, 200, 300, 400, 500
    assert lat["percentiles_us"] == {"p50": 500, "p90": 500, "p99": 600, "p99_9": 600}
    assert lat["share_below_us"] == {"10": 0.0, "100": round(100 * 5 / 114, 3)}
    assert lat["errors"]["dropped"] == 0 and set(lat["errors"]) == {
        "dropped",
        "out_of_order",
        "dup",
        "seq_too_high",
        "seq_too_low",
    }
    # the bound is consistent with the reported maximum
    assert lat["max_us"] <= lat["percentiles_us"]["p99_9"]
    # the live client's integer keys give the same result
    assert trex.latency_summary(int_keys(pgid), 10, 0, 1) == lat


def test_missing_latency_group_says_what_the_profile_needs():
    with pytest.raises(trex.TrexError, match=r"pg_id 3 .*STLFlowLatencyStats\(pg_id=3\)"):
        trex.latency_summary(fixture("get_pgid_stats_latency.json"), 3, 0, 1)


def test_percentile_bounds():
    assert trex.histogram_percentiles({})["samples"] == 0
    out = trex.histogram_percentiles({0: 99, 10: 1}, percentiles=[99, 100], below_us=[10])
    assert out["percentiles_us"] == {"p99": 10, "p100": 20} and out["share_below_us"] == {"10": 99.0}
    with pytest.raises(trex.TrexError, match=r"outside 0\.\.100"):
        trex.histogram_percentiles({0: 1}, percentiles=[101])


def test_generator_summary_has_the_common_shape():
    stats = int_keys(fixture("get_stats_port0.json"))
    final = trex.run_summary(
        stats, [0], [], 10.0, {"pkt_len": 64, "flows": 6, "version": "T-Rex v3.04", "tx_ports": [0], "mult": "100%"}
    )
    out = trex.generator_summary(final, [{"type": "interval"}], ["xdplab-trex-run"], {"queues": 6, "rate_pps": 0})
    assert set(out) >= {
        "backend",
        "sent",
        "elapsed_s",
        "offered_pps",
        "packet_len",
        "stream_count",
        "queues",
        "threads",
        "intervals",
        "egress",
        "version",
        "command",
    }
    assert out["backend"] == "trex" and out["sent"] == 10001 and out["stream_count"] == 6 and out["queues"] == 6
    assert out["egress"] == {"delivered": 10001, "refused": None}
    assert out["trex"]["drops"]["oerrors"] == 0
    assert out["threads"] == [{"port": 0, "sent": 10001}]
    assert out["trex"]["mult"] == "100%"


# -- installation and server checks (real files and sockets) --------------------------------------------
def test_install_check_names_the_role(tmp_path):
    with pytest.raises(trex.TrexError, match=r"not installed at .*run the role xdplab.testbed.trex"):
        trex.check_install(str(tmp_path), os.path.exists)
    (tmp_path / "t-rex-64").write_text("")
    api = tmp_path / trex.INTERACTIVE_SUBDIR / "trex" / "stl" / "api.py"
    api.parent.mkdir(parents=True)
    api.write_text("")
    trex.check_install(str(tmp_path), os.path.exists)


def test_server_check_against_real_sockets():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        trex.check_server("127.0.0.1", listener.getsockname()[1])
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        closed.close()
    with pytest.raises(trex.TrexError, match=r"127.0.0.1:%d is not reachable .*systemctl start trex" % port):
        trex.check_server("127.0.0.1", port, timeout=1)


# -- the backend's input --------------------------------------------------------------------------------
def params(**over):
    p = {
        "run_dir": "/nonexistent",
        "name": "t",
        "interface": "0000:03:00.0",
        "src_mac": "ec:0d:9a:00:00:11",
        "dst_mac": "ec:0d:9a:00:00:01",
        "src_ip": "198.18.0.1",
        "dst_ip": "198.18.0.2",
        "packet_len": 64,
        "stream_count": 6,
        "port_base": 12,
        "queues": 6,
        "cpus": [2, 3],
        "duration": 30,
        "rate_pps": 0.0,
        "batch": 64,
        "binary": "/usr/local/lib/xdplab/bin/xdplab-trafficgen",
        "backend_options": {"ports": ["0000:03:00.0", "0000:03:00.1"]},
    }
    p.update(over)
    return p


def test_trex_is_a_registered_backend():
    assert "trex" in backend_names() and BACKENDS["trex"] is TrexGenerator


def test_unknown_backend_options_are_refused_with_the_known_ones():
    with pytest.raises(GeneratorError, match=r"does not know backend_options colour; it takes: .*mult.*trex_dir"):
        options({"colour": "red"})
    with pytest.raises(GeneratorError, match=r"backend_options.sync_port='x' is not a int"):
        options({"sync_port": "x"})
    assert options({})["trex_dir"] == OPTIONS["trex_dir"][1]


def test_interface_maps_to_a_t_rex_port():
    o = options({"ports": ["0000:03:00.0", "0000:03:00.1"]})
    assert port_for("0000:03:00.1", o) == 1
    assert port_for("1", o) == 1
    assert port_for("0000:03:00.1", dict(o, port=0)) == 0
    with pytest.raises(GeneratorError, match=r"0000:04:00.0 is a PCI address but not one of backend_options.ports"):
        port_for("0000:04:00.0", o)
    with pytest.raises(GeneratorError, match=r"names no T-Rex port"):
        port_for("mlx5p1", o)


def test_validate_says_to_run_the_role_when_t_rex_is_missing(tmp_path):
    runner = os.path.join(ROOT, "roles", "trex", "files", "xdplab-trex-run")
    lib = os.path.join(ROOT, "roles", "trex", "files")
    gen = TrexGenerator(
        params(
            backend_options={"ports": ["0000:03:00.0"], "runner": runner, "lib_dir": lib, "trex_dir": str(tmp_path / "v3.04")}
        ),
        None,
    )
    with pytest.raises(GeneratorError, match=r"T-Rex is not installed at .*v3.04 .*run the role xdplab.testbed.trex"):
        gen.validate()
    gen = TrexGenerator(params(), None)
    with pytest.raises(GeneratorError, match=r"xdplab-trex-run .*is not installed: run the role xdplab.testbed.trex"):
        gen.validate()


def test_validate_refuses_bad_input_before_looking_at_the_host():
    for over, msg in [
        ({"packet_len": 63}, "packet_len=63 is outside 64..1518"),
        ({"dst_mac": "ec:0d:9a:00:00"}, "dst_mac='ec:0d:9a:00:00' is not a MAC"),
        ({"src_ip": "198.18.0.300"}, "src_ip='198.18.0.300' is not an IPv4"),
        ({"backend_options": {"ports": ["03:00.0"]}}, "backend_options.ports: '03:00.0' is not a PCI"),
        ({"backend_options": {"mult": "fast"}, "interface": "0"}, "mult='fast' is not a T-Rex multiplier"),
    ]:
        with pytest.raises(GeneratorError, match=msg):
            TrexGenerator(params(**over), None).validate()


def test_command_for_the_papers_drop_test():
    gen = TrexGenerator(params(backend_options={"ports": ["0000:03:00.0", "0000:03:00.1"], "warmup_s": 2}), None)
    gen.port, gen.mult = port_for("0000:03:00.0", gen.opts), gen.multiplier()
    cmd = gen.command()
    assert cmd[:3] == ["/usr/bin/python3", "/usr/local/lib/xdplab/bin/xdplab-trex-run", "run"]
    joined = " ".join(cmd)
    assert "--port 0 " in joined and "--mult 100% " in joined and "--duration 30 " in joined and "--warmup 2 " in joined
    assert "--profile /usr/local/lib/xdplab/trex/profiles/udp_for_benchmarks.py" in joined
    for t in ("packet_len=64", "stream_count=6", "port_base=12", "dst_mac=ec:0d:9a:00:00:01", "dst_ip=198.18.0.2"):
        assert "--tunable " + t in joined
    # an offered load from the CPU-usage experiment
    gen = TrexGenerator(params(rate_pps=1e6), None)
    assert gen.multiplier() == "1000000pps"


def test_latency_takes_any_multiplier_because_t_rex_does_not_scale_the_latency_stream():
    # issue 13 item 9: a latency stream has a fixed rate (trex_stl_stream.h is_fixed_rate_stream), so the load streams
    # of udp_latency.py take the multiplier as udp_for_benchmarks.py does, "100%" too
    gen = TrexGenerator(
        params(rate_pps=1e6, backend_options={"ports": ["0000:03:00.0"], "latency": True, "pg_id": 5, "rx_ports": [1]}), None
    )
    gen.port, gen.mult = 0, gen.multiplier()
    joined = " ".join(gen.command())
    assert gen.mult == "1000000pps" and "udp_latency.py" in joined and "--latency-pgid 5" in joined and "--rx-port 1" in joined
    assert "load_pps" not in joined and "--tunable latency_pps=1000.0" in joined
    assert "--percentile 99.9" in joined
    gen = TrexGenerator(params(backend_options={"ports": ["0000:03:00.0"], "latency": True, "mult": "100%"}), None)
    assert gen.multiplier() == "100%"
    # latency_pps at (or above) the trial's rate: every frame is a latency frame, no load streams, raw multiplier 1
    opts = {"ports": ["0000:03:00.0"], "latency": True, "latency_pps": 1e5}
    gen = TrexGenerator(params(rate_pps=1e5, backend_options=opts), None)
    gen.port, gen.mult = 0, gen.multiplier()
    joined = " ".join(gen.command())
    assert gen.mult == "1" and "--tunable load_pps=0 " in joined and "--tunable latency_pps=100000.0 " in joined


def test_a_multiplier_is_passed_on_as_the_client_decodes_it():
    # issue 13 item 3: the string given was passed on; the client's decode_multiplier takes lowercase only
    gen = TrexGenerator(params(backend_options={"ports": ["0000:03:00.0"], "mult": " 10Mpps"}), None)
    gen.port, gen.mult = 0, gen.multiplier()
    assert gen.mult == "10mpps" and "--mult 10mpps " in " ".join(gen.command())


def test_a_v2_4x_release_is_refused_with_the_reason(tmp_path):
    # issue 13 item 6: v2.4x's layout was reported as "not installed"
    (tmp_path / "t-rex-64").write_text("")
    api = tmp_path / trex.V24_CLIENT
    api.parent.mkdir(parents=True)
    api.write_text("")
    with pytest.raises(trex.TrexError, match=r"is a v2\.4x release .*stl/trex_stl_lib/api\.py.*needs v2\.88 or newer"):
        trex.check_install(str(tmp_path), os.path.exists)


@pytest.mark.parametrize(
    "version, python, ok",
    [("v3.04", (3, 11), True), ("v3.04", (3, 12), False), ("v3.07", (3, 12), False), ("v3.08", (3, 12), True),
     ("v3.08", (3, 13), False), ("v2.89", (3, 9), True), ("trex", (3, 13), True)],
)  # fmt: skip
def test_the_python_a_release_imports_on(version, python, ok):
    # issue 13 item 5: v3.04..v3.07 `import imp` (gone in 3.12); v3.08's bundled scapy `import cgi` (gone in 3.13)
    if ok:
        trex.check_python(version, python)
        return
    message = r"T-Rex %s's client does not import on Python %d\.%d .*<= 3\.11.*<= 3\.12" % ((version,) + python)
    with pytest.raises(trex.TrexError, match=message):
        trex.check_python(version, python, "/usr/bin/python3")


# -- latency: what T-Rex's numbers are ----------------------------------------------------------------------
def hdrh_of(values):
    """An encoded HdrHistogram like the server's latency.hdrh (`t-rex-64 --hdrh`: hdr_log_encode of its C
    HdrHistogram, the same compressed base64 format), here made with the PyPI package hdrhistogram: a fixture."""
    from hdrh.histogram import HdrHistogram

    hist = HdrHistogram(1, 3600 * 1000 * 1000, 3)
    for value, count in values:
        hist.record_value(value, count)
    return hist.encode().decode()


def test_legacy_histogram_percentiles_say_they_are_bucket_bounds():
    lat = trex.latency_summary(fixture("get_pgid_stats_latency.json"), 10, 0, 1)
    assert lat["percentiles_from"] == "histogram_bucket_bounds" and "hdrh" not in lat


def test_percentiles_come_from_the_hdr_histogram_where_the_server_has_it():
    # issue 13 item 9: the legacy histogram gives only bucket bounds (p50 <= 500 here); --hdrh gives the values
    pgid = fixture("get_pgid_stats_latency.json")
    encoded = hdrh_of([(47, 2), (370, 100), (567, 12)])
    pgid["latency"]["10"]["latency"]["hdrh"] = encoded
    lat = trex.latency_summary(pgid, 10, 0, 1, percentiles=[50, 90, 99], below_us=[100, 400])
    assert lat["percentiles_from"] == "hdrh" and lat["hdrh"] == encoded and lat["samples"] == 114
    assert lat["percentiles_us"] == {"p50": 370, "p90": 567, "p99": 567}
    assert lat["share_below_us"] == {"100": round(100 * 2 / 114, 3), "400": round(100 * 102 / 114, 3)}
    # a runner host without the hdrhistogram package leaves the decoding to the controller's generator summary
    undecoded = dict(lat, percentiles_from="histogram_bucket_bounds", percentiles_us={"p50": 500})
    final = {"sent": 1, "elapsed_s": 1.0, "pps": 1, "ports": {}, "tx_ports": [0], "latency": undecoded}
    summary = trex.generator_summary(final, [], [], {})
    assert summary["trex"]["latency"]["percentiles_from"] == "hdrh" and summary["trex"]["latency"]["percentiles_us"]["p50"] == 370


# -- address lists on T-Rex (issue 27) -------------------------------------------------------------------------------
def fake_install(tmp_path):
    """backend_options pointing at the files validate() looks for: a runner, a profile, a T-Rex-shaped dir (empty
    files: validate only checks they are there) and no server check."""
    trex_dir = tmp_path / "trex" / "v3.04"
    (trex_dir / trex.INTERACTIVE_SUBDIR / "trex" / "stl").mkdir(parents=True)
    (trex_dir / trex.INTERACTIVE_SUBDIR / trex.CLIENT_MARKERS[0]).write_text("")
    (trex_dir / "t-rex-64").write_text("")
    lib = tmp_path / "lib"
    (lib / "profiles").mkdir(parents=True)
    (lib / "profiles" / "udp_for_benchmarks.py").write_text("")
    (tmp_path / "runner").write_text("")
    return {"ports": ["0000:03:00.0"], "trex_dir": str(trex_dir), "lib_dir": str(lib), "runner": str(tmp_path / "runner"),
            "check_server": False}  # fmt: skip


def test_address_lists_reach_the_profile_as_list_files(tmp_path):
    run_dir = tmp_path / "run"
    lists = {"destinations": {"count": 4000, "seed": 1}, "sources": {"list": ["10.1.0.1", "10.1.0.2"]}}
    over = dict(lists, run_dir=str(run_dir), exclude=["198.18.0.0/15"], backend_options=fake_install(tmp_path))
    gen = TrexGenerator(params(**over), None)
    gen.validate()
    dsts, described = gen.lists["destinations"]
    assert len(dsts) == 4000 and described["seed"] == 1 and described["first"] == dsts[:5]
    assert not any(a.startswith(("198.18.", "198.19.")) for a in dsts)  # the module's exclude is the lab's nets
    joined = " ".join(gen.command())
    assert "--tunable dst_list=%s/t.destinations.txt " % run_dir in joined
    assert "--tunable src_list=%s/t.sources.txt " % run_dir in joined
    # a different list is a different run (idempotency), so the identity holds each list's sha256
    ident = gen.identity()
    assert ident["destinations"] == described["sha256"] and ident["sources"] == gen.lists["sources"][1]["sha256"]
    # nothing was written yet: the files come with start()
    assert not run_dir.exists()


def test_without_address_lists_the_t_rex_command_is_unchanged(tmp_path):
    gen = TrexGenerator(params(backend_options=fake_install(tmp_path)), None)
    gen.validate()
    joined = " ".join(gen.command())
    assert "dst_list" not in joined and "src_list" not in joined and "destinations" not in gen.identity()


def test_a_list_longer_than_the_field_engine_holds_is_refused_with_the_number(tmp_path):
    # 65,536 is xdplab-trafficgen's limit; T-Rex's value_list takes 65,535 (trex_stl_rpc_cmds.cpp check_value_list)
    run_dir = tmp_path / "run"
    gen = TrexGenerator(params(run_dir=str(run_dir), stream_count=1, destinations={"count": 65536, "seed": 1}), None)
    with pytest.raises(GeneratorError, match=r"destinations has 65536 addresses; T-Rex's field engine holds at most 65535"):
        gen.validate()
    assert not run_dir.exists()
    # 65,535 is taken (one stream, destinations only: 65,535 numbers of about 11 bytes fit one request)
    gen = TrexGenerator(params(stream_count=1, destinations={"count": 65535, "seed": 1}, backend_options=fake_install(tmp_path)),
                        None)  # fmt: skip
    gen.validate()
    assert len(gen.lists["destinations"][0]) == 65535


def test_lists_too_large_for_one_request_are_refused_with_the_bytes(tmp_path):
    # every stream carries the whole lists: both lists at 65,535 in one stream pass the server's 999,999 bytes
    gen = TrexGenerator(params(stream_count=1, destinations={"count": 65535, "seed": 1}, sources={"count": 65535, "seed": 2}),
                        None)  # fmt: skip
    with pytest.raises(GeneratorError, match=r"1 T-Rex streams each carrying the address lists \(destinations 65535, "
                                             r"sources 65535\) make an add_stream request of up to 1[0-9]{6} bytes; the "
                                             r"T-Rex server takes at most 999999 bytes"):  # fmt: skip
        gen.validate()
    # latency adds the latency stream, which carries the lists too
    gen = TrexGenerator(params(stream_count=1, destinations={"count": 45000, "seed": 1}, sources={"count": 45000, "seed": 2},
                               backend_options={"ports": ["0000:03:00.0"], "latency": True}), None)  # fmt: skip
    assert gen.stream_total() == 2
    with pytest.raises(GeneratorError, match=r"2 T-Rex streams each carrying the address lists \(destinations 45000, "
                                             r"sources 45000\)"):  # fmt: skip
        gen.validate()


@pytest.mark.parametrize(
    "streams, lists, fits",
    [
        (6, {"sources": 1000}, True),  # paper_lb: 1,000 sources
        (6, {"destinations": 4000}, True),  # paper_routing's default
        (6, {"destinations": 20000}, True),  # its sweep's end: the client sends the six streams in two requests
        (1, {"destinations": 65535}, True),
        (1, {"destinations": 65535, "sources": 65535}, False),
        # a message above the client's chunk size (500,000 bytes) goes in a request of its own
        (2, {"destinations": 45000}, True),
        (1, {"destinations": 45000, "sources": 45000}, False),
    ],
)
def test_the_request_size_check(streams, lists, fits):
    drawn = {option: ["%d.%d.%d.%d" % (100 + i % 100, i >> 16 & 255, i >> 8 & 255, i & 255) for i in range(n)]
             for option, n in lists.items()}  # fmt: skip
    chunks = trex.rpc_chunks(trex.add_stream_sizes(streams, 64, drawn))
    assert all(c < trex.MAX_RPC_MSG_LEN for c in chunks) is fits
    if fits:
        assert trex.check_request_size(streams, 64, drawn) == max(chunks)
    else:
        with pytest.raises(trex.TrexError, match=r"at most 999999 bytes a request"):
            trex.check_request_size(streams, 64, drawn)


def test_rpc_chunks_follow_the_clients_batching():
    # the client appends messages until their bytes pass 500,000, then sends them as one JSON list ("[a, b]")
    assert trex.rpc_chunks([100]) == [102]
    assert trex.rpc_chunks([300000, 300000, 100]) == [600004, 102]
    assert trex.rpc_chunks([500000, 1]) == [500005]
    assert trex.value_list_json_len(["1.2.3.4", "10.0.0.1"]) == len(json.dumps([16909060, 167772161]))
    assert trex.ipv4_number("255.255.255.255") == 2**32 - 1


def test_the_summary_carries_the_lists_as_the_record_keeps_them():
    described = {"count": 3, "seed": 1, "within": ["1.0.0.0-223.255.255.255"], "exclude": [], "drawn": True,
                 "sha256": "ab" * 32, "first": ["1.2.3.4"]}  # fmt: skip
    final = {"sent": 1, "elapsed_s": 1.0, "pps": 1, "ports": {}, "tx_ports": [0]}
    summary = trex.generator_summary(final, [], [], {"destinations": described})
    assert summary["destinations"] == described and "sources" not in summary
    assert "destinations" not in trex.generator_summary(final, [], [], {})

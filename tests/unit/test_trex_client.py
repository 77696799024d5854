"""The T-Rex pieces against the real stateless client: PyPI lbr-trex-client 3.4.0 (requirements-test.txt).

That package is trex-core v3.04's client repackaged: its interactive/ (trex.stl, trex.common, trex.utils, ...) and
stf/ trees are byte-identical to scripts/automation/trex_control_plane/{interactive,stf} at the v3.04 tag (only
examples/ and unit tests left out), and its external_libs/ holds v3.04's texttable 0.8.4, pyyaml 3.11, scapy 2.4.3,
pyzmq-ctypes (with its libzmq.so builds), simpy 3.0.10, trex-openssl (libssl/libcrypto 1.1), dpkt 1.9.1, repoze,
simple_enum and jsonrpclib-pelix 0.4.1 unchanged (docs/TREX.md). So these tests run the client a v3.04 install
runs, without a server: profiles through the real STLProfile.load_py, multipliers through the real
decode_multiplier, and the runner's error paths through the real STLClient. What needs a server stays on the test
double (test_trex_runner.py).

The client runs in a child interpreter (fixtures/trex/real_client_probe.py, the runner): trex/__init__.py swaps
its bundled yaml and scapy into sys.modules, which must not happen inside pytest.
"""

import ast
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _trex as trex
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.trex import TrexGenerator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = os.path.join(ROOT, "roles", "trex", "files")
RUNNER = os.path.join(FILES, "xdplab-trex-run")
PROBE = os.path.join(ROOT, "tests", "unit", "fixtures", "trex", "real_client_probe.py")
SPEC = importlib.util.find_spec("lbr_trex_client")  # found, not imported: see the module docstring
CLIENT = os.path.dirname(SPEC.origin) if SPEC else None

pytestmark = pytest.mark.skipif(CLIENT is None, reason="lbr-trex-client is missing: pip install -r requirements-test.txt")

SRC_MAC, DST_MAC = "ec:0d:9a:00:00:11", "ec:0d:9a:00:00:01"
# what T-Rex's scapy 2.4.3 writes into a MAC the profile leaves unset (the stream then takes trex_cfg.yaml's)
SCAPY_DEFAULT_SRC, SCAPY_DEFAULT_DST = "00:00:00:02:00:00", "00:00:00:01:00:00"
# STLStream flags: bit 0 source MAC from the packet, bits 1-2 destination MAC mode (1: from the packet)
SRC_FROM_PKT, DST_FROM_PKT = 1, 1 << 1

PROFILES = [
    ("udp_for_benchmarks.py", {"packet_len": 64, "stream_count": 3, "src_mac": SRC_MAC, "dst_mac": DST_MAC}),
    ("udp_for_benchmarks.py", {"packet_len": 1518, "stream_count": 1}),
    ("udp_for_benchmarks.py", {"packet_len": 128, "stream_count": 2, "src_mac": SRC_MAC}),
    ("udp_multi_ip.py", {"stream_count": 4, "ip_count": 2, "dst_ip": "198.18.0.255", "dst_mac": DST_MAC}),
    ("udp_latency.py", {"stream_count": 2, "pg_id": 5, "latency_pps": 100}),
    ("udp_latency.py", {"stream_count": 2, "pg_id": 5, "latency_pps": 100, "load_pps": 1000000}),
    ("udp_latency.py", {"stream_count": 2, "load_pps": 0}),
    ("udp_for_benchmarks.py", {"packet_len": 40}),
]
# the generator backend's runs: (profile, TrexGenerator params) -> the tunables it passes (backend_tunables)
BACKEND_CASES = [
    ("udp_for_benchmarks.py", {"stream_count": 6, "rate_pps": 0}),
    ("udp_latency.py", {"stream_count": 2, "packet_len": 128, "rate_pps": 1000, "latency": True}),
]


def backend_tunables(packet_len=64, stream_count=1, rate_pps=0, latency=False):
    """The tunables of TrexGenerator.command() as the runner reads them back (tunables_of: key=value strings)."""
    params = {"run_dir": "/nonexistent", "name": "t", "interface": "0", "src_mac": SRC_MAC, "dst_mac": DST_MAC,
              "src_ip": "198.18.0.1", "dst_ip": "198.18.0.2", "packet_len": packet_len, "stream_count": stream_count,
              "port_base": 12, "queues": 1, "duration": 1, "rate_pps": rate_pps,
              "backend_options": {"latency": latency, "latency_pps": 1000.0}}  # fmt: skip
    gen = TrexGenerator(params, None)
    pairs = ["%s=%s" % kv for kv in sorted(gen.tunables().items())]
    return {k.strip(): v.strip() for k, v in (pair.split("=", 1) for pair in pairs)}


# what parse_mult accepts (then normalized) and strings it refuses
ACCEPTED = ["10mpps", "10Mpps", " 10mpps ", "100%", "2", "1.5", "500kpps", "1000pps", "40gbps", "25GBPSL1", "8kbps", "3bpsl1"]
# every unit of decode_multiplier's grammar: none, %, and [k|m|g] pps/bps/bpsl1 (1gpps was refused here)
ACCEPTED += ["7" + unit for unit in ["", "%"] + [p + kind for p in ("", "k", "m", "g") for kind in ("pps", "bps", "bpsl1")]]
REFUSED_BY_BOTH = ["fast", "10 mpps", "-1", "10mbit", "1e6pps", "", "1.", "mpps"]
# refused here although decode_multiplier takes them: no traffic, or more than the line
REFUSED_HERE_ONLY = ["0", "0mpps", "101%"]


def mac(text):
    return bytes.fromhex(text.replace(":", ""))


def csum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def expected_frame(packet_len, dport, dst_ip="198.18.0.2", src_mac=SCAPY_DEFAULT_SRC, dst_mac=SCAPY_DEFAULT_DST):
    """The frame xdplab wants on the wire (without FCS), built from the RFCs here, not with scapy."""
    src, dst = bytes([198, 18, 0, 1]), bytes(int(x) for x in dst_ip.split("."))
    payload = b"x" * (packet_len - 4 - 14 - 20 - 8)
    udp_len = 8 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", 9, dport, udp_len, 0) + payload
    udp_sum = csum(src + dst + struct.pack("!BBH", 0, 17, udp_len) + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", udp_sum) + udp[8:]
    return mac(dst_mac) + mac(src_mac) + b"\x08\x00" + ip + udp


@pytest.fixture(scope="module")
def lib_dir(tmp_path_factory):
    """The runner's lib dir as the role lays it out: xdplab_trex.py (module_utils/_trex.py) and profiles/."""
    lib = tmp_path_factory.mktemp("lib") / "trex"
    shutil.copytree(os.path.join(FILES, "profiles"), lib / "profiles")
    shutil.copy(os.path.join(ROOT, "plugins", "module_utils", "_trex.py"), lib / "xdplab_trex.py")
    return lib


def runner_client_calls():
    """The client calls in the runner's source: {"STLClient.start": [(positional count, [keywords]), ...], ...}."""
    with open(RUNNER) as f:
        tree = ast.parse(f.read())
    calls = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        if isinstance(func.value, ast.Name) and func.value.id == "client":
            name = "STLClient." + func.attr
        elif isinstance(func.value, ast.Name) and func.value.id == "api" and func.attr == "STLClient":
            name = "STLClient"
        elif isinstance(func.value, ast.Attribute) and func.value.attr == "STLProfile":
            name = "STLProfile." + func.attr
        else:
            continue
        calls.setdefault(name, []).append((len(node.args), sorted(k.arg for k in node.keywords)))
    return calls


@pytest.fixture(scope="module")
def real(lib_dir):
    """One child interpreter: every profile of PROFILES through STLProfile.load_py, every multiplier decoded."""
    mults = sorted({trex.normalize_mult(m) for m in ACCEPTED} | set(ACCEPTED + REFUSED_BY_BOTH + REFUSED_HERE_ONLY))
    profiles = PROFILES + [(name, backend_tunables(**options)) for name, options in BACKEND_CASES]
    request = {"lib_dir": str(lib_dir), "profiles": profiles, "mults": mults, "signatures": sorted(runner_client_calls())}
    res = subprocess.run([sys.executable, PROBE], input=json.dumps(request), capture_output=True, text=True, timeout=60,
                         env=client_env(), check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    answer = json.loads(res.stdout)
    assert answer["client"] == CLIENT
    return answer


def client_env(**over):
    env = {k: v for k, v in os.environ.items() if k != "TREX_EXT_LIBS"}
    env.update(over)
    return env


# -- profiles through the real STLProfile.load_py -------------------------------------------------------
def test_the_papers_profile_frames_byte_for_byte(real):
    streams = real["profiles"][0]["streams"]
    assert len(streams) == 3
    for i, s in enumerate(streams):
        assert bytes.fromhex(s["bytes"]) == expected_frame(64, 12 + i, src_mac=SRC_MAC, dst_mac=DST_MAC)
        assert s["pkt_len_with_fcs"] == 64 and s["flags"] == SRC_FROM_PKT | DST_FROM_PKT
        # equal shares: the start multiplier sets the total
        assert s["mode"] == "continuous" and s["rate"] == {"type": "pps", "value": 1}
    # the largest frame, both MACs from trex_cfg.yaml (flags 0): T-Rex replaces scapy's defaults
    (big,) = real["profiles"][1]["streams"]
    assert bytes.fromhex(big["bytes"]) == expected_frame(1518, 12) and big["flags"] == 0


def test_a_source_mac_alone_is_the_frames_source(real):
    # issue 13 item 4: with src_mac and no dst_mac the frame had scapy's 00:00:00:02:00:00 as its source
    for i, s in enumerate(real["profiles"][2]["streams"]):
        assert bytes.fromhex(s["bytes"]) == expected_frame(128, 12 + i, src_mac=SRC_MAC)
        assert s["flags"] == SRC_FROM_PKT  # the destination still comes from trex_cfg.yaml


def test_multi_ip_profile_varies_the_destination(real):
    streams = real["profiles"][3]["streams"]
    dsts = ["198.18.0.255", "198.18.1.0", "198.18.0.255", "198.18.1.0"]
    for i, (s, dst) in enumerate(zip(streams, dsts)):
        assert bytes.fromhex(s["bytes"]) == expected_frame(64, 12 + i, dst_ip=dst, dst_mac=DST_MAC)
        assert s["flags"] == DST_FROM_PKT


def test_latency_profile_streams_and_rates(real):
    # default: the load streams at 1 pps each (the multiplier scales them), the latency stream fixed at latency_pps
    load_a, load_b, lat = real["profiles"][4]["streams"]
    assert [s["rate"] for s in (load_a, load_b)] == [{"type": "pps", "value": 1}] * 2
    assert [s["flow_stats"]["enabled"] for s in (load_a, load_b)] == [False, False]
    assert lat["rate"] == {"type": "pps", "value": 100.0}
    assert lat["flow_stats"]["rule_type"] == "latency" and lat["flow_stats"]["stream_id"] == 5
    # the latency stream is flow port_base + stream_count, a flow of its own
    assert bytes.fromhex(lat["bytes"]) == expected_frame(64, 14)
    # load_pps: absolute shares (for the raw multiplier "1"); load_pps 0: the latency stream alone
    assert [s["rate"]["value"] for s in real["profiles"][5]["streams"]] == [500000.0, 500000.0, 100.0]
    (only,) = real["profiles"][6]["streams"]
    assert only["flow_stats"]["rule_type"] == "latency" and only["rate"]["value"] == 1000.0


def test_a_bad_tunable_is_the_profiles_message_through_load_py(real):
    error = real["profiles"][7]["error"]
    assert error.startswith("TRexError") and "packet_len=40 is outside 64..1518 (frame length with FCS)" in error


def test_the_runners_client_calls_fit_the_real_clients_signatures(real):
    # the test double accepts any keyword (**_): this holds the runner to the real STLClient's API
    calls = runner_client_calls()
    assert {"STLClient", "STLClient.start", "STLClient.get_pgid_stats", "STLProfile.load_py"} <= set(calls)
    for name, uses in calls.items():
        params = real["signatures"][name]
        named = [p for p in params if not p.startswith("*")]
        for positional, keywords in uses:
            assert positional <= len(named) or "*args" in params, (name, positional, params)
            # load_py takes tunables through **kwargs (the profile tests above show they reach get_streams)
            assert set(keywords) <= set(named) or any(p.startswith("**") for p in params), (name, keywords, params)


def test_the_backends_tunables_build_the_frames_it_asks_for(real):
    # what the generator backend puts on the runner's command line (--tunable k=v, strings), through load_py
    drop, latency_only = real["profiles"][len(PROFILES) :]
    assert len(drop["streams"]) == 6
    for i, s in enumerate(drop["streams"]):
        assert bytes.fromhex(s["bytes"]) == expected_frame(64, 12 + i, src_mac=SRC_MAC, dst_mac=DST_MAC)
        assert s["flags"] == SRC_FROM_PKT | DST_FROM_PKT and s["rate"] == {"type": "pps", "value": 1}
    # latency_pps >= rate_pps: every frame is a latency frame, at the trial's rate (started with the raw "1")
    (only,) = latency_only["streams"]
    assert only["flow_stats"]["rule_type"] == "latency" and only["flow_stats"]["stream_id"] == 7
    assert only["rate"] == {"type": "pps", "value": 1000.0}
    assert bytes.fromhex(only["bytes"]) == expected_frame(128, 12 + 2, src_mac=SRC_MAC, dst_mac=DST_MAC)


# -- multipliers against the real decode_multiplier -------------------------------------------------------
REAL_TYPE = {"": "raw", "%": "percentage"}


def real_type(unit):
    if unit in REAL_TYPE:
        return REAL_TYPE[unit]
    return "pps" if unit.endswith("pps") else ("bpsl1" if unit.endswith("bpsl1") else "bps")


@pytest.mark.parametrize("mult", ACCEPTED)
def test_an_accepted_multiplier_reaches_the_client_as_it_decodes_it(real, mult):
    value, unit = trex.parse_mult(mult)
    decoded = real["mults"][trex.normalize_mult(mult)]
    assert decoded is not None
    assert decoded["type"] == real_type(unit)
    assert decoded["value"] == pytest.approx(value * trex.MULT_SCALE[unit])


def test_the_given_spelling_would_be_refused_by_the_client(real):
    # issue 13 item 3: "10Mpps" passed on as given made start() raise TRexArgumentError after the ports were reset
    assert real["mults"]["10Mpps"] is None and real["mults"][" 10mpps "] is None and real["mults"]["25GBPSL1"] is None
    assert trex.normalize_mult("10Mpps") == "10mpps" and trex.mult_for(0, "10Mpps") == "10mpps"


@pytest.mark.parametrize("mult", REFUSED_BY_BOTH)
def test_a_refused_multiplier_is_refused_by_the_client_too(real, mult):
    assert real["mults"][mult] is None
    with pytest.raises(trex.TrexError):
        trex.parse_mult(mult)


@pytest.mark.parametrize("mult", REFUSED_HERE_ONLY)
def test_stricter_than_the_client_on_no_traffic_and_over_line_rate(real, mult):
    assert real["mults"][mult] is not None
    with pytest.raises(trex.TrexError, match=r"greater than zero|cannot exceed 100%"):
        trex.parse_mult(mult)


# -- the runner with the real client, no server ------------------------------------------------------------
def release(tmp_path, external_libs=True):
    """A v3.04 release's layout around the packaged client: <dir>/automation/trex_control_plane/interactive and
    <dir>/external_libs. trex/__init__.py is a copy (it finds external_libs four directories up from its real path),
    everything else links to the package."""
    trex_dir = tmp_path / "v3.04"
    interactive = trex_dir / "automation" / "trex_control_plane" / "interactive"
    (interactive / "trex").mkdir(parents=True)
    for entry in os.listdir(os.path.join(CLIENT, "interactive", "trex")):
        source = os.path.join(CLIENT, "interactive", "trex", entry)
        if entry == "__init__.py":
            shutil.copy(source, interactive / "trex" / entry)
        elif entry != "__pycache__":
            os.symlink(source, interactive / "trex" / entry)
    os.symlink(os.path.join(CLIENT, "interactive", "trex_stl_lib"), interactive / "trex_stl_lib")
    if external_libs:
        os.symlink(os.path.join(CLIENT, "external_libs"), trex_dir / "external_libs")
    (trex_dir / "t-rex-64").write_text("#!/bin/sh\nexit 1\n")
    return trex_dir


def run_runner(trex_dir, lib_dir, *args):
    cmd = [sys.executable, RUNNER, args[0], "--trex-dir", str(trex_dir), "--lib-dir", str(lib_dir), *args[1:]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=client_env(), check=False)


def closed_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_runner_with_no_server_fails_with_one_json_error(tmp_path, lib_dir):
    port = closed_port()
    res = run_runner(release(tmp_path), lib_dir, "run", "--sync-port", str(port), "--async-port", str(closed_port()),
                     "--mult", "10Mpps", "--duration", "1", "--tunable", "stream_count=6")  # fmt: skip
    assert res.returncode == 3, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr
    error = json.loads(lines[0])
    assert error["type"] == "error"
    # the real client's own words (trex/common/trex_conn.py), behind the runner's
    expected = "T-Rex run failed: TRexError: *** [RPC] - Failed to get server response from tcp://127.0.0.1:%d" % port
    assert error["message"] == expected


def test_runner_without_external_libs_says_so_in_a_json_error(tmp_path, lib_dir):
    # issue 13 item 7: the client's bare Exception for a missing external_libs was a traceback and exit 1
    res = run_runner(release(tmp_path, external_libs=False), lib_dir, "ping")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    error = json.loads(res.stdout.splitlines()[-1])
    assert error["type"] == "error"
    where = trex.client_path(str(tmp_path / "v3.04"))
    assert error["message"].startswith("cannot import the T-Rex stateless client from %s" % where)
    assert "external_libs" in error["message"] and "Could not determine path of external_libs" in error["message"]


# -- latency over the measured period, from the real client's readings --------------------------------------------
PGID_PROBE = os.path.join(ROOT, "tests", "unit", "fixtures", "trex", "real_client_pgid_probe.py")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "trex")
# the runner's calls: one reading before the clear after the warm-up, one per interval, one at the end
RUNNER_STEPS = [["get", "at_clear"], ["clear", "at_clear"], ["get", "interval"], ["get", "final"]]
# what the runner did before: the clear, then one reading at the end
ONE_READING = [["clear", "at_clear"], ["get", "final"]]


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def pgid_readings():
    """The real client's get_pgid_stats() for the server replies of get_pgid_stats_server_replies.json, in the
    runner's order and in the one-reading order, through a JSON round trip as the runner's output has them."""
    server = fixture("get_pgid_stats_server_replies.json")
    request = {"pg_id": server["pg_id"], "replies": server["replies"],
               "runs": {"runner": RUNNER_STEPS, "one_reading": ONE_READING}}  # fmt: skip
    res = subprocess.run([sys.executable, PGID_PROBE], input=json.dumps(request), capture_output=True, text=True,
                         timeout=60, env=client_env(), check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    answer = json.loads(res.stdout)
    assert answer["client"] == CLIENT
    return answer["runs"]


def test_the_real_client_makes_the_run_fixture_from_the_servers_replies(pgid_readings):
    # get_pgid_stats_client_run.json (the test double's answers in test_trex_runner) is the real client's output
    assert pgid_readings["runner"] == fixture("get_pgid_stats_client_run.json")
    start, _interval, end = pgid_readings["runner"]
    lat = end["latency"]["7"]["latency"]
    # the client makes the legacy histogram relative to the clear (warm-up's 900 µs frame gone) and keeps total_min
    # global (the warm-up's 6 µs), and after a clear its total_max is the largest last_max it read (130 at the
    # interval), not the server's 900; the HdrHistogram it passes on untouched (cumulative)
    assert lat["histogram"] == {"0": 800, "10": 150, "40": 45, "100": 5}
    assert lat["total_min"] == 6 and lat["total_max"] == 130
    assert lat["hdrh"] == fixture("get_pgid_stats_server_replies.json")["replies"]["final"]["latency"]["7"]["lat"]["hdrh"]
    assert start["latency"]["7"]["latency"]["total_max"] == 900
    # read once at the end (the runner before this fix), total_max is only the last period's maximum
    assert pgid_readings["one_reading"][0]["latency"]["7"]["latency"]["total_max"] == 40


def test_latency_is_over_the_measured_period_from_the_hdr_histograms_difference(pgid_readings):
    # issue 13 item 9: the HdrHistogram counts the warm-up too (1100 frames, max 900 µs) while the flow counters are
    # relative (1000): the measured period is the end's histogram less the one read before the clear
    start, _interval, end = pgid_readings["runner"]
    lat = trex.latency_summary(end, 7, 0, 1, start=start)
    assert lat["tx_pkts"] == lat["rx_pkts"] == lat["samples"] == 1000
    assert lat["percentiles_from"] == "hdrh" and lat["min_max_from"] == "hdrh"
    assert lat["percentiles_us"] == {"p50": 8, "p90": 15, "p99": 40, "p99_9": 130}
    assert (lat["min_us"], lat["max_us"], lat["mean_us"]) == (8.0, 130.0, 11.1)
    assert lat["share_below_us"] == {"10": 80.0, "100": 99.5}
    assert lat["average_us"] == 10.0  # T-Rex's low-pass filtered value, kept as it is, beside the mean
    # decoded on the controller instead (the runner's host without hdrhistogram): the same numbers
    undecoded = dict(lat, percentiles_from="histogram_bucket_bounds", samples=0)
    assert trex.with_hdrh(undecoded) == lat
    # ... with the percentiles the runner was asked for (it filled their keys from the legacy histogram)
    asked = trex.latency_summary(end, 7, 0, 1, percentiles=[50, 99.99], below_us=[20], start=start)
    decoded = trex.with_hdrh(dict(asked, percentiles_from="histogram_bucket_bounds"))
    assert decoded["percentiles_us"] == {"p50": 8, "p99_99": 130} and decoded["share_below_us"] == {"20": 95.0}


def test_latency_without_the_hdr_histogram_says_what_min_and_max_are(pgid_readings):
    start, _interval, end = json.loads(json.dumps(pgid_readings["runner"]))
    for reading in (start, end):
        del reading["latency"]["7"]["latency"]["hdrh"]
    lat = trex.latency_summary(end, 7, 0, 1, start=start)
    assert lat["min_max_from"] == "trex_totals" and lat["percentiles_from"] == "histogram_bucket_bounds"
    # min: T-Rex's total_min since the stream started (the warm-up's 6 µs); max: the largest sampled last_max
    assert (lat["min_us"], lat["max_us"]) == (6.0, 130.0)
    assert lat["samples"] == 1000 and lat["percentiles_us"]["p99"] == 50 and "hdrh" not in lat


def key_paths(reading, pg_id):
    """The key paths of a get_pgid_stats() output, with its pg id and histogram buckets named generically."""
    paths = set()

    def walk(value, path):
        if not isinstance(value, dict):
            paths.add(path)
            return
        for key, inner in value.items():
            name = "<pg>" if str(key) == str(pg_id) else ("<bucket>" if path[-1:] == ("histogram",) else str(key))
            walk(inner, path + (name,))

    walk(reading, ())
    return paths


def test_the_latency_fixture_of_the_test_double_has_the_real_clients_keys(pgid_readings):
    real = key_paths(pgid_readings["runner"][-1], 7)
    # get_pgid_stats_latency.json (a server without --hdrh): the real client's keys, less hdrh
    assert key_paths(fixture("get_pgid_stats_latency.json"), 10) == real - {("latency", "<pg>", "latency", "hdrh")}

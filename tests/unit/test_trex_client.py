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
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import address_lists
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.trex import TrexGenerator
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.xdp_live import write_list

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


def expected_frame(packet_len, dport, dst_ip="198.18.0.2", src_mac=SCAPY_DEFAULT_SRC, dst_mac=SCAPY_DEFAULT_DST,
                   src_ip="198.18.0.1", udp_checksum=True):  # fmt: skip
    """The frame xdplab wants on the wire (without FCS), built from the RFCs here, not with scapy. udp_checksum=False:
    the UDP checksum is 0 (none), as with an address list."""
    src, dst = bytes(int(x) for x in src_ip.split(".")), bytes(int(x) for x in dst_ip.split("."))
    payload = b"x" * (packet_len - 4 - 14 - 20 - 8)
    udp_len = 8 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", 9, dport, udp_len, 0) + payload
    udp_sum = (csum(src + dst + struct.pack("!BBH", 0, 17, udp_len) + udp) or 0xFFFF) if udp_checksum else 0
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


# -- address lists on T-Rex's field engine (issue 27), through the real client ---------------------------------------
DSTS = ["203.0.113.7", "1.2.3.4", "100.64.0.1"]
SRCS = ["10.1.0.1", "10.1.0.2"]
# the backend's runs with lists: the paper's use cases and the limits (TrexGenerator params beside the defaults)
LIST_BACKEND_CASES = [
    {"stream_count": 6, "destinations": {"count": 4000, "seed": 1}},  # paper_routing's default
    {"stream_count": 6, "sources": {"count": 1000, "seed": 1}},  # paper_lb's 1,000 clients
    {"stream_count": 6, "destinations": {"count": 20000, "seed": 2}},  # the sweep's end: two requests
    {"stream_count": 1, "destinations": {"count": 65535, "seed": 3}},  # the field engine's most
    # the largest frame, both lists, and the latency stream carrying them too
    {
        "stream_count": 1,
        "packet_len": 1518,
        "destinations": {"count": 9000, "seed": 4},
        "sources": {"count": 9000, "seed": 5},
        "backend_options": {"latency": True},
    },
]


def numbers(addresses):
    """IPv4 addresses as the field engine's value_list holds them (big-endian uint32), computed here."""
    return [struct.unpack("!I", bytes(int(x) for x in a.split(".")))[0] for a in addresses]


def list_backend(tmp_path, case):
    """A TrexGenerator for a LIST_BACKEND_CASES entry with its lists drawn and written as start() writes them."""
    over = dict(case)
    opts = dict({"latency_pps": 1000.0}, **over.pop("backend_options", {}))
    params = {"run_dir": str(tmp_path), "name": "t", "interface": "0", "src_mac": SRC_MAC, "dst_mac": DST_MAC,
              "src_ip": "198.18.0.1", "dst_ip": "198.18.0.2", "packet_len": 64, "stream_count": 1, "port_base": 12,
              "queues": 1, "duration": 1, "rate_pps": 0, "backend_options": opts}  # fmt: skip
    params.update(over)
    gen = TrexGenerator(params, None)
    gen.lists = address_lists(params)  # as validate() draws them; the host checks of validate() need an install
    for option, (addrs, _described) in gen.lists.items():
        write_list(gen.run.list_path(option), addrs)
    return gen


@pytest.fixture(scope="module")
def real_lists(lib_dir, tmp_path_factory):
    """The profiles with address lists through the real load_py and to_json, and the backend's cases through the
    client's own add_stream batching (real_client_probe.py "batches")."""
    tmp = tmp_path_factory.mktemp("lists")
    files = {
        "dst": "# destinations\n" + "\n".join(DSTS) + "\n\n",
        "src": "\n".join(SRCS) + "\n",
        "big": "".join("10.%d.%d.%d\n" % (i >> 16, i >> 8 & 255, i & 255) for i in range(trex.MAX_LIST + 1)),
        "bad": "1.2.3.4\n1.2.3\n",
        "empty": "# nothing\n",
    }
    for name, text in files.items():
        (tmp / name).write_text(text)
    path = {name: str(tmp / name) for name in files}
    gens = [list_backend(tmp / ("case%d" % i), case) for i, case in enumerate(LIST_BACKEND_CASES)]
    tunables = [{k: str(v) for k, v in gen.tunables().items()} for gen in gens]
    profiles = [
        ("udp_for_benchmarks.py", {"stream_count": 2, "dst_mac": DST_MAC, "dst_list": path["dst"], "src_list": path["src"]}),
        ("udp_latency.py", {"stream_count": 1, "pg_id": 5, "latency_pps": 100, "dst_list": path["dst"]}),
        ("udp_multi_ip.py", {"stream_count": 2, "src_list": path["src"]}),
        ("udp_for_benchmarks.py", {"dst_list": path["big"]}),
        ("udp_for_benchmarks.py", {"dst_list": path["bad"]}),
        ("udp_for_benchmarks.py", {"src_list": path["empty"]}),
        ("udp_for_benchmarks.py", {"dst_list": str(tmp / "missing")}),
        ("udp_for_benchmarks.py", tunables[0]),
    ]
    request = {"lib_dir": str(lib_dir), "profiles": profiles, "mults": [], "batches": [("udp_for_benchmarks.py", t)
               if not gen.opts["latency"] else ("udp_latency.py", t) for gen, t in zip(gens, tunables)]}  # fmt: skip
    res = subprocess.run([sys.executable, PROBE], input=json.dumps(request), capture_output=True, text=True, timeout=300,
                         env=client_env(), check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    answer = json.loads(res.stdout)
    answer["gens"] = gens
    return answer


def list_program(fields):
    """The field engine's instructions the client sends for xdplab's lists ({"dst": [...], "src": [...]})."""
    out = []
    for field in ("dst", "src"):
        if field in fields:
            out.append({"type": "flow_var", "name": "xdplab_" + field, "size": 4, "op": "inc", "next_var": None,
                        "split_to_cores": True, "value_list": numbers(fields[field]), "step": 1})  # fmt: skip
    # the client puts the variables first, then the writes (offsets: Ether 14 + IP.dst 16 / IP.src 12)
    for field, offset in (("dst", 30), ("src", 26)):
        if field in fields:
            out.append({"type": "write_flow_var", "name": "xdplab_" + field, "pkt_offset": offset, "add_value": 0,
                        "is_big_endian": True})  # fmt: skip
    out.append({"type": "fix_checksum_ipv4", "pkt_offset": 14})
    return out


def test_a_list_is_a_flow_variable_over_it_written_to_the_ip_header(real_lists):
    streams = real_lists["profiles"][0]["streams"]
    assert len(streams) == 2
    for i, s in enumerate(streams):
        # round robin from the first entry (op inc, in the file's order), split over T-Rex's cores (split_to_cores)
        assert s["vm"]["instructions"] == list_program({"dst": DSTS, "src": SRCS})
        # the frame before the first write is the lists' first entries, with the IPv4 checksum right and no UDP
        # checksum (the field engine changes the addresses the UDP checksum would cover)
        frame = expected_frame(64, 12 + i, dst_ip=DSTS[0], src_ip=SRCS[0], dst_mac=DST_MAC, udp_checksum=False)
        assert bytes.fromhex(s["bytes"]) == frame and s["flags"] == DST_FROM_PKT


def test_the_latency_stream_walks_the_list_too(real_lists):
    load, lat = real_lists["profiles"][1]["streams"]
    assert load["vm"]["instructions"] == lat["vm"]["instructions"] == list_program({"dst": DSTS})
    assert lat["flow_stats"]["rule_type"] == "latency" and lat["rate"] == {"type": "pps", "value": 100.0}
    assert bytes.fromhex(lat["bytes"]) == expected_frame(64, 13, dst_ip=DSTS[0], udp_checksum=False)


def test_a_source_list_leaves_multi_ips_destinations_alone(real_lists):
    streams = real_lists["profiles"][2]["streams"]
    for i, s in enumerate(streams):
        assert s["vm"]["instructions"] == list_program({"src": SRCS})
        assert bytes.fromhex(s["bytes"]) == expected_frame(64, 12 + i, dst_ip="198.18.0.%d" % (2 + i), src_ip=SRCS[0],
                                                           udp_checksum=False)  # fmt: skip


def test_without_a_list_there_is_no_field_engine_program(real):
    # the other experiments' frames do not change: no instructions, the UDP checksum kept
    for answer in real["profiles"][:3]:
        assert all(s["vm"]["instructions"] == [] for s in answer["streams"])


def test_bad_list_files_are_the_profiles_message(real_lists):
    big, bad, empty, missing = (p.get("error", "") for p in real_lists["profiles"][3:7])
    assert "holds %d addresses; T-Rex's field engine takes at most %d in a list" % (trex.MAX_LIST + 1, trex.MAX_LIST) in big
    assert "line 2: '1.2.3' is not an IPv4 address" in bad
    assert "holds no address" in empty and "cannot be read" in missing


def test_the_backends_drawn_list_is_the_value_list_in_its_order(real_lists):
    gen = real_lists["gens"][0]
    dsts, described = gen.lists["destinations"]
    streams = real_lists["profiles"][7]["streams"]
    assert len(streams) == 6 and len(dsts) == 4000 and described["first"] == dsts[:5]
    for s in streams:
        assert s["vm"]["instructions"] == list_program({"dst": dsts})
        assert bytes.fromhex(s["bytes"])[30:34] == bytes(int(x) for x in dsts[0].split("."))


def test_the_request_size_bound_holds_against_the_clients_own_batching(real_lists):
    for gen, batch in zip(real_lists["gens"], real_lists["batches"]):
        lists = {option: addrs for option, (addrs, _d) in gen.lists.items()}
        estimate = trex.add_stream_sizes(gen.stream_total(), gen.p["packet_len"], lists)
        assert len(batch["messages"]) == len(estimate) == gen.stream_total()
        for real_msg, bound in zip(batch["messages"], estimate):
            # a bound, and a close one: it refuses nothing that fits by more than the overhead allowance
            assert real_msg <= bound < real_msg + trex.ADD_STREAM_OVERHEAD
        chunks = trex.rpc_chunks(estimate)
        assert len(chunks) == len(batch["requests"])
        assert all(real <= bound for real, bound in zip(batch["requests"], chunks))
        # every case here fits the server's request limit, and the check lets it through
        assert max(batch["requests"]) <= trex.check_request_size(gen.stream_total(), gen.p["packet_len"], lists)
        assert max(batch["requests"]) < trex.MAX_RPC_MSG_LEN
    # 20,000 destinations in six streams: the client sends them in two requests, each under the server's limit
    assert len(real_lists["batches"][2]["requests"]) == 2

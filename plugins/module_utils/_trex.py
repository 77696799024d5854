# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""T-Rex (stateless) helpers shared by the runner, the module trex_traffic and the generator backend.

Pure Python, no Ansible and no T-Rex import: the role xdplab.testbed.trex installs this file next to
the runner script (xdplab-trex-run), which imports it to turn the stateless client's statistics into
JSON lines, and the controller side (module, backend) uses the same functions to build the runner's
command line and read its output.

Shapes read here are those of the T-Rex stateless Python client (trex.stl.api.STLClient):

- ``get_stats()``: ``{<port id>: {opackets, ipackets, obytes, ibytes, oerrors, ierrors, tx_pps, rx_pps,
  tx_bps, rx_bps, tx_bps_L1, rx_bps_L1, tx_util, rx_util}, 'total': {same keys}, 'global': {tx_pps,
  rx_pps, rx_drop_bps, queue_full, cpu_util, ...}, 'flow_stats': ..., 'latency': ...}``
  (trex/common/stats/trex_port_stats.py PortStats.to_dict, trex_global_stats.py GlobalStats.to_dict).
  Every port of the server is in it whatever ``ports`` asks for, and ``total`` sums them all
  (trex/common/trex_client.py _get_stats_common), not only the run's TX and RX ports.
- ``get_pgid_stats([pg_id])``: ``{'latency': {pg_id: {'latency': {average, jitter, total_max, total_min,
  last_max, histogram: {bucket_start_usec: count}, hdrh (with --hdrh)}, 'err_cntrs': {dropped, out_of_order, dup,
  seq_too_high, seq_too_low}}, 'global': {old_flow, bad_hdr}}, 'flow_stats': {pg_id: {tx_pkts: {port:
  n, 'total': n}, rx_pkts: ..., tx_pps, rx_pps, ...}}}`` (trex/stl/trex_stl_stats.py CPgIdStats).

After a JSON round trip the integer keys (port ids, pg ids, histogram buckets) become strings; every
reader here accepts both.
"""

from __future__ import annotations

import math
import re
import socket

PCI_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
# decode_multiplier's grammar (trex/utils/parsing_opts.py): a number, then %, or k/m/g (optional) and pps, bps or bpsl1
MULT_RE = re.compile(r"^(?P<value>[0-9]+(?:\.[0-9]+)?)(?P<unit>%|[kmg]?(?:bpsl1|pps|bps))?$")
MULT_SCALE = {"": 1.0, "%": 1.0}
MULT_SCALE.update({prefix + kind: scale for prefix, scale in (("", 1.0), ("k", 1e3), ("m", 1e6), ("g", 1e9))
                   for kind in ("pps", "bps", "bpsl1")})  # fmt: skip
PORT_KEYS = ("opackets", "ipackets", "obytes", "ibytes", "oerrors", "ierrors",
             "tx_pps", "rx_pps", "tx_bps", "rx_bps", "tx_bps_L1", "rx_bps_L1", "tx_util", "rx_util")  # fmt: skip
COUNTER_KEYS = ("opackets", "ipackets", "obytes", "ibytes", "oerrors", "ierrors")
DEFAULT_PERCENTILES = (50.0, 90.0, 99.0, 99.9)
DEFAULT_BELOW_US = (10, 100)
# what the runner's summary adds beyond the common generator summary (kept under summary.trex)
TREX_EXTRA = ("received", "rx_pps", "ports", "total", "drops", "global", "mult", "latency", "stopped_by", "warmup_s",
              "tx_ports", "rx_ports", "profile", "tunables", "warnings")  # fmt: skip
INTERACTIVE_SUBDIR = "automation/trex_control_plane/interactive"
# the file that says "the stateless Python client is here" (releases since v2.5x: trex.stl.api; the
# trex_stl_lib package beside it is only a compatibility alias of trex.stl)
CLIENT_MARKERS = ("trex/stl/api.py",)
# the v2.4x layout (automation/trex_control_plane/stl/trex_stl_lib/api.py), refused by check_install
V24_CLIENT = "automation/trex_control_plane/stl/trex_stl_lib/api.py"
# the oldest release the profiles and the runner are written for: argv-style tunables in STLProfile.load_py
# and the ZMQ protocol of 2.88 (trex-core doc/release_notes.asciidoc, "Release 2.88")
MIN_VERSION = (2, 88)
# newest Python each release's client imports on (read in trex-core): up to v3.07 trex/stl/trex_stl_streams.py
# does `import imp` (gone in Python 3.12); v3.08 (commit 8d133ac9 "python3.12 support") imports importlib, but
# its bundled scapy 2.4.3 (scapy/themes.py) still does `import cgi` (gone in Python 3.13)
PYTHON_MAX = (((3, 8), (3, 12)), ((0, 0), (3, 11)))
VERSION_RE = re.compile(r"^v(?P<major>[0-9]+)\.(?P<minor>[0-9]+)$")


# -- address lists on T-Rex's field engine (issue 27) ---------------------------------------------------------------
# A value_list flow variable holds at most 65,535 values: trex-core v3.04 src/stx/stl/trex_stl_rpc_cmds.cpp
# check_value_list ("VM: value_list size is bigger than" UINT16_MAX; the data path keeps the list's size and index in
# uint16_t, trex_stl_stream_vm.h StreamDPOpFlowVar*Step) and the client's STLVmFlowVar (get_max_by_size(2)).
MAX_LIST = 65535
# the server refuses a request longer than this, after unzipping (src/rpc-server/trex_rpc_req_resp_server.h
# MAX_RPC_MSG_LEN: "Request is too large (N bytes). Consider splitting to smaller chunks.")
MAX_RPC_MSG_LEN = 999999
# the client sends the add_stream messages of add_streams() in chunks: it appends messages until their JSON passes
# this many bytes, then sends the chunk (interactive/trex/common/trex_req_resp_client.py BatchMessage.invoke)
RPC_CHUNK = 500000
# a bound on one add_stream message's JSON less its packet (base64) and value lists: the JSON-RPC envelope, the
# stream's mode, flags, flow_stats and the VM's other fields (about 700 bytes with the real client v3.04; the tests
# check the bound against it)
ADD_STREAM_OVERHEAD = 2048
# traffic_generator's address-list options, as a run's params and the common summary carry them
LIST_OPTIONS = ("destinations", "sources")


class TrexError(Exception):
    """Bad input or an unusable T-Rex installation; the message says what to do."""


# -- input --------------------------------------------------------------------------------------------
def valid_pci(address):
    """True for a PCI address in the domain:bus:device.function form T-Rex and sysfs use (0000:03:00.0)."""
    return isinstance(address, str) and bool(PCI_RE.match(address))


def normalize_mult(mult):
    """The multiplier as STLClient.start(mult=...) takes it: lowercase, no surrounding blanks ("10Mpps " -> "10mpps").

    The client's decode_multiplier (trex/utils/parsing_opts.py) matches lowercase units only and no blanks;
    pass this string on, not the one given. Raises TrexError like parse_mult.
    """
    text = str(mult).strip().lower()
    parse_mult(text)
    return text


def parse_mult(mult):
    """Split a T-Rex multiplier string ("10mpps", "100%", "2", "40gbps") into (value, unit).

    The unit is "" for a plain factor of the profile's own rate. Case and surrounding blanks are
    forgiven here, so send normalize_mult(mult) to T-Rex. Raises TrexError for anything the T-Rex
    console and STLClient.start(mult=...) would refuse, and for 0 and more than 100%.
    """
    text = str(mult).strip().lower()
    match = MULT_RE.match(text)
    if not match:
        raise TrexError(
            "mult=%r is not a T-Rex multiplier: use a factor (2), a percentage of line rate (100%%), "
            "packets per second (10mpps, 500kpps, 1000pps) or bits per second (40gbps)" % (mult,)
        )
    value = float(match.group("value"))
    unit = match.group("unit") or ""
    if value <= 0:
        raise TrexError("mult=%r must be greater than zero" % (mult,))
    if unit == "%" and value > 100:
        raise TrexError("mult=%r: a percentage of line rate cannot exceed 100%%" % (mult,))
    return value, unit


def mult_pps(mult):
    """Packets per second a multiplier asks for, or None when it is not a pps rate."""
    value, unit = parse_mult(mult)
    return value * MULT_SCALE[unit] if unit.endswith("pps") else None


def mult_for(rate_pps, default_mult):
    """The multiplier for a run: rate_pps > 0 wins (as "<n>pps"), else default_mult (validated)."""
    if rate_pps and rate_pps > 0:
        return "%dpps" % round(rate_pps)
    return normalize_mult(default_mult)


def client_path(trex_dir):
    """Directory to put on sys.path to import the stateless client of a T-Rex install."""
    return "%s/%s" % (trex_dir.rstrip("/"), INTERACTIVE_SUBDIR)


def parse_version(name):
    """(major, minor) of a release name like v3.04, or None for anything else (e.g. a directory not named so)."""
    match = VERSION_RE.match(str(name))
    return (int(match.group("major")), int(match.group("minor"))) if match else None


def python_max(version):
    """The newest Python (major, minor) the client of release `version` ((major, minor)) imports on."""
    for since, newest in PYTHON_MAX:
        if tuple(version) >= since:
            return newest
    return PYTHON_MAX[-1][1]


def check_python(trex_version, python_version, python="python3"):
    """Raise TrexError when T-Rex trex_version (a name like v3.04) cannot run on Python python_version ((3, 12))."""
    version = parse_version(trex_version)
    if version is None:
        return
    newest = python_max(version)
    have = tuple(python_version)[:2]
    if have > newest:
        raise TrexError(
            "T-Rex %s's client does not import on Python %d.%d (%s): releases v2.88..v3.07 run on Python <= 3.11, "
            "v3.08 and newer on Python <= 3.12; set trex_python to such an interpreter (e.g. /usr/bin/python3.11) or pin "
            "a release that fits (trex_version)" % (trex_version, have[0], have[1], python)
        )


def check_install(trex_dir, exists):
    """Raise TrexError unless trex_dir holds t-rex-64 and the stateless client; `exists` is os.path.exists.

    A v2.4x release (client under automation/trex_control_plane/stl/trex_stl_lib) is refused with the reason.
    """
    if exists("%s/%s" % (trex_dir.rstrip("/"), V24_CLIENT)):
        raise TrexError(
            "T-Rex at %s is a v2.4x release (its client is %s/%s): xdplab needs v%d.%d or newer (argv-style "
            "profile tunables, the interactive client layout and ZMQ protocol of 2.88); install the pinned release with "
            "the role xdplab.testbed.trex and point trex_dir at it" % ((trex_dir, trex_dir.rstrip("/"), V24_CLIENT) + MIN_VERSION)
        )
    missing = [p for p in ("%s/t-rex-64" % trex_dir,) if not exists(p)]
    if not any(exists("%s/%s" % (client_path(trex_dir), m)) for m in CLIENT_MARKERS):
        missing.append("%s/{%s}" % (client_path(trex_dir), ",".join(CLIENT_MARKERS)))
    if missing:
        raise TrexError(
            "T-Rex is not installed at %s (missing %s): run the role xdplab.testbed.trex on this host, "
            "or point trex_dir at the installed version" % (trex_dir, ", ".join(missing))
        )


def check_server(server, port, timeout=3.0):
    """Raise TrexError unless something accepts TCP connections on the T-Rex RPC port."""
    try:
        with socket.create_connection((server, int(port)), timeout=timeout):
            return
    except OSError as exc:
        raise TrexError(
            "the T-Rex server at %s:%s is not reachable (%s): start it with the role xdplab.testbed.trex "
            "(systemd unit trex, `systemctl start trex`) or check trex_server/sync_port" % (server, port, exc)
        ) from None


def tunables_args(tunables):
    """The profile tunables as T-Rex >= 2.88 passes them to get_streams(): ["--key", "value", ...]."""
    args = []
    for key in sorted(tunables):
        value = tunables[key]
        if value is None or value == "":
            continue
        args += ["--%s" % key, str(value)]
    return args


# -- address lists on T-Rex ------------------------------------------------------------------------------------------
def ipv4_number(address):
    """The IPv4 address as the field engine's value_list holds it (the client's ipv4_str_to_num: big-endian uint32)."""
    parts = [int(x) for x in str(address).split(".")]
    if len(parts) != 4 or not all(0 <= x <= 255 for x in parts):
        raise TrexError("%r is not an IPv4 address" % (address,))
    return parts[0] << 24 | parts[1] << 16 | parts[2] << 8 | parts[3]


def value_list_json_len(addresses):
    """Bytes of the value_list the client sends for these addresses (json.dumps of the numbers, ", " between)."""
    if not addresses:
        return 0
    return sum(len(str(ipv4_number(a))) for a in addresses) + 2 * (len(addresses) - 1) + 2


def check_list_size(count, what):
    """Raise TrexError when a list is longer than T-Rex's field engine holds (MAX_LIST)."""
    if count > MAX_LIST:
        raise TrexError(
            "%s has %d addresses; T-Rex's field engine holds at most %d in a list (value_list: trex-core "
            "trex_stl_rpc_cmds.cpp check_value_list, UINT16_MAX): lower %s.count to %d or less, or send from xdp_live "
            "(65,536)" % (what, count, MAX_LIST, what, MAX_LIST)
        )


def add_stream_sizes(streams, packet_len, lists):
    """Bound on the JSON bytes of each add_stream message: ``streams`` streams of packet_len-byte frames (with FCS),
    each carrying every list of ``lists`` ({option: addresses})."""
    packet_b64 = 4 * ((packet_len - 4 + 2) // 3)
    one = ADD_STREAM_OVERHEAD + packet_b64 + sum(value_list_json_len(a) for a in lists.values())
    return [one] * streams


def rpc_chunks(sizes):
    """The JSON bytes of each request the client sends for add_stream messages of these sizes (its chunking)."""
    chunks, size, count = [], 0, 0
    for msg in sizes:
        size += msg
        count += 1
        if size > RPC_CHUNK:
            chunks.append(size + 2 * (count - 1) + 2)
            size, count = 0, 0
    if count:
        chunks.append(size + 2 * (count - 1) + 2)
    return chunks


def check_request_size(streams, packet_len, lists):
    """Raise TrexError when the add_stream requests of ``streams`` streams carrying ``lists`` ({option: addresses})
    would pass the server's MAX_RPC_MSG_LEN; the message gives the bytes and what to lower."""
    largest = max(rpc_chunks(add_stream_sizes(streams, packet_len, lists)) or [0])
    if largest > MAX_RPC_MSG_LEN:
        counts = ", ".join("%s %d" % (option, len(a)) for option, a in sorted(lists.items()))
        raise TrexError(
            "%d T-Rex streams each carrying the address lists (%s) make an add_stream request of up to %d bytes; the "
            "T-Rex server takes at most %d bytes a request (trex_rpc_req_resp_server.h MAX_RPC_MSG_LEN): lower the "
            "lists' count or stream_count (every stream carries the whole lists)"
            % (streams, counts, largest, MAX_RPC_MSG_LEN)
        )
    return largest


# -- statistics ---------------------------------------------------------------------------------------
def _key(mapping, key):
    """mapping[key] whether the key is an int or (after JSON) its string form; None if absent."""
    if key in mapping:
        return mapping[key]
    return mapping.get(str(key))


def _num(value):
    try:
        number = float(value)
    except (TypeError, ValueError):  # StatNotAvailable ("N/A") and friends
        return 0.0
    return 0.0 if math.isnan(number) else number


def port_row(port_stats):
    """One port's (or the total's) counters and rates from get_stats(), as plain numbers."""
    row = {}
    for key in PORT_KEYS:
        value = _num((port_stats or {}).get(key))
        row[key] = int(value) if key in COUNTER_KEYS else value
    return row


def port_rows(stats, ports):
    return {int(p): port_row(_key(stats, p)) for p in ports}


def _sum(rows, key):
    return sum(r[key] for r in rows.values())


def interval_record(previous, current, tx_ports, rx_ports, mono, t, dt):
    """One per-second JSON record like xdplab-trafficgen's, from two get_stats() samples."""
    prev_tx = port_rows(previous or {}, tx_ports)
    cur_tx = port_rows(current, tx_ports)
    prev_rx = port_rows(previous or {}, rx_ports)
    cur_rx = port_rows(current, rx_ports)
    sent = max(0, _sum(cur_tx, "opackets") - _sum(prev_tx, "opackets"))
    received = max(0, _sum(cur_rx, "ipackets") - _sum(prev_rx, "ipackets"))
    ports = {}
    for p in sorted(set(tx_ports) | set(rx_ports)):
        row = port_row(_key(current, p))
        ports[str(p)] = {"tx_pps": row["tx_pps"], "rx_pps": row["rx_pps"], "opackets": row["opackets"],
                         "ipackets": row["ipackets"], "oerrors": row["oerrors"], "ierrors": row["ierrors"]}  # fmt: skip
    return {
        "type": "interval",
        "t": round(t, 3),
        "mono": round(mono, 6),
        "interval_s": round(dt, 3),
        "sent": sent,
        "pps": round(sent / dt) if dt > 0 else 0,
        "received": received,
        "rx_pps": round(received / dt) if dt > 0 else 0,
        "ports": ports,
    }


def bucket_range(start):
    """[low, high) microseconds of a T-Rex latency histogram bucket (start 0 is 0..10, 20 is 20..30,
    300 is 300..400, 1000 is 1000..2000), as in the client's stl_flow_latency_stats.py example."""
    start = int(start)
    if start == 0:
        return 0, 10
    return start, start + 10 ** (len(str(start)) - 1)


def histogram_percentiles(histogram, percentiles=DEFAULT_PERCENTILES, below_us=DEFAULT_BELOW_US):
    """Percentiles (µs) and shares below thresholds from a T-Rex latency histogram.

    The histogram counts packets per bucket, so a percentile is known only to its bucket: each is
    reported as the bucket's upper edge (a bound: "p99 <= 20 µs"). A share below a threshold counts the
    buckets that end at or below it (exact when the threshold is a bucket edge, e.g. 10 or 100 µs).
    """
    buckets = sorted((bucket_range(k), int(v)) for k, v in (histogram or {}).items() if int(v) > 0)
    total = sum(count for _low, count in buckets)
    result = {"samples": total, "percentiles_us": {}, "share_below_us": {}}
    if not total:
        return result
    for p in percentiles:
        if not 0 < float(p) <= 100:
            raise TrexError("percentile %r is outside 0..100" % (p,))
        need = math.ceil(total * float(p) / 100.0)
        seen = 0
        for (_low, high), count in buckets:
            seen += count
            if seen >= need:
                result["percentiles_us"]["p%s" % _pct_name(p)] = high
                break
    for limit in below_us:
        below = sum(count for (_low, high), count in buckets if high <= limit)
        result["share_below_us"][str(limit)] = round(100.0 * below / total, 3)
    return result


def _pct_name(p):
    p = float(p)
    return ("%d" % p) if p == int(p) else ("%g" % p).replace(".", "_")


def hdrh_histogram(encoded, start=None):
    """The HdrHistogram of a latency stream's ``hdrh`` (`t-rex-64 --hdrh`: the compressed base64 form of
    hdr_log_encode, values in µs) less ``start``, the same server histogram read earlier; None when the PyPI package
    hdrhistogram is not importable here.

    The server's HdrHistogram counts every frame since the stream started and the client does not make it relative
    after clear_stats (trex/stl/trex_stl_stats.py CPgIdStats.get_stats subtracts only the legacy histogram, the
    flow counters and the error counters), so the measured period is the difference of two readings.
    """
    try:
        from hdrh.histogram import HdrHistogram
    except ImportError:
        return None
    hist = HdrHistogram.decode(encoded)
    if not start:
        return hist
    before = HdrHistogram.decode(start)
    diff = HdrHistogram(hist.lowest_trackable_value, hist.highest_trackable_value, hist.significant_figures)
    for item in hist.get_recorded_iterator():
        count = item.count_at_value_iterated_to - before.get_count_at_value(item.value_iterated_to)
        if count < 0:
            raise TrexError(
                "the latency HdrHistogram at the end counts fewer frames at %d µs than at the start of the measured "
                "period: the latency stream was restarted during the run (another client on these ports?)"
                % item.value_iterated_to
            )
        if count:
            diff.record_value(item.value_iterated_to, count)
    return diff


def hdrh_percentiles(encoded, percentiles=DEFAULT_PERCENTILES, below_us=DEFAULT_BELOW_US, start=None):
    """Percentiles, min, max and mean (µs) and shares below thresholds from T-Rex's HdrHistogram (``hdrh``), over the
    frames recorded since ``start`` (an earlier reading of it; None: since the stream started), or None when the PyPI
    package hdrhistogram is not importable here.

    Unlike the legacy histogram's bucket bounds these are the recorded values to HdrHistogram's precision (T-Rex
    keeps 3 significant digits, src/time_histogram.cpp HDRH_SIGNIFICANT_DIGITS).
    """
    hist = hdrh_histogram(encoded, start)
    if hist is None:
        return None
    total = hist.get_total_count()
    result = {"samples": int(total), "percentiles_us": {}, "share_below_us": {}, "percentiles_from": "hdrh"}
    if not total:
        return result
    result.update(min_us=float(hist.get_min_value()), max_us=float(hist.get_max_value()),
                  mean_us=round(hist.get_mean_value(), 3), min_max_from="hdrh")  # fmt: skip
    for p in percentiles:
        if not 0 < float(p) <= 100:
            raise TrexError("percentile %r is outside 0..100" % (p,))
        result["percentiles_us"]["p%s" % _pct_name(p)] = int(hist.get_value_at_percentile(float(p)))
    for limit in below_us:
        below = sum(item.count_at_value_iterated_to for item in hist.get_recorded_iterator() if item.value_iterated_to <= limit)
        result["share_below_us"][str(limit)] = round(100.0 * below / total, 3)
    return result


def latency_summary(pgid_stats, pg_id, tx_port, rx_port, percentiles=DEFAULT_PERCENTILES, below_us=DEFAULT_BELOW_US,
                    start=None):  # fmt: skip
    """Latency of one flow-stats group over the measured period, from two get_pgid_stats() readings.

    ``pgid_stats`` is the client's reading at the end, after ``clear_stats`` at the start of the measured period;
    ``start`` its reading just before that clear (None: no such reading). What the numbers are (trex-core v3.04
    src/time_histogram.cpp and the client's trex/stl/trex_stl_stats.py CPgIdStats):

    - ``tx_pkts``/``rx_pkts``, ``errors`` and the legacy ``histogram``: the client's, relative to the clear.
    - ``average_us``: T-Rex's low-pass filtered average (each period: 0.5 x the previous value + 0.5 x the period's
      mean), not the mean of the frames. ``mean_us`` is that mean, where the HdrHistogram is there.
    - ``min_us``/``max_us``: with the HdrHistogram (``min_max_from: hdrh``) the measured period's, to its precision.
      Without (``min_max_from: trex_totals``): ``min_us`` is T-Rex's total_min since the stream started, the warm-up
      included (the client keeps it global); ``max_us`` is the client's total_max after a clear, the largest
      ``last_max`` (T-Rex's maximum of its latest sampling period, 0.5 s) among the client's readings since the
      clear, so a lower bound unless the runner read every period (it reads once per interval).
    - percentiles: from the HdrHistogram when the server runs with --hdrh (``percentiles_from: hdrh``; ``hdrh`` keeps
      the encoded histogram at the end, ``hdrh_start`` the one at the clear, the period is their difference), else
      from the legacy histogram, where a percentile is only its bucket's upper edge
      (``percentiles_from: histogram_bucket_bounds``).
    """
    lat_all = (pgid_stats or {}).get("latency") or {}
    group = _key(lat_all, pg_id)
    if not group:
        raise TrexError(
            "no latency statistics for pg_id %s (have %s): the profile must add a stream with "
            "flow_stats=STLFlowLatencyStats(pg_id=%s)" % (pg_id, sorted(str(k) for k in lat_all), pg_id)
        )
    lat = group.get("latency") or {}
    errors = {k: int(_num(v)) for k, v in (group.get("err_cntrs") or {}).items()}
    flow = _key((pgid_stats.get("flow_stats") or {}), pg_id) or {}
    tx = int(_num(_key(flow.get("tx_pkts") or {}, tx_port)))
    rx = int(_num(_key(flow.get("rx_pkts") or {}, rx_port)))
    out = {
        "pg_id": int(pg_id),
        "tx_pkts": tx,
        "rx_pkts": rx,
        "min_us": _num(lat.get("total_min")),
        "average_us": _num(lat.get("average")),
        "max_us": _num(lat.get("total_max")),
        "min_max_from": "trex_totals",
        "jitter_us": _num(lat.get("jitter")),
        "errors": errors,
        "histogram": {str(k): int(v) for k, v in sorted((lat.get("histogram") or {}).items(), key=lambda kv: int(kv[0]))},
    }
    out.update(histogram_percentiles(lat.get("histogram"), percentiles, below_us))
    out["percentiles_from"] = "histogram_bucket_bounds"
    if lat.get("hdrh"):
        out["hdrh"] = lat["hdrh"]
        start_lat = (_key(((start or {}).get("latency") or {}), pg_id) or {}).get("latency") or {}
        if start_lat.get("hdrh"):
            out["hdrh_start"] = start_lat["hdrh"]
        out.update(hdrh_percentiles(lat["hdrh"], percentiles, below_us, out.get("hdrh_start")) or {})
    return out


def _asked(names, default):
    """The percentiles (p50, p99_9) or thresholds ("10") the runner computed, back as numbers (99.9); default if none."""
    values = [float(str(name).lstrip("p").replace("_", ".")) for name in names or ()]
    return values or list(default)


def with_hdrh(latency, percentiles=None, below_us=None):
    """latency_summary's result with the HdrHistogram's percentiles, where the runner's host could not decode it.

    By default the percentiles and thresholds are the ones the runner was asked for (the keys it filled from the
    legacy histogram), else DEFAULT_PERCENTILES/DEFAULT_BELOW_US.
    """
    if not latency or not latency.get("hdrh") or latency.get("percentiles_from") == "hdrh":
        return latency
    if percentiles is None:
        percentiles = _asked(latency.get("percentiles_us"), DEFAULT_PERCENTILES)
    if below_us is None:
        below_us = [int(v) if v == int(v) else v for v in _asked(latency.get("share_below_us"), DEFAULT_BELOW_US)]
    return dict(latency, **(hdrh_percentiles(latency["hdrh"], percentiles, below_us, latency.get("hdrh_start")) or {}))


def run_summary(stats, tx_ports, rx_ports, elapsed_s, info, latency=None, stopped_by="duration"):
    """The runner's final record: totals of the measured period (stats cleared at its start)."""
    tx = port_rows(stats, tx_ports)
    rx = port_rows(stats, rx_ports)
    sent = _sum(tx, "opackets")
    received = _sum(rx, "ipackets")
    all_ports = sorted(set(tx_ports) | set(rx_ports))
    glob = (stats or {}).get("global") or {}
    summary = {
        "type": "summary",
        "sent": sent,
        "received": received,
        "elapsed_s": round(elapsed_s, 3),
        "pps": round(sent / elapsed_s) if elapsed_s > 0 else 0,
        "rx_pps": round(received / elapsed_s) if elapsed_s > 0 else 0,
        "ports": {str(p): port_row(_key(stats, p)) for p in all_ports},
        "total": port_row((stats or {}).get("total")),
        "drops": {
            # frames sent on the TX ports that did not come back on the RX ports (forwarding setups only)
            "not_received": max(0, sent - received) if rx_ports else None,
            "oerrors": sum(r["oerrors"] for r in tx.values()),
            "ierrors": sum(r["ierrors"] for r in rx.values()),
            # T-Rex could not queue frames fast enough (generator-side limit, not the DUT's)
            "queue_full": int(_num(glob.get("queue_full"))),
        },
        "global": {k: _num(glob.get(k)) for k in ("cpu_util", "rx_cpu_util", "bw_per_core", "tx_pps", "rx_pps", "rx_drop_bps")},
        "stopped_by": stopped_by,
    }
    summary.update(info)
    if latency is not None:
        summary["latency"] = latency
    return summary


def generator_summary(final, intervals, command, params):
    """The common generator summary (see generators/__init__.py) from the runner's final record."""
    ports = final.get("ports") or {}
    tx_ports = [int(x) for x in final.get("tx_ports", [])]
    return {
        "backend": "trex",
        "sent": int(final.get("sent", 0)),
        "elapsed_s": float(final.get("elapsed_s", 0.0)),
        "offered_pps": float(final.get("pps", 0)),
        "rate_pps": float(params.get("rate_pps") or 0),
        "packet_len": int(final.get("pkt_len", params.get("packet_len", 0))),
        "stream_count": int(final.get("flows", params.get("stream_count", 0))),
        "queues": int(params.get("queues") or 1),
        # T-Rex's own worker threads are not ours to list; the ports sent on stand in for them
        "threads": [{"port": int(p), "sent": row.get("opackets", 0)} for p, row in sorted(ports.items()) if int(p) in tx_ports],
        "intervals": intervals,
        # delivered: what T-Rex's port put on the wire. refused stays unknown: on veth it counts frames the DUT's
        # ring refused, but a T-Rex port's oerrors are its own TX errors, not the DUT's; the DUT's NIC counters
        # (rx_discards_phy, rx_out_of_buffer) say whether the DUT dropped. oerrors is kept in trex.drops.
        "egress": {"delivered": int(final.get("sent", 0)), "refused": None},
        "version": final.get("version", ""),
        "command": command,
        "trex": {k: (with_hdrh(final[k]) if k == "latency" else final[k]) for k in TREX_EXTRA if k in final},
        # the address lists (issue 27), only when the run had them: how they were made, sha256, first entries
        **{option: params[option] for option in LIST_OPTIONS if params.get(option)},
    }


# -- the far side of a forwarding trial (module rx_counters, source trex) ------------------------------------------
#: what a far-side snapshot keeps of each T-Rex port of an interval record (cumulative since the runner's clear)
FAR_COUNTERS = ("ipackets", "opackets", "ierrors", "oerrors")
FAR_DRIVER = "trex"


def port_number(device, ports):
    """The T-Rex port of ``device``: its place in ``ports`` (PCI addresses in trex_cfg.yaml order) or a number."""
    if device in ports:
        return ports.index(device)
    if str(device).isdigit():
        return int(device)
    raise TrexError(
        "%r names no T-Rex port: give a port number or one of the PCI addresses %s (trex_cfg.yaml order, "
        "xdplab_generator_options.ports)" % (device, list(ports))
    )


def intervals(records):
    """The runner's interval records (its JSON lines, oldest first)."""
    return [r for r in records if isinstance(r, dict) and r.get("type") == "interval" and "mono" in r]


def far_snapshot(record, devices):
    """A far-side snapshot (plugins/module_utils/_forwarding.py's shape) from one runner interval record.

    ``devices``: {name: T-Rex port}. ``t`` is the record's ``mono`` (the runner's CLOCK_MONOTONIC when it asked the
    server for the counters, on the generator host); ``stats`` are each port's cumulative counters (DPDK's port
    counters as T-Rex reports them, ``STLClient.get_stats()[port]``, since the runner cleared them after warm-up).
    """
    ports = record.get("ports") or {}
    out = {}
    for name, port in devices.items():
        row = _key(ports, port)
        if row is None:
            raise TrexError(
                "the runner's interval record has no T-Rex port %s (it reports ports %s): it counts only its TX port "
                "and the rx_ports it was given; set backend_options.rx_ports (xdplab_generator_options) to the "
                "ports the frames come back on" % (port, sorted(ports))
            )
        out[name] = {"driver": FAR_DRIVER, "port": int(port), "stats": {k: int(_num(row.get(k))) for k in FAR_COUNTERS}}
    return {"t": float(record["mono"]), "devices": out, "record_t": record.get("t")}

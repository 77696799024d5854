# SPDX-License-Identifier: GPL-3.0-or-later
"""testpmd parsers against output of DPDK 22.11.11 (Debian 12) captured on the virtual lab, and the module's input
checks (nothing is started: a test that would start testpmd fails). The real runs are in
tests/integration/test_testpmd.py. Fixtures: tests/unit/fixtures/testpmd/README.md."""

import json
import os
import threading

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpus
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _testpmd as tp
from ansible_collections.xdplab.testbed.plugins.modules import testpmd as module

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "testpmd")


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def replay(name):
    """A module transcript -> (banner, {command: [outputs in order]})."""
    banner, pairs = tp.split_transcript(fixture(name))
    outputs = {}
    for command, output in pairs:
        outputs.setdefault(command, []).append(output)
    return banner, outputs


# ------------------------------------------------------------------------------------------------ real sessions


def test_af_packet_two_queues_session(check_measurement):
    banner, out = replay("af_packet_rxonly_2q.log")
    assert tp.parse_version(banner) == "DPDK 22.11.11"
    assert list(out) == ["show port summary all", "show port info 0", "show rxq info 0 0", "show txq info 0 0",
                         "start", "show fwd stats all", "show port xstats all", "stop", "quit"]
    assert tp.parse_port_summary(out["show port summary all"][0]) == [
        {"port": 0, "mac": "86:7B:7B:65:2A:2B", "name": "net_af_packet0", "driver": "net_af_packet", "status": "up",
         "link": "10 Gbps"}]
    info = tp.parse_port_info(out["show port info 0"][0])
    assert info["driver"] == "net_af_packet" and info["max_rx_queues"] == 2 and info["rx_queues"] == 2
    assert info["devargs"] == "iface=veth-dut0,qpairs=2"
    rxq = tp.parse_queue_info(out["show rxq info 0 0"][0])
    assert rxq == {"supported": False, "burst_mode": None, "error": "Operation not supported(-95)", "descriptors": None}
    mode, streams = tp.parse_streams(out["start"][0])
    assert mode == "rxonly"
    assert streams == [{"lcore": 1, "rx_port": 0, "rx_queue": 0, "tx_port": 0, "tx_queue": 0},
                       {"lcore": 1, "rx_port": 0, "rx_queue": 1, "tx_port": 0, "tx_queue": 1}]
    xstats = [tp.parse_xstats(o) for o in out["show port xstats all"]]
    assert len(xstats) == 4  # samples=3: window start + 3 reads
    for x in xstats:
        port = x[0]
        assert tp.queue_counters(port) and sum(tp.queue_counters(port).values()) == port["rx_good_packets"]
        assert tp.port_counters(port)["rx_missed"] == 0
    # packets only grow
    assert [x[0]["rx_good_packets"] for x in xstats] == sorted(x[0]["rx_good_packets"] for x in xstats)
    first, last = (tp.parse_fwd_stats(o) for o in out["show fwd stats all"])
    assert [s["rx_queue"] for s in last["streams"]] == [0, 1]
    assert sum(s["rx_packets"] for s in last["streams"]) == last["ports"][0]["rx_packets"]
    assert last["ports"][0]["rx_packets"] >= first["ports"][0]["rx_packets"] > 0
    stop = tp.parse_fwd_stats(out["stop"][0])
    assert stop["ports"][0]["rx_packets"] >= last["ports"][0]["rx_packets"]

    # rates over the window, with nominal 1 s spacing (the real timestamps are not in the transcript)
    snaps = [(float(i), x) for i, x in enumerate(xstats)]
    res = tp.summarize(snaps, streams, first, last, tp.parse_port_summary(out["show port summary all"][0]))
    total = xstats[-1][0]["rx_good_packets"] - xstats[0][0]["rx_good_packets"]
    assert res["pps"] == pytest.approx(total / 3.0)
    assert res["ports"][0]["name"] == "net_af_packet0" and res["ports"][0]["rx_packets"] == total
    assert res["per_rxq_source"] == "xstats"
    assert sum(q["pps"] for q in res["per_rxq"]) == pytest.approx(res["pps"])
    assert [q["lcore"] for q in res["per_rxq"]] == [1, 1]
    assert res["per_lcore"] == [{"lcore": 1, "pps": pytest.approx(res["pps"]), "queues": [[0, 0], [0, 1]]}]
    assert [s["t"] for s in res["samples"]] == [1.0, 2.0, 3.0]
    assert sum(s["rx_pps"] for s in res["samples"]) == pytest.approx(total)
    assert res["window"] == {"start": 0.0, "end": 3.0} and res["tx_pps"] == 0
    m = check_measurement(tp.measurement_of(res, snaps, mode), "testpmd", samples=3)
    assert m["pps"] == res["pps"] and m["packets"] == total and m["per_cpu"] == [{"cpu": 1, "pps": res["pps"]}]
    assert [s["packets"] for s in m["samples"]] == [round(s["rx_pps"]) for s in res["samples"]]
    assert m["source"]["per_rxq_source"] == "xstats" and m["source"]["ports"] == ["net_af_packet0"]
    assert m["imbalance"]["active_queues"] == [0, 1] and m["queue_spread"] >= 1.0


def test_af_xdp_scalar_session_counts_missed():
    banner, out = replay("af_xdp_rxonly_simd64.log")
    assert "libxdp: Falling back to loading single prog without dispatcher" in banner
    info = tp.parse_port_info(out["show port info 0"][0])
    assert info["driver"] == "net_af_xdp" and info["max_rx_queues"] == 1
    assert tp.parse_queue_info(out["show rxq info 0 0"][0])["supported"] is False
    xstats = [tp.parse_xstats(o)[0] for o in out["show port xstats all"]]
    assert xstats[-1]["rx_missed_errors"] > xstats[0]["rx_missed_errors"]  # the xsk ring overflowed
    _mode, streams = tp.parse_streams(out["start"][0])
    first, last = (tp.parse_fwd_stats(o) for o in out["show fwd stats all"])
    assert last["streams"] == []  # one stream per port: testpmd prints only the port block
    res = tp.summarize([(float(i), {0: x}) for i, x in enumerate(xstats)], streams, first, last)
    assert res["per_rxq"] == [{"port": 0, "queue": 0, "packets": res["ports"][0]["rx_packets"],
                               "pps": pytest.approx(res["pps"]), "lcore": 1}]
    assert res["ports"][0]["rx_missed"] > 0 and res["ports"][0]["rx_missed_pps"] > 0


def test_per_rxq_from_fwd_stats_when_no_queue_xstats():
    """A driver without rx_qN_packets xstats (mlx5): per-queue rates come from testpmd's per-stream counters."""
    _banner, out = replay("af_packet_rxonly_2q.log")
    xstats = []
    for o in out["show port xstats all"]:
        port = {k: v for k, v in tp.parse_xstats(o)[0].items() if "_q" not in k}
        xstats.append({0: port})
    first, last = (tp.parse_fwd_stats(o) for o in out["show fwd stats all"])
    _mode, streams = tp.parse_streams(out["start"][0])
    res = tp.summarize([(float(i), x) for i, x in enumerate(xstats)], streams, first, last)
    assert res["per_rxq_source"] == "fwd_stats"
    assert [(q["port"], q["queue"], q["lcore"]) for q in res["per_rxq"]] == [(0, 0, 1), (0, 1, 1)]
    fwd_total = last["ports"][0]["rx_packets"] - first["ports"][0]["rx_packets"]
    assert sum(q["packets"] for q in res["per_rxq"]) == fwd_total
    # the fwd-stats reads bracket the xstats window, so they agree with it closely
    assert fwd_total == pytest.approx(res["ports"][0]["rx_packets"], rel=0.1)


def test_null_two_ports_io(check_measurement):
    _banner, out = replay("null_io_2ports_2q.log")
    summary = tp.parse_port_summary(out["show port summary all"][0])
    assert [p["name"] for p in summary] == ["net_null0", "net_null1"]
    mode, streams = tp.parse_streams(out["start"][0])
    assert mode == "io" and len(streams) == 4 and {s["lcore"] for s in streams} == {1}
    xstats = [tp.parse_xstats(o) for o in out["show port xstats all"]]
    assert sorted(xstats[0]) == [0, 1]
    res = tp.summarize([(float(i), x) for i, x in enumerate(xstats)], streams, None, None, summary)
    assert res["tx_pps"] > 0 and len(res["per_rxq"]) == 4
    m = check_measurement(tp.measurement_of(res, [(float(i), x) for i, x in enumerate(xstats)], mode), "testpmd")
    assert m["details"]["tx_pps"] == res["tx_pps"] and len(m["per_rxq"]) == 4
    assert m["imbalance"]["active_queues"] == []  # two ports: their queue ids would collide, so lcores only
    assert sum(q["pps"] for q in res["per_rxq"]) == pytest.approx(res["pps"])
    stats = tp.parse_port_stats(
        "\n  ######################## NIC statistics for port 0  ########################\n"
        "  RX-packets: 346688     RX-missed: 0          RX-bytes:  0\n  RX-errors: 0\n  RX-nombuf:  0         \n"
        "  TX-packets: 12352      TX-errors: 0          TX-bytes:  0\n\n  Throughput (since last show)\n"
        "  Rx-pps:            0          Rx-bps:            0\n")
    assert stats == {0: {"rx_packets": 346688, "rx_missed": 0, "rx_bytes": 0, "rx_errors": 0, "rx_nombuf": 0,
                         "tx_packets": 12352, "tx_errors": 0, "tx_bytes": 0}}


def test_queue_info_of_null_and_burst_mode_line():
    _banner, out = replay("null_queue_info.log")
    assert tp.parse_queue_info(out["show rxq info 0 0"][0])["error"] == "Operation not supported(-95)"
    assert tp.parse_port_info(out["show port info 0"][0])["max_rx_queues"] == 1024
    # No driver usable here reports a burst mode (net_af_packet, net_af_xdp, net_null: queue info unsupported).
    # This text is CONSTRUCTED from testpmd's rx_queue_infos_display() format strings (app/test-pmd/config.c,
    # DPDK 22.11), not captured: it is the shape a PCI driver like i40e or mlx5 prints.
    constructed = ("\n********************* Infos for port 0 , RX queue 0  *********************\n"
                   "Mempool: mb_pool_0\nRX prefetch threshold: 0\nRX host threshold: 0\nRX writeback threshold: 0\n"
                   "RX free threshold: 32\nRX drop packets: off\nRX deferred start: off\nRX scattered packets: off\n"
                   "Rx queue state: started\nNumber of RXDs: 1024\nBurst mode: Vector AVX2\n")
    assert tp.parse_queue_info(constructed) == {"supported": True, "burst_mode": "Vector AVX2", "error": None,
                                                "descriptors": 1024}


# ------------------------------------------------------------------------------------------------ net_virtio's RX path

# The three virtio_*.constructed.log files are NOT captured: they are written from DPDK 22.11.11's format strings
# (drivers/net/virtio/virtio_ethdev.c set_rxtx_funcs() and virtio_dev_configure(); fixtures/testpmd/README.md) until
# the DUT VM's own transcripts replace them.


@pytest.mark.parametrize("name, path, vector, note", [
    # dpdk_vector as the records so far ran it: vectorized=1, but qemu offers mergeable RX buffers
    ("virtio_vector_refused.constructed.log", "mergeable buffer", False,
     "disabled split ring vectorized rx for mrg_rxbuf enabled"),
    # dpdk_vector with mrg_rxbuf=off on the DUT's ingress NIC: virtio_recv_pkts_vec
    ("virtio_vector.constructed.log", "vectorized", True, None),
    # dpdk_scalar there (no devargs, --force-max-simd-bitwidth=64)
    ("virtio_scalar.constructed.log", "standard", False, None),
])
def test_net_virtio_rx_path_from_its_start_up_lines(name, path, vector, note):
    banner, _pairs = tp.split_transcript(fixture(name))
    assert tp.parse_rx_paths(banner) == {0: {"rx_path": path, "rx_vector": vector, "rx_path_note": note,
                                             "tx_path": "standard"}}


def test_rx_paths_of_several_ports_packed_rings_and_older_names():
    # lines as DPDK 22.11 prints them (constructed from its format strings), two ports configured then started in
    # turn; a refusal names no port and belongs to the port started next
    text = ("Configuring Port 0 (socket 0)\r\n"
            "virtio_dev_configure(): disabled split ring vectorized rx for offloading enabled\r\n"
            "virtio_dev_configure(): disabled split ring vectorized rx, max SIMD bitwidth too low\r\n"
            "set_rxtx_funcs(): virtio: using inorder Tx path on port 0\r\n"
            "set_rxtx_funcs(): virtio: using inorder Rx path on port 0\r\n"
            "Port 0: 02:58:44:56:00:02\r\nConfiguring Port 1 (socket 0)\r\n"
            "set_rxtx_funcs(): virtio: using packed ring standard Tx path on port 1\r\n"
            "set_rxtx_funcs(): virtio: using packed ring vectorized Rx path on port 1\r\n")
    assert tp.parse_rx_paths(text) == {
        0: {"rx_path": "inorder", "rx_vector": False, "tx_path": "inorder",
            "rx_path_note": "disabled split ring vectorized rx for offloading enabled; "
                            "disabled split ring vectorized rx, max SIMD bitwidth too low"},
        1: {"rx_path": "packed ring vectorized", "rx_vector": True, "rx_path_note": None,
            "tx_path": "packed ring standard"},
    }
    # DPDK before 20.11 called the split ring's vector RX "simple"
    assert tp.parse_rx_paths("set_rxtx_funcs(): virtio: using simple Rx path on port 2\n")[2]["rx_vector"] is True
    # a port restarted: its last lines count; other drivers print none of these
    assert tp.parse_rx_paths(text + "set_rxtx_funcs(): virtio: using standard Rx path on port 0\n")[0]["rx_path"] == "standard"
    assert tp.parse_rx_paths(fixture("af_packet_rxonly_2q.log")) == {}


def test_pci_is_virtio_net_reads_the_ids_in_sysfs(tmp_path):
    for addr, vendor, device in (("0000:00:04.0", "0x1af4", "0x1000"), ("0000:00:05.0", "0x1af4", "0x1041"),
                                 ("0000:00:06.0", "0x1af4", "0x1042"), ("0000:03:00.0", "0x15b3", "0x1017")):
        (tmp_path / addr).mkdir()
        (tmp_path / addr / "vendor").write_text(vendor + "\n")
        (tmp_path / addr / "device").write_text(device + "\n")
    assert [tp.pci_is_virtio_net(a, str(tmp_path)) for a in ("0000:00:04.0", "0000:00:05.0")] == [True, True]
    # virtio-blk, a ConnectX-5, a device that is not there
    assert [tp.pci_is_virtio_net(a, str(tmp_path)) for a in ("0000:00:06.0", "0000:03:00.0", "0000:00:07.0")] == [
        False, False, False]


def test_the_virtio_log_levels_only_for_a_virtio_net_port():
    p = {"binary": "dpdk-testpmd", "lcores": [0, 1], "file_prefix": "xdplab-t", "no_huge": False, "forward_mode": "rxonly",
         "nb_cores": 1, "rxq": 1, "txq": 1, "extra_eal_args": ["--log-level=lib.eal:debug"], "extra_args": []}
    port = tp.parse_port("0000:00:04.0", devargs="vectorized=1")
    argv = tp.build_command(p, [dict(port, virtio_net=True)])
    eal = argv[: argv.index("--")]
    assert eal[eal.index("-a"):] == ["-a", "0000:00:04.0,vectorized=1", "--log-level=pmd.net.virtio.init:info",
                                     "--log-level=pmd.net.virtio.driver:info", "--log-level=lib.eal:debug"]
    assert not any("virtio" in a for a in tp.build_command(p, [dict(port, virtio_net=False)]))
    assert not any("virtio" in a for a in tp.build_command(p, [tp.parse_port("0000:03:00.0")]))


# ------------------------------------------------------------------------------------------------ failures


@pytest.mark.parametrize("name, ports, expect", [
    ("eal_no_hugepages.log", ["net_null0"], ["no usable hugepages", "xdplab.testbed.dpdk", "no_huge: true"]),
    ("af_packet_no_iface.log", ["net_af_packet0,iface=nope0"], ["probed no port", "SIOCGIFINDEX):No such device"]),
    ("af_xdp_no_iface.log", ["net_af_xdp0,iface=nope0"], ["probed no port", "Failed to get channel info"]),
    ("af_xdp_queue_count_veth.log", ["net_af_xdp0,iface=veth-dut0,queue_count=2"],
     ["probed no port", "larger than combined queue count 1"]),
    ("pci_not_probed.log", ["0000:00:03.0"], ["probed no port for 0000:00:03.0", "dpdk-devbind.py", "cannot be used"]),
    ("lcores_unavailable.log", ["net_null0"], ["lcores 0,1,5", "lcores 5 are not available", "usable CPUs: 0-1"]),
    ("rxq_over_max_af_packet.log", ["net_af_packet0,iface=veth-dut0"],
     ["rxq=2 is more than the 1 queues port 0 (net_af_packet0,iface=veth-dut0)", "at most 1"]),
    ("nb_cores_too_many.log", ["net_null0"], ["nb_cores is more than the 1 forwarding lcores"]),
    ("mbuf_pool_no_memory.log", ["net_null0"], ["mbuf pool", "raise memory_mb"]),
])
def test_failures_are_explained(name, ports, expect):
    text = fixture(name)
    lcores = [0, 1, 5] if "lcores" in name else [0, 1]
    msg = tp.explain_failure(text, [tp.parse_port(p) for p in ports], lcores, [0, 1])
    for piece in expect:
        assert piece in msg, msg
    assert tp.eal_log_lines(text)


def test_unknown_text_is_not_explained():
    assert tp.explain_failure("EAL: Detected CPU lcores: 2\n") is None


# ------------------------------------------------------------------------------------------------ command line


def test_parse_port_and_devargs():
    pci = tp.parse_port("03:00.0", devargs="rx_vec_en=0")
    assert pci["kind"] == "pci" and pci["address"] == "0000:03:00.0" and pci["eal"] == ["-a", "0000:03:00.0,rx_vec_en=0"]
    vdev = tp.parse_port("net_af_xdp0,iface=veth-dut0,start_queue=0")
    assert vdev["driver"] == "net_af_xdp" and vdev["iface"] == "veth-dut0" and vdev["args"]["start_queue"] == "0"
    more, added = tp.vdev_with_args(vdev, {"queue_count": "2", "start_queue": "5"})
    assert added == {"queue_count": "2"} and more["eal"] == ["--vdev", "net_af_xdp0,iface=veth-dut0,start_queue=0,queue_count=2"]
    with pytest.raises(ValueError, match="neither a PCI address"):
        tp.parse_port("eth0")


def test_build_command():
    p = {"binary": "/usr/bin/dpdk-testpmd", "lcores": [1, 0], "file_prefix": "xdplab-t", "no_huge": True,
         "memory_mb": 1024, "max_simd_bitwidth": 64, "forward_mode": "rxonly", "nb_cores": 1, "rxq": 1, "txq": 1,
         "rxd": 2048, "burst": 64, "rss": "udp", "extra_eal_args": ["--log-level=pmd.net.af_xdp:debug"],
         "extra_args": []}
    argv = tp.build_command(p, [tp.parse_port("net_af_packet0,iface=dut0")])
    assert argv == ["/usr/bin/dpdk-testpmd", "-v", "-l", "1,0", "--main-lcore", "1", "--file-prefix", "xdplab-t",
                    "--no-huge", "-m", "1024", "--force-max-simd-bitwidth=64", "--no-pci", "--vdev",
                    "net_af_packet0,iface=dut0", "--log-level=pmd.net.af_xdp:debug", "--", "-i",
                    "--forward-mode=rxonly", "--nb-cores=1", "--rxq=1", "--txq=1", "--port-topology=loop",
                    "--rxd=2048", "--burst=64", "--rss-udp"]
    p.update(no_huge=False, memory_mb=None, max_simd_bitwidth=None, huge_dir="/dev/hugepages", rss=None)
    argv = tp.build_command(p, [tp.parse_port("0000:03:00.0"), tp.parse_port("0000:03:00.1")])
    assert "--huge-unlink" in argv and "--no-pci" not in argv and "--port-topology=loop" not in argv
    assert argv[argv.index("--huge-dir") + 1] == "/dev/hugepages"


def test_af_xdp_queue_limits_on_veth():
    channels = ethtool.parse_channels(fixture("ethtool_l_veth_2q.txt").decode())
    assert channels["max"]["rx"] == 2 and channels["max"]["combined"] is None
    assert tp.af_xdp_queue_limits(channels) == (1, 1)  # veth: only queue 0 for net_af_xdp
    assert tp.af_xdp_queue_limits({"max": {"combined": 8}, "current": {"combined": 4}}) == (8, 4)
    assert tp.af_xdp_queue_limits(None) == (1, 1)
    assert module.Testpmd.online_cpus is _cpus.online_cpus  # the one CPU-list helper


# ------------------------------------------------------------------------------------------------ the module


@pytest.fixture
def no_start(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("testpmd must not be started")

    monkeypatch.setattr(tp, "Session", refuse)
    monkeypatch.setattr(module.Testpmd, "online_cpus", staticmethod(lambda: [0, 1]))


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


BASE = {"ports": ["net_null0"], "no_huge": True, "binary": "/bin/true"}


@pytest.mark.parametrize("args, expect", [
    ({"forward_mode": "flowgen"}, "value of forward_mode must be one of: rxonly, txonly, io, mac, macswap"),
    ({"ports": ["0000:7f:1f.7"]}, "PCI device 0000:7f:1f.7 is not on this machine"),
    ({"ports": ["eth0"]}, "neither a PCI address"),
    ({"lcores": [0, 7]}, "lcores 7 are not online CPUs (online: 0,1)"),
    ({"nb_cores": 2}, "nb_cores=2 needs 3 lcores"),
    ({"lcores": [0], "nb_cores": 1}, "the first, 0, is the main lcore"),
    ({"ports": ["net_af_packet0,iface=xd-tp-none0"]}, "interface xd-tp-none0 of net_af_packet0 does not exist"),
    ({"max_simd_bitwidth": 96}, "value of max_simd_bitwidth must be one of: 64, 128, 256, 512"),
    ({"samples": 0}, "samples must be at least 1"),
    ({"binary": "/nonexistent/dpdk-testpmd"}, "dpdk-testpmd not found at /nonexistent/dpdk-testpmd"),
    ({"ports": []}, "ports is empty"),
])
def test_bad_input_refused_before_start(no_start, capsys, tmp_path, args, expect):
    res = run_module(dict(BASE, run_dir=str(tmp_path), **args), capsys)
    assert res["failed"] and expect in res["msg"], res["msg"]
    assert not os.listdir(tmp_path)


def test_hugepages_checked_before_start(no_start, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(module.Testpmd, "check_hugepages", lambda self: self.fail("no usable hugepages (test)"))
    res = run_module(dict(BASE, run_dir=str(tmp_path), no_huge=False), capsys)
    assert res["failed"] and "no usable hugepages" in res["msg"]


def test_check_mode_reports_command(no_start, capsys, tmp_path):
    res = run_module(dict(BASE, run_dir=str(tmp_path), max_simd_bitwidth=64, _ansible_check_mode=True), capsys)
    assert res["changed"] is True and not res.get("failed")
    assert res["command"][:2] == ["/bin/true", "-v"] and "--force-max-simd-bitwidth=64" in res["command"]
    assert "--no-huge" in res["command"] and res["command"][res["command"].index("-m") + 1] == "1024"
    assert any("not simulated" in n for n in res["notes"])
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("virtio", [True, False])
def test_check_mode_asks_net_virtio_for_its_rx_path(no_start, capsys, tmp_path, monkeypatch, virtio):
    # a PCI function of this machine (the preflight checks it is there); whether it is virtio-net is the seam's answer
    devices = sorted(os.listdir("/sys/bus/pci/devices")) if os.path.isdir("/sys/bus/pci/devices") else []
    if not devices:
        pytest.skip("no PCI device in /sys/bus/pci/devices here")
    monkeypatch.setattr(module.Testpmd, "pci_is_virtio_net", staticmethod(lambda address: virtio))
    res = run_module(dict(BASE, ports=[devices[0]], run_dir=str(tmp_path), _ansible_check_mode=True), capsys)
    assert not res.get("failed"), res.get("msg")
    assert ("--log-level=pmd.net.virtio.init:info" in res["command"]) is virtio
    assert ("--log-level=pmd.net.virtio.driver:info" in res["command"]) is virtio


def test_absent_is_idempotent_and_removes_files(capsys, tmp_path):
    res = run_module({"state": "absent", "name": "t1", "run_dir": str(tmp_path)}, capsys)
    assert res["changed"] is False
    # a run that died: its pid is gone, its files remain
    (tmp_path / "t1.json").write_text(json.dumps({"pid": 2 ** 22 + 7, "start_time": 1, "command": ["x"],
                                                  "file_prefix": "xd-tp-unit-none", "afxdp_ifaces": []}))
    (tmp_path / "t1.log").write_text("testpmd> ")
    res = run_module({"state": "absent", "name": "t1", "run_dir": str(tmp_path), "_ansible_check_mode": True}, capsys)
    assert res["changed"] is True and "stopped" not in res and len(res["removed"]) == 2
    assert (tmp_path / "t1.json").exists()
    res = run_module({"state": "absent", "name": "t1", "run_dir": str(tmp_path)}, capsys)
    assert res["changed"] is True and not (tmp_path / "t1.json").exists()
    res = run_module({"state": "absent", "name": "t1", "run_dir": str(tmp_path)}, capsys)
    assert res["changed"] is False


def threads_of_me():
    return threading.get_native_id()


class ReplaySession:
    """A testpmd session that answers from a captured transcript, on the fake clock (each command takes 10 ms)."""

    def __init__(self, name, clock):
        self.banner, self.out = replay(name)
        self.clock, self.sent = clock, []
        # the process whose threads the module reads before quit: this test's own (a real /proc entry)
        self.pid = os.getpid()

    def until_prompt(self, timeout):
        return self.banner

    def command(self, line, timeout=15.0):
        sent = self.clock.now
        self.sent.append((line, sent))
        self.clock.now += 0.01
        return self.out[line].pop(0), sent, self.clock.now

    def text(self):
        return ""


def measure_null_io(tmp_path, fake_clock, banner=None):
    """measure() on the replayed net_null io session (2 ports, 2 queues), its start-up replaced by a fixture's when
    banner names one: (runner, session)."""
    args = dict(BASE, ports=["net_null0", "net_null1"], forward_mode="io", rxq=2, txq=2, warmup=2, interval=1,
                samples=2, run_dir=str(tmp_path))
    with patch_module_args(args):
        ansible_module = AnsibleModule(argument_spec=module.argument_spec(), supports_check_mode=True)
        runner = module.Testpmd(ansible_module, clock=fake_clock, sleep=fake_clock.sleep)
        runner.validate()
        session = ReplaySession("null_io_2ports_2q.log", fake_clock)
        if banner:
            session.banner, _pairs = tp.split_transcript(fixture(banner))
        runner.measure(session)
    return runner, session


def test_measure_runs_the_sampler_on_the_session(no_start, tmp_path, fake_clock, check_measurement):
    """measure() on a replayed net_null io session: the Sampler's warm-up, absolute schedule and read midpoints."""
    runner, session = measure_null_io(tmp_path, fake_clock)
    res = runner.result
    reads = [t for line, t in session.sent if line == "show port xstats all"]
    start = next(t for line, t in session.sent if line == "start")
    fwd = [t for line, t in session.sent if line == "show fwd stats all"]
    # warm-up after start, fwd stats once, then xstats reads 1 s apart from the first (not 1 s + the read)
    assert fwd[0] == pytest.approx(start + 0.01 + 2.0)
    assert [b - reads[0] for b in reads] == pytest.approx([0.0, 1.0, 2.0])
    m = check_measurement(res["measurement"], "testpmd", samples=2)
    assert m["window"]["start"] == pytest.approx(reads[0] + 0.005) and m["window"]["seconds"] == pytest.approx(2.0)
    assert m["pps"] == res["pps"] and m["source"]["forward_mode"] == "io"
    assert m["source"]["ports"] == ["net_null0", "net_null1"] and m["per_cpu"][0]["cpu"] == 1
    # its threads read after stop, just before quit, on the module's clock: for cpu_usage's ended_threads
    threads = res["threads"]
    stop = next(t for line, t in session.sent if line == "stop")
    assert threads["pid"] == os.getpid() and threads["time"] >= stop + 0.01 and str(threads_of_me()) in threads["threads"]
    assert threads["threads"][str(threads_of_me())][1] > 0  # run time in ns
    # cpu_usage snapshots of the forwarding lcore's CPU at the window's edges (cpu_usage since/until)
    window = res["cpu_window"]
    assert window["cpus"] == [1] and window["start"]["time"] <= window["end"]["time"]
    assert set(window["start"]["cpus"]) >= {"1"} and "threads" in window["end"]


@pytest.mark.parametrize(
    "content, samples_taken, note",
    [
        (None, 5, None),
        ("1000.0\n", 2, "the window ended before its 5 samples: window_end_file's time 1000.000 had passed"),
        ("soon", 5, "does not hold a time ('soon'): the window lasted its samples"),
    ],
)
def test_window_end_file_ends_the_window_once_its_time_has_passed(no_start, tmp_path, fake_clock, content,
                                                                  samples_taken, note):
    """window_end_file (the latency trial's testpmd forwards until the generator's end): read at each sample; a time
    that has passed ends the window there, a file that holds no time is ignored with a note."""
    end_file = tmp_path / "trial.window_end"
    args = dict(BASE, ports=["net_null0", "net_null1"], forward_mode="io", rxq=2, txq=2, warmup=0, interval=1,
                samples=5, run_dir=str(tmp_path), window_end_file=str(end_file))
    with patch_module_args(args):
        ansible_module = AnsibleModule(argument_spec=module.argument_spec(), supports_check_mode=True)
        runner = module.Testpmd(ansible_module, clock=fake_clock, sleep=fake_clock.sleep)
        # CLOCK_REALTIME of the run: 998.5 s at its start, one second per sample as the fake clock goes
        start = fake_clock.now
        runner.realtime = lambda: 998.5 + (fake_clock.now - start)
        runner.validate()
        if content is not None:
            end_file.write_text(content)
        session = ReplaySession("null_io_2ports_2q.log", fake_clock)
        session.out["show port xstats all"] = session.out["show port xstats all"][:1] * 6
        runner.measure(session)
    reads = [t for line, t in session.sent if line == "show port xstats all"]
    assert len(reads) == samples_taken + 1
    assert runner.result["measurement"]["window"]["seconds"] == pytest.approx(samples_taken)
    window_notes = [n for n in runner.result["notes"] if "window_end_file" in n]
    assert window_notes == ([] if note is None else [window_notes[0]]) and (note is None or note in window_notes[0])
    # the module removes it when a measurement starts and when it ends
    runner.remove_window_end_file()
    assert not end_file.exists()


def test_measure_puts_net_virtios_rx_path_beside_the_burst_mode(no_start, tmp_path, fake_clock):
    """measure() on the replayed net_null io session whose start-up is the constructed dpdk_vector one of the DUT VM
    (port 0: vectorized=1 refused for mergeable buffers): port 0 gets net_virtio's RX path and the reason, port 1
    (which printed nothing) nulls; rx_paths (the record's provenance.program.rx_paths) says the same per port."""
    runner, _session = measure_null_io(tmp_path, fake_clock, banner="virtio_vector_refused.constructed.log")
    res = runner.result
    port0, port1 = res["ports"]
    assert port0["rx_burst_mode"] is None and port0["burst_mode_note"] == "net_null: Operation not supported(-95)"
    assert (port0["rx_path"], port0["rx_vector"], port0["tx_path"]) == ("mergeable buffer", False, "standard")
    assert port0["rx_path_note"] == "disabled split ring vectorized rx for mrg_rxbuf enabled"
    assert [port1[k] for k in ("rx_path", "rx_vector", "rx_path_note", "tx_path")] == [None] * 4
    assert res["rx_paths"] == [
        {"port": 0, "name": "net_null0", "driver": "net_null", "rx_burst_mode": None, "rx_path": "mergeable buffer",
         "rx_vector": False, "rx_path_note": "disabled split ring vectorized rx for mrg_rxbuf enabled"},
        {"port": 1, "name": "net_null1", "driver": "net_null", "rx_burst_mode": None, "rx_path": None,
         "rx_vector": None, "rx_path_note": None},
    ]

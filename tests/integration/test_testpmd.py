# SPDX-License-Identifier: GPL-3.0-or-later
"""testpmd against the real kernel and Debian's DPDK (dpdk-testpmd 22.11): traffic really flows.

Each test builds its own lab: namespaces ``xd-tp-<random>-tg`` / ``xd-tp-<random>-dut`` joined by a veth pair with
2 RX/TX queues (``veth-tg0`` / ``veth-dut0``), GRO on the DUT side so veth's NAPI takes the generator's frames.
Traffic: ``bpf/build/xdplab-trafficgen`` (contract 2) in the generator namespace, 2 flows on 2 queues. The module
runs as Ansible runs it (own process, arguments from a JSON file) inside ``ip netns exec`` of the DUT namespace.
Every test checks that no testpmd process, EAL runtime directory, run file or XDP program is left behind.
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
GENERATOR = os.path.join(ROOT, "bpf", "build", "xdplab-trafficgen")
GEN_OBJECT = os.path.join(ROOT, "bpf", "build", "xdp_trafficgen.bpf.o")
MODULE = "ansible_collections.xdplab.testbed.plugins.modules.testpmd"
CPU_MODULE = "ansible_collections.xdplab.testbed.plugins.modules.cpu_usage"
HUGEPAGES = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"


def sh(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kw)


@pytest.fixture(scope="session")
def dpdk(bpf_build):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    binary = shutil.which("dpdk-testpmd")
    if not binary:
        pytest.skip("dpdk-testpmd not installed (apt-get install dpdk dpdk-dev)")
    bpf_build("xdplab-trafficgen")
    return binary


class Lab:
    """testpmd's view of a lab from the netlab fixture (tests/integration/conftest.py)."""

    def __init__(self, tmp_path, net):
        self.tg, self.dut = net.tg, net.dut
        self.created = list(net.names)
        self.tmp = tmp_path
        self.run_dir = str(tmp_path / "run")
        self.generators = []
        self.prefixes = set()

    def down(self):
        for proc in self.generators:
            if proc.poll() is None:
                proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(10)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for prefix in self.prefixes:
            # only if a test failed half-way: the module cleans these itself
            for pid in sh("pgrep", "-f", f"file-prefix {prefix} ", check=False).stdout.split():
                os.kill(int(pid), 9)
            shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)

    def generate(self, seconds=40, queues=2, cpus="0,1"):
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.tg, GENERATOR, "--dev", "veth-tg0", "--src-mac", "02:00:00:00:00:01",
             "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.0.0.1", "--dst-ip", "10.0.0.2", "--flows", "2",
             "--queues", str(queues), "--cpus", cpus, "--duration", str(seconds), "--obj", GEN_OBJECT],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.generators.append(proc)
        time.sleep(0.3)
        assert proc.poll() is None, proc.stderr.read()
        return proc

    def cpu_usage(self, args):
        """cpu_usage in the DUT's namespace, as the trial runs it around its measure task."""
        path = self.tmp / f"cpu-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        proc = subprocess.run(["ip", "netns", "exec", self.dut, sys.executable, "-m", CPU_MODULE, str(path)],
                              capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=COLLECTIONS), timeout=60,
                              check=False)  # fmt: skip
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)

    def module(self, args, ns=None):
        args.setdefault("run_dir", self.run_dir)
        name = args.setdefault("name", "t" + secrets.token_hex(3))
        self.prefixes.add(args.get("file_prefix") or f"xdplab-{name}")
        path = self.tmp / f"args-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = dict(os.environ, PYTHONPATH=COLLECTIONS)
        proc = subprocess.run(["ip", "netns", "exec", ns or self.dut, sys.executable, "-m", MODULE, str(path)],
                              capture_output=True, text=True, env=env, timeout=300, check=False)
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)

    def xdp(self):
        link = json.loads(sh("ip", "-n", self.dut, "-j", "-d", "link", "show", "veth-dut0").stdout)[0]
        return link.get("xdp")

    def assert_clean(self, name):
        prefix = f"xdplab-{name}"
        assert sh("pgrep", "-f", f"file-prefix {prefix} ", check=False).stdout == "", "testpmd left running"
        assert not os.path.exists(f"/var/run/dpdk/{prefix}"), "EAL runtime directory left"
        assert not os.path.exists(os.path.join(self.run_dir, f"{name}.json")), "pid file left"
        assert self.xdp() is None, "XDP program left on veth-dut0"


@pytest.fixture
def lab(tmp_path, dpdk, netlab):
    # 2 RX/TX queues, GRO on the DUT end; the namespaces go with the netlab fixture, always
    net = netlab("xd-tp", queues=2, pairs=[("veth-tg0", "veth-dut0")], gro=["veth-dut0"])
    lab = Lab(tmp_path, net)
    try:
        yield lab
    finally:
        lab.down()


def check_rates(res):
    assert not res.get("failed"), res.get("msg")
    assert res["version"].startswith("DPDK 22.11")
    assert res["pps"] > 0
    assert len(res["samples"]) == 3 and all(s["rx_pps"] > 0 for s in res["samples"])
    assert res["window"]["end"] - res["window"]["start"] == pytest.approx(3.0, abs=0.5)
    assert res["window"]["end"] < time.monotonic()  # same clock as this test (CLOCK_MONOTONIC)
    assert res["per_rxq_source"] == "xstats"
    assert sum(q["pps"] for q in res["per_rxq"]) == pytest.approx(res["pps"], rel=0.01)
    assert sum(p["rx_packets"] for p in res["ports"]) == sum(q["packets"] for q in res["per_rxq"])
    forwarding = int(res["command"][res["command"].index("-l") + 1].split(",")[1])  # nb_cores=1: the 2nd lcore
    assert [c["lcore"] for c in res["per_lcore"]] == [forwarding]
    assert res["exit_status"] == 0
    m = res["measurement"]  # the one shape, from the same reads
    assert m["source"]["kind"] == "testpmd" and m["source"]["at"] == "dut" and m["source"]["per_rxq_source"] == "xstats"
    assert m["pps"] == res["pps"] and m["packets"] == sum(p["rx_packets"] for p in res["ports"])
    assert m["window"]["start"] == res["window"]["start"] and m["window"]["clock"] == "CLOCK_MONOTONIC"
    assert len(m["samples"]) == 3 and sum(s["packets"] for s in m["samples"]) == m["packets"]
    assert [c["cpu"] for c in m["per_cpu"]] == [forwarding]


def test_af_packet_rxonly_two_queues(lab):
    lab.generate()
    res = lab.module({"name": "afp", "ports": ["net_af_packet0,iface=veth-dut0"], "rxq": 2, "txq": 2, "rss": "udp",
                      "no_huge": True, "lcores": [0, 1], "warmup": 1, "interval": 1, "samples": 3})
    check_rates(res)
    assert "net_af_packet0,iface=veth-dut0,qpairs=2" in res["command"]
    assert [q["queue"] for q in res["per_rxq"]] == [0, 1] and {q["lcore"] for q in res["per_rxq"]} == {1}
    port = res["ports"][0]
    assert port["driver"] == "net_af_packet" and port["max_rx_queues"] == 2
    assert port["rx_burst_mode"] is None and "Operation not supported" in port["burst_mode_note"]
    print("af_packet rxonly 2 queues: %.0f pps, per queue %s" % (res["pps"], [round(q["pps"]) for q in res["per_rxq"]]))
    lab.assert_clean("afp")
    # the transcript stays until state=absent removes it
    log = os.path.join(lab.run_dir, "afp.log")
    assert os.path.exists(log)
    res = lab.module({"name": "afp", "state": "absent"})
    assert res["changed"] is True and res["removed"] == [log]
    assert lab.module({"name": "afp", "state": "absent"})["changed"] is False


def test_af_xdp_rxonly_scalar(lab):
    # the generator on CPU 0 only: CPU 1 is the forwarding lcore's, measured around the run as a trial does
    lab.generate(queues=1, cpus="0")
    cpu = {"cpus": [1], "work_interfaces": ["veth-dut0"], "work_comms": ["^rte-worker"]}
    before = lab.cpu_usage(dict(cpu, snapshot_only=True))
    res = lab.module({"name": "afxdp", "ports": ["net_af_xdp0,iface=veth-dut0,start_queue=0,queue_count=1"],
                      "no_huge": True, "max_simd_bitwidth": 64, "warmup": 1, "interval": 1, "samples": 3})
    check_rates(res)
    # testpmd is gone when the window closes: its lcore counts through the reading it handed back (issue 8)
    threads = res["threads"]
    after = lab.cpu_usage(dict(cpu, since=before["snapshot"], ended_threads=[threads], work_pids=[threads["pid"]]))
    assert not after.get("failed"), after.get("msg")
    (lcore,) = [w for w in after["work"] if w["comm"] == "rte-worker-1"]
    (tid,) = [t for t, v in threads["threads"].items() if v[4] == "rte-worker-1"]
    # born in the window, pinned to CPU 1: all of its run time, exactly as testpmd's module read it before quit
    assert lcore["ended"] is True and lcore["attribution"] == "affinity" and lcore["cpu"] == 1 and lcore["role"] == "process"
    assert lcore["tid"] == int(tid) and lcore["runtime_ns"] == threads["threads"][tid][1]
    assert lcore["runtime_ns"] > 0.5e9, lcore  # it polled from start to stop (4 s; less CPU when tenants share CPU 1)
    # the same window without the reading: the lcore is in neither list (what every DPDK trial recorded before)
    blind = lab.cpu_usage(dict(cpu, since=before["snapshot"]))
    assert all(w["comm"] != "rte-worker-1" for w in blind["work"] + blind["foreign"])
    (c1,), (b1,) = after["per_cpu"], blind["per_cpu"]
    assert c1["work_busy"] - b1["work_busy"] == pytest.approx(lcore["busy"], abs=0.5)
    # every thread charged to CPU 1 never adds up to more than /proc/stat saw busy there (tick-sampled: 1 tick of
    # slack per 100); what is left is threads that started and ended inside the window (other tenants' processes)
    threads_busy = c1["work_busy"] + sum(f["busy"] for f in after["foreign"] if f["cpu"] == 1)
    figures = (c1["busy"], c1["user"], c1["work_busy"], lcore["busy"], threads_busy, b1["work_busy"])
    print("CPU 1 over the window: /proc/stat busy %.1f %% (user %.1f), work %.1f %% (lcore %.1f %%), all threads "
          "%.1f %%, before the fix work %.1f %%" % figures)
    assert threads_busy <= c1["busy"] + 5, after
    # over testpmd's own measurement window (its cpu_window snapshots, cpu_usage since/until) the lcore is alive at
    # both reads and polls all of the window it gets the CPU for
    window = res["cpu_window"]
    own = lab.cpu_usage(dict(cpu, since=window["start"], until=window["end"], work_pids=[threads["pid"]]))
    assert not own.get("failed"), own.get("msg")
    assert own["window"] == {"start": window["start"]["time"], "end": window["end"]["time"]}
    (polling,) = [w for w in own["work"] if w["comm"] == "rte-worker-1"]
    assert "ended" not in polling and polling["attribution"] == "affinity"
    print("CPU 1 over testpmd's window (%.2f s): /proc/stat busy %.1f %%, work %.1f %% (lcore %.1f %%)"
          % (own["seconds"], own["per_cpu"][0]["busy"], own["per_cpu"][0]["work_busy"], polling["busy"]))
    assert polling["busy"] > lcore["busy"], (polling, lcore)  # the whole-task window dilutes it with EAL's start
    assert "--force-max-simd-bitwidth=64" in res["command"] and res["simd"]["max_simd_bitwidth"] == 64
    port = res["ports"][0]
    assert port["driver"] == "net_af_xdp" and port["rx_burst_mode"] is None and port["tx_burst_mode"] is None
    assert [q["queue"] for q in res["per_rxq"]] == [0]
    print("af_xdp rxonly queue 0, scalar: %.0f pps (rx_missed %.0f pps)" % (res["pps"], port["rx_missed_pps"]))
    lab.assert_clean("afxdp")


def test_net_null_io_two_ports_with_hugepages(lab, tmp_path):
    """EAL on real 2 MiB hugepages (reserved and mounted here, released after), no NIC: net_null ports."""
    mount = tempfile.mkdtemp(prefix="xd-tp-huge-")
    added = 0
    try:
        sh("mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", mount)
        with open(HUGEPAGES) as f:
            before = int(f.read())
        with open(HUGEPAGES, "w") as f:
            f.write(str(before + 256))
        with open(HUGEPAGES) as f:
            added = int(f.read()) - before
        assert added > 0, "could not reserve 2 MiB hugepages"
        res = lab.module({"name": "hp", "ports": ["net_null0", "net_null1"], "forward_mode": "io", "rxq": 2,
                          "txq": 2, "huge_dir": mount, "mbufs": 16384, "warmup": 0.5, "samples": 3})
        check_rates(res)
        assert "--no-huge" not in res["command"] and "--huge-unlink" in res["command"] and res["no_huge"] is False
        assert res["tx_pps"] > 0 and len(res["per_rxq"]) == 4
        assert "EAL: Selected IOVA mode" in "\n".join(res["eal_log"])
        lab.assert_clean("hp")
        assert not os.listdir(mount), "hugepage files left"
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            sh("umount", mount)
        os.rmdir(mount)
        if added:
            with open(HUGEPAGES) as f:
                now = int(f.read())
            with open(HUGEPAGES, "w") as f:
                f.write(str(max(0, now - added)))


def read(path, binary=False):
    with open(path, "rb" if binary else "r") as f:
        return f.read()


def wait_for_measurement(log, deadline_s=90):
    deadline = time.monotonic() + deadline_s
    while not (os.path.exists(log) and b"show port xstats all" in read(log, True)):
        assert time.monotonic() < deadline, "testpmd did not reach the measurement"
        time.sleep(0.3)


def start_background(lab, name, ports, samples=60):
    args = {"ANSIBLE_MODULE_ARGS": {"name": name, "run_dir": lab.run_dir, "no_huge": True, "samples": samples,
                                    "ports": ports}}
    lab.prefixes.add(f"xdplab-{name}")
    path = lab.tmp / f"{name}.json"
    path.write_text(json.dumps(args))
    return subprocess.Popen(["ip", "netns", "exec", lab.dut, sys.executable, "-m", MODULE, str(path)],
                            env=dict(os.environ, PYTHONPATH=COLLECTIONS), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_crash_leftover_stopped_by_absent(lab):
    """The module and testpmd both die (SIGKILL): net_af_xdp's XDP program stays on the veth; absent cleans it."""
    lab.generate()
    module = start_background(lab, "crash", ["net_af_xdp0,iface=veth-dut0"])
    log = os.path.join(lab.run_dir, "crash.log")
    try:
        wait_for_measurement(log)
        state = json.loads(read(os.path.join(lab.run_dir, "crash.json")))
        os.kill(state["pid"], signal.SIGSTOP)  # so it cannot clean up when its terminal goes away
        module.kill()
        module.wait()
        os.kill(state["pid"], signal.SIGKILL)
        time.sleep(0.5)
        assert lab.xdp()["prog"]["name"] == "xsk_def_prog"  # what a crash leaves
        res = lab.module({"name": "crash", "state": "absent"})
        assert res["changed"] is True and any("detached" in n for n in res["notes"])
        lab.assert_clean("crash")
        assert not os.path.exists(log)
    finally:
        if module.poll() is None:
            module.kill()
            module.wait()


def test_testpmd_dies_mid_run(lab):
    """testpmd killed during the window: the module fails with a clear error and cleans up (XDP program too)."""
    lab.generate()
    module = start_background(lab, "dies", ["net_af_xdp0,iface=veth-dut0"], samples=30)
    try:
        wait_for_measurement(os.path.join(lab.run_dir, "dies.log"))
        state = json.loads(read(os.path.join(lab.run_dir, "dies.json")))
        os.kill(state["pid"], signal.SIGKILL)
        out, _err = module.communicate(timeout=60)
        res = json.loads(out)
        assert res["failed"], res
        assert "testpmd (dpdk-testpmd, pid %d) was killed by signal 9 (SIGKILL)" % state["pid"] in res["msg"], res["msg"]
        assert res["process"]["pid"] == state["pid"] and res["process"]["signal_name"] == "SIGKILL", res["process"]
        assert res["process"]["stderr_tail"].strip(), res["process"]  # the last lines testpmd printed
        lab.assert_clean("dies")
    finally:
        if module.poll() is None:
            module.kill()
            module.wait()


def test_leftover_alive_is_stopped_by_absent(lab):
    """state=absent on a live leftover: testpmd is stopped (SIGTERM/SIGKILL) and its files removed."""
    module = start_background(lab, "live", ["net_null0"], samples=120)
    try:
        wait_for_measurement(os.path.join(lab.run_dir, "live.log"))
        state = json.loads(read(os.path.join(lab.run_dir, "live.json")))
        os.kill(state["pid"], signal.SIGSTOP)  # keep it from noticing its terminal going away
        module.kill()  # the module dies; testpmd is left over
        module.wait()
        res = lab.module({"name": "live", "state": "absent", "_ansible_check_mode": True})
        assert res["changed"] is True and res["stopped"] == state["pid"]
        res = lab.module({"name": "live", "state": "absent"})
        assert res["changed"] is True and res["stopped"] == state["pid"]
        lab.assert_clean("live")
    finally:
        if module.poll() is None:
            module.kill()
            module.wait()


@pytest.mark.parametrize("args, expect", [
    ({"forward_mode": "flowgen"}, "value of forward_mode must be one of"),
    ({"ports": ["0000:7f:1f.7"]}, "PCI device 0000:7f:1f.7 is not on this machine"),
    ({"ports": ["net_af_xdp0,iface=veth-dut0"], "rxq": 2},
     "DPDK's net_af_xdp can use 1 queue(s) there (combined channels of ethtool -l veth-dut0: 1"),
    ({"ports": ["net_af_packet0,iface=veth-dut0"], "rxq": 3}, "rxq=3 is more than the 2 RX queues of interface veth-dut0"),
    ({"ports": ["net_af_packet0,iface=veth-gone0"]}, "interface veth-gone0 of net_af_packet0 does not exist"),
    ({"lcores": [0, 64]}, "lcores 64 are not online CPUs"),
    ({"huge_dir": "/tmp", "no_huge": False}, "huge_dir /tmp is not a mounted hugetlbfs"),
])
def test_bad_input_leaves_nothing(lab, args, expect):
    full = {"name": "bad", "ports": ["net_null0"], "no_huge": True}
    full.update(args)
    res = lab.module(full)
    assert res["failed"] and expect in res["msg"], res["msg"]
    lab.assert_clean("bad")
    assert not os.path.exists(os.path.join(lab.run_dir, "bad.log"))


def test_eal_failure_is_explained_and_cleaned(lab):
    """A failure only EAL sees (here: testpmd's mbuf pool does not fit in -m 128): clear error, nothing left."""
    res = lab.module({"name": "eal", "ports": ["net_null0"], "no_huge": True, "memory_mb": 128})
    assert res["failed"] and "could not allocate its mbuf pool" in res["msg"] and "raise memory_mb" in res["msg"]
    assert res["eal_log"]
    lab.assert_clean("eal")


def test_check_mode_starts_nothing(lab):
    res = lab.module({"name": "cm", "ports": ["net_af_xdp0,iface=veth-dut0"], "no_huge": True,
                      "_ansible_check_mode": True})
    assert res["changed"] is True and "--vdev" in res["command"] and "pps" not in res
    lab.assert_clean("cm")
    assert not os.path.exists(lab.run_dir)


def test_through_the_ansible_cli(lab):
    """The module as a task of the ``ansible`` CLI inside the DUT namespace (what a play on the vlab does)."""
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.oneline", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_DEPRECATION_WARNINGS="0")
    lab.prefixes.add("xdplab-cli")
    args = {"name": "cli", "run_dir": lab.run_dir, "ports": ["net_null0"], "no_huge": True, "forward_mode": "txonly",
            "samples": 2, "warmup": 0.5}
    proc = subprocess.run(["ip", "netns", "exec", lab.dut, os.path.join(bin_dir, "ansible"), "localhost", "-c", "local",
                           "-m", "xdplab.testbed.testpmd", "-a", json.dumps(args)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("localhost | "))
    assert line.startswith("localhost | CHANGED => "), proc.stdout + proc.stderr
    res = json.loads(line.split("=> ", 1)[1])
    assert res["tx_pps"] > 0 and res["streams"][0]["lcore"] == 1
    lab.assert_clean("cli")

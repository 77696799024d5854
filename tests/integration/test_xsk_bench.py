# SPDX-License-Identifier: GPL-3.0-or-later
"""xdplab-xsk-bench and the xsk_bench module against the real kernel.

Each test builds its own lab: namespaces ``xd-xs-<random>-tg`` (generator) and ``xd-xs-<random>-dut`` joined by a
veth pair with 2 RX/TX queues (``tg0`` / ``dut0``), GRO on so veth's NAPI takes frames that a peer's XDP program
redirects. Traffic comes from the repository's generator ``xdplab-trafficgen`` (Contract 2): 2 flows, the sender of
flow q on CPU q, so flow q lands on DUT RX queue q. The module runs as Ansible runs it (own process, arguments from a
JSON file) inside ``ip netns exec``. The programs are built from bpf/ into a private directory for the session.
"""

import json
import os
import secrets
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
MODULE = "ansible_collections.xdplab.testbed.plugins.modules.xsk_bench"
TG_MAC, DUT_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
TG_IP, DUT_IP = "10.202.0.1", "10.202.0.2"


def sh(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kw)


@pytest.fixture(scope="session")
def build(tmp_path_factory):
    """bpf/ built into a private directory (other work in the tree may clean bpf/build meanwhile)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    out = tmp_path_factory.mktemp("xsk-build")
    targets = [str(out / t) for t in ("xdplab-xsk-bench", "xdplab-trafficgen", "xdp_trafficgen.bpf.o", "xdp_bare_drop.bpf.o")]
    proc = subprocess.run(["make", "-C", os.path.join(ROOT, "bpf"), "BUILD=%s" % out, *targets], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


class Lab:
    """The bench's view of a lab from the netlab fixture (tests/integration/conftest.py)."""

    def __init__(self, tmp_path, build, net):
        self.net = net
        self.tg, self.dut = net.tg, net.dut
        self.created = list(net.names)
        self.tmp = tmp_path
        self.build = build
        self.bench = str(build / "xdplab-xsk-bench")
        self.run_dir = str(tmp_path / "run")
        self.procs = []

    def down(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def generator(self, seconds):
        """xdplab-trafficgen in the tg namespace: flow q -> DUT queue q, as fast as it can, for ``seconds``."""
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.tg, str(self.build / "xdplab-trafficgen"), "--dev", "tg0", "--src-mac", TG_MAC,
             "--dst-mac", DUT_MAC, "--src-ip", TG_IP, "--dst-ip", DUT_IP, "--flows", "2", "--queues", "2",
             "--cpus", "0,1", "--duration", str(seconds), "--obj", str(self.build / "xdp_trafficgen.bpf.o")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.procs.append(proc)
        return proc

    def module(self, **args):
        args.setdefault("binary", self.bench)
        args.setdefault("run_dir", self.run_dir)
        path = self.tmp / f"args-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = dict(os.environ, PYTHONPATH=COLLECTIONS)
        proc = subprocess.run(["ip", "netns", "exec", self.dut, sys.executable, "-m", MODULE, str(path)],
                              capture_output=True, text=True, env=env, check=False)  # fmt: skip
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)

    def xdp_attached(self):
        link = json.loads(sh("ip", "-n", self.dut, "-j", "-d", "link", "show", "dut0").stdout)[0]
        return bool(link.get("xdp", {}).get("prog"))

    def tg_rx_packets(self):
        return int(sh("ip", "netns", "exec", self.tg, "cat", "/sys/class/net/tg0/statistics/rx_packets").stdout)

    def bench_running(self):
        """Any process running this session's xdplab-xsk-bench binary."""
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.readlink(f"/proc/{pid}/exe") == self.bench:
                    return True
            except OSError:
                continue
        return False


@pytest.fixture
def lab(tmp_path, build, netlab):
    # 2 RX/TX queues, GRO on both ends; the namespaces go with the netlab fixture, always
    net = netlab("xd-xs", queues=2, gro=["tg0", "dut0"], macs={"tg0": TG_MAC, "dut0": DUT_MAC}, no_ipv6=True)
    lab = Lab(tmp_path, build, net)
    try:
        yield lab
    finally:
        lab.down()


def gen_records(proc):
    """Stop the generator (SIGINT: it prints its summary) and return its records."""
    proc.send_signal(signal.SIGINT)  # ip netns exec execs the program: the pid is the generator's
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def assert_left_clean(lab):
    assert not lab.xdp_attached()
    assert not lab.bench_running()
    assert not os.path.exists(lab.run_dir)


@pytest.mark.parametrize("xdp_mode, poll", [("native", False), ("skb", False), ("native", True)])
def test_rxdrop_copy_mode(lab, xdp_mode, poll):
    gen = lab.generator(60)  # stopped once the module returns
    time.sleep(0.5)
    res = lab.module(interface="dut0", mode="rxdrop", copy_mode="copy", xdp_mode=xdp_mode, queues=[0, 1], cpus=[0, 1],
                     warmup=1, samples=3, poll=poll)  # fmt: skip
    assert ("--poll" in res.get("command", [])) is poll
    sent = gen_records(gen)
    assert not res.get("failed"), res
    assert res["changed"] is False
    assert res["bind_mode"] == "copy" and res["xdp_mode"] == xdp_mode and res["driver"] == "veth"
    assert res["pps"] > 0 and res["rx_pps"] == res["pps"]
    # the parts add up to the whole; native: both queues received (flow q -> queue q). skb: generic XDP sees
    # every frame on queue 0, because veth's NAPI does not record the RX queue in the skb (measured, kernel 6.18)
    assert [q["queue"] for q in res["per_rxq"]] == [0, 1]
    if xdp_mode == "native":
        assert all(q["pps"] > 0 for q in res["per_rxq"])
    else:
        assert res["per_rxq"][0]["pps"] > 0 and res["per_rxq"][1]["pps"] == 0
    assert sum(q["pps"] for q in res["per_rxq"]) == pytest.approx(res["pps"])
    assert sum(c["pps"] for c in res["per_cpu"]) == pytest.approx(res["pps"])
    assert res["packets"] == pytest.approx(res["pps"] * res["seconds"], rel=1e-6)
    # the window lies inside the generator's run, on the same CLOCK_MONOTONIC
    gen_intervals = [r for r in sent if r["type"] == "interval"]
    gen_start = gen_intervals[0]["mono"] - gen_intervals[0]["interval_s"]
    assert sent[-1]["stopped_by"] == "SIGINT"
    assert gen_start < res["window"]["start"] < res["window"]["end"] < gen_start + sent[-1]["elapsed_s"]
    assert res["seconds"] == pytest.approx(3, abs=0.1)
    assert {e["queue"] for e in res["xdp_stats"]} == {0, 1}
    assert res["summary"]["xdp_detached"] is True and res["summary"]["stopped_by"] == "SIGINT"
    m = res["measurement"]  # the one shape, cut from the program's own records
    assert m["source"]["kind"] == "xsk_bench" and m["source"]["at"] == "dut" and m["source"]["counter"] == "rx"
    assert m["packets"] == res["packets"] and m["pps"] == pytest.approx(res["pps"], rel=1e-3)
    assert m["window"]["start"] == pytest.approx(res["window"]["start"]) and len(m["samples"]) == 3
    assert sum(s["packets"] for s in m["samples"]) == m["packets"]
    assert_left_clean(lab)


def test_zero_copy_on_veth_is_refused(lab):
    res = lab.module(interface="dut0", copy_mode="zerocopy")
    assert res["failed"]
    assert "interface dut0 (driver veth) does not support AF_XDP zero-copy; use copy_mode: copy" in res["msg"]
    # the program itself, asking the kernel: the bind is refused, nothing stays attached
    proc = sh("ip", "netns", "exec", lab.dut, lab.bench, "--dev", "dut0", "--zero-copy", "--duration", "1", check=False)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "interface dut0 (driver veth) does not support AF_XDP zero-copy; use --copy" in proc.stderr
    assert_left_clean(lab)


def test_auto_reports_copy_on_veth(lab):
    res = lab.module(interface="dut0", copy_mode="auto", warmup=0, samples=1)
    assert not res.get("failed"), res
    assert res["bind_mode"] == "copy" and res["zerocopy"] == [{"queue": 0, "zerocopy": False}]
    assert "--copy" not in res["command"] and "--zero-copy" not in res["command"]
    assert_left_clean(lab)


@pytest.mark.parametrize(
    "args, message",
    [
        ({"queues": [2]}, "queue 2 does not exist: dut0 (driver veth) has 2 RX queues (0..1)"),
        ({"interface": "nope0"}, "interface nope0 does not exist in this network namespace"),
        ({"binary": "/nonexistent/xdplab-xsk-bench"}, "run the role xdplab.testbed.bpf_programs"),
    ],
)
def test_bad_target_is_refused_before_running(lab, args, message):
    res = lab.module(**dict({"interface": "dut0"}, **args))
    assert res["failed"] and message in res["msg"]
    assert_left_clean(lab)


def test_program_refuses_a_queue_beyond_the_channels(lab):
    proc = sh("ip", "netns", "exec", lab.dut, lab.bench, "--dev", "dut0", "--queues", "0,5", check=False)
    assert proc.returncode != 0
    assert "queue 5 does not exist: interface dut0 (driver veth) has 2 RX queues (0..1)" in proc.stderr
    proc = sh("ip", "netns", "exec", lab.dut, lab.bench, "--dev", "nope0", check=False)
    assert proc.returncode != 0 and "interface 'nope0' does not exist in this network namespace" in proc.stderr


def test_an_attached_program_is_left_alone(lab):
    sh("ip", "-n", lab.dut, "link", "set", "dev", "dut0", "xdpgeneric", "obj", str(lab.build / "xdp_bare_drop.bpf.o"),
       "sec", "xdp")  # fmt: skip
    try:
        res = lab.module(interface="dut0", copy_mode="copy", xdp_mode="skb")
        assert res["failed"] and "already has an XDP program attached" in res["msg"]
        assert lab.xdp_attached()  # still the one that was there
    finally:
        sh("ip", "-n", lab.dut, "link", "set", "dev", "dut0", "xdpgeneric", "off")
    assert_left_clean(lab)


def test_txpush_reaches_the_generator_side(lab):
    before = lab.tg_rx_packets()
    res = lab.module(interface="dut0", mode="txpush", copy_mode="copy", queues=[0, 1], cpus=[0, 1], warmup=0.5,
                     samples=2, dst_mac=TG_MAC, src_ip=DUT_IP, dst_ip=TG_IP, packet_len=64)  # fmt: skip
    received = lab.tg_rx_packets() - before
    assert not res.get("failed"), res
    assert res["pps"] == res["tx_pps"] > 0 and res["rx_pps"] == 0
    assert all(q["tx_pps"] > 0 for q in res["per_rxq"])
    # every completed frame arrived at tg0 (the program ran a little longer than the window)
    assert received >= res["summary"]["tx"] >= res["packets"] > 0
    assert res["summary"]["options"]["src_mac"] == DUT_MAC  # taken from dut0
    assert_left_clean(lab)


def test_l2fwd_returns_the_frames(lab):
    gen = lab.generator(60)  # stopped once the module returns
    time.sleep(0.5)
    before = lab.tg_rx_packets()
    res = lab.module(interface="dut0", mode="l2fwd", copy_mode="copy", queues=[0, 1], cpus=[0, 1], warmup=1, samples=2)
    returned = lab.tg_rx_packets() - before
    gen_records(gen)
    assert not res.get("failed"), res
    assert res["pps"] == res["rx_pps"] > 0 and res["tx_pps"] > 0
    summary = res["summary"]
    assert summary["tx"] > 0 and returned >= summary["tx"]
    assert_left_clean(lab)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_signals_leave_nothing_attached(lab, sig):
    proc = subprocess.Popen(["ip", "netns", "exec", lab.dut, lab.bench, "--dev", "dut0", "--duration", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    lab.procs.append(proc)
    for _attempt in range(100):
        if lab.xdp_attached():
            break
        time.sleep(0.05)
    assert lab.xdp_attached()
    proc.send_signal(sig)  # ip netns exec execs the program: the pid is the program's
    out, _err = proc.communicate(timeout=20)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL  # no summary, but the kernel dropped the BPF link
    else:
        assert proc.returncode == 0
        summary = json.loads(out.splitlines()[-1])
        assert summary["type"] == "summary" and summary["xdp_detached"] is True
        assert summary["stopped_by"] == signal.Signals(sig).name
    assert not lab.xdp_attached() and not lab.bench_running()


def test_absent_stops_a_leftover_run(lab):
    # a run left behind, recorded in run_dir the way the module records it
    res = lab.module(interface="dut0", _ansible_check_mode=True)
    argv = res["command"]
    argv[argv.index("--duration") + 1] = "0"
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    script = (
        "import sys; from ansible_collections.xdplab.testbed.plugins.module_utils._process import Process; "
        "Process(sys.argv[1], 'xsk_bench', kind='xsk_bench').start(sys.argv[2:], {})"
    )
    sh("ip", "netns", "exec", lab.dut, sys.executable, "-c", script, lab.run_dir, *argv, env=env)
    for _attempt in range(100):
        if lab.xdp_attached():
            break
        time.sleep(0.05)
    assert lab.xdp_attached() and lab.bench_running()

    res = lab.module(state="absent", _ansible_check_mode=True)
    assert res["changed"] is True and lab.bench_running()
    res = lab.module(state="absent")
    assert res["changed"] is True and any(p.endswith("xsk_bench.state.json") for p in res["removed"])
    assert_left_clean(lab)
    assert lab.module(state="absent")["changed"] is False


def test_socket_options_reach_the_program(lab):
    res = lab.module(interface="dut0", copy_mode="copy", need_wakeup=False, busy_poll=True, busy_poll_budget=16,
                     busy_poll_timeout=50, frame_size=2048, unaligned=True, batch_size=32, warmup=0, samples=1)  # fmt: skip
    assert not res.get("failed"), res
    options = res["summary"]["options"]
    assert options["need_wakeup"] is False and options["busy_poll"] is True
    assert options["busy_poll_budget"] == 16 and options["busy_poll_timeout_us"] == 50
    assert options["frame_size"] == 2048 and options["unaligned"] is True and options["batch"] == 32
    assert_left_clean(lab)


def test_a_bench_killed_mid_measurement_fails_naming_the_signal(lab):
    """kill -9 of the bench while the module measures: the module fails naming SIGKILL and the bench's stderr,
    returns process, and leaves nothing (no program attached, no process, no run files)."""
    lab.generator(20)
    path = lab.tmp / "killed.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"binary": lab.bench, "run_dir": lab.run_dir, "interface": "dut0",
                                                        "copy_mode": "copy", "warmup": 1, "samples": 10}}))  # fmt: skip
    module = subprocess.Popen(["ip", "netns", "exec", lab.dut, sys.executable, "-m", MODULE, str(path)],
                              env=dict(os.environ, PYTHONPATH=COLLECTIONS), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        state_path = os.path.join(lab.run_dir, "xsk_bench.state.json")
        deadline = time.monotonic() + 30
        while not (os.path.exists(state_path) and lab.xdp_attached()):
            assert time.monotonic() < deadline and module.poll() is None, module.stderr.read()
            time.sleep(0.05)
        with open(state_path) as f:
            pid = json.load(f)["pid"]
        time.sleep(1.5)  # inside the window
        os.kill(pid, signal.SIGKILL)
        out, err = module.communicate(timeout=60)
    finally:
        if module.poll() is None:
            module.kill()
            module.wait()
    assert out.strip(), err
    res = json.loads(out)
    assert res["failed"], res
    assert res["msg"].startswith(
        "xdplab-xsk-bench (pid %d) was killed by signal 9 (SIGKILL) during the measurement; stderr: " % pid
    ), res["msg"]
    assert res["process"]["pid"] == pid and res["process"]["signal_name"] == "SIGKILL", res["process"]
    assert_left_clean(lab)

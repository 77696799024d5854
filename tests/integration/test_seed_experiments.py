# SPDX-License-Identifier: GPL-3.0-or-later
"""One trial of each of the seeds' experiments (issue 10), run the way their systems run it, against the real kernel.

- xdp_pass_tcp (system tcp): an iperf3 server on the DUT (module iperf3_server), XDP_PASS attached natively in
  driver-count mode (xdp_program), iperf3's TCP streams from the generator namespace (traffic_generator, backend
  iperf3), the DUT port's counters over the window (ethtool_stats), the record with its tcp section
  (trial_record, validated against docs/trial_record.schema.json) and the report (seed_report).
- afxdp (system af_xdp): xdplab-xsk-bench l2fwd bound XDP_SKB (generic XDP, copy) while xdplab-trafficgen offers
  64-byte frames; the frames come back to the generator's veth end, where they are counted; the record and the
  seeds' table (seed_report kind afxdp) with our cell filled and the zero-copy cell carrying its reason.

Each module runs as Ansible runs it (own process, arguments in a JSON file) inside ``ip netns exec``; the lab is
the netlab fixture's (namespaces xd-se-<random>-tg/-dut), bpf/ is built into a private directory.
"""

import csv
import json
import os
import secrets
import shutil
import subprocess
import sys
import time

import jsonschema
import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
MODULES = "ansible_collections.xdplab.testbed.plugins.modules"
TG_MAC, DUT_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
TG_IP, DUT_IP = "10.203.0.1", "10.203.0.2"
with open(os.path.join(ROOT, "docs", "trial_record.schema.json")) as _f:
    VALIDATOR = jsonschema.Draft202012Validator(json.load(_f))


def sh(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kw)


def install_iperf3():
    """iperf3 from Debian when it is not there yet (the role vlab's xdplab_dut_packages has it, a bare machine not).

    The package's debconf question (start a daemon) keeps its default, no, under DEBIAN_FRONTEND=noninteractive.
    """
    if shutil.which("iperf3"):
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=900", "iperf3"]
    proc = subprocess.run(install, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:  # a machine whose package lists are stale or empty
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True, env=env, check=False)
        proc = subprocess.run(install, capture_output=True, text=True, env=env, check=False)
    failed = "could not install iperf3 (%s): %s" % (" ".join(install), (proc.stdout + proc.stderr)[-1500:])
    assert proc.returncode == 0 and shutil.which("iperf3"), failed


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    install_iperf3()
    out = tmp_path_factory.mktemp("seed-build")
    targets = [str(out / t) for t in ("xdplab-xsk-bench", "xdplab-trafficgen", "xdp_trafficgen.bpf.o", "xdp_bench.bpf.o")]
    proc = subprocess.run(["make", "-C", os.path.join(ROOT, "bpf"), "BUILD=%s" % out, *targets], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


class Lab:
    def __init__(self, tmp_path, net):
        self.tmp, self.net = tmp_path, net
        self.tg, self.dut = net.tg, net.dut

    def module(self, name, ns, **args):
        path = self.tmp / f"args-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = dict(os.environ, PYTHONPATH=COLLECTIONS)
        return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", f"{MODULES}.{name}", str(path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip

    def run(self, name, ns, **args):
        out, err = self.module(name, ns, **args).communicate(timeout=120)
        assert out.strip(), err
        res = json.loads(out)
        assert not res.get("failed"), res
        return res

    def record(self, **args):
        """trial_record on the controller side (no namespace needed: it writes a file)."""
        path = self.tmp / f"args-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        proc = subprocess.run([sys.executable, "-m", f"{MODULES}.trial_record", str(path)], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False)  # fmt: skip
        res = json.loads(proc.stdout)
        assert not res.get("failed"), res
        assert not list(VALIDATOR.iter_errors(res["record"]))
        return res["record"]

    def pids_of(self, name):
        return sh("pgrep", "-x", name, check=False).stdout.split()


@pytest.fixture
def lab(tmp_path, build, netlab):
    net = netlab("xd-se", queues=1, gro=["tg0", "dut0"], macs={"tg0": TG_MAC, "dut0": DUT_MAC},
                 addresses={"tg0": TG_IP + "/24", "dut0": DUT_IP + "/24"}, no_ipv6=True)  # fmt: skip
    return Lab(tmp_path, net)


def test_one_tcp_trial_through_xdp_pass(lab, build, tmp_path):
    run_dir = str(tmp_path / "run")
    before_iperf3 = set(lab.pids_of("iperf3"))
    server = lab.run("iperf3_server", lab.dut, cpus=[1], bind=DUT_IP, port=5311, run_dir=run_dir)
    assert server["changed"] and server["version"].startswith("iperf 3")
    again = lab.run("iperf3_server", lab.dut, cpus=[1], bind=DUT_IP, port=5311, run_dir=run_dir)
    assert again["changed"] is False and again["pid"] == server["pid"]  # idempotent
    xdp = lab.run("xdp_program", lab.dut, interface="dut0", state="present", object=str(build / "xdp_bench.bpf.o"),
                  program="xdp_bench_pass", mode="native", variables={"touch_mode": 0, "count_mode": 1})  # fmt: skip
    try:
        lab.run("traffic_generator", lab.tg, backend="iperf3", state="started", run_dir=run_dir, interface="tg0",
                src_mac=TG_MAC, dst_mac=DUT_MAC, src_ip=TG_IP, dst_ip=DUT_IP, cpus=[0], duration=10,
                backend_options={"port": 5311, "streams": 2, "window": "4M", "time": 4, "omit": 1})  # fmt: skip
        cpu_before = lab.run("cpu_usage", lab.dut, cpus=[1], snapshot_only=True)
        measured = lab.run("ethtool_stats", lab.dut, devices=["dut0"], warmup=1, interval=1, samples=2)
        cpu = lab.run("cpu_usage", lab.dut, cpus=[1], since=cpu_before["snapshot"])
        stopped = lab.run("traffic_generator", lab.tg, state="stopped", run_dir=run_dir, wait=True, duration=10)
    finally:
        lab.run("traffic_generator", lab.tg, state="absent", run_dir=run_dir)
        lab.run("xdp_program", lab.dut, interface="dut0", state="absent")
        lab.run("iperf3_server", lab.dut, state="absent", run_dir=run_dir)
    summary = stopped["summary"]
    tcp = summary["tcp"]
    assert summary["backend"] == "iperf3" and tcp["goodput_source"] == "receiver" and tcp["goodput_gbit"] > 0.05
    assert tcp["streams"] == 2 and tcp["sock_bufsize"] == 4 * 1024**2
    assert summary["sent"] > 0 and measured["measurement"]["pps"] > 0
    rec = lab.record(path=str(tmp_path / "trials.jsonl"), experiment="xdp_pass_tcp",
                     trial={"trial_id": "tcp-1", "repetition": 1,
                            "point": {"system": "tcp", "program": "pass_native", "streams": 2, "window": "4M"}},
                     status="ok", started_at="2026-12-01T13:00:00Z", measurement=measured["measurement"], cpu=cpu,
                     generator=summary, tcp=dict(tcp, driver_rates=measured["rates"]),
                     provenance={"dut": {"driver": "veth"}, "program": {"id": xdp["id"], "name": xdp["name"]}})  # fmt: skip
    assert rec["tcp"]["cpu_per_gbit"] == pytest.approx(rec["tcp"]["cpu"]["busy"] / tcp["goodput_gbit"])
    assert rec["tcp"]["driver_counters"] == {} and "veth" in rec["tcp"]["driver_counters_note"]
    assert xdp["variables"]["count_mode"] == 1
    report = lab.run("seed_report", lab.tg, kind="xdp_pass_tcp", results=str(tmp_path / "trials.jsonl"), dest=str(tmp_path),
                     veth=True, seed={"none": {"goodput_gbit": 89.7, "cpu_busy": 58},
                                      "pass_native": {"goodput_gbit": 83.3, "cpu_busy": 100}})  # fmt: skip
    assert "+72.4 %" in report["text"] and "XDP_PASS native" in report["text"]
    # nothing left: no server, no client, nothing attached
    assert set(lab.pids_of("iperf3")) <= before_iperf3
    assert not json.loads(sh("ip", "-n", lab.dut, "-j", "-d", "link", "show", "dut0").stdout)[0].get("xdp")


def test_one_afxdp_trial_l2fwd_xdp_skb(lab, build, tmp_path):
    run_dir = str(tmp_path / "run")
    tg_rx = "/sys/class/net/tg0/statistics/rx_packets"
    gen = lab.run("traffic_generator", lab.tg, state="started", run_dir=run_dir, interface="tg0", src_mac=TG_MAC,
                  dst_mac=DUT_MAC, src_ip=TG_IP, dst_ip=DUT_IP, cpus=[0], duration=30,
                  binary=str(build / "xdplab-trafficgen"))  # fmt: skip
    assert gen["running"]
    try:
        time.sleep(0.5)
        before = int(sh("ip", "netns", "exec", lab.tg, "cat", tg_rx).stdout)
        res = lab.run("xsk_bench", lab.dut, state="measured", binary=str(build / "xdplab-xsk-bench"), interface="dut0",
                      mode="l2fwd", copy_mode="copy", xdp_mode="skb", poll=True, queues=[0], cpus=[1], warmup=1,
                      samples=2, run_dir=run_dir)  # fmt: skip
        returned = int(sh("ip", "netns", "exec", lab.tg, "cat", tg_rx).stdout) - before
        stopped = lab.run("traffic_generator", lab.tg, state="stopped", run_dir=run_dir)
    finally:
        lab.run("traffic_generator", lab.tg, state="absent", run_dir=run_dir)
    assert res["xdp_mode"] == "skb" and res["bind_mode"] == "copy" and res["pps"] > 0
    assert returned >= res["summary"]["tx"] > 0  # l2fwd's frames came back to the generator's end
    lab.record(path=str(tmp_path / "afxdp.jsonl"), experiment="afxdp",
               trial={"trial_id": "afxdp-1", "point": {"system": "af_xdp", "mode": "l2fwd", "bind": "skb", "packet_len": 64,
                                                       "cores": 1}, "repetition": 1},
               status="ok", started_at="2026-12-01T13:00:00Z", measurement=res["measurement"],
               generator=stopped["summary"])  # fmt: skip
    report = lab.run("seed_report", lab.tg, kind="afxdp", results=str(tmp_path / "afxdp.jsonl"), dest=str(tmp_path),
                     reference=os.path.join(ROOT, "playbooks", "reference", "afxdp_rfc_v3.csv"),
                     reasons={"*/*/drv_zerocopy": "veth has no AF_XDP zero-copy"})  # fmt: skip
    row = next(line for line in report["text"].splitlines() if line.startswith("| l2fwd | 64 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "1.9" and float(cells[3]) == pytest.approx(res["pps"] / 1e6, abs=0.01)
    assert "veth has no AF_XDP zero-copy" in cells[6]
    with open(os.path.join(ROOT, "playbooks", "reference", "afxdp_rfc_v3.csv")) as f:
        assert len(list(csv.DictReader(f))) == 5

# SPDX-License-Identifier: GPL-3.0-or-later
"""The latency path against the real kernel: xdplab-trafficgen --latency-stamp straight into xdp_latency_sink.

The floor of the latency experiment: a veth pair ``gen0`` (generator namespace) -> ``sink0`` (sink namespace), the
sink attached natively with xdplab.testbed.xdp_program, read with xdplab.testbed.latency_stats, both run as Ansible
runs a module (own process, arguments from a JSON file, inside ``ip netns exec``). At 100 pps every frame sent
must be in the histogram or counted as lost.
"""

import json
import os
import secrets
import subprocess
import sys

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
BUILD = os.path.join(ROOT, "bpf", "build")
BINARY = os.path.join(BUILD, "xdplab-trafficgen")
GEN_OBJECT = os.path.join(BUILD, "xdp_trafficgen.bpf.o")
SINK_OBJECT = os.path.join(BUILD, "xdp_latency_sink.bpf.o")
MODULES = "ansible_collections.xdplab.testbed.plugins.modules"


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


@pytest.fixture
def floor(netlab, tmp_path, bpf_build):
    bpf_build("xdplab-trafficgen", "xdp_trafficgen.bpf.o", "xdp_latency_sink.bpf.o")
    lab = netlab("lt", sides=("gen", "sink"), pairs=[("gen0", "sink0")], no_ipv6=True, lo=False)

    def module(name, ns, **args):
        path = tmp_path / f"args-{secrets.token_hex(4)}.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = dict(os.environ, PYTHONPATH=COLLECTIONS)
        proc = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", f"{MODULES}.{name}", str(path)],
                              capture_output=True, text=True, env=env, check=False)
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)

    res = module("xdp_program", lab.sink, interface="sink0", object=SINK_OBJECT, program="xdp_latency_sink",
                 state_dir=str(tmp_path / "xdp"))
    assert not res.get("failed"), res
    lab.module = module
    return lab


def generate(ns, *extra):
    proc = sh("ip", "netns", "exec", ns, BINARY, "--dev", "gen0", "--src-mac", "02:00:00:00:00:01",
              "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.0.0.1", "--dst-ip", "10.0.0.2", "--cpus", "0",
              "--obj", GEN_OBJECT, *extra, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_every_frame_at_100pps_is_in_the_histogram_or_lost(floor):
    reset = floor.module("latency_stats", floor.sink, interface="sink0", state="reset")
    assert reset["changed"] is True and reset["program"]["name"] == "xdp_latency_sin"
    summary = generate(floor.gen, "--rate", "100", "--duration", "2", "--latency-stamp")
    assert summary["latency_stamp"] is True and summary["sent"] >= 150, summary
    res = floor.module("latency_stats", floor.sink, interface="sink0", sent=summary["sent"],
                       seconds=summary["elapsed_s"])
    lat = res["latency"]
    assert lat["accounted"] is True, lat
    assert lat["count"] + lat["lost"] == summary["sent"]
    # a veth pair at 100 pps loses nothing and keeps the order
    assert lat["lost"] == 0 and lat["reordered"] == 0 and lat["lost_in_sequence"] == 0, lat
    assert lat["unstamped"] == 0 and lat["clock_behind"] == 0 and lat["streams"] == 1
    # the numbers are latencies of this machine's veth: between 100 ns and 10 ms, ordered
    assert 100 <= lat["min_ns"] <= lat["p50_ns"] <= lat["p99_ns"] <= lat["max_ns"] * 1.01 < 10_000_000, lat
    assert lat["min_ns"] <= lat["average_ns"] <= lat["max_ns"]
    assert 90 <= lat["offered_pps"] <= 105, lat
    assert lat["histogram"]["encoded"].startswith("HISTF")

    # without the stamp the sink sees frames it cannot time: counted, not in the histogram
    floor.module("latency_stats", floor.sink, interface="sink0", state="reset")
    plain = generate(floor.gen, "--rate", "100", "--duration", "0.5")
    res = floor.module("latency_stats", floor.sink, interface="sink0", sent=plain["sent"])
    assert res["latency"]["count"] == 0 and res["latency"]["unstamped"] == plain["sent"], res["latency"]


def test_no_sink_is_a_clear_error(floor):
    # no sink on the generator's own port: the module says what to attach
    res = floor.module("latency_stats", floor.gen, interface="gen0")
    assert res["failed"] is True and "xdp_latency_sink" in res["msg"], res


def test_a_load_above_the_generator_ceiling_is_refused_before_any_change(tmp_path):
    # the validate play fails first, in check mode, before the lab is built or read
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + ":" + os.environ["PATH"])
    proc = subprocess.run(["ansible-playbook", "-i", "inventories/vlab", "playbooks/paper_latency.yml", "--check",
                           "-e", '{"paper_latency_loads_mpps": [0.0001, 2]}', "-e", f"experiment_results_dir={tmp_path}"],
                          cwd=ROOT, capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "latency loads [2000000.0] pps are above the stamping generator's ceiling" in out, out[-3000:]
    assert "experiment_latency_max_pps=1000000" in out
    assert "Bring the testbed up" not in out and not list(tmp_path.iterdir())

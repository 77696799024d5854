"""xdplab.testbed.vlab_topology against the running kernel (root only): veth queues, GRO -> NAPI,
threaded NAPI kthreads pinned round-robin, their survival across XDP attach/detach, idempotence,
check mode and teardown. Namespaces are named xv-vt-<random>."""

import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(ROOT, "plugins", "modules", "vlab_topology.py")
# the module imports its spec and netlink code from module_utils (ansible_collections.xdplab.testbed)
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "collections"))

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (creates network namespaces)"),
]

XDP_PASS_C = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("xdp") int xv_pass(struct xdp_md *ctx) { return XDP_PASS; }
char _license[] SEC("license") = "GPL";
"""


def sh(*argv, check=True):
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def run_module(tmp_path, args, check_mode=False):
    data = dict(args)
    if check_mode:
        data["_ansible_check_mode"] = True
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": data}))
    done = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, env=ENV, check=False)
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


def napi_threads(ifname):
    """{pid: (comm, allowed cpus)} of the kthreads whose comm starts with napi/IFNAME-."""
    threads = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm.startswith(f"napi/{ifname}-"):
            threads[int(pid)] = (comm, sorted(os.sched_getaffinity(int(pid))))
    return threads


@pytest.fixture
def names():
    tag = uuid.uuid4().hex[:6]
    ns = (f"xv-vt-{tag}-a", f"xv-vt-{tag}-b")
    yield ns
    for name in ns:
        subprocess.run(["ip", "netns", "delete", name], check=False, capture_output=True)


def topology(ns, queues=2, cpus=(0, 1), **end_b):
    b = {
        "namespace": ns[1],
        "interface": "xvt-b0",
        "mac": "02:00:00:00:78:02",
        "address": "198.18.8.2/30",
        "napi_cpus": list(cpus),
    }
    b.update(end_b)
    return {
        "state": "present",
        "namespaces": list(ns),
        "links": [
            {
                "name": "vt",
                "queues": queues,
                "ends": [
                    {
                        "namespace": ns[0],
                        "interface": "xvt-a0",
                        "mac": "02:00:00:00:78:01",
                        "address": "198.18.8.1/30",
                        "gro": True,
                    },
                    b,
                ],
            }
        ],
    }


def test_converge_pin_idempotence_check_mode_and_teardown(tmp_path, names):
    args = topology(names)
    planned = run_module(tmp_path, args, check_mode=True)
    assert planned["changed"] and not planned.get("failed"), planned
    assert not any(n in sh("ip", "netns", "list").stdout for n in names)  # check mode changed nothing

    first = run_module(tmp_path, args)
    assert first["changed"] and not first.get("failed"), first
    assert first["namespaces"]["created"] == list(names)
    assert first["links"]["created"] == ["vt"]
    link = json.loads(sh("ip", "-n", names[1], "-j", "-d", "link", "show", "dev", "xvt-b0").stdout)[0]
    assert (link["num_rx_queues"], link["num_tx_queues"], link["address"]) == (2, 2, "02:00:00:00:78:02")

    # one kthread per RX queue, queue q pinned to cpus[q % 2]
    threads = {t["queue"]: t for t in first["napi_threads"] if t["interface"] == "xvt-b0"}
    assert sorted(threads) == [0, 1]
    for q, t in threads.items():
        assert os.sched_getaffinity(t["pid"]) == {q % 2}
        assert t["name"] == f"napi/xvt-b0-{t['napi_id']}"
    assert sorted(napi_threads("xvt-b0")) == sorted(t["pid"] for t in threads.values())
    assert {str(t["pid"]): t["cpu"] for t in threads.values()}.items() <= first["pinned"].items()

    # permanent neighbours: the generator needs no ARP
    neigh = json.loads(sh("ip", "-n", names[0], "-j", "neigh", "show", "dev", "xvt-a0").stdout)
    assert [(n["dst"], n["lladdr"], n["state"]) for n in neigh] == [("198.18.8.2", "02:00:00:00:78:02", ["PERMANENT"])]
    if shutil.which("ping"):
        assert sh("ip", "netns", "exec", names[0], "ping", "-c", "1", "-W", "1", "198.18.8.2", check=False).returncode == 0

    second = run_module(tmp_path, args)
    assert second["changed"] is False and second["actions"] == [], second
    assert run_module(tmp_path, args, check_mode=True)["changed"] is False

    # a queue count change is applied with ethtool -L and the new NAPI threads are pinned again
    third = run_module(tmp_path, topology(names, queues=1))
    assert third["changed"] and any("queues rx 2 tx 2 -> 1" in a for a in third["actions"]), third
    assert len(napi_threads("xvt-b0")) == 1

    absent = dict(args, state="absent")
    gone = run_module(tmp_path, absent)
    assert gone["changed"] and sorted(gone["namespaces"]["removed"]) == sorted(names)
    assert napi_threads("xvt-b0") == {} and napi_threads("xvt-a0") == {}
    again = run_module(tmp_path, absent)
    assert again["changed"] is False


def test_gro_makes_napi_and_kthreads_survive_xdp_attach(tmp_path, names):
    """GRO on: NAPI without XDP; XDP attach/detach keeps the same kthreads and their pinning."""
    if not shutil.which("clang"):
        pytest.skip("clang is needed to build a tiny XDP object")
    obj = tmp_path / "pass.o"
    src = tmp_path / "pass.c"
    src.write_text(XDP_PASS_C)
    arch_inc = f"/usr/include/{os.uname().machine}-linux-gnu"
    sh("clang", "-O2", "-g", "-target", "bpf", f"-I{arch_inc}", "-c", str(src), "-o", str(obj))

    # without GRO and without XDP there is no NAPI and threaded cannot be set
    plain = topology(names, napi_cpus=[], gro=False)
    result = run_module(tmp_path, plain)
    assert not result.get("failed"), result
    assert napi_threads("xvt-b0") == {}
    write = sh("ip", "netns", "exec", names[1], "sh", "-c", "echo 1 > /sys/class/net/xvt-b0/threaded", check=False)
    assert write.returncode != 0  # EOPNOTSUPP: no NAPI instance

    result = run_module(tmp_path, topology(names))
    assert not result.get("failed"), result
    before = napi_threads("xvt-b0")
    assert len(before) == 2 and sorted(cpus for _c, cpus in before.values()) == [[0], [1]]

    for mode in ("xdpdrv", "xdpgeneric"):
        netns = ["ip", "netns", "exec", names[1], "ip", "link", "set", "dev", "xvt-b0"]
        sh(*netns, mode, "obj", str(obj), "sec", "xdp")
        assert napi_threads("xvt-b0") == before, f"{mode} attach re-created the NAPI threads"
        sh(*netns, mode, "off")
        assert napi_threads("xvt-b0") == before, f"{mode} detach re-created the NAPI threads"

    assert run_module(tmp_path, topology(names))["changed"] is False


def test_napi_affinity_moves_a_queues_thread_to_the_nic_cpu_and_back(tmp_path, names):
    """Issue 28: the NIC CPU. xdplab.testbed.napi_affinity, run inside the DUT's namespace as the netns connection
    runs it, pins each RX queue's NAPI thread round-robin over its CPUs; check mode and a second run change nothing."""
    built = run_module(tmp_path, topology(names, queues=2, cpus=(1,)))
    assert not built.get("failed"), built
    module = os.path.join(ROOT, "plugins", "modules", "napi_affinity.py")

    def affinity(cpus, check_mode=False):
        data = {"interface": "xvt-b0", "cpus": cpus}
        if check_mode:
            data["_ansible_check_mode"] = True
        path = tmp_path / "napi.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": data}))
        done = subprocess.run(["ip", "netns", "exec", names[1], sys.executable, module, str(path)],
                              capture_output=True, text=True, env=ENV, check=False)  # fmt: skip
        assert done.stdout, done.stderr
        return json.loads(done.stdout)

    assert sorted(cpus for _comm, cpus in napi_threads("xvt-b0").values()) == [[1], [1]]
    planned = affinity([0], check_mode=True)
    assert planned["changed"] and [t["cpu"] for t in planned["threads"]] == [0, 0], planned
    assert sorted(cpus for _comm, cpus in napi_threads("xvt-b0").values()) == [[1], [1]]  # check mode changed nothing
    moved = affinity([0])
    assert moved["changed"] and [t["before"] for t in moved["threads"]] == [[1], [1]], moved
    assert sorted(cpus for _comm, cpus in napi_threads("xvt-b0").values()) == [[0], [0]]
    assert not affinity([0])["changed"]
    back = affinity([1, 0])  # round-robin: rx-0 -> CPU 1, rx-1 -> CPU 0
    assert back["changed"] and [(t["queue"], t["cpu"]) for t in back["threads"]] == [(0, 1), (1, 0)], back
    wrong = affinity([7])
    assert wrong.get("failed") and "cpus: CPU 7 is not online (online: 0-1)" in wrong["msg"], wrong

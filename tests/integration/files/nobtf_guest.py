"""Runs inside the qemu guest of tests/integration/test_kernel_nobtf.py (a kernel without BTF): module
xdp_program attaches xdp_bench_drop to lo the way an experiment does (variant auto), then the attached
program is run with BPF_PROG_RUN and its counter read. Prints one line XDPLAB_GUEST_RESULT=<json>."""

import json
import os
import subprocess
import sys

from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf

REPEAT = 7
# a 64-byte frame without FCS: broadcast destination, a locally administered source, IPv4 ethertype
FRAME = bytes.fromhex("ffffffffffff020000000001" + "0800") + bytes(46)
XDP_DROP = 1


def module(args):
    path = "/run/tmp/args.json"
    with open(path, "w") as fh:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, fh)
    cmd = [sys.executable, "-m", "ansible_collections.xdplab.testbed.plugins.modules.xdp_program", path]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        return json.loads(res.stdout)
    except ValueError:
        return {"failed": True, "msg": "not JSON", "stdout": res.stdout[-2000:], "stderr": res.stderr[-2000:]}


def main(prefix):
    out = {"uname": os.uname().release, "btf_vmlinux": os.path.exists(libbpf.BTF_VMLINUX)}
    subprocess.run(["ip", "link", "set", "lo", "up"], check=False)
    args = {
        "interface": "lo",
        "mode": "skb",
        "object": os.path.join(prefix, "lib/bpf/xdp_bench.bpf.o"),
        "program": "xdp_bench_drop",
        "variables": {"touch_mode": 1, "count_mode": 0},
        "state_dir": "/run/xdplab/xdp",
    }
    first = out["attach"] = module(args)
    if first.get("id"):
        fd = libbpf.prog_fd_by_id(first["id"])
        try:
            retval, _frame = libbpf.test_run(fd, FRAME, repeat=REPEAT)
        finally:
            os.close(fd)
        stats = libbpf.find_prog_map(first["id"], name="rxq_stats")
        # struct rxq_counters {packets, bytes, errors} of RX queue 0 (BPF_PROG_RUN's), summed over the CPUs
        queue0 = libbpf.read_percpu_array(stats["id"])[0] if stats else []
        counters = [sum(int.from_bytes(v[8 * i : 8 * i + 8], "little") for v in queue0) for i in range(3)]
        out["run"] = {"retval": retval, "repeat": REPEAT, "xdp_drop": retval == XDP_DROP, "queue0": counters}
        out["again"] = module(args)
        out["detach"] = module({"interface": "lo", "state": "absent", "state_dir": "/run/xdplab/xdp"})
    print("XDPLAB_GUEST_RESULT=" + json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

"""xdp_program on a program that is not an XDP program: refused, naming its type and the object's XDP
programs, before anything is attached (the bad-input item of issue 10)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.root


TC_PROGRAM = """
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_pass(struct __sk_buff *skb)
{
    return TC_ACT_OK;
}

SEC("xdp")
int xdp_other(struct xdp_md *ctx)
{
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"""


def test_a_program_that_is_not_xdp_is_refused_before_anything_is_attached(netlab, tmp_path):
    src = tmp_path / "tc_pass.bpf.c"
    src.write_text(TC_PROGRAM)
    obj = tmp_path / "tc_pass.bpf.o"
    multiarch = subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/" + multiarch, "-c", str(src), "-o",
                    str(obj)], check=True)  # fmt: skip
    lab = netlab("xd-nx", single=True, lo=True)
    args = {"interface": "lo", "object": str(obj), "program": "tc_pass", "mode": "skb",
            "state_dir": str(tmp_path / "state")}  # fmt: skip
    (tmp_path / "args.json").write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "collections"))
    res = lab.exec(lab.ns, sys.executable, "-m", "ansible_collections.xdplab.testbed.plugins.modules.xdp_program",
                   str(tmp_path / "args.json"), check=False, env=env)  # fmt: skip
    result = json.loads(res.stdout)
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"] == (
        f"program tc_pass in {obj} is a sched_cls (tc) program, not an XDP program "
        f'(its section must be SEC("xdp")); XDP programs in the object: xdp_other'
    ), result["msg"]
    assert "xdp" not in lab.link("lo", lab.ns), lab.link("lo", lab.ns)
    assert not (tmp_path / "state").exists()

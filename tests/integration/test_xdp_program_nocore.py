"""xdp_program's variant auto on this machine's real kernel with its BTF hidden: in a private mount and
network namespace a tmpfs covers /sys/kernel/btf, so the module's probe finds no vmlinux BTF and loads the
non-CO-RE xdp_bench_drop (bpf/Makefile's nocore objects) into the real kernel; files/nobtf_guest.py (the
script the qemu test of test_kernel_nobtf.py runs in its guest) attaches it to lo, runs it with BPF_PROG_RUN
and reads its counter. The kernel itself has BTF: what a kernel built without it does is the qemu test."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUEST = os.path.join(ROOT, "tests", "integration", "files", "nobtf_guest.py")
REPEAT, FRAME_LEN = 7, 60

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def bpf_prefix(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nocore-bpf")
    prefix = tmp / "prefix"
    make = ["make", "-C", os.path.join(ROOT, "bpf"), "-j2", "BUILD=" + str(tmp / "build"), "PREFIX=" + str(prefix)]
    subprocess.run(make + [str(prefix / "lib/bpf/xdp_bench.bpf.o"), "install-nocore"], check=True, capture_output=True)
    return prefix


def test_auto_loads_the_nocore_variant_where_btf_is_missing(bpf_prefix, tmp_path):
    script = (
        "mount --make-rprivate / && mount -t tmpfs xdplab-nobtf /sys/kernel/btf && mount -t tmpfs xdplab-run /run"
        ' && mkdir -p /run/tmp && ip link set lo up && exec "$0" "$1" "$2"'
    )
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "collections"), TMPDIR="/run/tmp")
    res = subprocess.run(["unshare", "--mount", "--net", "sh", "-c", script, sys.executable, GUEST, str(bpf_prefix)],
                         capture_output=True, text=True, check=False, env=env, timeout=120)  # fmt: skip
    line = next((x for x in res.stdout.splitlines() if x.startswith("XDPLAB_GUEST_RESULT=")), None)
    assert line, res.stdout[-2000:] + res.stderr[-2000:]
    out = json.loads(line.split("=", 1)[1])
    attach = out["attach"]
    assert out["btf_vmlinux"] is False and not attach.get("failed"), attach
    assert attach["kernel_features"] == {"release": os.uname().release, "btf_vmlinux": False, "global_data": True}
    assert attach["variant"] == "nocore"
    assert attach["object"] == str(bpf_prefix / "lib/bpf/nocore/xdp_bench_drop-count_mode0-touch_mode1.bpf.o")
    assert out["run"]["retval"] == 1 and out["run"]["queue0"] == [REPEAT, REPEAT * FRAME_LEN, 0]
    assert out["again"]["changed"] is False and out["again"]["variant"] == "nocore"
    assert out["detach"]["changed"] is True

# SPDX-License-Identifier: GPL-3.0-or-later
"""xdp_program logic against a faked kernel (the real kernel is exercised in tests/integration)."""

import errno
import json
import os
import subprocess
from unittest import mock

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.modules import xdp_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OBJECT = os.path.join(ROOT, "bpf", "build", "xdp_bench.bpf.o")


@pytest.fixture(scope="module")
def bench_object():
    if not os.path.exists(OBJECT):
        proc = subprocess.run(["make", "-C", os.path.join(ROOT, "bpf")], capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not os.path.exists(OBJECT):
            pytest.skip(f"cannot build {OBJECT}: {proc.stderr[-500:]}")
    try:
        libbpf.load_library()
    except libbpf.LibbpfError as exc:
        pytest.skip(str(exc))
    return OBJECT


def run_module(main, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        main()
    return json.loads(capsys.readouterr().out)


def test_resolve_variables():
    assert xdp_program.resolve_variables({"touch_mode": 1, "redirect_ifindex": "lo"}) == {
        "touch_mode": 1,
        "redirect_ifindex": 1,
    }
    assert xdp_program.resolve_variables({"touch_mode": "0x2", "redirect_ifindex": "3"}) == {
        "touch_mode": 2,
        "redirect_ifindex": 3,
    }
    with pytest.raises(ValueError, match="boolean"):
        xdp_program.resolve_variables({"touch_mode": True})
    with pytest.raises(ValueError, match="only \\*_ifindex variables take interface names"):
        xdp_program.resolve_variables({"touch_mode": "lo"})
    with pytest.raises(ValueError, match="does not exist in this network namespace"):
        xdp_program.resolve_variables({"redirect_ifindex": "xp-no-such-if"})


def test_unknown_interface_lists_the_namespace(capsys):
    res = run_module(
        xdp_program.main,
        {"interface": "xp-no-such-if", "object": "/nonexistent.o", "program": "xdp_bench_drop"},
        capsys,
    )
    assert res["failed"] is True
    assert "interface xp-no-such-if does not exist in this network namespace" in res["msg"]
    assert "lo" in res["msg"].split("interfaces here:")[1]


def test_absent_on_a_missing_interface_holds_already(capsys):
    with mock.patch.object(AnsibleModule, "warn") as warn:
        res = run_module(xdp_program.main, {"interface": "xp-no-such-if", "state": "absent"}, capsys)
    assert not res.get("failed")
    assert res["changed"] is False
    assert res["ifindex"] is None
    assert "nothing to detach" in warn.call_args.args[0]


def test_present_needs_object_and_program(capsys):
    res = run_module(xdp_program.main, {"interface": "lo"}, capsys)
    assert res["failed"] is True and "object" in res["msg"] and "program" in res["msg"]


def test_attach_records_validate_tag_and_load_time(tmp_path, monkeypatch):
    rec = xdp_program.AttachRecords(str(tmp_path))
    info = {"id": 42, "tag": "aa", "load_time": 5}
    rec.write(info, {"object_sha256": "x", "program": "xdp_bench_drop"})
    assert rec.read(info)["object_sha256"] == "x"
    assert rec.read(dict(info, tag="bb")) is None
    assert rec.read(dict(info, load_time=6)) is None

    def gone(prog_id):
        raise libbpf.LibbpfError("bpf_prog_get_fd_by_id", errno=errno.ENOENT)

    monkeypatch.setattr(libbpf, "prog_fd_by_id", gone)
    rec.prune()
    assert not os.path.exists(rec.path(42))


class FakeKernel:
    """Stands in for libbpf's kernel calls: one program (id 42) attached natively."""

    def __init__(self, monkeypatch, rodata, name="xdp_bench_drop"):
        self.info = {"id": 42, "tag": "aabbccdd00112233", "load_time": 77, "name": name, "map_ids": [7]}
        self.rodata = rodata
        monkeypatch.setattr(libbpf, "attached_program", lambda ifindex: (42, "native"))
        monkeypatch.setattr(libbpf, "prog_info", lambda prog_id=None, fd=None: dict(self.info))
        monkeypatch.setattr(libbpf, "find_prog_map", lambda prog_id, name=None, suffix=None: {"id": 7})
        monkeypatch.setattr(libbpf, "read_array", lambda map_id: [self.rodata])

        def no_attach(*a, **kw):
            raise AssertionError("must not attach")

        monkeypatch.setattr(libbpf, "xdp_attach", no_attach)
        monkeypatch.setattr(libbpf, "xdp_detach", no_attach)


def rodata(touch_mode, redirect_ifindex=0, count_mode=0):
    return b"".join(v.to_bytes(4, "little") for v in (touch_mode, redirect_ifindex, count_mode))


def test_same_program_is_not_changed(bench_object, tmp_path, monkeypatch, capsys):
    kernel = FakeKernel(monkeypatch, rodata(1))
    sha = xdp_program.file_sha256(bench_object)
    layout = libbpf.BpfObject(bench_object).datasec_layout()
    xdp_program.AttachRecords(str(tmp_path)).write(
        kernel.info, {"program": "xdp_bench_drop", "object_sha256": sha, "layout": layout}
    )
    args = {"interface": "lo", "object": bench_object, "program": "xdp_bench_drop", "state_dir": str(tmp_path),
            "variables": {"touch_mode": 1}}
    res = run_module(xdp_program.main, args, capsys)
    assert res["changed"] is False, res
    assert res["id"] == 42 and res["object_sha256"] == sha
    assert res["variables"] == {"touch_mode": 1, "redirect_ifindex": 0, "count_mode": 0}

    # another value of a .rodata variable: a change, reported in check mode without touching the kernel
    args.update(variables={"touch_mode": 2}, _ansible_check_mode=True, _ansible_diff=True)
    res = run_module(xdp_program.main, args, capsys)
    assert res["changed"] is True
    assert res["diff"]["before"]["variables"]["touch_mode"] == 1
    assert res["diff"]["after"]["variables"]["touch_mode"] == 2

    # the same values but the object's checksum differs from the record: a change
    xdp_program.AttachRecords(str(tmp_path)).write(
        kernel.info, {"program": "xdp_bench_drop", "object_sha256": "0" * 64, "layout": layout}
    )
    args["variables"] = {"touch_mode": 1}
    assert run_module(xdp_program.main, args, capsys)["changed"] is True


def test_program_attached_without_record_is_replaced(bench_object, tmp_path, monkeypatch, capsys):
    FakeKernel(monkeypatch, rodata(0))
    args = {"interface": "lo", "object": bench_object, "program": "xdp_bench_drop", "state_dir": str(tmp_path),
            "_ansible_check_mode": True}
    res = run_module(xdp_program.main, args, capsys)
    assert res["changed"] is True and res["previous"]["id"] == 42


def test_errors_list_what_exists(bench_object, tmp_path, monkeypatch, capsys):
    FakeKernel(monkeypatch, rodata(0))
    base = {"interface": "lo", "object": bench_object, "state_dir": str(tmp_path)}
    res = run_module(xdp_program.main, dict(base, program="xdp_bench_nope"), capsys)
    assert res["failed"] and "xdp_bench_drop, xdp_bench_pass, xdp_bench_tx, xdp_bench_redirect" in res["msg"]
    res = run_module(xdp_program.main, dict(base, program="xdp_bench_drop", variables={"bogus": 1}), capsys)
    assert res["failed"] and "unknown .rodata variable(s) bogus" in res["msg"]
    assert "redirect_ifindex, touch_mode" in res["msg"]
    res = run_module(xdp_program.main, dict(base, program="xdp_bench_drop", object=str(tmp_path / "no.o")), capsys)
    assert res["failed"] and "does not exist" in res["msg"] and "make -C bpf" in res["msg"]


def test_attach_error_translation():
    prog = xdp_program.XdpProgram.__new__(xdp_program.XdpProgram)
    prog.interface = "eth9"
    exc = libbpf.LibbpfError("bpf_xdp_attach", errno=errno.EOPNOTSUPP, log="libbpf: Kernel error message: nope")
    msg = prog.attach_error(exc, "native")
    assert msg.startswith("driver of eth9 does not support native XDP; use mode: skb")
    assert "Kernel error message" in msg
    assert "offload" in prog.attach_error(libbpf.LibbpfError("x", errno=errno.EINVAL), "hw")
    assert "run as root" in prog.attach_error(libbpf.LibbpfError("x", errno=errno.EPERM), "native")

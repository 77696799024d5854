# SPDX-License-Identifier: GPL-3.0-or-later
"""bpf_object_info on objects built from the example and bpf/ (libbpf opens them; nothing is loaded)."""

import hashlib
import json
import os
import shutil
import subprocess

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.modules import bpf_object_info

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    """The example built by bpf/Makefile's custom rule, and xdp_redirect_cpu (an XDP and a cpumap program)."""
    try:
        libbpf.load_library()
    except libbpf.LibbpfError as exc:
        pytest.skip(str(exc))
    tmp = tmp_path_factory.mktemp("objinfo")
    (tmp / "src").mkdir()
    shutil.copy(os.path.join(ROOT, "examples", "xdp_udp_port_filter.bpf.c"), tmp / "src" / "filter.bpf.c")
    build = tmp / "build"
    targets = [str(build / "custom" / "filter.bpf.o"), str(build / "xdp_redirect_cpu.bpf.o")]
    proc = subprocess.run(
        ["make", "-C", os.path.join(ROOT, "bpf"), f"BUILD={build}", f"CUSTOM_SRC={tmp / 'src'}", *targets],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"cannot build the objects: {proc.stderr[-500:]}")
    return targets


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        bpf_object_info.main()
    return json.loads(capsys.readouterr().out)


def test_lists_the_programs_and_the_checksum(objects, capsys):
    res = run_module({"path": objects[0], "program": "xdp_udp_port_filter"}, capsys)
    with open(objects[0], "rb") as fh:
        assert res["sha256"] == hashlib.sha256(fh.read()).hexdigest()
    assert res["programs"] == [{"name": "xdp_udp_port_filter", "section": "xdp", "type": "xdp"}]
    assert res["program"] == "xdp_udp_port_filter" and res["changed"] is False and "failed" not in res
    assert "owner" not in res, "no file attributes in the result"


def test_a_program_not_in_the_object_names_those_that_are(objects, capsys):
    res = run_module({"path": objects[1], "program": "xdp_nope"}, capsys)
    assert res["failed"] is True
    assert res["msg"] == f"program xdp_nope is not in {objects[1]}; programs in the object: xdp_redirect_cpu, xdp_cpumap_fwd"
    assert {p["name"]: p["section"] for p in res["programs"]} == {"xdp_redirect_cpu": "xdp", "xdp_cpumap_fwd": "xdp/cpumap"}


def test_without_program_nothing_is_checked_and_a_missing_file_fails(objects, capsys):
    res = run_module({"path": objects[1]}, capsys)
    assert "failed" not in res and res["program"] is None and len(res["programs"]) == 2
    res = run_module({"path": objects[1] + ".gone"}, capsys)
    assert res["failed"] is True and "does not exist on the target" in res["msg"]

# SPDX-License-Identifier: GPL-3.0-or-later
"""xdp_program's non-CO-RE variant selection: file names, the variables they compile in, and the choice a
kernel's features make (the real no-BTF kernel is tests/integration/test_kernel_nobtf.py)."""

import os
from unittest import mock

import pytest
from ansible_collections.xdplab.testbed.plugins.modules import xdp_program


def test_variant_file_names_list_the_variables_in_name_order():
    path = xdp_program.nocore_path("/x/lib/bpf", "xdp_bench_drop", {"touch_mode": 2, "count_mode": 1})
    assert path == "/x/lib/bpf/nocore/xdp_bench_drop-count_mode1-touch_mode2.bpf.o"


def test_compiled_variables_are_read_from_the_installed_names(tmp_path):
    (tmp_path / "nocore").mkdir()
    for name in ("xdp_bench_drop-count_mode0-touch_mode0.bpf.o", "xdp_bench_tx-count_mode1-touch_mode2.bpf.o"):
        (tmp_path / "nocore" / name).write_bytes(b"")
    assert xdp_program.nocore_variables(str(tmp_path), "xdp_bench_drop") == ["count_mode", "touch_mode"]
    assert xdp_program.nocore_variables(str(tmp_path), "xdp_bench_redirect") is None
    assert xdp_program.nocore_variables(str(tmp_path / "absent"), "xdp_bench_drop") is None


@pytest.mark.parametrize(
    ("btf", "global_data", "expected"),
    [(True, True, "core"), (False, True, "nocore"), (True, False, "nocore"), (False, False, "nocore")],
)
def test_auto_picks_nocore_when_btf_or_global_data_is_missing(btf, global_data, expected):
    prog = xdp_program.XdpProgram.__new__(xdp_program.XdpProgram)
    prog.params, prog.result = {"variant": "auto"}, {}
    features = {"release": "4.17.0", "btf_vmlinux": btf, "global_data": global_data}
    with mock.patch.object(xdp_program.libbpf, "kernel_features", return_value=features):
        assert prog.pick_variant() == expected
    assert prog.result["kernel_features"] == features
    lacks = [w for w, ok in (("BTF", btf), ("global data", global_data)) if not ok]
    reason = prog.nocore_reason()
    assert reason == (f" (kernel 4.17.0 has no {' and no '.join(lacks)})" if lacks else "")


@pytest.mark.parametrize("variant", ["core", "nocore"])
def test_an_explicit_variant_probes_nothing(variant):
    prog = xdp_program.XdpProgram.__new__(xdp_program.XdpProgram)
    prog.params, prog.result = {"variant": variant}, {}
    with mock.patch.object(xdp_program.libbpf, "kernel_features", side_effect=AssertionError("probed")):
        assert prog.pick_variant() == variant


@pytest.mark.skipif(os.geteuid() != 0, reason="the global-data probe loads a program (root)")
def test_the_global_data_probe_on_this_kernel():
    from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf

    features = libbpf.kernel_features()
    assert features["release"] == os.uname().release
    assert features["global_data"] is True  # every kernel this machine can run is 5.2+
    assert features["btf_vmlinux"] == os.path.exists("/sys/kernel/btf/vmlinux")

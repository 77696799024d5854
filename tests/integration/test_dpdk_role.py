"""Bad input to the role xdplab.testbed.dpdk gets a clear error before anything is built or installed.

Each case runs ansible-playbook against this machine with a throwaway playbook; the role's
directories point into tmp_path, so nothing outside it changes. The tarball cases use a small
local tarball (file:// URL) shaped like a DPDK tree: the checksum and patch checks run before
meson, so no real DPDK source is needed.
"""

import hashlib
import json
import os
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
SAMPLE_PATCH = os.path.join(ROOT, "molecule", "dpdk", "files", "0001-testpmd-bye-marker.patch")

# no_traffic: make test runs this file beside molecule's scenarios (pyproject.toml)
pytestmark = [pytest.mark.root, pytest.mark.no_traffic]

PLAY = """---
- name: Throwaway play for the dpdk role
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: xdplab.testbed.dpdk
"""


def fake_tarball(tmp_path):
    """A tar.xz with a dpdk-0.0/ tree whose testpmd.c lacks what the sample patch changes."""
    tree = tmp_path / "dpdk-0.0"
    (tree / "app" / "test-pmd").mkdir(parents=True)
    (tree / "meson.build").write_text("project('DPDK', 'c', version: '0.0')\n")
    (tree / "app" / "test-pmd" / "testpmd.c").write_text("int main(void) { return 0; }\n")
    path = tmp_path / "dpdk-0.0.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        tar.add(tree, arcname="dpdk-0.0")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def run_role(extra, tmp_path, skip_tags="dpdk_install"):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    dirs = {
        "dpdk_state_dir": str(tmp_path / "state"),
        "dpdk_source_root": str(tmp_path / "src"),
        "dpdk_prefix_root": str(tmp_path / "opt"),
        "dpdk_hugepages": [],
        "dpdk_hugepage_mounts": [],
    }
    res = subprocess.run(
        [PLAYBOOK, "-i", "localhost,", str(play), "-e", "ansible_python_interpreter=%s" % sys.executable,
         "-e", json.dumps(dict(dirs, **extra)), "--skip-tags", skip_tags],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-3000:]
    # nothing installed: no prefix, no provenance, no hugepage record
    assert not list((tmp_path / "opt").glob("*/bin")), out[-2000:]
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").glob("*.json"))
    return out


def test_tarball_checksum_mismatch_names_expected_and_actual(tmp_path):
    tarball, actual = fake_tarball(tmp_path)
    wrong = "0" * 64
    out = run_role({"dpdk_install_method": "source", "dpdk_source_kind": "tarball", "dpdk_source_version": "0.0",
                    "dpdk_source_url": "file://%s" % tarball, "dpdk_source_sha256": wrong}, tmp_path)  # fmt: skip
    assert "sha256 mismatch for file://%s" % tarball in out
    assert "expected %s" % wrong in out
    assert "actual %s" % actual in out
    # the bad download is deleted and nothing was unpacked
    assert not (tmp_path / "src" / "src" / tarball.name).exists()
    assert not list((tmp_path / "src").rglob("meson.build"))


def test_patch_that_does_not_apply_is_named(tmp_path):
    tarball, actual = fake_tarball(tmp_path)
    out = run_role({"dpdk_install_method": "source", "dpdk_source_kind": "tarball", "dpdk_source_version": "0.0",
                    "dpdk_source_url": "file://%s" % tarball, "dpdk_source_sha256": actual,
                    "dpdk_build_patches": [SAMPLE_PATCH]}, tmp_path)  # fmt: skip
    assert "patch 0001-testpmd-bye-marker.patch does not apply to DPDK 0.0" in out
    assert "task 'Apply the patches' failed" in out
    # meson never ran
    assert not list((tmp_path / "src").rglob("build.ninja"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"dpdk_install_method": "build"}, "dpdk_install_method must be one of: package, source"),
        ({"dpdk_install_method": "source", "dpdk_source_kind": "svn"},
         "dpdk_source_kind must be one of: debian_source, tarball, git"),
        ({"dpdk_variant": "a/b"}, "dpdk_variant 'a/b' must be letters, digits, '.', '_' or '-'"),
        ({"dpdk_install_method": "source", "dpdk_source_kind": "tarball", "dpdk_source_version": "22.11.11",
          "dpdk_source_url": "file:///nonexistent.tar.xz", "dpdk_source_sha256": "abc"},
         "dpdk_source_sha256 'abc' is not a sha256 (64 hex digits)"),
        ({"dpdk_install_method": "source", "dpdk_source_kind": "tarball", "dpdk_source_sha256": "0" * 64},
         "dpdk_source_kind=tarball needs dpdk_source_url"),
        ({"dpdk_install_method": "source", "dpdk_source_kind": "git"}, "dpdk_source_kind=git needs dpdk_source_git_version"),
        ({"dpdk_install_method": "source", "dpdk_build_patches": ["/nonexistent/0001-x.patch"]},
         "patch file(s) /nonexistent/0001-x.patch not found on the controller"),
        ({"dpdk_hugepages": [{"size": "4M", "count": 1}]},
         "value of size must be one of: 2M, 1G, got: 4M found in dpdk_hugepages"),
        ({"dpdk_hugepages": [{"size": "1G", "count": 1}],
          "dpdk_hugepage_mounts": [{"path": "/dev/hugepages", "size": "2M"}]},
         "every reserved size needs a hugetlbfs mount"),
        ({"dpdk_hugepages": [{"size": "2M", "count": 1, "node": 99}],
          "dpdk_hugepage_mounts": [{"path": "/dev/hugepages", "size": "2M"}]},
         "no such NUMA node for 99"),
        ({"dpdk_bind_devices": [{"pci": "03:00.0"}]},
         "dpdk_bind_devices: 03:00.0 not PCI addresses in domain:bus:slot.function form"),
        ({"dpdk_bind_devices": [{"pci": "0000:03:00.0", "driver": "mlx5_core"}]},
         "value of driver must be one of: vfio-pci, uio_pci_generic, igb_uio, got: mlx5_core found in dpdk_bind_devices"),
        ({"dpdk_simd_runtime": {"scalar": {"max_simd_bitwidth": 32}}},
         "dpdk_simd_runtime.scalar.max_simd_bitwidth must be null, 64"),
        ({"dpdk_install_method": "source", "dpdk_build_options": {"enable_drivers": "net/null"}},
         "dpdk_build_options.enable_drivers is set by the role: use dpdk_build_drivers"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_in_preflight(extra, message, tmp_path):
    out = run_role(extra, tmp_path, skip_tags="dpdk_install,dpdk_build,dpdk_hugepages,dpdk_configure")
    assert message in out


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        return next(line for line in f if line.startswith("flags")).split(":", 1)[1].split()


def isa_table():
    with open(os.path.join(ROOT, "roles", "dpdk", "vars", "main.yml")) as f:
        return yaml.safe_load(f)["__dpdk_isa_flags"]


# a later preflight check that fails on any machine: when the instruction set passes, the play stops here instead
LATER_ERROR = ({"dpdk_bind_devices": [{"pci": "03:00.0"}]},
               "dpdk_bind_devices: 03:00.0 not PCI addresses in domain:bus:slot.function form")  # fmt: skip
ISA_SKIP_TAGS = "dpdk_install,dpdk_build,dpdk_hugepages,dpdk_configure"


@pytest.mark.parametrize("isa", ["icelake-server", "haswell"])
def test_instruction_set_checked_against_this_cpu(isa, tmp_path):
    """The role's table against this CPU's flags: refused when a flag is missing, passed (on to the next check) otherwise.

    On a CPU with avx512f (these machines) icelake-server passes; on an older one it is refused, naming the flags.
    """
    missing = [f for f in isa_table()[isa] if f not in cpu_flags()]
    extra, later = LATER_ERROR
    out = run_role(dict(extra, dpdk_install_method="source", dpdk_build_cpu_instruction_set=isa), tmp_path,
                   skip_tags=ISA_SKIP_TAGS)  # fmt: skip
    refusal = "-Dcpu_instruction_set=%s needs CPU flags" % isa
    if missing:
        assert "%s %s that this CPU lacks" % (refusal, ", ".join(missing)) in out, out[-1500:]
        assert later not in out, out[-1500:]
    else:
        assert refusal not in out, out[-1500:]
        assert later in out, out[-1500:]


def test_instruction_set_this_cpu_lacks_is_refused(tmp_path):
    """The refusal on any CPU: the table's entry (an extra var, above the role's vars) asks for a flag no CPU has."""
    table = dict(isa_table())
    table["icelake-server"] = [*table["icelake-server"], "xdplab_no_such_flag"]
    missing = [f for f in table["icelake-server"] if f not in cpu_flags()]
    out = run_role({"dpdk_install_method": "source", "dpdk_build_cpu_instruction_set": "icelake-server",
                    "__dpdk_isa_flags": table}, tmp_path, skip_tags=ISA_SKIP_TAGS)  # fmt: skip
    assert "-Dcpu_instruction_set=icelake-server needs CPU flags %s that this CPU lacks" % ", ".join(missing) in out, out[-1500:]

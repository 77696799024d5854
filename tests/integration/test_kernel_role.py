"""Role xdplab.testbed.kernel on bad input: a patch that does not apply, a tarball whose checksum differs,
an unknown base config type. Each must fail with a message naming the culprit, leave the source untouched
and build nothing. Runs the real role with ansible-playbook against localhost, in a temporary build root
(never the default /var/lib/xdplab/kernel, never install/boot).

An option that does not stick after make olddefconfig needs a real kernel tree: molecule/kernel's side_effect
checks it on the linux-source tree its converge extracted (extracting the 138 MB tarball here too cost ~1 min)."""

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile

import pytest

# no_traffic: make test runs this file beside molecule's scenarios (pyproject.toml)
pytestmark = pytest.mark.no_traffic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")

MAIN_C = "".join("line %d\n" % i for i in range(1, 21))
GOOD_PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: t <t@example.invalid>
Date: Mon, 30 Nov 2026 18:00:00 +0000
Subject: [PATCH 1/2] good

---
--- a/init/main.c
+++ b/init/main.c
@@ -2,4 +2,5 @@
 line 2
 line 3
+good patch was here
 line 4
 line 5
-- %s
2.39.5

""" % ""
BAD_PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: t <t@example.invalid>
Date: Mon, 30 Nov 2026 18:00:00 +0000
Subject: [PATCH 2/2] bad

---
--- a/init/main.c
+++ b/init/main.c
@@ -10,4 +10,5 @@
 line 10
 this line is not in the tree
+bad patch
 nor this one
 line 13
-- %s
2.39.5

""" % ""


def run_role(tmp_path, role_vars, tags=None, tasks_from=None, inventory="localhost,"):
    """Apply the role (or one entry point) to localhost with role_vars; return (returncode, output on one line)."""
    play = [{
        "name": "kernel role under test",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "roles": [{"role": "xdplab.testbed.kernel", "vars": role_vars}],
    }]  # fmt: skip
    if tasks_from:
        del play[0]["roles"]
        play[0]["tasks"] = [{
            "name": "entry point " + tasks_from,
            "ansible.builtin.include_role": {"name": "xdplab.testbed.kernel", "tasks_from": tasks_from},
            "vars": role_vars,
        }]  # fmt: skip
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(play))
    cmd = [PLAYBOOK, "-i", inventory, str(path), "-e", "ansible_python_interpreter=" + sys.executable]
    if tags:
        cmd += ["--tags", tags]
    res = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=900)
    return res.returncode, " ".join((res.stdout + res.stderr).split())


def tree_digest(path):
    """sha256 over every file's relative path and content (the pristine source must not change)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(path)):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            h.update(os.path.relpath(full, path).encode())
            with open(full, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


@pytest.fixture
def fake_tree(tmp_path):
    """A directory that looks enough like a kernel tree for the source and patch phases."""
    src = tmp_path / "src"
    (src / "init").mkdir(parents=True)
    (src / "Makefile").write_text("# not a kernel\n")
    (src / "init" / "main.c").write_text(MAIN_C)
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "0001-good.patch").write_text(GOOD_PATCH)
    (patches / "0002-bad.patch").write_text(BAD_PATCH)
    return src, patches


def base_vars(tmp_path, source, patches, **extra):
    out = {
        "kernel_build_root": str(tmp_path / "root"),
        "kernel_install_packages": False,
        "kernel_install": False,
        "kernel_verify_running": False,
        "kernel_min_free_gb": 1,
        "kernel_config_base": {"type": "make", "target": "tinyconfig"},
        "kernel_config_fragments": [],
        "kernel_variants": [{"name": "t", "source": source, "patches": patches}],
    }
    out.update(extra)
    return out


@pytest.mark.root
@pytest.mark.parametrize("kind", ["dir", "git"])
def test_patch_that_does_not_apply_is_named_and_the_tree_left_clean(kind, fake_tree, tmp_path):
    src, patches = fake_tree
    if kind == "git":
        git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        subprocess.run(git[:3] + ["init", "-q", "-b", "main"], check=True)
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-q", "-m", "fake tree"], check=True)
        source = {"type": "git", "repo": str(src), "ref": "main"}
    else:
        source = {"type": "dir", "path": str(src)}
    before = tree_digest(src)
    series = [str(patches / "0001-good.patch"), str(patches / "0002-bad.patch")]

    rc, out = run_role(tmp_path, base_vars(tmp_path, source, series), tags="kernel_source,kernel_patch")

    assert rc != 0, out[-3000:]
    assert "variant t: patch 2 of 2 (0002-bad.patch) does not apply with " in out, out[-3000:]
    assert "(applied before it: 0001-good.patch)" in out
    if kind == "git":
        assert "with git am" in out and "patch failed: init/main.c" in out, out[-3000:]
    else:
        assert "with patch -p1 (dry run, nothing changed)" in out and "Hunk #1 FAILED at 10" in out, out[-3000:]
    assert "The working copy %s/root/build/t/linux was removed" % tmp_path in out
    assert not (tmp_path / "root" / "build" / "t" / "linux").exists()
    assert not (tmp_path / "root" / "build" / "t" / "patched.key").exists()
    assert tree_digest(src) == before

    # the retry with the series fixed starts from a clean copy and succeeds
    rc, out = run_role(tmp_path, base_vars(tmp_path, source, series[:1]), tags="kernel_source,kernel_patch")
    assert rc == 0, out[-3000:]
    patched = (tmp_path / "root" / "build" / "t" / "linux" / "init" / "main.c").read_text()
    assert patched.count("good patch was here") == 1 and "bad patch" not in patched
    assert tree_digest(src) == before


@pytest.mark.root
def test_tarball_with_another_checksum_is_refused_before_extraction(tmp_path):
    tree = tmp_path / "linux-x"
    tree.mkdir()
    (tree / "Makefile").write_text("# not a kernel\n")
    tarball = tmp_path / "linux-x.tar.xz"
    with tarfile.open(tarball, "w:xz") as tar:
        tar.add(tree, arcname="linux-x")
    real = hashlib.sha256(tarball.read_bytes()).hexdigest()
    wrong = "0" * 64
    source = {"type": "tarball", "path": str(tarball), "checksum": "sha256:" + wrong}

    rc, out = run_role(tmp_path, base_vars(tmp_path, source, []), tags="kernel_source")

    assert rc != 0, out[-3000:]
    assert "tarball %s has sha256 %s, expected %s" % (tarball, real, wrong) in out, out[-3000:]
    assert "Nothing was extracted" in out
    assert not [p for p in (tmp_path / "root" / "src").iterdir() if p.name.startswith("tar-")]


@pytest.mark.root
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"kernel_config_base": {"type": "oldconfig"}}, "value of type must be one of: running, file, make, got: oldconfig"),
        ({"kernel_source": {"type": "svn"}}, "value of type must be one of: git, tarball, dir, got: svn"),
    ],
)
def test_unknown_type_is_refused_by_the_argument_specs(override, message, fake_tree, tmp_path):
    src, _patches = fake_tree
    role_vars = base_vars(tmp_path, {"type": "dir", "path": str(src)}, [], **override)
    role_vars["kernel_variants"] = [{"name": "t"}]

    rc, out = run_role(tmp_path, role_vars)

    assert rc != 0, out[-3000:]
    assert message in out, out[-3000:]
    assert not (tmp_path / "root").exists()


@pytest.mark.root
def test_unknown_type_inside_a_variant_is_refused_before_anything_changes(fake_tree, tmp_path):
    src, _patches = fake_tree
    role_vars = base_vars(tmp_path, {"type": "dir", "path": str(src)}, [])
    role_vars["kernel_variants"][0]["config_base"] = {"type": "oldconfig"}

    rc, out = run_role(tmp_path, role_vars)

    assert rc != 0, out[-3000:]
    assert "variant t: source" in out and "config_base.type is running, file" in out, out[-3000:]
    assert not (tmp_path / "root").exists()


@pytest.mark.root
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"kernel_build_host": "nohost"}, "kernel_build_host 'nohost' is not in the inventory: a build host is the controller"),
        ({"kernel_build_host": "buildbox"},
         "kernel_build_host 'buildbox' is reached with connection ssh: a build host is the controller"),
        ({"kernel_build_host": "localhost", "kernel_config_base": {"type": "running"}},
         "variant(s) t take the running kernel's config as base (config_base type running), but kernel_build_host is localhost"),
        ({"kernel_make_nice": 20}, "kernel_make_nice is 20: nice takes -20 to 19"),
    ],
    ids=["not-in-inventory", "remote", "running-base", "nice"],
)
def test_build_host_bad_input_is_refused_before_anything_changes(override, message, fake_tree, tmp_path):
    src, _patches = fake_tree
    role_vars = base_vars(tmp_path, {"type": "dir", "path": str(src)}, [], **override)
    role_vars["kernel_variants"] = [{"name": "t"}]

    # buildbox: an inventory host reached over ssh (never contacted: the role refuses it first)
    rc, out = run_role(tmp_path, role_vars, inventory="localhost,buildbox,")

    assert rc != 0, out[-3000:]
    assert message in out, out[-3000:]
    assert not (tmp_path / "root").exists()


@pytest.mark.root
def test_targets_of_one_build_host_must_ask_for_the_same_build(fake_tree, tmp_path):
    """Two targets build on the controller: the first of the play builds, so the second must ask for the same build."""
    src, _patches = fake_tree
    role_vars = base_vars(tmp_path, {"type": "dir", "path": str(src)}, [], kernel_build_host="localhost")
    del role_vars["kernel_variants"]
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {
        "dut1": {"kernel_variants": [{"name": "a"}]},
        "dut2": {"kernel_variants": [{"name": "b"}]},
    }, "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))  # fmt: skip
    play = tmp_path / "play.yml"
    play.write_text(json.dumps([{"name": "two targets, one build host", "hosts": "all", "gather_facts": False,
                                 "roles": [{"role": "xdplab.testbed.kernel", "vars": role_vars}]}]))
    res = subprocess.run([PLAYBOOK, "-i", str(inventory), str(play)], cwd=ROOT, env=ENV, capture_output=True, text=True,
                         check=False, timeout=900)
    out = " ".join((res.stdout + res.stderr).split())

    assert res.returncode != 0, out[-3000:]
    assert "dut1 and dut2 all build on localhost but ask for different builds" in out, out[-3000:]
    assert not (tmp_path / "root").exists()


def write_stamp(tmp_path, release, requested):
    build = tmp_path / "root" / "build" / "baseline"
    build.mkdir(parents=True)
    stamp = {"key": "0" * 64, "variant": "baseline", "release": release, "debs": [], "requested": requested}
    (build / "xdplab-kernel.json").write_text(json.dumps(stamp))
    return {"kernel_build_root": str(tmp_path / "root"), "kernel_variants": [{"name": "baseline"}]}


@pytest.mark.root
@pytest.mark.skipif(not os.path.exists("/proc/config.gz"), reason="the running kernel has no /proc/config.gz")
def test_drift_check_against_the_running_kernel(tmp_path):
    """The verify entry point on this machine's real kernel: its release and config match, or it names the drift."""
    release = os.uname().release
    asked = {"CONFIG_BPF_SYSCALL": "y", "CONFIG_XDP_SOCKETS": "y", "CONFIG_XDPLAB_MARKER": "n"}
    role_vars = write_stamp(tmp_path, release, asked)
    rc, out = run_role(tmp_path, role_vars, tasks_from="verify")
    assert rc == 0, out[-3000:]
    assert "running kernel %s is variant baseline with its 3 requested options" % release in out

    # a kernel that was asked for but is not the one running
    (tmp_path / "root").rename(tmp_path / "old")
    role_vars = write_stamp(tmp_path, "6.1.192-xdplab-baseline", {"CONFIG_BPF_SYSCALL": "y"})
    rc, out = run_role(tmp_path, role_vars, tasks_from="verify")
    assert rc != 0
    assert "running kernel %s, expected 6.1.192-xdplab-baseline (variant baseline)" % release in out, out[-3000:]

    # the right release, but its config lacks an option the build asked for
    (tmp_path / "root").rename(tmp_path / "old2")
    role_vars = write_stamp(tmp_path, release, {"CONFIG_BPF_SYSCALL": "y", "CONFIG_XDPLAB_MARKER": "y"})
    rc, out = run_role(tmp_path, role_vars, tasks_from="verify")
    assert rc != 0
    message = "running kernel %s differs from its build: CONFIG_XDPLAB_MARKER (asked y, running not set)" % release
    assert message in out, out[-3000:]


@pytest.mark.root
@pytest.mark.skipif(not os.path.exists("/proc/config.gz"), reason="the running kernel has no /proc/config.gz")
def test_running_config_base_is_snapshotted_once(fake_tree, tmp_path):
    """A running-kernel base is copied once, so booting the new kernel later does not change the build key."""
    src, _patches = fake_tree
    role_vars = base_vars(tmp_path, {"type": "dir", "path": str(src)}, [], kernel_config_base={"type": "running"})
    snapshot = tmp_path / "root" / "build" / "t" / "running-base.config"

    rc, out = run_role(tmp_path, role_vars, tags="kernel_source")
    assert rc == 0, out[-3000:]
    with gzip.open("/proc/config.gz", "rb") as f:
        assert snapshot.read_bytes() == f.read()
    first = snapshot.stat().st_mtime_ns

    rc, out = run_role(tmp_path, role_vars, tags="kernel_source")
    assert rc == 0, out[-3000:]
    assert re.search(r"localhost\s*:\s*ok=\d+\s+changed=0\s", out), out[-1500:]
    assert snapshot.stat().st_mtime_ns == first

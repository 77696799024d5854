# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/sanity/run.py: what it hands ansible-test (the collection as it ships) and the get-pip stand-in it writes."""

import importlib.util
import os
import subprocess

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("xdplab_sanity_run", os.path.join(ROOT, "tests", "sanity", "run.py"))
run = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(run)

with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as _f:
    GALAXY = yaml.safe_load(_f)


def test_build_ignore_drops_the_collection_link_and_the_build_output_only():
    patterns = GALAXY["build_ignore"]
    assert run.ignored("collections/ansible_collections/xdplab/testbed", patterns)
    assert run.ignored("collections/requirements.yml", patterns)
    assert run.ignored("bpf/build/xdp_bench.bpf.o", patterns)
    assert run.ignored("xdplab-testbed-0.1.0.tar.gz", patterns)
    assert not run.ignored("plugins/modules/xdp_stats.py", patterns)
    assert not run.ignored("tests/unit/fixtures/testpmd/null_queue_info.log", patterns)
    assert not run.ignored("roles/trex/files/xdplab-trex-run", patterns)


def test_the_staged_tree_is_the_shipped_collection_with_its_file_links(tmp_path):
    target = run.stage(GALAXY, str(tmp_path))
    assert target == os.path.join(str(tmp_path), "ansible_collections", "xdplab", "testbed")
    # its own git work tree, nothing committed: ansible-test lists the files with git, directory links included
    assert os.path.isdir(os.path.join(target, ".git"))
    assert not os.path.lexists(os.path.join(target, "collections"))
    staged = sorted(
        os.path.relpath(os.path.join(d, f), target)
        for d, dirs, files in os.walk(target)
        if ".git" not in os.path.relpath(d, target).split(os.sep)
        for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]
    )
    wanted = [p for p in run.git_files() if not run.ignored(p, GALAXY["build_ignore"])]
    assert staged == sorted(p for p in wanted if os.path.lexists(os.path.join(ROOT, p)))
    link = os.path.join(target, "molecule", "default", "inventory", "group_vars", "all", "vlab.yml")
    assert os.path.islink(link) and os.path.realpath(link).startswith(os.path.realpath(target) + os.sep)
    # CRLF kept: the testpmd transcripts are the pseudo-terminal's bytes
    with open(os.path.join(target, "tests", "unit", "fixtures", "testpmd", "null_queue_info.log"), "rb") as f:
        assert b"\r\n" in f.read()
    out = subprocess.run(["git", "ls-files", "--others"], cwd=target, capture_output=True, text=True, check=True).stdout
    assert "galaxy.yml" in out.splitlines()


def test_the_get_pip_stand_in_installs_the_requested_pip_from_the_wheel(tmp_path):
    wheel = str(tmp_path / "pip-24.2-py3-none-any.whl")
    text = run.SHIM.format(marker=run.MARKER, version="24.2", wheel=wheel, wheel_dir=str(tmp_path))
    compile(text, "get_pip_24_2.py", "exec")
    assert run.MARKER in text and repr(wheel) in text
    assert "'--no-index', '--find-links', %r" % str(tmp_path) in text

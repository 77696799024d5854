"""The repository builds as a collection, and the installed collection runs its playbooks by FQCN."""

import glob
import os
import subprocess
import sys

import pytest

# no_traffic: make test runs this file beside molecule's scenarios (pyproject.toml)
pytestmark = pytest.mark.no_traffic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))


def run(argv, env=None, cwd=None):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    out = tmp_path_factory.mktemp("galaxy")
    built = run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out), ROOT], cwd=ROOT)
    assert built.returncode == 0, built.stderr
    tarball = glob.glob(str(out / "xdplab-testbed-*.tar.gz"))
    assert len(tarball) == 1
    names = run(["tar", "tzf", tarball[0]]).stdout.splitlines()
    # the link back to the root, local state and build output stay out of the artifact
    assert not [n for n in names if n.startswith(("collections/", ".ansible/", "bpf/build/", ".venv/"))]
    assert "bpf/xdp_bench.bpf.c" in names and "playbooks/paper_drop.yml" in names
    cols = out / "cols"
    done = run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--force", "-p", str(cols), tarball[0]])
    assert done.returncode == 0, done.stderr
    # run from a directory without ansible.cfg so only the installed copy is found
    cfg = out / "ansible.cfg"
    cfg.write_text("[defaults]\ncollections_path = %s\n" % cols)
    env = dict(os.environ, ANSIBLE_CONFIG=str(cfg))
    return env, str(out)


def test_installed_playbook_by_fqcn_against_the_hardware_inventory(installed):
    env, cwd = installed
    res = run([os.path.join(BIN, "ansible-playbook"), "xdplab.testbed.paper_drop", "-i",
               os.path.join(ROOT, "inventories", "lab"), "--syntax-check"], env=env, cwd=cwd)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ansible_collections/xdplab/testbed/playbooks/paper_drop.yml" in res.stdout


@pytest.fixture(scope="module")
def rendered(installed):
    """ansible-doc's text of every module of the installed copy, from one start of ansible-doc instead of one per
    module: (the run, {module: its page}, env, cwd); a page starts at its header line "> MODULE <fqcn> (<path>)".
    ansible-doc stops at the first module it cannot parse: the test of a module without a page runs it alone."""
    env, cwd = installed
    # plain text: ansible-doc bolds the module's name in its header line unless told not to, pipe or not
    env = dict(env, ANSIBLE_NOCOLOR="1")
    res = run([os.path.join(BIN, "ansible-doc"), *("xdplab.testbed." + m for m in MODULES)], env=env, cwd=cwd)
    pages, name = {}, None
    for line in res.stdout.splitlines():
        if line.startswith("> MODULE xdplab.testbed."):
            name = line.split()[2].rsplit(".", 1)[1]
            assert "/ansible_collections/xdplab/testbed/plugins/modules/%s.py" % name in line, line  # the installed copy
            pages[name] = []
        if name:
            pages[name].append(line)
    return res, {k: "\n".join(v) for k, v in pages.items()}, env, cwd


def test_ansible_doc_renders_every_module_without_error(rendered):
    res, pages, _env, _cwd = rendered
    assert res.returncode == 0, res.stderr
    assert "ERROR" not in res.stderr, res.stderr
    assert sorted(pages) == MODULES


@pytest.mark.parametrize("module", MODULES)
def test_every_module_renders_in_ansible_doc(rendered, module):
    res, pages, env, cwd = rendered
    page = pages.get(module)
    if page is None:  # the shared run stopped at another module's error: this module alone, for its own verdict
        res = run([os.path.join(BIN, "ansible-doc"), "xdplab.testbed." + module], env=env, cwd=cwd)
        assert res.returncode == 0, res.stderr
        page = res.stdout
    assert "RETURN VALUES" in page and "EXAMPLES" in page

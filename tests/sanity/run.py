#!/usr/bin/env python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run ``ansible-test sanity`` on this collection, on a machine that reaches only PyPI.

Usage: .venv/bin/python tests/sanity/run.py [ansible-test sanity options], e.g. ``--test pylint``.
The Makefile's ``sanity`` target runs it with ``--python 3.11``.

Two things stand between the repository and ``ansible-test sanity``:

1. ansible-test must run from ``.../ansible_collections/<namespace>/<name>``. The repository root is
   the collection, and ``collections/ansible_collections/xdplab/testbed`` is a link back to the root
   so that ansible.cfg resolves the FQCN from a fresh clone. That link is not part of the collection
   (galaxy.yml's ``build_ignore`` drops it, as ``ansible-galaxy collection build`` does), so the
   files ansible-test would see (git's tracked and untracked-not-ignored files) minus build_ignore
   are copied, symlinks kept as symlinks, to a temporary ``.../ansible_collections/<ns>/<name>``
   (removed afterwards) made a git work tree of its own with nothing committed, so that
   ansible-test lists its files with git as it would in a checkout (symlinks to directories
   included), and ansible-test runs there: it checks exactly what the collection ships.
2. ansible-test bootstraps pip into each sanity virtual environment with a get-pip script it
   downloads from its own CI file server, which a machine that reaches only the package
   registries cannot reach. ansible-test first looks for that script in
   ``~/.ansible/test/cache/get_pip_<version>.py`` (its error message says to save it there), so
   this runner saves a small stand-in there: it installs the same pinned pip from pip's own wheel,
   downloaded from PyPI with the ordinary ``pip download``. Everything else ansible-test installs
   comes from PyPI, pinned by ansible-test's own requirement files.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.expanduser("~/.ansible/test/cache")
MARKER = "xdplab.testbed: pip bootstrap from PyPI"

SHIM = '''"""{marker} (written by tests/sanity/run.py, stands in for get-pip {version}).

ansible-test runs this file in an empty virtual environment with get-pip's arguments
(pip=={version} plus --no-setuptools/--no-wheel); it installs that pip from pip's own wheel.
"""
import sys

WHEEL = {wheel!r}
sys.path.insert(0, WHEEL)

from pip._internal.cli.main import main  # noqa: E402  (importable from the wheel itself)

ARGS = [arg for arg in sys.argv[1:] if arg not in ('--no-setuptools', '--no-wheel')]
sys.exit(main(['install', '--no-index', '--find-links', {wheel_dir!r}] + ARGS))
'''


def fail(message):
    """Print the error and what to do, then exit non-zero."""
    sys.stderr.write("tests/sanity/run.py: %s\n" % message)
    sys.exit(2)


def git_files():
    """Return the paths ansible-test's git source would see: tracked and untracked-not-ignored, minus deleted."""

    def names(*options):
        cmd = ["git", "ls-files", "-z", *options]
        done = subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True)
        if done.returncode != 0:
            fail(
                "%s failed in %s (%s): run this from a git clone of the collection"
                % (" ".join(cmd), ROOT, done.stderr.decode().strip())
            )
        return set(done.stdout.decode("utf-8").split("\0")) - {""}

    return sorted(names("--cached", "--others", "--exclude-standard") - names("--deleted"))


def ignored(path, patterns):
    """Return True when galaxy.yml's build_ignore drops the path or one of its parent directories."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatch(prefix, pattern) for prefix in prefixes for pattern in patterns)


def stage(galaxy, staging):
    """Copy the collection's files to the staging tree; return the collection's directory in it."""
    target = os.path.join(staging, "ansible_collections", galaxy["namespace"], galaxy["name"])
    patterns = galaxy.get("build_ignore") or []
    count = 0
    for path in git_files():
        if ignored(path, patterns):
            continue
        source = os.path.join(ROOT, path)
        dest = os.path.join(target, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if os.path.islink(source):
            os.symlink(os.readlink(source), dest)
        else:
            shutil.copy2(source, dest)
        count += 1
    subprocess.run(["git", "init", "--quiet", target], check=True)
    print("staged %d files of %s.%s in %s" % (count, galaxy["namespace"], galaxy["name"], target), flush=True)
    return target


def pip_bootstrap():
    """Save the get-pip stand-in (and the pip wheel from PyPI) where ansible-test looks for get-pip."""
    try:
        from ansible_test._internal.python_requirements import get_venv_packages

        class Python:  # get_venv_packages reads only the version
            version = "%d.%d" % sys.version_info[:2]

        version = get_venv_packages(Python())["pip"]
    except (ImportError, AttributeError, KeyError, TypeError) as exc:
        fail(
            "cannot read the pip version ansible-test bootstraps (ansible_test._internal.python_requirements: %s); "
            "this runner follows ansible-core 2.19's ansible-test" % exc
        )
    script = os.path.join(CACHE, "get_pip_%s.py" % version.replace(".", "_"))
    wheel_dir = os.path.join(CACHE, "xdplab-pip-wheel")
    wheel = os.path.join(wheel_dir, "pip-%s-py3-none-any.whl" % version)
    if os.path.exists(script):
        with open(script, encoding="utf-8") as handle:
            if MARKER not in handle.read():
                return  # ansible-test's own get-pip is already there
    if not os.path.exists(wheel):
        os.makedirs(wheel_dir, exist_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--dest",
            wheel_dir,
            "pip==%s" % version,
        ]
        if subprocess.run(cmd, check=False).returncode != 0 or not os.path.exists(wheel):
            fail("could not download pip %s from PyPI (%s): check that PyPI is reachable" % (version, " ".join(cmd)))
    os.makedirs(CACHE, exist_ok=True)
    text = SHIM.format(marker=MARKER, version=version, wheel=wheel, wheel_dir=wheel_dir)
    with open(script + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(script + ".tmp", script)


def main():
    """Stage, bootstrap, run ansible-test sanity with the given options, report the time."""
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        galaxy = yaml.safe_load(handle)
    staging = tempfile.mkdtemp(prefix="xdplab-sanity-")
    try:
        code = run(stage(galaxy, staging))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    sys.exit(code)


def run(target):
    """Run ansible-test sanity in the staged collection; return its exit status."""
    pip_bootstrap()
    ansible_test = os.path.join(os.path.dirname(sys.executable), "ansible-test")
    if not os.path.exists(ansible_test):
        fail(
            "%s not found: install requirements.txt into the virtual environment (make %s/.run-deps)"
            % (ansible_test, os.path.relpath(os.path.dirname(os.path.dirname(sys.executable)), ROOT))
        )
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", os.defpath)
    cmd = [ansible_test, "sanity", "--color", "no"] + sys.argv[1:]
    print("cd %s && %s" % (target, " ".join(cmd)), flush=True)
    started = time.monotonic()
    code = subprocess.run(cmd, cwd=target, env=env, check=False).returncode
    print("ansible-test sanity: exit %d after %.0f s" % (code, time.monotonic() - started), flush=True)
    return code


if __name__ == "__main__":
    main()

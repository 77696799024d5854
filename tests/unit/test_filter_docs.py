# SPDX-License-Identifier: GPL-3.0-or-later
"""Every filter of the collection is documented and renders in ansible-doc.

The documentation of a filter is plugins/filter/<filter name>.yml (DOCUMENTATION, EXAMPLES
and RETURN), next to the Python file that defines it.
"""

import glob
import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILTER_DIR = os.path.join(ROOT, "plugins", "filter")
ANSIBLE_DOC = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
NAMESPACE = "xdplab.testbed"


def _filter_names():
    names = {}
    for path in sorted(glob.glob(os.path.join(FILTER_DIR, "*.py"))):
        module_name = os.path.splitext(os.path.basename(path))[0]
        if module_name.startswith("_"):
            continue
        module = importlib.import_module("ansible_collections.xdplab.testbed.plugins.filter." + module_name)
        filter_module = getattr(module, "FilterModule", None)
        if filter_module is None:
            continue
        for name in filter_module().filters():
            assert name not in names, "filter %s is defined in both %s and %s" % (name, names[name], module_name)
            names[name] = module_name
    return sorted(names)


FILTERS = _filter_names()


def _ansible_doc(*args):
    env = dict(os.environ)
    # Only the collection of this checkout: ansible.cfg's collections_path, no other copy of it.
    for var in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"):
        env.pop(var, None)
    env["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    return subprocess.run([ANSIBLE_DOC, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def _doc_file(name):
    with open(os.path.join(FILTER_DIR, name + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def listed_short_descriptions():
    proc = _ansible_doc("-t", "filter", "-l", NAMESPACE, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_collection_has_filters():
    assert {"wire_pps", "thousands", "experiment_trials", "done_trial_ids"} <= set(FILTERS)


def test_every_doc_file_belongs_to_a_filter():
    doc_files = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(FILTER_DIR, "*.yml"))}
    assert doc_files - set(FILTERS) == set()


@pytest.mark.parametrize("name", FILTERS)
def test_doc_file_is_complete(name):
    doc = _doc_file(name)
    documentation = doc["DOCUMENTATION"]
    assert documentation["name"] == name
    assert str(documentation["version_added"]) == "0.1.0"
    assert documentation["short_description"].strip()
    assert documentation["description"]
    assert "_input" in documentation["options"]
    for option, spec in documentation["options"].items():
        assert spec.get("type"), "option %s of %s has no type" % (option, name)
        assert spec.get("description"), "option %s of %s has no description" % (option, name)
    assert "%s.%s" % (NAMESPACE, name) in doc["EXAMPLES"]
    assert doc["RETURN"]["_value"]["type"]


@pytest.fixture(scope="module")
def rendered():
    """ansible-doc's text view of every filter, from one run (one start of ansible-doc, not one per filter):
    (the run, {fqcn: its text}). The text of each starts at its header line "> FILTER <fqcn> (<doc file>)".
    ansible-doc stops at the first plugin it cannot parse: the test of a filter without a page runs it alone."""
    proc = _ansible_doc("-t", "filter", *("%s.%s" % (NAMESPACE, name) for name in FILTERS))
    pages, fqcn = {}, None
    for line in proc.stdout.splitlines():
        if line.startswith("> FILTER "):
            fqcn = line.split()[2]
            pages[fqcn] = []
        if fqcn:
            pages[fqcn].append(line)
    return proc, {k: "\n".join(v) for k, v in pages.items()}


def test_ansible_doc_renders_every_filter_without_error(rendered):
    proc, pages = rendered
    assert proc.returncode == 0, proc.stderr
    assert "ERROR" not in proc.stderr, proc.stderr
    assert sorted(pages) == ["%s.%s" % (NAMESPACE, name) for name in FILTERS]


@pytest.mark.parametrize("name", FILTERS)
def test_ansible_doc_renders_the_filter(name, rendered, listed_short_descriptions):
    fqcn = "%s.%s" % (NAMESPACE, name)
    short_description = _doc_file(name)["DOCUMENTATION"]["short_description"].strip()

    out = rendered[1].get(fqcn)
    if out is None:  # the shared run stopped at another filter's error: this filter alone, for its own verdict
        proc = _ansible_doc("-t", "filter", fqcn)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
    assert "UNDOCUMENTED" not in out
    assert "plugins/filter/%s.yml" % name in out.splitlines()[0]
    assert "EXAMPLES" in out
    assert "RETURN" in out
    assert fqcn in out
    # ansible-doc's text view of one plugin leaves the short description out; its listing shows it.
    assert listed_short_descriptions.get(fqcn) == short_description

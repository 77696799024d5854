"""Make the collection importable as ansible_collections.xdplab.testbed from a fresh clone."""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

# Ansible's collection loader, installed once before any test module imports the collection: a test that
# installs it later (test_connection_netns.py loads the netns plugin through it) would otherwise leave every
# package of the collection imported before that point unusable ("collection metadata was not loaded").
from ansible.plugins.loader import init_plugin_loader

init_plugin_loader([COLLECTIONS])

# With XDPLAB_SKIPS_DIR set (make test), every skipped test is logged there (tests/skiplog.py), and make test's
# last step lists them all
_spec = importlib.util.spec_from_file_location("xdplab_skiplog", os.path.join(os.path.dirname(__file__), "skiplog.py"))
_skiplog = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_skiplog)
pytest_configure = _skiplog.pytest_configure

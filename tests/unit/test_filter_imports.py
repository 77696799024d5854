# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's filter files import nothing heavy at load time.

Ansible resolves a filter like ``xdplab.testbed.mpps`` by importing every Python file under plugins/filter/, and it
does so in the worker process it forks for each task: what those files import at the top is paid again by every task
that templates any of this collection's filters. MLRsearch (~0.4 s) and the generator backends (~50 ms) were imported
that way and made each such task ~0.5 s slower (benchmarks/ansible_task_cost.py, docs/BENCHMARKS.md); they are now
imported by the functions that need them. This checks which modules loading the filter files brings in, in a fresh
interpreter (no timing: what is imported, not how long it took).
"""

import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# imported only by the functions that use them, never when Ansible loads the filter files
DEFERRED = ("MLRsearch", "ansible_collections.xdplab.testbed.plugins.module_utils._generators", "scipy", "numpy",
            "matplotlib", "hdrh")  # fmt: skip

PROBE = r"""
import glob, importlib, json, os, sys
before = set(sys.modules)
for path in sorted(glob.glob(os.path.join(sys.argv[1], "plugins", "filter", "*.py"))):
    importlib.import_module("ansible_collections.xdplab.testbed.plugins.filter." + os.path.basename(path)[:-3])
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_loading_every_filter_file_imports_nothing_deferred():
    files = glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py"))
    assert len(files) >= 8
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "collections"))
    out = subprocess.run([sys.executable, "-c", PROBE, ROOT], capture_output=True, text=True, env=env, check=True)
    loaded = json.loads(out.stdout)
    assert "ansible_collections.xdplab.testbed.plugins.filter.ndr_pdr" in loaded  # the probe did load them
    heavy = [m for m in loaded if any(m == d or m.startswith(d + ".") for d in DEFERRED)]
    assert heavy == [], "filter files import %s at load time: import them inside the function that needs them" % heavy


def test_the_search_still_finds_mlrsearch_when_it_runs():
    from ansible_collections.xdplab.testbed.plugins.module_utils import _ndrpdr

    goals = _ndrpdr.check_goals(None)  # CSIT's NDR and PDR, checked by MLRsearch's own SearchGoal
    assert [g["name"] for g in goals] == ["NDR", "PDR"]
    assert _ndrpdr.mlrsearch().__name__ == "MLRsearch"

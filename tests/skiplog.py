# SPDX-License-Identifier: GPL-3.0-or-later
"""Which tests a `make test` skipped, and why: a pytest plugin that logs them, and the list printed at the end.

With XDPLAB_SKIPS_DIR set, every pytest run (tests/conftest.py registers the plugin) writes one file there,
pytest-<pid>.jsonl: a first line naming the run (its arguments), then one line per test or module it skipped
(node id, reason, where the skip was raised) or expected to fail. `make test` sets the variable for its pytest
runs and, as its last step, whatever the outcome, prints the combined list:

    python tests/skiplog.py DIR

"no test skipped" when every run logged none; a directory with no run in it is an error (the plugin did not load,
so the list would be a false "nothing skipped").
"""

from __future__ import annotations

import json
import os
import shlex
import sys

ENV = "XDPLAB_SKIPS_DIR"


class SkipLog:
    """Appends the skips of one pytest run to DIR/pytest-<pid>.jsonl."""

    def __init__(self, directory, args):
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, "pytest-%d.jsonl" % os.getpid())
        self._write({"run": shlex.join(["pytest", *args])})

    def _write(self, entry):
        with open(self.path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def _log(self, report):
        if not report.skipped:
            return
        if hasattr(report, "wasxfail"):
            self._write({"nodeid": report.nodeid, "kind": "xfailed", "reason": report.wasxfail or "(no reason given)"})
            return
        where, reason = "", str(report.longrepr)
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            path, lineno, reason = report.longrepr
            where = "%s:%s" % (path, lineno + 1 if isinstance(lineno, int) else lineno)
        if reason.startswith("Skipped: "):
            reason = reason[len("Skipped: ") :]
        self._write({"nodeid": report.nodeid, "kind": "skipped", "reason": reason, "where": where})

    def pytest_runtest_logreport(self, report):
        self._log(report)

    def pytest_collectreport(self, report):  # a module skipped as a whole (pytest.skip(allow_module_level=True))
        self._log(report)


def pytest_configure(config):
    directory = os.environ.get(ENV)
    if directory and not config.pluginmanager.has_plugin("xdplab-skiplog"):
        config.pluginmanager.register(SkipLog(directory, config.invocation_params.args), "xdplab-skiplog")


def read(directory):
    """(runs, skips) of every log in directory, skips in the order they happened per run."""
    runs, skips = [], []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if not (name.startswith("pytest-") and name.endswith(".jsonl")):
            continue
        with open(os.path.join(directory, name)) as f:
            entries = [json.loads(line) for line in f if line.strip()]
        run = next((e["run"] for e in entries if "run" in e), "pytest")
        runs.append(run)
        skips.extend(dict(e, run=run) for e in entries if "nodeid" in e)
    return runs, skips


def render(runs, skips):
    if not runs:
        return None
    lines = ["", "== skipped by make test's %d pytest run(s) ==" % len(runs)]
    if not skips:
        lines.append("no test skipped")
        return "\n".join(lines)
    seen = set()
    for s in skips:
        key = (s["nodeid"], s["kind"], s["reason"])
        if key in seen:  # a test skipped in two runs (it matched both -m expressions) is named once
            continue
        seen.add(key)
        where = " (%s)" % s["where"] if s.get("where") else ""
        lines.append("%s %s: %s%s  [%s]" % (s["kind"].upper(), s["nodeid"], s["reason"], where, s["run"]))
    lines.append("%d skipped, %d xfailed" % (
        len({k for k in seen if k[1] == "skipped"}), len({k for k in seen if k[1] == "xfailed"})))  # fmt: skip
    return "\n".join(lines)


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s DIR (the XDPLAB_SKIPS_DIR of the pytest runs)" % argv[0])
    text = render(*read(argv[1]))
    if text is None:
        sys.exit("no pytest run logged its skips in %s: was %s set and tests/conftest.py loaded?" % (argv[1], ENV))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

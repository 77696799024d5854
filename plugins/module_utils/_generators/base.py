# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Process bookkeeping shared by generator backends that run a local process.

A run is identified by (run_dir, name): `<name>.state.json` holds the pid, the
process start time (to tell our process from a recycled pid) and the parameters;
`<name>.out` holds the process's stdout (JSON lines), `<name>.err` its stderr.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import time


def json_records(text):
    """The JSON objects of a program's stdout, in order; other lines and a line cut by a kill are skipped."""
    records = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


class GeneratorError(Exception):
    """A generator could not be started, queried or stopped; the message says what to do."""


def proc_start_time(pid):
    """Start time of a process in clock ticks since boot, or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except OSError:
        return None
    # field 22, counted after the parenthesised command name which may hold spaces
    rest = data.rsplit(")", 1)[1].split()
    if rest[0] == "Z":
        return None
    return int(rest[19])


class ProcessRun:
    """Files and process of one generator run."""

    backend = None  # name of the backend that owns the run, recorded in the state file

    def __init__(self, run_dir, name):
        self.run_dir = run_dir
        self.name = name
        self.state_path = os.path.join(run_dir, name + ".state.json")
        self.out_path = os.path.join(run_dir, name + ".out")
        self.err_path = os.path.join(run_dir, name + ".err")

    def files(self):
        """The run's files that exist."""
        return [p for p in (self.state_path, self.out_path, self.err_path) if os.path.exists(p)]

    def remove(self):
        """Remove the run's files, and the run directory if that leaves it empty."""
        for path in self.files():
            os.unlink(path)
        # other runs' files may still be there, or the directory is gone already
        with contextlib.suppress(OSError):
            os.rmdir(self.run_dir)

    def load_state(self):
        try:
            with open(self.state_path) as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise GeneratorError("state file %s is corrupt (%s); remove it" % (self.state_path, exc)) from exc

    def running(self, state=None):
        state = state if state is not None else self.load_state()
        if not state:
            return False
        return proc_start_time(state["pid"]) == state["start_time"]

    def spawn(self, command, params, settle=0.5):
        os.makedirs(self.run_dir, exist_ok=True)
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            proc = subprocess.Popen(
                command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True, close_fds=True
            )
        state = {
            "backend": self.backend,
            "pid": proc.pid,
            "start_time": None,
            "params": params,
            "command": command,
            "started": time.time(),
            "started_monotonic": time.monotonic(),
        }
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            if state["start_time"] is None:
                state["start_time"] = proc_start_time(proc.pid)
            time.sleep(0.05)
        rc = proc.poll()
        if rc is not None and rc != 0:
            raise GeneratorError(
                "%s exited with status %d at start: %s" % (command[0], rc, self.read_err().strip() or "(no message)")
            )
        if state["start_time"] is None:
            state["start_time"] = proc_start_time(proc.pid)
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, self.state_path)
        # The child is reaped by init once we exit; keep no zombie around meanwhile.
        self._proc = proc
        return state

    def stop(self, timeout=10.0):
        """Stop the process (SIGINT, then SIGKILL after timeout). Returns True if it was running."""
        state = self.load_state()
        if not self.running(state):
            return False
        pid = state["pid"]
        self._signal(pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc_start_time(pid) != state["start_time"]:
                return True
            time.sleep(0.05)
        self._signal(pid, signal.SIGKILL)
        for _ in range(100):
            if proc_start_time(pid) != state["start_time"]:
                break
            time.sleep(0.05)
        return True

    def wait(self, timeout):
        """Wait until the process ends by itself; False if it still runs after timeout."""
        state = self.load_state()
        deadline = time.monotonic() + timeout
        while self.running(state):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    @staticmethod
    def _signal(pid, sig):
        try:
            os.kill(pid, sig)
        except OSError as exc:
            if exc.errno != errno.ESRCH:
                raise

    def read_err(self):
        try:
            with open(self.err_path, errors="replace") as f:
                return f.read()[-4000:]
        except FileNotFoundError:
            return ""

    def json_lines(self):
        """Every JSON object the process printed, in order; other lines are ignored."""
        try:
            with open(self.out_path, errors="replace") as f:
                return json_records(f.read())
        except FileNotFoundError:
            return []

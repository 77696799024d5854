# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one process helper: every process the collection starts (generator, testpmd, AF_XDP bench) runs through it.
The servers kept between module invocations (modules tcp_rr and iperf3_server) are a DetachedServer: the same run,
with present/absent's decision (the same command line already runs: nothing changes) and SIGTERM-then-SIGKILL stop.

A run is identified by (run_dir, name). Its files:

- ``<name>.state.json``: pid, the process's start time (field 22 of /proc/PID/stat, to tell our process
  from a recycled pid), the command, the caller's parameters, and the supervisor's pid;
- ``<name>.out`` and ``<name>.err``: the process's stdout and stderr (unless the caller gives its own,
  e.g. a pseudo-terminal);
- ``<name>.exit.json``: how the process ended, written by its supervisor.

The process outlives the module invocation that started it (it is reparented to init), so no later
invocation could waitpid() it. Each process therefore runs under a small supervisor (this Python,
``-c SUPERVISOR``): it starts the command as its only child, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT/
SIGUSR1/SIGUSR2 to it, waits for it and writes its exit status or signal to ``<name>.exit.json``
(atomically). The supervisor holds none of the child's stdio open, so a pty reader sees EOF when the
child ends.

Stopping is idempotent: a process that already ended, or a run that never started, is not an error;
`stop()` says which it was. `exit()` of a process that ended gives ``{pid, exit_status, signal,
signal_name, stderr_tail}``, the shape modules return under ``process``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time

from ansible_collections.xdplab.testbed.plugins.module_utils import _cpus, _jsonl

STDERR_TAIL_LINES = 10
STDERR_TAIL_CHARS = 2000

#: Runs as `python -c SUPERVISOR EXIT_PATH READY_FD -- COMMAND...`; its stdio are the child's.
SUPERVISOR = r"""# xdplab.testbed process supervisor (plugins/module_utils/_process.py)
import json, os, signal, subprocess, sys, time
exit_path, ready_fd, cpus, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]

def write_exit(info):
    info["ended"] = time.time()
    tmp = exit_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(info, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, exit_path)

child = None

def forward(signum, _frame):
    if child is not None:
        try:
            os.kill(child.pid, signum)
        except OSError:
            pass

for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
    signal.signal(getattr(signal, name), forward)
try:
    def prepare():
        os.setpgrp()
        # the process under test may run on any CPU (it pins its own threads): it must not inherit the
        # housekeeping CPU set the tool's own processes are held to
        if cpus != "--":
            os.sched_setaffinity(0, [int(c) for c in cpus.split(",")])

    child = subprocess.Popen(argv, close_fds=True, preexec_fn=prepare)
except OSError as exc:
    write_exit({"pid": None, "exit_status": 127, "signal": None, "error": "cannot run %s: %s" % (argv[0], exc)})
    os.write(ready_fd, b"error\n")
    sys.exit(127)
os.write(ready_fd, b"%d\n" % child.pid)
os.close(ready_fd)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
os.close(null)

while True:
    try:
        _pid, status = os.waitpid(child.pid, 0)
        break
    except InterruptedError:
        continue
    except ChildProcessError:
        status = None
        break
info = {"pid": child.pid, "exit_status": None, "signal": None, "core_dumped": False}
if status is None:
    info["error"] = "the supervisor lost its child"
elif os.WIFSIGNALED(status):
    info["signal"] = os.WTERMSIG(status)
    info["core_dumped"] = bool(os.WCOREDUMP(status))
else:
    info["exit_status"] = os.WEXITSTATUS(status)
write_exit(info)
"""


class ProcessError(Exception):
    """A process could not be started; the message says why and what to do."""


def proc_start_time(pid):
    """Start time of a process in clock ticks since boot, or None if it is gone (or a zombie)."""
    if not pid:
        return None
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except OSError:
        return None
    # field 22, counted after the parenthesised command name which may hold spaces
    rest = data.rsplit(")", 1)[1].split()
    if rest[0] in ("Z", "X"):
        return None
    return int(rest[19])


def signal_name(number):
    try:
        return signal.Signals(number).name
    except (ValueError, TypeError):
        return None


def tail(text, lines=STDERR_TAIL_LINES, chars=STDERR_TAIL_CHARS):
    """The last lines of a text (at most `lines` non-empty lines and `chars` characters), CR LF as LF."""
    kept = [ln.rstrip() for ln in (text or "").replace("\r\n", "\n").replace("\r", "\n").splitlines() if ln.strip()]
    out = "\n".join(kept[-lines:])
    return out[-chars:]


def describe(exit_info):
    """'exited with status 3', 'was killed by signal 9 (SIGKILL)', or why the status is unknown."""
    if not exit_info:
        return "is still running"
    if exit_info.get("signal") is not None:
        return "was killed by signal %d (%s)" % (exit_info["signal"], exit_info.get("signal_name") or "unknown")
    if exit_info.get("exit_status") is not None:
        return "exited with status %d" % exit_info["exit_status"]
    return "ended with an unknown status (%s)" % (exit_info.get("note") or "not recorded")


def failed(exit_info):
    """Whether an exit is a failure: a signal, a non-zero status, or an unknown status."""
    return bool(exit_info) and exit_info.get("exit_status") != 0


def process_result(exit_info):
    """The `process` return value of a module: {pid, exit_status, signal, signal_name, stderr_tail}."""
    exit_info = exit_info or {}
    return {k: exit_info.get(k) for k in ("pid", "exit_status", "signal", "signal_name", "stderr_tail")}


def failure_message(what, exit_info, when="before it was stopped"):
    """E.g. 'the generator (xdplab-trafficgen, pid 123) was killed by signal 9 (SIGKILL) before it was stopped;
    stderr: ...'. `what` names the process, e.g. 'the generator (xdplab-trafficgen, pid 123)'."""
    msg = "%s %s %s" % (what, describe(exit_info), when)
    stderr = (exit_info or {}).get("stderr_tail")
    msg += "; stderr: %s" % (" | ".join(stderr.splitlines()) if stderr else "(empty)")
    return msg


class Process:
    """Files and process of one run; see the module docstring."""

    kind = None  # what owns the run (e.g. the generator backend), recorded in the state file

    def __init__(self, run_dir, name, state_suffix=".state.json", out_suffix=".out", err_suffix=".err", kind=None):
        self.run_dir = run_dir
        self.name = name
        self.state_path = os.path.join(run_dir, name + state_suffix)
        self.out_path = os.path.join(run_dir, name + out_suffix) if out_suffix else None
        self.err_path = os.path.join(run_dir, name + err_suffix) if err_suffix else None
        self.exit_path = os.path.join(run_dir, name + ".exit.json")
        if kind is not None:
            self.kind = kind
        self._supervisor = None

    # -- files ---------------------------------------------------------------------------------
    def paths(self):
        return [p for p in (self.state_path, self.out_path, self.err_path, self.exit_path) if p]

    def files(self):
        """The run's files that exist."""
        return [p for p in self.paths() if os.path.exists(p)]

    def remove(self):
        """Remove the run's files, and the run directory if that leaves it empty."""
        for path in self.files():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        with contextlib.suppress(OSError):  # other runs' files may still be there, or it is gone already
            os.rmdir(self.run_dir)

    def load_state(self):
        """The state file's content, None if there is none; a corrupt file is an error saying to remove it."""
        try:
            with open(self.state_path) as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise ProcessError("state file %s is corrupt (%s); remove it" % (self.state_path, exc)) from exc

    def save_state(self, state):
        os.makedirs(self.run_dir, exist_ok=True)
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, self.state_path)

    def update_state(self, **fields):
        """Add fields to the state file (e.g. that the exit was reported); no-op without a state file."""
        state = self.load_state()
        if state is None:
            return None
        state.update(fields)
        self.save_state(state)
        return state

    def read_err(self, limit=4000):
        if not self.err_path:
            return ""
        try:
            with open(self.err_path, errors="replace") as f:
                return f.read()[-limit:]
        except FileNotFoundError:
            return ""

    def json_lines(self, warnings=None):
        """Every JSON object the process printed on stdout, in order; other lines are ignored.

        Pass a list as ``warnings`` to get the lines that were not read (_jsonl.LineWarning naming
        ``<name>.out:line``; a last line cut by a kill has kind ``cut``).
        """
        if not self.out_path:
            return []
        try:
            with open(self.out_path, errors="replace") as f:
                return json_records(f.read(), warnings, self.out_path)
        except FileNotFoundError:
            return []

    # -- lifecycle -----------------------------------------------------------------------------
    def running(self, state=None):
        state = state if state is not None else self.load_state()
        if not state or state.get("start_time") is None:
            return False
        return proc_start_time(state["pid"]) == state["start_time"]

    @staticmethod
    def child_cpus():
        """The CPUs a started process may run on: every online CPU (empty: unknown, inherit ours)."""
        try:
            return _cpus.online_cpus()
        except (OSError, ValueError):
            return []

    def start(self, command, params=None, settle=0.5, stdin=None, stdout=None, stderr=None, env=None, extra=None, check=True,
              ready=None):  # fmt: skip
        """Start `command` under a supervisor; returns the state written to the state file.

        stdin/stdout/stderr are file descriptors for the process (default: /dev/null, `<name>.out`,
        `<name>.err`). Raises ProcessError if it cannot run, or if it ends with a failure within
        `settle` seconds (the message names its status or signal and its stderr's last lines); with
        check=False the caller looks at exit() itself (e.g. to read what the process printed first).
        `ready`, a callable, ends the settle early once it returns true (the process said it got past its
        set-up, e.g. a start record on its stdout); a process that never says so settles the whole time.
        """
        os.makedirs(self.run_dir, exist_ok=True)
        for path in (self.exit_path, self.out_path, self.err_path) if stdout is None else (self.exit_path,):
            with contextlib.suppress(FileNotFoundError):
                if path:
                    os.unlink(path)
        opened = []
        try:
            if stdout is None:
                out = open(self.out_path, "wb")  # noqa: SIM115 (closed below)
                opened.append(out)
                stdout = out.fileno()
            if stderr is None:
                err = open(self.err_path, "wb")  # noqa: SIM115 (closed below)
                opened.append(err)
                stderr = err.fileno()
            ready_r, ready_w = os.pipe()
            try:
                cpus = ",".join(str(c) for c in self.child_cpus()) or "--"
                argv = [sys.executable, "-c", SUPERVISOR, self.exit_path, str(ready_w), cpus] + list(command)
                sup = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL if stdin is None else stdin,
                    stdout=stdout,
                    stderr=stderr,
                    pass_fds=(ready_w,),
                    start_new_session=True,
                    close_fds=True,
                    env=env,
                )
            finally:
                os.close(ready_w)
            line = b""
            with os.fdopen(ready_r, "rb") as ready_pipe:
                line = ready_pipe.readline().strip()
        finally:
            for f in opened:
                f.close()
        self._supervisor = sup  # reaped by us while we live, by init after
        if not line.isdigit():
            sup.wait(10)
            info = self.exit() or {}
            raise ProcessError(
                info.get("error") or "%s could not be started (its supervisor exited with %s)" % (command[0], sup.returncode)
            )
        pid = int(line)
        state = {
            "kind": self.kind,
            "backend": self.kind,  # the generators' name for it
            "pid": pid,
            "start_time": proc_start_time(pid),
            "supervisor_pid": sup.pid,
            "supervisor_start_time": proc_start_time(sup.pid),
            "params": params if params is not None else {},
            "command": list(command),
            "started": time.time(),
            "started_monotonic": time.monotonic(),
        }
        if extra:
            state.update(extra)
        if state["start_time"] is None:  # ended already (zombie until the supervisor reaps it)
            state["start_time"] = -1
        self.save_state(state)
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline and self.running(state):
            if ready is not None and ready():
                break
            time.sleep(0.02 if ready is not None else 0.05)
        if check and not self.running(state):
            info = self.exit(state)
            if failed(info):
                self.update_state(exit_reported=True)
                raise ProcessError(failure_message("%s (pid %d)" % (os.path.basename(command[0]), pid), info, "at start"))
        return state

    def send(self, sig, state=None, group=False):
        """Send a signal to the process if it still is the recorded one; False if it is not running."""
        state = state if state is not None else self.load_state()
        if not self.running(state):
            return False
        kills = (os.killpg, os.kill) if group else (os.kill,)
        for kill in kills:
            try:
                kill(state["pid"], sig)
            except OSError as exc:
                if exc.errno not in (errno.ESRCH, errno.EPERM):
                    raise
        return True

    def wait(self, timeout, state=None):
        """Wait until the process ends; False if it still runs after timeout."""
        state = state if state is not None else self.load_state()
        deadline = time.monotonic() + timeout
        while self.running(state):
            if time.monotonic() > deadline:
                return False
            self._reap()
            time.sleep(0.05)
        return True

    def stop(self, timeout=10.0, sig=signal.SIGINT, group=False):
        """Stop the process: `sig` (SIGINT), then SIGKILL after `timeout` seconds.

        Never an error for a process that already ended or a run that never started. Returns
        {"was_running": bool, "signals": [names sent], "exit": exit() or None, "absent": bool}.
        """
        state = self.load_state()
        if state is None:
            return {"was_running": False, "signals": [], "exit": None, "absent": True}
        if not self.running(state):
            return {"was_running": False, "signals": [], "exit": self.exit(state), "absent": False}
        state = self.update_state(stop_requested=time.time()) or state
        sent = []
        if self.send(sig, state, group):
            sent.append(signal_name(sig))
        if not self.wait(timeout, state):
            if self.send(signal.SIGKILL, state, group):
                sent.append("SIGKILL")
            self.wait(5.0, state)
        return {"was_running": True, "signals": sent, "exit": self.exit(state), "absent": False}

    def _reap(self):
        if self._supervisor is not None:
            self._supervisor.poll()

    def exit(self, state=None, wait=2.0):
        """How the process ended: {pid, exit_status, signal, signal_name, core_dumped, stderr_tail, ...}.

        None while it runs or if the run never started. If its supervisor was killed too, the status is
        unknown: exit_status and signal are None and `note` says why.
        """
        state = state if state is not None else self.load_state()
        if state is None and not os.path.exists(self.exit_path):
            return None
        if state is not None and self.running(state):
            return None
        deadline = time.monotonic() + wait
        info = None
        while info is None:
            try:
                with open(self.exit_path) as f:
                    info = json.load(f)
            except (FileNotFoundError, ValueError):
                supervisor_alive = (
                    state is not None
                    and proc_start_time(state.get("supervisor_pid")) is not None
                    and proc_start_time(state.get("supervisor_pid")) == state.get("supervisor_start_time")
                )
                if not supervisor_alive or time.monotonic() > deadline:
                    info = {
                        "exit_status": None,
                        "signal": None,
                        "note": (
                            "its supervisor (pid %s) ended without recording it" % (state or {}).get("supervisor_pid")
                            if not supervisor_alive
                            else "its supervisor has not recorded it yet"
                        ),
                    }
                    break
                self._reap()
                time.sleep(0.02)
        info.setdefault("pid", (state or {}).get("pid"))
        if info.get("pid") is None:
            info["pid"] = (state or {}).get("pid")
        info["signal_name"] = signal_name(info["signal"]) if info.get("signal") is not None else None
        info["stderr_tail"] = tail(self.read_err()) or (info.get("error") or "")
        if state is not None:
            info["stop_requested"] = bool(state.get("stop_requested"))
            info["reported"] = bool(state.get("exit_reported"))
        return info


class ServerStatus:
    """What a DetachedServer's state file says now: ``state`` (its content, None without one), ``running`` (the
    recorded process still runs: same pid and start time), ``pid`` (the running one's, else None) and ``command``
    (the recorded command line, [] without one)."""

    def __init__(self, state, running):
        self.state = state
        self.running = running
        self.pid = state["pid"] if running else None
        self.command = list((state or {}).get("command") or [])

    def runs(self, command):
        """Whether the server runs with exactly this command line (then nothing needs to change)."""
        return self.running and self.command == list(command)


class DetachedServer:
    """A server that outlives the module invocation that starts it (the TCP_RR and iperf3 servers), kept by its state
    file ``<run_dir>/<name>.state.json`` (pid and start time, as every Process): ``status()`` reads it, ``start()``
    replaces whatever runs with a command line (the one running is stopped first: SIGTERM, then SIGKILL after
    ``stop_timeout`` seconds), ``stop()`` stops it the same way and removes its files. The modules decide from the
    status (same command line: nothing changes; check mode: nothing is done) and return what they return."""

    def __init__(self, run_dir, name, kind, stop_timeout=5.0, settle=0.3):
        self.process = Process(run_dir, name, kind=kind)
        self.stop_timeout = stop_timeout
        self.settle = settle

    @property
    def state_path(self):
        return self.process.state_path

    def status(self):
        state = self.process.load_state()
        return ServerStatus(state, self.process.running(state))

    def start(self, command, params=None, status=None):
        """Start ``command`` detached, after stopping the server that runs (``status``: what status() said, read
        again when not given); returns the new process's pid. ProcessError when it cannot run or ends at once."""
        status = status if status is not None else self.status()
        if status.running:
            self.process.stop(self.stop_timeout, sig=signal.SIGTERM)
        return self.process.start(command, params, settle=self.settle)["pid"]

    def stop(self, status=None):
        """Stop the server (SIGTERM, then SIGKILL) and remove its files; False when there was nothing, neither a
        running server nor a file (nothing running is not an error)."""
        status = status if status is not None else self.status()
        if not self.leftovers(status):
            return False
        if status.running:
            self.process.stop(self.stop_timeout, sig=signal.SIGTERM)
        self.process.remove()
        return True

    def leftovers(self, status=None):
        """Whether stop() would do anything: a running server or any of its files."""
        status = status if status is not None else self.status()
        return status.running or bool(self.process.files())


def json_records(text, warnings=None, source="stdout"):
    """The JSON objects of a program's stdout, in order, read by the one JSON-lines reader (_jsonl, stream mode).

    Lines that are not JSON objects are the program's other output and are skipped; a last line cut by a
    kill, and any corrupt line, are not records. Pass a list as ``warnings`` to get those lines as
    _jsonl.LineWarning (``source:line: ...``; a cut last line has kind ``cut``, not corruption).
    """
    records, found = _jsonl.parse(text, source, stream=True)
    if warnings is not None:
        warnings.extend(found)
    return records

# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a module of this collection in a fork of Ansible's worker process, inside a network namespace of this machine.

Ansible runs a module as a new Python process: on the virtual lab ``ip netns exec NS python3`` unpacks the module's
AnsiballZ payload and imports ansible.module_utils again, about 0.3-0.5 s per call on the 2-CPU lab machine, five
times per trial (docs/BENCHMARKS.md "Ansible cost per trial"). The worker that runs a trial's phase (action
xdplab.testbed.trial) has ansible.module_utils imported already and is this machine's process, so where the phase's
host is a network namespace of this machine (connection xdplab.testbed.netns, or local) and there is no become, the
phase forks the worker, and the child enters the namespace as ``ip netns exec`` does (setns to the namespace, a mount
namespace of its own with the namespace's sysfs on /sys), gives the module its arguments as AnsiballZ would
(``basic._ANSIBLE_ARGS``, serialization profile ``legacy``), runs the module's ``main()`` and writes its result to a
pipe. Everything the module starts (a generator, a benchmark) is a child of that process in that namespace, as with
``ip netns exec``. ansible.netcommon runs modules in the worker for the same reason (AnsibleModule's
``_record_module_result`` says so).

Any other host (SSH, become) runs the module the usual way.

A module can also run in the background (start_module): a detached grandchild of the worker runs it as above and
writes its result to a file, which a later phase (another worker process) reads (job_result) or whose job it ends
(kill_module): the trial phases' jobs (plugin_utils/_trial.py), as ``async``/``async_status`` do over SSH.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import signal
import sys
import time
import traceback

from ansible_collections.xdplab.testbed.plugins.module_utils._process import proc_start_time

NETNS_RUN_DIR = "/run/netns"
_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_REC = 0x4000
_MS_SLAVE = 1 << 19
_MNT_DETACH = 2
_ST_RDONLY = 1
# this collection's modules, by import name
_PREFIX = "xdplab.testbed."
_PACKAGE = "ansible_collections.xdplab.testbed.plugins.modules."


def runs_in_worker(module_name):
    """Whether a module can run here: one of this collection's."""
    return module_name.startswith(_PREFIX)


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def enter_netns(name, run_dir=NETNS_RUN_DIR):
    """What ``ip netns exec NAME`` does before it runs its command (iproute2's netns_switch): join the network
    namespace, then a mount namespace of its own in which /sys is a sysfs of that network namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(os.path.join(run_dir, name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(libc.setns(fd, _CLONE_NEWNET), f"setns to network namespace {name}")
    finally:
        os.close(fd)
    _check(libc.unshare(_CLONE_NEWNS), "unshare the mount namespace")
    _check(libc.mount(b"", b"/", b"none", _MS_SLAVE | _MS_REC, None), "make / a slave mount")
    flags = 0
    if libc.umount2(b"/sys", _MNT_DETACH) != 0:
        # no sysfs to take off: a read-only /sys can only be shadowed read-only
        try:
            if os.statvfs("/sys").f_flag & _ST_RDONLY:
                flags = _MS_RDONLY
        except OSError:
            pass
    _check(libc.mount(name.encode(), b"/sys", b"sysfs", flags, None), "mount the namespace's sysfs on /sys")


def run_module(module_name, args, netns=None):
    """Run the module ``module_name`` (this collection's, e.g. ``xdplab.testbed.xdp_stats``) with ``args`` (its
    parameters and Ansible's ``_ansible_*`` ones) in a child of this process, in network namespace ``netns`` (None:
    this process's). Returns the module's result as Ansible would have parsed it: a dict; ``failed`` when the module
    failed, raised or its process ended without a result."""
    import_name = _PACKAGE + module_name[len(_PREFIX) :]
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read_fd)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            if netns:
                enter_netns(netns)
            # the module's result (exit_json, fail_json: a line of JSON on stdout) goes to the pipe
            sys.stdout = os.fdopen(write_fd, "w")
            from ansible.module_utils import basic

            basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()
            basic._ANSIBLE_PROFILE = "legacy"
            try:
                importlib.import_module(import_name).main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:  # the child reports whatever happened, then exits
            failure = {"failed": True, "msg": f"{module_name} raised {exc!r} in the worker", "exception": traceback.format_exc()}
            with contextlib.suppress(BaseException):
                sys.stdout.write("\n" + json.dumps(failure))
        finally:
            try:
                sys.stdout.flush()
            finally:
                os._exit(code)
    os.close(write_fd)
    chunks = []
    with os.fdopen(read_fd, "rb") as pipe:
        for chunk in iter(lambda: pipe.read(65536), b""):
            chunks.append(chunk)
    # (os.waitpid retries on EINTR itself, PEP 475)
    _pid, status = os.waitpid(pid, 0)
    return _parse(module_name, b"".join(chunks).decode("utf-8", "replace"), status)


def _parse(module_name, text, status):
    """The last JSON line of the module's output (a module may print before its result)."""
    for line in reversed([ln for ln in text.splitlines() if ln.strip()]):
        try:
            result = json.loads(line)
        except ValueError:
            continue
        if isinstance(result, dict):
            for key in [k for k in result if k.startswith("_ansible_")]:
                result.pop(key)
            return result
    how = f"exit status {os.waitstatus_to_exitcode(status)}" if status else "no output"
    return {"failed": True, "msg": f"{module_name} ended in the worker without a result ({how}): {text[-500:]!r}"}


# -- background jobs: a module started in one phase, its result read in a later one (another worker process) --------
def start_module(module_name, args, result_path, netns=None):
    """Start the module ``module_name`` in the background: a detached grandchild of this process (double fork, its own
    session, stdio on /dev/null) runs it as run_module does (in network namespace ``netns``) and writes its result as
    JSON to ``result_path`` (written to ``result_path + '.tmp'`` first, then renamed: a reader never sees half of it).
    Returns ``{"pid", "starttime"}`` of the grandchild, the leader of its own process group (kill_module ends it and
    the module's process with it; the start time tells it from a later process with the same pid)."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: forks the grandchild and exits at once, so that nothing waits for the job
        try:
            os.close(read_fd)
            if os.fork() == 0:
                _run_detached(module_name, args, result_path, netns, write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        said = pipe.read().decode("ascii", "replace").split()
    os.waitpid(pid, 0)
    if len(said) != 2:
        raise OSError(f"the background job of {module_name} did not start (it said {said!r})")
    return {"pid": int(said[0]), "starttime": int(said[1])}


def _run_detached(module_name, args, result_path, netns, write_fd):
    """The grandchild of start_module: never returns."""
    try:
        # nothing of the worker's is collected here: a stale file object's finaliser could close a descriptor that
        # this process has opened again
        gc.freeze()
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.write(write_fd, f"{os.getpid()} {proc_start_time(os.getpid())}".encode())
        # the worker's other descriptors (the controller's pipes) are not kept open by the job
        os.closerange(3, write_fd)
        os.closerange(write_fd + 1, os.sysconf("SC_OPEN_MAX"))
        os.close(write_fd)
        try:
            result = run_module(module_name, args, netns=netns)
        except BaseException as exc:  # the job reports whatever happened
            msg = f"{module_name} raised {exc!r} in the background"
            result = {"failed": True, "msg": msg, "exception": traceback.format_exc()}
        tmp = result_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        os.replace(tmp, result_path)
    finally:
        os._exit(0)


def job_running(job):
    """Whether a job of start_module still runs (the same process: its pid with its start time; a zombie has ended)."""
    return proc_start_time(job["pid"]) == job["starttime"]


def job_result(job, result_path):
    """A job's result once it has written one (a dict), else None (it still runs, or it ended without one: see
    job_running)."""
    try:
        with open(result_path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        return {"failed": True, "msg": f"the background job's result {result_path} is not JSON: {exc}"}


def kill_module(job, result_path, grace_s=2.0):
    """End a job of start_module if it still runs (SIGTERM to its process group, SIGKILL after ``grace_s``) and remove
    its result files. Safe to call twice, and for a job that has ended. Returns whether it was still running."""
    running = job_running(job)
    if running:
        _signal_group(job["pid"], signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while job_running(job) and time.monotonic() < deadline:
            time.sleep(0.05)
        if job_running(job):
            _signal_group(job["pid"], signal.SIGKILL)
    for path in (result_path, result_path + ".tmp"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return running


def _signal_group(pid, sig):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)

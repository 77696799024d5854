# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep the tool itself (controller, forks, module processes, samplers, report) on housekeeping CPUs.

Two halves:

* ``pin_tree``: the module ``housekeeping`` finds the process tree it was started from -- the controller
  (``ansible-playbook``: its main process, its threads and every fork, when the host is a network namespace of the
  controller, as on the virtual lab) or the SSH session of the connection (a remote host) -- and sets the CPU
  affinity of every thread in it. Forks and execs inherit the affinity of the thread that made them, so every
  worker, module process and sampler the run starts afterwards stays there.
* ``pin_self``: a module process pins itself at start to the CPUs that the state file (written by ``housekeeping``
  on that host) names; that covers processes the tree did not reach (a new SSH connection).

Threads whose affinity is already inside the housekeeping CPUs, or only on CPUs given as ``keep`` (the DUT's work:
testpmd lcores, pinned bench threads), are left alone.
"""

from __future__ import annotations

import json
import os

from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import parse_cpu_list

STATE_FILE = "/run/xdplab/housekeeping.json"
ENV = "XDPLAB_HOUSEKEEPING_CPUS"
STATE_ENV = "XDPLAB_HOUSEKEEPING_STATE"  # another state file than STATE_FILE (tests: never the live lab's)
CONTROLLER_NAMES = ("ansible-playbook", "ansible", "ansible-test", "ansible-runner")
SSH_NAMES = ("sshd", "sshd-session")


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def proc_info(pid, proc="/proc"):
    """{pid, ppid, comm, argv} of a process (None when it is gone)."""
    try:
        stat = _read(f"{proc}/{pid}/stat").decode("utf-8", "replace")
        argv = [a.decode("utf-8", "replace") for a in _read(f"{proc}/{pid}/cmdline").split(b"\0") if a]
    except OSError:
        return None
    rpar = stat.rindex(")")
    return {"pid": int(pid), "ppid": int(stat[rpar + 2 :].split()[1]), "comm": stat[stat.index("(") + 1 : rpar],
            "argv": argv}


def kind_of(info):
    """'controller' for an Ansible CLI process, 'ssh' for an SSH session process, else None."""
    if info is None:
        return None
    names = [os.path.basename(a) for a in info["argv"][:2]]
    if any(n in CONTROLLER_NAMES for n in names):
        return "controller"
    if info["comm"] in SSH_NAMES and info["ppid"] > 1:
        # the per-connection session (its parent is the listener or its privileged monitor), never the listener
        return "ssh"
    return None


def find_anchor(pid=None, proc="/proc"):
    """The root of the tree to pin, walking up from `pid`: the top-most Ansible process of an unbroken chain (the
    controller's main process, not a fork of it), else the nearest SSH session; (info, kind) or (None, None)."""
    info = proc_info(pid or os.getpid(), proc)
    anchor, kind = None, None
    while info is not None and info["pid"] > 1:
        k = kind_of(info)
        if k == "controller":
            anchor, kind = info, k
        elif anchor is not None:
            break  # the chain of Ansible processes ended: its top is the controller's main process
        elif k == "ssh":
            return info, k
        info = proc_info(info["ppid"], proc)
    return anchor, kind


def tree(root, proc="/proc"):
    """pids of `root` and all its descendants."""
    children = {}
    for name in os.listdir(proc):
        if name.isdigit():
            info = proc_info(name, proc)
            if info:
                children.setdefault(info["ppid"], []).append(info["pid"])
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def threads_of(pid, proc="/proc"):
    try:
        return sorted(int(t) for t in os.listdir(f"{proc}/{pid}/task"))
    except OSError:
        return []


def pin_tree(root, cpus, keep=(), check_mode=False, proc="/proc"):
    """Set the affinity of every thread of `root`'s tree to `cpus`. Returns the threads moved:
    [{pid, tid, comm, from: [...], to: [...]}]; threads already inside `cpus` or only on `keep` CPUs are left."""
    cpus, keep = set(cpus), set(keep)
    moved = []
    for pid in tree(root, proc):
        info = proc_info(pid, proc)
        for tid in threads_of(pid, proc):
            try:
                now = os.sched_getaffinity(tid)
            except OSError:
                continue  # ended meanwhile
            if now <= cpus or (keep and now <= keep):
                continue
            if not check_mode:
                try:
                    os.sched_setaffinity(tid, cpus)
                except OSError:
                    continue
            moved.append({"pid": pid, "tid": tid, "comm": info["comm"] if info else "", "from": sorted(now),
                          "to": sorted(cpus)})
    return moved


def read_state(path=STATE_FILE):
    try:
        return json.loads(_read(path))
    except (OSError, ValueError):
        return None


def write_state(state, path=STATE_FILE):
    """Write the state atomically; True when its content changed."""
    if read_state(path) == state:
        return False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    return True


def housekeeping_cpus(path=None, environ=None):
    """The housekeeping CPUs of this host: $XDPLAB_HOUSEKEEPING_CPUS ('0-1,4'), else the state file (path, else
    $XDPLAB_HOUSEKEEPING_STATE, else STATE_FILE); None if unset."""
    environ = os.environ if environ is None else environ
    env = environ.get(ENV)
    if env:
        return parse_cpu_list(env)
    state = read_state(path or environ.get(STATE_ENV) or STATE_FILE)
    if state and state.get("cpus"):
        return [int(c) for c in state["cpus"]]
    return None


def pin_self(path=None, environ=None):
    """Pin the calling process to this host's housekeeping CPUs (see housekeeping_cpus); the CPUs, or None when
    none are set or none of them is allowed here. Never raises: a module must run even where nothing was set."""
    try:
        cpus = housekeeping_cpus(path, environ)
        if not cpus:
            return None
        online = set(range(os.cpu_count() or 1))
        target = set(cpus) & online
        if not target:
            return None
        if os.sched_getaffinity(0) != target:
            os.sched_setaffinity(0, target)
        return sorted(target)
    except (OSError, ValueError):
        return None

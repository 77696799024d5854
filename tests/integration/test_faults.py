# SPDX-License-Identifier: GPL-3.0-or-later
"""Faults never stop a sweep: the real playbook on the virtual lab, with processes killed mid-trial.

`ansible-playbook playbooks/paper_drop.yml -i inventories/vlab` with a tiny matrix (-e, 1 repetition, 2 samples)
and its records in a temporary XDPLAB_RESULTS_DIR. A watcher kills, once each, the generator (xdplab-trafficgen)
in the XDP trial, testpmd in the DPDK trial and the AF_XDP bench in the AF_XDP trial, with SIGKILL, while the
trial runs; a last trial (Linux raw) runs untouched. Another run gets SIGINT mid-sweep. Each must record the
failed trial naming the signal (not for SIGINT), run the next trial, leave nothing behind (no namespace
xdplab-*, no generator/testpmd/bench process, no XDP program on a veth, the hugepages given back), keep every
finished record, and complete on a later run, which retries only what did not finish. Three runs of the
playbook in all (about 6 minutes on an idle machine).

What the runs skip (none of it is what these tests check, and each is another test's): every run the report
(`experiment_report`; the controller's packages are the report's), the host tuning (molecule/tuning's), and bpf/ on
the hosts where it is installed already; the runs after the first, what the first one installed and built and the
teardown left in place (the lab's and DPDK's packages, bpf/ on the hosts) and the read-only host preflight. Each run
still builds the lab, reserves DPDK's hugepages, runs its trials and tears everything down (docs/BENCHMARKS.md
"make test wall time").

The virtual lab uses fixed names (xdplab-tg, xdplab-dut): run under the lab lock. Needs root and the lab's
Debian packages (make paper-drop has installed them once).
"""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(ROOT, "playbooks", "paper_drop.yml")
INVENTORY = os.path.join(ROOT, "inventories", "vlab")
ANSIBLE_PLAYBOOK = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
PROGRAMS = {"generator": "xdplab-trafficgen", "testpmd": "dpdk-testpmd", "bench": "xdplab-xsk-bench"}
# 1 repetition, 2 samples of 1 s after 1 s of warm-up; no drift check (not what these tests are about)
TIMING = {"paper_drop_repetitions": 1, "paper_drop_touch": ["no_touch"], "experiment_samples": 2,
          "experiment_warmup": 1, "experiment_interval": 1, "experiment_drift_check": False}  # fmt: skip
RUN_TIMEOUT = 420
# --skip-tags of every run, and of the runs after the first (the first one installed, built and checked these)
SKIP = ["controller", "experiment_report", "tuning"]
SKIP_AGAIN = SKIP + ["vlab_install", "bpf_programs", "dpdk_install"]
INSTALLED = ["bin/xdplab-trafficgen", "bin/xdplab-xsk-bench", "lib/bpf/xdp_trafficgen.bpf.o", "lib/bpf/xdp_bench.bpf.o",
             "lib/bpf/xsk_bench.bpf.o"]


@pytest.fixture(autouse=True)
def needs_root():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.skip("needs the repository's .venv (make venv)")


def hugepages():
    with open("/proc/meminfo") as f:
        return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in f) if k.startswith("HugePages_")}


def processes(name):
    """pids of the processes whose command is `name` (comm is cut at 15 characters)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode(errors="replace")
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if os.path.basename(argv0) == name and state != "Z":
            found.append(int(pid))
    return found


def in_the_lab(pid):
    """Whether the process runs in a namespace of the virtual lab (xdplab-tg, xdplab-dut)."""
    lab = set()
    for ns in ("xdplab-tg", "xdplab-dut"):
        try:
            lab.add(os.stat("/run/netns/" + ns).st_ino)
        except OSError:
            continue
    try:
        return os.stat("/proc/%d/ns/net" % pid).st_ino in lab
    except OSError:
        return False


def started_at(pid):
    """Seconds since the process started."""
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    with open("/proc/%d/stat" % pid) as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    return uptime - ticks / os.sysconf("SC_CLK_TCK")


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def xdp_on_root_veths():
    links = json.loads(subprocess.run(["ip", "-j", "-d", "link", "show"], capture_output=True, text=True, check=True).stdout)
    return [link["ifname"] for link in links if link.get("xdp") and link.get("linkinfo", {}).get("info_kind") == "veth"]


def assert_nothing_left(before_hugepages):
    assert [ns for ns in namespaces() if ns.startswith("xdplab-")] == []
    for what, name in PROGRAMS.items():
        assert processes(name) == [], "a %s (%s) is still running" % (what, name)
    assert xdp_on_root_veths() == []
    after = hugepages()
    assert after["HugePages_Total"] == before_hugepages["HugePages_Total"], (before_hugepages, after)
    assert after["HugePages_Free"] == after["HugePages_Total"], after


class Sweep:
    """One results directory; runs of the playbook against it."""

    def __init__(self, tmp_path, extra, programs_built=False):
        self.programs_built = programs_built
        self.results = tmp_path / "results"
        self.extra = dict(TIMING, **extra)
        self.log = []

    def command(self):
        if not self.log:
            # bpf/ on the hosts as well when another lab test has installed it
            skip = SKIP + (["bpf_programs"] if self.programs_built else [])
            return [ANSIBLE_PLAYBOOK, PLAYBOOK, "-i", INVENTORY, "-e", json.dumps(self.extra), "--skip-tags", ",".join(skip)]
        again = dict(self.extra, experiment_preflight=False)
        return [ANSIBLE_PLAYBOOK, PLAYBOOK, "-i", INVENTORY, "-e", json.dumps(again), "--skip-tags", ",".join(SKIP_AGAIN)]

    def env(self):
        return dict(os.environ, XDPLAB_RESULTS_DIR=str(self.results), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")

    def start(self):
        out = open(self.results.parent / ("run-%d.log" % len(self.log)), "w+")  # noqa: SIM115 (closed by wait)
        proc = subprocess.Popen(self.command(), cwd=ROOT, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        self.log.append(out)
        return proc

    def wait(self, proc):
        try:
            proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError("the playbook ran longer than %ds: %s" % (RUN_TIMEOUT, self.tail())) from None
        return proc.returncode

    def run(self):
        return self.wait(self.start())

    def tail(self, lines=40):
        f = self.log[-1]
        f.flush()
        f.seek(0)
        return "".join(f.read().splitlines(True)[-lines:])

    def records(self):
        path = self.results / "paper_drop" / "dut" / "trials.jsonl"
        if not path.exists():
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]  # every line whole: none cut by a fault


class Killer(threading.Thread):
    """Kills, with SIGKILL, the first process of each named program in the lab once it has run `after` seconds."""

    def __init__(self, after):
        super().__init__(daemon=True)
        self.after = after  # {program: seconds alive before the kill}
        self.killed = {}  # program -> pid
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set() and len(self.killed) < len(self.after):
            for name, seconds in self.after.items():
                if name in self.killed:
                    continue
                for pid in processes(name):
                    try:
                        if in_the_lab(pid) and started_at(pid) >= seconds:
                            os.kill(pid, signal.SIGKILL)
                            self.killed[name] = pid
                            break
                    except OSError:
                        continue
            time.sleep(0.05)


def interrupt(proc, tries=3, grace=5.0):
    """SIGINT to ansible-playbook, as ^C in its terminal; again (as a user presses ^C again) while it still runs
    `grace` seconds later: a SIGINT that lands while the controller forks a worker is lost (Python prints
    "Exception ignored in: <function _releaseLock ...> KeyboardInterrupt" and the run goes on; seen in a CI run)."""
    for _attempt in range(tries):
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def by_system(records):
    out = {}
    for rec in records:
        out.setdefault(rec["point"]["system"], []).append(rec)
    return out


SYSTEMS = ["xdp", "dpdk_vector", "af_xdp_copy", "linux_raw"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, installed_programs):
    """One sweep of four trials (one per system) shared by the tests below, in this order: its first run has a
    process killed in each of the first three trials; the re-run is interrupted with SIGINT; a third run completes."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    sweep = Sweep(tmp_path_factory.mktemp("faults"), {"paper_drop_systems": SYSTEMS}, installed_programs(*INSTALLED))
    sweep.hugepages = hugepages()  # as the machine was before the sweep
    return sweep


def test_killed_processes_fail_their_trial_and_the_sweep_goes_on(sweep):
    # the generator once it has sent for 1.5 s (XDP trial); testpmd 2 s in (EAL init, then the window);
    # the bench 1.5 s in; the generators of later trials are left alone
    killer = Killer({"xdplab-trafficgen": 1.5, "dpdk-testpmd": 2.0, "xdplab-xsk-bench": 1.5})
    proc = sweep.start()
    killer.start()
    rc = sweep.wait(proc)
    killer.done.set()
    assert rc != 0, "a sweep with failed trials must say so: %s" % sweep.tail()
    assert set(killer.killed) == set(killer.after), (killer.killed, sweep.tail())
    systems = by_system(sweep.records())
    assert sorted(systems) == sorted(SYSTEMS), sweep.tail()
    for system, program in (("xdp", "xdplab-trafficgen"), ("dpdk_vector", "dpdk-testpmd"),
                            ("af_xdp_copy", "xdplab-xsk-bench")):  # fmt: skip
        (rec,) = systems[system]
        assert rec["status"] == "failed", rec
        failure = rec["failure"]
        assert "killed by signal 9 (SIGKILL)" in failure["error"], (system, failure)
        assert failure["process"]["signal"] == 9 and failure["process"]["signal_name"] == "SIGKILL", failure
        assert failure["process"]["pid"] == killer.killed[program], (failure, killer.killed)
    assert systems["xdp"][0]["failure"]["error"].startswith(
        "the generator (xdplab-trafficgen, pid %d) was killed by signal 9 (SIGKILL) before it was stopped"
        % killer.killed["xdplab-trafficgen"]
    )
    # each next trial ran: the last one, Linux raw, after the AF_XDP trial whose bench was killed
    assert [r["status"] for r in systems["linux_raw"]] == ["ok"]
    assert_nothing_left(sweep.hugepages)


def test_sigint_mid_rerun_keeps_every_record_and_the_next_run_completes(sweep):
    first_run = sweep.records()
    assert len(first_run) == 4, "needs the sweep of the test above"
    proc = sweep.start()  # retries the three failed trials
    deadline = time.monotonic() + RUN_TIMEOUT
    # SIGINT once the first retried trial is recorded and the next one's generator runs
    while time.monotonic() < deadline and proc.poll() is None:
        if len(sweep.records()) > len(first_run) and [p for p in processes("xdplab-trafficgen") if in_the_lab(p)]:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before its second trial: %s" % sweep.tail()
    time.sleep(1.0)
    interrupt(proc)
    assert sweep.wait(proc) != 0, sweep.tail()
    kept = sweep.records()
    # every record kept as it was, each line whole; the retried trial recorded once; none for the interrupted one
    assert kept[: len(first_run)] == first_run and len(kept) == len(first_run) + 1, kept
    assert kept[-1]["status"] == "ok" and kept[-1]["point"]["system"] == "xdp", kept[-1]
    # what SIGINT leaves: Ansible runs no always: step and no later play, but the generator stops by itself
    # at the end of its duration (it is never left running); the next run cleans the rest
    deadline = time.monotonic() + 30
    while processes("xdplab-trafficgen") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes("xdplab-trafficgen") == []

    assert sweep.run() == 0, sweep.tail()
    records = sweep.records()
    assert records[: len(kept)] == kept  # the runs only append
    latest = {r["trial_id"]: r["status"] for r in records}
    assert len(latest) == 4 and set(latest.values()) == {"ok"}, latest
    assert len([r for r in records if r["point"]["system"] == "linux_raw"]) == 1  # not measured again
    # XDP, DPDK rxonly and Linux bracket their own windows with CPU snapshots (cpu_window): the CPU figures cover the
    # counted window (testpmd's snapshots sit beside its first and last xstats reads), the AF_XDP bench's a longer one
    for rec in (r for r in records if r["status"] == "ok"):
        counted, cpu = rec["result"]["window"], rec["result"]["cpu_usage"]["window"]
        if rec["point"]["system"] == "af_xdp_copy":
            assert cpu["start"] <= counted["start"] and cpu["end"] >= counted["end"], rec["result"]
        else:
            # (a snapshot reads every thread's schedstat: 30-100 ms on this machine under load)
            assert abs(cpu["start"] - counted["start"]) < 0.5 and abs(cpu["end"] - counted["end"]) < 0.5, (
                rec["point"]["system"], counted, cpu)
    assert_nothing_left(sweep.hugepages)

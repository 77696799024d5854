# SPDX-License-Identifier: GPL-3.0-or-later
"""The one lab fixture of the integration tests: network namespaces joined by veth pairs.

`netlab(...)` (a factory fixture) builds a lab and returns a NetLab; the fixture tears every lab it built down
whatever the test did (processes left in its namespaces are killed, the namespaces deleted) and then checks
that none of them is left. Names are unique per test run: ``<prefix>-<random>-<side>``, so tests never
collide with each other or with the virtual lab's fixed xdplab-tg / xdplab-dut.

    lab = netlab("xd-xs", queues=2, gro=["tg0", "dut0"], macs={"tg0": TG_MAC, "dut0": DUT_MAC})
    lab.tg, lab.dut            # the namespaces of the two sides (sides=("tg", "dut"), the default)
    lab.exec(lab.dut, "ethtool", "-S", "dut0")

Options: `pairs` (veth pairs, first end on side 0, second on side 1; default one pair tg0/dut0),
`queues` (RX and TX queues of every end), `gro` (ends with GRO on: veth's NAPI then takes frames a peer's XDP
program redirects), `threaded` (ends with threaded NAPI; needs GRO or XDP on that end), `macs`, `addresses`
(CIDR), `features` (other ethtool -K settings per end), `no_ipv6` (no IPv6 in the namespaces: no stray
router solicitations in the counters), `single` (one namespace holding both ends; `lab.ns`), `lo` (loopback up),
`up` (True: every end up, False: none, or a list of the ends to set up).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
MODULES = "ansible_collections.xdplab.testbed.plugins.modules."
BPF_BUILD = os.path.join(ROOT, "bpf", "build")


def sh(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kw)


class NetLab:
    """Namespaces and veth pairs of one test; see the module docstring."""

    def __init__(self, prefix="xd", sides=("tg", "dut"), pairs=(("tg0", "dut0"),), queues=1, gro=(), threaded=(),
                 macs=None, addresses=None, features=None, no_ipv6=False, single=False, lo=True, up=True):  # fmt: skip
        self.tag = secrets.token_hex(3)
        self.single = single
        self.sides = (sides[0],) if single else tuple(sides)
        self.names = tuple("%s-%s-%s" % (prefix, self.tag, side) for side in self.sides)
        if single:
            self.names = ("%s-%s" % (prefix, self.tag),)
        self.ns = self.names[0]
        self.pairs = [tuple(p) for p in pairs]
        self.queues = queues
        self.gro = list(gro)
        self.threaded = list(threaded)
        self.macs = dict(macs or {})
        self.addresses = dict(addresses or {})
        self.features = {dev: dict(f) for dev, f in (features or {}).items()}
        self.no_ipv6 = no_ipv6
        self.lo = lo
        self.up_links = up
        self.created = []

    # -- names -----------------------------------------------------------------------------------
    def __getattr__(self, side):
        """lab.tg, lab.dut, ...: the namespace of a side."""
        sides = self.__dict__.get("sides", ())
        if side in sides:
            return self.names[sides.index(side)]
        raise AttributeError(side)

    def where(self, dev):
        """Namespace of an end of a pair."""
        for a, b in self.pairs:
            if dev == a:
                return self.names[0]
            if dev == b:
                return self.names[-1]
        raise KeyError("%s is not an end of this lab's veth pairs %s" % (dev, self.pairs))

    # -- build and tear down ---------------------------------------------------------------------
    def up(self):
        for ns in self.names:
            sh("ip", "netns", "add", ns)
            self.created.append(ns)
            if self.lo:
                sh("ip", "-n", ns, "link", "set", "lo", "up")
            if self.no_ipv6:
                self.exec(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        q = ["numtxqueues", str(self.queues), "numrxqueues", str(self.queues)]
        for a, b in self.pairs:
            peer_ns = [] if self.single else ["netns", self.names[-1]]
            sh("ip", "-n", self.names[0], "link", "add", a, *q, "type", "veth", "peer", "name", b, *peer_ns, *q)
        ends = [dev for pair in self.pairs for dev in pair]
        for dev in ends:
            ns = self.where(dev)
            if dev in self.macs:
                sh("ip", "-n", ns, "link", "set", dev, "address", self.macs[dev])
            if dev in self.addresses:
                sh("ip", "-n", ns, "addr", "add", self.addresses[dev], "dev", dev)
            if self.up_links is True or (self.up_links and dev in self.up_links):
                sh("ip", "-n", ns, "link", "set", dev, "up")
        # offloads once both ends are up: veth enables its NAPI for GRO on a running device
        for dev in ends:
            features = dict(self.features.get(dev, {}))
            if dev in self.gro:
                features["gro"] = "on"
            for key, value in features.items():
                self.exec(self.where(dev), "ethtool", "-K", dev, key, value)
        for dev in self.threaded:
            self.exec(self.where(dev), "sh", "-c", "echo 1 > /sys/class/net/%s/threaded" % dev)
        return self

    def pids(self, ns):
        return [int(p) for p in sh("ip", "netns", "pids", ns, check=False).stdout.split()]

    def down(self):
        """Kill what still runs in the namespaces, delete them. Safe to call twice."""
        for ns in self.created:
            for pid in self.pids(ns):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while any(self.pids(ns) for ns in self.created) and time.monotonic() < deadline:
            time.sleep(0.05)
        for ns in self.created:
            sh("ip", "netns", "del", ns, check=False)
        self.created = []

    # -- looking inside --------------------------------------------------------------------------
    def exec(self, ns, *argv, check=True, **kw):
        return sh("ip", "netns", "exec", ns, *argv, check=check, **kw)

    def link(self, dev, ns=None):
        return json.loads(sh("ip", "-n", ns or self.where(dev), "-j", "-d", "link", "show", "dev", dev).stdout)[0]

    def mac(self, dev, ns=None):
        return self.link(dev, ns)["address"]

    def xdp(self, dev, ns=None):
        """The link's XDP attachment (ip -d link's "xdp"), None when there is none."""
        return self.link(dev, ns).get("xdp")

    def module(self, ns, name, args):
        """Run the collection's module ``name`` with ``args`` inside namespace ``ns``; its JSON result."""
        fd, path = tempfile.mkstemp(prefix="xdplab-args-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"ANSIBLE_MODULE_ARGS": args}, f)
            proc = sh("ip", "netns", "exec", ns, sys.executable, "-m", MODULES + name, path, check=False,
                      env=dict(os.environ, PYTHONPATH=COLLECTIONS))
        finally:
            os.unlink(path)
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)


@pytest.fixture
def netlab():
    """Factory of NetLab: netlab(prefix, **options) builds one; every lab built is torn down, always."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    labs = []

    def make(prefix="xd", **options):
        lab = NetLab(prefix, **options)
        labs.append(lab)  # before up(): a lab that fails half-built is torn down too
        return lab.up()

    yield make
    names = [ns for lab in labs for ns in lab.created]
    for lab in reversed(labs):
        lab.down()
    left = set(sh("ip", "netns", "list").stdout.split()) & set(names)
    assert not left, "namespaces left behind: %s" % sorted(left)


@pytest.fixture(scope="session")
def bpf_build():
    """The tree's bpf/build, made for the files a test names: bpf_build("xdplab-trafficgen", "xdp_forward.bpf.o")
    runs `make -C bpf all build/<name>...` when any of them is missing (names outside `all`, such as
    xdp_latency_sink.bpf.o, are built too) and returns bpf/build."""

    def built(*names):
        missing = [n for n in names if not os.path.exists(os.path.join(BPF_BUILD, n))]
        if missing:
            proc = subprocess.run(["make", "-C", os.path.join(ROOT, "bpf"), "all", *("build/" + n for n in missing)],
                                  capture_output=True, text=True, check=False)  # fmt: skip
            assert proc.returncode == 0, proc.stderr[-2000:]
        return BPF_BUILD

    return built


# where the role xdplab.testbed.bpf_programs builds (bpf_programs_build_dir) and installs (bpf_programs_prefix)
PROGRAMS_BUILD_DIR = "/var/lib/xdplab/bpf"
PROGRAMS_PREFIX = "/usr/local/lib/xdplab"


def programs_current(installed):
    """Whether the lab tests may skip the role bpf_programs: every file of ``installed`` (paths under its prefix) is
    there, AND what it was built from is this tree's bpf/ (the role's build directory holds the same sources and make
    finds nothing out of date there). A file that merely exists may be an older checkout's: a generator of another
    version would then be measured."""
    if not all(os.path.exists(os.path.join(PROGRAMS_PREFIX, p)) for p in installed):
        return False
    tree = os.path.join(ROOT, "bpf")
    for name in sorted(os.listdir(tree)):
        src = os.path.join(tree, name)
        if not os.path.isfile(src):
            continue
        try:
            with open(src, "rb") as a, open(os.path.join(PROGRAMS_BUILD_DIR, name), "rb") as b:
                if a.read() != b.read():
                    return False
        except OSError:
            return False
    return subprocess.run(["make", "-q", "-C", PROGRAMS_BUILD_DIR, "all", "install"], capture_output=True,
                          check=False).returncode == 0


@pytest.fixture(scope="session")
def installed_programs():
    """programs_current as a fixture: installed_programs("bin/xdplab-trafficgen", ...) -> bool."""
    return lambda *installed: programs_current(installed)


# what a lab test's playbook run need not redo (each is another test's): the controller's packages (the report's),
# the host tuning (molecule tuning's), the DUTs' software (the first lab test, test_faults, installs it), the report
LAB_SKIP = ("controller", "tuning", "dut_software", "experiment_report")


def lab_skip_tags(installed, *more):
    """--skip-tags of a lab test's playbook run: LAB_SKIP, ``more``, and bpf_programs when every file of ``installed``
    (paths under the prefix) is there, built from this tree (programs_current)."""
    return ",".join(LAB_SKIP + more + (("bpf_programs",) if programs_current(installed) else ()))


@pytest.fixture(scope="session")
def skip_tags():
    """lab_skip_tags as a fixture: skip_tags(("bin/xdplab-trafficgen",), "vlab_install") -> "controller,..."."""
    return lab_skip_tags


@pytest.fixture
def lab_playbook(tmp_path):
    """Runs an experiment playbook on the virtual lab (inventories/vlab, the fixed xdplab-tg / xdplab-dut: under the
    lab lock) and returns its records: lab_playbook("paper_forward", {vars}, installed=[paths under the prefix]).
    Phases the other lab tests installed are skipped (controller, tuning, DUT software, the report; the programs
    too when every file of ``installed`` is in /usr/local/lib/xdplab, built from this tree: programs_current);
    results go to tmp_path. Skips without the repository's .venv; a failed run fails the test with its first failed
    task and its last output."""
    playbook = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
    if not os.path.exists(playbook):
        pytest.skip("needs the repository's .venv (make venv)")

    def run(name, extra, installed=()):
        skip = lab_skip_tags(tuple(installed))
        res = subprocess.run(
            [playbook, "-i", os.path.join(ROOT, "inventories", "vlab"), os.path.join(ROOT, "playbooks", name + ".yml"),
             "-e", json.dumps(extra), "-e", "experiment_results_dir=%s" % tmp_path, "--skip-tags", skip],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        out = res.stdout + res.stderr
        # the first failure (the teardown's output follows it), then the end
        first = min((i for i in (out.find("fatal: "), out.find("[ERROR]")) if i >= 0), default=len(out))
        assert res.returncode == 0, out[max(0, first - 1500):first + 2500] + "\n...\n" + out[-1500:]
        with open(os.path.join(tmp_path, name, "dut", "trials.jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]

    return run

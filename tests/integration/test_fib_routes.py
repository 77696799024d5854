# SPDX-License-Identifier: GPL-3.0-or-later
"""Module xdplab.testbed.fib_routes in a network namespace of its own (not the lab's: no lab lock): what the DUT alone
can tell is refused before any route changes (a next hop without a permanent neighbour or off every connected net,
forwarding disabled, a destination without a covering route, a prefix file with a bad line), then a table of 1,000
prefixes of playbooks/reference/bgp_table_ipv4.txt.gz installed, again without a change, replaced by the single
table, and removed: exactly the module's routes (its proto), the connected net and a route added by hand stay. Check
mode changes nothing. The fast path (a stamp of the installed table): taken by a second present of the same request,
left for the slow path when a route is deleted by hand, the limit or the file differs, or after absent. Root."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_routes as fr

pytestmark = pytest.mark.no_traffic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "playbooks", "reference", "bgp_table_ipv4.txt.gz")
NS = f"fibtest-{os.getpid()}"
HOP = "198.51.100.2"


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def module(args, check=False):
    """Runs the module in the namespace as Ansible runs it (its file with the arguments in a JSON file): (rc, result)."""
    path = os.path.join(ROOT, "plugins", "modules", "fib_routes.py")
    payload = {"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check)}
    # the arguments in a file, as Ansible gives them (a long destination list is over the limit of one argv string)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(payload, handle)
        handle.flush()
        res = subprocess.run(
            ["ip", "netns", "exec", NS, sys.executable, path, handle.name],
            cwd=ROOT, capture_output=True, text=True, check=False, timeout=300,
            env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "collections")),
        )  # fmt: skip
    assert res.stdout.strip(), res.stderr[-2000:]
    return res.returncode, json.loads(res.stdout)


def routes():
    return sh("ip", "-n", NS, "-4", "route", "show", "table", "main").splitlines()


@pytest.fixture
def namespace():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    if not os.path.exists(TABLE):
        pytest.skip(f"needs {TABLE}")
    sh("ip", "netns", "add", NS)
    try:
        for cmd in (
            "ip link add fibt0 type veth peer name fibt1",
            "ip link set fibt0 up",
            "ip link set fibt1 up",
            "ip addr add 198.51.100.1/30 dev fibt0",
            "ip route add 203.0.113.0/24 via 198.51.100.2 dev fibt0",
        ):
            sh("ip", "netns", "exec", NS, *cmd.split())
        yield NS
    finally:
        subprocess.run(["ip", "netns", "del", NS], check=False)


@pytest.mark.root
def test_fib_routes_checks_then_installs_and_removes_its_own(namespace, tmp_path):
    before = routes()
    base = {"table": "full", "src": TABLE, "limit": 1000, "next_hop": HOP}
    # no neighbour yet, forwarding off: refused, nothing changed
    rc, res = module(base)
    assert rc != 0 and f"next_hop {HOP} has no permanent neighbour entry on fibt0" in res["msg"], res
    sh("ip", "-n", NS, "neigh", "replace", HOP, "lladdr", "02:00:00:00:00:02", "dev", "fibt0", "nud", "permanent")
    rc, res = module(base)
    assert rc != 0 and "IPv4 forwarding is disabled in this namespace (net.ipv4.ip_forward = 0)" in res["msg"], res
    sh("ip", "netns", "exec", NS, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    rc, res = module(dict(base, next_hop="192.0.2.9"))
    assert rc != 0 and "next_hop 192.0.2.9 is not on a connected net of this namespace" in res["msg"], res
    rc, res = module(dict(base, destinations=["1.0.0.7", "9.9.9.9"]))
    assert rc != 0 and "1 of 2 destinations have no covering route in the table (full): 9.9.9.9" in res["msg"], res
    bad = tmp_path / "bad.txt"
    bad.write_text("1.0.0.0/24\nnot-a-prefix\n")
    rc, res = module(dict(base, src=str(bad)))
    assert rc != 0 and f"{bad} line 2: 'not-a-prefix': not an IPv4 prefix" in res["msg"], res
    assert routes() == before
    # check mode: what it would do, nothing done
    rc, res = module(base, check=True)
    assert rc == 0 and res["changed"] and res["added"] == 1000 and routes() == before, res
    # installed, timed, the trie read; then nothing to do
    rc, res = module(dict(base, destinations=["1.0.0.7"]))
    assert rc == 0 and res["changed"] and res["added"] == 1000 and res["routes"] == 1000, res
    assert res["install_s"] > 0 and res["device"] == "fibt0"
    assert res["triestat"]["tables"]["main"]["prefixes"] >= 1000 and res["triestat"]["tables"]["main"]["max_depth"] > 1
    assert len(sh("ip", "-n", NS, "-4", "route", "show", "proto", "211").splitlines()) == 1000
    rc, res = module(base)
    assert rc == 0 and not res["changed"] and res["routes"] == 1000 and res["install_s"] == 0, res
    # the single table replaces it by the difference
    rc, res = module({"table": "single", "next_hop": HOP})
    assert rc == 0 and res["changed"] and res["added"] == 2 and res["removed"] == 1000 and res["routes"] == 2, res
    # absent: exactly the module's routes go; the connected net and the hand-made route stay
    rc, res = module({"state": "absent"})
    assert rc == 0 and res["changed"] and res["removed"] == 2 and res["routes"] == 0, res
    assert routes() == before
    rc, res = module({"state": "absent"})
    assert rc == 0 and not res["changed"], res


@pytest.mark.root
def test_fib_routes_fast_path_while_the_kernel_holds_the_stamped_table(namespace, tmp_path):
    """The stamp (plugins/module_utils/_fib_stamp.py): a second present of the same table reads neither the file nor
    the routes; a destination without a covering route still fails; a route deleted by hand, another limit, a file
    touched, absent: the slow path again, which restores the table and stamps it anew."""
    sh("ip", "-n", NS, "neigh", "replace", HOP, "lladdr", "02:00:00:00:00:02", "dev", "fibt0", "nud", "permanent")
    sh("ip", "netns", "exec", NS, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    table = tmp_path / "table.txt.gz"
    shutil.copyfile(TABLE, table)
    stamps = tmp_path / "stamps"
    base = {"table": "full", "src": str(table), "limit": 3000, "next_hop": HOP, "stamp_dir": str(stamps)}
    dests = ["1.0.0.7", "203.0.113.9"]
    rc, res = module(dict(base, destinations=dests))
    assert rc == 0 and res["changed"] and res["routes"] == 3000, res
    assert res["stamp"]["fast"] is False and res["stamp"]["why"] == "no stamp" and res["stamp"]["written"], res["stamp"]
    stamp_file = res["stamp"]["path"]
    assert os.path.dirname(stamp_file) == str(stamps) and stamp_file.endswith("-proto211.json")
    # the same request: fast, the same answer in the same keys
    rc, fast = module(dict(base, destinations=dests))
    assert rc == 0 and not fast["changed"] and fast["stamp"]["fast"] and not fast["stamp"]["written"], fast
    for key in ("table", "routes", "skipped", "device"):
        assert fast[key] == res[key], key
    assert (
        fast["install_s"] == 0
        and fast["added"] == 0
        and fast["removed"] == 0
        and fast["triestat"]["tables"]["main"]["prefixes"] >= 3000
    )
    # 2,000 destinations: ip's answers (about 110 kB) are more than a pipe holds while the batch is written
    many = fr.draw_in_table(fr.read_prefixes(TABLE, limit=3000), 2000, 1, list(fr.MARTIAN))
    rc, res = module(dict(base, destinations=many))
    assert rc == 0 and not res["changed"] and res["stamp"]["fast"], res
    rc, bad = module(dict(base, destinations=many + ["9.9.9.9"]))
    assert rc != 0 and "1 of 2001 destinations have no covering route in the table (full): 9.9.9.9" in bad["msg"], bad
    # the fast path still checks the destinations (the kernel's lookup) and the next hop; nothing changes
    rc, bad = module(dict(base, destinations=["1.0.0.7", "9.9.9.9", "1.0.0.9"]))
    assert rc != 0 and "1 of 3 destinations have no covering route in the table (full): 9.9.9.9" in bad["msg"], bad
    rc, bad = module(dict(base, destinations=["1.0.0.300"]))
    assert rc != 0 and "destinations: 1.0.0.300 not IPv4 addresses" in bad["msg"], bad
    sh("ip", "-n", NS, "neigh", "del", HOP, "dev", "fibt0")
    rc, bad = module(base)
    assert rc != 0 and f"next_hop {HOP} has no permanent neighbour entry on fibt0" in bad["msg"], bad
    sh("ip", "-n", NS, "neigh", "replace", HOP, "lladdr", "02:00:00:00:00:02", "dev", "fibt0", "nud", "permanent")
    assert os.path.exists(stamp_file)
    # one route deleted by hand: the count differs, the slow path puts it back
    sh("ip", "-n", NS, "route", "del", "1.0.0.0/24", "proto", "211")
    rc, res = module(base)
    assert rc == 0 and res["changed"] and res["added"] == 1 and res["routes"] == 3000, res
    assert res["stamp"]["why"] == "the kernel has 2999 routes with proto 211, the stamp 3000" and res["stamp"]["written"]
    assert "1.0.0.0/24 via" in sh("ip", "-n", NS, "-4", "route", "show", "1.0.0.0/24")
    rc, res = module(base)
    assert rc == 0 and not res["changed"] and res["stamp"]["fast"], res
    # another limit: slow, by the difference
    rc, res = module(dict(base, limit=2000))
    assert rc == 0 and res["changed"] and res["removed"] == 1000 and res["stamp"]["why"] == "limit differs", res
    # the file touched (same content): slow, verified unchanged, stamped again, then fast
    os.utime(table, ns=(table.stat().st_atime_ns, table.stat().st_mtime_ns + 10**9))
    rc, res = module(dict(base, limit=2000))
    assert rc == 0 and not res["changed"] and res["stamp"]["why"] == "src_mtime_ns differs" and res["stamp"]["written"]
    rc, res = module(dict(base, limit=2000))
    assert rc == 0 and not res["changed"] and res["stamp"]["fast"], res
    # check mode on a changed request writes no stamp
    rc, res = module(dict(base, limit=2500), check=True)
    assert rc == 0 and res["changed"] and res["added"] == 500 and not res["stamp"]["written"], res
    rc, res = module(dict(base, limit=2000))
    assert rc == 0 and res["stamp"]["fast"], res
    # absent removes the stamp (and the routes); the next present is slow
    rc, res = module({"state": "absent", "stamp_dir": str(stamps)})
    assert rc == 0 and res["removed"] == 2000 and not os.path.exists(stamp_file), res
    rc, res = module(dict(base, limit=2000))
    assert rc == 0 and res["changed"] and res["stamp"]["why"] == "no stamp", res
    rc, res = module({"state": "absent", "stamp_dir": str(stamps)})
    assert rc == 0 and not os.path.exists(stamp_file)

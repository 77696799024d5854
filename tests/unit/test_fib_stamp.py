# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fast path of the module fib_routes (plugins/module_utils/_fib_stamp.py): a stamp matches a request only when
every key is the same and the kernel holds its number of routes; each key that differs, a count that differs, a
missing or broken stamp sends the module to the slow path. The netlink route count against `ip route show`'s."""

import os
import socket
import struct
import subprocess

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_stamp as fs


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "table.txt"
    path.write_text("1.0.0.0/24\n1.0.4.0/22\n")
    return path


def req(path, **changes):
    out = fs.request("full", str(path), 2, "198.51.100.2", "fibt0", 211, boot="boot-1", netns="4-4026532309")
    out.update(changes)
    return out


def test_request_names_the_file_by_path_size_mtime_and_sha256(table):
    r = req(table)
    assert r["src"] == str(table) and r["src_size"] == table.stat().st_size
    assert r["src_mtime_ns"] == table.stat().st_mtime_ns and len(r["src_sha256"]) == 64
    same = os.stat(table)
    table.write_text("1.0.0.0/24\n1.0.8.0/22\n")  # same size, other content, the old mtime back
    os.utime(table, ns=(same.st_atime_ns, same.st_mtime_ns))
    other = req(table)
    assert other["src_size"] == r["src_size"] and other["src_mtime_ns"] == r["src_mtime_ns"]
    assert other["src_sha256"] != r["src_sha256"]
    single = fs.request("single", str(table), 5, "198.51.100.2", "fibt0", 211, boot="b", netns="n")
    assert single["src"] is None and single["src_sha256"] is None and single["limit"] == 0
    with pytest.raises(OSError):
        fs.request("full", str(table) + ".gone", 0, "198.51.100.2", "fibt0", 211)


def test_stamp_matches_the_same_request_and_count(tmp_path, table):
    path = fs.stamp_path("4-4026532309", 211, str(tmp_path / "stamps"))
    assert path.endswith("stamps/net-4-4026532309-proto211.json")
    assert fs.read_stamp(path) is None
    stamp = fs.write_stamp(path, req(table), 2, ["1.0.4.0/22"])
    assert fs.read_stamp(path) == stamp and stamp["routes"] == 2 and stamp["skipped"] == ["1.0.4.0/22"]
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    assert fs.mismatch(fs.read_stamp(path), req(table), 2) is None
    assert fs.remove_stamp(path) and not os.path.exists(path) and not fs.remove_stamp(path)
    assert fs.mismatch(fs.read_stamp(path), req(table), 2) == "no stamp"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("version", fs.STAMP_VERSION + 1),
        ("boot_id", "boot-2"),
        ("netns", "4-4026532999"),
        ("proto", 212),
        ("table", "single"),
        ("src", "/elsewhere/table.txt"),
        ("src_size", 1),
        ("src_mtime_ns", 1),
        ("src_sha256", "0" * 64),
        ("limit", 0),
        ("next_hop", "198.51.100.3"),
        ("device", "fibt9"),
    ],
)
def test_each_key_that_differs_is_a_mismatch(table, key, value):
    stamp = dict(req(table), routes=2, skipped=[])
    assert fs.mismatch(stamp, req(table, **{key: value}), 2) == f"{key} differs"
    del stamp[key]
    assert fs.mismatch(stamp, req(table), 2) == f"{key} missing"


def test_route_count_that_differs_is_a_mismatch(table):
    stamp = dict(req(table), routes=2, skipped=[])
    assert fs.mismatch(stamp, req(table), 1) == "the kernel has 1 routes with proto 211, the stamp 2"
    assert fs.mismatch(stamp, req(table), 3) == "the kernel has 3 routes with proto 211, the stamp 2"
    assert fs.mismatch(dict(stamp, routes="2"), req(table), 2) == "routes missing"


def test_broken_stamp_is_none(tmp_path):
    bad = tmp_path / "net-1-2-proto211.json"
    bad.write_text('{"routes": ')
    assert fs.read_stamp(str(bad)) is None
    bad.write_text("[1, 2]")
    assert fs.read_stamp(str(bad)) is None


def nlmsg(kind, body):
    return struct.pack("=IHHII", 16 + len(body), kind, 2, 1, 0) + body + b"\0" * (-len(body) % 4)


def route(proto, table=254):
    return nlmsg(fs.RTM_NEWROUTE, struct.pack("=BBBBBBBBI", socket.AF_INET, 24, 0, 0, table, proto, 0, 1, 0) + b"\0" * 6)


def test_count_messages_counts_only_the_protocol_in_main():
    buf = route(211) + route(211) + route(2) + route(211, table=100) + route(211)
    assert fs.count_messages(buf, 211) == (3, False, None)
    assert fs.count_messages(buf + nlmsg(fs.NLMSG_DONE, struct.pack("=i", 0)), 211) == (3, True, None)
    err = nlmsg(fs.NLMSG_ERROR, struct.pack("=i", -22) + b"\0" * 16)
    assert fs.count_messages(route(211) + err, 211) == (1, True, os.strerror(22))
    assert fs.count_messages(struct.pack("=IHHII", 8, 24, 0, 0, 0), 211)[2] == "a netlink message shorter than its header"


def test_count_routes_agrees_with_ip_route_show():
    """The kernel's connected routes (proto kernel = 2) of this namespace, by netlink and by `ip`."""
    shown = subprocess.run(["ip", "-4", "route", "show", "table", "main", "proto", "kernel"], capture_output=True,
                           text=True, check=True).stdout  # fmt: skip
    assert fs.count_routes(2) == len([line for line in shown.splitlines() if line.strip()])
    assert fs.count_routes(2, table=255) >= 1  # the local table holds at least 127.0.0.1
    assert fs.netns_id().split("-", maxsplit=1)[0].isdigit() and fs.boot_id()

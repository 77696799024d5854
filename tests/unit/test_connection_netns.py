"""Unit tests for the xdplab.testbed.netns connection plugin: command wrapping and errors."""

import os
import shlex
import sys

import pytest
from ansible.errors import AnsibleConnectionFailure
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import connection_loader, init_plugin_loader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# resolve xdplab.testbed.* through collections/ (the link back to the repository root), the way
# ansible-playbook does, and use the module the plugin loader loaded
init_plugin_loader([os.path.join(ROOT, "collections")])
netns = sys.modules[type(connection_loader.get("xdplab.testbed.netns", PlayContext(), None)).__module__]


def test_wrap_command_quotes_the_whole_command():
    wrapped = netns.wrap_command("echo 'a b' && id -u", "xv-ns", ip_cmd="/usr/sbin/ip", shell="/bin/sh")
    argv = shlex.split(wrapped)
    assert argv == ["/usr/sbin/ip", "netns", "exec", "xv-ns", "/bin/sh", "-c", "echo 'a b' && id -u"]


def test_wrap_command_accepts_an_argv_list():
    argv = shlex.split(netns.wrap_command(["printf", "%s\n", "x y"], "xv-ns"))
    assert argv[:6] == ["ip", "netns", "exec", "xv-ns", "/bin/sh", "-c"]
    assert shlex.split(argv[6]) == ["printf", "%s\n", "x y"]


def test_check_namespace_missing_lists_existing(tmp_path):
    (tmp_path / "xv-a").touch()
    (tmp_path / "xv-b").touch()
    with pytest.raises(AnsibleConnectionFailure) as err:
        netns.check_namespace("xdplab-dut", run_dir=str(tmp_path), euid=0)
    msg = str(err.value)
    assert "network namespace 'xdplab-dut' does not exist" in msg
    assert "create the virtual lab first: ansible-playbook playbooks/vlab.yml" in msg
    assert "xv-a, xv-b" in msg


def test_check_namespace_missing_run_dir(tmp_path):
    with pytest.raises(AnsibleConnectionFailure, match=r"existing namespaces: none"):
        netns.check_namespace("xv-x", run_dir=str(tmp_path / "nope"), euid=0)


def test_check_namespace_not_root(tmp_path):
    (tmp_path / "xv-a").touch()
    with pytest.raises(AnsibleConnectionFailure, match=r"must run as root"):
        netns.check_namespace("xv-a", run_dir=str(tmp_path), euid=1000)


@pytest.mark.parametrize("name", ["", "../etc", "a/b", "..", "a b"])
def test_check_namespace_rejects_bad_names(tmp_path, name):
    with pytest.raises(AnsibleConnectionFailure, match=r"invalid network namespace name"):
        netns.check_namespace(name, run_dir=str(tmp_path), euid=0)


def test_check_namespace_ok(tmp_path):
    (tmp_path / "xv-a").touch()
    netns.check_namespace("xv-a", run_dir=str(tmp_path), euid=0)


def _connection(remote_addr="xv-ns", options=None):
    pc = PlayContext()
    pc.remote_addr = remote_addr
    conn = connection_loader.get("xdplab.testbed.netns", pc, None)
    conn.set_options(direct=options or {})
    return conn


def test_loader_finds_the_plugin_and_it_is_a_local_connection():
    from ansible.plugins.connection.local import Connection as Local

    conn = _connection()
    assert isinstance(conn, Local)
    assert conn.has_pipelining


def test_netns_name_from_remote_addr_and_override():
    assert _connection("xdplab-dut").netns_name == "xdplab-dut"
    assert _connection("dut", {"netns_name": "xv-other"}).netns_name == "xv-other"


def test_exec_command_wraps_and_delegates_to_local(monkeypatch):
    seen = {}

    def fake_exec(self, cmd, in_data=None, sudoable=True):
        seen["cmd"] = cmd
        return 0, b"ok", b""

    monkeypatch.setattr(netns, "check_namespace", lambda name: seen.setdefault("checked", name))
    monkeypatch.setattr(netns.LocalConnection, "exec_command", fake_exec)
    conn = _connection("xv-ns", {"netns_ip_command": "/sbin/ip"})
    rc, out, _err = conn.exec_command("/bin/sh -c 'echo hi'")
    assert (rc, out) == (0, b"ok")
    assert seen["checked"] == "xv-ns"
    assert shlex.split(seen["cmd"]) == ["/sbin/ip", "netns", "exec", "xv-ns", "/bin/sh", "-c", "/bin/sh -c 'echo hi'"]


def test_exec_command_missing_namespace_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(netns, "NETNS_RUN_DIR", str(tmp_path))
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    orig = netns.check_namespace
    monkeypatch.setattr(netns, "check_namespace", lambda name: orig(name, run_dir=str(tmp_path), euid=0))
    conn = _connection("xv-missing")
    with pytest.raises(AnsibleConnectionFailure, match=r"network namespace 'xv-missing' does not exist"):
        conn.exec_command("true")


def test_put_file_copies_like_local(monkeypatch, tmp_path):
    monkeypatch.setattr(netns, "check_namespace", lambda name: None)
    src = tmp_path / "src"
    src.write_text("payload")
    conn = _connection()
    conn.put_file(str(src), str(tmp_path / "dst"))
    conn.fetch_file(str(tmp_path / "dst"), str(tmp_path / "back"))
    assert (tmp_path / "back").read_text() == "payload"

# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The detached server (_process.DetachedServer, the TCP_RR and iperf3 servers' bookkeeping): real processes, real
signals. status() from the state file (pid and start time), start() replacing what runs, stop() with SIGTERM then
SIGKILL and the files removed; and the modules tcp_rr and iperf3_server on it, their results as before."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _process
from ansible_collections.xdplab.testbed.plugins.module_utils._process import DetachedServer, ProcessError

COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "collections")
# a server: up until a signal (SIGTERM's default action ends it)
SERVE = "import time\nwhile True: time.sleep(0.05)\n"
# a server that ignores SIGTERM: only SIGKILL stops it
DEAF = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(0.05)\n"


def cmd(code=SERVE, *extra):
    return [sys.executable, "-c", code, *extra]


def gone(pid, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _process.proc_start_time(pid) is None:
            return True
        time.sleep(0.02)
    return False


def test_nothing_recorded_is_not_running_and_stop_is_no_error(tmp_path):
    server = DetachedServer(str(tmp_path / "run"), "srv", "test")
    now = server.status()
    assert (now.state, now.running, now.pid, now.command) == (None, False, None, [])
    assert not now.runs(cmd()) and not server.leftovers(now)
    assert server.stop() is False and not (tmp_path / "run").exists()


def test_start_records_pid_start_time_and_command_and_the_same_command_runs(tmp_path):
    server = DetachedServer(str(tmp_path), "srv", "test")
    pid = server.start(cmd(), {"port": 1})
    try:
        now = server.status()
        assert now.running and now.pid == pid and now.command == cmd()
        assert now.runs(cmd()) and not now.runs(cmd(SERVE, "other"))
        saved = json.loads((tmp_path / "srv.state.json").read_text())
        assert saved["pid"] == pid and saved["start_time"] == _process.proc_start_time(pid)
        assert saved["kind"] == "test" and saved["params"] == {"port": 1} and saved["command"] == cmd()
        assert server.state_path == str(tmp_path / "srv.state.json")
    finally:
        server.stop()


def test_start_with_another_command_stops_the_running_one_with_sigterm(tmp_path):
    server = DetachedServer(str(tmp_path), "srv", "test")
    first = server.start(cmd())
    second = server.start(cmd(SERVE, "other"), status=server.status())
    try:
        assert second != first and gone(first)
        assert server.status().runs(cmd(SERVE, "other"))
    finally:
        server.stop()
    assert gone(second)


def test_stop_sends_sigterm_and_removes_the_files(tmp_path):
    server = DetachedServer(str(tmp_path / "run"), "srv", "test")
    pid = server.start(cmd())
    assert server.leftovers()
    assert server.stop() is True and gone(pid)
    assert not (tmp_path / "run").exists()  # the run's files, and its directory left empty
    assert server.stop() is False  # twice: nothing left, no error


def test_a_server_that_ignores_sigterm_is_killed_after_stop_timeout(tmp_path):
    server = DetachedServer(str(tmp_path), "srv", "test", stop_timeout=0.3)
    pid = server.start(cmd(DEAF))
    time.sleep(0.2)  # its handler is set
    started = time.monotonic()
    assert server.stop() is True and gone(pid)
    assert 0.3 <= time.monotonic() - started < 6.0


def test_a_recycled_pid_is_not_our_server_and_is_not_signalled(tmp_path):
    server = DetachedServer(str(tmp_path), "srv", "test")
    me = os.getpid()
    server.process.save_state({"pid": me, "start_time": _process.proc_start_time(me) + 1, "command": cmd()})
    now = server.status()
    assert not now.running and now.pid is None and now.command == cmd() and not now.runs(cmd())
    assert server.leftovers(now)  # its file
    assert server.stop(now) is True and not (tmp_path / "srv.state.json").exists()  # and this process lives


def test_a_server_started_by_an_invocation_that_ended_is_found_and_stopped(tmp_path):
    """As the modules run: one Python process starts it and exits; a later one sees it run and stops it."""
    starter = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, %r)
        from ansible_collections.xdplab.testbed.plugins.module_utils._process import DetachedServer
        print(DetachedServer(%r, "srv", "test").start([sys.executable, "-c", %r]))
        """
    ) % (COLLECTIONS, str(tmp_path), SERVE)
    pid = int(subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True, check=True).stdout)
    server = DetachedServer(str(tmp_path), "srv", "test")
    assert server.status().runs(cmd()) and server.status().pid == pid
    assert server.stop() is True and gone(pid)


def test_a_server_that_ends_at_once_is_an_error_naming_its_status(tmp_path):
    server = DetachedServer(str(tmp_path), "srv", "test")
    with pytest.raises(ProcessError, match="exited with status 3 at start"):
        server.start(cmd("import sys; sys.exit(3)"))


# -- the two modules on it: results as before --------------------------------------------------------------------
class FakeModule:
    def __init__(self, params, check_mode=False, diff=False):
        self.params = params
        self.check_mode = check_mode
        self._diff = diff

    @staticmethod
    def run_command(argv):
        return 0, "iperf3 3.12 (cJSON 1.7.15)\n", ""


def tcp_rr_params(tmp_path, binary, **kw):
    return dict({"state": "present", "addr": "127.0.0.1", "port": 12999, "cpu": None, "warmup": 0.0, "duration": 1.0,
                 "interval": 1.0, "name": "tcp-rr-server", "run_dir": str(tmp_path / "run"), "binary": binary,
                 "stop_timeout": 2.0}, **kw)  # fmt: skip


@pytest.fixture
def fake_tool(tmp_path):
    """An executable that stays up like a server (the modules only start and stop it)."""
    tool = tmp_path / "server"
    tool.write_text("#!%s\nimport time\nwhile True: time.sleep(0.05)\n" % sys.executable)
    tool.chmod(0o755)
    return str(tool)


def test_tcp_rr_present_twice_then_absent(tmp_path, fake_tool):
    from ansible_collections.xdplab.testbed.plugins.modules.tcp_rr import TcpRr

    first = TcpRr(FakeModule(tcp_rr_params(tmp_path, fake_tool))).execute()
    argv = [fake_tool, "--listen", "127.0.0.1:12999"]
    assert first["changed"] and first["running"] and first["command"] == argv and first["pid"] > 0
    again = TcpRr(FakeModule(tcp_rr_params(tmp_path, fake_tool))).execute()
    assert again == {"changed": False, "command": argv, "running": True, "pid": first["pid"]}
    # check mode with another command line: would replace it, does nothing
    check = TcpRr(FakeModule(tcp_rr_params(tmp_path, fake_tool, port=13000), check_mode=True)).execute()
    assert check["changed"] and check["running"] and "pid" not in check and _process.proc_start_time(first["pid"])
    gone_ = TcpRr(FakeModule(tcp_rr_params(tmp_path, fake_tool, state="absent"))).execute()
    assert gone_ == {"changed": True, "command": argv, "running": False} and gone(first["pid"])
    assert TcpRr(FakeModule(tcp_rr_params(tmp_path, fake_tool, state="absent"))).execute() == {
        "changed": False, "command": [], "running": False}  # fmt: skip


def iperf3_params(tmp_path, binary, **kw):
    return dict({"state": "present", "name": "iperf3-server", "run_dir": str(tmp_path / "run"), "port": 5201,
                 "bind": "127.0.0.1", "cpus": [], "binary": binary, "stop_timeout": 2.0}, **kw)  # fmt: skip


def test_iperf3_server_present_replaced_and_absent_with_its_diff(tmp_path, fake_tool):
    from ansible_collections.xdplab.testbed.plugins.modules.iperf3_server import Iperf3Server

    first = Iperf3Server(FakeModule(iperf3_params(tmp_path, fake_tool), diff=True)).execute()
    argv = first["command"]
    assert first["changed"] and first["running"] and first["version"] == "iperf3 3.12 (cJSON 1.7.15)"
    assert first["diff"] == {"before": "", "after": " ".join(argv) + "\n"}
    again = Iperf3Server(FakeModule(iperf3_params(tmp_path, fake_tool))).execute()
    assert not again["changed"] and again["pid"] == first["pid"] and again["running"]
    # check mode, another port: would replace it (running stays False in the result, as before), does nothing
    check = Iperf3Server(FakeModule(iperf3_params(tmp_path, fake_tool, port=5202), check_mode=True)).execute()
    assert check["changed"] and not check["running"] and "pid" not in check
    moved = Iperf3Server(FakeModule(iperf3_params(tmp_path, fake_tool, port=5202), diff=True)).execute()
    assert moved["changed"] and moved["pid"] != first["pid"] and gone(first["pid"])
    assert moved["diff"]["before"] == " ".join(argv) + "\n" and "5202" in moved["diff"]["after"]
    off = Iperf3Server(FakeModule(iperf3_params(tmp_path, fake_tool, state="absent"), diff=True)).execute()
    assert off["changed"] and off["command"] == moved["command"] and not off["running"] and gone(moved["pid"])
    assert off["diff"] == {"before": " ".join(moved["command"]) + "\n", "after": ""}
    assert not (tmp_path / "run").exists()

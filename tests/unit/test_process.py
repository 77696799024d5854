"""The one process helper (_process.Process): real processes, real signals, a real supervisor.

Each test starts small Python programs; the helper's supervisor is the real one. The case that matters
most, a process that outlives the invocation that started it, is tested by starting it from a separate
Python process that exits at once (as a module invocation does), then asking from here how it ended.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpus, _process
from ansible_collections.xdplab.testbed.plugins.module_utils._process import Process, ProcessError

COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "collections")

# stays up until SIGINT, then prints a summary and exits 0 (as xdplab-trafficgen does)
POLITE = textwrap.dedent(
    """
    import json, signal, sys, time
    def bye(*_):
        print(json.dumps({"type": "summary", "sent": 42}), flush=True)
        sys.exit(0)
    signal.signal(signal.SIGINT, bye)
    print("ready", file=sys.stderr, flush=True)
    while True:
        time.sleep(0.05)
    """
)
# ignores SIGINT: only SIGKILL stops it
STUBBORN = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.05)\n"


def wait_until(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def started(run, code=POLITE, settle=0.3):
    state = run.start([sys.executable, "-c", code], {"what": "test"}, settle=settle)
    assert wait_until(lambda: "ready" in run.read_err() or code is not POLITE)
    return state


def test_start_writes_the_state_and_stop_gets_the_summary(tmp_path):
    run = Process(str(tmp_path), "trial", kind="test")
    state = started(run)
    assert run.running()
    saved = json.loads((tmp_path / "trial.state.json").read_text())
    assert saved["pid"] == state["pid"] != saved["supervisor_pid"]
    assert saved["start_time"] == _process.proc_start_time(state["pid"])
    assert saved["params"] == {"what": "test"} and saved["kind"] == "test"
    with open("/proc/%d/cmdline" % state["pid"], "rb") as f:
        assert f.read().split(b"\0")[:2] == [sys.executable.encode(), b"-c"]
    out = run.stop(timeout=5)
    assert out["was_running"] and out["signals"] == ["SIGINT"]
    assert out["exit"]["exit_status"] == 0 and out["exit"]["signal"] is None
    assert out["exit"]["stop_requested"] is True
    assert run.json_lines() == [{"type": "summary", "sent": 42}]
    assert not run.running()
    assert _process.proc_start_time(state["supervisor_pid"]) is None or wait_until(
        lambda: _process.proc_start_time(state["supervisor_pid"]) is None
    )


def test_kill_9_is_reported_with_the_signal_and_stderr(tmp_path):
    run = Process(str(tmp_path), "trial")
    state = started(run)
    os.kill(state["pid"], signal.SIGKILL)
    assert wait_until(lambda: not run.running())
    info = run.exit()
    assert (info["pid"], info["signal"], info["signal_name"], info["exit_status"]) == (state["pid"], 9, "SIGKILL", None)
    assert info["stderr_tail"] == "ready"
    assert info["stop_requested"] is False
    assert _process.failed(info)
    assert _process.process_result(info) == {
        "pid": state["pid"],
        "exit_status": None,
        "signal": 9,
        "signal_name": "SIGKILL",
        "stderr_tail": "ready",
    }
    msg = _process.failure_message("the generator (gen, pid %d)" % state["pid"], info)
    assert (
        msg
        == "the generator (gen, pid %d) was killed by signal 9 (SIGKILL) before it was stopped; stderr: ready" % (state["pid"])
    )
    # stopping it now is not an error, and says it was not running
    again = run.stop()
    assert again["was_running"] is False and again["signals"] == [] and again["exit"]["signal"] == 9


def test_exit_status_of_a_process_that_ends_by_itself(tmp_path):
    run = Process(str(tmp_path), "trial")
    code = "import sys, time\ntime.sleep(0.5)\nprint('bad input', file=sys.stderr)\nsys.exit(3)\n"
    run.start([sys.executable, "-c", code], settle=0.1)
    assert run.wait(10)
    info = run.exit()
    assert info["exit_status"] == 3 and info["signal"] is None and info["stderr_tail"] == "bad input"
    assert _process.describe(info) == "exited with status 3"


def test_a_failure_within_settle_raises_naming_the_status(tmp_path):
    run = Process(str(tmp_path), "trial")
    with pytest.raises(ProcessError, match=r"exited with status 2 at start; stderr: no such device"):
        run.start([sys.executable, "-c", "import sys; sys.stderr.write('no such device\\n'); sys.exit(2)"], settle=2.0)
    assert run.load_state()["exit_reported"] is True


def test_ready_ends_the_settle_once_it_holds(tmp_path):
    # settle 120 s: start returns at the third question because ready then holds (never at the settle's end)
    run = Process(str(tmp_path), "trial")
    asked = []

    def ready():
        asked.append(run.running())
        return len(asked) == 3

    run.start([sys.executable, "-c", POLITE], settle=120.0, ready=ready)
    assert asked == [True, True, True]  # asked only while the process ran, and no more once it held
    assert run.running()
    assert run.stop(timeout=5)["exit"]["exit_status"] == 0


def test_a_failure_before_ready_still_raises(tmp_path):
    run = Process(str(tmp_path), "trial")
    with pytest.raises(ProcessError, match=r"exited with status 2 at start; stderr: no such device"):
        run.start([sys.executable, "-c", "import sys; sys.stderr.write('no such device\\n'); sys.exit(2)"], settle=120.0,
                  ready=lambda: False)  # fmt: skip


def test_a_command_that_cannot_run(tmp_path):
    run = Process(str(tmp_path), "trial")
    with pytest.raises(ProcessError, match=r"cannot run /nonexistent/xdplab-gen"):
        run.start(["/nonexistent/xdplab-gen"])


def test_stop_of_an_absent_run_is_not_an_error(tmp_path):
    run = Process(str(tmp_path / "never"), "trial")
    assert run.stop() == {"was_running": False, "signals": [], "exit": None, "absent": True}
    assert run.exit() is None
    assert not run.running()


def test_sigkill_after_the_timeout(tmp_path):
    run = Process(str(tmp_path), "trial")
    run.start([sys.executable, "-c", STUBBORN], settle=0.3)
    began = time.monotonic()
    out = run.stop(timeout=0.5)
    assert out["signals"] == ["SIGINT", "SIGKILL"]
    assert out["exit"]["signal"] == 9
    assert time.monotonic() - began < 5


def test_the_supervisor_forwards_signals(tmp_path):
    run = Process(str(tmp_path), "trial")
    state = started(run)
    os.kill(state["supervisor_pid"], signal.SIGTERM)
    assert wait_until(lambda: not run.running())
    assert run.exit()["signal_name"] == "SIGTERM"


def test_a_recycled_pid_is_not_our_process(tmp_path):
    run = Process(str(tmp_path), "trial")
    me = {"pid": os.getpid(), "start_time": _process.proc_start_time(os.getpid()) + 1, "supervisor_pid": None}
    run.save_state(me)
    assert not run.running()
    assert run.stop()["was_running"] is False  # and this test process got no signal
    info = run.exit()
    assert info["exit_status"] is None and info["signal"] is None and "ended without recording it" in info["note"]
    assert _process.describe(info).startswith("ended with an unknown status")


def test_supervisor_and_process_both_killed(tmp_path):
    run = Process(str(tmp_path), "trial")
    state = started(run)
    os.kill(state["supervisor_pid"], signal.SIGKILL)
    assert wait_until(lambda: _process.proc_start_time(state["supervisor_pid"]) is None)
    assert run.running()  # the process itself outlives its supervisor
    run.stop(timeout=5)
    info = run.exit()
    assert info["exit_status"] is None and "supervisor" in info["note"] and _process.failed(info)


def test_the_status_of_a_process_started_by_an_invocation_that_ended(tmp_path):
    """As a module does: one Python process starts it and exits; a later one learns how it ended."""
    starter = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, %r)
        from ansible_collections.xdplab.testbed.plugins.module_utils._process import Process
        state = Process(%r, "trial").start([sys.executable, "-c", %r], settle=0.3)
        print(state["pid"])
        """
    ) % (COLLECTIONS, str(tmp_path), POLITE)
    pid = int(subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True, check=True).stdout)
    run = Process(str(tmp_path), "trial")
    assert run.running()
    with open("/proc/%d/stat" % pid) as f:
        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    assert ppid == run.load_state()["supervisor_pid"]  # the supervisor, not the starter, is its parent
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not run.running())
    assert run.exit()["signal"] == 9


def test_files_and_remove(tmp_path):
    run = Process(str(tmp_path / "runs"), "trial")
    started(run)
    run.stop(timeout=5)
    names = sorted(os.path.basename(p) for p in run.files())
    assert names == ["trial.err", "trial.exit.json", "trial.out", "trial.state.json"]
    run.remove()
    assert run.files() == [] and not (tmp_path / "runs").exists()


def test_a_new_start_forgets_the_last_exit(tmp_path):
    run = Process(str(tmp_path), "trial")
    state = started(run)
    os.kill(state["pid"], signal.SIGKILL)
    assert wait_until(lambda: not run.running())
    assert run.exit()["signal"] == 9
    started(run)
    assert run.exit() is None  # running: no exit yet, the old one is gone
    assert run.stop(timeout=5)["exit"]["exit_status"] == 0


def test_tail_keeps_the_last_lines():
    text = "".join("line %d\r\n" % i for i in range(30)) + "\n\n"
    assert _process.tail(text, lines=3) == "line 27\nline 28\nline 29"
    assert len(_process.tail("x" * 5000)) == _process.STDERR_TAIL_CHARS


# -- testpmd's pty session runs through the helper: a testpmd killed mid-session is reported with its signal ---
FAKE_TESTPMD = textwrap.dedent(
    """
    import sys
    sys.stdout.write("EAL: Detected 2 lcore(s)\\ntestpmd> ")
    sys.stdout.flush()
    for line in sys.stdin:
        if line.strip() == "quit":
            sys.stdout.write("Bye...\\n")
            sys.exit(0)
        sys.stdout.write("ok %s\\ntestpmd> " % line.strip())  # the pty echoes the command
        sys.stdout.flush()
    """
)


def test_testpmd_session_reports_a_kill_with_its_signal(tmp_path):
    from ansible_collections.xdplab.testbed.plugins.module_utils import _testpmd as tp

    files = tp.RunFiles(str(tmp_path), "trial")
    session = tp.Session([sys.executable, "-c", FAKE_TESTPMD], log_path=files.log_path, run_files=files,
                         extra_state={"file_prefix": "xdplab-trial"})  # fmt: skip
    session.until_prompt(5)
    assert session.command("show port summary all", 5)[0].strip() == "ok show port summary all"
    state = files.load()
    assert state["pid"] == session.pid and state["file_prefix"] == "xdplab-trial" and files.alive(state)
    os.kill(session.pid, signal.SIGKILL)
    with pytest.raises(tp.TestpmdError) as failure:
        session.command("show port xstats all", 5)
    assert failure.value.process["signal_name"] == "SIGKILL"
    assert "was killed by signal 9 (SIGKILL) during the session" in str(failure.value)
    assert "ok show port summary all" in failure.value.process["stderr_tail"]
    assert session.close() == -9
    assert not files.alive(files.load())


def test_testpmd_session_quits_cleanly(tmp_path):
    from ansible_collections.xdplab.testbed.plugins.module_utils import _testpmd as tp

    session = tp.Session([sys.executable, "-c", FAKE_TESTPMD])  # run files in a temporary directory
    session.until_prompt(5)
    assert session.close() == 0
    assert session.exit["exit_status"] == 0 and not os.path.exists(session.run_files.run_dir)


def test_a_started_process_is_not_held_to_the_starters_housekeeping_cpus(tmp_path):
    """The tool's own processes are pinned to housekeeping CPUs; the processes under test it starts may use any CPU."""
    online = _cpus.online_cpus()
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {online[0]})
        proc = Process(str(tmp_path), "affinity")
        proc.start(["sh", "-c", "grep Cpus_allowed_list /proc/self/status"], settle=0.2, check=False)
        assert proc.wait(5)
    finally:
        os.sched_setaffinity(0, before)
    with open(proc.out_path) as f:
        allowed = f.read().split(":", 1)[1].strip()
    assert _cpus.parse_cpu_list(allowed) == online

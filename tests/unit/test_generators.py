"""Generator interface: CPU choice for veth steering and process bookkeeping (real processes)."""

import json
import os
import signal
import sys
import textwrap
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils._generators import GeneratorError, backend_for
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import ProcessRun
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.xdp_live import pick_sender_cpus
from ansible_collections.xdplab.testbed.plugins.module_utils._process import proc_start_time


def test_one_sender_per_queue_on_a_cpu_of_matching_residue():
    assert pick_sender_cpus([0], 1, 1) == [0]
    assert pick_sender_cpus([0, 1], 2, 2) == [0, 1]
    assert pick_sender_cpus([2, 3, 4, 5], 4, 4) == [4, 5, 2, 3]
    # more flows than queues: still one thread per queue
    assert pick_sender_cpus([0, 1], 2, 7) == [0, 1]
    assert pick_sender_cpus([0, 1, 2, 3], 4, 2) == [0, 1]


def test_unreachable_queue_is_a_clear_error():
    with pytest.raises(GeneratorError, match="DUT queue 1 cannot be reached"):
        pick_sender_cpus([0, 2], 2, 2)


def test_unknown_backend():
    with pytest.raises(GeneratorError, match=r"known backends: .*xdp_live"):
        backend_for("pktgen")


FAKE = textwrap.dedent(
    """
    import json, signal, sys, time
    stop = False
    def handler(*_):
        global stop
        stop = True
    signal.signal(signal.SIGINT, handler)
    sent = 0
    deadline = time.monotonic() + float(sys.argv[1])
    while not stop and time.monotonic() < deadline:
        time.sleep(0.02)
        sent += 1000
        print(json.dumps({"type": "interval", "sent": sent}), flush=True)
    print(json.dumps({"type": "summary", "sent": sent, "elapsed_s": 1.0, "pps": float(sent)}), flush=True)
    """
)


@pytest.fixture
def fake(tmp_path):
    script = tmp_path / "fake_gen.py"
    script.write_text(FAKE)
    return [sys.executable, str(script)]


def test_process_run_start_stop_and_summary(tmp_path, fake):
    run = ProcessRun(str(tmp_path / "run"), "trial")
    state = run.spawn(fake + ["30"], {"identity": {"a": 1}})
    assert run.running()
    assert os.path.exists(run.state_path)
    with open(run.state_path) as f:
        assert json.load(f)["pid"] == state["pid"]
    stopped = run.stop(timeout=5)
    assert stopped["was_running"] and stopped["signals"] == ["SIGINT"]
    assert stopped["exit"]["exit_status"] == 0  # it handled SIGINT and printed its summary
    assert not run.running()
    records = run.json_lines()
    assert records[-1]["type"] == "summary"
    assert records[-1]["sent"] > 0
    # stopping again is a no-op, not an error
    assert run.stop(timeout=1)["was_running"] is False


def test_process_run_wait_for_natural_end(tmp_path, fake):
    run = ProcessRun(str(tmp_path), "short")
    run.spawn(fake + ["0.3"], {})
    assert run.wait(timeout=10)
    assert run.json_lines()[-1]["type"] == "summary"


def test_process_that_fails_at_start_reports_its_stderr(tmp_path):
    run = ProcessRun(str(tmp_path), "bad")
    with pytest.raises(GeneratorError, match="exited with status 3 at start; stderr: no such device"):
        run.spawn([sys.executable, "-c", "import sys; sys.stderr.write('no such device'); sys.exit(3)"], {})


def test_the_start_record_ends_the_settle(tmp_path):
    # a generator that prints its start record (xdplab-trafficgen 0.3.0) and runs on: spawn returns once it is
    # printed, with a settle of 120 s that it would otherwise wait out; the record is not an interval or a summary
    code = ('import json, sys, time\nprint(json.dumps({"type": "start", "threads": 1}, separators=(",", ":")), flush=True)\n'
            "time.sleep(120)\n")  # fmt: skip
    run = ProcessRun(str(tmp_path), "trial")
    run.spawn([sys.executable, "-c", code], {}, settle=120.0, start_record=True)
    assert run.running() and run.printed_start()
    assert run.stop(timeout=5)["signals"] == ["SIGINT"]


def test_printed_start_reads_whole_lines_only(tmp_path):
    run = ProcessRun(str(tmp_path), "trial")
    assert run.printed_start() is False  # no stdout yet
    with open(run.out_path, "wb") as f:
        f.write(b'{"type":"start","mono":1.0')  # being written
    assert run.printed_start() is False
    with open(run.out_path, "wb") as f:
        f.write(b'{"type":"interval","sent":1}\n{"type":"start","mono":1.0}\n')
    assert run.printed_start() is True


def test_recycled_pid_is_not_our_process(tmp_path):
    run = ProcessRun(str(tmp_path), "old")
    with open(run.state_path, "w") as f:
        json.dump({"pid": os.getpid(), "start_time": 1, "params": {}, "command": []}, f)
    assert not run.running()


def test_remove_deletes_the_run_and_an_empty_run_dir(tmp_path, fake):
    run_dir = tmp_path / "gen"
    run = ProcessRun(str(run_dir), "trial")
    run.spawn([*fake, "30"], {})
    other = ProcessRun(str(run_dir), "other")
    other.spawn([*fake, "0.1"], {})
    assert other.wait(timeout=10)
    run.stop(timeout=5)
    assert len(run.files()) == 4  # state, stdout, stderr, exit
    run.remove()
    assert run.files() == [] and run_dir.exists()  # the other run's files stay
    other.remove()
    assert not run_dir.exists()


def _xdp_live(tmp_path, **over):
    from ansible_collections.xdplab.testbed.plugins.module_utils._generators.xdp_live import XdpLiveGenerator

    params = dict(
        run_dir=str(tmp_path),
        name="t",
        interface="lo",
        src_mac="02:00:00:00:00:01",
        dst_mac="02:00:00:00:00:02",
        src_ip="10.0.0.1",
        dst_ip="10.0.0.2",
        packet_len=64,
        stream_count=1,
        port_base=12,
        queues=1,
        cpus=[0],
        duration=5,
        batch=64,
        rate_pps=0.0,
        backend_options={},
        binary=sys.executable,
    )
    params.update(over)
    return XdpLiveGenerator(params, run_command=None)


def test_rate_cap_reaches_the_command_line_and_the_run_identity(tmp_path):
    gen = _xdp_live(tmp_path, rate_pps=250000.0)
    gen.validate()
    cmd = gen.command()
    assert cmd[cmd.index("--rate") + 1] == "250000"
    assert gen.identity()["rate_pps"] == 250000.0
    unlimited = _xdp_live(tmp_path)
    unlimited.validate()
    assert "--rate" not in unlimited.command()


def test_xdp_live_rejects_backend_options(tmp_path):
    with pytest.raises(GeneratorError, match=r"takes only the backend_options latency_stamp \(got server\)"):
        _xdp_live(tmp_path, backend_options={"server": "127.0.0.1"}).validate()
    with pytest.raises(GeneratorError, match=r"latency_stamp must be true or false"):
        _xdp_live(tmp_path, backend_options={"latency_stamp": "yes"}).validate()


def test_xdp_live_latency_stamp_option(tmp_path):
    gen = _xdp_live(tmp_path, backend_options={"latency_stamp": True})
    gen.sender_cpus = [0]
    assert gen.command()[-1] == "--latency-stamp" and gen.identity()["latency_stamp"] is True
    plain = _xdp_live(tmp_path)
    plain.sender_cpus = [0]
    assert "--latency-stamp" not in plain.command() and plain.identity()["latency_stamp"] is False


# -- traffic_generator state=stopped: a generator that died, a second stop, an absent run (real processes) -----
# prints a record per 20 ms like xdplab-trafficgen, a summary on SIGINT; "ready" on stderr once running
FAKE_GEN = textwrap.dedent(
    """\
    #!%s
    import json, signal, sys, time
    def bye(*_):
        print(json.dumps({"type": "summary", "sent": 5000, "elapsed_s": 0.1, "pps": 50000.0, "version": "fake",
                          "pacing": "program", "schedule_dropped_s": 0.012}), flush=True)
        sys.exit(0)
    signal.signal(signal.SIGINT, bye)
    print("ready", file=sys.stderr, flush=True)
    while True:
        time.sleep(0.02)
        print(json.dumps({"type": "interval", "sent": 1000, "interval_s": 0.02, "pps": 50000.0}), flush=True)
    """
    % sys.executable
)


class FakeModule:
    def __init__(self, params):
        self.params = params
        self.check_mode = False
        self.warnings = []

    def run_command(self, argv):
        return 1, "", "no ethtool here"  # egress counters unknown

    def warn(self, msg):
        self.warnings.append(msg)


def _load_module():
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), "..", "..", "plugins", "modules", "traffic_generator.py")
    spec = importlib.util.spec_from_file_location("traffic_generator_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def generator(tmp_path):
    binary = tmp_path / "xdplab-trafficgen"
    binary.write_text(FAKE_GEN)
    binary.chmod(0o755)
    mod = _load_module()
    base = dict(backend="xdp_live", name="trial", run_dir=str(tmp_path / "run"), interface="lo",
                src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:00:02", src_ip="10.0.0.1", dst_ip="10.0.0.2",
                packet_len=64, stream_count=1, port_base=12, queues=1, cpus=[0], duration=30, batch=64,
                rate_pps=0.0, backend_options={}, binary=str(binary), wait=False, stop_timeout=5.0,
                remove=False)  # fmt: skip

    def run(state, **over):
        module = FakeModule(dict(base, state=state, **over))
        return mod.TrafficGenerator(module).run(), module

    yield run
    # whatever the test did (a failed assertion, an exception mid-start): no fake generator outlives it
    run("absent")


def _ready(run_dir):
    err = os.path.join(run_dir, "trial.err")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if os.path.exists(err):
            with open(err) as f:
                if "ready" in f.read():
                    return
        time.sleep(0.02)
    raise AssertionError("the fake generator did not start")


def test_stop_returns_the_summary_and_a_second_stop_is_not_an_error(generator, tmp_path):
    started, _m = generator("started")
    assert started["changed"] and started["running"]
    _ready(str(tmp_path / "run"))
    first, _m = generator("stopped")
    assert first["changed"] is True
    assert first["summary"]["sent"] == 5000 and first["summary"]["complete"] is True
    # how the rate was held, and what schedule a lagging sender dropped (xdplab-trafficgen 0.2.0), passed on
    assert first["summary"]["pacing"] == "program" and first["summary"]["schedule_dropped_s"] == 0.012
    assert first["process"]["exit_status"] == 0 and first["process"]["signal"] is None
    second, _m = generator("stopped")
    assert second["changed"] is False and "stopped already" in second["msg"]
    assert second["summary"] == first["summary"]


def test_stop_with_remove_leaves_nothing_for_the_always_step(generator, tmp_path):
    run_dir = tmp_path / "run"
    generator("started")
    _ready(str(run_dir))
    stopped, _m = generator("stopped", remove=True)
    assert stopped["summary"]["sent"] == 5000 and stopped["process"]["exit_status"] == 0
    assert {"trial.state.json", "trial.out", "trial.err"} <= {os.path.basename(f) for f in stopped["removed"]}
    assert not run_dir.exists()  # the run's files and the directory they left empty
    # what the always step would find: nothing to stop, nothing to remove
    again, _m = generator("stopped")
    assert again["changed"] is False and "nothing to stop" in again["msg"]
    absent, _m = generator("absent")
    assert absent["changed"] is False and "removed" not in absent


def test_a_generator_that_died_keeps_its_files_for_absent_despite_remove(generator, tmp_path):
    started, _m = generator("started")
    _ready(str(tmp_path / "run"))
    os.kill(started["pid"], signal.SIGKILL)
    with pytest.raises(GeneratorError, match="killed by signal 9"):
        generator("stopped", remove=True)
    absent, _m = generator("absent")
    assert absent["changed"] is True and absent["removed"]


def test_a_generator_killed_mid_trial_fails_the_first_stop_only(generator, tmp_path):
    started, _m = generator("started")
    _ready(str(tmp_path / "run"))
    time.sleep(0.1)
    os.kill(started["pid"], signal.SIGKILL)
    with pytest.raises(GeneratorError) as failure:
        generator("stopped")
    msg = str(failure.value)
    assert msg.startswith(
        "the generator (xdplab-trafficgen, pid %d) was killed by signal 9 (SIGKILL) before it was stopped; stderr: ready"
        % started["pid"]
    )
    assert failure.value.process == {"pid": started["pid"], "exit_status": None, "signal": 9, "signal_name": "SIGKILL",
                                     "stderr_tail": "ready"}  # fmt: skip
    # the always: step's stop: not an error, nothing changes, the same process facts and the partial summary
    second, _m = generator("stopped")
    assert second["changed"] is False and second["process"]["signal_name"] == "SIGKILL"
    assert second["summary"]["complete"] is False and second["summary"]["sent"] >= 1000


def test_a_generator_that_exits_with_an_error_names_the_status(generator, tmp_path):
    started, _m = generator("started")
    _ready(str(tmp_path / "run"))
    with open(os.path.join(str(tmp_path / "run"), "trial.state.json")) as f:
        supervisor = json.load(f)["supervisor_pid"]
    os.kill(started["pid"], signal.SIGTERM)  # no handler: it dies of SIGTERM
    deadline = time.monotonic() + 5
    # proc_start_time: None once it has exited, also as a zombie (ended, not yet reaped by its parent here)
    while proc_start_time(supervisor) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc_start_time(supervisor) is None, "the supervisor outlived its generator by 5 s"
    with pytest.raises(GeneratorError, match=r"was killed by signal 15 \(SIGTERM\) before it was stopped"):
        generator("stopped")


def test_stop_of_an_absent_generator_is_not_an_error(generator):
    result, _m = generator("stopped")
    assert result["changed"] is False and "nothing to stop" in result["msg"]
    absent, _m = generator("absent")
    assert absent["changed"] is False


# -- address lists (issue 27): destinations and sources reach the program's files, the identity and the summary ------
def test_address_lists_reach_the_files_the_command_and_the_summary(generator, tmp_path):
    run_dir = tmp_path / "run"
    started, _m = generator(
        "started", destinations={"count": 16, "seed": 2, "within": "192.0.2.0/24"},
        sources={"list": ["198.51.100.1", "198.51.100.2"]}, exclude=["192.0.2.0/28"],
    )  # fmt: skip
    cmd = started["command"]
    dst_path, src_path = cmd[cmd.index("--dst-list") + 1], cmd[cmd.index("--src-list") + 1]
    assert dst_path == str(run_dir / "trial.destinations.txt") and src_path == str(run_dir / "trial.sources.txt")
    dsts = (run_dir / "trial.destinations.txt").read_text().split()
    assert len(set(dsts)) == 16 and all(a.startswith("192.0.2.") and int(a.split(".")[3]) >= 16 for a in dsts)
    assert (run_dir / "trial.sources.txt").read_text() == "198.51.100.1\n198.51.100.2\n"
    _ready(str(run_dir))
    # the same lists again: the same run, nothing changes; another seed is another run
    again, _m = generator(
        "started", destinations={"count": 16, "seed": 2, "within": "192.0.2.0/24"},
        sources={"list": ["198.51.100.1", "198.51.100.2"]}, exclude=["192.0.2.0/28"],
    )  # fmt: skip
    assert again["changed"] is False
    stopped, _m = generator("stopped", remove=True)
    described = stopped["summary"]["destinations"]
    assert described["count"] == 16 and described["seed"] == 2 and described["first"] == dsts[:5]
    assert described["exclude"] == ["192.0.2.0/28"] and stopped["summary"]["sources"]["drawn"] is False
    # the lists are run files: removed with the run
    assert not run_dir.exists()


def test_without_address_lists_nothing_changes(generator, tmp_path):
    started, _m = generator("started")
    assert "--dst-list" not in started["command"] and "--src-list" not in started["command"]
    _ready(str(tmp_path / "run"))
    stopped, _m = generator("stopped")
    assert "destinations" not in stopped["summary"] and "sources" not in stopped["summary"]


def test_bad_address_lists_fail_before_anything_starts(generator, tmp_path):
    with pytest.raises(GeneratorError, match=r"destinations.count must be a whole number"):
        generator("started", destinations={"count": 0})
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("backend", ["trex", "iperf3"])
def test_backends_without_address_lists_refuse_them(tmp_path, backend):
    params = dict(run_dir=str(tmp_path), name="t", interface="0", src_ip="10.0.0.1", dst_ip="10.0.0.2", packet_len=64,
                  stream_count=1, port_base=12, queues=1, cpus=[0], duration=5, rate_pps=0.0, backend_options={},
                  destinations={"count": 4})  # fmt: skip
    with pytest.raises(GeneratorError, match=r"backend %s cannot send the address lists of destinations" % backend):
        backend_for(backend)(params, run_command=None).validate()

"""Generator interface: CPU choice for veth steering and process bookkeeping (real processes)."""

import json
import os
import sys
import textwrap

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils._generators import GeneratorError, backend_for
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import ProcessRun
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.xdp_live import pick_sender_cpus


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
    assert run.stop(timeout=5) is True
    assert not run.running()
    records = run.json_lines()
    assert records[-1]["type"] == "summary"
    assert records[-1]["sent"] > 0
    # stopping again is a no-op
    assert run.stop(timeout=1) is False


def test_process_run_wait_for_natural_end(tmp_path, fake):
    run = ProcessRun(str(tmp_path), "short")
    run.spawn(fake + ["0.3"], {})
    assert run.wait(timeout=10)
    assert run.json_lines()[-1]["type"] == "summary"


def test_process_that_fails_at_start_reports_its_stderr(tmp_path):
    run = ProcessRun(str(tmp_path), "bad")
    with pytest.raises(GeneratorError, match="exited with status 3 at start: no such device"):
        run.spawn([sys.executable, "-c", "import sys; sys.stderr.write('no such device'); sys.exit(3)"], {})


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
    assert len(run.files()) == 3
    run.remove()
    assert run.files() == [] and run_dir.exists()  # the other run's files stay
    other.remove()
    assert not run_dir.exists()


def _xdp_live(tmp_path, **over):
    from ansible_collections.xdplab.testbed.plugins.module_utils._generators.xdp_live import XdpLiveGenerator

    params = dict(run_dir=str(tmp_path), name="t", interface="lo", src_mac="02:00:00:00:00:01",
                  dst_mac="02:00:00:00:00:02", src_ip="10.0.0.1", dst_ip="10.0.0.2", packet_len=64,
                  stream_count=1, port_base=12, queues=1, cpus=[0], duration=5, batch=64, rate_pps=0.0,
                  backend_options={}, binary=sys.executable)
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
    with pytest.raises(GeneratorError, match=r"takes no backend_options .*server"):
        _xdp_live(tmp_path, backend_options={"server": "127.0.0.1"}).validate()

# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/_trial.py's background jobs (Phases.start_job, collect_job, end_jobs) as the trial phases use them on
the virtual lab: a module started by one phase in a detached grandchild of the worker (_in_worker.start_module), its
result read by a later phase, another Phases object as another worker process would build from the registered state;
ended on every exit path. And the forward kind's provider (_kind_forward.py): the far side's count for the vlab's
generator and for T-Rex, and T-Rex asked for the receive port. Root for the jobs (the module counts a veth of a
network namespace of the test's own, as on the virtual lab; the processes are signalled)."""

import copy
import json
import os
import subprocess
import time
import types

import pytest
from ansible_collections.xdplab.testbed.plugins.plugin_utils import _in_worker, _kind_forward, _trial

ANSIBLE_ARGS = {"_ansible_check_mode": False, "_ansible_no_log": False, "_ansible_diff": False,
                "_ansible_verbosity": 0, "_ansible_module_name": "x", "_ansible_remote_tmp": "/tmp"}  # fmt: skip
root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a network namespace)")
NETNS = f"tjtest-{os.getpid()}"


@pytest.fixture
def netns():
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    try:
        subprocess.run(["ip", "-n", NETNS, "link", "add", "tja", "type", "veth", "peer", "name", "tjb"], check=True)
        yield NETNS
    finally:
        subprocess.run(["ip", "netns", "del", NETNS], check=False)


class FakeTemplar:
    def template(self, value):
        return value


class FakeAction:
    """The parts of ActionBase that Phases uses, for a task on a network namespace of this machine (connection
    xdplab.testbed.netns, no become)."""

    def __init__(self, async_dir, delegate_to=None):
        self._templar = FakeTemplar()
        self._connection = types.SimpleNamespace(transport="xdplab.testbed.netns", netns_name=NETNS)
        self._play_context = types.SimpleNamespace(become=False)
        self._task = types.SimpleNamespace(delegate_to=delegate_to, async_val=0)
        self.async_dir = async_dir
        self.executed = []

    def get_shell_option(self, name, default=None):
        return self.async_dir if name == "async_dir" else default

    def _update_module_args(self, module_name, module_args, task_vars):
        module_args.update(ANSIBLE_ARGS)

    def _execute_module(self, **kwargs):  # the async path is not taken on this machine
        self.executed.append(kwargs)
        raise AssertionError("a module ran the usual way: %r" % kwargs)


def phases(tmp_path, state=None, delegate_to=None):
    task_vars = {"inventory_hostname": "dut", "__experiment_state": copy.deepcopy(state or {"trial": {"id": "t1"}})}
    return _trial.Phases(FakeAction(str(tmp_path / "async"), delegate_to), task_vars)


def registered(p):
    """What the task registers (the action's result: the state's keys), as the next phase reads it."""
    return json.loads(json.dumps({k: p.state[k] for k in _trial.STATE_KEYS if k in p.state}))


def counters_args(start_in_s, samples=2):
    return {"devices": ["tja"], "start_at": time.time() + start_in_s, "warmup": 0, "interval": 0.2, "samples": samples}


@root
def test_a_job_started_by_one_phase_is_collected_by_a_later_one(netns, tmp_path):
    first = phases(tmp_path)
    job = first.start_job("counters", "xdplab.testbed.rx_counters", counters_args(0.5), limit_s=30)
    assert job["how"] == "worker" and job["host"] == "dut" and first.in_worker_modules == ["xdplab.testbed.rx_counters"]
    assert _in_worker.job_running(job) and os.path.dirname(job["path"]) == str(tmp_path / "async")
    # the next phase: another Phases object from the registered state
    later = phases(tmp_path, registered(first))
    result = later.collect_job("counters", timeout_s=30)
    assert result["measurement"]["window"]["seconds"] == pytest.approx(0.4, abs=0.1), result
    assert "tja" in result["deltas"]
    # collected: gone from the state, its file removed, its process ended
    assert "jobs" not in later.state and not os.listdir(tmp_path / "async")
    assert not _in_worker.job_running(job)


@root
def test_a_failed_job_fails_the_phase_that_collects_it(netns, tmp_path):
    first = phases(tmp_path)
    first.start_job("counters", "xdplab.testbed.rx_counters", {"devices": ["nosuch0"]}, limit_s=30)
    later = phases(tmp_path, registered(first))
    with pytest.raises(_trial.PhaseFailure, match="nosuch0"):
        later.collect_job("counters", timeout_s=30)
    assert "jobs" not in later.state and not os.listdir(tmp_path / "async")


@root
def test_the_exit_path_kills_a_running_job_and_a_slow_one_is_ended_when_collected(netns, tmp_path):
    first = phases(tmp_path)
    slow = first.start_job("slow", "xdplab.testbed.rx_counters", counters_args(60), limit_s=90)
    other = first.start_job("other", "xdplab.testbed.rx_counters", counters_args(60), limit_s=90)
    # a job of the generator host's: the DUT's teardown leaves it for the generator host's cleanup
    first.state["jobs"]["theirs"] = dict(first.state["jobs"]["other"], host="tg")
    state = registered(first)
    later = phases(tmp_path, state)
    with pytest.raises(_trial.PhaseFailure, match=r"did not end within 0\.5 s"):
        later.collect_job("slow", timeout_s=0.5)
    assert not _in_worker.job_running(slow)
    teardown = phases(tmp_path, registered(later))
    teardown.end_jobs()
    assert not _in_worker.job_running(other) and list(teardown.state["jobs"]) == ["theirs"]
    assert not os.listdir(tmp_path / "async")
    # twice: nothing left to do
    phases(tmp_path, registered(later)).end_jobs()


@root
def test_a_job_is_collected_on_its_own_host_only(netns, tmp_path):
    first = phases(tmp_path)
    first.start_job("counters", "xdplab.testbed.rx_counters", counters_args(0.2), limit_s=30)
    on_generator = phases(tmp_path, registered(first), delegate_to="tg")
    with pytest.raises(_trial.PhaseFailure, match="runs on dut, not on tg"):
        on_generator.collect_job("counters", timeout_s=5)
    with pytest.raises(_trial.PhaseFailure, match="no background job nosuch"):
        phases(tmp_path, registered(first)).collect_job("nosuch", timeout_s=5)
    phases(tmp_path, registered(first)).end_jobs()
    assert not os.listdir(tmp_path / "async")


def test_the_far_phases_result_is_the_state_only_for_its_window():
    window = {"start_at": 1764633600.0}
    state = {"trial": {"id": "t1"}, "far": {"window": window}}
    far = dict(copy.deepcopy(state), far={"window": window, "counted": {"measurement": {}}}, skipped=False)
    action = FakeAction("/nonexistent")
    taken = _trial.Phases(action, {"__experiment_state": state, "__experiment_far": far})
    assert taken.state["far"]["counted"] == {"measurement": {}}
    # skipped for this trial, or an earlier trial's: the state stays
    skipped = {"skipped": True, "skip_reason": "Conditional result was False"}
    for side in (skipped, dict(far, far={"window": {"start_at": 1.0}, "counted": {}})):
        kept = _trial.Phases(action, {"__experiment_state": state, "__experiment_far": side})
        assert "counted" not in kept.state["far"]

    # the collect of that window comes after the far side's count: the stop phase takes it; a skipped collect, or one
    # of another window, leaves the far side's result
    collected = {"trial": {"id": "t1"}, "collected": window, "measured": {"measurement": {"pps": 5.0}}}
    taken = _trial.Phases(action, {"__experiment_state": state, "__experiment_far": far, "__experiment_collected": collected})
    assert taken.state["measured"] == {"measurement": {"pps": 5.0}} and taken.state["collected"] == window
    for side in (skipped, dict(collected, collected={"start_at": 1.0})):
        kept = _trial.Phases(action, {"__experiment_state": state, "__experiment_far": far, "__experiment_collected": side})
        assert "measured" not in kept.state and kept.state["far"]["counted"] == {"measurement": {}}


# -- the forward kind's provider --------------------------------------------------------------------------------
class RecordingPhases(_trial.Phases):
    """Phases whose modules are recorded, not run."""

    def __init__(self, task_vars):
        super().__init__(FakeAction("/nonexistent"), task_vars)
        self.ran = []

    def module(self, name, args):
        self.ran.append((name, {k: v for k, v in args.items() if v is not None}))
        return {"changed": True, "name": args.get("program"), "id": 7, "map_entries": args.get("map_entries"), "x": 1}

    def shell(self, script, what):
        self.ran.append(("shell", {"script": script}))
        return {"rc": 0}


TREX_PORTS = ["0000:03:00.0", "0000:03:00.1"]


def forward_vars(backend, system, rx_interface):
    gen = {"host": "tg", "backend": backend, "interface": TREX_PORTS[0] if backend == "trex" else "veth-tg0",
           "ip": "10.0.0.1", "options": {"ports": TREX_PORTS, "warmup_s": 2} if backend == "trex" else {}}  # fmt: skip
    systems = {
        "xdp_tx": {"impl": "forward", "forward": "xdp_tx", "return_port": "ingress"},
        "xdp_redirect": {"impl": "forward", "forward": "xdp_redirect", "return_port": "egress"},
    }
    return {
        "inventory_hostname": "dut",
        "hostvars": {
            "tg": {
                "xdplab_generator_rx_interface": rx_interface,
                "xdplab_generator_rx_ip": "10.0.1.1",
                "xdplab_generator_rx_mac": "02:00:00:00:01:01",
            }
        },
        "__experiment_gen": gen,
        "__experiment_planned": {"trial_id": "t1", "point": {"system": system}},
        "__experiment_systems": systems,
        "__experiment_state": {
            "trial": {"id": "t1", "name": system, "point": {"system": system}, "kind": "forward", "cpus": [1]},
            "far": {"window": {"start_at": 1764633600.0}},
        },
        "__experiment_touch_modes": {"no_touch": 0, "swapmac": 3},
        "__experiment_count_modes": {"driver": 2},
        "__experiment_xdp_program_keys": ["id", "name"],
        "xdplab_dut_interface": "veth-dut0",
        "xdplab_dut_egress_interface": "veth-dut1",
        "xdplab_bpf_prefix": "/usr/local/lib/xdplab",
        "xdplab_generator_run_dir": "/run/xdplab/generator",
        "experiment_warmup": 1,
        "experiment_interval": 1,
        "experiment_samples": 3,
    }


def test_the_far_side_counts_with_trex_on_the_lab_and_the_drop_counter_on_the_vlab():
    lab = RecordingPhases(forward_vars("trex", "xdp_redirect", TREX_PORTS[1]))
    _kind_forward.ForwardProvider.far_count(lab)
    (name, args), = lab.ran  # fmt: skip
    assert name == "xdplab.testbed.rx_counters" and args["source"] == "trex"
    assert args["devices"] == [TREX_PORTS[1]] and args["extra_devices"] == [TREX_PORTS[0]]
    assert args["trex_output"] == "/run/xdplab/generator/dut/t1.out" and args["trex_ports"] == TREX_PORTS
    vlab = RecordingPhases(forward_vars("xdp_live", "xdp_tx", "veth-tg1"))
    _kind_forward.ForwardProvider.far_count(vlab)
    (name, args), = vlab.ran  # fmt: skip
    # XDP_TX: back on the generator's own port, no second counter
    assert args["source"] == "driver_counters" and args["devices"] == ["veth-tg0"] and args["extra_devices"] == []
    assert "trex_output" not in args and "trex_ports" not in args
    assert args["start_at"] == 1764633600.0 and (args["warmup"], args["interval"], args["samples"]) == (1, 1, 3)


def test_the_forward_setup_asks_trex_for_the_receive_port_and_attaches_no_counter_there():
    for system, want in (("xdp_redirect", [1]), ("xdp_tx", [0])):  # egress: port 1; XDP_TX returns on port 0
        p = RecordingPhases(forward_vars("trex", system, TREX_PORTS[1]))
        program = _kind_forward.ForwardProvider.setup(p)
        assert p.state["traffic"]["options"] == {"ports": TREX_PORTS, "warmup_s": 2, "rx_ports": want}
        assert program["id"] == 7 and "x" not in program
        _kind_forward.ForwardProvider.far_setup(p)
        _kind_forward.ForwardProvider.far_teardown(p)
        # XDP_REDIRECT: a pass program on the egress port too (a driver's ndo_xdp_xmit wants one)
        want_ports = ["veth-dut0", "veth-dut1"] if system == "xdp_redirect" else ["veth-dut0"]
        assert [args["interface"] for _name, args in p.ran] == want_ports, p.ran
    vlab = RecordingPhases(forward_vars("xdp_live", "xdp_redirect", "veth-tg1"))
    program = _kind_forward.ForwardProvider.setup(vlab)
    assert "traffic" not in vlab.state and program["map_entries"] == {"tx_ports": {"0": "veth-dut1"}}
    egress_args = vlab.ran[1][1]
    assert egress_args["program"] == "xdp_bench_pass" and egress_args["variables"] == {"touch_mode": 0, "count_mode": 2}
    _kind_forward.ForwardProvider.far_setup(vlab)
    _kind_forward.ForwardProvider.far_teardown(vlab)
    far = [(args.get("interface"), args.get("state"), args.get("script")) for _name, args in vlab.ran[2:]]
    assert far == [("veth-tg1", "present", None), (None, None, "ip link set veth-tg1 promisc on"),
                   ("veth-tg1", "absent", None), (None, None, "ip link set veth-tg1 promisc off")]  # fmt: skip
    vlab.ran.clear()
    _kind_forward.ForwardProvider.teardown(vlab)
    assert [(args["interface"], args["state"]) for _name, args in vlab.ran] == [("veth-dut0", "absent"), ("veth-dut1", "absent")]


def test_a_redirect_without_an_egress_port_is_refused_before_any_change():
    bad = forward_vars("xdp_live", "xdp_redirect", "veth-tg1")
    bad["xdplab_dut_egress_interface"] = "veth-dut0"
    p = RecordingPhases(bad)
    with pytest.raises(_trial.PhaseFailure, match="xdplab_dut_egress_interface must name a port of dut other than"):
        _kind_forward.ForwardProvider.setup(p)
    assert p.ran == []

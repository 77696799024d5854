# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The trial runner's phases, in Python (issue 26 item 3): what roles/experiment/tasks/trial.yml calls, one phase per
task, through the action plugin xdplab.testbed.trial.

trial.yml keeps the order (set up, start the generator, measure, stop and record, tear down) and nothing else; each
phase here reads the trial's one state object (the previous phase's result, registered as ``__experiment_state``),
runs its modules on the task's host (the DUT, or the generator host where the task is delegated there) and returns
the object with its own part added:

    trial       the trial's values (module_utils/_systems.trial_values), made by ``setup``
    program     what runs on the DUT (a provider's setup)
    traffic     what the generator offers instead of its host's own (a provider's setup: the TCP system's client)
    started     the generator's start (its started_epoch: a measure's warm-up counts from it)
    cpu_before  the DUT's CPU snapshot before a window that the measure does not bracket itself
    measured    the measure module's result
    cpu         the DUT's CPU usage over the window
    generator   the generator's stop (its summary; removed: its run files are gone)
    line        the trial's one-line result, once recorded
    jobs        modules running in the background ({name: job}, Phases.start_job): started by one phase, collected by
                a later one (another worker process), ended on every exit path (cleanup and teardown: each its host's)
    far         a forwarding system's far side: its window (``window``, set by the measure: trial.yml then runs the
                phase ``far`` on the generator host) and the far side's count (``counted``, until ``collect`` reads it)
    side        what a provider ran on the generator host beside the traffic, collected by ``stop`` before the
                generator stops (the provider's ``side_collect``: the DoS experiment's TCP_RR client, _kind_ddos.py)

The phases that only a forwarding system's trial runs, ``far`` (delegated to the generator host while the DUT counts)
and ``collect`` (the DUT's background jobs of that window), register their results apart (``__experiment_far``,
``__experiment_collected``), so that their tasks, skipped for the other systems, do not replace
``__experiment_state``; the next phase takes them for the state when they are that window's (SIDE_RESULTS).

Every kind of system is a *provider* here (PROVIDERS: its setup, measure and teardown in Python; forward in
_kind_forward.py, dpdk and af_xdp in _kind_dpdk.py and _kind_af_xdp.py). A provider may have the far side's phases
(``far_setup``, ``far_count``, ``far_teardown``) and ``collect`` (a measure that runs on in the background). The
latency experiment's sink is still its task files' (tasks/latency/), whose ``__experiment_traffic`` (the stamps) the
phases read from the task's variables.
"""

from __future__ import annotations

import copy
import datetime
import math
import os
import shlex
import time
import uuid

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.xdplab.testbed.plugins.filter import lab_math
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpu_usage as cpu_usage
from ansible_collections.xdplab.testbed.plugins.module_utils import _record, _systems
from ansible_collections.xdplab.testbed.plugins.module_utils import _trial_record as trial_record
from ansible_collections.xdplab.testbed.plugins.plugin_utils import _in_worker, _kind_af_xdp, _kind_ddos, _kind_dpdk, _kind_lb
from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_forward import ForwardProvider
from ansible_collections.xdplab.testbed.plugins.plugin_utils._on_controller import ModuleFailure, on_this_machine, run_worker

# the keys of the state object a phase passes on (the rest of a registered result is Ansible's)
STATE_KEYS = (
    "trial", "program", "traffic", "started", "cpu_before", "measured", "cpu", "generator", "line", "jobs", "far", "collected",
    "side",
)  # fmt: skip
# the routing experiment (issue 27, _kind_forward.py): its table, install and the router's fib counts before the window
STATE_KEYS += ("routing",)
# results of phases registered apart from __experiment_state (a task that is skipped for some trials); the next phase
# takes one for the state when it carries the same far-side window as the state (the trial's, not an earlier one's)
SIDE_RESULTS = ("__experiment_far", "__experiment_collected")
# the keys of async_status's result that are its own, not the module's
_ASYNC_KEYS = ("ansible_job_id", "started", "finished", "results_file", "erased", "stdout", "stdout_lines", "stderr",
               "stderr_lines")  # fmt: skip


class PhaseFailure(Exception):
    """A module of a phase failed: its result (msg, process, summary) becomes the task's failed result."""

    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


class Phases:
    """The phases of one trial, run by the action plugin xdplab.testbed.trial for the task's host."""

    def __init__(self, action, task_vars):
        self.action = action
        self.task_vars = task_vars
        previous = task_vars.get("__experiment_state")
        window = ((previous or {}).get("far") or {}).get("window") if isinstance(previous, dict) else None
        if window:
            # the far side's count, then the collect of that window (each registered apart: SIDE_RESULTS)
            far, collected = (task_vars.get(name) for name in SIDE_RESULTS)
            if isinstance(far, dict) and (far.get("far") or {}).get("window") == window:
                previous = far
            if isinstance(collected, dict) and collected.get("collected") == window:
                previous = collected
        self.state = {k: copy.deepcopy(previous[k]) for k in STATE_KEYS if isinstance(previous, dict) and k in previous}
        self.changed = False
        # the modules this phase ran in a process of their own, and in a fork of the worker (the result's `modules`
        # and `modules_in_worker`: benchmarks/trial_overhead.py)
        self.modules = []
        self.in_worker_modules = []
        # the modules' warnings, passed on as the phase's
        self.warnings = []

    # -- reading the play's variables and running modules -------------------------------------------------------
    def var(self, name, default=None):
        """A variable of the task's host, templated (role defaults and inventory values may be templates)."""
        if name not in self.task_vars:
            return default
        value = self.action._templar.template(self.task_vars[name])
        return default if value is None else value

    def module(self, name, args):
        """Run a module on the task's host (the delegated one where the task is delegated); raise on failure.

        Where the host is a network namespace of this machine (or this machine) reached without become, the module
        runs in a fork of this worker inside that namespace (plugin_utils/_in_worker.py: no new Python process and
        no AnsiballZ payload); ``xdplab_modules_in_worker: false`` turns that off."""
        args = {k: v for k, v in args.items() if v is not None}
        if self.in_worker() and _in_worker.runs_in_worker(name):
            self.action._update_module_args(name, args, self.task_vars)
            self.in_worker_modules.append(name)
            result = _in_worker.run_module(name, args, netns=self._netns())
        else:
            self.modules.append(name)
            result = self.action._execute_module(module_name=name, module_args=args, task_vars=self.task_vars)
        self.warnings.extend(result.get("warnings") or [])
        if result.get("failed"):
            raise PhaseFailure(result)
        self.changed = self.changed or bool(result.get("changed"))
        return result

    def flag(self, name, default=False):
        """A boolean variable, as ``| bool`` reads it."""
        return _bool(self.var(name, default))

    def shell(self, script, what):
        """Run a shell script on the task's host (``sh -ec``) by the connection's own command, as
        ansible.builtin.raw does (no module process; become where the play has it); raise with its exit and stderr."""
        res = self.action._low_level_execute_command(f"sh -ec {shlex.quote(script)}")
        self.changed = True
        if res.get("rc") != 0:
            stderr = (res.get("stderr") or "").strip()
            raise PhaseFailure(
                {"failed": True, "msg": f"{what}: exit {res.get('rc')}: {stderr[-500:]}", "rc": res.get("rc"), "stderr": stderr}
            )
        return res

    def host(self):
        """The host this phase's modules run on: the delegated one where the task is delegated."""
        return self.action._task.delegate_to or self.task_vars.get("inventory_hostname")

    # -- background jobs: a module started by one phase, its result read by a later one ---------------------------
    def start_job(self, name, module, args, limit_s):
        """Start ``module`` on the task's host in the background as the trial's job ``name`` (kept in the state's
        ``jobs``; collect_job reads its result in a later phase on the same host, end_jobs ends it on every exit
        path). In the worker (in_worker): a detached grandchild of this worker writes the result to a file
        (_in_worker.start_module); otherwise Ansible's async wrapper with ``limit_s`` as the task's ``async``."""
        args = {k: v for k, v in args.items() if v is not None}
        job = {"module": module, "host": self.host(), "limit_s": int(limit_s), "started_at": time.time()}
        if self.in_worker() and _in_worker.runs_in_worker(module):
            self.action._update_module_args(module, args, self.task_vars)
            jobs_dir = os.path.expanduser(self.action.get_shell_option("async_dir", default="~/.ansible_async"))
            os.makedirs(jobs_dir, mode=0o700, exist_ok=True)
            path = os.path.join(jobs_dir, f"xdplab-{self.trial['id']}-{name}-{uuid.uuid4().hex[:12]}.json")
            try:
                job.update(_in_worker.start_module(module, args, path, netns=self._netns()))
            except OSError as exc:
                raise PhaseFailure({"failed": True, "msg": f"could not start {module} in the background: {exc}"}) from exc
            job.update(how="worker", path=path)
            self.in_worker_modules.append(module)
        else:
            task = self.action._task
            saved = task.async_val
            task.async_val = int(limit_s)
            try:
                started = self.action._execute_module(
                    module_name=module, module_args=args, task_vars=self.task_vars, wrap_async=True
                )
            finally:
                task.async_val = saved
            self.modules.append(module)
            if started.get("failed") or not started.get("ansible_job_id"):
                msg = f"could not start {module} in the background: {started.get('msg', 'no job id')}"
                raise PhaseFailure(dict(started, failed=True, msg=msg))
            job.update(how="async", jid=started["ansible_job_id"])
        self.state.setdefault("jobs", {})[name] = job
        return job

    def collect_job(self, name, timeout_s):
        """The result of the trial's job ``name``, waiting up to ``timeout_s`` for it to end; the job is ended and
        its files removed whatever it returned. Raise when it failed, ended without a result or did not end."""
        job = (self.state.get("jobs") or {}).get(name)
        if not job:
            raise PhaseFailure({"failed": True, "msg": f"the trial's state has no background job {name}: the phase that "
                                "starts it did not run for this trial"})  # fmt: skip
        if job["host"] != self.host():
            raise PhaseFailure({"failed": True, "msg": f"the background job {name} runs on {job['host']}, not on "
                                f"{self.host()}: collect it in a phase of that host"})  # fmt: skip
        deadline = time.monotonic() + timeout_s
        try:
            result = self._job_result(job)
            while result is None and time.monotonic() < deadline:
                time.sleep(0.1 if job["how"] == "worker" else 1.0)
                result = self._job_result(job)
        finally:
            self._end_job(name)
        if result is None:
            result = {"failed": True, "msg": f"{job['module']} did not end within {timeout_s} s (ended now)"}
        self.warnings.extend(result.get("warnings") or [])
        if result.get("failed"):
            raise PhaseFailure(result)
        return result

    def job_result(self, name):
        """The result of the trial's job ``name`` once it has ended (it stays the trial's job), else None."""
        job = (self.state.get("jobs") or {}).get(name)
        return self._job_result(job) if job else None

    def end_jobs(self):
        """Every exit path: the trial's jobs on this phase's host end (a job in the worker is killed; an async job
        over SSH is waited for until its own limit) and their files go; the other host's stay for its phase."""
        for name, job in list((self.state.get("jobs") or {}).items()):
            if job.get("host") == self.host():
                if job.get("how") == "async":
                    deadline = job["started_at"] + job["limit_s"] + 5
                    while self._job_result(job) is None and time.time() < deadline:
                        time.sleep(1.0)
                self._end_job(name)

    def _job_result(self, job):
        """A job's result once it has ended, else None."""
        if job["how"] == "worker":
            result = _in_worker.job_result(job, job["path"])
            if result is None and not _in_worker.job_running(job):
                # it may have written its result as it ended
                result = _in_worker.job_result(job, job["path"]) or {
                    "failed": True,
                    "msg": f"{job['module']} ended in the background without a result",
                }
            return result
        status = self._async_status(job, "status")
        if not status.get("finished") and not status.get("failed"):
            return None
        return {k: v for k, v in status.items() if k not in _ASYNC_KEYS}

    def _end_job(self, name):
        job = self.state["jobs"].pop(name)
        if not self.state["jobs"]:
            del self.state["jobs"]
        if job["how"] == "worker":
            _in_worker.kill_module(job, job["path"])
        else:
            self._async_status(job, "cleanup")

    def _async_status(self, job, mode):
        async_dir = self.action._remote_expand_user(self.action.get_shell_option("async_dir", default="~/.ansible_async"))
        return self.action._execute_module(
            module_name="ansible.legacy.async_status",
            module_args={"jid": job["jid"], "mode": mode, "_async_dir": async_dir},
            task_vars=self.task_vars,
        )

    def _netns(self):
        connection = self.action._connection
        return connection.netns_name if getattr(connection, "transport", None) == "xdplab.testbed.netns" else None

    def in_worker(self):
        """Whether this phase's modules run in a fork of the worker (the host is this machine, no become)."""
        return self.flag("xdplab_modules_in_worker", True) and self.on_this_machine()

    def on_this_machine(self):
        """Whether the task's host is this machine, reached without become (its /proc is the worker's own)."""
        return on_this_machine(self.action._connection, self.action._play_context)

    def in_process(self, worker, spec, params, required_if=None):
        """Run a module's worker class in this process (the module's own argument spec validates the params); its
        warnings become the phase's."""
        validated = ArgumentSpecValidator(spec, required_if=required_if).validate(
            {k: v for k, v in params.items() if v is not None}
        )
        if validated.error_messages:
            raise PhaseFailure({"failed": True, "msg": "; ".join(validated.error_messages)})
        try:
            out = run_worker(lambda module: worker(module).run(), validated.validated_parameters)
        except ModuleFailure as exc:
            self.warnings.extend(exc.result.get("warnings") or [])
            raise PhaseFailure(exc.result) from exc
        self.warnings.extend(out.get("warnings") or [])
        return out

    # -- what every phase knows ---------------------------------------------------------------------------------
    @property
    def trial(self):
        return self.state["trial"]

    def provider(self):
        return provider_of(self.trial["system"])

    def measured(self):
        """The measure's result (the provider's)."""
        return self.state.get("measured") or {}

    def program(self):
        return self.state.get("program") or {}

    def traffic(self):
        """Traffic a system's setup asks for instead of the generator host's own ({backend, options, rate_pps, wait}:
        the TCP system's iperf3 client): a provider's, with what task files set (__experiment_traffic: the latency
        experiment's stamps) over it."""
        traffic = dict(self.state.get("traffic") or {})
        given = self.var("__experiment_traffic", {}) or {}
        traffic.update(given)
        if "options" in given and self.state.get("traffic", {}).get("options"):
            # both set options (T-Rex's rx_ports of a forwarding system, the latency experiment's stamps): all of them
            traffic["options"] = dict(self.state["traffic"]["options"], **(given["options"] or {}))
        return traffic

    def host_var(self, host, name, default=None):
        """A variable of another inventory host (the generator host's), templated."""
        hostvars = self.task_vars.get("hostvars") or {}
        try:
            value = hostvars[host][name]
        except KeyError:
            return default
        value = self.action._templar.template(value)
        return default if value is None else value

    def sampling(self, from_start=True, cpu_window=True):
        """A measuring module's sampling options (doc fragment xdplab.testbed.sampling): the experiment's warm-up,
        interval and samples; ``from_start``: the warm-up counts from the generator's start (the module's own start-up
        is part of it); ``cpu_window``: CPU snapshots at the window's edges when the trial's window is the measure's
        own, for the CPU usage that the measure phase works out."""
        out = {
            "warmup": self.var("experiment_warmup"),
            "interval": self.var("experiment_interval"),
            "samples": self.var("experiment_samples"),
        }
        if from_start:
            out["warmup_from"] = (self.state.get("started") or {}).get("started_epoch")
        if cpu_window:
            out["cpu_window_cpus"] = self.trial["cpus"] if self.trial["cpu_windowed"] else []
        return out

    def provenance(self, system, program, generator):
        """A record's provenance: the run's (DUT, trial timing, controller) with this trial's system, program and
        generator."""
        return {
            "dut": self.var("__experiment_dut_provenance"),
            "system": system,
            "program": program,
            "generator": generator,
            "trial": self.var("__experiment_timing"),
            "controller": self.var("__experiment_controller"),
        }

    def run_dir(self):
        # per DUT and trial: <run_dir>/<dut>/<trial id>.state.json (nothing is read across trials)
        return f"{self.var('xdplab_generator_run_dir')}/{self.task_vars['inventory_hostname']}"

    # -- the phases ---------------------------------------------------------------------------------------------
    def setup(self):
        """The trial's values (decided once, by the registry of kinds), then the provider's setup."""
        planned = self.var("__experiment_planned")
        settings = {
            "dut_cpus": self.var("xdplab_dut_cpus", []),
            "dpdk_main_lcore": self.var("xdplab_dpdk_main_lcore", 0),
            "dut_interface": self.var("xdplab_dut_interface"),
            "warmup": self.var("experiment_warmup"),
            "interval": self.var("experiment_interval"),
            "samples": self.var("experiment_samples"),
            "generator_slack": self.var("experiment_generator_slack"),
            "window_lead": self.var("experiment_window_lead"),
            "cpu_bpf_stats": self.flag("experiment_cpu_bpf_stats", True),
            "now": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        try:
            trial = _systems.trial_values(planned, self.var("__experiment_systems", {}), settings)
        except _systems.SystemsError as exc:
            raise PhaseFailure({"failed": True, "msg": str(exc)}) from exc
        self.state = {"trial": trial, "program": {}}
        provider = self.provider()
        if provider:
            self.state["program"] = provider.setup(self)

    def start(self):
        """Start the generator (the task is delegated to the generator host)."""
        gen, traffic, trial = self.var("__experiment_gen"), self.traffic(), self.trial
        provider = self.provider()
        if provider and hasattr(provider, "far_setup"):
            # a forwarding system's far side: its counter where the frames come back, before the generator sends
            provider.far_setup(self)
        started = self.module(
            "xdplab.testbed.traffic_generator",
            {
                "backend": traffic.get("backend", gen["backend"]),
                "state": "started",
                "run_dir": self.run_dir(),
                "name": trial["id"],
                # a system's traffic may leave by another port to another address (the DoS experiment's control row)
                "interface": traffic.get("interface", gen["interface"]),
                "src_mac": gen.get("mac"),
                "dst_mac": traffic.get("dst_mac", self.var("xdplab_dut_mac")),
                "src_ip": gen.get("ip"),
                "dst_ip": self.var("xdplab_dut_ip"),
                "packet_len": trial["packet_len"],
                "stream_count": trial["cores"],
                "queues": self.var("__experiment_rx_queues"),
                "cpus": gen.get("cpus"),
                "duration": trial["seconds"],
                "rate_pps": traffic.get("rate_pps", trial["rate_pps"]),
                "port_base": traffic.get("port_base", self.var("xdplab_port_base")),
                "backend_options": traffic.get("options", gen.get("options")),
                "binary": f"{self.var('xdplab_bpf_prefix')}/bin/xdplab-trafficgen",
                # address lists (issue 27: an experiment's __experiment_traffic sets them), only when set
                **{key: traffic[key] for key in ("destinations", "sources", "exclude") if traffic.get(key)},
            },
        )
        # a measure's warm-up counts from it (warmup_from), not from that task's own start
        self.state["started"] = {"started_epoch": started.get("started_epoch")}

    def measure(self):
        """A window the measure does not bracket starts with a CPU snapshot; then the provider's measure and the CPU
        usage over the window (for a window the measure does not bracket: the reading while the generator still
        sends)."""
        trial = self.trial
        if not trial["cpu_windowed"]:
            self.state["cpu_before"] = self.module(
                "xdplab.testbed.cpu_usage",
                {
                    "cpus": trial["cpus"],
                    "snapshot_only": True,
                    "work_interfaces": [self.var("xdplab_dut_interface")],
                    "work_comms": self.var("__experiment_cpu_work_comms", []),
                    "bpf_interfaces": trial["cpu_bpf_interfaces"],
                },
            )["snapshot"]
        provider = self.provider()
        if provider:
            self.state["measured"] = provider.measure(self)
            # a measure that counts on in the background (the forwarding kind's, with the far side's phase far) has
            # its result and CPU usage in the phase collect
            if not self.state.get("far"):
                self.cpu()

    def cpu(self):
        """The DUT's CPU usage over the measurement window (contract 3): between the measure's own snapshots
        (cpu_window) or from the snapshot before the measure until now."""
        trial, measured = self.trial, self.measured()
        own_window = bool(trial["cpu_windowed"])
        if own_window and not isinstance(measured.get("cpu_window"), dict):
            raise PhaseFailure(
                {
                    "failed": True,
                    "msg": f"the measure task of {trial['kind']} returned no cpu_window (its CPU snapshots at the window's "
                    "edges): the trial has no CPU figures for its window; the measure task's warnings say which read failed",
                }
            )
        ended = isinstance(measured.get("threads"), dict)
        args = {
            "cpus": trial["cpus"],
            "since": measured["cpu_window"]["start"] if own_window else self.state.get("cpu_before"),
            "until": measured["cpu_window"]["end"] if own_window else None,
            "work_interfaces": [self.var("xdplab_dut_interface")],
            "work_comms": self.var("__experiment_cpu_work_comms", []),
            # a measure that ran its own process and stopped it read its threads just before: they count through
            # this reading (all of that process's threads are work)
            "ended_threads": [measured["threads"]] if ended and not own_window else [],
            "work_pids": [measured["threads"]["pid"]] if ended else [],
            "bpf_interfaces": [] if own_window else trial["cpu_bpf_interfaces"],
        }
        if args["since"] and args["until"] and not args["bpf_interfaces"] and self.on_this_machine():
            # arithmetic on two snapshots of this machine: no module process (docs/BENCHMARKS.md)
            self.state["cpu"] = self.in_process(cpu_usage.CpuUsage, cpu_usage.ARGUMENT_SPEC, args)
        else:
            self.state["cpu"] = self.module("xdplab.testbed.cpu_usage", args)

    def far(self):
        """Phase ``far`` (delegated to the generator host; trial.yml runs it when the measure set the state's
        far.window): the far side's count over that window, while the DUT's counters run in the background."""
        self.state["far"]["counted"] = self.provider().far_count(self)

    def collect(self):
        """Phase ``collect`` (trial.yml runs it for a measure with a far-side window): the provider's measure that ran
        in the background (its jobs on this host; a forwarding system's DUT counters and process) is collected now,
        and its CPU usage worked out (the other measures' phase has read it already)."""
        provider = self.provider()
        window = (self.state.get("far") or {}).get("window")
        # which window this result collected: the next phase takes it for the state (SIDE_RESULTS), also when it failed
        self.state["collected"] = window
        if provider and hasattr(provider, "collect") and self.state.get("far"):
            self.state["measured"] = provider.collect(self)
            self.state.pop("far", None)
            self.cpu()

    def stop(self):
        """Stop the generator and read what it sent (delegated to the generator host); its run files go with it, and
        a forwarding system's far side. Then the trial's record, written by this action on the controller
        (``record``), unless the trial still reads something after the generator's stop (the latency experiment's
        sink: its own ``record`` phase)."""
        provider = self.provider()
        try:
            if provider and hasattr(provider, "side_collect"):
                # what the provider ran beside the traffic ends before it (the DoS experiment's TCP_RR client)
                self.state["side"] = provider.side_collect(self)
            self.state["generator"] = self.module(
                "xdplab.testbed.traffic_generator",
                {
                    "backend": self.var("__experiment_gen")["backend"],
                    "state": "stopped",
                    "run_dir": self.run_dir(),
                    "name": self.trial["id"],
                    # a system's traffic that ends by itself (the TCP system's iperf3 client)
                    "wait": self.traffic().get("wait", False),
                    "duration": self.trial["seconds"],
                    "remove": True,
                },
            )
        finally:
            self._far_teardown()
        if not self.flag("experiment_latency"):
            self.record()

    def record(self):
        """The trial's JSON line, written here on the controller (the worker of the phase ``stop``, or of its own
        phase after the latency experiment's sink was read)."""
        trial, measured = self.trial, self.measured()
        summary = self.state["generator"].get("summary") or {}
        self.forwarded_check(measured.get("measurement"), summary)
        gen_provenance = dict(
            self.var("__experiment_gen_provenance", {}),
            backend=summary.get("backend", self.var("__experiment_gen")["backend"]),
            version=summary.get("version"),
            command=summary.get("command"),
        )
        args = {
            "path": self.var("__experiment_records"),
            "experiment": self.var("experiment_name"),
            "trial": trial["record"],
            "status": "ok",
            "started_at": trial["started_at"],
            "measurement": measured.get("measurement"),
            "cpu": self.state.get("cpu"),
            "generator": summary,
            "kept_up_share": self.var("experiment_kept_up_share"),
            "link_speed_gbit": self.var("experiment_link_speed_gbit"),
            "provenance": self.provenance(
                trial["system"], dict(self.program(), **_systems.measured_provenance(trial, measured)), gen_provenance
            ),
        }
        if "tcp" in summary:
            # the TCP experiment's section: the client's goodput and retransmits, the DUT port's driver counters
            args["tcp"] = dict(summary["tcp"], driver_rates=measured.get("rates") or {})
        if self.flag("experiment_latency"):
            args["latency"] = (self.var("__experiment_latency", {}) or {}).get("latency")
        provider = self.provider()
        if provider and hasattr(provider, "record_extra"):
            # a kind's additive section of the record (the DoS experiment's ddos)
            args.update(provider.record_extra(self, summary))
        recorded = self.in_process(trial_record.TrialRecorder, trial_record.ARGUMENT_SPEC, args, trial_record.REQUIRED_IF)
        self.changed = self.changed or bool(recorded.get("changed"))
        record = recorded.get("record") or {}
        result = record.get("result") or {}
        self.state["line"] = (
            f"{trial['label']} {trial['name']} {trial['action']} {trial['touch']} {trial['packet_len']}B "
            f"cores={trial['cores']} rep={trial['repetition']}: {_mpps((measured.get('measurement') or {}).get('pps'))} "
            f"Mpps counted, {_mpps(summary.get('offered_pps'))} Mpps offered over the run, limit "
            f"{(record.get('loss') or {}).get('limit', '?')}, CPU {','.join(str(c) for c in trial['cpus'])} busy "
            f"{float(result.get('cpu_busy') or 0):.1f} %"
        )

    @staticmethod
    def forwarded_check(measurement, summary):
        """A forwarding trial whose far side got nothing back is not a measurement (h35v): the phase fails with the
        verdict (where the frames stopped, what to check), and the rescue's phase failed records it with status failed,
        its measurement and forwarding section kept (not a rate: the report leaves failed trials out, the run's summary
        names it). Trials without a forwarding section (drop, DoS) are not checked."""
        forwarding = ((measurement or {}).get("details") or {}).get("forwarding") if isinstance(measurement, dict) else None
        try:
            verdict = _record.nothing_forwarded(forwarding, summary, measurement.get("window") if forwarding else None)
        except _record.RecordError:
            return  # a malformed summary: the record's own checks say so
        if verdict:
            raise PhaseFailure({"failed": True, "msg": _record.nothing_forwarded_error(verdict), "verdict": verdict})

    def failed(self):
        """Record the failed trial (a re-run retries it): the failed task, its error, the process's exit and what a
        generator that died had sent."""
        planned = self.var("__experiment_planned")
        failed_result = self.task_vars.get("ansible_failed_result") or {}
        # a generator that died leaves a partial summary (what it sent until then)
        partial = failed_result.get("generator_summary") if isinstance(failed_result, dict) else None
        systems = self.var("__experiment_systems", {})
        name = planned["point"]["system"]
        trial = self.state.get("trial") if (self.state.get("trial") or {}).get("id") == planned["trial_id"] else None
        program = self.program() if trial else {}
        failure = self.var("__experiment_failure")
        verdict = failed_result.get("verdict") if isinstance(failed_result, dict) and trial else None
        measurement = cpu = None
        if isinstance(verdict, dict):
            # a forwarding trial that ran to its end and got nothing back: its verdict, measurement and forwarding
            # section (what each side counted) and the generator's summary are kept
            failure = dict(failure or {}, verdict=verdict)
            measurement, cpu = (failed_result.get("measured") or {}).get("measurement"), failed_result.get("cpu")
            partial = (failed_result.get("generator") or {}).get("summary")
        args = {
            "path": self.var("__experiment_records"),
            "experiment": self.var("experiment_name"),
            "trial": planned,
            "status": "failed",
            "started_at": (trial or {}).get("started_at"),
            "failure": failure,
            "measurement": measurement,
            "cpu": cpu if isinstance(cpu, dict) else None,
            "generator": partial if isinstance(partial, dict) else None,
            "provenance": self.provenance(
                dict(systems[name], name=name) if name in systems else {}, program, self.var("__experiment_gen_provenance")
            ),
        }
        self.in_process(trial_record.TrialRecorder, trial_record.ARGUMENT_SPEC, args, trial_record.REQUIRED_IF)
        self.changed = True

    def cleanup(self):
        """No generator left running (every exit path; delegated to the generator host): stops what still runs and
        removes the run's files; not an error when nothing runs. Also the jobs on the generator host and a
        forwarding system's far side."""
        try:
            self.end_jobs()
            self.module(
                "xdplab.testbed.traffic_generator",
                {
                    "backend": self.var("__experiment_gen")["backend"],
                    "state": "absent",
                    "run_dir": self.run_dir(),
                    "name": self.var("__experiment_planned")["trial_id"],
                },
            )
        finally:
            self._far_teardown()

    def _planned_provider(self):
        """The provider of the planned trial's system (None: no such system): known also
        when the trial failed before its values."""
        return provider_of(self.var("__experiment_systems", {}).get(self.var("__experiment_planned")["point"]["system"]))

    def _far_teardown(self):
        provider = self._planned_provider()
        if provider and hasattr(provider, "far_teardown"):
            provider.far_teardown(self)

    def teardown(self):
        """The provider's teardown (every exit path; also after a setup that failed before the trial's values)."""
        provider = self._planned_provider()
        try:
            self.end_jobs()
        finally:
            if provider:
                provider.teardown(self)


class XdpProvider:
    """Kind ``xdp``: an XDP program attached to the DUT port. The project's bpf/xdp_bench.bpf.c by default (the
    action picks the program, the touch and count modes are .rodata variables); a custom system
    (xdplab_custom_systems) names its own object (installed by the role bpf_programs), program and variables, and
    is counted by the driver."""

    @staticmethod
    def setup(phases):
        trial = phases.trial
        system = trial["system"]
        count = system.get("count", "program")
        if trial["custom"]:
            variables = system.get("variables") or {}
        else:
            variables = {
                "touch_mode": phases.var("__experiment_touch_modes")[trial["touch"]],
                "count_mode": phases.var("__experiment_count_modes")[count],
            }
        attached = phases.module(
            "xdplab.testbed.xdp_program",
            {
                "interface": phases.var("xdplab_dut_interface"),
                "state": "present",
                "object": system.get("object", f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/xdp_bench.bpf.o"),
                "program": system.get("program", f"xdp_bench_{trial['action']}"),
                "mode": phases.var("xdplab_xdp_mode", "native"),
                "variables": variables,
            },
        )
        program = {k: attached[k] for k in phases.var("__experiment_xdp_program_keys", []) if k in attached}
        if trial["custom"]:
            program["given"] = system["given"]
        return program

    @staticmethod
    def measure(phases):
        trial = phases.trial
        return phases.module(
            "xdplab.testbed.xdp_stats",
            {
                "interface": phases.var("xdplab_dut_interface"),
                "count": trial["system"].get("count", "program"),
                "action": trial["action"],
                **phases.sampling(),
            },
        )

    @staticmethod
    def teardown(phases):
        phases.module(
            "xdplab.testbed.xdp_program",
            {"interface": phases.var("xdplab_dut_interface"), "state": "absent", "mode": phases.var("xdplab_xdp_mode", "native")},
        )


class LinuxProvider:
    """Kind ``linux``: the DUT's own network stack drops the test flows, in the raw table (before connection
    tracking, the paper's "Linux (raw)"), after conntrack ("Linux (conntrack)"), or by a user's nftables ruleset (a
    custom system, mode ruleset: the file's text is read here on the controller and loaded as it is; counted by its
    rules that count and then drop). No XDP program: frames take the normal receive path."""

    @staticmethod
    def setup(phases):
        trial = phases.trial
        system = trial["system"]
        ruleset = None
        if trial["custom"]:
            with open(system["ruleset"], encoding="utf-8") as fh:
                ruleset = fh.read()
        dropping = phases.module(
            "xdplab.testbed.netfilter_drop",
            {
                "state": "present",
                "backend": phases.var("xdplab_netfilter_backend"),
                "mode": system["mode"],
                "interface": phases.var("xdplab_dut_interface"),
                "port_base": phases.var("xdplab_port_base"),
                "port_count": len(phases.var("xdplab_dut_cpus", [])),
                "ruleset": ruleset,
                "tables": system.get("tables"),
            },
        )
        program = {k: v for k, v in dropping.items() if k not in ("changed", "diff", "invocation", "failed")}
        if trial["custom"]:
            program["given"] = system["given"]
        return program

    @staticmethod
    def measure(phases):
        trial = phases.trial
        return phases.module(
            "xdplab.testbed.netfilter_stats",
            {
                "backend": phases.var("xdplab_netfilter_backend"),
                "mode": trial["system"]["mode"],
                # a user's ruleset (mode ruleset): the tables it declares
                "tables": trial["system"].get("tables"),
                "interface": phases.var("xdplab_dut_interface"),
                **phases.sampling(),
            },
        )

    @staticmethod
    def teardown(phases):
        # the module's own drop table, or exactly the tables of a user's ruleset (read from the system's entry: the
        # trial's values may not exist when the trial failed before them)
        planned = phases.var("__experiment_planned")
        system = phases.var("__experiment_systems", {})[planned["point"]["system"]]
        phases.module(
            "xdplab.testbed.netfilter_drop",
            {
                "state": "absent",
                "backend": phases.var("xdplab_netfilter_backend"),
                "interface": phases.var("xdplab_dut_interface"),
                "tables": system.get("tables"),
            },
        )


class LatencyFloorProvider:
    """Kind ``latency_floor`` (issue 9): the generator straight to its own sink, no DUT program in between. The sink
    is on the DUT's ingress port (tasks/latency/setup.yml attaches it and tasks/latency/teardown.yml removes it), one
    hop from the generator: what the stamp, the generator's batch flush, the hop and the sink add to every system's
    number. Nothing else runs on the DUT."""

    @staticmethod
    def setup(phases):
        return {"name": "xdp_latency_sink", "where": phases.var("xdplab_dut_interface"), "note": "latency floor"}

    @staticmethod
    def measure(phases):
        # the stamped frames the sink receives over the window (at: generator_rx: no DUT counts here)
        return phases.module(
            "xdplab.testbed.latency_stats",
            {
                "interface": phases.var("xdplab_dut_interface"),
                "state": "measured",
                **phases.sampling(from_start=False, cpu_window=False),
            },
        )

    @staticmethod
    def teardown(phases):
        """Nothing of its own to tear down."""


class TcpProvider:
    """Kind ``tcp`` (the TCP experiment, seeds/002): an iperf3 server on the DUT, pinned to xdplab_iperf3_server_cpus,
    and the program of the point's ``program`` axis on the DUT port (__experiment_tcp_programs): none, or
    bpf/xdp_bench.bpf.c's xdp_bench_pass natively, generically (skb) or natively after reading the headers (touch
    read). The program counts nothing (count_mode driver): the driver's counters count, so our own counting is not
    what gets measured. The traffic is the generator backend iperf3 (the client on the generator host,
    xdplab_iperf3_client_cpus), in the state's ``traffic``."""

    @staticmethod
    def setup(phases):
        trial = phases.trial
        point = trial["point"]
        tcp = phases.var("__experiment_tcp_programs")[point.get("program", "none")]
        interface = phases.var("xdplab_dut_interface")
        server = phases.module(
            "xdplab.testbed.iperf3_server",
            {
                "state": "present",
                "cpus": phases.var("xdplab_iperf3_server_cpus"),
                "bind": phases.var("xdplab_dut_ip"),
                "port": phases.var("xdplab_iperf3_port"),
            },
        )
        program = {
            "system": trial["kind"],
            "xdp_program": tcp["program"],
            "count_mode": "driver",
            "iperf3_server": {"command": server.get("command"), "version": server.get("version", "")},
        }
        if tcp["program"] == "none":
            phases.module("xdplab.testbed.xdp_program", {"interface": interface, "state": "absent"})
        else:
            attached = phases.module(
                "xdplab.testbed.xdp_program",
                {
                    "interface": interface,
                    "state": "present",
                    "object": f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/xdp_bench.bpf.o",
                    "program": "xdp_bench_pass",
                    "mode": tcp["mode"],
                    "variables": {
                        "touch_mode": phases.var("__experiment_touch_modes")[tcp["touch"]],
                        "count_mode": phases.var("__experiment_count_modes")["driver"],
                    },
                },
            )
            program.update({k: attached[k] for k in phases.var("__experiment_xdp_program_keys", []) if k in attached})
        gen = phases.var("__experiment_gen")
        warmup = math.ceil(float(phases.var("experiment_warmup")))
        window = float(phases.var("experiment_interval")) * int(phases.var("experiment_samples"))
        phases.state["traffic"] = {
            "backend": "iperf3",
            # the trial's stop waits for the client to end by itself (iperf3 exits 1 after SIGINT, without receiver sums)
            "wait": True,
            "options": {
                "server": phases.var("xdplab_dut_ip"),
                "port": phases.var("xdplab_iperf3_port"),
                "streams": int(point.get("streams", 1)),
                "window": str(point.get("window", "default")),
                "cpus": phases.host_var(gen["host"], "xdplab_iperf3_client_cpus", gen.get("cpus")),
                # the client ends by itself after the DUT's window (so its JSON has the receiver's sums); its first
                # experiment_warmup seconds are left out of them (--omit), as they are of the DUT's window
                "omit": warmup,
                "time": math.ceil(window + float(phases.var("xdplab_iperf3_tail_s"))) + warmup,
            },
        }
        return program

    @staticmethod
    def measure(phases):
        # the DUT port's driver counters over the trial's window (ethtool -S): the packets it received (the
        # measurement's pps) and, where the driver has them, its page and cache counters; goodput and retransmits
        # come from the client (the generator's summary, the record's tcp section)
        return phases.module(
            "xdplab.testbed.ethtool_stats",
            {
                "devices": [phases.var("xdplab_dut_interface")],
                **phases.sampling(from_start=False, cpu_window=False),
                "changed_only": True,
            },
        )

    @staticmethod
    def teardown(phases):
        phases.module("xdplab.testbed.iperf3_server", {"state": "absent"})
        phases.module("xdplab.testbed.xdp_program", {"interface": phases.var("xdplab_dut_interface"), "state": "absent"})


# the kinds, each set up, measured and torn down in Python
PROVIDERS = {
    "xdp": XdpProvider,
    "linux": LinuxProvider,
    "tcp": TcpProvider,
    "latency_floor": LatencyFloorProvider,
    "forward": ForwardProvider,
}
# the userspace kinds (their forwarding entries with _kind_forward.py's forwarding process)
PROVIDERS.update(dpdk=_kind_dpdk.DpdkProvider, af_xdp=_kind_af_xdp.AfXdpProvider)
# issue 27: the DoS experiment's kind (TCP_RR under a UDP flood)
PROVIDERS.update(ddos=_kind_ddos.DdosProvider)
# issue 27: the load balancers (xdp_lb, IPVS)
PROVIDERS.update(lb=_kind_lb.LbProvider)


def provider_of(system):
    """The provider of a system entry's kind, or None (no entry, or a kind that is not one of PROVIDERS)."""
    return PROVIDERS.get((system or {}).get("impl"))


def _bool(value):
    """As Jinja's ``| bool`` in Ansible: yes/no, true/false, on/off, 1/0."""
    return boolean(value, strict=False)


def _mpps(pps):
    """The filter xdplab.testbed.mpps (Mpps rounded to 2 decimals); ``?`` for no number."""
    try:
        return lab_math.mpps(pps)
    except AnsibleFilterError:
        return "?"

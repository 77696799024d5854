"""The hardware inventory (inventories/lab) is accepted by the same playbooks.

There is no ConnectX-5 DUT or T-Rex generator here, so the check run lets this machine stand in for
both hosts (connection local): that exercises every play, the input validation and the role
bpf_programs in check mode, up to the first task that needs the hardware. Check mode measures nothing.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

# no_traffic: make test runs this file beside molecule's scenarios (pyproject.toml)
pytestmark = pytest.mark.no_traffic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))


def playbook(*args):
    return subprocess.run(
        [PLAYBOOK, "-i", "inventories/lab", "playbooks/paper_drop.yml", *args],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip


def test_syntax_check():
    res = playbook("--syntax-check")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.root
def test_check_mode_plans_the_paper_matrix(tmp_path):
    # no mlx5p1 and 2 CPUs instead of 6 here: the tuning and its drift check are the lab's own, and the host
    # preflight (which refuses exactly that, see test_preflight.py) is skipped to see the plan.
    # testbed_up.yml's plays (controller, tuning, bpf_programs, dut_software) are skipped: the same plays against
    # this inventory are planned by test_site_check_mode_plans_the_whole_testbed (site.yml imports testbed_up.yml),
    # and planning them twice was ~85 % of this run; the preflight, matrix and testbed_down plays still run here
    res = playbook("--check", "-e", "experiment_preflight=false", "-e", "ansible_connection=local",
                   "-e", "ansible_python_interpreter=" + sys.executable,
                   "-e", "experiment_results_dir=%s" % tmp_path, "-e", "xdplab_testbed_tuning=false",
                   "-e", "experiment_drift_check=false", "-e", "trex_check_pci=false", "-e", "trex_service=false",
                   "--skip-tags", "controller,tuning,bpf_programs,dut_software")  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    # planned and not run: xdp 6 cores x 2 touch modes, dpdk 2 variants x 5 cores, 4 other systems x 6 cores
    # (vars/paper_drop.yml), x 3 repetitions
    assert "138 trial(s) to run" in out
    assert "Record the trial" not in out
    # the generator backend trex is registered: no warning that a real run would stop at it
    assert "a real run would stop here" not in out
    assert not list(tmp_path.rglob("trials.jsonl"))


def test_a_real_run_refuses_an_unknown_backend_before_changing_anything(tmp_path):
    # the lab's own backend (trex) is known, so name one that is not (extra vars win over host_vars)
    res = playbook("-e", "ansible_connection=local", "-e", "ansible_python_interpreter=" + sys.executable,
                   "-e", "experiment_results_dir=%s" % tmp_path, "-e", "xdplab_generator_backend=pktgen")  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0
    assert re.search(r"tg: xdplab_generator_backend: '+pktgen'+ is not a backend of xdplab.testbed.traffic_generator", out)
    assert re.search(r"known: iperf3, trex, xdp_live", out)
    # it failed in the first play: no testbed play ran
    assert "Build the data-plane programs" not in out


def refused(title, step, tasks_from, variables, msg):
    """A task of TREX_RENDER: include the role's tasks_from with variables, expect it to fail and keep its message in
    {d}/<msg>.msg (the test reads it)."""
    lines = ["    - name: %s" % title, "      block:", "        - name: %s" % step,
             "          ansible.builtin.include_role:", "            name: xdplab.testbed.trex",
             "            tasks_from: %s" % tasks_from, "          vars:"]
    lines += ["            %s: %s" % kv for kv in variables.items()]
    lines += ["      rescue:", "        - name: Keep its message", "          ansible.builtin.copy:",
              '            content: "{{{{ ansible_failed_result.msg }}}}"', '            dest: "{d}/%s.msg"' % msg,
              '            mode: "0644"']
    return "\n".join(lines) + "\n"


TREX_RENDER = (
    """
- name: Render the lab generator's T-Rex configuration into a temporary directory
  hosts: tg
  gather_facts: false
  vars:
    trex_install: false
    trex_service: false
    trex_check_pci: false
    trex_install_root: {d}/opt
    trex_cfg_path: {d}/trex_cfg.yaml
    trex_systemd_dir: {d}
    trex_runner_path: {d}/bin/xdplab-trex-run
    trex_lib_dir: {d}/trex
  roles:
    - role: xdplab.testbed.trex
  tasks:
    - name: What the role adds to trex_packages for this release
      ansible.builtin.copy:
        content: "{{{{ __trex_packages | to_json }}}}"
        dest: "{d}/packages.json"
        mode: "0644"
"""
    + refused("Preflight with a trex_python that is Python 3.12", "Preflight again", "preflight",
              {"trex_python": "{d}/python3.12"}, "python3.12")
    + """    - name: What the role adds to trex_packages where the distribution's python3 answers 3.13 (Debian 13)
      ansible.builtin.copy:
        content: "{{{{ __trex_packages | to_json }}}}"
        dest: "{d}/packages-3.13.json"
        mode: "0644"
      vars:
        __trex_system_python_version: "3.13"
"""
    + refused("Preflight with a worker CPU beyond T-Rex's thread table", "Preflight again", "preflight",
              {"trex_threads": "[2, 3, 4, 5, 6, 120]"}, "cpu120")
    + """    - name: The ports' PCI checks on Mellanox ports with --no-ofed-check
      ansible.builtin.include_role:
        name: xdplab.testbed.trex
        tasks_from: preflight_pci
      vars:
        trex_check_pci: true
        __trex_pci_sysfs: {d}/pci
        trex_server_args: [--no-ofed-check]
"""
    + refused("The same ports without it (no MLNX_OFED here)", "PCI checks again", "preflight_pci",
              {"trex_check_pci": "true", "__trex_pci_sysfs": "{d}/pci"}, "ofed")
    + """    - name: The install phase's check on the unpacked release asks trex_python to import what its scripts import
      ansible.builtin.include_role:
        name: xdplab.testbed.trex
        tasks_from: install_check
"""
    + refused("The same with a Python that has no YAML module (no site-packages)", "Install check again", "install_check",
              {"trex_python": "{d}/python-nosite"}, "nosite")
)


def trex_cfg_problems(cfg, sync_port=4501, async_port=4500):
    """What T-Rex's own readers would refuse in a trex_cfg.yaml (trex-core v3.04): scripts/dpdk_setup_ports.py
    (load_config_file: version, interfaces even and at most 32, port_limit; pci_name_to_full_name: the PCI forms;
    ConfigCreator: the MAC form), src/platform_cfg.cpp (the keys read: zmq_rpc_port, zmq_pub_port, rx_thread_id or the
    older latency_thread_id) and src/trex_platform.cpp CPlatformSocketInfoConfig::init (the same number of threads in
    every dual_if, none defined twice, master and rx thread not a worker; on x86 socket < 4 and thread id < 120,
    src/trex_defs.h). master != latency is xdplab's own rule (the role's preflight), not T-Rex's."""
    problems = []
    if not (isinstance(cfg, list) and len(cfg) == 1 and isinstance(cfg[0], dict)):
        return ["not a list of one mapping"]
    c = cfg[0]
    ifs = c.get("interfaces") or []
    if int(c.get("version", 0)) < 2:
        problems.append("version < 2")
    if not ifs or len(ifs) % 2 or len(ifs) > 32:
        problems.append("interfaces: %d, not an even number up to 32" % len(ifs))
    full = re.compile(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}[.][0-9A-Fa-f]$")
    problems += ["interface %r: not a full PCI address or dummy" % i for i in ifs if i != "dummy" and not full.match(str(i))]
    limit = c.get("port_limit", len(ifs))
    if limit <= 0 or limit % 2 or limit > len(ifs):
        problems.append("port_limit %s: must be even, positive and at most the %d interfaces" % (limit, len(ifs)))
    mac = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
    for n, info in enumerate(c.get("port_info") or []):
        for key in ("dest_mac", "src_mac"):
            if key in info and not (isinstance(info[key], str) and mac.match(info[key])):
                problems.append("port_info[%d].%s %r is not a MAC string" % (n, key, info[key]))
    if len(c.get("port_info") or []) != len(ifs):
        problems.append("port_info has %d entries for %d interfaces" % (len(c.get("port_info") or []), len(ifs)))
    if (c.get("zmq_rpc_port"), c.get("zmq_pub_port")) != (sync_port, async_port):
        ports = (c.get("zmq_rpc_port"), c.get("zmq_pub_port"), sync_port, async_port)
        problems.append("zmq_rpc_port/zmq_pub_port %s/%s, the client uses %s/%s" % ports)
    plat = c.get("platform") or {}
    master, rx = plat.get("master_thread_id"), plat.get("rx_thread_id", plat.get("latency_thread_id"))
    dual = plat.get("dual_if") or []
    if master is None or rx is None or master == rx:
        problems.append("master_thread_id %s and latency/rx_thread_id %s must be set and differ" % (master, rx))
    if len(dual) != len(ifs) // 2:
        problems.append("%d dual_if entries for %d port pairs" % (len(dual), len(ifs) // 2))
    seen = {master, rx}
    if len({len(d.get("threads") or []) for d in dual}) > 1:
        problems.append("dual_if entries with different thread counts: %s" % [len(d.get("threads") or []) for d in dual])
    for n, d in enumerate(dual):
        threads = d.get("threads") or []
        if not 0 <= int(d.get("socket", -1)) < 4:
            problems.append("dual_if[%d] socket %s: T-Rex takes 0..3" % (n, d.get("socket")))
        if [t for t in threads + [master, rx] if t is not None and not 0 <= int(t) < 120]:
            problems.append("dual_if[%d] threads %s, master %s, rx %s: T-Rex takes CPU ids 0..119" % (n, threads, master, rx))
        if len(threads) < int(c.get("c", 1)):
            problems.append("dual_if[%d] has %d threads, c is %s" % (n, len(threads), c.get("c")))
        overlap = seen & set(threads)
        if overlap or len(set(threads)) != len(threads):
            problems.append("dual_if[%d] threads %s overlap master, latency or another pair: %s" % (n, threads, overlap))
        seen |= set(threads)
    return problems


@pytest.mark.root  # make integration runs the root-marked tests only; this one is cheap
def test_the_t_rex_cfg_rules_catch_what_t_rex_refuses():
    good = [{"version": 2, "port_limit": 2, "zmq_rpc_port": 4501, "zmq_pub_port": 4500, "c": 2,
             "interfaces": ["0000:03:00.0", "0000:03:00.1"],
             "port_info": [{"dest_mac": "ec:0d:9a:00:00:01", "src_mac": "ec:0d:9a:00:00:11"},
                           {"ip": "1.1.1.1", "default_gw": "1.1.1.2"}],
             "platform": {"master_thread_id": 0, "latency_thread_id": 1,
                          "dual_if": [{"socket": 0, "threads": [2, 3]}]}}]  # fmt: skip
    assert trex_cfg_problems(good) == []
    bad = json.loads(json.dumps(good))
    bad[0].update(interfaces=["03:00.0", "0000:03:00.1", "0000:03:00.2"], port_limit=3, zmq_rpc_port=None)
    bad[0]["platform"]["dual_if"][0]["threads"] = [1, 2]
    problems = trex_cfg_problems(bad)
    assert len(problems) == 6, problems
    # two pairs with 2 and 3 threads, one of them beyond T-Rex's CPU ids, the second pair on socket 4
    bad = json.loads(json.dumps(good))
    bad[0].update(interfaces=["0000:03:00.0", "0000:03:00.1", "0000:04:00.0", "0000:04:00.1"], port_limit=4)
    bad[0]["port_info"] *= 2
    bad[0]["platform"]["dual_if"].append({"socket": 4, "threads": [4, 5, 120]})
    problems = trex_cfg_problems(bad)
    assert len(problems) == 3 and "different thread counts" in problems[0], problems


@pytest.mark.root
def test_the_lab_generators_trex_cfg_renders_from_the_inventory(tmp_path):
    """inventories/lab/group_vars/generators/trex.yml + host_vars -> /etc/trex_cfg.yaml (rendered into tmp_path).

    trex_check_pci is off: this machine has no 0000:03:00.x devices (on the real generator preflight checks them).
    """
    import yaml

    play = tmp_path / "render.yml"
    play.write_text(TREX_RENDER.format(d=tmp_path))
    (tmp_path / "python3.12").write_text("#!/bin/sh\necho 3.12\n")
    (tmp_path / "python3.12").chmod(0o755)
    # a real interpreter without site-packages: no PyYAML, as on a generator without python3-yaml
    (tmp_path / "python-nosite").write_text('#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n')
    (tmp_path / "python-nosite").chmod(0o755)
    # the lab's two generator ports as sysfs shows a ConnectX (vendor 0x15b3, NUMA node 0): a fixture, no such NIC here
    for pci in ("0000:03:00.0", "0000:03:00.1"):
        (tmp_path / "pci" / pci).mkdir(parents=True)
        (tmp_path / "pci" / pci / "vendor").write_text("0x15b3\n")
        (tmp_path / "pci" / pci / "numa_node").write_text("0\n")
    binary = tmp_path / "opt" / "v3.04" / "t-rex-64"  # the unit's ExecStart, for systemd-analyze verify
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    # the release's bundled libraries: v3.04's external_libs as PyPI lbr-trex-client 3.4.0 carries them (identical
    # sources), so the install phase's import check meets v3.04's own PyYAML 3.11
    client = importlib.util.find_spec("lbr_trex_client")
    if client is not None:
        (binary.parent / "external_libs").symlink_to(os.path.join(os.path.dirname(client.origin), "external_libs"))
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/lab", str(play), "-e", "ansible_connection=local",
         "-e", "ansible_python_interpreter=" + sys.executable, "-e", "ansible_become=false"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    cfg = yaml.safe_load((tmp_path / "trex_cfg.yaml").read_text())
    assert cfg[0]["interfaces"] == ["0000:03:00.0", "0000:03:00.1"]
    assert cfg[0]["port_info"][0] == {"dest_mac": "ec:0d:9a:00:00:01", "src_mac": "ec:0d:9a:00:00:11"}
    assert cfg[0]["c"] == 6 and cfg[0]["platform"]["dual_if"] == [{"socket": 0, "threads": [2, 3, 4, 5, 6, 7]}]
    # issue 13 item 8: the server listens where the client and the health check look
    assert (cfg[0]["zmq_rpc_port"], cfg[0]["zmq_pub_port"]) == (4501, 4500)
    assert trex_cfg_problems(cfg) == []
    unit = (tmp_path / "trex.service").read_text().splitlines()
    # issue 13 item 1: a daemon (no keyboard polling of /dev/null, no stats panel), latency as HdrHistogram
    assert "ExecStart=%s -i --no-key --iom 0 --hdrh --cfg %s/trex_cfg.yaml" % (binary, tmp_path) in unit
    if shutil.which("systemd-analyze"):
        res = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "trex.service")], capture_output=True, text=True,
                             check=False, timeout=60)  # fmt: skip
        assert res.returncode == 0, res.stdout + res.stderr
    # the server's own scripts run on the interpreter preflight checked (find_python.sh takes $PYTHON3)
    assert "Environment=PYTHON3=/usr/bin/python3" in unit
    # issue 13 item 2: v3.04's dpdk_nic_bind.py imports distutils.util, its own package on Debian 12 (this machine's
    # python3 is 3.11); its bundled PyYAML 3.11 fails on Python >= 3.10, so the distribution's python3-yaml is added
    packages = json.loads((tmp_path / "packages.json").read_text())
    assert "python3-distutils" in packages and "python3-yaml" in packages
    # Debian 13 (python3 3.13) has no python3-distutils: not asked for there (apt would fail on it)
    packages = json.loads((tmp_path / "packages-3.13.json").read_text())
    assert "python3-distutils" not in packages and "python3-yaml" in packages
    # Mellanox ports without MLNX_OFED: t-rex-64 v3.04 would exit in its configuration step (check_ofed_version)
    if not os.path.exists("/usr/bin/ofed_info"):
        message = " ".join((tmp_path / "ofed.msg").read_text().split())
        assert "include Mellanox (vendor 0x15b3) ports, and t-rex-64 then requires MLNX_OFED 5.2 or newer" in message, message
        assert "add --no-ofed-check to trex_server_args" in message
    # a CPU id T-Rex's thread table has no slot for (src/trex_platform.h: MAX_THREADS_SUPPORTED 120 on x86)
    assert "T-Rex (x86) takes CPU ids 0..119" in " ".join((tmp_path / "cpu120.msg").read_text().split())
    # and a trex_python without the distribution's PyYAML is refused after the unpack, with Python's own message and
    # what to install: v3.04's bundled PyYAML 3.11 itself fails on Python 3.11 (as its dpdk_setup_ports.py would)
    message = " ".join((tmp_path / "nosite.msg").read_text().split())
    if client is not None:
        assert "they fail: AttributeError: module 'collections' has no attribute 'Hashable'" in message, message
    else:
        assert "they fail: ModuleNotFoundError: No module named 'yaml'" in message, message
    assert "install python3-yaml" in message
    # issue 13 item 5: a Python the release's client does not import on is refused in preflight, naming what works
    message = " ".join((tmp_path / "python3.12.msg").read_text().split())
    assert message.startswith("tg: trex_python=%s/python3.12 is Python 3.12; " % tmp_path)
    assert "T-Rex v3.04's client imports on Python 3.11 at most" in message
    assert "pin trex_version v3.08 for Python 3.12" in message


@pytest.mark.root
def test_site_check_mode_plans_the_whole_testbed():
    """site.yml --check against the lab: kernel, T-Rex, bpf programs, DPDK planned in order.

    This machine stands in for both hosts, so what needs the lab's hardware is switched off and
    said so: T-Rex's PCI check (no 0000:03:00.x here), its systemd unit (no systemd as PID 1), and the
    tuning and drift-check phases (no mlx5p1, 2 CPUs instead of 6).
    """
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/lab", "playbooks/site.yml", "--check", "-e", "ansible_connection=local",
         "-e", "ansible_python_interpreter=" + sys.executable, "-e", "trex_check_pci=false", "-e", "trex_service=false",
         "--skip-tags", "tuning,drift_check"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    # the phases ran in order, planning only
    order = [out.find(s) for s in ("Kernel from bpf-next", "T-Rex on the generators", "Build the data-plane programs",
                                   "Software the DUTs")]  # fmt: skip
    assert -1 not in order and order == sorted(order), order
    flat = " ".join(out.split())
    assert "would clone or update git://git.kernel.org/pub/scm/linux/kernel/git/bpf/bpf-next.git at 75d4e704fa8d" in flat
    assert "WARNING: trex_archive_sha256 is empty" in out

"""Bad input to the experiment gets a clear error before anything on the system changes."""

import json
import os
import shutil
import subprocess
import sys

import pytest

# no_traffic: make test runs this file beside molecule's scenarios (pyproject.toml)
pytestmark = pytest.mark.no_traffic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))


def namespaces():
    """The namespaces inventories/vlab would create (other tests may make their own meanwhile)."""
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return {n["name"] for n in json.loads(out or "[]") if n["name"].startswith("xdplab-")}


def run_paper_drop(extra, tmp_path, results=None):
    before = namespaces()
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/vlab", "playbooks/paper_drop.yml", "-e", json.dumps(extra),
         "-e", "experiment_results_dir=%s" % (results or tmp_path)],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-2000:]
    # stopped in the first play: no lab was built, no host tuned, no hugepage reserved, nothing recorded
    assert "Build the virtual lab" not in out and "Tune the DUTs" not in out and "Software the DUTs" not in out
    assert "Read the hosts (read-only preflight)" not in out
    assert namespaces() == before
    assert not list(tmp_path.rglob("*.jsonl"))
    return out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"paper_drop_cores": [1, 3]}, "dut: cores: the matrix runs up to 3 cores, but xdplab_dut_cpus lists 1 CPU(s) ([1])"),
        ({"paper_drop_cores": [0]}, "cores: 0 is below 1; cores = stream_count of a trial, one flow per DUT core"),
        ({"paper_drop_cores": ["two"]}, "cores: 'two' is not a whole number; cores = stream_count of a trial"),
        ({"paper_drop_repetitions": 0}, "experiment_repetitions: 0 is below 1"),
        ({"paper_drop_packet_len": [32]}, "packet_len: 32 is below 64; Ethernet frame sizes, 64 to 1518"),
        ({"paper_drop_touch": ["lick"]}, "touch: 'lick' is not one of no_touch, read, swapmac"),
        ({"paper_drop_systems": ["vpp"]}, "system: 'vpp' is not one of xdp, dpdk_vector, dpdk_scalar"),
        (
            {"paper_drop_systems": ["af_xdp_zerocopy"]},
            "dut: system: af_xdp_zerocopy: veth (the virtual lab's DUT port) has no AF_XDP zero-copy",
        ),
        ({"xdplab_dut_cpus": []}, "dut: xdplab_dut_cpus: is empty; list the CPUs that receive traffic"),
        # the type comes from the role's argument spec (entry point validate), which names the option
        ({"xdplab_dut_cpus": ["one"]}, "option 'xdplab_dut_cpus'"),
        ({"xdplab_dut_cpus": [1, 1]}, "dut: xdplab_dut_cpus: CPU 1 is listed twice"),
        ({"xdplab_dut_mac": "02:58:44:50:00"}, "dut: xdplab_dut_mac: '02:58:44:50:00' is not a MAC address (six hex octets"),
        ({"xdplab_dut_mac": "03:58:44:50:00:02"}, "dut: xdplab_dut_mac: 03:58:44:50:00:02 is a multicast MAC address"),
        ({"xdplab_dut_ip": "198.18.0.256"}, "dut: xdplab_dut_ip: '198.18.0.256' is not an IPv4 address"),
        ({"xdplab_generator_ip": "198.18.0.1/30"}, "tg: xdplab_generator_ip: '198.18.0.1/30' is not an IPv4 address"),
        ({"xdplab_generator_cpus": ["x"]}, "tg: xdplab_generator_cpus: 'x' is not a CPU number"),
        (
            {"xdplab_generator_host": "tgx"},
            'dut: xdplab_generator_host: "tgx" is not a host of the group generators (generators: tg)',
        ),
        # issue 26 item 6: every numeric option's range
        ({"experiment_warmup": -1}, "experiment_warmup: -1.0 is below 0; seconds the generator runs before the first sample"),
        ({"experiment_interval": 0}, "experiment_interval: 0.0 must be above 0; seconds between two samples"),
        ({"experiment_samples": 0}, "experiment_samples: 0 is below 1; samples per window"),
        ({"experiment_generator_slack": -1}, "experiment_generator_slack: -1.0 is below 0"),
        ({"experiment_window_lead": 0}, "experiment_window_lead: 0.0 must be above 0"),
        ({"experiment_kept_up_share": 1.5}, "experiment_kept_up_share: 1.5 is above 1"),
        ({"experiment_latency_max_pps": 0}, "experiment_latency_max_pps: 0 is below 1"),
        (
            {"experiment_matrix": {"system": ["xdp"], "cores": [1], "packet_len": [64], "offered_mpps": [-2]}},
            "offered_mpps: -2.0 is below 0; offered loads in Mpps",
        ),
        (
            {"experiment_matrix": {"system": ["xdp"], "cores": [1], "packet_len": [64], "offered_mpps": [20]},
             "experiment_link_speed_gbit": 10},
            "offered_mpps: 20 is above the line rate of a 10 Gbit/s link (experiment_link_speed_gbit) at 64-byte frames",
        ),
        # addresses, MACs and ports distinct across the link
        ({"xdplab_generator_ip": "198.18.0.2"}, "tg: xdplab_generator_ip: 198.18.0.2 is also dut's xdplab_dut_ip; every end"),
        (
            {"xdplab_generator_mac": "02:58:44:50:00:02"},
            "tg: xdplab_generator_mac: 02:58:44:50:00:02 is also dut's xdplab_dut_mac; every end of the links",
        ),
        ({"xdplab_generator_rx_ip": "198.18.0.6"}, "tg: xdplab_generator_rx_ip: 198.18.0.6 is also dut's xdplab_dut_egress_ip"),
        (
            {"xdplab_dut_egress_interface": "veth-dut0"},
            "dut: xdplab_dut_egress_interface: veth-dut0 is also dut's xdplab_dut_interface; the two ports",
        ),
        # the CPU roles disjoint (the DUT starts at CPU 1 in every layout of the virtual lab)
        ({"xdplab_housekeeping_cpus": [1]}, "dut: xdplab_housekeeping_cpus: [1] overlaps dut's xdplab_dut_cpus"),
        ({"xdplab_generator_cpus": [1]}, "tg: xdplab_generator_cpus: [1] overlaps dut's xdplab_dut_cpus"),
    ],
)  # fmt: skip
def test_bad_matrix_is_refused_before_the_lab_is_built(extra, message, tmp_path):
    assert message in run_paper_drop(extra, tmp_path)


def test_a_results_dir_that_is_a_file_is_refused_in_the_first_play(tmp_path):
    afile = tmp_path / "results"
    afile.write_text("not a directory")
    out = run_paper_drop({}, tmp_path, results=afile)
    assert (
        "experiment_results_dir: %s is not a directory and cannot be created: %s is a file; give a directory for the "
        "records (or set XDPLAB_RESULTS_DIR)" % (afile, afile)
    ) in out
    assert afile.read_text() == "not a directory"


def test_every_wrong_field_at_once(tmp_path):
    extra = {"xdplab_dut_mac": "zz", "xdplab_dut_ip": "1.2.3", "paper_drop_touch": ["lick"], "paper_drop_repetitions": 0}
    out = run_paper_drop(extra, tmp_path)
    assert "4 input error(s), nothing was changed" in out
    for field in ("dut: xdplab_dut_mac: 'zz'", "dut: xdplab_dut_ip: '1.2.3'", "touch: 'lick'", "experiment_repetitions: 0"):
        assert field in out


def test_ndr_pdr_search_on_trex_is_refused_before_any_trial(tmp_path):
    """inventories/lab's generator is T-Rex, whose summary has no egress.refused (the search's loss): the search stops
    in its first play, with the reason, before the hosts are read (the lab's hosts are placeholders) or a trial runs."""
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/lab", "playbooks/ndr_pdr.yml", "-e", "experiment_results_dir=%s" % tmp_path],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split()).replace("''", "'")
    assert res.returncode != 0, out[-2000:]
    assert "ndr_pdr on tg: an NDR/PDR search needs a generator that counts the frames the DUT refused; backend trex" in out
    assert "T-Rex's summary has no egress.refused" in out and "Run the search on a backend that does (xdp_live)" in out
    assert "Read the hosts" not in out and "UNREACHABLE" not in out
    assert not list(tmp_path.rglob("*.jsonl"))


def test_two_duts_of_one_generator_with_one_address_are_refused_in_the_first_play(tmp_path):
    """inventories/vlab_two_duts with dut2 given dut1's address and dut1's port MAC: both DUTs stop in the first play
    (the input checks, before the hosts are read), each error naming the host, the field and the value."""
    inventory = tmp_path / "vlab_two_duts"
    shutil.copytree(os.path.join(ROOT, "inventories", "vlab_two_duts"), inventory)
    dut2 = inventory / "host_vars" / "dut2.yml"
    text = dut2.read_text()
    assert "xdplab_dut_ip: 198.18.2.2" in text and 'mac: "02:58:44:50:02:01"' in text
    dut2.write_text(text.replace("xdplab_dut_ip: 198.18.2.2", "xdplab_dut_ip: 198.18.1.2")
                    .replace('mac: "02:58:44:50:02:01"', 'mac: "02:58:44:50:01:01"'))  # fmt: skip
    before = namespaces()
    # --tags never_any: only the always-tagged plays (the checks), so a missed refusal changes nothing either
    res = subprocess.run(
        [PLAYBOOK, "-i", str(inventory), "playbooks/paper_drop.yml", "--tags", "never_any",
         "-e", "experiment_results_dir=%s" % (tmp_path / "results")],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-2000:]
    assert "fatal: [dut1]" in out and "fatal: [dut2]" in out, out[-3000:]
    assert "2 input error(s), nothing was changed" in out
    assert "dut2: xdplab_dut_ip: 198.18.1.2 is also dut1's xdplab_dut_ip; every end of the links" in out
    assert "dut2: xdplab_dut_generator.mac: 02:58:44:50:01:01 is also dut1's xdplab_dut_generator.mac" in out
    assert "Read the hosts (read-only preflight)" not in out and namespaces() == before


@pytest.mark.parametrize(
    ("loads", "message"),
    [
        ([0.0001, 2], "offered_mpps: latency loads [2000000.0] pps are above the stamping generator's ceiling "
                      "experiment_latency_max_pps=1000000 pps"),
        ([0, 0.5], "offered_mpps: latency loads [0.0] pps are 0 or less (unpaced): a latency trial needs a paced rate"),
    ],
    ids=["above-the-ceiling", "unpaced"],
)  # fmt: skip
def test_latency_loads_are_refused_in_the_first_play(loads, message, tmp_path):
    # --tags never_any: only the always-tagged plays (the checks), so a missed refusal changes nothing either
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/vlab", "playbooks/paper_latency.yml", "--tags", "never_any",
         "-e", json.dumps({"paper_latency_loads_mpps": loads}), "-e", "experiment_results_dir=%s" % tmp_path],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-2000:]
    assert "1 input error(s), nothing was changed" in out and message in out, out[-2000:]
    assert "Read the hosts (read-only preflight)" not in out and not list(tmp_path.iterdir())


# the routing experiment (issue 27): its input refused in the first play, before the lab or a route changes
def run_paper_routing(extra, tmp_path):
    before = namespaces()
    base = {"experiment_routing_table_limit": 1000}
    res = subprocess.run(
        [PLAYBOOK, "-i", "inventories/vlab", "playbooks/paper_routing.yml", "-e", json.dumps(dict(base, **extra)),
         "-e", "experiment_results_dir=%s" % tmp_path],
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    out = " ".join((res.stdout + res.stderr).split()).replace("''", "'")
    assert res.returncode != 0, out[-2000:]
    assert "Build the virtual lab" not in out and "Tune the DUTs" not in out
    assert namespaces() == before
    assert not list(tmp_path.rglob("*.jsonl"))
    return out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"paper_routing_tables": ["huge"]}, "table: ['huge'] is not one of none, single, full"),
        ({"paper_routing_destinations": -1}, "destinations: [-1]: give whole numbers from 1 to 65536"),
        ({"paper_routing_systems": ["xdp_tx"]}, 'system: xdp_tx does not route (forward "xdp_tx")'),
        ({"paper_routing_systems": ["xdp_forward"]},
         "xdp_forward: xdp-forward is not installed on dut (xdp-tools 1.4 or newer; Debian 12's xdp-tools 1.3.1 has no "
         "xdp-forward): install it or leave the system out of the matrix"),
        ({"experiment_matrix": [{"system": ["xdp_router"], "table": ["single"], "cores": [1], "packet_len": [1600],
                                 "destinations": [10]}]},
         "dut: packet_len: [1600]: the IPv4 packet (packet_len - 18 bytes of Ethernet header and FCS) is over the DUT's "
         "MTU 1500 (xdplab_dut_mtu)"),
    ],
)  # fmt: skip
def test_bad_routing_input_is_refused_before_any_change(extra, message, tmp_path):
    assert message in run_paper_routing(extra, tmp_path)


def test_a_prefix_that_does_not_parse_is_named_before_any_change(tmp_path):
    table = tmp_path / "table.txt"
    table.write_text("1.0.0.0/24\n1.0.4.0/22\n1.0.5.1/24\n")
    out = run_paper_routing({"experiment_routing_table_file": str(table)}, tmp_path)
    assert (
        "experiment_routing_table_file: the prefix file has lines that are not IPv4 prefixes; fix or remove them "
        f"(nothing was changed): {table} line 3: '1.0.5.1/24': host bits set (the prefix is 1.0.5.0/24)"
    ) in out

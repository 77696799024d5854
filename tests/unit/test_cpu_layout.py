"""The virtual lab sized to its host (issue 28): plugins/module_utils/_cpu_layout.py and the cpu_layout filter."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.cpu_layout import cpu_layout
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpu_layout as L

ROLES = ("housekeeping", "dut", "generator", "generator_rx", "nic")


def covers_every_queue(layout):
    queues = len(layout["dut"])
    return {c % queues for c in layout["generator"]} == set(range(queues))


def test_two_cpus_keep_the_historical_layout():
    lay = L.plan([0, 1])
    assert (lay["dut"], lay["generator"], lay["housekeeping"]) == ([1], [0], [0])
    assert lay["generator_rx"] == [] and lay["nic"] == []
    assert any("CPU 0 is shared by housekeeping" in s and "generator's senders" in s for s in lay["shared"])
    assert any("DPDK and AF_XDP pay for the NIC" in s for s in lay["shared"])
    assert any("receives returning traffic on its sender CPUs" in s for s in lay["shared"])


@pytest.mark.parametrize(
    "n, dut, generator, rx, nic",
    [
        (4, [1], [2], [3], []),
        (8, [1, 2, 3], [4, 5, 6], [7], []),
        (16, [1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12], [13, 14], [15]),
        (64, list(range(1, 7)), list(range(7, 13)), list(range(13, 19)), list(range(19, 25))),
    ],
)
def test_bigger_hosts_give_every_role_cpus_of_its_own(n, dut, generator, rx, nic):
    lay = L.plan(list(range(n)))
    assert (lay["dut"], lay["generator"], lay["generator_rx"], lay["nic"]) == (dut, generator, rx, nic)
    assert lay["housekeeping"][0] == 0
    used = [c for role in ROLES for c in lay[role]]
    assert sorted(used) == list(range(n)), "every CPU has exactly one role"
    assert covers_every_queue(lay)
    assert len(lay["dut"]) <= L.PAPER_MAX_DUT_CPUS
    # 64 CPUs: the leftovers go to housekeeping, nothing is shared
    if n >= 16:
        assert lay["shared"] == []


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 12, 13, 16, 24, 32, 64])
def test_the_cpu_modulo_queues_rule_holds_on_every_size(n):
    lay = L.plan(list(range(n)))
    assert covers_every_queue(lay)
    assert not set(lay["dut"]) & (set(lay["generator"]) | set(lay["housekeeping"]) | set(lay["generator_rx"]))
    assert not set(lay["dut"]) & set(lay["nic"])


def test_offline_holes_and_the_kernel_list_text():
    # CPUs 2 and 3 offline: the plan uses what is online, generator CPUs still cover every residue
    lay = L.plan("0-1,4-9")
    assert lay["online"] == "0-1,4-9"
    assert not {2, 3} & {c for role in ROLES for c in lay[role]}
    assert covers_every_queue(lay)


def test_a_given_dut_plans_the_rest_around_it():
    lay = L.plan(list(range(16)), {"dut": [2, 3, 4, 5]})
    assert lay["dut"] == [2, 3, 4, 5]
    assert lay["housekeeping"][0] == 0
    assert len(lay["generator"]) == 4 and covers_every_queue(lay)
    assert lay["request"] == "given: dut"


def test_max_dut_cpus_caps_the_dut():
    lay = L.plan(list(range(16)), {"max_dut_cpus": 2})
    assert lay["dut"] == [1, 2] and lay["generator"] == [3, 4]


@pytest.mark.parametrize(
    "request_, words",
    [
        ({"dut": [1, 2], "generator": [2, 3]}, "dut and generator overlap on CPU 2"),
        ({"dut": [0, 1], "housekeeping": [0]}, "dut and housekeeping overlap on CPU 0"),
        ({"generator": [4], "housekeeping": [4]}, "generator and housekeeping overlap on CPU 4"),
        ({"dut": [1], "generator_rx": [1]}, "generator_rx and dut overlap on CPU 1"),
        ({"dut": [1], "nic": [1]}, "nic and dut overlap on CPU 1"),
        ({"dut": [1, 40]}, "xdplab_cpu_layout.dut: CPU 40 is not online on this host (online: 0-7)"),
        ({"dut": "3-1"}, "xdplab_cpu_layout.dut:"),
        ({"dut": [1, 1]}, "names a CPU twice"),
        ({"cores": 4}, "unknown key(s) cores"),
        ({"max_dut_cpus": 0}, "max_dut_cpus: 0 must be a whole number >= 1"),
        ("four", "must be 'auto' or a mapping"),
        ({"dut": [1, 2], "generator": [3, 5]}, "CPUs 3,5 reach no DUT queue 0"),
    ],
)
def test_bad_layouts_name_the_field_and_the_value(request_, words):
    with pytest.raises(L.LayoutError) as err:
        L.plan(list(range(8)), request_)
    assert words in str(err.value)


def test_auto_needs_two_cpus():
    with pytest.raises(L.LayoutError, match=r"auto needs at least 2 online CPUs.*this host has 1 \(0\)"):
        L.plan([0])


def test_generator_and_housekeeping_may_share_on_two_cpus_only():
    lay = L.plan([0, 1], {"dut": [1], "generator": [0], "housekeeping": [0]})
    assert lay["generator"] == [0] == lay["housekeeping"]
    with pytest.raises(L.LayoutError, match="generator and housekeeping overlap"):
        L.plan([0, 1, 2], {"dut": [1], "generator": [0], "housekeeping": [0]})


def test_summary_line():
    assert L.summary(L.plan(list(range(16)))) == (
        "housekeeping 0; dut 1-6; generator 7-12; generator_rx 13-14; nic 15"
    )
    assert L.summary(L.plan([0, 1])) == "housekeeping 0; dut 1; generator 0; generator_rx -; nic -"


def test_the_filter_reads_this_host_and_wraps_errors():
    lay = cpu_layout("auto", "0-3")
    assert lay["dut"] == [1] and lay["generator_rx"] == [3]
    here = cpu_layout()
    assert here["dut"] and covers_every_queue(here)
    with pytest.raises(AnsibleFilterError, match="cpu_layout: xdplab_cpu_layout: auto needs at least 2"):
        cpu_layout("auto", [0])

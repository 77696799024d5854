"""Several DUTs from one controller (plugins/filter/experiment.py): the rounds of trials and the generator ports."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.experiment import (
    experiment_schedule,
    experiment_trials,
    generator_port_conflicts,
)

MATRIX = {"system": ["xdp"], "action": ["drop"], "touch": ["no_touch", "read"], "packet_len": [64], "cores": [1]}


def pending(dut, repetitions=1):
    return experiment_trials(MATRIX, repetitions, identity={"dut": dut, "interface": "veth-" + dut})


def rounds_of(schedule, dut):
    return sorted(int(r) for r in schedule["duts"][dut])


def test_duts_sharing_a_generator_never_share_a_round_and_take_turns():
    duts = {d: {"generator": "tg", "pending": pending(d)} for d in ("dut1", "dut2")}
    s = experiment_schedule(duts)
    assert s["rounds"] == 4
    assert s["lanes"] == {"tg": ["dut1", "dut2"]}
    assert rounds_of(s, "dut1") == [0, 2] and rounds_of(s, "dut2") == [1, 3]
    # each DUT runs its own trials, in its own order
    assert [s["duts"]["dut1"][r]["trial_id"] for r in ("0", "2")] == [t["trial_id"] for t in duts["dut1"]["pending"]]


def test_duts_with_their_own_generators_share_every_round():
    duts = {"dut1": {"generator": "tg1", "pending": pending("dut1")}, "dut2": {"generator": "tg2", "pending": pending("dut2")}}
    s = experiment_schedule(duts)
    assert s["rounds"] == 2
    assert rounds_of(s, "dut1") == rounds_of(s, "dut2") == [0, 1]


def test_serial_puts_every_dut_in_one_lane():
    duts = {"dut1": {"generator": "tg1", "pending": pending("dut1")}, "dut2": {"generator": "tg2", "pending": pending("dut2")}}
    s = experiment_schedule(duts, "serial")
    assert s["rounds"] == 4
    assert not set(s["duts"]["dut1"]) & set(s["duts"]["dut2"])


def test_a_mixed_lab_and_uneven_work():
    duts = {
        "dut1": {"generator": "tg", "pending": pending("dut1", 2)},  # 4 trials
        "dut2": {"generator": "tg", "pending": []},  # all done already (resume)
        "dut3": {"generator": "tg3", "pending": pending("dut3")},  # 2 trials
    }
    s = experiment_schedule(duts)
    assert s["rounds"] == 4
    assert rounds_of(s, "dut1") == [0, 1, 2, 3] and s["duts"]["dut2"] == {} and rounds_of(s, "dut3") == [0, 1]


def test_bad_input_is_refused():
    with pytest.raises(AnsibleFilterError, match="mode must be one of generator, serial"):
        experiment_schedule({}, "parallel")
    with pytest.raises(AnsibleFilterError, match="dut1: needs"):
        experiment_schedule({"dut1": {"generator": "tg"}})


TREX = {"ports": ["0000:03:00.0", "0000:03:00.1", "0000:04:00.0", "0000:04:00.1"]}


def trex(interface, **options):
    return {"host": "tg", "backend": "trex", "interface": interface, "options": dict(TREX, **options)}


def test_two_duts_claiming_one_trex_port_are_named_both():
    errors = generator_port_conflicts({"i40e": trex("0000:03:00.0"), "cx6": trex("0000:04:00.0", port=0)})
    assert errors == [
        "cx6 (port 0 (sends)) and i40e (0000:03:00.0 (sends)) claim the same port 0 of generator tg: give each DUT its "
        "own port (xdplab_dut_generator.interface, or with T-Rex options.port / options.rx_ports)"
    ]


def test_a_receive_port_counts_as_claimed():
    errors = generator_port_conflicts({"i40e": trex("0000:03:00.0", rx_ports=[1]), "cx6": trex("0000:03:00.1")})
    assert len(errors) == 1 and "claim the same port 1 of generator tg" in errors[0]
    assert "cx6 (0000:03:00.1 (sends))" in errors[0] and "i40e (port 1 (receives))" in errors[0]


def test_disjoint_ports_and_other_generators_are_fine():
    assert generator_port_conflicts({"i40e": trex("0000:03:00.0", rx_ports=[1]), "cx6": trex("0000:04:00.0", rx_ports=[3])}) == []
    same_name_other_host = {"host": "tg2", "backend": "xdp_live", "interface": "veth-tg1"}
    assert generator_port_conflicts({"dut1": {"host": "tg", "backend": "xdp_live", "interface": "veth-tg1"},
                                     "dut2": same_name_other_host}) == []  # fmt: skip


def test_two_duts_on_one_veth_end_are_refused():
    errors = generator_port_conflicts(
        {d: {"host": "tg", "backend": "xdp_live", "interface": "veth-tg1"} for d in ("dut1", "dut2")}
    )
    assert errors and errors[0].startswith("dut1 (veth-tg1) and dut2 (veth-tg1) claim the same port veth-tg1 of generator tg")

"""The experiment matrix, resume and the trial loss verdict (plugins/filter/experiment.py)."""

import json

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.experiment import (
    done_trial_ids,
    experiment_trials,
    trial_id,
    trial_loss,
)

MATRIX = {"system": ["xdp"], "action": ["drop"], "touch": ["no_touch", "read"], "packet_len": [64], "cores": [1, 2]}
IDENTITY = {"dut": "dut", "interface": "veth-dut0", "kernel_release": "6.18.44"}


def test_matrix_expands_every_point_and_repetition_in_order():
    trials = experiment_trials(MATRIX, 3, identity=IDENTITY)
    assert len(trials) == 2 * 2 * 3
    assert [t["index"] for t in trials] == list(range(1, 13))
    assert all(t["total"] == 12 for t in trials)
    # repetitions innermost, then the last axis
    assert [(t["point"]["touch"], t["point"]["cores"], t["repetition"]) for t in trials[:4]] == [
        ("no_touch", 1, 1), ("no_touch", 1, 2), ("no_touch", 1, 3), ("no_touch", 2, 1),
    ]  # fmt: skip
    assert len({t["trial_id"] for t in trials}) == 12


def test_resume_skips_recorded_trials_from_results_text():
    trials = experiment_trials(MATRIX, 2, identity=IDENTITY)
    text = "\n".join(json.dumps({"trial_id": t["trial_id"], "status": "ok"}) for t in trials[:3])
    text += "\n{cut by a crash\n"
    pending = experiment_trials(MATRIX, 2, done=text, identity=IDENTITY)
    assert [t["trial_id"] for t in pending] == [t["trial_id"] for t in trials[3:]]
    assert pending[0]["index"] == 4


def test_trial_identity_includes_the_dut():
    other_kernel = dict(IDENTITY, kernel_release="6.19.0")
    assert trial_id({"cores": 1}, 1, IDENTITY) != trial_id({"cores": 1}, 1, other_kernel)
    assert trial_id({"cores": 1}, 1, IDENTITY) == trial_id({"cores": 1}, 1, dict(IDENTITY))


def test_failed_records_are_not_done():
    text = json.dumps({"trial_id": "a", "status": "failed"}) + "\n" + json.dumps({"trial_id": "b"})
    assert done_trial_ids(text) == ["b"]


def test_exclude_drops_points():
    trials = experiment_trials(MATRIX, 1, exclude=[{"touch": "read", "cores": 2}])
    assert {(t["point"]["touch"], t["point"]["cores"]) for t in trials} == {("no_touch", 1), ("no_touch", 2), ("read", 1)}


@pytest.mark.parametrize(
    ("matrix", "reps", "message"),
    [
        ({}, 1, "non-empty mapping"),
        ({"cores": []}, 1, "non-empty list"),
        ({"cores": 3}, 1, "non-empty list"),
        (MATRIX, 0, "at least 1"),
        (MATRIX, "three", "whole number"),
    ],
)
def test_bad_matrix_is_refused(matrix, reps, message):
    with pytest.raises(AnsibleFilterError, match=message):
        experiment_trials(matrix, reps)


def test_loss_generator_limited_when_dut_counts_everything():
    verdict = trial_loss(5_990_000, {"offered_pps": 6_000_000, "elapsed_s": 10, "egress": {"refused": 0}})
    assert verdict["limit"] == "generator"
    assert verdict["pct"] == pytest.approx(0.167, abs=1e-3)
    assert verdict["where"].startswith("nowhere")


def test_loss_dut_limited_and_located_at_the_full_ring():
    # 6.2 Mpps offered, 5.9 Mpps dropped by XDP, 0.3 Mpps refused by the veth (ring full)
    verdict = trial_loss(5_900_000, {"offered_pps": 6_200_000, "elapsed_s": 10, "egress": {"refused": 3_000_000}})
    assert verdict["limit"] == "dut"
    assert verdict["lost_pps"] == pytest.approx(300_000)
    assert verdict["refused_pps"] == pytest.approx(300_000)
    assert "ring full" in verdict["where"]
    assert verdict["lost_at"] == "dut_rx_ring"


def test_loss_dut_limited_elsewhere_when_egress_unknown():
    verdict = trial_loss(20e6, {"offered_pps": 25e6, "elapsed_s": 10, "egress": {"refused": None}})
    assert verdict["limit"] == "dut"
    assert verdict["refused_pps"] is None
    assert "between the generator" in verdict["where"]


def test_loss_needs_a_summary():
    with pytest.raises(AnsibleFilterError, match="offered_pps"):
        trial_loss(1, {})


def intervals(start, rates):
    """Per-second generator records ending at start+1, start+2, ..."""
    return [{"mono": start + i + 1, "interval_s": 1.0, "sent": r} for i, r in enumerate(rates)]


def test_offered_load_is_cut_to_the_measurement_window():
    # ramp-up second at 1 Mpps, then 6 Mpps; the window covers seconds 2..4 only
    summary = {"offered_pps": 4.0e6, "elapsed_s": 5, "egress": {"refused": 0},
               "intervals": intervals(100.0, [1e6, 6e6, 6e6, 6e6, 1e6])}  # fmt: skip
    verdict = trial_loss(5.95e6, summary, window={"start": 101.0, "end": 104.0})
    assert verdict["offered_basis"] == "window"
    assert verdict["offered_pps"] == pytest.approx(6e6)
    assert verdict["limit"] == "generator"
    # the whole-run average would have hidden that the DUT kept up
    assert trial_loss(5.95e6, dict(summary, intervals=[]))["offered_basis"] == "run"


def test_partial_overlap_is_weighted():
    summary = {"offered_pps": 0, "intervals": intervals(0.0, [2e6, 4e6])}
    verdict = trial_loss(3e6, summary, window={"start": 0.5, "end": 1.5})
    assert verdict["offered_pps"] == pytest.approx(3e6)


def test_records_from_another_clock_fall_back_to_the_run():
    summary = {"offered_pps": 5e6, "intervals": intervals(5000.0, [5e6, 5e6])}
    verdict = trial_loss(4e6, summary, window={"start": 10.0, "end": 12.0})
    assert verdict["offered_basis"] == "run"
    assert verdict["offered_pps"] == 5e6


def test_malformed_generator_records_are_a_filter_error():
    summary = {"offered_pps": 1e6, "intervals": [{"mono": 2.0, "interval_s": 1.0}]}
    with pytest.raises(AnsibleFilterError, match="malformed"):
        trial_loss(1e6, summary, window={"start": 1.0, "end": 2.0})


def test_exclude_must_be_partial_points():
    with pytest.raises(AnsibleFilterError, match="exclude must be a list of partial points"):
        experiment_trials(MATRIX, 1, exclude=["touch=read"])


def test_done_trial_ids_wants_text():
    with pytest.raises(AnsibleFilterError, match="JSON-lines"):
        done_trial_ids(["a", "b"])


def test_a_list_of_sub_matrices_joins_their_points_once():
    from ansible_collections.xdplab.testbed.plugins.filter.experiment import matrix_axis

    matrix = [
        {"system": ["xdp"], "touch": ["no_touch", "read"], "cores": [1, 2]},
        {"system": ["dpdk_vector", "linux_raw"], "touch": ["no_touch"], "cores": [1, 2]},
        {"system": ["xdp"], "touch": ["no_touch"], "cores": [1]},  # already measured above
    ]
    trials = experiment_trials(matrix, 1)
    points = [(t["point"]["system"], t["point"]["touch"], t["point"]["cores"]) for t in trials]
    assert points == [
        ("xdp", "no_touch", 1), ("xdp", "no_touch", 2), ("xdp", "read", 1), ("xdp", "read", 2),
        ("dpdk_vector", "no_touch", 1), ("dpdk_vector", "no_touch", 2),
        ("linux_raw", "no_touch", 1), ("linux_raw", "no_touch", 2),
    ]
    assert {t["total"] for t in trials} == {8}
    # a single mapping and a one-element list are the same matrix, with the same trial ids
    assert experiment_trials(matrix[0], 1) == experiment_trials(matrix[:1], 1)
    assert matrix_axis(matrix, "system") == ["xdp", "dpdk_vector", "linux_raw"]
    assert matrix_axis(matrix, "cores") == [1, 2]
    assert matrix_axis([{"cores": [1]}, {"cores": [2], "offered_mpps": [0.5]}], "offered_mpps", default=0) == [0, 0.5]


@pytest.mark.parametrize("matrix", [[], [{}], [{"cores": []}], [{"cores": [1]}, "cores=2"]])
def test_malformed_sub_matrices_are_refused(matrix):
    from ansible_collections.xdplab.testbed.plugins.filter.experiment import matrix_axis

    with pytest.raises(AnsibleFilterError, match=r"matrix must be a non-empty mapping|must be a non-empty list"):
        experiment_trials(matrix, 1)
    with pytest.raises(AnsibleFilterError):
        matrix_axis(matrix, "cores")

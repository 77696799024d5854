"""The experiment matrix and resume (plugins/filter/experiment.py); the loss verdict is tested in test_record.py."""

import json
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.experiment import (
    done_trial_ids,
    experiment_trials,
    trial_id,
)
from ansible_collections.xdplab.testbed.plugins.module_utils import _systems

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


def test_interleave_runs_round_by_round_every_second_round_reversed():
    ab = [{"touch": ["no_touch"], "variant": ["A"]}, {"touch": ["read"], "variant": ["B"]}]
    trials = experiment_trials(ab, 4, identity=IDENTITY, interleave=True)
    # counterbalanced: A B, B A, A B, B A (a drift or a position inside the round hits both variants alike)
    assert [(t["point"]["variant"], t["repetition"]) for t in trials] == [
        ("A", 1), ("B", 1), ("B", 2), ("A", 2), ("A", 3), ("B", 3), ("B", 4), ("A", 4),
    ]  # fmt: skip
    # the same trials as without interleave, only their order differs
    plain = experiment_trials(ab, 4, identity=IDENTITY)
    assert sorted(t["trial_id"] for t in trials) == sorted(t["trial_id"] for t in plain)
    # a resumed run keeps every round's order: round 2 stays B A when its B is already recorded
    done = [t["trial_id"] for t in trials[:3]]
    pending = experiment_trials(ab, 4, done=done, identity=IDENTITY, interleave=True)
    assert [(t["point"]["variant"], t["repetition"]) for t in pending] == [("A", 2), ("A", 3), ("B", 3), ("B", 4), ("A", 4)]


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
        ("xdp", "no_touch", 1),
        ("xdp", "no_touch", 2),
        ("xdp", "read", 1),
        ("xdp", "read", 2),
        ("dpdk_vector", "no_touch", 1),
        ("dpdk_vector", "no_touch", 2),
        ("linux_raw", "no_touch", 1),
        ("linux_raw", "no_touch", 2),
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


# -- the role xdplab.testbed.experiment: its spec, its defaults and its systems agree --------------------------

ROLE = Path(__file__).resolve().parents[2] / "roles" / "experiment"
PLAYBOOKS = ROLE.parents[1] / "playbooks"


def _yaml(path):
    return yaml.safe_load(path.read_text())


def test_every_default_is_in_the_argument_spec_with_the_same_default():
    defaults = _yaml(ROLE / "defaults" / "main.yml")
    specs = _yaml(ROLE / "meta" / "argument_specs.yml")["argument_specs"]
    options = specs["main"]["options"]
    for name, value in defaults.items():
        assert name.startswith("experiment_"), name
        assert name in options, "%s is a default but not documented in meta/argument_specs.yml" % name
        if "default" in options[name] and not (isinstance(value, str) and "{{" in value):
            assert options[name]["default"] == value, name
    # the three entry points take the same options (validate and preflight run before the runner)
    assert specs["validate"]["options"] == options == specs["preflight"]["options"]
    # what has no default must be given by the experiment or the inventory
    required = {n for n, o in options.items() if o.get("required")}
    assert required == {"experiment_name", "experiment_title", "experiment_matrix", "xdplab_dut_interface",
                        "xdplab_dut_cpus", "xdplab_dut_mac", "xdplab_dut_ip", "xdplab_generator_host"}  # fmt: skip


def test_every_system_has_an_implementation_with_setup_measure_teardown():
    defaults = _yaml(ROLE / "defaults" / "main.yml")
    # the kinds are the registry's (plugins/module_utils/_systems.py)
    impls = list(_systems.KINDS)
    assert {s["impl"] for s in defaults["experiment_systems"].values()} == set(impls)
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PROVIDERS

    for impl in impls:
        # every kind is set up, measured and torn down in Python (plugin_utils/_trial.py): no task files
        assert all(callable(getattr(PROVIDERS[impl], step, None)) for step in ("setup", "measure", "teardown")), impl
    assert not (ROLE / "tasks" / "systems").exists()


def test_experiment_vars_files_name_the_role_options():
    options = _yaml(ROLE / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    for path in sorted((PLAYBOOKS / "vars").glob("*.yml")):
        data = _yaml(path)
        for required in ("experiment_name", "experiment_title", "experiment_matrix"):
            assert required in data, (path.name, required)
        # every experiment_* name a vars file sets is an option of the role (no typo goes unnoticed)
        unknown = sorted(k for k in data if k.startswith("experiment_") and k not in options)
        assert unknown == [], (path.name, unknown)
        # the experiment's name is the file's, or a variable of the file whose default is (ab_compare_name)
        name = data["experiment_name"]
        if name != path.stem:
            assert name == "{{ %s_name }}" % path.stem and data["%s_name" % path.stem] == path.stem, (path.name, name)
        # the playbook of the same name runs this file through experiment.yml, or (A/B, NDR/PDR: blocks and a
        # search around the trials) reads it itself and runs the same role
        play = _yaml(PLAYBOOKS / path.name)
        if "ansible.builtin.import_playbook" in play[0]:
            assert play[0]["ansible.builtin.import_playbook"] == "experiment.yml"
            assert play[0]["vars"]["experiment_vars_file"] == "vars/%s" % path.name
        else:
            text = (PLAYBOOKS / path.name).read_text()
            assert "vars/%s" % path.name in text and "name: xdplab.testbed.experiment" in text, path.name


def test_no_lazy_per_trial_values_left_in_group_vars():
    text = (PLAYBOOKS / "group_vars" / "all" / "xdplab_experiment.yml").read_text()
    assert "trial." not in text and "__xdplab_" not in text
    assert not (PLAYBOOKS / "experiment").exists()

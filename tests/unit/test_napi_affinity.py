"""xdplab.testbed.napi_affinity's logic with its kernel calls replaced (the real pinning: tests/integration/
test_vlab_topology.py::test_napi_affinity_moves_a_queues_thread_to_the_nic_cpu_and_back)."""

import pytest
from ansible_collections.xdplab.testbed.plugins.modules.napi_affinity import NapiAffinity, NapiAffinityError


def fake(threads, pinned):
    def get(pid):
        return set(pinned[pid])

    def set_(pid, cpus):
        pinned[pid] = sorted(cpus)

    return {"online": [0, 1, 2, 3], "threads": lambda _ifname: threads, "affinity": (get, set_)}


THREADS = [{"queue": 0, "napi_id": 8193, "pid": 10}, {"queue": 1, "napi_id": 8194, "pid": 11}]


def test_round_robin_over_the_cpus_and_check_mode_changes_nothing():
    pinned = {10: [1], 11: [2]}
    planned = NapiAffinity("veth-dut0", [3], check_mode=True, **fake(THREADS, pinned)).run()
    assert planned["changed"] and pinned == {10: [1], 11: [2]}
    done = NapiAffinity("veth-dut0", [3, 0], **fake(THREADS, pinned)).run()
    assert done["changed"] and pinned == {10: [3], 11: [0]}
    assert [(t["queue"], t["cpu"], t["before"]) for t in done["threads"]] == [(0, 3, [1]), (1, 0, [2])]
    assert not NapiAffinity("veth-dut0", [3, 0], **fake(THREADS, pinned)).run()["changed"]


@pytest.mark.parametrize(
    "cpus, threads, words",
    [
        ([], THREADS, "cpus is empty"),
        ([1, 9], THREADS, "cpus: CPU 9 is not online (online: 0-3)"),
        ([1], [{"queue": 0, "napi_id": 0, "pid": None}], "RX queue 0 has no NAPI kernel thread; turn threaded NAPI on"),
    ],
)
def test_bad_input_says_what_to_do(cpus, threads, words):
    with pytest.raises(NapiAffinityError, match=words.replace("(", r"\(").replace(")", r"\)")):
        NapiAffinity("veth-dut0", cpus, **fake(threads, {10: [1], 11: [1]})).run()

# SPDX-License-Identifier: GPL-3.0-or-later
"""xdp_program's cpumap entries (map_entries {cpu_map: {CPU: {qsize, program}}}), the parts that need no kernel.

The kernel side (load both programs, write struct bpf_cpumap_val, read it back, forward from the other CPU) is
tests/integration/test_cpumap.py.
"""

import pytest
from ansible_collections.xdplab.testbed.plugins.modules import xdp_program


def test_a_cpumap_entry_is_a_queue_size_and_a_program():
    got = xdp_program.resolve_map_entries({"cpu_map": {"1": {"qsize": "2048", "program": "xdp_cpumap_fwd"}},
                                           "tx_ports": {0: "lo"}})
    assert got == {"cpu_map": {1: {"qsize": 2048, "program": "xdp_cpumap_fwd"}}, "tx_ports": {0: 1}}
    assert xdp_program.cpumap_programs(got) == ["xdp_cpumap_fwd"]
    # no program: the CPU builds an skb and passes the frame to the stack
    assert xdp_program.resolve_map_entries({"cpu_map": {0: {"qsize": 64}}}) == {"cpu_map": {0: {"qsize": 64, "program": None}}}


@pytest.mark.parametrize("value, message", [
    ({"program": "xdp_cpumap_fwd"}, r"a cpumap entry is \{qsize: N, program: NAME\}"),
    ({"qsize": 0}, "must be a positive integer"),
    ({"qsize": True}, "must be a positive integer"),
    ({"qsize": 8, "prog": "x"}, "a cpumap entry is"),
])
def test_bad_cpumap_entries_are_refused_with_what_they_take(value, message):
    with pytest.raises(ValueError, match=message):
        xdp_program.resolve_map_entries({"cpu_map": {1: value}})


def test_the_entry_value_is_struct_bpf_cpumap_val():
    class Obj:
        def find_program(self, name):
            return name

        def program_fd(self, prog):
            return 7

    raw = xdp_program.XdpProgram.entry_value(Obj(), {"qsize": 2048, "program": "xdp_cpumap_fwd"})
    assert raw == (2048).to_bytes(4, "little") + (7).to_bytes(4, "little")  # __u32 qsize; int bpf_prog.fd
    assert xdp_program.XdpProgram.entry_value(Obj(), {"qsize": 64, "program": None})[4:] == bytes(4)
    assert xdp_program.XdpProgram.entry_value(Obj(), 3) == 3

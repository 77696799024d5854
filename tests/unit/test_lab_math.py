# SPDX-License-Identifier: GPL-3.0-or-later
import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter import lab_math


def test_wire_pps_matches_the_paper():
    assert lab_math.wire_pps(100) / 1e6 == pytest.approx(148.81, abs=0.01)
    assert lab_math.wire_pps(40) / 1e6 == pytest.approx(59.52, abs=0.01)
    assert lab_math.wire_pps(10) / 1e6 == pytest.approx(14.88, abs=0.01)
    # the notes: 40000/((128+12)*8) = 35.71 Mpps counts only the IFG; with preamble+SFD 128B is 148 bytes
    assert lab_math.wire_pps(40, 128) == pytest.approx(40e9 / (148 * 8))


def test_ns_pps_round_trip_with_the_notes_numbers():
    assert lab_math.pps_to_ns(24971055) == pytest.approx(40.0464, abs=1e-4)
    assert lab_math.pps_to_ns(29028209) == pytest.approx(34.4492, abs=1e-4)
    assert lab_math.ns_to_pps(lab_math.pps_to_ns(25583300)) == pytest.approx(25583300)
    assert lab_math.pps_to_ns("1000000000") == 1.0


def test_thousands_and_mpps():
    assert lab_math.thousands(25583300) == "25,583,300"
    assert lab_math.thousands(25583300.4) == "25,583,300"
    assert lab_math.thousands(1234.5678, 2) == "1,234.57"
    assert lab_math.mpps(86338684) == 86.34
    assert lab_math.mpps(86338684, 3) == 86.339


@pytest.mark.parametrize(
    "fn,args,msg",
    [
        (lab_math.pps_to_ns, ("fast",), "must be a number"),
        (lab_math.pps_to_ns, (0,), "greater than zero"),
        (lab_math.ns_to_pps, (-1,), "must not be negative"),
        (lab_math.wire_pps, (None,), "must be a number"),
        (lab_math.wire_pps, (100, 32), "at least 64"),
        (lab_math.thousands, (True,), "must be a number"),
        (lab_math.mpps, (float("nan"),), "finite"),
    ],
)
def test_bad_input_raises_filter_error(fn, args, msg):
    with pytest.raises(AnsibleFilterError, match=msg):
        fn(*args)


def test_filter_module_exports():
    assert set(lab_math.FilterModule().filters()) == {"pps_to_ns", "ns_to_pps", "wire_pps", "thousands", "mpps"}

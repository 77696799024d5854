# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generator address lists (issue 27): drawn seeded, unique, outside martian and excluded space; bad specs refused."""

import hashlib
import ipaddress

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _addresses as addresses
from ansible_collections.xdplab.testbed.plugins.module_utils._addresses import AddressError, address_list

MARTIANS = [ipaddress.ip_network(net) for net, _why in addresses.MARTIAN_NETS]


def test_the_same_seed_draws_the_same_list_another_seed_another():
    first, described = address_list({"count": 4000, "seed": 7})
    again, _d = address_list({"count": 4000, "seed": 7})
    other, _d = address_list({"count": 4000, "seed": 8})
    assert first == again and first != other
    assert described["seed"] == 7 and described["count"] == 4000 and described["drawn"] is True
    assert described["first"] == first[:5]
    # the record's sha256 is that of the generator's file (one address a line)
    assert described["sha256"] == hashlib.sha256("".join(a + "\n" for a in first).encode()).hexdigest()
    # a templated count and seed ("4000", "7") are the numbers: the same list, recorded as numbers
    templated, described_t = address_list({"count": "4000", "seed": "7"})
    assert templated == first and described_t["seed"] == 7 and described_t["count"] == 4000
    # a known value: the draw is random.Random(seed).sample over the usable space, the same on every host
    assert address_list({"count": 3, "seed": 1})[0] == ["35.101.177.245", "147.183.88.74", "218.242.106.223"]


def test_drawn_addresses_are_unique_unicast_and_outside_excluded_nets():
    exclude = ["10.0.0.0/8", "1.0.0.0-1.255.255.255", "198.18.0.0/15"]
    drawn, described = address_list({"count": 20000, "seed": 3, "exclude": exclude[:2]}, exclude=exclude[2:])
    assert len(drawn) == len(set(drawn)) == 20000
    excluded = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "1.0.0.0/8", "198.18.0.0/15")]
    for text in drawn:
        a = ipaddress.ip_address(text)
        assert ipaddress.ip_address("1.0.0.0") <= a <= ipaddress.ip_address("223.255.255.255"), text
        assert not any(a in net for net in MARTIANS + excluded), text
    # the spec's and the caller's excludes, both recorded
    assert described["exclude"] == exclude
    assert described["within"] == list(addresses.DEFAULT_WITHIN)


def test_a_small_within_is_drawn_whole_and_in_seeded_order():
    drawn, _d = address_list({"count": 16, "seed": 5, "within": "192.0.2.0/28"})
    assert sorted(drawn, key=ipaddress.ip_address) == [str(a) for a in ipaddress.ip_network("192.0.2.0/28")]
    assert drawn != sorted(drawn, key=ipaddress.ip_address)  # the walk is the seeded order, not the address order
    # a within partly martian keeps its unicast part only
    part, _d = address_list({"count": 256, "seed": 1, "within": ["126.255.255.0/24", "127.0.0.0/24"]})
    assert all(a.startswith("126.255.255.") for a in part)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"count": 0}, r"destinations.count must be a whole number of addresses, 1 to 65536"),
        ({"count": 65537}, r"1 to 65536"),
        ({"count": True}, r"count must be"),
        ({"count": 300, "within": "192.0.2.0/24"}, r"count 300 is more than the 256 addresses of within.*lower count"),
        ({"count": 10, "within": "192.0.2.0/28", "exclude": ["192.0.2.0/29"]}, r"more than the 8 addresses"),
        ({"count": 5, "within": ["224.0.0.0/4", "127.0.0.0/8"]}, r"lies wholly in martian space .*draw from unicast"),
        ({"count": 5, "within": "300.0.0.0/8"}, r"destinations.within: '300.0.0.0/8' is not an IPv4 CIDR"),
        ({"count": 5, "exclude": ["nonsense"]}, r"destinations.exclude: 'nonsense' is not an IPv4 CIDR"),
        ({"count": 5, "seed": 1.5}, r"seed must be a whole number or a string"),
        ({"count": 5, "sed": 1}, r"destinations does not know sed; it takes count, seed, within, exclude, list"),
        ({"list": ["1.2.3.4"], "count": 1}, r"either list or count"),
        ({"list": []}, r"non-empty list"),
        ({"list": ["1.2.3.4", "8.8.8.300"]}, r"'8.8.8.300' is not an IPv4 address"),
        ({"list": ["1.2.3.4", "1.2.3.4"]}, r"has 1.2.3.4 twice"),
        ({"list": ["1.2.3.4", "224.0.0.5"]}, r"224.0.0.5 is in 224.0.0.0/4, multicast .*take it out"),
        ({"list": ["169.254.1.1"]}, r"link local"),
        ({"list": ["10.1.2.3"], "exclude": ["10.0.0.0/8"]}, r"10.1.2.3 is in excluded space \(10.0.0.0/8"),
        ({"list": ["8.8.8.8"], "within": "1.0.0.0/8"}, r"8.8.8.8 is not within"),
        ("4000", r"destinations must be a dict"),
    ],
)
def test_bad_specs_are_refused_with_what_to_change(spec, message):
    with pytest.raises(AddressError, match=message):
        address_list(spec)


def test_a_given_list_is_kept_in_order_and_described_as_given():
    given = ["192.0.2.7", "198.51.100.1", "203.0.113.9"]
    got, described = address_list({"list": given}, "sources", exclude=["10.0.0.0/8"])
    assert got == given
    assert described["drawn"] is False and described["seed"] is None and described["count"] == 3
    with pytest.raises(AddressError, match=r"sources.list: 10.0.0.9 is in excluded space"):
        address_list({"list": ["10.0.0.9"]}, "sources", exclude=["10.0.0.0/8"])


def test_the_one_martian_list():
    # the special-purpose ranges routers drop; private and shared space (10/8, 100.64/10) are forwarded, so allowed
    assert [net for net, _why in addresses.MARTIAN_NETS] == [
        "0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4",
    ]  # fmt: skip
    assert address_list({"list": ["10.0.0.1", "100.64.0.1"]})[0] == ["10.0.0.1", "100.64.0.1"]
    with pytest.raises(AddressError, match=r"255\.255\.255\.255 is in 240\.0\.0\.0/4"):
        address_list({"list": ["255.255.255.255"]})

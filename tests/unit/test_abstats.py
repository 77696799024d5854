"""A/B statistics (plugins/module_utils/_abstats.py) on fixed data with known answers.

The Welch example is the textbook one (Welch's t-test, Wikipedia "Examples", sample pair 1: t = -2.46,
df = 24.9, p = 0.021); the other expectations are computed here from closed forms with scipy's t quantiles, so the
module is checked against the library rather than against itself.
"""

import math

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _abstats as ab
from scipy import stats

WELCH_A = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
WELCH_B = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
# fixed "noise" in log space (15 values, mean 0 by construction)
NOISE = [0.011, -0.004, 0.007, -0.012, 0.003, 0.0, -0.006, 0.009, -0.002, 0.005, -0.010, 0.004, -0.003, 0.008, -0.010]


def _var(x):
    m = sum(x) / len(x)
    return sum((v - m) ** 2 for v in x) / (len(x) - 1)


def test_welch_textbook_example():
    w = ab.welch_log(WELCH_A, WELCH_B)
    assert w["t"] == pytest.approx(2.4554, abs=1e-4)  # B - A: the textbook's -2.46 with the sides swapped
    assert w["df"] == pytest.approx(24.9885, abs=1e-4)
    assert w["p_value"] == pytest.approx(0.02138, abs=1e-5)
    # the interval from the closed form: diff +- t(0.975, df) * sqrt(va/na + vb/nb)
    se = math.sqrt(_var(WELCH_A) / 15 + _var(WELCH_B) / 15)
    df = (_var(WELCH_A) / 15 + _var(WELCH_B) / 15) ** 2 / ((_var(WELCH_A) / 15) ** 2 / 14 + (_var(WELCH_B) / 15) ** 2 / 14)
    diff = sum(WELCH_B) / 15 - sum(WELCH_A) / 15
    half = stats.t.ppf(0.975, df) * se
    assert w["log_ci"] == pytest.approx([diff - half, diff + half], abs=1e-9)
    assert w["log_ci"] == pytest.approx([0.34924, 3.98410], abs=1e-5)


def test_known_relative_difference_is_exact():
    a = [1e6 * math.exp(e) for e in NOISE]
    b = [0.973e6 * math.exp(e) for e in reversed(NOISE)]
    r = ab.compare(a, b)
    assert r["relative"] == pytest.approx(-0.027, abs=1e-12)
    # same spread on both sides: df = 2(n-1) = 28, interval symmetric around log(0.973)
    assert r["df"] == pytest.approx(28.0)
    half = stats.t.ppf(0.975, 28) * math.sqrt(2 * _var(NOISE) / 15)
    assert r["ci"] == pytest.approx([math.expm1(math.log(0.973) - half), math.expm1(math.log(0.973) + half)], abs=1e-12)
    assert r["significant"] and r["n_a"] == r["n_b"] == 15
    assert r["cv_a"] == pytest.approx(ab.cv(a)) and r["cv_a"] == pytest.approx(math.sqrt(_var(a)) / (sum(a) / 15))
    lo, hi = -r["ci"][1] * 100, -r["ci"][0] * 100
    assert r["verdict"] == "B is 2.7 %% slower than A (95 %% CI %.1f-%.1f %%, 15 samples each, interleaved)" % (lo, hi)
    # the bootstrap agrees with Welch here (same spread, symmetric noise), within a fifth of the interval's width
    width = r["ci"][1] - r["ci"][0]
    assert r["bootstrap"]["ci"] == pytest.approx(r["ci"], abs=width / 5)


def test_a_against_a_contains_zero_and_says_so():
    a = [1e6 * math.exp(e) for e in NOISE]
    r = ab.compare(a, list(reversed(a)))
    assert r["relative"] == pytest.approx(0.0, abs=1e-12)
    assert r["ci"][0] < 0 < r["ci"][1] and not r["significant"]
    assert r["bootstrap"]["ci"][0] < 0 < r["bootstrap"]["ci"][1]
    assert r["verdict"].startswith("B and A do not differ: ")
    assert "this N detects %.1f %%" % (100 * r["mdd"]) in r["verdict"]


def test_bootstrap_is_reproducible():
    a = [1e6 * math.exp(e) for e in NOISE]
    b = [1.01e6 * math.exp(e) for e in NOISE[3:] + NOISE[:3]]
    assert ab.compare(a, b)["bootstrap"] == ab.compare(a, b)["bootstrap"]


def test_minimal_detectable_difference_closed_form():
    sd, n = 0.01, 15
    m = ab.minimal_detectable_difference(sd, sd, n, n)
    assert m["df"] == pytest.approx(28.0)
    delta = (stats.t.ppf(0.975, 28) + stats.t.ppf(0.8, 28)) * math.sqrt(2 * sd**2 / n)
    assert m["log_delta"] == pytest.approx(delta, rel=1e-12)
    assert m["relative"] == pytest.approx(math.expm1(delta), rel=1e-12)
    # 4x the samples: half the detectable difference (in log space, same df regime)
    assert ab.minimal_detectable_difference(sd, sd, 60, 60)["log_delta"] < delta / 1.9


def test_blocks_are_the_unit_a_boot_difference_is_not_a_kernel_difference():
    # three boots per kernel, 5 samples per boot; boots differ by up to 5 %, as much as the kernels seem to
    boots_a, boots_b = [1.00, 1.03, 0.99], [1.03, 1.00, 1.05]
    a = [1e6 * m * math.exp(e) for m in boots_a for e in NOISE[:5]]
    b = [1e6 * m * math.exp(e) for m in boots_b for e in NOISE[5:10]]
    blocks = [i for i in range(3) for _sample in range(5)]
    ignoring = ab.compare(a, b)
    r = ab.compare(a, b, blocks_a=blocks, blocks_b=blocks)
    assert r["unit"] == "block" and r["n_a"] == r["n_b"] == 3 and r["block_sizes_a"] == [5, 5, 5]
    assert r["df"] < 4 and not r["significant"]
    # the samples alone would claim a difference: why blocks must enter the analysis
    assert ignoring["significant"] and ignoring["df"] > 20
    # the observations are the block means of the logs, so Welch's t is scipy's on those
    obs_a = [sum(math.log(x) for x in a[i * 5 : (i + 1) * 5]) / 5 for i in range(3)]
    obs_b = [sum(math.log(x) for x in b[i * 5 : (i + 1) * 5]) / 5 for i in range(3)]
    assert r["t"] == pytest.approx(float(stats.ttest_ind(obs_b, obs_a, equal_var=False).statistic))
    assert "3 blocks each, in blocks" in r["verdict"]


def test_mean_ci_is_student_t():
    m = ab.mean_ci(WELCH_A)
    lo, hi = stats.t.interval(0.95, 14, loc=sum(WELCH_A) / 15, scale=math.sqrt(_var(WELCH_A) / 15))
    assert m["ci"] == pytest.approx([lo, hi]) and m["n"] == 15 and m["df"] == 14


@pytest.mark.parametrize(
    "a, b, kwargs, message",
    [
        ([1.0, 2.0], [1.0, 2.0, 3.0], {}, "A has 2 samples: at least 3"),
        ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0], {}, "B: every rate must be a positive"),
        ([1.0, 2.0, 3.0], [1.0, "x", 3.0], {}, "B: rates must be numbers"),
        ([1.0] * 6, [1.0] * 6, {"blocks_a": [1, 1, 2, 2, 3, 3], "blocks_b": [1, 1, 1, 2, 2, 2]}, "B has 2 blocks"),
        ([1.0] * 3, [1.0] * 3, {"blocks_a": [1, 2]}, "one label per sample"),
    ],
)
def test_bad_input(a, b, kwargs, message):
    with pytest.raises(ab.ABStatsError, match=message):
        ab.compare(a, b, **kwargs)

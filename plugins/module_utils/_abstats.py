# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A against B: the relative difference of two sets of rates with a confidence interval.

Rates (pps) are compared on their logarithm: a relative difference is a difference of logs, and the
log makes the spread of a rate roughly symmetric. The interval is Welch's t (unequal variances) on
the log rates, from scipy.stats; a bootstrap interval (scipy.stats.bootstrap, BCa, fixed seed) is
computed beside it as a check of the t interval's assumptions. With block structure (samples taken
in blocks, e.g. one block per boot of a kernel) the unit of the analysis is the block: its mean log
rate is one observation, so a difference between boots is not taken for a difference between
kernels.

scipy is the field's library for this (t distribution, Welch's degrees of freedom, the bootstrap);
nothing here evaluates a distribution by hand. Everything is pure: lists in, dicts out.

Functions: ``compare`` (the whole result), ``welch_log``, ``bootstrap_log``,
``minimal_detectable_difference``, ``block_observations``, ``cv``, ``mean_ci`` (one mean's interval),
``verdict`` (the sentence).
"""

from __future__ import annotations

import math

try:
    import numpy as np
    from scipy import stats as _stats
except ImportError as _exc:  # pragma: no cover - scipy is in requirements.txt
    np = None
    _stats = None
    SCIPY_IMPORT_ERROR = str(_exc)
else:
    SCIPY_IMPORT_ERROR = None

MIN_SAMPLES = 3
DEFAULT_CONFIDENCE = 0.95
DEFAULT_POWER = 0.8
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 20260101


class ABStatsError(ValueError):
    """Input that cannot be compared (too few samples, a rate that is not positive, ...)."""


def _need_scipy():
    if _stats is None:
        raise ABStatsError(
            "the A/B statistics need scipy on the controller (%s): pip install -r requirements.txt" % SCIPY_IMPORT_ERROR
        )


def _rates(name, values):
    try:
        rates = [float(v) for v in values]
    except (TypeError, ValueError):
        raise ABStatsError("%s: rates must be numbers, got %r" % (name, values)) from None
    bad = [r for r in rates if not (r > 0 and math.isfinite(r))]
    if bad:
        raise ABStatsError("%s: every rate must be a positive finite number (a zero rate has no log), got %r" % (name, bad))
    return rates


def cv(values):
    """Coefficient of variation (sample standard deviation / mean) of plain values; None for n < 2."""
    values = [float(v) for v in values]
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return math.sqrt(var) / mean if mean else None


def block_observations(rates, blocks=None):
    """The observations of the analysis: log rates, or one mean log rate per block.

    blocks: None (every sample is independent) or one label per rate (e.g. the boot a sample ran in).
    Returns (observations, block_sizes) in first-seen block order.
    """
    logs = [math.log(r) for r in rates]
    if blocks is None:
        return logs, None
    blocks = list(blocks)
    if len(blocks) != len(logs):
        raise ABStatsError("blocks: one label per sample is needed, got %d labels for %d samples" % (len(blocks), len(logs)))
    order, members = [], {}
    for label, value in zip(blocks, logs):
        if label not in members:
            order.append(label)
            members[label] = []
        members[label].append(value)
    return [sum(members[b]) / len(members[b]) for b in order], [len(members[b]) for b in order]


def welch_log(obs_a, obs_b, confidence=DEFAULT_CONFIDENCE):
    """Welch's t on log observations: B - A, its interval, t, df, p (scipy.stats.ttest_ind, equal_var=False)."""
    _need_scipy()
    res = _stats.ttest_ind(obs_b, obs_a, equal_var=False)
    ci = res.confidence_interval(confidence_level=confidence)
    return {
        "log_diff": float(np.mean(obs_b) - np.mean(obs_a)),
        "log_ci": [float(ci.low), float(ci.high)],
        "t": float(res.statistic),
        "df": float(res.df),
        "p_value": float(res.pvalue),
    }


def bootstrap_log(obs_a, obs_b, confidence=DEFAULT_CONFIDENCE, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED):
    """Bootstrap interval of mean(log B) - mean(log A) (scipy.stats.bootstrap, BCa, independent resampling)."""
    _need_scipy()

    def diff(a, b, axis=-1):
        return np.mean(b, axis=axis) - np.mean(a, axis=axis)

    res = _stats.bootstrap(
        (np.asarray(obs_a), np.asarray(obs_b)),
        diff,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="BCa",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return {
        "log_ci": [float(res.confidence_interval.low), float(res.confidence_interval.high)],
        "method": "BCa",
        "n_resamples": n_resamples,
        "seed": seed,
    }


def minimal_detectable_difference(sd_a, sd_b, n_a, n_b, confidence=DEFAULT_CONFIDENCE, power=DEFAULT_POWER):
    """The smallest relative difference this N detects with the given power (two-sided, Welch).

    sd_a, sd_b: standard deviations of the log observations. Returns the relative difference
    (exp(delta) - 1, a fraction) and the log delta = (t(1 - alpha/2, df) + t(power, df)) * SE, with
    Welch-Satterthwaite's df for these variances.
    """
    _need_scipy()
    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    se = math.sqrt(va + vb)
    if se == 0:
        return {"relative": 0.0, "log_delta": 0.0, "df": None, "power": power}
    df = (va + vb) ** 2 / ((va**2 / (n_a - 1) if n_a > 1 else 0) + (vb**2 / (n_b - 1) if n_b > 1 else 0))
    alpha = 1.0 - confidence
    delta = (float(_stats.t.ppf(1 - alpha / 2, df)) + float(_stats.t.ppf(power, df))) * se
    return {"relative": math.expm1(delta), "log_delta": delta, "df": df, "power": power}


def mean_ci(values, confidence=DEFAULT_CONFIDENCE):
    """Mean of plain values with its Student-t interval (scipy.stats.t.interval): {mean, ci, n, df, sd, cv}."""
    _need_scipy()
    values = [float(v) for v in values]
    n = len(values)
    if n < 2:
        raise ABStatsError("an interval needs at least 2 values, got %d" % n)
    mean = sum(values) / n
    sd = _sd(values)
    ci = (mean, mean) if sd == 0 else _stats.t.interval(confidence, n - 1, loc=mean, scale=sd / math.sqrt(n))
    return {
        "mean": mean,
        "ci": [float(ci[0]), float(ci[1])],
        "n": n,
        "df": n - 1,
        "sd": sd,
        "cv": sd / mean if mean else None,
        "confidence": confidence,
    }


def _sd(values):
    n = len(values)
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def compare(
    rates_a,
    rates_b,
    blocks_a=None,
    blocks_b=None,
    confidence=DEFAULT_CONFIDENCE,
    power=DEFAULT_POWER,
    n_resamples=BOOTSTRAP_RESAMPLES,
    seed=BOOTSTRAP_SEED,
):
    """B against A: relative difference with Welch's and the bootstrap's interval, n, df, CVs, the MDD.

    Relative values are fractions of A (B/A - 1 on the geometric means): -0.027 is "B 2.7 % lower".
    With blocks, n counts blocks and the sample CVs are beside the block CVs.
    """
    rates_a, rates_b = _rates("A", rates_a), _rates("B", rates_b)
    obs_a, sizes_a = block_observations(rates_a, blocks_a)
    obs_b, sizes_b = block_observations(rates_b, blocks_b)
    for name, obs, unit in (
        ("A", obs_a, "blocks" if blocks_a is not None else "samples"),
        ("B", obs_b, "blocks" if blocks_b is not None else "samples"),
    ):
        if len(obs) < MIN_SAMPLES:
            raise ABStatsError("%s has %d %s: at least %d are needed for an interval" % (name, len(obs), unit, MIN_SAMPLES))
    welch = welch_log(obs_a, obs_b, confidence)
    boot = bootstrap_log(obs_a, obs_b, confidence, n_resamples, seed)
    mdd = minimal_detectable_difference(_sd(obs_a), _sd(obs_b), len(obs_a), len(obs_b), confidence, power)
    rel = math.expm1(welch["log_diff"])
    result = {
        "confidence": confidence,
        "unit": "block" if blocks_a is not None or blocks_b is not None else "sample",
        "n_a": len(obs_a),
        "n_b": len(obs_b),
        "samples_a": len(rates_a),
        "samples_b": len(rates_b),
        "block_sizes_a": sizes_a,
        "block_sizes_b": sizes_b,
        "geomean_a": math.exp(sum(obs_a) / len(obs_a)),
        "geomean_b": math.exp(sum(obs_b) / len(obs_b)),
        "mean_a": sum(rates_a) / len(rates_a),
        "mean_b": sum(rates_b) / len(rates_b),
        "cv_a": cv(rates_a),
        "cv_b": cv(rates_b),
        "relative": rel,
        "ci": [math.expm1(welch["log_ci"][0]), math.expm1(welch["log_ci"][1])],
        "df": welch["df"],
        "t": welch["t"],
        "p_value": welch["p_value"],
        "bootstrap": dict(boot, ci=[math.expm1(boot["log_ci"][0]), math.expm1(boot["log_ci"][1])]),
        "mdd": mdd["relative"],
        "mdd_power": power,
    }
    if result["unit"] == "block":
        # how much of the spread is between blocks (boots): the block means' CV against the samples'
        result["block_cv_a"] = cv([math.exp(o) for o in obs_a])
        result["block_cv_b"] = cv([math.exp(o) for o in obs_b])
    result["significant"] = not (result["ci"][0] <= 0.0 <= result["ci"][1])
    result["verdict"] = verdict(result)
    return result


def _pct(x):
    return "%.1f" % (100.0 * abs(x)) if abs(x) >= 0.001 else "%.2f" % (100.0 * abs(x))


def verdict(result, name_a="A", name_b="B", higher="faster", lower="slower", design=None, what=None):
    """One sentence a person can paste into a mailing-list post; what: the metric compared, when not the rate
    (e.g. "in CPU time per packet")."""
    what = " " + what if what else ""
    lo, hi = result["ci"]
    conf = "%g %%" % (100 * result["confidence"])
    if design is None:
        design = "interleaved" if result["unit"] == "sample" else "in blocks, one mean per block"
    unit = "samples" if result["unit"] == "sample" else "blocks"
    if result["n_a"] == result["n_b"]:
        count = "%d %s each" % (result["n_a"], unit)
    else:
        count = "%d and %d %s" % (result["n_a"], result["n_b"], unit)
    if result["significant"]:
        word = higher if result["relative"] > 0 else lower
        a, b = sorted((abs(lo), abs(hi)))
        return "%s is %s %% %s than %s%s (%s CI %s-%s %%, %s, %s)" % (
            name_b,
            _pct(result["relative"]),
            word,
            name_a,
            what,
            conf,
            _pct(a),
            _pct(b),
            count,
            design,
        )
    return "%s and %s do not differ%s: %s%s %% (%s CI %s%s to %s%s %%, %s, %s; this N detects %s %% at %d %% power)" % (
        name_b,
        name_a,
        what,
        "+" if round(result["relative"], 5) >= 0 else "-",
        _pct(result["relative"]),
        conf,
        "+" if lo >= 0 else "-",
        _pct(lo),
        "+" if hi >= 0 else "-",
        _pct(hi),
        count,
        design,
        _pct(result["mdd"]),
        round(100 * result["mdd_power"]),
    )

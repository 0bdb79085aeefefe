"""Intervals at the level each unit was tested at (evals.compare.bounds, docs/spec.md#confidence-intervals):
each unit's own test inverted, so its verdict and its printed interval agree by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from evals.compare import paired
from evals.compare.bounds import bh_level, holm_levels
from evals.compare.decide import decide
from evals.compare.metrics import metric_def
from evals.compare.model import UnitResult
from evals.compare.paired import MetricInput, UnitIndex, paired_test
from evals.compare.stats import bh_qvalues, weighted_holm
from evals.suite.gate import GateSpec
from evals.suite.scoring import MetricSpec

WHOLE = UnitIndex("overall", None, None, None)
GATE = GateSpec(bootstrap_resamples=999)


def binary(n: int, worse: int, better: int) -> tuple[np.ndarray, np.ndarray]:
    base, cand = np.ones(n), np.ones(n)
    cand[:worse] = 0.0
    base[worse : worse + better] = 0.0
    return base, cand


def scores(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.beta(4, 2, n)
    return base, np.clip(base + shift + rng.normal(0, 0.15, n), 0, 1)


def latencies(n: int, factor: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.lognormal(6, 0.4, n)
    return base, base * factor * rng.lognormal(0, 0.1, n)


# (metric, arrays, the method that tests it, the interval's method)
CASES = {
    "mcnemar": ("pass_rate", binary(60, 12, 2), "mcnemar-mid-p", "mcnemar-inverted"),
    "clt": ("pass_rate", binary(400, 60, 30), "clt", "clt-inverted"),
    "bootstrap-t": ("score", scores(40, -0.08, 1), "bootstrap-t", "bootstrap-t-inverted"),
    "bootstrap": ("latency_p95_ms", latencies(80, 1.15, 2), "bootstrap", "bootstrap-inverted"),
}


def unit_test(metric: str, arrays: tuple[np.ndarray, np.ndarray], tolerance: float) -> paired.Tested:
    spec = MetricSpec(tolerance=tolerance)
    return paired_test(MetricInput(metric_def(metric, spec), spec, *arrays), WHOLE, GATE, np.random.default_rng(7))


def one_unit(metric: str, arrays: tuple[np.ndarray, np.ndarray], tolerance: float) -> UnitResult:
    spec = MetricSpec(tolerance=tolerance)
    return decide([MetricInput(metric_def(metric, spec), spec, *arrays)], [WHOLE], GATE, seed=7)[0]


def oriented(u: UnitResult) -> tuple[float, float]:
    """(lower, upper) with positive = better."""
    assert u.ci_low is not None and u.ci_high is not None
    return (u.ci_low, u.ci_high) if u.direction == "higher" else (-u.ci_high, -u.ci_low)


@pytest.mark.parametrize("name", list(CASES))
def test_the_bound_is_the_test_inverted_for_each_method(name: str) -> None:
    """Without any settling at the boundary: the test rejects 'Δ ≥ −m' at level a exactly when
    the inverted upper bound is below −m, for margins on both sides of it (and the mirror)."""
    metric, arrays, method, _ = CASES[name]
    t = unit_test(metric, arrays, 0.02)
    assert t.result.method == method and t.bounds is not None
    for level in (0.05, 0.0123, 0.0031):
        upper = t.bounds.upper(level)
        assert t.bounds.lower(level) < t.oriented_delta < upper
        for shift in (-0.3, -0.05, -1e-6, 1e-6, 0.05, 0.3):
            margin = -upper + shift * abs(upper) if upper else shift
            if margin < 0:
                continue
            rejected = unit_test(metric, arrays, margin).p_worse <= level
            assert rejected == (upper < -margin), (level, shift)
        # the mirror: the same cases with the runs swapped, so the lower bound is the one tested
        swapped = unit_test(metric, arrays[::-1], 0.02).bounds
        assert swapped is not None
        lower = swapped.lower(level)
        for shift in (-0.3, -0.05, -1e-6, 1e-6, 0.05, 0.3):
            margin = lower + shift * abs(lower)
            if margin < 0:
                continue
            assert (unit_test(metric, arrays[::-1], margin).p_better <= level) == (lower > margin), (level, shift)


@pytest.mark.parametrize("name", list(CASES))
def test_verdict_and_interval_agree_with_the_tolerance_at_the_bound_itself(name: str) -> None:
    """The tolerance set to the bound (and a hair either side): the test's p-value is its level
    there, rounding decides, and whatever it decides the interval says the same."""
    metric, arrays, _, ci_method = CASES[name]
    first = one_unit(metric, arrays, 0.02)
    assert first.ci_method == ci_method and first.ci_level == pytest.approx(1 - 2 * GATE.alpha)
    edge = -oriented(first)[1]
    assert edge > 0
    for tolerance in (math.nextafter(edge, 0), edge, math.nextafter(edge, 1), edge * (1 - 1e-12), edge * (1 + 1e-12)):
        u = one_unit(metric, arrays, tolerance)
        upper = oriented(u)[1]
        assert (u.verdict == "regressed") == (upper < -u.tolerance), (tolerance, u)
        assert u.verdict == "regressed" or upper >= -u.tolerance


def test_stratified_t_bound_is_student_t_inverted() -> None:
    from evals.compare.bounds import NormalBounds

    b = NormalBounds("stratified-t-inverted", 1.0, -0.05, 0.01, 12.0)
    upper = b.upper(0.01)
    assert sps.t.cdf((-0.05 - upper) / 0.01, 12.0) == pytest.approx(0.01)
    assert b.lower(0.01) == pytest.approx(-0.05 - (upper + 0.05))


def test_no_discordant_pair_prints_the_smoothed_interval_at_the_tested_level() -> None:
    """The McNemar test of a unit whose runs agree on every case cannot reject anything, and its
    inversion is the point 0: the smoothed interval at the tested level is printed instead."""
    u = one_unit("pass_rate", binary(80, 0, 0), 0.02)
    z = sps.norm.ppf(1 - GATE.alpha)
    assert u.ci_method == "smoothed" and u.no_change_seen
    assert u.ci_high == pytest.approx(z * math.sqrt(1 / 82) / math.sqrt(82))
    assert u.ci_low == pytest.approx(-u.ci_high)


def test_the_far_end_of_a_mcnemar_interval_reaches_past_the_discordant_share() -> None:
    """Conditional on 40 discordant pairs of 100 the inversion stops at −0.40; the far end of a
    drop of about that size is the smoothed bound, wider, and the verdict's end is untouched."""
    t = unit_test("pass_rate", binary(100, 38, 2), 0.02)
    assert t.bounds is not None
    level = 0.0035
    assert t.bounds.lower(level) < -0.40 < -0.36 < t.bounds.upper(level) < -0.02
    flipped = unit_test("pass_rate", binary(100, 2, 38), 0.02).bounds
    assert flipped is not None and flipped.upper(level) > 0.40 and flipped.lower(level) == -t.bounds.upper(level)


def test_a_side_no_pair_moved_towards_gets_the_smoothed_bound() -> None:
    """31 of 31 discordant pairs worse: conditional on them Δ ≥ −31/n, the estimate itself; that
    side's test cannot reject (p ≥ ½), so its bound is the smoothed one, wider than the estimate."""
    u = one_unit("pass_rate", binary(80, 31, 0), 0.02)
    assert u.verdict == "regressed" and u.ci_method == "mcnemar-inverted"
    assert u.ci_low < u.delta - 0.05 and u.ci_high < -0.02


def test_holm_levels_follow_the_step_down() -> None:
    """A unit rejected at step k is tested at α·w/W_k; the units not rejected at α·w/W_J."""
    p = np.array([0.01, 0.001, 0.5, 0.2])
    w = np.array([0.3, 0.5, 0.1, 0.1])
    levels = holm_levels(p, w, 0.05)
    assert (weighted_holm(p, w) <= 0.05).tolist() == [True, True, False, False]
    # step 1: the 0.5-weight unit, all weight in play; step 2: the 0.3-weight unit, 0.5 in play
    assert levels[1] == pytest.approx(0.05 * 0.5 / 1.0)
    assert levels[0] == pytest.approx(0.05 * 0.3 / 0.5)
    # not rejected: W_J = 0.2, and each p is above its level, so its bound reaches the band
    assert levels[2:] == pytest.approx([0.05 * 0.1 / 0.2] * 2)
    assert all(p[2:] > levels[2:])
    assert holm_levels(p, np.zeros(4), 0.05).tolist() == [0.0] * 4


def test_a_slice_rejected_at_step_two_prints_its_interval_at_that_steps_level() -> None:
    """Through decide(): two slices of 100 regress; the one weighted Holm takes second is tested
    at α·w/W_2 (W_2: the weight left once the first is rejected), and its interval says so."""
    gate = GateSpec(bootstrap_resamples=200)
    spec = MetricSpec(tolerance=0.02)
    parts = [binary(100, 30, 0), binary(100, 20, 2), binary(100, 2, 2), binary(100, 3, 2)]
    base, cand = np.concatenate([b for b, _ in parts]), np.concatenate([c for _, c in parts])
    units = [WHOLE] + [UnitIndex(f"s=k{k}", "s", f"k{k}", np.arange(100 * k, 100 * k + 100)) for k in range(4)]
    results = decide([MetricInput(metric_def("pass_rate", spec), spec, base, cand)], units, gate, seed=0)
    by = {u.unit: u for u in results}
    assert [u.unit for u in results if u.verdict == "regressed"] == ["overall", "s=k0", "s=k1"]
    p = np.array([u.p_value for u in results])
    w = np.array([u.weight for u in results])
    order = np.argsort(p / w, kind="stable").tolist()
    assert order[:3] == [1, 0, 2]  # s=k0 first, overall second, s=k1 third
    in_play = w.sum() - w[1] - w[0]
    worse_level = 0.05 * w[2] / in_play
    better_level = 0.05 * w[2] / w.sum()  # nothing is rejected in the better family: W_J is all
    assert by["s=k1"].ci_level == pytest.approx(1 - worse_level - better_level)
    lower, upper = oriented(by["s=k1"])
    assert upper < -0.02 and lower < by["s=k1"].delta
    # the units not rejected reach into the band at their level
    assert all(oriented(by[name])[1] >= -0.02 for name in ("s=k2", "s=k3"))


def test_advisory_units_get_benjamini_yekutieli_levels() -> None:
    """Weight 0 (an ungated metric): verdicts from BH q ≤ α, intervals at α·R/m (R ≥ 1)."""
    q = np.array([0.01, 0.03, 0.2, 0.9])
    assert bh_level(q, 0.05) == pytest.approx(0.05 * 2 / 4)
    assert bh_level(np.array([0.5, 0.9]), 0.05) == pytest.approx(0.05 / 2)
    spec, advisory = MetricSpec(tolerance=0.02), MetricSpec(tolerance=0.02, gate=False)
    parts = [binary(100, 30, 0), binary(100, 2, 1)]
    base, cand = np.concatenate([b for b, _ in parts]), np.concatenate([c for _, c in parts])
    units = [WHOLE] + [UnitIndex(f"s=k{k}", "s", f"k{k}", np.arange(100 * k, 100 * k + 100)) for k in range(2)]
    metrics = [
        MetricInput(metric_def("pass_rate", spec), spec, base, cand),
        MetricInput(metric_def("score", advisory), advisory, base, cand),
    ]
    results = decide(metrics, units, GATE, seed=0)
    ungated = [u for u in results if not u.gated]
    p_worse = np.array([u.p_value for u in results])
    p_better = np.array([u.p_improved for u in results])
    r_worse = int(np.count_nonzero(bh_qvalues(p_worse) <= 0.05))
    assert r_worse >= 1 and all(not u.blocking for u in ungated)
    level = 0.05 * r_worse / 6 + 0.05 * max(int(np.count_nonzero(bh_qvalues(p_better) <= 0.05)), 1) / 6
    assert all(u.ci_level == pytest.approx(1 - level) for u in ungated)
    for u in ungated:
        assert (u.verdict == "regressed") == (oriented(u)[1] < -0.02), u

"""evals.compare.stats against scipy and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from scipy.special import comb

from evals.compare import stats


@pytest.mark.parametrize(("b", "c"), [(0, 0), (3, 0), (7, 2), (12, 12), (1, 9), (40, 25)])
def test_mcnemar_without_margin_is_the_exact_binomial_test(b, c):
    expected = 1.0 if b + c == 0 else sps.binomtest(b, b + c, 0.5, alternative="greater").pvalue
    assert stats.mcnemar_worse(b, c, n=100) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_margin_makes_the_test_stricter_and_saturates():
    assert stats.mcnemar_worse(8, 2, 100, margin=0.02) > stats.mcnemar_worse(8, 2, 100)
    # π0 = ½ + 0.02·100/(2·10) = 0.6: the binomial tail at that success probability
    assert stats.mcnemar_worse(8, 2, 100, margin=0.02) == pytest.approx(sps.binom.sf(7, 10, 0.6))
    # a band wider than every discordant pair could show: nothing can be significant
    assert stats.mcnemar_worse(3, 0, 100, margin=0.05) == 1.0


def test_paired_clt_matches_normal_tail():
    rng = np.random.default_rng(1)
    d = rng.normal(-0.05, 0.4, size=500)
    mean, se, p_worse, p_better = stats.paired_clt(d, margin=0.02)
    assert se == pytest.approx(d.std(ddof=1) / math.sqrt(500))
    assert p_worse == pytest.approx(sps.norm.cdf((mean + 0.02) / se))
    assert p_better == pytest.approx(sps.norm.sf((mean - 0.02) / se))


def test_paired_clt_with_no_variance_is_decided_by_the_mean():
    assert stats.paired_clt(np.full(10, -0.1), margin=0.02)[2] == 0.0
    assert stats.paired_clt(np.zeros(10), margin=0.02)[2:] == (1.0, 1.0)


@pytest.mark.parametrize("values", ["binary", "continuous"])
def test_bootstrap_mean_interval_agrees_with_scipy(values):
    rng = np.random.default_rng(7)
    n = 400
    if values == "binary":
        base = (rng.random(n) < 0.7).astype(float)
        cand = (rng.random(n) < 0.65).astype(float)
    else:
        base = rng.random(n)
        cand = np.clip(base + rng.normal(-0.03, 0.2, n), 0, 1)
    d = cand - base
    ours = stats.percentile_interval(stats.bootstrap_mean(d, 20_000, np.random.default_rng(0)), 0.9)
    ref = sps.bootstrap((d,), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.9, random_state=0)
    se = d.std(ddof=1) / math.sqrt(n)
    assert ours[0] == pytest.approx(ref.confidence_interval.low, abs=0.1 * se)
    assert ours[1] == pytest.approx(ref.confidence_interval.high, abs=0.1 * se)


def test_bootstrap_is_reproducible_and_chunked(monkeypatch):
    d = np.random.default_rng(3).normal(size=1000)
    monkeypatch.setattr(stats, "CHUNK_ELEMENTS", 7_000)  # force many chunks, one partial
    first = stats.bootstrap_mean(d, 50, np.random.default_rng(5))
    again = stats.bootstrap_mean(d, 50, np.random.default_rng(5))
    assert np.array_equal(first, again)
    assert first.shape == (50,)
    assert abs(first.mean() - d.mean()) < 4 * d.std() / math.sqrt(1000)


def test_bootstrap_percentile_delta_is_paired():
    rng = np.random.default_rng(11)
    base = rng.gamma(2.0, 100.0, 300)
    dist = stats.bootstrap_percentile_delta(base, base + 50.0, 95, 500, rng)
    # same cases on both sides: a constant shift has no sampling noise at all
    assert np.allclose(dist, 50.0)


def test_bootstrap_percentile_interval_agrees_with_scipy_paired():
    rng = np.random.default_rng(2)
    base = rng.gamma(2.0, 100.0, 250)
    cand = base * rng.lognormal(0.05, 0.2, 250)
    dist = stats.bootstrap_percentile_delta(base, cand, 95, 10_000, np.random.default_rng(0))
    ref = sps.bootstrap(
        (base, cand),
        lambda b, c, axis: np.percentile(c, 95, axis=axis) - np.percentile(b, 95, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=10_000,
        method="percentile",
        confidence_level=0.9,
        random_state=0,
    )
    low, high = stats.percentile_interval(dist, 0.9)
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert low == pytest.approx(ref.confidence_interval.low, abs=0.1 * width)
    assert high == pytest.approx(ref.confidence_interval.high, abs=0.1 * width)


def test_bootstrap_p_value_inverts_the_interval():
    dist = np.linspace(-0.1, 0.1, 1001)
    worse, better = stats.bootstrap_p_worse(dist, 0.02)
    assert worse == pytest.approx((1 + np.count_nonzero(dist >= -0.02)) / 1002)
    assert better == pytest.approx((1 + np.count_nonzero(dist <= 0.02)) / 1002)
    shifted = dist - 0.2  # every resample worse than the band
    assert stats.bootstrap_p_worse(shifted, 0.02)[0] == pytest.approx(1 / 1002)


def test_mde_normal_approximation():
    assert stats.mde(0.03, 0.05, 0.8) == pytest.approx((1.6448536 + 0.8416212) * 0.03, rel=1e-6)
    assert stats.mde(0.03, 0.05 / 4, 0.8, margin=0.02) == pytest.approx(
        0.02 + (sps.norm.ppf(1 - 0.0125) + sps.norm.ppf(0.8)) * 0.03
    )


def test_mde_gives_the_stated_power():
    # a true drop of mde(se) is rejected with probability `power` by the one-sided z-test
    se, alpha, power, margin = 0.04, 0.01, 0.9, 0.02
    drop = stats.mde(se, alpha, power, margin)
    # reject when (mean + margin)/se < -z_{1-alpha}, with mean ~ N(-drop, se)
    reject_prob = sps.norm.cdf((drop - margin) / se - sps.norm.ppf(1 - alpha))
    assert reject_prob == pytest.approx(power, rel=1e-9)


@pytest.mark.parametrize(("b", "c", "n"), [(0, 0, 5), (4, 0, 4), (3, 1, 20), (0, 0, 400), (30, 12, 250)])
def test_smoothed_mean_delta_is_agresti_min_wald_plus_2(b, c, n):
    """Agresti & Min (2005) adjusted Wald for matched pairs, as in Agresti's own R code
    (users.stat.ufl.edu/~aa/cda/R/matched): diff = (c−b)/(n+2), sd = √((b+c+1) − (c−b)²/(n+2))/(n+2)."""
    d = np.array([-1.0] * b + [1.0] * c + [0.0] * (n - b - c))
    mean, se = stats.smoothed_mean_delta(d)
    assert mean == pytest.approx((c - b) / (n + 2))
    assert se == pytest.approx(math.sqrt((b + c + 1) - (c - b) ** 2 / (n + 2)) / (n + 2))
    assert se > 0  # where the plain SE of all-equal deltas is 0
    if b + c > 10:  # and it is close to the plain SE once there is data
        assert se == pytest.approx(d.std(ddof=1) / math.sqrt(n), rel=0.05)


def test_smoothed_mean_delta_scale_sets_the_floor():
    assert stats.smoothed_mean_delta(np.zeros(8), scale=50.0)[1] == pytest.approx(50.0 / 10)
    mean, se = stats.smoothed_mean_delta(np.full(3, -0.3))
    assert mean == pytest.approx(-0.9 / 5) and se == pytest.approx(math.sqrt((0.27 + 1) / 5 - mean**2) / math.sqrt(5))


def test_holm_hand_computed():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted: 0.005·4=0.02, 0.01·3=0.03, 0.03·2=0.06, 0.04·1=0.04→0.06 (monotone)
    assert np.allclose(stats.holm(p), [0.03, 0.06, 0.06, 0.02])
    assert np.allclose(stats.holm(np.array([0.5, 0.9])), [1.0, 1.0])
    assert stats.holm(np.array([])).size == 0


def test_weighted_holm_hand_computed_and_equal_weights_are_holm():
    p = np.array([0.004, 0.02, 0.01, 0.0])
    w = np.array([0.5, 0.4, 0.1, 0.0])
    # order by p/w: 0.008, 0.05, 0.1; weight left: 1.0, 0.5, 0.1
    # 0.004·1/0.5 = 0.008; 0.02·0.5/0.4 = 0.025; 0.01·0.1/0.1 = 0.01 → 0.025 (monotone); weight 0 → 1
    assert np.allclose(stats.weighted_holm(p, w), [0.008, 0.025, 0.025, 1.0])
    rng = np.random.default_rng(3)
    many = rng.random(30)
    assert np.allclose(stats.weighted_holm(many, np.full(30, 1 / 30)), stats.holm(many))
    assert np.all(stats.weighted_holm(many, np.zeros(30)) == 1.0)


def test_weighted_holm_controls_the_familywise_error():
    rng = np.random.default_rng(4)
    w = np.array([0.5, 0.2] + [0.05] * 6)
    rejected = sum(bool((stats.weighted_holm(rng.random(8), w) <= 0.05).any()) for _ in range(4000))
    assert rejected / 4000 <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 4000)


def test_bh_hand_computed_and_scipy():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted: 0.005·4/1=0.02, 0.01·4/2=0.02, 0.03·4/3=0.04, 0.04·4/4=0.04
    assert np.allclose(stats.bh_qvalues(p), [0.02, 0.04, 0.04, 0.02])
    rng = np.random.default_rng(0)
    many = rng.random(200) ** 3
    assert np.allclose(stats.bh_qvalues(many), sps.false_discovery_control(many, method="bh"))


def test_pass_at_k_unbiased_estimator():
    n = np.array([5, 5, 5, 10, 2])
    c = np.array([0, 1, 5, 3, 1])
    got = stats.pass_at_k(n, c, 3)
    expected = [0.0, 1 - math.comb(4, 3) / math.comb(5, 3), 1.0, 1 - math.comb(7, 3) / math.comb(10, 3)]
    assert np.allclose(got[:4], expected)
    assert math.isnan(got[4])  # 2 attempts cannot estimate pass@3
    assert np.allclose(stats.pass_at_k(n[:4], c[:4], 1), c[:4] / n[:4])


def test_pass_at_k_matches_the_binomial_form_broadcasts_and_stays_small_for_large_k():
    rng = np.random.default_rng(3)
    n = rng.integers(0, 12, 500).astype(float)
    c = np.minimum(rng.integers(0, 12, 500), n)
    for k in (1, 2, 5, 11):
        with np.errstate(invalid="ignore", divide="ignore"):
            expected = np.where(n >= k, 1.0 - comb(n - c, k) / comb(n, k), np.nan)
        assert np.allclose(stats.pass_at_k(n, c, k), expected, equal_nan=True, rtol=0, atol=1e-12)
    assert np.allclose(stats.pass_at_k(5, [0, 1, 2, 3], 3), [0.0, 0.6, 0.9, 1.0])  # n broadcast over c
    # 1 − C(1998, 1000) / C(2000, 1000), exactly 1 − (1000·999)/(2000·1999); the binomials overflow.
    assert stats.pass_at_k([2000], [2], 1000)[0] == pytest.approx(1 - 1000 * 999 / (2000 * 1999), rel=1e-12)
    assert np.isnan(stats.pass_at_k(np.full(100_000, 5.0), np.full(100_000, 2.0), 5000)).all()

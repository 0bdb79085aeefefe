"""evals.compare.evidence: the betting e-process, weighted e-Holm and the anytime-valid bound
(docs/spec.md#more-evidence)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from evals.compare.evidence import (
    LAMBDAS,
    MAX_BET,
    bets,
    e_holm,
    log_e,
    log_wealth,
    log_wealth_counts,
)


def test_the_grid():
    assert LAMBDAS.shape == (24,)
    assert LAMBDAS[0] == pytest.approx(0.01) and LAMBDAS[-1] == pytest.approx(0.93)
    assert np.all(np.diff(LAMBDAS) > 0)
    # At the gate's default δ nothing is clipped: the wealth is exactly Π(1 + λ s (y − δ)).
    for side in ("worse", "not_worse"):
        assert np.array_equal(bets(0.02, side), LAMBDAS)


@pytest.mark.parametrize("delta", [0.0, 0.02, 0.1, 0.3, 0.5, -0.5, -0.99, 0.99])
@pytest.mark.parametrize("side", ["worse", "not_worse"])
def test_factors_stay_positive_at_the_extremes(delta, side):
    lw = log_wealth(np.array([[-1.0], [1.0], [0.0]]), delta, side)
    assert np.all(np.isfinite(lw))
    assert np.all(lw >= math.log(1 - MAX_BET) - 1e-12)


def test_log_wealth_is_additive_and_empty_is_zero():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, size=(3, 40)), rng.uniform(-1, 1, size=(3, 17))
    for side in ("worse", "not_worse"):
        for delta in (0.02, 0.3):
            whole = log_wealth(np.concatenate([a, b], axis=-1), delta, side)
            assert whole.shape == (3, 24)
            np.testing.assert_allclose(whole, log_wealth(a, delta, side) + log_wealth(b, delta, side), atol=1e-10)
            empty = log_wealth(np.empty((3, 0)), delta, side)
            assert empty.shape == (3, 24) and np.all(empty == 0)
            assert np.all(log_e(empty) == 0)  # the e-value of an empty sample is 1


def test_counts_equal_the_expanded_arrays():
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(0, 60))
        b = int(rng.integers(0, n + 1))
        c = int(rng.integers(0, n - b + 1))
        y = np.concatenate([np.ones(b), -np.ones(c), np.zeros(n - b - c)])
        rng.shuffle(y)
        delta = float(rng.choice([0.0, 0.02, 0.2, 0.5, -0.3]))
        for side in ("worse", "not_worse"):
            np.testing.assert_allclose(log_wealth_counts(b, c, n, delta, side), log_wealth(y, delta, side), atol=1e-9)
    got = log_wealth_counts(np.array([[1], [2]]), np.array([0, 1, 2]), 10, 0.02, "worse")
    assert got.shape == (2, 3, 24)
    assert np.allclose(got[1, 2], log_wealth(np.array([1, 1, -1, -1, 0, 0, 0, 0, 0, 0.0]), 0.02, "worse"))
    with pytest.raises(ValueError):
        log_wealth_counts(5, 6, 10, 0.02, "worse")
    with pytest.raises(ValueError):
        log_wealth(np.array([1.5]), 0.02, "worse")


def test_log_e_is_stable():
    lw = np.array([[1000.0] + [0.0] * 23, [-1000.0] * 24])
    got = log_e(lw)
    assert got[0] == pytest.approx(1000.0 - math.log(24))
    assert got[1] == pytest.approx(-1000.0)


def _null_drops(rng, shape, delta, kind):
    """y in [−1, 1] with E[y] = δ exactly: binary pairs (b/c) or a bounded continuous score."""
    if kind == "binary":
        # P(+1) − P(−1) = δ with discordance 0.3.
        p_up, p_down = (0.3 + delta) / 2, (0.3 - delta) / 2
        u = rng.random(shape)
        return np.where(u < p_up, 1.0, np.where(u < p_up + p_down, -1.0, 0.0))
    return np.clip(delta + rng.uniform(-0.6, 0.6, shape), -1, 1)  # symmetric, no clipping at δ ≤ 0.4


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("delta", "side", "kind"),
    [(0.02, "worse", "binary"), (0.02, "not_worse", "binary"), (0.2, "worse", "score"), (0.0, "not_worse", "score")],
)
def test_under_the_null_the_mean_e_is_at_most_1_and_ville_holds(delta, side, kind):
    rng = np.random.default_rng(2)
    reps, looks, batch, alpha = 20_000, 10, 25, 0.05
    total = np.zeros((reps, 24))
    ever = np.zeros(reps, dtype=bool)
    for _ in range(looks):
        total += log_wealth(_null_drops(rng, (reps, batch), delta, kind), delta, side)
        e = np.exp(log_e(total))
        ever |= e >= 1 / alpha
    # E[e_T] = 1 exactly at the boundary (each λ's wealth is a martingale); the mean is heavy-tailed.
    assert e.mean() <= 1.15
    assert ever.mean() <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_power_a_big_drop_reaches_one_over_alpha():
    rng = np.random.default_rng(3)
    y = np.where(rng.random((2000, 100)) < 0.35, 1.0, 0.0)  # mean drop 0.35, nothing fail→pass
    reached = log_e(log_wealth(y, 0.02, "worse")) >= math.log(1 / 0.01)
    assert reached.mean() >= 0.99
    # and an equal sample says nothing for "not_worse"
    assert np.all(log_e(log_wealth(y, 0.02, "not_worse")) < 0)


def _brute_e_holm(e, w, level):
    m = len(e)
    pos = [j for j in range(m) if w[j] > 0]
    out = np.zeros(m, dtype=bool)
    for i in pos:
        others = [j for j in pos if j != i]
        ok = True
        for r in range(len(others) + 1):
            for sub in itertools.combinations(others, r):
                s = [i, *sub]
                if sum(w[j] * e[j] for j in s) / sum(w[j] for j in s) < 1 / level:
                    ok = False
                    break
            if not ok:
                break
        out[i] = ok
    return out


def _brute_margin(e, w, level):
    """How far the closest subset's weighted mean is from 1/level (relative): near-ties in float."""
    m, best = len(e), math.inf
    pos = [j for j in range(m) if w[j] > 0]
    for r in range(1, len(pos) + 1):
        for s in itertools.combinations(pos, r):
            mean = sum(w[j] * e[j] for j in s) / sum(w[j] for j in s)
            best = min(best, abs(mean * level - 1))
    return best


@pytest.mark.e2e
def test_e_holm_is_closed_testing_over_every_subset():
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(4000):
        m = int(rng.integers(1, 9))
        level = float(rng.choice([0.01, 0.05, 0.2]))
        # e-values around 1/level, with ties and zero weights.
        e = np.exp(rng.normal(-math.log(level), 1.5, size=m))
        if rng.random() < 0.4:
            e = rng.choice(e[: max(1, m // 2)], size=m)  # ties
        if rng.random() < 0.2:
            e[rng.random(m) < 0.3] = 1 / level  # exactly at the threshold
        w = rng.choice([0.0, 0.05, 0.1, 0.3, 0.7, 1.0], size=m)
        if rng.random() < 0.3:
            w = rng.random(m)
        got = e_holm(np.log(e), w, level)
        want = _brute_e_holm(e, w, level)
        if not np.array_equal(got, want):
            assert _brute_margin(e, w, level) < 1e-12, (e, w, level, got, want)
        else:
            checked += 1
        assert not np.any(got[w == 0])
    assert checked >= 3900


def test_e_holm_vectorised_shapes_and_extremes():
    rng = np.random.default_rng(5)
    w = np.array([0.3, 0.2, 0.2, 0.0, 0.3])
    le = rng.normal(3, 2, size=(7, 6, 5))
    got = e_holm(le, w, 0.05)
    assert got.shape == (7, 6, 5) and got.dtype == bool
    for idx in np.ndindex(7, 6):
        assert np.array_equal(got[idx], e_holm(le[idx], w, 0.05))
        assert np.array_equal(got[idx], _brute_e_holm(np.exp(le[idx]), w, 0.05))
    # Overflowing e-values stay exact in log space.
    huge = e_holm(np.array([2000.0, 1500.0, -3.0]), np.array([0.5, 0.25, 0.25]), 0.05)
    assert huge.tolist() == [True, True, False]
    # One unit: rejected iff e ≥ 1/level.
    assert e_holm(np.array([math.log(20.0) + 1e-9]), np.array([1.0]), 0.05).tolist() == [True]
    assert e_holm(np.array([math.log(19.9)]), np.array([1.0]), 0.05).tolist() == [False]
    assert e_holm(np.zeros((3, 0)), np.zeros(0), 0.05).shape == (3, 0)


@pytest.mark.e2e
def test_e_holm_family_wise_error_under_the_global_null():
    """Every unit null, dependent units (overall = mean of its slices): FWER ≤ level over 10 looks."""
    rng = np.random.default_rng(6)
    reps, slices, n, level, delta = 6000, 4, 25, 0.05, 0.02
    w = np.array([0.3, 0.175, 0.175, 0.175, 0.175])
    total = np.zeros((reps, slices + 1, 24))
    ever = np.zeros(reps, dtype=bool)
    for _ in range(10):
        y = _null_drops(rng, (reps, slices, n), delta, "binary")
        per_slice = log_wealth(y, delta, "worse")
        overall = log_wealth(y.reshape(reps, slices * n), delta, "worse")
        total += np.concatenate([overall[:, None], per_slice], axis=1)
        ever |= e_holm(log_e(total), w, level).any(axis=1)
    assert ever.mean() <= level + 3 * math.sqrt(level * (1 - level) / reps)


def test_the_wealth_is_monotone_in_delta_clipped_bets_included():
    """What makes "not_worse" rejecting at δ the same as the drop's upper confidence bound below δ."""
    rng = np.random.default_rng(7)
    y = np.where(rng.random(3000) < 0.1, 1.0, np.where(rng.random(3000) < 0.1, -1.0, 0.0))
    grid = np.linspace(-1, 1, 81)
    for sample in (y, np.ones(10), -np.ones(10), rng.uniform(-1, 1, 50)):
        values = [float(log_e(log_wealth(sample, d, "not_worse"))) for d in grid]
        assert np.all(np.diff(values) >= -1e-12)
        worse = [float(log_e(log_wealth(sample, d, "worse"))) for d in grid]
        assert np.all(np.diff(worse) <= 1e-12)

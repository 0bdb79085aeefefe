"""The anytime-valid statistics of gate.more_evidence (evals.compare.evidence): the e-process is a
supermartingale's mixture under its null (Ville: it crosses 1/α at most α of the time over every
look), e-Holm equals brute-force closed testing, and counts give the same wealth as arrays."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evals.compare.evidence import LAMBDAS, drop_upper_bound, e_holm, log_e, log_wealth, log_wealth_counts


def test_wealth_is_additive_over_batches_and_counts_match_arrays():
    rng = np.random.default_rng(1)
    y = rng.choice([-1.0, 0.0, 1.0], size=60, p=[0.1, 0.7, 0.2])
    whole = log_wealth(y, 0.02, "worse")
    assert whole.shape == (len(LAMBDAS),)
    np.testing.assert_allclose(whole, log_wealth(y[:25], 0.02, "worse") + log_wealth(y[25:], 0.02, "worse"))
    b, c = int((y == 1).sum()), int((y == -1).sum())
    for side in ("worse", "not_worse"):
        np.testing.assert_allclose(log_wealth_counts(b, c, y.size, 0.02, side), log_wealth(y, 0.02, side))
    assert log_e(log_wealth(np.empty(0), 0.02, "worse")) == pytest.approx(0.0)


def test_factors_stay_positive_at_the_extremes():
    for y in (-1.0, 1.0):
        for side in ("worse", "not_worse"):
            assert np.isfinite(log_wealth([y], 0.05, side)).all()
            assert (log_wealth([y], 0.05, side) > np.log(1e-12)).all()


@pytest.mark.parametrize("p_fail,p_fix", [(0.10, 0.08), (0.02, 0.0), (0.30, 0.28)])
def test_under_the_null_the_process_crosses_one_over_alpha_at_most_alpha_of_the_time(p_fail, p_fix):
    """Mean drop exactly δ = p_fail − p_fix = 0.02, 40 looks of 25 pairs each: Ville's bound."""
    rng = np.random.default_rng(7)
    reps, looks, per = 4000, 40, 25
    b = rng.binomial(per, p_fail, size=(reps, looks))
    c = rng.binomial(per - b, p_fix / (1 - p_fail))
    steps = log_wealth_counts(b, c, per, 0.02, "worse")  # (reps, looks, L)
    path = log_e(np.cumsum(steps, axis=1))
    crossed = (path >= np.log(1 / 0.05)).any(axis=1).mean()
    assert crossed <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
    assert np.exp(path[:, 0]).mean() <= 1.0 + 4 * np.exp(path[:, 0]).std() / np.sqrt(reps)


def test_a_large_drop_reaches_the_threshold():
    y = np.r_[np.ones(10), np.zeros(15)]  # 25 cases, 10 broke: a drop of 0.4
    assert log_e(log_wealth(y, 0.02, "worse")) > np.log(1 / 0.05)
    assert log_e(log_wealth(np.tile(y, 3), 0.02, "worse")) > np.log(1 / 0.001)  # three looks at it
    assert log_e(log_wealth(y, 0.02, "not_worse")) < 0


def _brute(e: np.ndarray, w: np.ndarray, level: float) -> np.ndarray:
    live = [i for i in range(e.size) if w[i] > 0]
    out = np.zeros(e.size, dtype=bool)
    for i in live:
        others = [j for j in live if j != i]
        out[i] = all(
            (w[i] * e[i] + sum(w[j] * e[j] for j in s)) / (w[i] + sum(w[j] for j in s)) >= 1 / level - 1e-9
            for k in range(len(others) + 1)
            for s in itertools.combinations(others, k)
        )
    return out


def test_e_holm_is_closed_testing():
    rng = np.random.default_rng(3)
    rejected = 0
    for _ in range(3000):
        m = int(rng.integers(1, 9))
        e = np.exp(rng.normal(2.5, 2.5, size=m))
        if rng.random() < 0.3:
            e[rng.integers(0, m)] = e[0]  # ties
        w = rng.random(m) * (rng.random(m) > 0.2)
        if w.sum() == 0:
            w[0] = 1.0
        w = w / w.sum()
        got = e_holm(np.log(e), w, 0.05)
        want = _brute(e, w, 0.05)
        assert (got == want).all(), (e, w)
        rejected += int(got.sum())
    assert rejected > 100  # the instances are not all trivial
    logs = np.log(np.exp(rng.normal(2.5, 2.5, size=(4, 3, 5))))
    w = np.array([0.3, 0.2, 0.2, 0.2, 0.1])
    batch = e_holm(logs, w, 0.05)
    assert batch.shape == logs.shape
    assert all((batch[i, j] == _brute(np.exp(logs[i, j]), w, 0.05)).all() for i in range(4) for j in range(3))


def test_zero_weight_units_are_never_rejected():
    assert not e_holm(np.log([1e9, 1e9]), np.array([1.0, 0.0]), 0.05)[1]


def test_drop_upper_bound_is_where_the_pass_side_crosses():
    y = np.zeros(3000)
    y[:30] = 1.0  # drop 0.01
    bound = drop_upper_bound(y, 0.05)
    assert 0.01 < bound < 0.05
    assert log_e(log_wealth(y, bound, "not_worse")) >= np.log(20) - 1e-9
    assert log_e(log_wealth(y, bound - 1e-3, "not_worse")) < np.log(20)
    assert drop_upper_bound(y[:20], 0.05) == 1.0 or drop_upper_bound(y[:20], 0.05) > bound

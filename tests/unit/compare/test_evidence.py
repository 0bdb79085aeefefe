"""evals.compare.evidence: the later looks' t-test on per-case means and their share of α
(docs/spec.md#more-evidence)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evals.compare.evidence import drop_test, look_levels


def test_the_looks_share_the_level_and_later_ones_get_more():
    levels = look_levels(0.01, 10)
    assert levels.shape == (10,) and levels.sum() == pytest.approx(0.01)
    assert np.all(np.diff(levels) > 0)  # a later look holds more attempts
    assert levels[0] == pytest.approx(0.0001) and levels[-1] == pytest.approx(0.0019)
    assert look_levels(0.01, 1).tolist() == pytest.approx([0.01])
    assert look_levels(0.01, 0).size == 0
    with pytest.raises(ValueError, match="level must be in"):
        look_levels(1.5, 3)


def _sums(d: np.ndarray) -> tuple[float, float, int]:
    return float(d.sum()), float(d @ d), d.size


def test_the_test_is_student_s_one_sided_t_test_on_the_per_case_means():
    rng = np.random.default_rng(0)
    for n in (2, 5, 25, 400):
        d = np.clip(rng.normal(0.1, 0.3, n), -1, 1)
        worse = stats.ttest_1samp(d, 0.02, alternative="greater").pvalue
        better = stats.ttest_1samp(d, 0.02, alternative="less").pvalue
        assert drop_test(*_sums(d), 0.02, "worse") == pytest.approx(worse, rel=1e-9)
        assert drop_test(*_sums(d), 0.02, "not_worse") == pytest.approx(better, rel=1e-9)


def test_a_repeated_answer_is_the_same_case_not_another_one():
    """A deterministic target answers every re-run as at the first look: each case's mean over
    its attempts is its first-look value, so the test is the first look's data, whatever the
    number of attempts. Counting the attempts as cases would make 25 cases 250 and the p-value tiny."""
    first = np.array([1.0] * 7 + [-1.0] * 2 + [0.0] * 16)  # 9 broke, 2 were fixed, of 25
    attempts = np.tile(first[:, None], (1, 10))
    per_case = attempts.mean(axis=1)
    assert drop_test(*_sums(per_case), 0.02) == drop_test(*_sums(first), 0.02) > 0.005
    assert drop_test(*_sums(attempts.ravel()), 0.02) < 1e-6  # what counting attempts would claim


def test_edge_cases():
    assert drop_test(0.5, 0.25, 1, 0.02) == 1.0  # one case: no spread to test against
    assert drop_test(0.0, 0.0, 0, 0.02) == 1.0
    # Every case dropped by the same amount: no spread, the side of δ decides.
    same = np.full(10, 0.3)
    assert drop_test(*_sums(same), 0.02, "worse") == 0.0
    assert drop_test(*_sums(same), 0.02, "not_worse") == 1.0
    assert drop_test(*_sums(np.zeros(10)), 0.02, "worse") == 1.0
    assert drop_test(*_sums(np.zeros(10)), 0.02, "not_worse") == 0.0
    # Σd² − (Σd)²/n is rounding noise when every value is equal: still no spread.
    thirds = np.full(30, 1 / 3)
    assert drop_test(*_sums(thirds), 0.02, "worse") == 0.0
    with pytest.raises(ValueError, match="side must be"):
        drop_test(1.0, 1.0, 3, 0.02, "sideways")  # type: ignore[arg-type]


def test_vectorised_over_replicates_and_units():
    rng = np.random.default_rng(1)
    d = rng.uniform(-1, 1, size=(4, 3, 25))
    p = drop_test(d.sum(axis=-1), (d * d).sum(axis=-1), 25, 0.02)
    assert p.shape == (4, 3)
    assert p[2, 1] == pytest.approx(drop_test(*_sums(d[2, 1]), 0.02))


def test_size_under_the_null_on_binary_per_case_drops():
    """Per-case drops of a neutral change (each case passes or fails on each side with its own
    probability, a few attempts each), exactly at the boundary: the rejection rate stays at the
    level (the simulation checks the far smaller levels of the later looks, through the gate)."""
    rng = np.random.default_rng(2)
    reps, n, k = 20_000, 25, 3
    p = rng.beta(1.4, 0.6, size=(reps, n))
    q = np.clip(p - 0.02, 0, 1)
    d = (rng.binomial(k, p) - rng.binomial(k, q)) / k
    rejected = drop_test(d.sum(axis=1), (d * d).sum(axis=1), n, 0.02) <= 0.01
    assert rejected.mean() <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / reps)

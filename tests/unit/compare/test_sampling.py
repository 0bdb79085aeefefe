"""The stratified Horvitz–Thompson estimate of an informative smoke run (evals.compare.sampling)
and the paired test built on it (evals.compare.paired, evals.compare.analysis)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evals.compare.analysis import compare
from evals.compare.sampling import Strata, stratified_estimates, stratified_mean, stratified_test
from evals.results.model import Attempt, CaseResult, Results, RunInfo, SampleDesign

# A suite of 7 cases in two strata: A = [1, 0, 0, 1, 1] of which 2 are drawn, B = [0, 1] of which 1.
POPULATION = {"A": [1.0, 0.0, 0.0, 1.0, 1.0], "B": [0.0, 1.0]}
DRAWN = {"A": 2, "B": 1}


def every_sample():
    """Every stratified sample (each equally likely), as (values, stratum codes)."""
    per_stratum = [itertools.combinations(POPULATION[h], DRAWN[h]) for h in POPULATION]
    for choice in itertools.product(*per_stratum):
        yield np.array([y for part in choice for y in part]), np.repeat(np.arange(2), [DRAWN[h] for h in POPULATION])


def test_the_estimate_is_unbiased_for_the_whole_suite_on_an_exact_example() -> None:
    sizes = np.array([len(POPULATION[h]) for h in POPULATION], dtype=float)
    estimates, variances = [], []
    for values, codes in every_sample():
        est = stratified_mean(values, Strata(codes, sizes, np.zeros(2)))
        estimates.append(est.mean)
        variances.append(est.se**2)
    truth = np.mean([y for ys in POPULATION.values() for y in ys])  # 3/7, not the drawn cases' 1/2
    assert np.mean(estimates) == pytest.approx(truth, abs=1e-12)
    # The variance estimate leaves out the finite-population correction on purpose: on average it is
    # at least the estimate's true variance over the draws (here B's one drawn case adds its y²).
    assert np.mean(variances) >= np.var(estimates) - 1e-12
    unweighted = np.mean([values.mean() for values, _ in every_sample()])
    assert unweighted != pytest.approx(truth), "the drawn cases' plain mean is biased: the example shows something"


def smoke_pair(select: bool) -> tuple[Results, Results]:
    """A 6-case smoke run of a 12-case suite: 'mixed' drawn 4 of 4, 'pass' 2 of 8."""
    base_pass = {"m0": 1, "m1": 0, "m2": 1, "m3": 0, "p0": 1, "p1": 1}
    cand_pass = {"m0": 0, "m1": 0, "m2": 0, "m3": 0, "p0": 1, "p1": 1}
    design = SampleDesign(
        history_runs=20,
        strata={
            "mixed": {"population": 4, "drawn": 4, "variance": 0.5},
            "pass": {"population": 8, "drawn": 2, "variance": 0.01},
        },
        cases={
            c: {"stratum": "mixed" if c[0] == "m" else "pass", "probability": 1.0 if c[0] == "m" else 0.25}
            for c in base_pass
        },
    )

    def run(passes: dict[str, int], started: str, sample: SampleDesign | None) -> Results:
        cases = [CaseResult(id=c, attempts=[Attempt(passed=bool(x), score=float(x))]) for c, x in passes.items()]
        info = RunInfo(
            suite="s",
            status="success",
            total_cases=6,
            completed_cases=6,
            started_at=started,
            subset="smoke",
            sample=sample,
        )
        return Results(run=info, cases=cases)

    return run(base_pass, "2026-12-01T00:00:00Z", None), run(
        cand_pass, "2026-12-02T00:00:00Z", design if select else None
    )


def test_a_smoke_run_with_inclusion_probabilities_is_weighted_to_the_suite() -> None:
    baseline, candidate = smoke_pair(select=True)
    comparison = compare(baseline, candidate, blessed=baseline)
    (overall,) = [u for u in comparison.units if u.unit == "overall"]
    # Weights N_h/N = 4/12 and 8/12: baseline 1/3·0.5 + 2/3·1 = 5/6; candidate 1/3·0 + 2/3·1 = 2/3.
    assert overall.method == "stratified-ht" and overall.ci_method == "stratified-t-inverted"
    assert overall.baseline == pytest.approx(5 / 6) and overall.candidate == pytest.approx(2 / 3)
    assert overall.delta == pytest.approx(-1 / 6)
    assert any("weighted to the full suite" in w for w in comparison.warnings)
    assert comparison.drift is not None and comparison.drift.units[0].method == "stratified-ht", "the drift guard too"
    plain = compare(*smoke_pair(select=False))
    (unweighted,) = [u for u in plain.units if u.unit == "overall"]
    assert unweighted.method == "mcnemar-mid-p" and unweighted.delta == pytest.approx(-2 / 6)
    assert not any("weighted" in w for w in plain.warnings)


def one_stratum(drawn: int, predicted: float, population: int = 50) -> Strata:
    return Strata(np.zeros(drawn, dtype=np.intp), np.array([float(population)]), np.array([predicted]))


def test_two_cases_that_flip_the_same_way_are_not_a_known_variance() -> None:
    # The history called the stratum nearly settled (S² 0.01); both drawn cases went pass→fail. Their
    # sample variance is 0, and the history's 0.01 taken as known made this a near-certain drop
    # (p ≈ 1e-45): a target noisier than its history failed A/A smoke runs this way.
    est, p_worse, _ = stratified_test(np.array([-1.0, -1.0]), one_stratum(2, 0.01), 0.02)
    assert est.se == pytest.approx(np.sqrt(1.0 / 2))  # their mean square, 1, over n_h = 2
    assert est.df == pytest.approx(2.0)  # the drawn cases' own degrees of freedom, not infinite
    assert p_worse > 0.1


def test_satterthwaite_counts_the_contradicted_stratum_with_its_own_degrees_of_freedom() -> None:
    # Stratum 0: 4 drawn cases agreeing with the history's S² 0.5 (known). Stratum 1: settled by the
    # history (S² 0.001) but its 3 drawn cases all flipped: its variance is their mean square, 1, with 3 df.
    codes = np.array([0, 0, 0, 0, 1, 1, 1], dtype=np.intp)
    strata = Strata(codes, np.array([40.0, 60.0]), np.array([0.5, 0.001]))
    d = np.array([-1.0, 0.0, 0.0, 0.0, -1.0, -1.0, -1.0])
    est = stratified_mean(d, strata)
    terms = np.array([0.4**2 * 0.5 / 4, 0.6**2 * 1.0 / 3])
    assert est.se == pytest.approx(np.sqrt(terms.sum()))
    assert est.df == pytest.approx(terms.sum() ** 2 / (terms[1] ** 2 / 3))


def test_the_history_stands_where_the_drawn_cases_agree_with_it() -> None:
    # A stratum the history measured at S² 0.4 whose two drawn cases flipped the same way: plausible for
    # that variance, so it is kept as known (what gives the informative draw its power).
    est = stratified_mean(np.array([-1.0, -1.0]), one_stratum(2, 0.4))
    assert est.se == pytest.approx(np.sqrt(0.4 / 2)) and est.df == np.inf


def test_many_replicates_at_once_give_each_replicate_s_estimate() -> None:
    rng = np.random.default_rng(3)
    codes = np.repeat(np.arange(3, dtype=np.intp), [1, 2, 5])
    strata = Strata(codes, np.array([10.0, 30.0, 60.0]), np.array([0.05, 0.2, 0.5]))
    rows = rng.integers(-1, 2, size=(40, codes.size)).astype(float)
    together = stratified_estimates(rows, strata)
    for i, row in enumerate(rows):
        alone = stratified_mean(row, strata)
        assert (together.mean[i], together.se[i], together.df[i]) == pytest.approx((alone.mean, alone.se, alone.df))

"""Estimates for a smoke run drawn with unequal inclusion probabilities (``smoke.select:
informative``, docs/spec.md#informative-smoke): the stratified Horvitz–Thompson estimator of a unit's mean and its
variance, and the one-sided paired test built on them.

The informative draw (``evals.run.smoke``) splits the suite into strata (a slice combination ×
how uncertain a case's outcome has been in the history) and draws ``n_h`` of a stratum's ``N_h``
cases, so case *i* of stratum *h* is in the subset with probability ``π_i = n_h / N_h``. Weighting
each drawn case by ``1/π_i`` (Horvitz & Thompson 1952, "A generalization of sampling without
replacement from a finite universe", JASA 47:663–685) gives, for a unit made of whole strata
(every slice value is), the stratified mean

    ȳ_st = Σ_h W_h ȳ_h,    W_h = N_h / N,

which is unbiased for the mean over all ``N`` cases of the unit, however the ``n_h`` were
allocated (Cochran 1977, *Sampling Techniques*, 3rd ed., Theorem 5.1). Its variance is estimated by

    v(ȳ_st) = Σ_h W_h² s_h² / n_h

(Cochran eq. 5.7 without the finite-population correction ``1 − n_h/N_h``: a case's paired delta is
itself noisy, run to run, and the gate on the full suite counts that noise — ``paired_clt`` uses
``s/√n`` — so a smoke run that drew a stratum whole must not report it as known exactly; this
also makes the estimate conservative for the finite suite). The test statistic
``(ȳ_st + δ) / √v`` is referred to Student's t with Satterthwaite's effective degrees of freedom
(Satterthwaite 1946, Biometrics Bull. 2:110–114; Cochran §5.4), since the informative draw puts
few cases in each stratum and a normal reference would be anti-conservative there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evals.results.model import SampleDesign


@dataclass(frozen=True)
class Strata:
    """The design of the paired rows of a smoke run: each row's stratum code and, per code, the
    stratum's size ``N_h`` in the full suite."""

    codes: np.ndarray  # int, one per paired row
    population: np.ndarray  # N_h per code
    predicted: np.ndarray  # S_h² per code, as the history predicted it

    @classmethod
    def of(cls, design: SampleDesign, ids: list[str]) -> Strata:
        """The strata of the cases ``ids`` (the candidate's paired rows, in order)."""
        names = list(design.strata)
        code = {name: i for i, name in enumerate(names)}
        codes = np.array([code[design.cases[case_id].stratum] for case_id in ids], dtype=np.intp)
        population = np.array([design.strata[name].population for name in names], dtype=float)
        predicted = np.array([design.strata[name].variance for name in names], dtype=float)
        return cls(codes, population, predicted)

    def rows(self, rows: np.ndarray | None) -> Strata:
        return self if rows is None else Strata(self.codes[rows], self.population, self.predicted)


@dataclass(frozen=True)
class Estimate:
    """``mean`` (ȳ_st), its standard error ``se`` (√v) and Satterthwaite's degrees of freedom."""

    mean: float
    se: float
    df: float


def stratified_mean(y: np.ndarray, strata: Strata, *, rates: bool = True) -> Estimate:
    """The stratified (Horvitz–Thompson) mean of ``y`` over the strata its rows are in, with its
    standard error and effective degrees of freedom (see the module docstring).

    For ``rates`` (values in [0, 1], what the history measures) each ``s_h²`` is at least the
    variance the history predicted for the stratum when the draw was made (``Stratum.variance``:
    the run-to-run variance of its cases' outcomes, the variance of their paired deltas under no
    change), estimated from ``N_h`` cases over every history run where ``s_h²`` has ``n_h`` of
    them; a stratum represented by a single row uses its own ``y²`` (an unbiased estimate of
    ``E[d²] ≥ Var d``) for ``s_h²``. For other values (latency, tokens, cost) a singleton stratum
    takes the pooled within-stratum variance of the unit, else the variance of ``y``. A stratum
    with no row at all (every case of it dropped from the pairing: errored or changed) is left out
    and the weights of the others renormalised: the estimate is then of the cases that could be
    paired.
    """
    codes = strata.codes
    present = np.unique(codes)
    n_h = np.bincount(codes, minlength=strata.population.size)[present].astype(float)
    sums = np.bincount(codes, weights=y, minlength=strata.population.size)[present]
    means = sums / n_h
    centred = y - means[np.searchsorted(present, codes)]
    squares = np.bincount(codes, weights=centred * centred, minlength=strata.population.size)[present]
    if rates:
        # A singleton's own y² (for a paired delta, an unbiased estimate of E[d²] ≥ Var d): a stratum
        # the history called settled whose one drawn case flipped is not settled.
        fallback = np.bincount(codes, weights=y * y)[present] / n_h
    elif (n_h > 1).any():
        fallback = np.full(present.size, squares[n_h > 1].sum() / (n_h[n_h > 1] - 1).sum())
    else:
        fallback = np.full(present.size, float(y.var(ddof=1)) if y.size > 1 else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = np.where(n_h > 1, squares / (n_h - 1), fallback)
    # Each stratum's degrees of freedom: n_h − 1 for its own s_h² (1 for a singleton's y²) ...
    freedom = np.maximum(n_h - 1.0, 1.0)
    if rates:
        # ... but never below what the history predicted: two or three drawn cases that happen to
        # agree say far less about a stratum's noise than its N_h cases over 20 runs (s_h² = 0 from
        # two flipped cases made 45% of A/A smoke runs of 50 of 500 fail). Where the prediction is
        # the larger, it is a variance known from the history, with no sampling error of its own
        # worth counting here: infinite degrees of freedom.
        known = strata.predicted[present] >= s2
        s2 = np.where(known, strata.predicted[present], s2)
        freedom = np.where(known, np.inf, freedom)
    weights = strata.population[present] / strata.population[present].sum()
    mean = float(np.dot(weights, means))
    terms = weights * weights * s2 / n_h
    var = float(terms.sum())
    # Satterthwaite: v² / Σ (term_h² / df_h).
    denominator = float(np.sum(terms * terms / freedom))
    df = var * var / denominator if denominator > 0 else math.inf
    return Estimate(mean, math.sqrt(var), max(df, 1.0))


def stratified_test(
    d: np.ndarray, strata: Strata, margin: float, *, rates: bool = True
) -> tuple[Estimate, float, float]:
    """One-sided tests of the stratified mean of the oriented paired deltas ``d``: returns the
    estimate, ``p_worse`` for H0: Δ ≥ −margin (small when the candidate is worse by more than the
    tolerance) and ``p_better`` for H0: Δ ≤ margin, from Student's t with the estimate's degrees
    of freedom. With a zero standard error (every drawn case has the same delta in each stratum)
    the p-values are 0 or 1, as :func:`evals.compare.stats.paired_clt` gives them."""
    est = stratified_mean(d, strata, rates=rates)
    if est.se == 0.0:
        return est, 0.0 if est.mean < -margin else 1.0, 0.0 if est.mean > margin else 1.0
    from scipy.stats import t  # imported here: scipy is slow to load and only smoke runs need it

    return est, float(t.cdf((est.mean + margin) / est.se, est.df)), float(t.sf((est.mean - margin) / est.se, est.df))


def t_quantile(q: float, df: float) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))

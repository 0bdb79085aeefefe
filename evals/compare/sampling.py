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


@dataclass(frozen=True)
class Estimates:
    """:class:`Estimate` for many rows of values at once (one per leading index of ``y``)."""

    mean: np.ndarray
    se: np.ndarray
    df: np.ndarray


# The level at which a stratum's drawn cases contradict the variance the history predicted for it.
CONTRADICTED = 0.05


def stratified_estimates(y: np.ndarray, strata: Strata, *, rates: bool = True) -> Estimates:
    """:func:`stratified_mean` of every row of ``y`` (shape ``(..., rows)``) at once, so that the
    simulation of the draw (``benchmarks/sim_smoke.py``) tests its replicates with this code."""
    values = np.asarray(y, dtype=float)
    shape = values.shape[:-1]
    values = values.reshape(-1, values.shape[-1])
    present, index = np.unique(strata.codes, return_inverse=True)
    member = np.zeros((index.size, present.size))
    member[np.arange(index.size), index] = 1.0
    n_h = member.sum(axis=0)
    means = values @ member / n_h
    centred = values - means[:, index]
    squares = (centred * centred) @ member
    several = n_h > 1
    # Each stratum's s_h² and the degrees of freedom of its estimate: n_h − 1 for the sample variance.
    s2 = np.where(several, squares / np.maximum(n_h - 1.0, 1.0), 0.0)
    freedom = np.broadcast_to(np.maximum(n_h - 1.0, 1.0), s2.shape)
    if rates:
        s2, freedom = _rate_variances(values, member, n_h, s2, strata.predicted[present])
    elif several.any():
        pooled = squares[:, several].sum(axis=1) / (n_h[several] - 1.0).sum()
        s2 = np.where(several, s2, pooled[:, None])
    else:
        spread = values.var(axis=1, ddof=1) if values.shape[1] > 1 else np.zeros(values.shape[0])
        s2 = np.repeat(spread[:, None], present.size, axis=1)
    population = strata.population[present]
    weights = population / population.sum()
    terms = weights * weights * s2 / n_h
    var = terms.sum(axis=1)
    # Satterthwaite: v² / Σ (term_h² / df_h), over the strata the unit's rows are in.
    denominator = np.sum(terms * terms / freedom, axis=1)
    safe = np.where(denominator > 0, denominator, 1.0)
    df = np.where(denominator > 0, var * var / safe, np.inf)
    return Estimates((means @ weights).reshape(shape), np.sqrt(var).reshape(shape), np.maximum(df, 1.0).reshape(shape))


def _rate_variances(
    values: np.ndarray, member: np.ndarray, n_h: np.ndarray, sample: np.ndarray, predicted: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``s_h²`` and its degrees of freedom for paired deltas of a rate (see :func:`stratified_mean`).

    What a stratum's drawn cases show is the larger of their sample variance and their mean square
    ``Σ d²/n_h`` — a paired delta's variance under no change, with ``n_h`` degrees of freedom (no
    mean is estimated), which two cases that flipped the same way do not hide (their sample
    variance is 0). The history's ``S_h²`` is the better estimate (``N_h`` cases over every history
    run) and is taken as known — infinite degrees of freedom, so a smoke run is tested with the
    variance the history measured — unless the drawn cases contradict it: their mean square is
    implausibly large for it (``n_h·m/S_h²`` beyond χ²'s ``1 − CONTRADICTED`` quantile with ``n_h``
    df), as when the target became noisier than its recorded flip rates, or a stratum the history
    called settled flips. Then the stratum's variance is what its cases show, with their own df."""
    from scipy.special import chdtrc  # χ²'s survival function; scipy is slow to load, only smoke runs need it

    mean_square = (values * values) @ member / n_h
    with np.errstate(divide="ignore", invalid="ignore"):
        contradicted = chdtrc(n_h, n_h * mean_square / predicted) < CONTRADICTED
    shown = np.maximum(sample, mean_square)
    own = np.where(mean_square >= sample, n_h, np.maximum(n_h - 1.0, 1.0))
    known = ~contradicted & (predicted >= sample)
    s2 = np.where(contradicted, shown, np.maximum(predicted, sample))
    freedom = np.where(known, np.inf, np.where(contradicted, own, np.maximum(n_h - 1.0, 1.0)))
    return s2, freedom


def stratified_mean(y: np.ndarray, strata: Strata, *, rates: bool = True) -> Estimate:
    """The stratified (Horvitz–Thompson) mean of ``y`` over the strata its rows are in, with its
    standard error and effective degrees of freedom (see the module docstring).

    For ``rates`` (``y`` the paired deltas of values in [0, 1], what the history measures) each
    ``s_h²`` is the variance the history predicted for the stratum when the draw was made
    (``Stratum.variance``: the run-to-run variance of its cases' outcomes, the variance of their
    paired deltas under no change), or the stratum's own sample variance where that is larger,
    unless the drawn cases contradict the history (see :func:`_rate_variances`): then it is what
    they show, never less than their mean square ``Σ d²/n_h``. For other values (latency, tokens,
    cost) a singleton stratum takes the pooled within-stratum variance of the unit, else the
    variance of ``y``. A stratum with no row at all (every case of it dropped from the pairing:
    errored or changed) is left out and the weights of the others renormalised: the estimate is
    then of the cases that could be paired.
    """
    est = stratified_estimates(y, strata, rates=rates)
    return Estimate(float(est.mean), float(est.se), float(est.df))


def stratified_tests(
    d: np.ndarray, strata: Strata, margin: float | np.ndarray, *, rates: bool = True
) -> tuple[Estimates, np.ndarray, np.ndarray]:
    """:func:`stratified_test` of every row of ``d`` (shape ``(..., rows)``), vectorised."""
    from scipy.special import stdtr  # Student's t CDF; scipy is slow to load, only smoke runs need it

    est = stratified_estimates(d, strata, rates=rates)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_worse = np.where(est.se > 0, stdtr(est.df, (est.mean + margin) / est.se), 1.0 * (est.mean >= -margin))
        p_better = np.where(est.se > 0, stdtr(est.df, -(est.mean - margin) / est.se), 1.0 * (est.mean <= margin))
    return est, p_worse, p_better


def stratified_test(
    d: np.ndarray, strata: Strata, margin: float, *, rates: bool = True
) -> tuple[Estimate, float, float]:
    """One-sided tests of the stratified mean of the oriented paired deltas ``d``: returns the
    estimate, ``p_worse`` for H0: Δ ≥ −margin (small when the candidate is worse by more than the
    tolerance) and ``p_better`` for H0: Δ ≤ margin, from Student's t with the estimate's degrees
    of freedom. With a zero standard error (every drawn case has the same delta in each stratum)
    the p-values are 0 or 1, as :func:`evals.compare.stats.paired_clt` gives them."""
    est, p_worse, p_better = stratified_tests(d, strata, margin, rates=rates)
    return Estimate(float(est.mean), float(est.se), float(est.df)), float(p_worse), float(p_better)


def t_quantile(q: float, df: float) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))

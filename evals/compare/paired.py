"""The paired test of one metric on one unit (docs/spec.md#tests-per-unit): delta, its interval, the one-sided
p-values and the standard error the MDE is computed from. Which units may block, and at what
level, is not decided here (``evals.compare.decide``).

Method per unit: binary metrics on small units → McNemar (mid-p by default, ``gate.mcnemar``);
means on large units (≈300+ cases) → paired CLT; small non-binary means → paired bootstrap-t
(studentized); percentiles → paired bootstrap. A smoke run drawn with inclusion probabilities
(``smoke.select: informative``) is tested on the stratified Horvitz–Thompson estimate instead,
for every mean (``evals.compare.sampling``); its percentiles keep the bootstrap of the drawn
cases. A metric is binary when its per-case values are all 0 or 1 in both runs, whatever its
name (``pass_rate``, a 0/1 named score, a ``judge`` verdict): the same outcomes get the same
test, so the same verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evals.compare.bounds import BootstrapBounds, BootstrapTBounds, Bounds, McNemarBounds, NormalBounds
from evals.compare.metrics import MetricDef
from evals.compare.model import Method, UnitResult
from evals.compare.sampling import Strata, stratified_mean, stratified_test, t_quantile
from evals.compare.stats import (
    bootstrap_mean,
    bootstrap_mean_se,
    bootstrap_p_worse,
    bootstrap_percentile_delta,
    bootstrap_t_p,
    bootstrap_t_star,
    cases_to_certify,
    certifiable_tolerance,
    mcnemar_worse,
    norm_ppf,
    paired_clt,
    percentile_interval,
    smoothed_mean_delta,
)
from evals.suite.gate import GateSpec
from evals.suite.scoring import MetricSpec

# Units with at least this many paired cases use the paired CLT for means (docs/spec.md#tests-per-unit: ≈300+).
CLT_MIN_CASES = 300
# Below this many paired cases a binary unit's reported interval is the smoothed one: the bootstrap
# interval of a small near-deterministic unit is often a point (every case unchanged), and covered
# only 0.80 at the null boundary on 25-case slices, failing on the side that hides regressions.
SMALL_BINARY_CASES = 100
# "The tolerance an unchanged candidate passes at" is the one it passes at 4 runs in 5 (docs/spec.md#certifiable-band).
CERTIFY_PROBABILITY = 0.8


@dataclass
class MetricInput:
    """One metric's paired per-case values (same case order on both sides)."""

    definition: MetricDef
    spec: MetricSpec
    base: np.ndarray
    cand: np.ndarray


@dataclass
class UnitIndex:
    name: str  # "overall" or "key=value"
    key: str | None
    value: str | None
    rows: np.ndarray | None  # row indices into the paired arrays; None = all


@dataclass
class Tested:
    """A unit after its test, before any verdict. Intervals here are *oriented* (positive = better):
    ``oriented_low``/``oriented_high`` the marginal interval at 1 − 2α (what the gate's pass reads),
    ``bounds`` the test's inversion that gives the interval printed at the unit's tested level once
    the multiple-testing rule has set that level (``evals.compare.decide.assign_verdicts``)."""

    result: UnitResult
    se: float
    margin: float
    p_worse: float
    p_better: float
    oriented_low: float
    oriented_high: float
    oriented_delta: float
    # The smoothed normal interval (oriented); "unchanged" and the gate's pass need it inside the
    # band as well as the bootstrap interval, which has zero width when every case has the same delta.
    smoothed_low: float
    smoothed_high: float
    # What target_mde is measured in: 1 for rates and scores (an absolute drop, 0.10 = 10 points);
    # the baseline value for latency, tokens and cost, whose drops only mean something relative to
    # their size (0.10 = 10% slower).
    drop_unit: float = 1.0
    bounds: Bounds | None = None
    # A binary unit's flips (pass→fail, fail→pass): what its power is computed from
    # (``evals.compare.power``); None when its values are not all 0 or 1.
    flips: tuple[int, int] | None = None


def is_binary(x: np.ndarray) -> bool:
    return bool(np.all((x == 0.0) | (x == 1.0)))


def paired_test(
    metric: MetricInput, unit: UnitIndex, gate: GateSpec, rng: np.random.Generator, strata: Strata | None = None
) -> Tested:
    """Test one metric on one unit. Deterministic for a given ``rng`` seed. ``strata``: the design
    of a smoke run's paired rows, when it was drawn with inclusion probabilities."""
    d_ = metric.definition
    base, cand = metric.base, metric.cand
    if unit.rows is not None:
        base, cand = base[unit.rows], cand[unit.rows]
        strata = strata.rows(unit.rows) if strata is not None else None
    keep = ~(np.isnan(base) | np.isnan(cand))
    if not keep.all():
        base, cand = base[keep], cand[keep]
        strata = strata.rows(np.flatnonzero(keep)) if strata is not None else None
    n = int(base.size)
    sign = 1.0 if d_.direction == "higher" else -1.0
    confidence = 1.0 - 2.0 * gate.alpha
    common: dict[str, Any] = {
        "unit": unit.name,
        "slice_key": unit.key,
        "slice_value": unit.value,
        "metric": d_.name,
        "direction": d_.direction,
        "gated": metric.spec.gate,
        "confidence": confidence,
        "n": n,
        "blocking": False,
    }
    if n < 2:
        margin = metric.spec.band(float(base[0])) if n else 0.0
        result = UnitResult(
            **common,
            baseline=float(base[0]) if n else None,
            candidate=float(cand[0]) if n else None,
            delta=float(cand[0] - base[0]) if n else None,
            tolerance=margin,
            verdict="inconclusive",
            note="fewer than 2 paired cases: not tested",
        )
        return Tested(result, math.inf, margin, 1.0, 1.0, -math.inf, math.inf, 0.0, -math.inf, math.inf)
    d = sign * (cand - base)
    if strata is not None and d_.percentile is None:
        return _stratified(metric, d, base, cand, strata, common, gate)
    scale = 1.0 if d_.bounded else data_scale(base, cand)
    smoothed_center, se = smoothed_mean_delta(d, scale)
    binary = d_.bounded and d_.percentile is None and is_binary(base) and is_binary(cand)
    # A small unit of a mean that is not binary: tested by the bootstrap-t (its resamples' SEs).
    studentized = d_.percentile is None and n < CLT_MIN_CASES and not binary
    spreads = None
    if d_.percentile is None:
        b_value, c_value = float(base.mean()), float(cand.mean())
        if studentized:
            dist, spreads = bootstrap_mean_se(d, gate.bootstrap_resamples, rng)
        else:
            dist = bootstrap_mean(d, gate.bootstrap_resamples, rng)
    else:
        b_value, c_value = float(np.percentile(base, d_.percentile)), float(np.percentile(cand, d_.percentile))
        dist = sign * bootstrap_percentile_delta(base, cand, d_.percentile, gate.bootstrap_resamples, rng)
        # A percentile's SE is at least its mean's (e.g. 1.25× for a normal median), so the
        # smoothed SE of the mean delta is a floor under the bootstrap's, not a replacement.
        se = max(float(dist.std(ddof=1)), se)
    margin = metric.spec.band(b_value)
    low, high = percentile_interval(dist, confidence)
    oriented = sign * (c_value - b_value)
    center = smoothed_center if d_.percentile is None else oriented
    half = norm_ppf(1.0 - gate.alpha) * se
    s_low, s_high = center - half, center + half
    if d_.bounded:
        s_low, s_high = max(s_low, -1.0), min(s_high, 1.0)
    method: Method
    bounds: Bounds
    if d_.percentile is not None:
        method = "bootstrap"
        p_worse, p_better = bootstrap_p_worse(dist, margin)
        bounds = BootstrapBounds("bootstrap-inverted", scale, np.sort(dist))
    elif n >= CLT_MIN_CASES:
        method = "clt"
        mean, clt_se, p_worse, p_better = paired_clt(d, margin)
        bounds = NormalBounds("clt-inverted", scale, mean, clt_se)
    elif binary:
        mid_p = gate.mcnemar == "mid-p"
        method = "mcnemar-mid-p" if mid_p else "mcnemar"
        worse, better = int(np.count_nonzero(d < 0)), int(np.count_nonzero(d > 0))
        p_worse = mcnemar_worse(worse, better, n, margin, mid_p=mid_p)
        p_better = mcnemar_worse(better, worse, n, margin, mid_p=mid_p)
        smoothed = NormalBounds("smoothed", scale, smoothed_center, se)
        bounds = McNemarBounds("mcnemar-inverted", scale, worse, better, n, mid_p, smoothed)
    else:
        assert spreads is not None
        method = "bootstrap-t"
        center, t_se = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n)
        p_worse, p_better = bootstrap_t_p(dist, spreads, center, t_se, margin)
        bounds = BootstrapTBounds(
            "bootstrap-t-inverted", scale, center, t_se, np.sort(bootstrap_t_star(dist, spreads, center))
        )
    if not d.any():
        # Both runs agree on every case: no test can reject anything and each inverts to the point
        # 0; the smoothed interval at the tested level (about 0, so it agrees) says what n resolves.
        bounds = NormalBounds("smoothed", scale, smoothed_center, se)
    if binary and n < SMALL_BINARY_CASES:
        low, high = s_low, s_high
    raw_low, raw_high = (low, high) if sign > 0 else (-high, -low)
    result = UnitResult(
        **common,
        baseline=b_value,
        candidate=c_value,
        delta=c_value - b_value,
        tolerance=margin,
        marginal_low=raw_low,
        marginal_high=raw_high,
        method=method,
        p_value=p_worse,
        p_improved=p_better,
        smoothed_low=s_low if sign > 0 else -s_high,
        smoothed_high=s_high if sign > 0 else -s_low,
        verdict="inconclusive",
    )
    if d_.bounded:
        discordance = float(np.dot(d, d)) / n
        result.discordance = discordance
        result.no_change_seen = not d.any()
        result.certifiable = certifiable_tolerance(n, discordance, gate.alpha, CERTIFY_PROBABILITY)
        result.cases_to_certify = cases_to_certify(margin, discordance, gate.alpha, CERTIFY_PROBABILITY)
    drop_unit = 1.0 if d_.bounded else abs(b_value)
    flips = (int(np.count_nonzero(d < 0)), int(np.count_nonzero(d > 0))) if binary else None
    return Tested(result, se, margin, p_worse, p_better, low, high, oriented, s_low, s_high, drop_unit, bounds, flips)


def _stratified(
    metric: MetricInput,
    d: np.ndarray,
    base: np.ndarray,
    cand: np.ndarray,
    strata: Strata,
    common: dict[str, Any],
    gate: GateSpec,
) -> Tested:
    """The test of a mean on a smoke run drawn with inclusion probabilities: the stratified
    Horvitz–Thompson estimates of both sides and of the delta, the t test of
    ``evals.compare.sampling.stratified_test`` and its t interval (the one interval reported,
    so also the "smoothed" one the verdicts read)."""
    sign = 1.0 if metric.definition.direction == "higher" else -1.0
    rates = metric.definition.bounded
    b_value = stratified_mean(base, strata, rates=rates).mean
    c_value = stratified_mean(cand, strata, rates=rates).mean
    margin = metric.spec.band(b_value)
    est, p_worse, p_better = stratified_test(d, strata, margin, rates=rates)
    half = t_quantile(1.0 - gate.alpha, est.df) * est.se
    low, high = est.mean - half, est.mean + half
    if metric.definition.bounded:
        low, high = max(low, -1.0), min(high, 1.0)
    raw_low, raw_high = (low, high) if sign > 0 else (-high, -low)
    n = int(d.size)
    result = UnitResult(
        **common,
        baseline=b_value,
        candidate=c_value,
        delta=c_value - b_value,
        tolerance=margin,
        marginal_low=raw_low,
        marginal_high=raw_high,
        method="stratified-ht",
        p_value=p_worse,
        p_improved=p_better,
        smoothed_low=raw_low,
        smoothed_high=raw_high,
        verdict="inconclusive",
        note=f"smoke draw weighted to the full suite (stratified Horvitz–Thompson, {est.df:.0f} df)",
    )
    if metric.definition.bounded:
        discordance = stratified_mean(d * d, strata).mean
        result.discordance = discordance
        result.no_change_seen = not d.any()
        result.certifiable = certifiable_tolerance(n, discordance, gate.alpha, CERTIFY_PROBABILITY)
        result.cases_to_certify = cases_to_certify(margin, discordance, gate.alpha, CERTIFY_PROBABILITY)
    drop_unit = 1.0 if metric.definition.bounded else abs(b_value)
    limit = 1.0 if metric.definition.bounded else data_scale(base, cand)
    bounds = NormalBounds("stratified-t-inverted", limit, est.mean, est.se, est.df)
    return Tested(result, est.se, margin, p_worse, p_better, low, high, est.mean, low, high, drop_unit, bounds)


def data_scale(base: np.ndarray, cand: np.ndarray) -> float:
    """How far apart two per-case values of an unbounded metric (latency, tokens, cost) can be, as
    the data shows it: the range of both sides' values, or their size when all are equal."""
    both = np.concatenate([base, cand])
    spread = float(both.max() - both.min())
    return spread if spread > 0 else float(np.abs(both).mean())

"""Absolute floors and ceilings (docs/spec.md#absolute-floors): ``metrics.<m>.min`` / ``max`` on ``overall``, and with
``per_slice: true`` on every slice value too, judged on the candidate alone — no baseline needed.

A floor is *breached* when the candidate's own interval lies entirely on the wrong side of it (its
upper bound below ``min``, its lower bound above ``max``): a significant breach, at the one-sided
level α the relative tests use (the interval's two-sided level is 1 − 2α, like every interval of a
comparison). A breach fails the gate. When only the value is on the wrong side and the interval
still reaches the floor, the candidate *could* be below it: a warning, not a failure, since a small
unit's noise alone is no evidence against it. Each floor is its own test, outside the weighted-Holm
allocation: floors are the user's requirements of each unit, not a search for the unit that moved,
so a per-slice floor set at a slice's true value fails it at most α of the time."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from evals.compare.metrics import MetricDef, RunTable
from evals.compare.model import Bound, FloorResult
from evals.compare.paired import is_binary
from evals.compare.pairing import unit_indices
from evals.compare.runs import Run
from evals.compare.stats import bootstrap_mean, bootstrap_percentile_delta, norm_ppf, percentile_interval
from evals.results.summary import wilson
from evals.suite.gate import GateSpec
from evals.suite.scoring import MetricSpec


def check_floors(
    defs: Iterable[MetricDef],
    specs: dict[str, MetricSpec],
    table: RunTable,
    slice_keys: list[str],
    gate: GateSpec,
    warnings: list[str],
) -> list[FloorResult]:
    """Every configured floor and ceiling on every unit it applies to, over the candidate's cases
    that have a value (infra-errored cases have none). A unit where no case has one cannot be
    judged: said in ``warnings``, never passed over in silence."""
    confidence = 1.0 - 2.0 * gate.alpha
    rng = np.random.default_rng(gate.seed)
    out: list[FloorResult] = []
    for d in defs:
        spec = specs[d.name]
        given: tuple[tuple[Bound, float | None], ...] = (("min", spec.min), ("max", spec.max))
        limits = [(bound, limit) for bound, limit in given if limit is not None]
        if not limits:
            continue
        values = table.values(d)
        # Units over every case that ran (infra-errored ones have no value), so a slice whose cases
        # never record the score is a unit that cannot be judged, not one that is not there.
        rows = np.flatnonzero(~table.errored)
        for unit in unit_indices(table, rows, slice_keys if spec.per_slice else []):
            x = values[rows] if unit.rows is None else values[rows][unit.rows]
            x = x[~np.isnan(x)]
            if x.size == 0:
                bounds = " and ".join(f"{bound} {limit:g}" for bound, limit in limits)
                warnings.append(
                    f"{d.name} on {unit.name}: no case of the candidate has a value, so its {bounds} could not "
                    "be checked (does every case record this score?)"
                )
                continue
            value, low, high = _estimate(x, d, confidence, gate.bootstrap_resamples, rng)
            for bound, limit in limits:
                worse = value < limit if bound == "min" else value > limit
                beyond = high < limit if bound == "min" else low > limit
                out.append(
                    FloorResult(
                        unit=unit.name,
                        slice_key=unit.key,
                        slice_value=unit.value,
                        metric=d.name,
                        bound=bound,
                        limit=limit,
                        value=value,
                        ci_low=low,
                        ci_high=high,
                        confidence=confidence,
                        n=int(x.size),
                        verdict="breached" if beyond else "uncertain" if worse else "met",
                    )
                )
    return out


def _estimate(
    x: np.ndarray, d: MetricDef, confidence: float, resamples: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """The unit's value and its interval at ``confidence``: Wilson for 0/1 outcomes (exact enough
    where a bootstrap interval of a 10-case unit that all passed is the point 1.0), else the
    percentile bootstrap over cases."""
    if d.percentile is not None:
        # The paired delta against all-zero values is the candidate's own percentile.
        dist = bootstrap_percentile_delta(np.zeros_like(x), x, d.percentile, resamples, rng)
        low, high = percentile_interval(dist, confidence)
        return float(np.percentile(x, d.percentile)), low, high
    if is_binary(x):
        low, high = wilson(float(x.sum()), int(x.size), z=float(norm_ppf(0.5 + confidence / 2.0)))
        return float(x.mean()), low, high
    low, high = percentile_interval(bootstrap_mean(x, resamples, rng), confidence)
    return float(x.mean()), low, high


def floor_sentence(f: FloorResult) -> str:
    """One plain line for a reason, a warning or the report."""
    side = "below its floor min" if f.bound == "min" else "above its ceiling max"
    could = "" if f.verdict == "breached" else "could be "
    level = f"{100 * f.confidence:.0f}%"
    return (
        f"{f.metric} on {f.unit} {could}{side} {f.limit:g}: {f.value:.4g} "
        f"({level} CI {f.ci_low:.4g} to {f.ci_high:.4g}, {f.n:,} cases)"
    )


def subset_floors(floors: list[FloorResult], candidate: Run, warnings: list[str]) -> list[FloorResult]:
    """A smoke subset is no even sample of the suite: an informative draw over-samples uncertain
    cases in every unit, a stratified one over-samples small slices, which biases overall. A floor
    judged where the subset biases it cannot fail the gate (the full run on the default branch
    judges it); it is said once, as a warning, whatever it found."""
    run = candidate.run
    if not run.subset:
        return floors
    informative = run.sample is not None
    biased = [f for f in floors if informative or f.unit == "overall"]
    if not biased:
        return floors
    where = "every unit" if informative else "overall"
    found = [f for f in biased if f.verdict != "met"]
    said = f"; it would read: {'; '.join(floor_sentence(f) for f in found[:3])}" if found else ""
    warnings.append(
        f"absolute floors on {where} are not judged on the {run.subset} subset, which does not sample the suite "
        f"evenly: the full run judges them{said}"
    )
    return [f for f in floors if f not in biased]

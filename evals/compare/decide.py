"""The gate's decision rule (docs/spec.md#decision-rule): units + p-values + weights → unit verdicts + gate verdict.

α is allocated before the run, never from the data. Weighted Holm over ``overall`` and every
slice value: ``overall`` gets ``1 − gate.slice_alpha_share``; the slices share the rest, split
equally across slice keys, then within a key by paired case counts (``gate.slice_weights``:
``cases`` | ``sqrt_cases`` | ``equal``); several gated metrics split α equally first. A unit
regresses when its weighted-Holm adjusted p is ≤ α and its delta is worse than −δ. Case counts
are design, not outcomes, so a suite's allocation is the same for every run of it.

The first version let a slice block only when the MDE computed from this run's data was small
enough; a regression's discordant pairs raise the MDE, so the slice that broke was the one made
advisory (``docs/decision-rule.md``). ``benchmarks/sim_gate.py`` calls :func:`decide` and
:func:`gate_verdict` — this code — for the validity targets (docs/spec.md#validity-targets).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np

from evals.compare.bounds import agree, bh_level, holm_levels
from evals.compare.model import UnitResult
from evals.compare.paired import MetricInput, Tested, UnitIndex, paired_test
from evals.compare.power import binary_cases, binary_mde, run_discordance, se_cases
from evals.compare.sampling import Strata
from evals.compare.stats import bh_qvalues, mde, weighted_holm
from evals.suite.gate import GateSpec


class Design(Protocol):
    """What the α allocation reads of a unit: design, never outcomes (a ``UnitResult``, or a
    planned unit of ``evals.compare.plan``)."""

    @property
    def metric(self) -> str: ...
    @property
    def gated(self) -> bool: ...
    @property
    def slice_key(self) -> str | None: ...
    @property
    def n(self) -> int: ...


def alpha_weights(units: Sequence[Design], share: float, rule: str) -> np.ndarray:
    """Each unit's share of α (summing to 1 over the gated units; 0 for ungated metrics, for
    slices when ``share`` is 0, and for a slice key whose one value holds every case). Reads only
    metric, gated, slice key and case count: design, not outcomes."""
    weights = np.zeros(len(units))
    metrics = list(dict.fromkeys(u.metric for u in units if u.gated))
    for metric in metrics:
        rows = [i for i, u in enumerate(units) if u.metric == metric]
        overall = [i for i in rows if units[i].slice_key is None]
        everything = max((units[i].n for i in overall), default=0)
        # A key with one value holding every case repeats overall's test: it gets no α of its own.
        keys = [
            key
            for key in dict.fromkeys(units[i].slice_key for i in rows if units[i].slice_key is not None)
            if [units[i].n for i in rows if units[i].slice_key == key] != [everything]
        ]
        slice_share = share if keys and share > 0 else 0.0
        for i in overall:
            weights[i] = (1.0 - slice_share) / len(metrics) / len(overall)
        for key in keys:
            members = [i for i in rows if units[i].slice_key == key]
            size = np.array([units[i].n for i in members], dtype=float)
            raw = {"cases": size, "sqrt_cases": np.sqrt(size)}.get(rule, np.ones(size.size))
            raw = raw if raw.sum() > 0 else np.ones(size.size)
            weights[members] = slice_share / len(metrics) / len(keys) * raw / raw.sum()
    return weights


def assign_verdicts(tested: list[Tested], weights: np.ndarray, gate: GateSpec) -> None:
    """Blocking units (weight > 0) get weighted-Holm adjusted p-values and their verdicts from
    them; every unit gets a BH q-value (advisory context), which also gives advisory units theirs.
    Each unit's MDE is at its own level: α·weight (Holm's strictest step) for blocking units,
    α / (number of units) for advisory ones. Each unit's interval is at the level its verdict was
    reached at (``evals.compare.bounds``): its step of weighted Holm, or BH's α·R/m."""
    p_worse = np.array([t.p_worse for t in tested])
    p_better = np.array([t.p_better for t in tested])
    worse_adj = weighted_holm(p_worse, weights)
    better_adj = weighted_holm(p_better, weights)
    q_worse, q_better = bh_qvalues(p_worse), bh_qvalues(p_better)
    suite = {
        t.result.metric: run_discordance(t.flips[1], t.result.n)
        for t in tested
        if t.result.slice_key is None and t.flips is not None
    }
    worse_levels = holm_levels(p_worse, weights, gate.alpha)
    better_levels = holm_levels(p_better, weights, gate.alpha)
    advisory_levels = (bh_level(q_worse, gate.alpha), bh_level(q_better, gate.alpha))
    for i, t in enumerate(tested):
        r = t.result
        r.weight = float(weights[i])
        r.q_value = float(q_worse[i])
        r.blocking = bool(weights[i] > 0)
        level = gate.alpha * weights[i] if r.blocking else gate.alpha / len(tested)
        r.alpha_level = float(level)
        if r.blocking:
            r.p_adjusted = float(worse_adj[i])
            levels = (float(worse_levels[i]), float(better_levels[i]))
            _verdict(t, float(worse_adj[i]), float(better_adj[i]), gate.alpha, levels)
        else:
            _verdict(t, float(q_worse[i]), float(q_better[i]), gate.alpha, advisory_levels)
        if math.isfinite(t.se):
            _power(t, level, gate, suite.get(r.metric))


def _power(t: Tested, level: float, gate: GateSpec, suite_psi: float | None) -> None:
    """The unit's MDE at its own level (``evals.compare.power``: exact for small binary units)
    and, when it misses target_mde (in the unit's terms, see ``Tested.drop_unit``), the cases
    that would reach it. *Underpowered* says the test could not have seen a drop of target_mde,
    which a unit that regressed or improved disproves: its test saw a change. ``suite_psi``: the
    run's discordance over all its cases, which a slice's own estimate is shrunk towards."""
    r = t.result
    target = gate.target_mde * t.drop_unit
    if t.flips is not None:
        psi = run_discordance(t.flips[1], r.n, suite_psi if r.slice_key is not None else None)
        r.mde = binary_mde(r.n, psi, level, t.margin, gate.power, gate.mcnemar)
    else:
        r.mde = float(mde(t.se, level, gate.power, t.margin))
    if t.drop_unit <= 0 or r.verdict in ("regressed", "improved") or (r.mde is not None and r.mde <= target):
        return
    r.underpowered = True
    if t.flips is not None:
        r.cases_for_target = binary_cases(target, psi, level, t.margin, gate.power, gate.mcnemar)
    else:
        r.cases_for_target = se_cases(r.n, t.se, level, gate.power, t.margin, target)


def paired_tests(
    metrics: list[MetricInput],
    units: list[UnitIndex],
    gate: GateSpec,
    *,
    seed: int | None = None,
    strata: Strata | None = None,
) -> list[Tested]:
    """Every metric on every unit, before any verdict (metric-major order). ``strata``: the
    design of a smoke run drawn with inclusion probabilities (its paired rows)."""
    seed = gate.seed if seed is None else seed
    return [
        paired_test(metric, unit, gate, np.random.default_rng([seed, mi, ui]), strata)
        for mi, metric in enumerate(metrics)
        for ui, unit in enumerate(units)
    ]


def decide(
    metrics: list[MetricInput],
    units: list[UnitIndex],
    gate: GateSpec,
    *,
    seed: int | None = None,
    strata: Strata | None = None,
) -> list[UnitResult]:
    """Test every metric on every unit, allocate α (:func:`alpha_weights`) and give each unit
    its verdict (docs/spec.md#decision-rule). Deterministic for a given seed: same inputs, same blocking units.
    ``strata``: see :func:`paired_tests`; α is allocated as for any run, by paired case counts."""
    tested = paired_tests(metrics, units, gate, seed=seed, strata=strata)
    results = [t.result for t in tested]
    assign_verdicts(tested, alpha_weights(results, gate.slice_alpha_share, gate.slice_weights), gate)
    return results


def _verdict(t: Tested, p_worse: float, p_better: float, alpha: float, levels: tuple[float, float]) -> None:
    """The unit's verdict, and its interval at ``levels`` (the worse and the better test's):
    regressed exactly when the interval lies wholly below −δ, improved when above δ, unchanged
    when it (and the smoothed one) lies inside the band."""
    if t.result.n < 2 or t.bounds is None:
        return
    regressed = p_worse <= alpha and t.oriented_delta < -t.margin
    improved = not regressed and p_better <= alpha and t.oriented_delta > t.margin
    upper, lower = agree(
        t.bounds.upper(levels[0]), t.bounds.lower(levels[1]), t.margin, regressed=regressed, improved=improved
    )
    r = t.result
    r.ci_low, r.ci_high = (lower, upper) if r.direction == "higher" else (-upper, -lower)
    r.ci_level, r.ci_method = 1.0 - levels[0] - levels[1], t.bounds.method
    if regressed:
        t.result.verdict = "regressed"
    elif improved:
        t.result.verdict = "improved"
    elif lower >= -t.margin and upper <= t.margin:
        if t.smoothed_low >= -t.margin and t.smoothed_high <= t.margin:
            t.result.verdict = "unchanged"
        else:
            t.result.note = (
                f"CI within the band, but only {t.result.n} paired cases: the smoothed interval "
                f"{fmt(t.result.smoothed_low)} to {fmt(t.result.smoothed_high)} is not"
            )
    if t.result.verdict == "inconclusive" and t.result.no_change_seen:
        t.result.note = no_change_note(t.result)


def no_change_note(u: UnitResult) -> str:
    """A unit whose runs agree on every case is not 'inconclusive' in a reader's eyes: it saw no
    change, at the resolution its size allows (docs/spec.md#certifiable-band)."""
    need = f"; the tolerance {u.tolerance:.4g} needs {u.cases_to_certify} paired cases" if u.cases_to_certify else ""
    return f"no change seen on its {u.n} paired cases (resolves ±{u.certifiable:.4g}){need}"


def certify_clause(u: UnitResult) -> str:
    """What tolerance this suite can certify and what the configured one needs (docs/spec.md#certifiable-band): said by
    every inconclusive gate."""
    if u.certifiable is None or u.discordance is None:
        return ""
    need = (
        f"; the tolerance {u.tolerance:.4g} needs about {u.cases_to_certify} paired cases" if u.cases_to_certify else ""
    )
    return (
        f"; with {u.n} paired cases and {u.discordance:.1%} of them differing between the runs, an unchanged "
        f"candidate passes 4 runs in 5 at a tolerance of {u.certifiable:.4g}{need} (`evalgate plan` shows it "
        "per slice before a run)"
    )


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.4g}"


def ci_name(u: UnitResult) -> str:
    """The interval beside a verdict, named with its level: each unit's is its own (the level it was tested at)."""
    return "CI" if u.ci_level is None else f"{u.ci_level:.2%} CI"


def describe_unit(u: UnitResult) -> str:
    p = "n/a" if u.p_adjusted is None else f"{u.p_adjusted:.3g}"
    return (
        f"{u.metric} on {u.unit} {fmt(u.delta)} ({ci_name(u)} {fmt(u.ci_low)} to {fmt(u.ci_high)}, "
        f"tolerance {u.tolerance:.4g}, {u.method}, p_adj {p}, n={u.n})"
    )


def bad_side(u: UnitResult) -> tuple[float, str]:
    """The unit's worst plausible oriented delta for the gate's pass, a one-sided claim at α: the
    bad end of the marginal 1 − 2α interval or of the smoothed one, whichever is worse (a bootstrap
    interval is 0 wide when every case has the same delta), and that interval as the reason shows
    it, so the number it quotes is the one it prints."""
    sign = 1.0 if u.direction == "higher" else -1.0
    marginal = f"{u.confidence:.0%} CI"
    intervals = [(marginal, u.marginal_low, u.marginal_high), ("smoothed interval", u.smoothed_low, u.smoothed_high)]
    worst: tuple[float, str] | None = None
    for name, low, high in intervals:
        if low is None or high is None:
            continue
        end = low if u.direction == "higher" else high
        if worst is None or sign * end < worst[0]:
            worst = (sign * end, f"{name} {fmt(low)} to {fmt(high)}")
    assert worst is not None  # gate_verdict checks the reported interval exists first
    return worst


def gate_verdict(units: list[UnitResult]) -> tuple[Literal["pass", "fail", "inconclusive"], str]:
    """docs/spec.md#decision-rule: fail if a blocking gated unit regressed; pass if none did and every gated
    overall's interval stays within the band on the bad side; otherwise inconclusive."""
    failing = [u for u in units if u.blocking and u.gated and u.verdict == "regressed"]
    if failing:
        # Slices first: "overall is down" is less actionable than "language=ko is down".
        failing.sort(key=lambda u: (u.unit == "overall", u.p_adjusted or 0.0))
        others = [f"{u.metric} on {u.unit} {fmt(u.delta)}" for u in failing[1:]]
        others += [
            f"{u.metric} on {u.unit} {fmt(u.delta)} (advisory)"
            for u in units
            if u.verdict == "regressed" and not u.blocking
        ]
        also = f"; also regressed: {', '.join(others[:6])}" + (" …" if len(others) > 6 else "") if others else ""
        return "fail", f"regression: {describe_unit(failing[0])}{also}"
    overall = [u for u in units if u.unit == "overall" and u.gated]
    if not overall:
        return "inconclusive", "no gated metric could be compared"
    for u in overall:
        if u.n < 2 or u.marginal_low is None or u.marginal_high is None:
            return "inconclusive", f"{u.metric}: fewer than 2 paired cases with a value on both sides to compare"
        worst, interval = bad_side(u)
        if worst < -u.tolerance:
            if u.no_change_seen:
                return "inconclusive", (
                    f"{u.metric} overall: no change seen, but its {u.n} paired cases resolve only "
                    f"±{-worst:.4g} ({interval}), more than the tolerance {u.tolerance:.4g}"
                    + (f"; {u.cases_to_certify} paired cases would certify it" if u.cases_to_certify else "")
                    + " (`evalgate plan` shows what a suite can certify before a run)"
                )
            detect = f"; this run can detect drops of {u.mde:.3g} or more" if u.mde is not None else ""
            return "inconclusive", (
                f"no significant regression, but {u.metric} overall could be down by up to {-worst:.4g} "
                f"({interval}, n={u.n}) — more than the tolerance {u.tolerance:.4g}{detect}{certify_clause(u)}"
            )
    names = ", ".join(u.metric for u in overall)
    return "pass", f"no regression beyond tolerance: {names} overall within the band (n={overall[0].n})"

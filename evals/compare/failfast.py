"""Fail fast (docs/spec.md#fail-fast): stop scheduling a pull request's cases once a blocking unit's
regression is certain.

The cases run in a seeded order stratified by slice (``evals.run.failfast.stratified_order``), so
every block of completed cases holds about its share of every slice. The run is cut into
:data:`LOOKS` blocks before it starts (M cases: a look after ⌈k·M/LOOKS⌉ completed cases, k = 1 …
LOOKS − 1; the last block ends the run, which the fixed-sample rule decides). At each look every
blocking unit of a bounded per-case metric is tested on the paired cases completed so far with the
test more evidence uses at its looks (``evals.compare.evidence.drop_test``: the t-test on per-case
drops, H0 "the drop is at most δ", n = the unit's cases), at its share of the look's α. The looks
share ``FAIL_FAST_SHARE·α``, spent as ``share·α·(k/K)²`` (``evals.compare.evidence.look_levels``,
Lan–DeMets with the Kim–DeMets power function), and within a look the units are merged by weighted
Holm with the gate's own α weights (``evals.compare.decide.alpha_weights``: case counts, design).
The fixed-sample rule keeps ``(1 − FAIL_FAST_SHARE)·α`` (``evals.compare.plan.first_look_alpha``).
By the union bound over the looks and the final rule the gate's false-fail rate stays ≤ α however
the looks correlate; ``benchmarks/sim_failfast.py`` measures it and the power.

A look can only stop the run with a regression: the rule has no "pass" side, so a run that is not
stopped runs every case and the fixed-sample rule decides as without fail fast.
A unit is tested from :data:`MIN_CASES` paired cases on: with fewer the t reference at these tiny
levels is not to be trusted (three cases that all flipped have no spread, hence p = 0)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from evals.compare.decide import alpha_weights
from evals.compare.evidence import drop_test, look_levels
from evals.compare.metrics import MetricDef, metric_def, named_scores, scan
from evals.compare.model import UnitResult
from evals.compare.sequential import oriented_drops, testable
from evals.compare.stats import weighted_holm
from evals.results.model import CaseResult, FailFastStop, Results
from evals.run.failfast import stop_headline
from evals.suite.cases import Case
from evals.suite.config import SuiteConfig
from evals.suite.gate import GateSpec

FAIL_FAST_SHARE = 0.1  # of the gate's α, spent over the looks; the fixed-sample rule keeps the rest
LOOKS = 10  # blocks of the run, fixed before it: a look after each but the last
MIN_CASES = 10  # a unit's paired cases before it is tested


def look_points(total: int) -> list[int]:
    """The completed-case counts the looks are taken at, for a run of ``total`` cases: ⌈k·M/LOOKS⌉
    for k = 1 … LOOKS − 1 (none at the end: the fixed-sample rule decides the whole run)."""
    return sorted({math.ceil(k * total / LOOKS) for k in range(1, LOOKS)} - {0, total})


def look_p(total: np.ndarray, square: np.ndarray, n: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Each unit's one-sided p-value of "the drop is at most δ" from its Σd, Σd², n so far
    (broadcast over replicates and units); 1 below :data:`MIN_CASES`."""
    return np.where(n >= MIN_CASES, drop_test(total, square, n, delta, "worse"), 1.0)


def stops(p: np.ndarray, weights: np.ndarray, level: float) -> np.ndarray:
    """Whether a look at ``level`` stops the run (over the last axis, the units): weighted Holm
    rejects some unit exactly when its first step does, some ``p ≤ w·level`` (W = 1 there)."""
    return np.any(p <= weights * level, axis=-1)


@dataclass
class _Unit:
    metric: MetricDef
    name: str
    weight: float
    delta: float
    total: float = 0.0
    square: float = 0.0
    n: int = 0


@dataclass
class _Design:
    """A unit as ``alpha_weights`` reads it: design only (its paired cases in the suite)."""

    metric: str
    gated: bool
    slice_key: str | None
    n: int


@dataclass
class FailFast:
    """The stopping rule fed with each completed case of a run (``add``); built before the run
    from the baseline the gate loaded and the cases in the order they run. A look after m cases
    is taken once the first m cases *of the order* have completed, and tests exactly those: which
    cases a look sees never depends on which finished first (a target whose failures come back
    sooner would otherwise crowd the early looks with them)."""

    units: list[_Unit]
    members: dict[str, list[int]]  # case id → the units it counts in
    base: dict[str, dict[str, float]]  # metric → case id → its baseline value
    order: list[str]  # the case ids in the order they run
    points: list[int]
    levels: np.ndarray
    look: int = 0
    taken: int = 0  # the order's prefix absorbed into the units' sums
    ready: int = 0  # the order's prefix completed
    pending: dict[str, CaseResult] = field(default_factory=dict)

    @classmethod
    def plan(cls, config: SuiteConfig, baseline: Results, cases: Sequence[Case]) -> FailFast:
        gate: GateSpec = config.gate
        defs = [metric_def(name, spec) for name, spec in config.metrics.items()]
        bt = scan(baseline.cases, len(baseline.cases), named_scores(defs))
        rows = bt.index()
        paired = [c for c in cases if c.id in rows and bt.hashes[rows[c.id]] in (None, c.hash)]
        groups: list[tuple[str, str | None, list[str]]] = [("overall", None, [c.id for c in paired])]
        for key in config.slices:
            values = dict.fromkeys(c.tags[key] for c in paired if key in c.tags)
            groups += [(f"{key}={v}", key, [c.id for c in paired if c.tags.get(key) == v]) for v in values]
        designs = [_Design(d.name, config.metrics[d.name].gate, key, len(ids)) for d in defs for _, key, ids in groups]
        weights = alpha_weights(designs, gate.slice_alpha_share, gate.slice_weights)
        base = {d.name: dict(zip(bt.ids, bt.values(d).tolist(), strict=True)) for d in defs if testable(d)}
        units: list[_Unit] = []
        members: dict[str, list[int]] = {}
        for i in range(len(designs)):
            d = defs[i // len(groups)]
            name, _key, ids = groups[i % len(groups)]
            if weights[i] <= 0 or not testable(d):
                continue
            known = [v for v in (base[d.name][c] for c in ids) if math.isfinite(v)]
            delta = config.metrics[d.name].band(float(np.mean(known))) if known else 0.0
            for case_id in ids:
                members.setdefault(case_id, []).append(len(units))
            units.append(_Unit(d, name, float(weights[i]), delta))
        points = look_points(len(cases))
        levels = look_levels(FAIL_FAST_SHARE * gate.alpha, len(points))
        return cls(units, members, base, [c.id for c in cases], points, levels)

    def add(self, result: CaseResult) -> FailFastStop | None:
        """Count one completed case; at a look, the stop if a blocking unit's regression is certain."""
        self.pending[result.id] = result
        while self.ready < len(self.order) and self.order[self.ready] in self.pending:
            self.ready += 1
        while self.look < len(self.points) and self.points[self.look] <= self.ready:
            point = self.points[self.look]
            self._absorb([self.pending.pop(case_id) for case_id in self.order[self.taken : point]])
            self.taken = point
            self.look += 1
            stop = self._test()
            if stop is not None:
                self.look = len(self.points)  # no later look: the run stops
                return stop
        return None

    def _test(self) -> FailFastStop | None:
        if not self.units:
            return None
        level = float(self.levels[self.look - 1])
        total, square, n, delta, weights = (
            np.array([getattr(u, a) for u in self.units], dtype=float)
            for a in ("total", "square", "n", "delta", "weight")
        )
        p = look_p(total, square, n, delta)
        if not stops(p, weights, level):
            return None
        rejected = np.flatnonzero(weighted_holm(p, weights) <= level).tolist()
        first = min(rejected, key=lambda i: p[i] / weights[i])
        u = self.units[first]
        return FailFastStop(
            unit=u.name,
            metric=u.metric.name,
            look=self.look,
            looks=len(self.points),
            cases_at_look=self.taken,
            unit_cases=u.n,
            observed_drop=u.total / u.n,
            tolerance=u.delta,
            p_value=float(p[first]),
            level=level * u.weight,
            alpha_share=FAIL_FAST_SHARE,
            also=[self.units[i].name for i in rejected if i != first],
        )

    def _absorb(self, block: list[CaseResult]) -> None:
        """Add a block's per-case drops to their units' sums."""
        table = scan(block, len(block), named_scores(u.metric for u in self.units))
        for d in {u.metric.name: u.metric for u in self.units}.values():
            base = self.base[d.name]
            for case_id, cand in zip(table.ids, table.values(d).tolist(), strict=True):
                b = base.get(case_id, math.nan)
                if not (math.isfinite(b) and math.isfinite(cand)):
                    continue  # no value on one side (an infra error, no such score) says nothing
                drop = float(oriented_drops(d, np.array(b), np.array(cand)))
                for i in self.members.get(case_id, []):
                    u = self.units[i]
                    if u.metric.name == d.name:
                        u.total, u.square, u.n = u.total + drop, u.square + drop * drop, u.n + 1


def stopped_reason(stop: FailFastStop, done: int, total: int, resume_command: str | None = None) -> str:
    """The gate's reason for a run fail fast stopped: what stopped it, at what level, how to finish it."""
    finish = f"`{resume_command}`" if resume_command else "`evalgate run --resume`"
    return (
        f"{stop_headline(stop, done, total)} (gate.fail_fast: {stop.metric} mean drop {stop.observed_drop:.3g} over "
        f"its first {stop.unit_cases} cases, p {stop.p_value:.2g} ≤ {stop.level:.2g} at look {stop.look} of "
        f"{stop.looks}); {finish} runs the rest"
    )


def mark_stopped(units: list[UnitResult], stop: FailFastStop) -> None:
    """The units of a run fail fast stopped: those its look rejected are ``regressed`` (their delta
    and interval are the fixed-sample test's on the cases run, shown for scale); no other unit is
    ``regressed``: the fixed-sample rule was not run on a prefix chosen by the stop, and its α share
    was not spent there."""
    rejected = {stop.unit, *stop.also}
    for u in units:
        if u.metric == stop.metric and u.unit in rejected:
            u.verdict = "regressed"
            u.note = (
                f"fail fast: regressed at look {stop.look} of {stop.looks} (anytime-valid t-test on per-case drops)"
            )
        elif u.verdict == "regressed":
            u.verdict = "inconclusive"
            u.note = "not decided: the run stopped early (fail fast) on another unit's regression"

"""More evidence (docs/spec.md#more-evidence): the looks after an inconclusive first look, tested anytime-valid.

The first look is the fixed-sample rule at ``(1 − ρ)·α`` (the gate runs ``compare`` with that α).
Every look — the first included — also runs, on each gated unit of a bounded metric, a betting
e-process for "the drop is at most δ" on the paired per-case drops ``y = base − cand`` (oriented:
positive is worse), merged across units by weighted e-Holm with the gate's own α weights at
``ρ·α`` (``evals.compare.evidence``). By the union bound the gate's false-fail rate stays ≤ α
over any number of looks and whatever made us look again; re-testing the fixed-sample rule after a
batch would not (docs/spec.md#more-evidence: boundary false fails of 8–12% after 4 batches).

A batch is one more attempt of each selected case on both sides. A unit's wealth grows only with a
batch that re-ran every one of its cases: a batch of the ``language=ko`` cases says nothing about
overall's mean over all cases. With attempts of the same cases the null is the finite-case one —
"these cases' mean drop is at most δ" — so what a fail after batches means is "these cases got
worse", and the report says so. Pass needs every gated metric's overall unit certified: by the
first look's rule, or by its opposite e-process ("the drop is at least δ") reaching ``1/(ρ·α)``
(the anytime-valid lower bound of the delta above −δ, Howard et al. 2021)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from evals.compare.evidence import LAMBDAS, e_holm, log_e, log_wealth
from evals.compare.metrics import MetricDef, metric_def, named_scores, scan
from evals.compare.model import Comparison, EvidenceLook, EvidenceValue, LookOutcome, UnitResult
from evals.compare.pairing import pair, unit_indices
from evals.results.model import Results
from evals.suite.config import MoreEvidenceSpec, SuiteConfig

ESTIMAND = (
    "the same cases were run again on both sides: a fail after batches means these cases got worse "
    "(not that new cases of the slice would)"
)


@dataclass
class Member:
    """One (metric, unit) of the e-Holm family: its design (weight, δ, cases) and its wealth."""

    metric: MetricDef
    unit: str
    slice_key: str | None
    weight: float
    delta: float
    ids: frozenset[str]
    testable: bool  # a bounded per-case metric: pass@k and unbounded metrics keep e = 1
    worse: np.ndarray = field(default_factory=lambda: np.zeros(len(LAMBDAS)))
    not_worse: np.ndarray = field(default_factory=lambda: np.zeros(len(LAMBDAS)))
    observations: int = 0
    total_drop: float = 0.0
    rerun: bool = False  # updated by the latest batch

    def add(self, y: np.ndarray) -> None:
        y = y[np.isfinite(y)]  # a case without a value on one side (no such score) says nothing
        if not self.testable or y.size == 0:
            return
        self.worse = self.worse + log_wealth(y, self.delta, "worse")
        self.not_worse = self.not_worse + log_wealth(y, self.delta, "not_worse")
        self.observations += int(y.size)
        self.total_drop += float(y.sum())

    @property
    def observed_drop(self) -> float | None:
        return self.total_drop / self.observations if self.observations else None

    @property
    def log_e_worse(self) -> float:
        return float(log_e(self.worse)) if self.testable else 0.0

    @property
    def log_e_not_worse(self) -> float:
        return float(log_e(self.not_worse)) if self.testable else 0.0


def _testable(metric: MetricDef) -> bool:
    return metric.bounded and metric.percentile is None and not metric.column.startswith("pass@")


def _oriented_drops(metric: MetricDef, base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    drop = base - cand if metric.direction == "higher" else cand - base
    return np.clip(drop, -1.0, 1.0)


@dataclass
class Evidence:
    """The e-Holm family of one gate and its looks so far."""

    config: SuiteConfig
    spec: MoreEvidenceSpec
    alpha: float  # the gate's whole α (the config's, before the first look's share)
    members: list[Member]
    first_look_pass: dict[str, bool]  # metric → its overall was certified by the first look's rule
    looks: list[EvidenceLook] = field(default_factory=list)

    @property
    def level(self) -> float:
        return self.spec.rho * self.alpha

    @property
    def threshold(self) -> float:
        return 1.0 / self.level

    # ------------------------------------------------------------------------------------ build

    @classmethod
    def first_look(
        cls, comparison: Comparison, baseline: Results, candidate: Results, config: SuiteConfig, alpha: float
    ) -> Evidence:
        """The family from the first look: the comparison's gated units (their α weights and δ)
        with the paired per-case drops of the first look's attempts."""
        defs = {name: metric_def(name, spec) for name, spec in config.metrics.items()}
        names = named_scores(defs.values())
        bt = scan(baseline.cases, len(baseline.cases), names)
        ct = scan(candidate.cases, len(candidate.cases), names)
        pairing = pair(bt, ct, bool(candidate.run.subset or candidate.run.shard))
        paired_ids = [ct.ids[i] for i in pairing.cand_rows]
        rows = {u.name: u.rows for u in unit_indices(ct, pairing.cand_rows, comparison.gate.slice_keys)}
        members = []
        for u in comparison.units:
            metric = defs.get(u.metric)
            if metric is None or not u.gated or u.weight <= 0 or u.unit not in rows:
                continue
            at = rows[u.unit]
            at = np.arange(len(paired_ids)) if at is None else at  # overall: every paired case
            member = Member(
                metric,
                u.unit,
                u.slice_key,
                u.weight,
                u.tolerance,
                frozenset(paired_ids[i] for i in at),
                _testable(metric),
            )
            if member.testable:
                base = bt.values(metric)[pairing.base_rows][at]
                cand = ct.values(metric)[pairing.cand_rows][at]
                member.add(_oriented_drops(metric, base, cand))
            members.append(member)
        certified = {u.metric: u.verdict in ("unchanged", "improved") for u in comparison.units if u.unit == "overall"}
        evidence = cls(config, config.gate.more_evidence, alpha, members, certified)
        return evidence

    # ------------------------------------------------------------------------------------ looks

    def select(self, comparison: Comparison) -> tuple[list[str], list[str]]:
        """(units, case ids) the next batch re-runs: ``looks_worse`` — slices not regressed whose
        observed drop (all observations so far) is beyond δ; ``all`` — every paired case."""
        regressed = {(u.metric, u.unit) for u in comparison.units if u.verdict == "regressed"}
        if self.spec.select == "all":
            chosen = [m for m in self.members if m.slice_key is None and m.testable]
        else:
            chosen = [
                m
                for m in self.members
                if m.slice_key is not None
                and m.testable
                and (m.metric.name, m.unit) not in regressed
                and (m.observed_drop or 0.0) > m.delta
            ]
        ids: set[str] = set()
        for m in chosen:
            ids |= m.ids
        return list(dict.fromkeys(m.unit for m in chosen)), sorted(ids)

    def add_batch(self, base: Results, cand: Results, rerun: Iterable[str]) -> int:
        """Add one batch (the batch's own attempts on each side). Returns the paired cases used; a
        case with an infra error on either side is left out of this batch."""
        rerun = set(rerun)
        defs = list({m.metric.name: m.metric for m in self.members}.values())
        names = named_scores(defs)
        bt = scan(base.cases, len(base.cases), names)
        ct = scan(cand.cases, len(cand.cases), names)
        pairing = pair(bt, ct, True)
        ids = [ct.ids[i] for i in pairing.cand_rows]
        position = {case_id: i for i, case_id in enumerate(ids)}
        drops = {
            d.name: _oriented_drops(d, bt.values(d)[pairing.base_rows], ct.values(d)[pairing.cand_rows])
            for d in defs
            if _testable(d)
        }
        for m in self.members:
            m.rerun = m.testable and m.ids <= rerun
            if m.rerun:
                at = np.array([position[i] for i in m.ids if i in position], dtype=np.intp)
                m.add(drops[m.metric.name][at])
        return len(ids)

    def look(self) -> tuple[list[Member], bool]:
        """(the members e-Holm rejects at ρ·α, whether every gated overall is certified)."""
        log_es = np.array([m.log_e_worse for m in self.members])
        weights = np.array([m.weight for m in self.members])
        rejected = e_holm(log_es, weights, self.level) if self.members else np.zeros(0, dtype=bool)
        failing = [m for m, r in zip(self.members, rejected.tolist(), strict=True) if r]
        overall = [m for m in self.members if m.slice_key is None]
        certified = bool(overall) and all(
            self.first_look_pass.get(m.metric.name, False)
            or (m.testable and m.log_e_not_worse >= np.log(self.threshold))
            for m in overall
        )
        return failing, certified and not failing

    def record(
        self,
        number: int,
        *,
        units: list[str],
        cases: int,
        attempts: int,
        cost_usd: float | None,
        failing: list[Member],
        passed: bool,
        outcome: LookOutcome,
    ) -> EvidenceLook:
        failing_keys = {(m.metric.name, m.unit) for m in failing}
        shown = [m for m in self.members if m.testable]
        look = EvidenceLook(
            look=number,
            units=units,
            cases=cases,
            attempts=attempts,
            cost_usd=cost_usd,
            values=[
                EvidenceValue(
                    metric=m.metric.name,
                    unit=m.unit,
                    e_value=float(np.exp(min(m.log_e_worse, 700.0))),
                    threshold=self.threshold / m.weight if m.weight > 0 else None,
                    rejected=(m.metric.name, m.unit) in failing_keys,
                    observed_drop=m.observed_drop,
                    observations=m.observations,
                    rerun=m.rerun,
                )
                for m in shown
            ],
            pass_e_values={
                m.metric.name: float(np.exp(min(m.log_e_not_worse, 700.0)))
                for m in self.members
                if m.slice_key is None and m.testable
            },
            passed=passed,
            outcome=outcome,
        )
        self.looks.append(look)
        return look


def mark_failing(comparison: Comparison, failing: list[Member], batches: int, threshold: float) -> list[UnitResult]:
    """Give the units e-Holm rejected their verdict (their delta and interval stay the first
    look's: the looks after it are tested, not estimated)."""
    keys = {(m.metric.name, m.unit): m for m in failing}
    marked = []
    for u in comparison.units:
        m = keys.get((u.metric, u.unit))
        if m is None:
            continue
        u.verdict = "regressed"
        drop = (
            f"; observed drop {m.observed_drop:.3g} over {m.observations} paired observations"
            if m.observed_drop
            else ""
        )
        u.note = (
            f"more evidence: regressed after {batches} batch{'es' if batches != 1 else ''} "
            f"(e-value {np.exp(min(m.log_e_worse, 700.0)):.3g} ≥ {threshold / m.weight:.3g}{drop}); {ESTIMAND}"
        )
        marked.append(u)
    return marked

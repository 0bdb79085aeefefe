"""More evidence (docs/spec.md#more-evidence): the looks after an inconclusive first look.

The first look is the fixed-sample rule at ``(1 − ρ)·α`` (the gate runs ``compare`` with that α).
A batch is one more attempt of each selected case on both sides. After it, every gated unit of a
bounded per-case metric that holds a re-run case is tested on its per-case means over all attempts
so far — the t-test of ``evals.compare.evidence.drop_test``, n = the unit's case count — at the
look's share of ``ρ·α`` (``evals.compare.evidence.look_levels``), merged by weighted Holm with the
gate's own α weights. By the union bound the gate's false-fail rate stays ≤ α over every look
however the looks correlate; re-testing the fixed-sample rule after a batch would not
(docs/spec.md#more-evidence: boundary false fails of 8–12% after 4 batches).

The estimand stays the first look's: the cases as a sample of the inputs they stand for. A
re-run attempt refines its case's mean, never adds a case, so a target that repeats its answers
(temperature 0, a seeded bot) brings nothing new: a batch whose every re-run case answered on both
sides as at the first look ends the batches with no look (:data:`REPEATED`), and a unit whose
re-runs all repeated is not selected again. Pass needs every gated metric's overall unit
certified: by the first look's rule, or by its opposite test ("the drop is at least δ")
rejecting at a look's level."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from evals.compare.evidence import METHOD, drop_test, look_levels
from evals.compare.looks import EvidenceLook, EvidenceValue, LookOutcome
from evals.compare.metrics import MetricDef, metric_def, named_scores, scan
from evals.compare.model import Comparison, UnitResult
from evals.compare.pairing import pair, unit_indices
from evals.compare.stats import weighted_holm
from evals.results.model import Results
from evals.suite.config import SuiteConfig
from evals.suite.gate import MoreEvidenceSpec

ESTIMAND = (
    "the cases stand for the inputs they sample, as at the first look: a re-run attempt refines its case's mean, "
    "it never counts as another case"
)
REPEATED = "the target answered the same: more attempts cannot help; more cases can"


@dataclass
class Side:
    """One side's attempts per paired case of one metric so far: Σ value and count."""

    total: np.ndarray
    count: np.ndarray
    first: np.ndarray  # the first look's per-case value (what a repeated answer equals)

    @property
    def mean(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, self.total / self.count, np.nan)

    def add(self, at: np.ndarray, values: np.ndarray) -> np.ndarray:
        """One attempt of the cases at ``at``; returns which repeated their first-look value (an
        attempt with no value — an infra error — repeats nothing)."""
        ok = np.isfinite(values)
        self.total[at[ok]] += values[ok]
        self.count[at[ok]] += 1
        return ok & np.isclose(values, self.first[at], rtol=0.0, atol=1e-12)


@dataclass
class Member:
    """One (metric, unit) of the gate's Holm family: its design (weight, δ, cases)."""

    metric: MetricDef
    unit: str
    slice_key: str | None
    weight: float
    delta: float
    at: np.ndarray  # the unit's positions among the paired cases
    testable: bool  # a bounded per-case metric: pass@k and percentiles are not per-case means
    rerun: bool = False  # some batch re-ran one of its cases: the later looks test it
    repeated: bool = False  # the latest batch re-ran its cases and every one answered the same
    spent: bool = False  # a batch's re-runs of it all repeated: not selected again
    p_value: float = 1.0
    not_worse_p: float = 1.0
    drop: float | None = None
    cases: int = 0


def testable(metric: MetricDef) -> bool:
    return metric.bounded and metric.percentile is None and not metric.column.startswith("pass@")


def oriented_drops(metric: MetricDef, base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    drop = base - cand if metric.direction == "higher" else cand - base
    return np.clip(drop, -1.0, 1.0)


def _attempts(results: Results, ids: list[str]) -> np.ndarray:
    by_id = results.by_id()
    return np.array([sum(not a.is_infra_error for a in by_id[i].attempts) for i in ids], dtype=float)


@dataclass
class Evidence:
    """The gate's units, their per-case attempts so far and the looks."""

    config: SuiteConfig
    spec: MoreEvidenceSpec
    alpha: float  # the gate's whole α (the config's, before the first look's share)
    members: list[Member]
    ids: list[str]  # the paired cases, in the order of the Side arrays
    sides: dict[str, tuple[Side, Side]]  # metric → (baseline, candidate)
    first_look_pass: dict[str, bool]  # metric → its overall was certified by the first look's rule
    looks: list[EvidenceLook] = field(default_factory=list)

    @property
    def level(self) -> float:
        return self.spec.rho * self.alpha

    def look_level(self, number: int) -> float:
        return float(look_levels(self.level, self.spec.max_batches)[number - 1])

    # ------------------------------------------------------------------------------------ build

    @classmethod
    def first_look(
        cls, comparison: Comparison, baseline: Results, candidate: Results, config: SuiteConfig, alpha: float
    ) -> Evidence:
        """The family from the first look: the comparison's gated units (their α weights and δ)
        with each paired case's first-look value and attempt count on each side."""
        defs = {name: metric_def(name, spec) for name, spec in config.metrics.items()}
        names = named_scores(defs.values())
        bt = scan(baseline.cases, len(baseline.cases), names)
        ct = scan(candidate.cases, len(candidate.cases), names)
        pairing = pair(bt, ct, bool(candidate.run.subset or candidate.run.shard))
        ids = [ct.ids[i] for i in pairing.cand_rows]
        rows = {u.name: u.rows for u in unit_indices(ct, pairing.cand_rows, comparison.gate.slice_keys)}
        members = []
        for u in comparison.units:
            metric = defs.get(u.metric)
            if metric is None or not u.gated or u.weight <= 0 or u.unit not in rows:
                continue
            at = rows[u.unit]
            at = np.arange(len(ids)) if at is None else np.asarray(at, dtype=np.intp)  # overall: every case
            members.append(Member(metric, u.unit, u.slice_key, u.weight, u.tolerance, at, testable(metric)))
        base_n, cand_n = _attempts(baseline, [bt.ids[i] for i in pairing.base_rows]), _attempts(candidate, ids)
        sides = {}
        for m in members:
            if m.testable and m.metric.name not in sides:
                b = bt.values(m.metric)[pairing.base_rows].astype(float)
                c = ct.values(m.metric)[pairing.cand_rows].astype(float)
                # The first look's mean stands for its attempts: a batch's one attempt weighs as one of them.
                sides[m.metric.name] = (
                    Side(np.nan_to_num(b) * base_n, np.where(np.isfinite(b), base_n, 0.0), b),
                    Side(np.nan_to_num(c) * cand_n, np.where(np.isfinite(c), cand_n, 0.0), c),
                )
        certified = {u.metric: u.verdict in ("unchanged", "improved") for u in comparison.units if u.unit == "overall"}
        evidence = cls(config, config.gate.more_evidence, alpha, members, ids, sides, certified)
        for m in evidence.members:
            evidence._measure(m)
        return evidence

    # ------------------------------------------------------------------------------------ looks

    def select(self, comparison: Comparison) -> tuple[list[str], list[str]]:
        """(units, case ids) the next batch re-runs: ``looks_worse`` — slices not regressed whose
        drop (per-case means so far) is beyond δ; ``all`` — every paired case. A unit whose earlier
        re-runs all repeated the first look is left out: another attempt would repeat again."""
        regressed = {(u.metric, u.unit) for u in comparison.units if u.verdict == "regressed"}
        live = [m for m in self.members if m.testable and not m.spent]
        if self.spec.select == "all":
            chosen = [m for m in live if m.slice_key is None]
        else:
            chosen = [
                m
                for m in live
                if m.slice_key is not None
                and (m.metric.name, m.unit) not in regressed
                and m.drop is not None
                and m.drop > m.delta
            ]
        at: set[int] = set()
        for m in chosen:
            at |= set(m.at.tolist())
        return list(dict.fromkeys(m.unit for m in chosen)), sorted(self.ids[i] for i in at)

    def add_batch(self, base: Results, cand: Results, rerun: Iterable[str]) -> bool:
        """Add one batch (its own attempts on each side). Returns whether every re-run case
        answered on both sides exactly as at the first look, for every tested metric."""
        position = {case_id: i for i, case_id in enumerate(self.ids)}
        at = np.array(sorted(position[i] for i in set(rerun) if i in position), dtype=np.intp)
        defs = [metric_def(name, self.config.metrics[name]) for name in self.sides]
        names = named_scores(defs)
        tables = scan(base.cases, len(base.cases), names), scan(cand.cases, len(cand.cases), names)
        same = np.ones(len(self.ids), dtype=bool)
        for d in defs:
            for side, table in zip(self.sides[d.name], tables, strict=True):
                rows = table.index()
                values = np.full(at.size, np.nan)
                found = np.array([self.ids[i] in rows for i in at], dtype=bool)
                values[found] = table.values(d)[[rows[self.ids[i]] for i in at[found]]]
                same[at] &= side.add(at, values)
        rerun_at = np.zeros(len(self.ids), dtype=bool)
        rerun_at[at] = True
        for m in self.members:
            touched = bool(rerun_at[m.at].any())
            m.rerun |= touched and m.testable
            m.repeated = touched and m.testable and bool(same[m.at][rerun_at[m.at]].all())
            m.spent |= m.repeated
            self._measure(m)
        return bool(at.size) and bool(same[at].all())

    def _measure(self, m: Member) -> None:
        """The unit's drop and its two one-sided p-values on its per-case means so far."""
        if not m.testable:
            return
        base, cand = self.sides[m.metric.name]
        d = oriented_drops(m.metric, base.mean[m.at], cand.mean[m.at])
        d = d[np.isfinite(d)]  # a case without a value on one side (no such score) says nothing
        m.cases = int(d.size)
        m.drop = float(d.mean()) if d.size else None
        total, square = float(d.sum()), float(d @ d)
        m.p_value = float(drop_test(total, square, d.size, m.delta, "worse"))
        m.not_worse_p = float(drop_test(total, square, d.size, m.delta, "not_worse"))

    def look(self, number: int) -> tuple[list[Member], bool]:
        """(the members weighted Holm rejects at look ``number``'s level, whether every gated
        overall is certified). Only units holding a re-run case are tested."""
        level = self.look_level(number)
        p = np.array([m.p_value if m.rerun else 1.0 for m in self.members])
        weights = np.array([m.weight for m in self.members])
        adjusted = weighted_holm(p, weights) if self.members else np.zeros(0)
        failing = [
            m
            for m, adj in zip(self.members, adjusted.tolist(), strict=True)
            if adj <= level and m.drop is not None and m.drop > m.delta
        ]
        overall = [m for m in self.members if m.slice_key is None]
        certified = bool(overall) and all(
            self.first_look_pass.get(m.metric.name, False) or (m.rerun and m.not_worse_p <= level) for m in overall
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
        repeated: bool = False,
    ) -> EvidenceLook:
        failing_keys = {(m.metric.name, m.unit) for m in failing}
        level = self.look_level(number) if number else None
        tested = number > 0 and not repeated
        look = EvidenceLook(
            look=number,
            units=units,
            cases=cases,
            attempts=attempts,
            cost_usd=cost_usd,
            level=level if tested else None,
            repeated=repeated,
            values=[
                EvidenceValue(
                    metric=m.metric.name,
                    unit=m.unit,
                    cases=m.cases,
                    attempts_per_case=self._attempts_per_case(m),
                    observed_drop=m.drop,
                    p_value=m.p_value if tested and m.rerun else None,
                    level=level * m.weight if tested and m.rerun and level is not None else None,
                    rejected=(m.metric.name, m.unit) in failing_keys,
                    rerun=m.rerun,
                    repeated=m.repeated and number > 0,
                )
                for m in self.members
                if m.testable
            ],
            passed=passed,
            outcome=outcome,
        )
        self.looks.append(look)
        return look

    def _attempts_per_case(self, m: Member) -> float | None:
        """Mean attempts per case on the candidate's side (a batch adds one on each side)."""
        count = self.sides[m.metric.name][1].count[m.at]
        return float(count.mean()) if count.size else None


def mark_failing(comparison: Comparison, failing: list[Member], batches: int, level: float) -> list[UnitResult]:
    """Give the units the later look rejected their verdict (their delta and interval stay the
    first look's: the looks after it are tested, not estimated)."""
    keys = {(m.metric.name, m.unit): m for m in failing}
    marked = []
    plural = "batch" if batches == 1 else "batches"
    for u in comparison.units:
        m = keys.get((u.metric, u.unit))
        if m is None:
            continue
        u.verdict = "regressed"
        drop = f"mean drop {m.drop:.3g} over its {m.cases} cases' attempts so far; " if m.drop is not None else ""
        u.note = (
            f"more evidence: regressed after {batches} {plural} ({drop}p {m.p_value:.2g} ≤ {level * m.weight:.2g} "
            f"by the {METHOD}); {ESTIMAND}"
        )
        marked.append(u)
    return marked

"""evals.compare.failfast and evals.run.failfast (docs/spec.md#fail-fast): the stopping rule stops
on a certain regression of a blocking unit, never on A/A data, never with a pass; its looks read
the order's prefix whatever finished first; the stratified order spreads every slice over the run."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from evals.compare.failfast import FAIL_FAST_SHARE, LOOKS, FailFast, look_points
from evals.compare.plan import plan_suite, render_text
from evals.results.model import Attempt, CaseResult, FailFastStop, Results, RunInfo
from evals.run.failfast import stratified_order
from evals.suite.cases import Case
from evals.suite.config import SuiteConfig
from evals.suite.gate import GateSpec, MoreEvidenceSpec
from evals.suite.scoring import MetricSpec

CONFIG = SuiteConfig.model_validate({"suite": "demo", "cases": [], "slices": ["language"], "gate": {"fail_fast": True}})
LANGS = ["en"] * 300 + ["ko"] * 100 + ["ja"] * 100  # 500 cases


def _cases() -> list[Case]:
    return [Case(id=f"q{i:03d}", input=f"question {i}", tags={"language": lang}) for i, lang in enumerate(LANGS)]


def _result(case: Case, passed: bool) -> CaseResult:
    return CaseResult(id=case.id, slices=dict(case.tags), hash=case.hash, attempts=[Attempt(passed=passed)])


def _baseline(cases: list[Case], passed: np.ndarray) -> Results:
    info = RunInfo(suite="demo", status="success", total_cases=len(cases), completed_cases=len(cases))
    return Results(run=info, cases=[_result(c, bool(p)) for c, p in zip(cases, passed.tolist(), strict=True)])


def _feed(rule: FailFast, ordered: list[Case], passed: dict[str, bool]) -> tuple[FailFastStop | None, int]:
    """Every case of the order, completed in order; the stop and the cases fed when it came."""
    for fed, case in enumerate(ordered, start=1):
        stop = rule.add(_result(case, passed[case.id]))
        if stop is not None:
            return stop, fed
    return None, len(ordered)


def _run(base: np.ndarray, cand: np.ndarray) -> tuple[FailFastStop | None, int]:
    cases = _cases()
    ordered = stratified_order(cases, CONFIG.slices, CONFIG.gate.seed)
    rule = FailFast.plan(CONFIG, _baseline(cases, base), ordered)
    return _feed(rule, ordered, {c.id: bool(p) for c, p in zip(cases, cand.tolist(), strict=True)})


def test_stops_on_a_broken_slice_early_and_names_it() -> None:
    rng = np.random.default_rng(1)
    base = rng.random(500) < 0.8
    cand = base.copy()
    cand[300:400] = False  # ko: every case fails now (−0.8)
    stop, fed = _run(base, cand)
    assert stop is not None and stop.unit == "language=ko" and stop.metric == "pass_rate"
    assert fed < 250  # well before the end: the run stops scheduling there
    assert stop.cases_at_look == fed and stop.look <= LOOKS // 2
    assert stop.observed_drop > stop.tolerance and stop.p_value <= stop.level
    assert stop.alpha_share == FAIL_FAST_SHARE and stop.level < FAIL_FAST_SHARE * CONFIG.gate.alpha


def test_never_stops_on_a_a_data() -> None:
    """Identical runs, and two runs of one stochastic target (each case's pass probability the
    same on both sides, heterogeneous across cases: Beta(1.4, 0.6), as in benchmarks/sim_gate.py)."""
    rng = np.random.default_rng(2)
    p = rng.beta(1.4, 0.6, 500)
    base = rng.random(500) < p
    assert _run(base, base.copy()) == (None, 500)
    for _ in range(5):
        assert _run(base, rng.random(500) < p)[0] is None


def test_never_stops_with_a_pass() -> None:
    """A candidate far better than its baseline everywhere runs every case: the rule has no pass side."""
    base = np.zeros(500, dtype=bool)
    assert _run(base, ~base) == (None, 500)


def test_a_look_reads_the_orders_prefix_whatever_finished_first() -> None:
    """The first look waits for the first tenth of the order, even when later cases (all broken)
    came back before one of them; it then tests exactly that prefix."""
    cases = _cases()
    ordered = stratified_order(cases, CONFIG.slices, CONFIG.gate.seed)
    base = np.ones(500, dtype=bool)
    rule = FailFast.plan(CONFIG, _baseline(cases, base), ordered)
    first = look_points(500)[0]
    late = ordered[0]
    for case in ordered[1 : first + 150]:  # out of order: every one of these failed
        assert rule.add(_result(case, False)) is None
    stop = rule.add(_result(late, True))
    assert stop is not None and stop.look == 1 and stop.cases_at_look == first


def test_the_stratified_order_spreads_every_slice_and_is_seeded() -> None:
    cases = _cases()
    ordered = stratified_order(cases, ["language"], 0)
    assert sorted(c.id for c in ordered) == sorted(c.id for c in cases)
    assert [c.id for c in ordered] == [c.id for c in stratified_order(cases, ["language"], 0)]
    assert [c.id for c in ordered] != [c.id for c in stratified_order(cases, ["language"], 1)]
    for m in (10, 50, 123, 250):
        count = Counter(c.tags["language"] for c in ordered[:m])
        for lang, n in (("en", 300), ("ko", 100), ("ja", 100)):
            assert abs(count[lang] - m * n / 500) < 2


def test_plan_sizes_the_fixed_rule_at_what_fail_fast_leaves_and_says_so() -> None:
    """docs/spec.md#alpha-split: fail fast's looks take 0.1·α; with more evidence too, the first
    look keeps (1 − ρ) of the rest."""
    units = [("overall", None, 500), ("language=en", "language", 300), ("language=ko", "language", 200)]
    metrics = {"pass_rate": MetricSpec(tolerance=0.02)}
    plain = plan_suite("t", units, metrics, GateSpec(), 0.1, "given")
    fast = plan_suite("t", units, metrics, GateSpec(fail_fast=True), 0.1, "given")
    both = GateSpec(fail_fast=True, more_evidence=MoreEvidenceSpec(max_batches=4, rho=0.2))
    for a, b, c in zip(plain.rows, fast.rows, plan_suite("t", units, metrics, both, 0.1, "given").rows, strict=True):
        assert b.level == pytest.approx((1 - FAIL_FAST_SHARE) * a.level)
        assert c.level == pytest.approx((1 - FAIL_FAST_SHARE) * 0.8 * a.level)
    assert "fixed-sample rule decides at 0.045" in render_text(fast)
    assert "fail fast" not in render_text(plain)

"""evals.compare.sequential: the looks after an inconclusive first look (docs/spec.md#more-evidence), on
results built in process: a repeated batch is recognised (and its units are not selected again), a
stochastic regression of a small slice is found on its per-case means, and a unit is tested with
its case count as n however many attempts its cases have."""

from __future__ import annotations

import numpy as np
import pytest

from evals.compare.analysis import compare
from evals.compare.model import Comparison
from evals.compare.sequential import Evidence
from evals.results.model import Attempt, CaseResult, Results, RunInfo, case_hash
from evals.suite.config import SuiteConfig

N_EN, N_KO = 475, 25


def _case(i: int, passed: bool) -> CaseResult:
    return CaseResult(
        id=f"q{i:03d}",
        slices={"language": "ko" if i >= N_EN else "en"},
        attempts=[Attempt(passed=passed, score=float(passed), output="a")],
        input=f"question {i}",
        expected="42",
        hash=case_hash(f"question {i}", "42"),
    )


def _run(passed: np.ndarray, ids: list[int] | None = None, sha: str = "base") -> Results:
    ids = list(range(passed.size)) if ids is None else ids
    cases = [_case(i, bool(p)) for i, p in zip(ids, passed.tolist(), strict=True)]
    info = RunInfo(
        suite="demo", status="success", total_cases=len(cases), completed_cases=len(cases), git_sha=sha,
        config_hash="sha256:same",
    )  # fmt: skip
    return Results(run=info, cases=cases)


CONFIG = SuiteConfig.model_validate(
    {"suite": "demo", "cases": [], "slices": ["language"], "gate": {"more_evidence": {"max_batches": 10}}}
)


def _first_look() -> tuple[Comparison, Results, Results, np.ndarray, np.ndarray]:
    """500 cases; the candidate breaks 20 en cases, fixes 20 others, breaks 9 ko cases and
    fixes 2: inconclusive at (1 − ρ)·α, the ko slice looks worse."""
    base = np.ones(N_EN + N_KO, dtype=bool)
    base[:20] = False
    base[[N_EN, N_EN + 1]] = False
    cand = base.copy()
    cand[:20], cand[20:40] = True, False
    cand[[N_EN, N_EN + 1]] = True
    cand[N_EN + 2 : N_EN + 11] = False
    first = CONFIG.model_copy(update={"gate": CONFIG.gate.model_copy(update={"alpha": 0.04})})
    comparison = compare(_run(base), _run(cand, sha="cand"), first)
    assert comparison.verdict == "inconclusive"
    return comparison, _run(base), _run(cand, sha="cand"), base, cand


def test_a_batch_that_repeats_the_first_look_is_recognised_and_its_slice_is_not_selected_again():
    comparison, baseline, candidate, base, cand = _first_look()
    evidence = Evidence.first_look(comparison, baseline, candidate, CONFIG, 0.05)
    units, ids = evidence.select(comparison)
    assert units == ["language=ko"] and len(ids) == N_KO
    at = [int(i[1:]) for i in ids]
    repeated = evidence.add_batch(_run(base[at], at), _run(cand[at], at, "cand"), ids)
    assert repeated
    ko = next(m for m in evidence.members if m.unit == "language=ko")
    assert ko.repeated and ko.spent and ko.cases == N_KO and ko.drop == pytest.approx(7 / 25)
    assert evidence.select(comparison) == ([], [])  # another attempt would repeat again
    # One case answering otherwise on one side is new evidence: not a repeat.
    evidence = Evidence.first_look(comparison, baseline, candidate, CONFIG, 0.05)
    other = cand[at].copy()
    other[-1] = not other[-1]
    assert not evidence.add_batch(_run(base[at], at), _run(other, at, "cand"), ids)
    assert evidence.select(comparison)[0] == ["language=ko"]


def test_a_stochastic_regression_of_the_small_slice_is_found_on_its_per_case_means():
    """The candidate answers each ko case wrong at 0.4 per attempt: batch by batch the per-case
    means settle near a 0.4 drop, and a later look fails the slice at its level; n stays 25."""
    comparison, baseline, candidate, base, _ = _first_look()
    evidence = Evidence.first_look(comparison, baseline, candidate, CONFIG, 0.05)
    rng = np.random.default_rng(3)
    failing: list = []
    for number in range(1, 11):
        _, ids = evidence.select(comparison)
        at = [int(i[1:]) for i in ids]
        answers = np.ones(len(at), dtype=bool) & (rng.random(len(at)) >= 0.4)
        assert not evidence.add_batch(_run(base[at], at), _run(answers, at, "cand"), ids)
        failing, passed = evidence.look(number)
        assert not passed
        if failing:
            break
    assert [m.unit for m in failing] == ["language=ko"]
    ko = failing[0]
    assert ko.cases == N_KO and ko.p_value <= evidence.look_level(number) * ko.weight
    look = evidence.record(
        number, units=["language=ko"], cases=N_KO, attempts=2 * N_KO, cost_usd=None, failing=failing, passed=False,
        outcome="fail",
    )  # fmt: skip
    value = next(v for v in look.values if v.unit == "language=ko")
    assert value.rejected and value.cases == N_KO and value.attempts_per_case == number + 1
    # Units with no re-run case are not tested at the later looks.
    en = next(v for v in look.values if v.unit == "language=en")
    assert en.p_value is None and not en.rerun

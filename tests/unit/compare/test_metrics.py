"""metrics.scan: the columnar reduction gives exactly the per-case values of a plain per-case loop
(the reference below is the loop scan used to be), from result models and from the lean loader."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evals.compare.lazyload import LazyResults, load_lazy
from evals.compare.metrics import scan
from evals.results.files import save_results
from evals.results.model import Attempt, AttemptError, CaseResult, Results, RunInfo


def reference_scan(cases: list[CaseResult], names: list[str]) -> tuple[dict[str, list[float]], list[bool], dict]:
    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else float("nan")

    cols: dict[str, list[float]] = {}
    errored = []
    counts: dict[str, int] = {"attempts": 0, "infra_retries": 0, "cases_with_infra_retries": 0, "cache_hits": 0}
    nan = float("nan")
    for case in cases:
        retries = sum(a.retries for a in case.attempts)
        for a in case.attempts:
            if a.error is not None:
                counts[f"error:{a.error.kind}"] = counts.get(f"error:{a.error.kind}", 0) + 1
        counts["attempts"] += len(case.attempts)
        counts["infra_retries"] += retries
        counts["cases_with_infra_retries"] += retries > 0
        counts["cache_hits"] += sum(a.cached for a in case.attempts)
        valid = [a for a in case.attempts if not a.is_infra_error]
        errored.append(not valid)
        passed = [1.0 if a.passed else 0.0 for a in valid if a.passed is not None or a.error is not None]
        row = {
            "pass_rate": sum(passed) / len(passed) if passed else nan,
            "pass_n": len(passed) if passed else nan,
            "pass_c": sum(passed) if passed else nan,
            "score": mean([a.score or 0.0 for a in valid if a.score is not None or a.error]),
            "error_rate": sum(1.0 for a in valid if a.error is not None) / len(valid) if valid else nan,
            "latency": mean([a.latency_ms for a in valid if a.latency_ms is not None]),
            "tokens": mean(
                [
                    (a.tokens_in or 0) + (a.tokens_out or 0)
                    for a in valid
                    if a.tokens_in is not None or a.tokens_out is not None
                ]
            ),
            "cost_usd": mean([a.cost_usd for a in valid if a.cost_usd is not None]),
        }
        for name in names:
            row[f"score:{name}"] = mean([a.scores.get(name, 0.0) for a in valid if name in a.scores or a.error])
        for key, value in row.items():
            cols.setdefault(key, []).append(value)
    return cols, errored, counts


def random_cases(seed: int, n: int) -> list[CaseResult]:
    rng = random.Random(seed)

    def maybe(value):
        return value if rng.random() < 0.7 else None

    cases = []
    for i in range(n):
        attempts = []
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3, 5])):
            kind = rng.choice([None, None, None, "infra", "target", "scorer", "timeout"])
            attempts.append(
                Attempt(
                    passed=maybe(rng.random() < 0.6),
                    score=maybe(rng.random()),
                    scores={k: rng.random() for k in ("fmt", "judge") if rng.random() < 0.5},
                    latency_ms=maybe(rng.uniform(1, 900)),
                    tokens_in=maybe(rng.randrange(0, 500)),
                    tokens_out=maybe(rng.randrange(0, 90)),
                    cost_usd=maybe(rng.random() / 1000),
                    error=AttemptError(kind=kind, message="x") if kind else None,
                    retries=rng.choice([0, 0, 0, 1, 4]),
                    cached=rng.random() < 0.3,
                )
            )
        cases.append(CaseResult(id=f"c{i}", slices={"lang": rng.choice("ab")}, attempts=attempts))
    return cases


@pytest.mark.parametrize("seed", range(6))
def test_scan_equals_the_per_case_loop_from_models_and_from_the_lean_loader(tmp_path, seed):
    cases = random_cases(seed, 300)
    names = ["fmt", "judge", "never_recorded"]
    expected, errored, counts = reference_scan(cases, names)
    results = Results(run=RunInfo(suite="s", status="success", total_cases=300, completed_cases=300), cases=cases)
    save_results(results, tmp_path / "r.json")
    lean = load_lazy(tmp_path / "r.json")
    assert isinstance(lean, LazyResults)
    for source in (results.cases, lean.cases):
        table = scan(source, len(cases), names)
        assert table.counts == counts  # same keys in the same order (error kinds as first met)
        assert table.errored.tolist() == errored
        assert set(table.columns) == set(expected)
        for key, values in expected.items():
            # Bit for bit: the sums run in attempt order, like Python's sum over a case's attempts.
            np.testing.assert_array_equal(table.columns[key], np.array(values, dtype=float), err_msg=key)
        assert table.ids == [c.id for c in cases]
        assert table.case_slices == [c.slices for c in cases]


def test_scan_of_a_run_without_attempts():
    table = scan([CaseResult(id="a"), CaseResult(id="b")], 2)
    assert table.errored.tolist() == [True, True]
    assert np.isnan(table.columns["pass_rate"]).all()
    assert table.counts == {"attempts": 0, "infra_retries": 0, "cases_with_infra_retries": 0, "cache_hits": 0}
    assert not table.has_passed

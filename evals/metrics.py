"""Per-case metric values (SPEC §5): one value per case, the mean over its attempts.

- Attempts that ended in an **infra** error are left out; a case with no other attempt is
  *errored* (not a failure) and is left out of the paired tests.
- A target, scorer or timeout error is a wrong answer: ``passed`` and scores count as 0.
- Metric names: ``pass_rate``, ``score``, ``pass@k`` (unbiased, needs ≥ k attempts), ``error_rate``,
  ``latency_p50_ms``, ``latency_p95_ms``, ``tokens`` (in + out), ``cost_usd``; any other name is a
  named score from ``attempt.scores`` — written ``score:<name>`` or just ``<name>``.
- Unit values: the mean of the per-case values, except latency metrics, which are the 50th/95th
  percentile of per-case (mean) latencies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from evals.config import MetricSpec, default_direction
from evals.results import CaseResult, Results
from evals.stats import pass_at_k

PERCENTILES = {"latency_p50_ms": 50.0, "latency_p95_ms": 95.0}
_PASS_AT = re.compile(r"^pass@([1-9]\d*)$")


@dataclass(frozen=True)
class MetricDef:
    name: str
    column: str  # which per-case column holds its values
    percentile: float | None  # None: the unit value is a mean
    direction: str
    binary_possible: bool  # values can be 0/1 per case (pass_rate with one attempt)
    # Per-case values lie in [0, 1] (rates and scores); False for latency, tokens and cost,
    # whose scale the data must tell (it sets the floor under a small unit's SE).
    bounded: bool = True


def metric_def(name: str, spec: MetricSpec | None = None) -> MetricDef:
    direction = (spec.direction if spec and spec.direction else None) or default_direction(name)
    if name in PERCENTILES:
        return MetricDef(name, "latency", PERCENTILES[name], direction, False, bounded=False)
    if name in ("pass_rate", "error_rate"):
        return MetricDef(name, name, None, direction, True)
    if name in ("tokens", "cost_usd"):
        return MetricDef(name, name, None, direction, False, bounded=False)
    if name == "score" or _PASS_AT.match(name):
        return MetricDef(name, name, None, direction, _PASS_AT.match(name) is not None)
    scorer = name.removeprefix("score:")
    return MetricDef(name, f"score:{scorer}", None, direction, False)


@dataclass
class RunTable:
    """A run as arrays, one row per case in file order, from a single pass over its cases
    (the only per-case Python loop of a comparison; everything after works on numpy)."""

    ids: list[str]
    hashes: list[str | None]
    case_slices: list[dict[str, str]]
    errored: np.ndarray  # bool: no attempt free of infra errors
    columns: dict[str, np.ndarray]  # per-case values, NaN = none
    has_passed: bool  # some attempt records passed true/false
    counts: dict[str, int]  # attempts, infra_retries, cases_with_infra_retries, errors by kind ("error:<kind>")

    def index(self) -> dict[str, int]:
        return {case_id: i for i, case_id in enumerate(self.ids)}

    def values(self, metric: MetricDef) -> np.ndarray:
        if metric.column.startswith("pass@"):
            return pass_at_k(self.columns["pass_n"], self.columns["pass_c"], int(metric.column.removeprefix("pass@")))
        return self.columns[metric.column]

    def slice_keys(self) -> set[str]:
        return {key for slices in self.case_slices for key in slices}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def scan(cases: Iterable[CaseResult], n_cases: int, named_scores: Iterable[str] = ()) -> RunTable:
    """Per-case values of every built-in metric and of the named scores asked for."""
    names = sorted(set(named_scores))
    builtin = ("pass_rate", "pass_n", "pass_c", "score", "error_rate", "latency", "tokens", "cost_usd")
    cols = {c: np.full(n_cases, np.nan) for c in (*builtin, *(f"score:{n}" for n in names))}
    errored = np.zeros(n_cases, dtype=bool)
    ids: list[str] = []
    hashes: list[str | None] = []
    case_slices: list[dict[str, str]] = []
    counts: dict[str, int] = {"attempts": 0, "infra_retries": 0, "cases_with_infra_retries": 0}
    has_passed = False
    for i, case in enumerate(cases):
        ids.append(case.id)
        hashes.append(case.hash)
        case_slices.append(case.slices)
        retries = 0
        for a in case.attempts:
            retries += a.retries
            if a.error is not None:
                counts[f"error:{a.error.kind}"] = counts.get(f"error:{a.error.kind}", 0) + 1
        counts["attempts"] += len(case.attempts)
        counts["infra_retries"] += retries
        counts["cases_with_infra_retries"] += retries > 0
        valid = [a for a in case.attempts if not a.is_infra_error]
        if not valid:
            errored[i] = True
            continue
        passed = [1.0 if a.passed else 0.0 for a in valid if a.passed is not None or a.error is not None]
        has_passed = has_passed or any(a.passed is not None for a in valid)
        if passed:
            cols["pass_rate"][i] = sum(passed) / len(passed)
            cols["pass_n"][i] = len(passed)
            cols["pass_c"][i] = sum(passed)
        cols["score"][i] = _mean([a.score or 0.0 for a in valid if a.score is not None or a.error])
        cols["error_rate"][i] = sum(1.0 for a in valid if a.error is not None) / len(valid)
        cols["latency"][i] = _mean([a.latency_ms for a in valid if a.latency_ms is not None])
        cols["tokens"][i] = _mean(
            [
                (a.tokens_in or 0) + (a.tokens_out or 0)
                for a in valid
                if a.tokens_in is not None or a.tokens_out is not None
            ]
        )
        cols["cost_usd"][i] = _mean([a.cost_usd for a in valid if a.cost_usd is not None])
        for name in names:
            cols[f"score:{name}"][i] = _mean([a.scores.get(name, 0.0) for a in valid if name in a.scores or a.error])
    return RunTable(ids, hashes, case_slices, errored, cols, has_passed, counts)


def named_scores(metrics: Iterable[MetricDef]) -> list[str]:
    return [m.column.removeprefix("score:") for m in metrics if m.column.startswith("score:")]


def default_metric(runs: Iterable[Results | RunTable]) -> str:
    """Without a config: ``pass_rate``, or ``score`` when no attempt says whether it passed."""

    def has_passed(run: Results | RunTable) -> bool:
        if isinstance(run, RunTable):
            return run.has_passed
        return any(a.passed is not None for case in run.cases for a in case.attempts)

    return "pass_rate" if any(has_passed(run) for run in runs) else "score"


def slice_keys_of(runs: Iterable[Results | RunTable]) -> list[str]:
    """Slice keys found in the runs (used when there is no config)."""
    keys: set[str] = set()
    for run in runs:
        keys.update(run.slice_keys() if isinstance(run, RunTable) else (k for c in run.cases for k in c.slices))
    return sorted(keys)

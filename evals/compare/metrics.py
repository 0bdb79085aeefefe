"""Per-case metric values (docs/spec.md#one-value-per-case): one value per case, the mean over its attempts.

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

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from evals.compare.stats import pass_at_k
from evals.results.model import CaseResult, Results
from evals.results.spend import Spend, is_count
from evals.results.trace import tool_names
from evals.suite.scoring import UNBOUNDED_METRICS, MetricSpec, default_direction

if TYPE_CHECKING:
    # An annotation only: the comparison's models cost ~0.1 s to import, and the history's record
    # of a run (evals.history.record, through lazyload) reads these columns without them.
    from evals.compare.model import Direction

PERCENTILES = {"latency_p50_ms": 50.0, "latency_p95_ms": 95.0}
_PASS_AT = re.compile(r"^pass@([1-9]\d*)$")


@dataclass(frozen=True)
class MetricDef:
    name: str
    column: str  # which per-case column holds its values
    percentile: float | None  # None: the unit value is a mean
    direction: Direction
    # Per-case values lie in [0, 1] (rates and scores); False for latency, tokens and cost,
    # whose scale the data must tell (it sets the floor under a small unit's SE).
    bounded: bool = True


def metric_def(name: str, spec: MetricSpec | None = None) -> MetricDef:
    direction = (spec.direction if spec and spec.direction else None) or default_direction(name)
    if name in PERCENTILES:
        return MetricDef(name, "latency", PERCENTILES[name], direction, bounded=False)
    if name in UNBOUNDED_METRICS:  # tokens, cost_usd
        return MetricDef(name, name, None, direction, bounded=False)
    if name in ("pass_rate", "error_rate", "score") or _PASS_AT.match(name):
        return MetricDef(name, name, None, direction)
    scorer = name.removeprefix("score:")
    return MetricDef(name, f"score:{scorer}", None, direction)


@dataclass
class AttemptColumns:
    """Every attempt of a run as arrays, one entry per attempt, cases in file order. Built once
    per run from validated data (result models, or the validated JSON ``evals.compare.lazyload`` keeps);
    :func:`scan` reduces it to per-case values without a Python loop per attempt."""

    n_cases: int
    case: np.ndarray  # intp: the row of each attempt's case
    passed: np.ndarray  # 1.0 / 0.0, NaN = no verdict
    score: np.ndarray  # NaN = none (likewise below)
    latency: np.ndarray
    tokens_in: np.ndarray
    tokens_out: np.ndarray
    cost: np.ndarray
    error_kind: np.ndarray  # object: None or the error's kind
    retries: np.ndarray  # int
    cached: np.ndarray  # bool: the answer came from the response cache
    judged: np.ndarray  # bool: a judge was paid while scoring it (judge_usage)
    judge_tokens_in: np.ndarray  # NaN = none reported (or no judge paid)
    judge_tokens_out: np.ndarray
    judge_cost: np.ndarray
    cache_read: np.ndarray  # the target's metadata.tokens_cache_read; NaN = none
    judge_said: np.ndarray  # bool: metadata.judge holds the built-in judge's verdict (evals.compare.judging)
    judge_cache_read: np.ndarray
    scores: dict[str, np.ndarray]  # every named score some attempt has; NaN = absent
    tools: list[tuple[str, ...] | None]  # the tools each attempt called, in order; None = no trace

    @classmethod
    def collect(cls, attempt_lists: Sequence[Sequence[Any]], *, dicts: bool) -> AttemptColumns:
        """From each case's attempts: ``Attempt`` models, or (``dicts``) their validated JSON
        objects, where a field left out has its default."""
        counts = np.fromiter(map(len, attempt_lists), dtype=np.intp, count=len(attempt_lists))
        flat = list(itertools.chain.from_iterable(attempt_lists))

        def field(name: str, default: Any = None) -> list[Any]:
            return [a.get(name, default) for a in flat] if dicts else [getattr(a, name) for a in flat]

        def floats(name: str) -> np.ndarray:
            return np.array(field(name), dtype=float) if flat else np.empty(0)  # None → NaN

        kind = "kind"
        errors = field("error")
        kinds = [None if e is None else (e[kind] if dicts else e.kind) for e in errors]
        names_of = [tool_names(t) for t in field("trace")]
        usage = field("judge_usage")

        def judge(name: str) -> np.ndarray:
            values = [None if u is None else (u.get(name) if dicts else getattr(u, name)) for u in usage]
            return np.array(values, dtype=float) if flat else np.empty(0)

        def counts_of(values: list[Any]) -> np.ndarray:  # metadata is free-form: a count or nothing
            kept = [v if is_count(v) else None for v in values]
            return np.array(kept, dtype=float) if flat else np.empty(0)

        metadata = [m or {} for m in field("metadata", {})]
        per_attempt_scores = [s for s in field("scores") if s]
        names = sorted(set().union(*per_attempt_scores)) if per_attempt_scores else []
        all_scores = field("scores") if names else []
        return cls(
            n_cases=len(attempt_lists),
            case=np.repeat(np.arange(len(attempt_lists), dtype=np.intp), counts),
            passed=floats("passed"),
            score=floats("score"),
            latency=floats("latency_ms"),
            tokens_in=floats("tokens_in"),
            tokens_out=floats("tokens_out"),
            cost=floats("cost_usd"),
            error_kind=np.array(kinds, dtype=object),
            retries=np.array(field("retries", 0), dtype=np.int64) if flat else np.empty(0, dtype=np.int64),
            cached=np.array(field("cached", False), dtype=bool) if flat else np.empty(0, dtype=bool),
            judged=np.array([u is not None for u in usage], dtype=bool) if flat else np.empty(0, dtype=bool),
            judge_tokens_in=judge("tokens_in"),
            judge_tokens_out=judge("tokens_out"),
            judge_cost=judge("cost_usd"),
            cache_read=counts_of([m.get("tokens_cache_read") for m in metadata]),
            judge_said=np.array(["judge" in m for m in metadata], dtype=bool) if flat else np.empty(0, dtype=bool),
            judge_cache_read=judge("tokens_cache_read"),
            scores={name: np.array([s.get(name) if s else None for s in all_scores], dtype=float) for name in names},
            tools=[None if n is None else tuple(n) for n in names_of],
        )


@dataclass
class RunTable:
    """A run as arrays, one row per case in file order (see :func:`scan`)."""

    ids: list[str]
    hashes: list[str | None]
    case_slices: list[dict[str, str]]
    errored: np.ndarray  # bool: no attempt free of infra errors
    columns: dict[str, np.ndarray]  # per-case values, NaN = none
    has_passed: bool  # some attempt records passed true/false
    # attempts, infra_retries, cases_with_infra_retries, cache_hits, errors by kind ("error:<kind>")
    counts: dict[str, int]
    # The tools the first attempt without an infra error called (the one the case diff shows);
    # None: no such attempt, or it has no trace.
    tools: list[tuple[str, ...] | None]
    spend: Spend  # what the run paid (docs/spec.md#spend-reporting)

    def index(self) -> dict[str, int]:
        return {case_id: i for i, case_id in enumerate(self.ids)}

    def values(self, metric: MetricDef) -> np.ndarray:
        if metric.column.startswith("pass@"):
            return pass_at_k(self.columns["pass_n"], self.columns["pass_c"], int(metric.column.removeprefix("pass@")))
        return self.columns[metric.column]

    def slice_keys(self) -> set[str]:
        return {key for slices in self.case_slices for key in slices}


class ColumnarCases(Sequence[CaseResult]):
    """Cases that already hold their attempts as :class:`AttemptColumns` and their ids, hashes
    and slices as lists (``evals.compare.lazyload``): :func:`scan` reads those instead of the cases."""

    ids: list[str]
    hashes: list[str | None]
    case_slices: list[dict[str, str]]
    attempts: AttemptColumns


def scan(cases: Iterable[CaseResult], n_cases: int, named_scores: Iterable[str] = ()) -> RunTable:
    """Per-case values of every built-in metric and of the named scores asked for."""
    if isinstance(cases, ColumnarCases):
        ids, hashes, case_slices, at = cases.ids, cases.hashes, cases.case_slices, cases.attempts
    else:
        listed = list(cases)
        ids = [c.id for c in listed]
        hashes = [c.hash for c in listed]
        case_slices = [c.slices for c in listed]
        at = AttemptColumns.collect([c.attempts for c in listed], dicts=False)
    if at.n_cases != n_cases:
        raise ValueError(f"scan: {at.n_cases} cases, expected {n_cases}")
    n = n_cases
    with np.errstate(invalid="ignore", divide="ignore"):
        has_error = at.error_kind != None  # noqa: E711 (elementwise on an object array)
        valid = at.error_kind != "infra"
        n_valid = np.bincount(at.case, weights=valid, minlength=n)

        def mean(include: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            """Sum, count and mean per case of ``values`` where ``include`` (sums in attempt
            order, as a Python ``sum`` over the case's attempts would add them)."""
            count = np.bincount(at.case, weights=include, minlength=n)
            total = np.bincount(at.case[include], weights=values[include], minlength=n)
            return total, count, np.where(count > 0, total / count, np.nan)

        judged = valid & (~np.isnan(at.passed) | has_error)
        pass_c, pass_n, pass_rate = mean(judged, (at.passed == 1.0).astype(float))
        has_tokens = ~(np.isnan(at.tokens_in) & np.isnan(at.tokens_out))
        tokens = np.nan_to_num(at.tokens_in) + np.nan_to_num(at.tokens_out)
        cols = {
            "pass_rate": pass_rate,
            "pass_n": np.where(pass_n > 0, pass_n, np.nan),
            "pass_c": np.where(pass_n > 0, pass_c, np.nan),
            "score": mean(valid & (~np.isnan(at.score) | has_error), np.nan_to_num(at.score, nan=0.0))[2],
            "error_rate": np.where(
                n_valid > 0, np.bincount(at.case, weights=valid & has_error, minlength=n) / n_valid, np.nan
            ),
            "latency": mean(valid & ~np.isnan(at.latency), at.latency)[2],
            "tokens": mean(valid & has_tokens, tokens)[2],
            "cost_usd": mean(valid & ~np.isnan(at.cost), at.cost)[2],
        }
        absent = np.full(at.case.size, np.nan)
        for name in sorted(set(named_scores)):
            values = at.scores.get(name, absent)
            cols[f"score:{name}"] = mean(valid & (~np.isnan(values) | has_error), np.nan_to_num(values, nan=0.0))[2]
    retries = np.bincount(at.case, weights=at.retries, minlength=n)
    counts: dict[str, int] = {
        "attempts": int(at.case.size),
        "infra_retries": int(at.retries.sum()),
        "cases_with_infra_retries": int(np.count_nonzero(retries > 0)),
        "cache_hits": int(np.count_nonzero(at.cached)),
    }
    # Error kinds in the order they first occur, as a pass over the attempts would count them.
    kinds, first, number = np.unique(at.error_kind[has_error].astype(str), return_index=True, return_counts=True)
    for i in np.argsort(first, kind="stable"):
        counts[f"error:{kinds[i]}"] = int(number[i])
    has_passed = bool(np.any(valid & ~np.isnan(at.passed)))
    tools: list[tuple[str, ...] | None] = [None] * n
    if any(t is not None for t in at.tools):
        rows = np.flatnonzero(valid)
        cases_seen, first = np.unique(at.case[rows], return_index=True)
        for row, attempt in zip(cases_seen.tolist(), rows[first].tolist(), strict=True):
            tools[row] = at.tools[attempt]
    return RunTable(ids, hashes, case_slices, n_valid == 0, cols, has_passed, counts, tools, _spend(at, valid))


def _spend(at: AttemptColumns, valid: np.ndarray) -> Spend:
    """``evals.results.spend.spend_of`` over the columns: cache hits paid nothing, infra errors
    got no answer, a paid judge adds its part, and a sum nothing reports is unknown (None), not 0."""
    target = valid & ~at.cached
    judged = at.judged
    answered = target | judged

    def total(parts: list[tuple[np.ndarray, np.ndarray]]) -> float | None:
        known = [(paid & ~np.isnan(values), values) for paid, values in parts]
        if not any(k.any() for k, _ in known):
            return None
        return float(sum(values[k].sum() for k, values in known))

    def whole(value: float | None) -> int | None:
        return None if value is None else round(value)

    tokens_in = total([(target, at.tokens_in), (judged, at.judge_tokens_in)])
    tokens_out = total([(target, at.tokens_out), (judged, at.judge_tokens_out)])
    cost = total([(target, at.cost), (judged, at.judge_cost)])
    judge_told = ~(np.isnan(at.judge_tokens_in) & np.isnan(at.judge_tokens_out))
    judge_tokens = total(
        [(judged & judge_told, np.nan_to_num(at.judge_tokens_in) + np.nan_to_num(at.judge_tokens_out))]
    )
    target_told = ~(np.isnan(at.tokens_in) & np.isnan(at.tokens_out))
    tokens_known = (~target | target_told) & (~judged | judge_told)
    cost_known = (~target | ~np.isnan(at.cost)) & (~judged | ~np.isnan(at.judge_cost))
    return Spend(
        attempts=int(at.case.size),
        cached=int(at.cached.sum()),
        answered=int(answered.sum()),
        tokens_in=whole(tokens_in),
        tokens_out=whole(tokens_out),
        tokens_reported=int((answered & tokens_known).sum()),
        cost_usd=cost,
        cost_reported=int((answered & cost_known).sum()),
        judged=int(judged.sum()),
        judge_tokens=whole(judge_tokens),
        judge_cost_usd=total([(judged, at.judge_cost)]),
        tokens_cache_read=whole(total([(target, at.cache_read), (judged, at.judge_cache_read)])),
        judge_tokens_cache_read=whole(total([(judged, at.judge_cache_read)])),
    )


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

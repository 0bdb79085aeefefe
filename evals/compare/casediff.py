"""The case diff (docs/spec.md#case-diff): cases that flipped pass→fail and fail→pass, and the largest score
drops, with input, expected and output excerpts. The lists are cut at ``report.max_cases``, so
which cases come first decides what a reviewer sees: the cases of the slices that failed the gate,
then of slices that regressed without gating, then of slices that look worse than the tolerance
(what more evidence re-runs), then the rest — not the suite's own order, where a large slice's
noisy flips would push the failing slice's cases out of the comment."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from evals.compare.case_changes import CaseDiff, CaseDiffEntry, FlakyBasis
from evals.compare.flaky import attempt_flip_rate
from evals.compare.judging import judge_flip_rate
from evals.compare.metrics import RunTable, metric_def, named_scores, scan
from evals.compare.model import UnitResult
from evals.compare.pairing import Pairing, pair, unit_indices
from evals.compare.runs import Run
from evals.results.model import CaseResult, Results
from evals.results.trace import failed_tail, first_divergence, tool_names

if TYPE_CHECKING:
    from evals.suite.config import SuiteConfig

# The order of the case diff's lists, by the slice units a case belongs to (its best one counts).
FAILING, REGRESSED, LOOKS_WORSE, OTHER = range(4)


def text_excerpt(value: Any, limit: int) -> str | None:
    """A case value as text (JSON for structures), cut to ``limit`` characters with "…"."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


@dataclass(frozen=True)
class _Side:
    """What the case diff shows of one side's first valid attempt."""

    output: str | None = None
    error: str | None = None
    reasoning: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    tools: list[str] | None = None


def grader_reasoning(metadata: dict[str, Any]) -> Any:
    # Our judge keeps ``metadata.judge.reasoning``; importers keep a grader's ``reason``.
    judge = metadata.get("judge")
    if isinstance(judge, dict) and judge.get("reasoning"):
        return judge["reasoning"]
    return metadata.get("reason") or None


def _side(case: CaseResult, limit: int) -> _Side:
    valid = [a for a in case.attempts if not a.is_infra_error] or case.attempts
    if not valid:
        return _Side()
    error = next((f"{a.error.kind}: {a.error.message}" for a in valid if a.error), None)
    first = valid[0]
    return _Side(
        output=text_excerpt(first.output, limit),
        error=text_excerpt(error, limit) if error else None,
        reasoning=text_excerpt(grader_reasoning(first.metadata), limit),
        scores=dict(first.scores),
        tools=tool_names(first.trace),
    )


def _trajectories(baseline: list[str] | None, candidate: list[str] | None) -> dict[str, Any]:
    """The two tool sequences and where they part, when either side called a tool."""
    if not baseline and not candidate:
        return {}
    return {
        "baseline_tools": baseline,
        "candidate_tools": candidate,
        "tools_diverge_at": first_divergence(baseline, candidate)
        if baseline is not None and candidate is not None
        else None,
    }


def _unit_rank(u: UnitResult) -> int:
    if u.verdict == "regressed":
        return FAILING if u.gated and u.weight > 0 else REGRESSED
    if u.delta is not None and (u.delta < -u.tolerance if u.direction == "higher" else u.delta > u.tolerance):
        return LOOKS_WORSE
    return OTHER


def case_ranks(ct: RunTable, pairing: Pairing, units: Sequence[UnitResult], slice_keys: list[str]) -> np.ndarray:
    """Per paired case, the best rank of the slice units it belongs to (:data:`FAILING` first).
    Overall holds every case, so it orders nothing."""
    ranks = np.full(pairing.cand_rows.size, OTHER, dtype=np.intp)
    best: dict[str, int] = {}
    for u in units:
        if u.slice_key is not None:
            best[u.unit] = min(best.get(u.unit, OTHER), _unit_rank(u))
    for index in unit_indices(ct, pairing.cand_rows, slice_keys):
        rank = best.get(index.name, OTHER)
        if index.rows is not None and rank < OTHER:
            ranks[index.rows] = np.minimum(ranks[index.rows], rank)
    return ranks


def case_diff_of(
    baseline: Results,
    candidate: Results,
    config: SuiteConfig,
    units: Sequence[UnitResult],
    slice_keys: list[str],
    flaky: Mapping[str, float],
) -> CaseDiff:
    """The case diff of two runs ordered by ``units``' verdicts: what a gate whose verdicts changed
    after :func:`case_diff` (more evidence) shows."""
    names = named_scores(metric_def(name, spec) for name, spec in config.metrics.items())
    bt = scan(baseline.cases, len(baseline.cases), names)
    ct = scan(candidate.cases, len(candidate.cases), names)
    pairing = pair(bt, ct, bool(candidate.run.subset or candidate.run.shard))
    ranks = case_ranks(ct, pairing, units, slice_keys)
    report = config.report
    return case_diff(baseline, candidate, bt, ct, pairing, report.max_cases, report.excerpt_chars, flaky, ranks)


def case_diff(
    baseline: Run,
    candidate: Run,
    bt: RunTable,
    ct: RunTable,
    pairing: Pairing,
    limit: int,
    excerpt: int,
    flaky: Mapping[str, float],
    ranks: np.ndarray | None = None,
) -> CaseDiff:
    """``flaky``: the history's flip rates of known-flaky cases; a listed case not in it is still
    marked flaky when the attempts of either run disagree (the larger of the two rates), else when
    the repeated verdicts of either run's judge do.
    ``ranks`` (:func:`case_ranks`, per paired case) order the lists before they are cut; within a
    rank the order stays (the suite's, and the largest drops first)."""
    b_pass = bt.columns["pass_rate"][pairing.base_rows]
    c_pass = ct.columns["pass_rate"][pairing.cand_rows]
    b_score = bt.columns["score"][pairing.base_rows]
    c_score = ct.columns["score"][pairing.cand_rows]
    with np.errstate(invalid="ignore"):
        p2f = np.flatnonzero((b_pass >= 0.5) & (c_pass < 0.5))
        f2p = np.flatnonzero((b_pass < 0.5) & (c_pass >= 0.5))
        drop = c_score - b_score
        # A pass → fail flip is usually a score drop too: it is listed (and counted) once, as a flip.
        drops = np.setdiff1d(np.flatnonzero(drop < 0), p2f, assume_unique=True)
    drops = drops[np.argsort(drop[drops], kind="stable")]
    # Cases whose tool calls changed and that are not listed already: what a trajectory-only
    # regression (same answers, another way to them) looks like case by case.
    b_tools = [bt.tools[i] for i in pairing.base_rows.tolist()]
    c_tools = [ct.tools[i] for i in pairing.cand_rows.tolist()]
    moved = [
        k for k, (b, c) in enumerate(zip(b_tools, c_tools, strict=True)) if b is not None and c is not None and b != c
    ]
    other_calls = np.setdiff1d(np.array(moved, dtype=np.intp), np.concatenate([p2f, f2p, drops]))
    if ranks is not None:
        p2f, drops, other_calls = (a[np.argsort(ranks[a], kind="stable")] for a in (p2f, drops, other_calls))
    within = np.fmax(
        attempt_flip_rate(bt.columns["pass_c"][pairing.base_rows], bt.columns["pass_n"][pairing.base_rows]),
        attempt_flip_rate(ct.columns["pass_c"][pairing.cand_rows], ct.columns["pass_n"][pairing.cand_rows]),
    )

    def entry(k: int) -> CaseDiffEntry:
        b_case, c_case = baseline.cases[pairing.base_rows[k]], candidate.cases[pairing.cand_rows[k]]
        b_side, c_side = _side(b_case, excerpt), _side(c_case, excerpt)

        def num(x: float) -> float | None:
            return None if np.isnan(x) else float(x)

        basis: FlakyBasis
        rate, basis = flaky.get(c_case.id), "history"
        if not rate and within[k] > 0:
            rate, basis = float(within[k]), "attempts"
        # A judge with repeats that disagreed with itself on this case: its flip may be the judge's noise.
        if not rate and (unsure := max(judge_flip_rate(b_case), judge_flip_rate(c_case))) > 0:
            rate, basis = unsure, "judge"

        return CaseDiffEntry(
            id=c_case.id,
            slices=c_case.slices,
            baseline_passed=None if np.isnan(b_pass[k]) else bool(b_pass[k] >= 0.5),
            candidate_passed=None if np.isnan(c_pass[k]) else bool(c_pass[k] >= 0.5),
            baseline_pass_rate=num(b_pass[k]),
            candidate_pass_rate=num(c_pass[k]),
            baseline_score=num(b_score[k]),
            candidate_score=num(c_score[k]),
            score_delta=num(drop[k]),
            input=text_excerpt(c_case.input if c_case.input is not None else b_case.input, excerpt),
            expected=text_excerpt(c_case.expected if c_case.expected is not None else b_case.expected, excerpt),
            baseline_output=b_side.output,
            candidate_output=c_side.output,
            candidate_error=c_side.error,
            baseline_reasoning=b_side.reasoning,
            candidate_reasoning=c_side.reasoning,
            baseline_scores=b_side.scores,
            candidate_scores=c_side.scores,
            candidate_trace=failed_tail(c_case.attempts),
            **_trajectories(b_side.tools, c_side.tools),
            flaky_rate=rate or None,
            flaky_basis=basis if rate else None,
        )

    return CaseDiff(
        limit=limit,
        pass_to_fail=[entry(k) for k in p2f[:limit]],
        fail_to_pass=[entry(k) for k in f2p[:limit]],
        score_drops=[entry(k) for k in drops[:limit]],
        trajectory_changes=[entry(k) for k in other_calls[:limit]],
        n_pass_to_fail=int(p2f.size),
        n_fail_to_pass=int(f2p.size),
        n_score_drops=int(drops.size),
        n_trajectory_changes=int(other_calls.size),
        added=pairing.added,
        removed=pairing.removed,
        changed=pairing.changed,
        errored=pairing.errored,
        n_added=len(pairing.added),
        n_removed=len(pairing.removed),
        n_changed=len(pairing.changed),
        n_errored=len(pairing.errored),
        n_paired=int(pairing.base_rows.size),
        n_outside_subset=pairing.outside_subset,
    )

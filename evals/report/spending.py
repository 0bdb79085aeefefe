"""What every report says about spend (docs/spec.md#spend-reporting): the candidate's tokens, cost and cache hits
beside the baseline's, and, for a run a ``limits:`` key stopped, which limit, what was spent and
how to finish it. The markdown report and the HTML page read the same view.

Totals, not means: what a reviewer asks is "what did this gate cost". Two runs of different sizes
(a smoke candidate against a full baseline) are not comparable in totals, so each row names its
attempts; the per-case means stay in the runs table under "What changed"."""

from __future__ import annotations

from typing import Any

from evals.compare.model import Comparison, RunSummary
from evals.results.spend import (
    Spend,
    cache_text,
    cost_text,
    limit_amount,
    resume_hint,
    tokens_text,
    usd,
)
from evals.results.summary import ResultsSummary


def spend_row(name: str, s: Spend) -> dict[str, Any]:
    """One run's spend in words: ``run``, ``attempts``, ``tokens``, ``cost``, ``cache``."""
    return {
        "run": name,
        "attempts": s.attempts,
        "tokens": tokens_text(s),
        "cost": cost_text(s),
        "cache": cache_text(s),
    }


def _short_cost(s: Spend) -> str:
    """The cost in a few characters for the fold's summary line."""
    known = s.cost_known
    if known == "none":
        return "cost unknown"
    return ("≥ " if known == "some" else "") + usd(s.cost_usd or 0.0)


def _change(base: Spend, cand: Spend) -> str:
    """``, +20% per attempt`` when both costs are fully known, per attempt that was paid for (the
    runs may differ in size, and a cache hit paid nothing; a candidate the cache answered whole
    has no change to show: "−100%" would read as a cheaper change)."""
    if base.cost_known != "all" or cand.cost_known != "all" or not base.cost_usd or not base.answered:
        return ""
    if not cand.answered:
        return ""
    per_base = base.cost_usd / base.answered
    per_cand = (cand.cost_usd or 0.0) / cand.answered
    change = (per_cand - per_base) / per_base
    return f" ({change:+.0%} per attempt)" if abs(change) >= 0.005 else " (same per attempt)"


def spend_view(c: Comparison) -> dict[str, Any]:
    """``rows`` (baseline first, when there is one), a one-line ``summary``, the runs whose cost is
    not fully known (``unknown``), whether a judge's calls are in it (``judged``) and, if a limit
    stopped the candidate, ``limit``."""
    cand, base = c.candidate_run, c.baseline_run
    runs = [("baseline", base)] if base else []
    runs.append(("candidate", cand))
    if cand.spend.cached and not cand.spend.answered:
        summary = f"candidate cached: nothing paid ({cand.spend.attempts:,} attempts)"
    else:
        summary = f"candidate {_short_cost(cand.spend)} for {cand.spend.attempts:,} attempts"
        if cand.spend.cached:
            summary += f", {cand.spend.cached:,} cached"
        if cand.spend.batched:  # docs/spec.md#batch-pricing: what was paid at the batch price is said
            summary += f", {cand.spend.batched:,} batched (at the batch price)"
    if cand.fail_fast is not None:  # docs/spec.md#fail-fast: what was not paid for, and why
        summary += f", stopped early by fail fast after {cand.completed_cases:,} of {cand.total_cases:,} cases"
    if base:
        summary += f" · baseline {_short_cost(base.spend)} for {base.spend.attempts:,} attempts"
        summary += _change(base.spend, cand.spend)
    spends = [(name, run.spend) for name, run in runs]
    # Batches are paid in this gate too, on both sides: a row of their own, not hidden in either run.
    batches = c.more_evidence.spend if c.more_evidence is not None else None
    if batches is not None and batches.attempts:
        spends.append(("more evidence (both sides)", batches))
        summary += f" · more evidence {_short_cost(batches)} for {batches.attempts:,} attempts"
    # Re-judging the baseline over a judge change is this gate's spend too (docs/spec.md#judge-bridging).
    if c.judge_bridge is not None and c.judge_bridge.spend.attempts:
        spends.append(("re-judging the baseline", c.judge_bridge.spend))
        summary += f" · re-judging the baseline {_short_cost(c.judge_bridge.spend)}"
    return {
        "rows": [spend_row(name, s) for name, s in spends],
        "summary": summary,
        "unknown": [name for name, s in spends if s.cost_known != "all"],
        "judged": any(s.judged for _, s in spends),
        "limit": limit_view(cand),
    }


def limit_view(run: RunSummary | ResultsSummary) -> dict[str, Any] | None:
    """Which limit stopped ``run`` (a comparison's side, or a results file's summary) and how to
    finish it, or None."""
    stop = run.limit
    if stop is None or run.complete:
        return None
    return {
        "key": f"limits.{stop.limit}",
        "value": limit_amount(stop.limit, stop.value),
        "spent": limit_amount(stop.limit, stop.spent),
        "unknown": stop.unknown,
        "who": "judge scorer" if stop.unreported_by == "judge" else "target",
        "hint": resume_hint(stop),
        "done": run.completed_cases,
        "total": run.total_cases,
    }

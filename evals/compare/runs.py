"""What a comparison says about each run: a summary (status, counts, errors) and what differs
between the two runs' provenance (model, params, git, attempts)."""

from __future__ import annotations

from typing import Any

import numpy as np

from evals.compare.lazyload import LazyResults
from evals.compare.metrics import RunTable
from evals.compare.model import ProvenanceChange, RunSummary
from evals.results.model import Results, TargetInfo
from evals.results.spend import Spend
from evals.results.summary import UnitSummary, run_fields

# A results file as compare reads it: validated models, or the lean form the CLI loads.
Run = Results | LazyResults


def run_summary(results: Run, table: RunTable) -> RunSummary:
    """The comparison's summary of one run, from its scanned table (``evals.results.summary.summarize`` is
    the summary of a run on its own, with its units' CIs and error messages)."""
    run = results.run
    counts = {k.removeprefix("error:"): v for k, v in table.counts.items() if k.startswith("error:")}
    attempts = table.counts["attempts"]
    return RunSummary(
        **run_fields(run),
        cases_in_file=len(results.cases),
        started_at=run.started_at,
        ended_at=run.ended_at,
        git_sha=run.git_sha,
        git_ref=run.git_ref,
        git_dirty=run.git_dirty,
        config_hash=run.config_hash,
        model=run.target.model if run.target else None,
        attempts_per_case=run.attempts_per_case,
        attempts=attempts,
        error_counts=counts,
        error_rate=sum(counts.values()) / attempts if attempts else 0.0,
        infra_error_rate=counts.get("infra", 0) / attempts if attempts else 0.0,
        infra_errors=counts.get("infra", 0),
        infra_retries=table.counts["infra_retries"],
        cases_with_infra_retries=table.counts["cases_with_infra_retries"],
        errored_cases=int(table.errored.sum()),
        spend=_with_batched(table.spend, run.target),
        cache_hits=table.counts["cache_hits"],
        **_cost_and_speed(table),
    )


def own_units(results: Run, slice_keys: list[str]) -> list[UnitSummary]:
    """The candidate's pass rate with its CI, overall and per slice value, on its own: what a
    gate with no baseline can still say (``evalgate run``'s summary table)."""
    from evals.results.summary import summarize as summarize_results

    return summarize_results(results, slice_keys).units


def _cost_and_speed(table: RunTable) -> dict[str, float | None]:
    """Descriptive, never tested or gated unless the config names these metrics: what a reader
    wants to see change beside the pass rate (docs/spec.md#local-loop)."""

    def known(column: str) -> np.ndarray:
        values = table.columns[column]
        return values[~np.isnan(values)]

    latency, tokens, cost = known("latency"), known("tokens"), known("cost_usd")
    return {
        "latency_p50_ms": float(np.percentile(latency, 50)) if latency.size else None,
        "latency_p95_ms": float(np.percentile(latency, 95)) if latency.size else None,
        "tokens_per_case": float(tokens.mean()) if tokens.size else None,
        "cost_usd_per_case": float(cost.mean()) if cost.size else None,
    }


def _with_batched(spend: Spend, target: TargetInfo | None) -> Spend:
    """A batch-tier run (docs/spec.md#batch-pricing) asks its target nothing synchronously: every
    attempt it paid for was answered by the provider's batch API, at the batch price (the columns
    keep no tier; an attempt whose only paid part was its judge, on a cached answer, counts too)."""
    if target is None or target.params.get("tier") != "batch":
        return spend
    return spend.model_copy(update={"batched": spend.answered})


def provenance_diff(baseline: Run, candidate: Run) -> list[ProvenanceChange]:
    """What differs between the two runs' provenance: model, target, params, git, attempts."""

    def flat(results: Run) -> dict[str, Any]:
        run = results.run
        out: dict[str, Any] = {
            "suite": run.suite,
            "git_sha": run.git_sha,
            "git_ref": run.git_ref,
            "attempts_per_case": run.attempts_per_case,
            "config_hash": run.config_hash,
            "evalgate_version": run.evalgate_version,
            "subset": run.subset,
        }
        if run.target:
            out["target.kind"] = run.target.kind
            out["model"] = run.target.model
            out.update({f"params.{k}": v for k, v in run.target.params.items()})
        return out

    b, c = flat(baseline), flat(candidate)
    changes = [
        ProvenanceChange(field=key, baseline=b.get(key), candidate=c.get(key))
        for key in sorted(set(b) | set(c), key=lambda k: (k.startswith("params."), k))
        if b.get(key) != c.get(key)
    ]
    # Two runs of one commit differ anyway when either had uncommitted changes: said, so "nothing
    # differs" is never claimed of them (the changes themselves are not recorded).
    dirty = [baseline.run.git_dirty, candidate.run.git_dirty]
    if any(dirty):
        said = {True: "yes", False: "no", None: "not recorded"}
        changes.insert(
            0, ProvenanceChange(field="uncommitted changes", baseline=said[dirty[0]], candidate=said[dirty[1]])
        )
    return changes

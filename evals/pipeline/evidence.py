"""``gate.more_evidence`` in the gate (docs/spec.md#more-evidence): when the first look is inconclusive, run batches
of one more attempt of the selected cases on both sides and look again (``evals.compare.sequential``
decides). Batches come from a source (``evals.pipeline.batch_source``): run here — the candidate's
side from this checkout, the baseline's from a git worktree of the baseline's commit or its
recorded openai target (``evals.pipeline.baseline_side``) — or, on pull requests in Actions,
replayed from the files the two side jobs wrote (``evals.pipeline.side_job``), so the
baseline's side never runs where the PR's code ran. The slices were
chosen *because* of the first look, so re-running only the candidate against the stored baseline's
values would keep the baseline's lucky draws and fail unchanged slices
(``benchmarks/sim_evidence.py`` measures it). Where neither can run, more evidence says so and does
not run, and the first look keeps its whole α.

Every batch is a child ``evalgate run`` (the same token isolation as the suite run) writing its
own file under ``<out-dir>/more-evidence/``; a gate run again with the same out dir reuses the
complete ones and resumes a partial one. A batch that does not complete (cancelled, timed out,
infra errors) ends the gate ``incomplete``: never a pass."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.escape import log_value
from evals.compare.casediff import case_diff_of
from evals.compare.evidence import METHOD
from evals.compare.ladder import exit_code_for
from evals.compare.looks import LookOutcome, MoreEvidence
from evals.compare.model import Comparison
from evals.compare.sequential import ESTIMAND, REPEATED, Evidence, Member, mark_failing
from evals.pipeline.batch_budget import BatchBudget
from evals.pipeline.batch_source import BatchSource
from evals.results import console
from evals.results.files import save_results
from evals.results.model import BatchInfo, Results

if TYPE_CHECKING:
    from evals.suite.config import SuiteConfig


def imported(results: Results) -> str | None:
    """The harness a results file was imported from (nothing to re-run), else None."""
    fmt = results.run.source.get("format") if results.run.source else None
    return str(fmt) if fmt and fmt != "evalgate" else None


def nothing_to_rerun(config: SuiteConfig, fmt: str) -> str:
    return (
        f"gate.more_evidence re-runs cases, but the candidate was imported from {fmt}: there is nothing to "
        f"re-run — let evalgate run the suite (a target in the config), or remove gate.more_evidence from "
        f"{config.path or 'the config'}"
    )


def first_look_only(results: Results) -> Results:
    """The candidate as its first look saw it: a results file of an earlier gate may hold its
    batches' attempts already (they are run again, or reused from their files)."""
    if not any(a.batch for case in results.cases for a in case.attempts):
        return results
    cases = [c.model_copy(update={"attempts": [a for a in c.attempts if a.batch is None]}) for c in results.cases]
    run = results.run.model_copy(update={"batches": []})
    return results.model_copy(update={"cases": cases, "run": run})


def _merge(candidate: Results, batch: Results, number: int, units: list[str]) -> None:
    """The batch's attempts join the candidate's cases, marked with their batch."""
    by_id = candidate.by_id()
    for case in batch.cases:
        if case.id in by_id:
            by_id[case.id].attempts.extend(a.model_copy(update={"batch": number}) for a in case.attempts)
    candidate.run.batches.append(BatchInfo(batch=number, units=units, case_ids=[c.id for c in batch.cases]))


def gather(
    comparison: Comparison,
    *,
    candidate: Results,
    candidate_path: Path,
    baseline: Results,
    config: SuiteConfig,
    source: BatchSource,
    alpha: float,
    flaky: Mapping[str, float] | None = None,
) -> Comparison:
    """Take batches from ``source`` (run here, or replayed from the side jobs' files) until the gate
    is decided or the budget is spent; ``comparison`` (the first look, at (1 − ρ)·α) gets its
    verdict from the looks and a ``more_evidence`` record of each. The candidate's results file is
    rewritten with the batches' attempts."""
    spec = config.gate.more_evidence
    evidence = Evidence.first_look(comparison, baseline, candidate, config, alpha)
    record = MoreEvidence(
        rho=spec.rho,
        first_look_alpha=(1 - spec.rho) * alpha,
        sequential_alpha=spec.rho * alpha,
        method=METHOD,
        select=spec.select,
        max_batches=spec.max_batches,
        max_cost_usd=spec.max_cost_usd,
        baseline_side=source.description,
        ended="inconclusive",
        summary="",
        estimand=ESTIMAND,
    )
    comparison.more_evidence = record
    # The first look was the fixed-sample rule's, and inconclusive: the later looks decide.
    failing: list[Member] = []
    outcome: LookOutcome = "continue"
    evidence.record(0, units=[], cases=0, attempts=0, cost_usd=None, failing=[], passed=False, outcome=outcome)
    batches = 0
    # The gate's limits (the candidate's run, and every batch, both sides) and what the batches spent.
    budget = BatchBudget(config.limits, first_look_only(candidate), baseline)
    offset = max((len(c.attempts) for c in candidate.cases), default=config.attempts)
    while outcome == "continue":
        units, ids = evidence.select(comparison)
        spent = budget.batches.cost_usd
        if not ids:
            outcome = "inconclusive"
            record.summary = _nothing_selected(batches, spec.select)
            break
        if batches >= spec.max_batches:
            outcome = "inconclusive"
            record.summary = _still(batches, f"max_batches {spec.max_batches} reached")
            break
        if spec.max_cost_usd is not None and spent is not None and spent >= spec.max_cost_usd:
            outcome = "inconclusive"
            record.summary = _still(batches, f"max_cost_usd {spec.max_cost_usd:g} reached (spent ${spent:.4g})")
            break
        refused = budget.refusal(len(ids))
        if refused is not None:
            outcome = "inconclusive"
            record.summary = _still(batches, refused)
            break
        number = batches + 1
        of = log_value(", ".join(units), limit=None)
        console.info(f"more evidence: batch {number}: {len(ids)} cases of {of} on both sides", source="gate")
        got = source.batch(number, ids, offset, budget.caps())
        if isinstance(got, str):
            # A side job ran fewer batches than this loop wants (its budget, or another selection):
            # nothing to look at, and never a pass.
            outcome = "inconclusive"
            record.summary = _still(batches, got)
            break
        cand, base = got.candidate, got.baseline
        paid = budget.add(cand)
        if base is not None:
            paid = paid.plus(budget.add(base))
        offset += 1
        batches = number
        cost = paid.cost_usd
        _merge(candidate, cand, number, units)
        unfinished = next((r for r in (cand, base) if r is None or not r.run.is_complete), None)
        stopped = unfinished.run.limit if unfinished is not None else None
        if stopped is not None:
            # What is left of a limit ran out within the batch (its estimate was short): the batch
            # is not used, and the first look's verdict stands, as when the budget ends otherwise.
            outcome = "inconclusive"
            record.summary = _still(
                number - 1, f"{budget.reached(stopped.limit)} during batch {number}, whose attempts are not used"
            )
            evidence.record(
                number, units=units, cases=len(ids), attempts=paid.attempts, cost_usd=cost,
                failing=[], passed=False, outcome=outcome,
            )  # fmt: skip
            break
        if unfinished is not None or base is None:
            which = "candidate" if not cand.run.is_complete else "baseline"
            state = f"{unfinished.run.status}, " if unfinished is not None else ""
            done = f"{unfinished.run.completed_cases}/{unfinished.run.total_cases}" if unfinished else "0"
            outcome = "incomplete"
            record.summary = (
                f"batch {number} did not complete on the {which} side ({state}{done} cases): the gate is incomplete; "
                f"{source.resume(candidate_path)}"
            )
            evidence.record(
                number, units=units, cases=len(ids), attempts=paid.attempts, cost_usd=cost,
                failing=[], passed=False, outcome=outcome,
            )  # fmt: skip
            break
        if base.run.config_hash != baseline.run.config_hash:
            outcome = "incomplete"
            record.summary = (
                f"the baseline side ({source.short}) scores with other definitions (config hash "
                f"{base.run.config_hash} vs the stored baseline's {baseline.run.config_hash}): its re-run is no "
                "baseline attempt; more evidence stopped"
            )
            evidence.record(
                number, units=units, cases=len(ids), attempts=paid.attempts, cost_usd=cost,
                failing=[], passed=False, outcome=outcome,
            )  # fmt: skip
            break
        if evidence.add_batch(base, cand, ids):
            # Attempts of the same cases that answer as before carry no new evidence, and neither
            # would the next batch's: no look is taken (its α stays unspent).
            outcome = "inconclusive"
            record.summary = f"stopped after batch {number}: {REPEATED}"
            evidence.record(
                number, units=units, cases=len(ids), attempts=paid.attempts, cost_usd=cost,
                failing=[], passed=False, outcome=outcome, repeated=True,
            )  # fmt: skip
            break
        failing, passed = evidence.look(number)
        outcome = _outcome(failing, passed)
        evidence.record(
            number, units=units, cases=len(ids), attempts=paid.attempts, cost_usd=cost,
            failing=failing, passed=passed, outcome=outcome,
        )  # fmt: skip
    record.looks = evidence.looks
    record.attempts = budget.batches.attempts
    record.cost_usd = budget.batches.cost_usd
    record.spend = budget.batches if budget.batches.attempts else None
    _conclude(comparison, record, evidence, failing if outcome == "fail" else [], batches, outcome)
    if outcome == "fail":  # the slices that failed now: their cases first in the case diff
        first = first_look_only(candidate)
        slice_keys = comparison.gate.slice_keys
        comparison.case_diff = case_diff_of(baseline, first, config, comparison.units, slice_keys, flaky or {})
    if batches:
        save_results(candidate, candidate_path)
    return comparison


def not_run(config: SuiteConfig, comparison: Comparison, side: BatchSource | str) -> MoreEvidence:
    """The record of a gate whose more evidence did not run: the baseline side cannot be re-run
    (``side`` says why), or the first look decided."""
    spec = config.gate.more_evidence
    ran = not isinstance(side, str)
    alpha = config.gate.alpha
    why = f"the first look decided ({comparison.verdict}): no batch was needed" if ran else f"not run: {side}"
    if not ran:
        comparison.warnings.append(f"more evidence {why}; the first look used the whole α")
    return MoreEvidence(
        rho=spec.rho,
        first_look_alpha=(1 - spec.rho) * alpha if ran else alpha,
        sequential_alpha=spec.rho * alpha if ran else 0.0,
        method=METHOD if ran else "",
        select=spec.select,
        max_batches=spec.max_batches,
        max_cost_usd=spec.max_cost_usd,
        baseline_side=side if isinstance(side, str) else side.description,
        ended="not-run",
        summary=why,
        estimand=ESTIMAND,
    )


def _outcome(failing: list[Member], passed: bool) -> LookOutcome:
    if failing:
        return "fail"
    if passed:
        return "pass"
    return "continue"


def _nothing_selected(batches: int, select: str) -> str:
    """Why the loop stopped with no case to re-run. Before any batch, "still ... any more" told the
    user that batches had run; and ``looks_worse`` can only ever turn a slice into fail, so the way
    to a pass is named."""
    if select == "all":
        why = "overall has no metric the sequential test can use (a bounded score that is not a percentile or pass@k)"
    else:
        why = "no slice looks worse than −δ (the tolerance); only `select: all` can take overall to pass"
    if batches == 0:
        return f"no batch was run: {why}"
    return _still(batches, why.replace("(the tolerance)", "(the tolerance) any more", 1))


def _still(batches: int, why: str) -> str:
    plural = "batch" if batches == 1 else "batches"
    return f"still inconclusive after {batches} {plural} ({why})"


def _conclude(
    comparison: Comparison, record: MoreEvidence, evidence: Evidence, failing: list[Member], batches: int, outcome: str
) -> None:
    plural = "batch" if batches == 1 else "batches"
    if outcome == "fail":
        marked = mark_failing(comparison, failing, batches, evidence.look_level(batches))
        names = ", ".join(f"{u.metric} on {u.unit}" for u in marked)
        record.ended = "fail"
        record.summary = f"regressed after {batches} {plural}: {names}"
        comparison.verdict = "fail"
        comparison.reason = f"regression (more evidence, {batches} {plural}): {names}; {ESTIMAND}"
    elif outcome == "pass":
        record.ended = "pass"
        record.summary = f"overall certified within the tolerance after {batches} {plural}"
        comparison.verdict = "pass"
        comparison.reason = (
            f"no regression beyond tolerance: every gated overall within the band by the later looks' test after "
            f"{batches} {plural}"
        )
    elif outcome == "incomplete":
        record.ended = "incomplete"
        comparison.verdict = "incomplete"
        comparison.reason = f"more evidence: {record.summary}"
    else:
        record.ended = "inconclusive"
        record.summary = record.summary or _still(batches, "nothing decided")
        comparison.reason = f"{comparison.reason}; more evidence: {record.summary}"
    comparison.exit_code = exit_code_for(comparison.verdict, comparison.gate.inconclusive, "warn")
    console.info(f"more evidence: {log_value(record.summary, limit=None)}", source="gate")

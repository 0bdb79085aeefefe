"""Re-scoring a stored run with today's judge (docs/spec.md#judge-bridging): the gate's bridge over
a judge change, and ``evalgate rejudge``. Only the judge is paid: the outputs are the run's stored
ones, the scorers are the config's (the others are the baseline's own, unchanged, and run locally
so that each attempt's ``passed`` and ``score`` combine as a run would combine them), the judge's
calls go through the response cache and count in ``limits`` beside what the candidate already
spent. The re-scored run carries the config's definitions, so it compares with a candidate of
that config like any run of it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from evals.common.errors import EXIT_INFRA, UsageError
from evals.compare.bridge import JUDGE, JudgeBridge, judges_agreement, rejudgeable, unjudgeable
from evals.compare.compatibility import judge_change
from evals.results import console
from evals.results.masking import mask_secrets
from evals.results.model import Attempt, AttemptError, CaseResult, Results
from evals.results.spend import JudgeUsage, Spend, spend_of
from evals.suite.config import SuiteConfig

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.run.scorers.base import Scorer
    from evals.store.selection import Baselines
    from evals.suite.cases import Case


@dataclass
class Rejudged:
    results: Results  # the run re-scored, recording the config's definitions
    bridge: JudgeBridge
    stopped: str | None = None  # the limit that stopped it before every attempt was re-judged


def rejudge(
    results: Results,
    config: SuiteConfig,
    *,
    spent: Spend | None = None,
    cache: bool = True,
    only: set[str] | None = None,
) -> Rejudged:
    """``results`` re-scored by ``config``'s scorers on its stored outputs. ``spent``: what the gate
    already paid (the candidate's run), which the config's cost and token limits count too;
    ``only``: the case ids to re-judge (a smoke gate's), the others kept as they are. UsageError
    when the run cannot be re-judged (imported, outputs not stored whole) or the config has no judge."""
    if not any(s.name == JUDGE and s.python is None for s in config.scorers):
        raise UsageError(f"{config.suite!r} has no judge scorer: there is nothing to re-judge with")
    if why := unjudgeable(results):
        raise UsageError(f"this run cannot be re-judged: {why}")
    # Here, not at the top: the gate imports this module, and runs the suite's code only to re-judge.
    import asyncio

    from evals.run.cache import open_cache
    from evals.run.execution import judge_cached
    from evals.run.scorers.builtin import build_scorers
    from evals.suite.cases import load_cases

    today = {case.id: case for case in load_cases(config)}
    responses = open_cache(config, use=cache)
    try:
        scorers = build_scorers(config.scorers, config.root, config.where, responses if judge_cached(config) else None)
        cases, paid, stopped = asyncio.run(_rescore(results, today, scorers, config, spent or Spend(), only))
    finally:
        if responses is not None:
            responses.close()
    run = results.run.model_copy(update={"config_hash": config.config_hash(), "definitions": config.definitions()})
    after = results.model_copy(update={"run": run, "cases": cases})
    bridge = JudgeBridge(
        changes=[],
        rejudged=len(paid),
        kept=sum(len(c.attempts) for c in results.cases) - len(paid),
        agreement=judges_agreement(results, after),
        spend=_judge_spend(paid),
    )
    return Rejudged(after, bridge, stopped)


def _judge_spend(paid: list[JudgeUsage | None]) -> Spend:
    """What the judge's calls cost, one entry per attempt re-judged (None: its verdicts came from
    the cache, a hit). The target's answers were paid by the stored run: only the judge counts."""
    spend = spend_of(Attempt(cached=True, judge_usage=usage) for usage in paid)
    return spend.model_copy(update={"cached": sum(usage is None for usage in paid)})


def _case(stored: CaseResult, today: dict[str, Case]) -> Case:
    """What the judge reads of a case: today's case when its input and expected are the stored
    ones (unmasked, as the first judge read them), else the stored copy."""
    case = today.get(stored.id)
    if case is not None and case.hash == stored.hash:
        return case
    from evals.suite.cases import Case

    return Case(id=stored.id, input=stored.input, expected=stored.expected, metadata=stored.metadata)


async def _rescore(
    results: Results,
    today: dict[str, Case],
    scorers: list[Scorer],
    config: SuiteConfig,
    spent: Spend,
    only: set[str] | None,
) -> tuple[list[CaseResult], list[JudgeUsage | None], str | None]:
    """The cases re-scored, what each re-judged attempt's judge calls cost, the limit that stopped it."""
    import asyncio

    limits = config.limits
    paid: list[JudgeUsage | None] = []
    budget = {"cost": spent.cost_usd or 0.0, "tokens": spent.tokens or 0}
    stopped: list[str] = []
    gate = asyncio.Semaphore(config.concurrency)

    def over() -> str | None:
        if limits.max_cost_usd is not None and budget["cost"] >= limits.max_cost_usd:
            return f"limits.max_cost_usd (${budget['cost']:.4g} spent of ${limits.max_cost_usd:g})"
        if limits.max_tokens is not None and budget["tokens"] >= limits.max_tokens:
            return f"limits.max_tokens ({budget['tokens']:,} spent of {limits.max_tokens:,})"
        return None

    async def one(attempt: Attempt, case: Case) -> Attempt:
        if not rejudgeable(attempt):
            return attempt
        async with gate:
            if not stopped and (why := over()):
                stopped.append(why)
            if stopped:  # kept as it was: the gate is then incomplete, `rejudge` writes nothing
                return attempt
            new, usage = await _scored(attempt, case, scorers)
        paid.append(usage)
        if usage is not None:
            budget["cost"] += usage.cost_usd or 0.0
            budget["tokens"] += usage.tokens or 0
            # As in a run: a limit the judge's calls do not report cannot be enforced, so it stops.
            unreported = [
                f"{key} (the judge reported no {what}: a limit that cannot be measured cannot be enforced)"
                for key, what, value, known in (
                    ("limits.max_cost_usd", "cost", limits.max_cost_usd, usage.cost_usd),
                    ("limits.max_tokens", "tokens", limits.max_tokens, usage.tokens),
                )
                if value is not None and known is None
            ]
            if unreported and not stopped:
                stopped.append(unreported[0])
        return new

    async def whole(stored: CaseResult) -> CaseResult:
        if only is not None and stored.id not in only:
            return stored
        case = _case(stored, today)
        attempts = await asyncio.gather(*(one(a, case) for a in stored.attempts))
        return stored.model_copy(update={"attempts": list(attempts)})

    try:
        cases = await asyncio.gather(*(whole(c) for c in results.cases))
    finally:
        for scorer in scorers:
            await scorer.aclose()
    if stopped:
        console.info(f"re-judging stopped at {stopped[0]}", source="gate")
    return list(cases), paid, stopped[0] if stopped else None


async def _scored(attempt: Attempt, case: Case, scorers: list[Scorer]) -> tuple[Attempt, JudgeUsage | None]:
    """The attempt scored again on its stored output and trace (its ``judge_usage`` stays what
    the stored run paid), and what the judge's calls cost now; a judge that gives no verdict makes
    it an infra error, as in a run."""
    from evals.run.scorers.base import ScorerError
    from evals.run.scorers.builtin import score_attempt_async

    metadata: dict[str, Any] = {k: v for k, v in attempt.metadata.items() if k != JUDGE}
    try:
        verdict = await score_attempt_async(scorers, attempt.output, case, attempt.trace)
    except ScorerError as exc:
        error = AttemptError(kind=exc.kind, message=str(mask_secrets(str(exc))))
        return attempt.model_copy(update={"passed": None, "score": None, "scores": {}, "error": error}), exc.usage
    rescored = attempt.model_copy(
        update={
            "passed": verdict.passed,
            "score": verdict.score,
            "scores": dict(verdict.scores),
            "metadata": mask_secrets({**metadata, **verdict.details}),
        }
    )
    return rescored, verdict.usage


# ------------------------------------------------------------------------------------- the gate's bridge


@dataclass
class Bridge:
    """The gate's bridge over a judge change: the baselines to compare with (the baseline
    re-scored), and what the comparison then says; or why the baseline could not be re-judged."""

    baselines: Baselines
    bridge: JudgeBridge | None = None
    refused: str | None = None
    stopped: str | None = None

    @property
    def no_batches(self) -> str | None:
        """Why more evidence cannot re-run the baseline's side against a re-judged baseline, else None."""
        if self.bridge is None:
            return None
        return (
            "the baseline was re-judged with the candidate's judge, and its side's batches would run under the "
            "baseline commit's config, scored by its old judge"
        )

    def annotate(self, comparison: Comparison) -> None:
        """The bridge in the comparison: what re-judging showed; why it could not be made, beside
        ``incompatible``; a limit that stopped it makes the gate ``incomplete`` (never a pass)."""
        if self.refused and comparison.verdict == "incompatible":
            comparison.reason += f" The judge alone changed, but the baseline cannot be re-judged: {self.refused}."
        if self.bridge is None:
            return
        comparison.judge_bridge = self.bridge
        if self.stopped:
            comparison.verdict, comparison.exit_code = "incomplete", EXIT_INFRA
            comparison.reason = (
                f"re-judging the baseline with the candidate's judge stopped at {self.stopped}: a baseline judged "
                "partly by each judge is no reference; raise the limit and gate again (the judge's verdicts so far "
                "are in the response cache)"
            )


def judge_only_change(baseline: Results, config: SuiteConfig) -> tuple[list[str] | None, str | None]:
    """(how the judge changed, when nothing but the judge did; why the baseline cannot be
    re-judged, when it cannot) — decided from the recorded definitions, before any case runs."""
    changes = judge_change(baseline.run.definitions, config.definitions())
    if changes is None or baseline.run.suite != config.suite:
        return None, None
    return changes, unjudgeable(baseline)


def bridge_judge(config: SuiteConfig, baselines: Baselines, candidate: Results, *, runs_code: bool) -> Bridge:
    """The baselines to compare ``candidate`` with: when only the judge changed since the
    baseline, the baseline re-scored with the candidate's judge. ``runs_code``: whether this job
    may run the suite's code (a python scorer): a job that gates a results file in Actions may not."""
    loaded = baselines.baseline
    if loaded is None:
        return Bridge(baselines)
    changes, refused = judge_only_change(loaded.results, config)
    if changes is None:
        return Bridge(baselines)
    # An imported candidate records no config_hash: it was scored by its harness, not by this judge either.
    if refused is None and candidate.run.config_hash != config.config_hash():
        refused = (
            "it would be re-judged with this config's judge, but the candidate was not scored by this config (its "
            "config_hash is another, or none)"
        )
    if refused is None and not runs_code and any(s.python for s in config.scorers):
        refused = (
            "its python scorers would run the repository's code in a job that gates a results file and runs none; "
            "gate in the job that runs the suite"
        )
    if refused is not None:
        return Bridge(baselines, refused=refused)
    if not candidate.run.is_complete:
        return Bridge(baselines)  # the gate is incomplete whatever the baseline says: nothing to pay for
    console.info(f"only the judge changed ({'; '.join(changes)}): re-judging the baseline's outputs", source="gate")
    # A smoke gate compares the candidate's cases only: the baseline's others need no judge.
    only = {c.id for c in candidate.cases} if candidate.run.subset else None
    spent = spend_of(a for c in candidate.cases for a in c.attempts)
    try:
        done = rejudge(loaded.results, config, spent=spent, only=only)
    except UsageError as exc:  # the judge cannot be set up here (its key unset, say)
        return Bridge(baselines, refused=str(exc))
    bridge = done.bridge.model_copy(update={"changes": changes})
    again = replace(loaded, results=done.results)
    # The blessed snapshot is often the baseline itself (a reset): the drift guard then reads it re-judged too. A
    # different one keeps its own judge, and the drift guard says it skipped it.
    blessed = baselines.blessed
    if blessed is not None and loaded.ref.snapshot is not None and blessed.ref.snapshot == loaded.ref.snapshot:
        blessed = replace(blessed, results=done.results)
    rescored = replace(baselines, baseline=again, blessed=blessed)
    return Bridge(rescored, bridge, stopped=done.stopped)

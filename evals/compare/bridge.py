"""Bridging a judge change (docs/spec.md#judge-bridging): when the only definition that changed
between a baseline and a candidate is the ``judge`` scorer's (its model, rubric, threshold, format,
provider), the baseline's stored outputs can be re-scored with the candidate's judge and gated
against, instead of the gate ending ``incompatible``. This module decides, from the two runs'
recorded definitions alone, whether a change is such a change, whether a stored run can be
re-judged at all, and holds what the report shows of a bridge; the re-scoring itself (judge calls)
is ``evals.pipeline.rejudge``."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from evals.compare.agreement import Agreement, agreement
from evals.results.model import Attempt, Results, RunInfo
from evals.results.spend import Spend

JUDGE = "judge"  # the built-in judge scorer's name (a scorer's name is unique in a config)
_WORDS = {"pass": True, "true": True, "yes": True, "fail": False, "false": False, "no": False}


class JudgeBridge(BaseModel):
    """What re-judging the baseline did: which judge it used instead of which, how often the two
    judges agreed on the baseline's outputs, what it cost."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    changes: list[str] = Field(description="How the judge's definition changed (baseline's → candidate's).")
    rejudged: int = Field(description="Baseline attempts whose stored output the candidate's judge scored.")
    kept: int = Field(
        default=0,
        description="Baseline attempts kept as they were: errored (nothing to judge), or outside a smoke gate's cases.",
    )
    agreement: Agreement = Field(
        description="The old judge (a) against the new (b) on the same outputs; a disagreement's id is the case "
        "id (with #attempt when a case has several)."
    )
    spend: Spend = Field(description="What the re-judging paid (judge calls only; cache hits paid nothing).")


def unjudgeable(results: Results) -> str | None:
    """Why ``results`` cannot be re-scored by a judge: imported (scored by another harness), or
    an answered attempt whose output is not stored whole; None when every one can be."""
    run = results.run
    if run.source:
        return f"it was imported from {run.source.get('format', 'another harness')}, whose scores are not this suite's"
    missing = cut = 0
    for case in results.cases:
        for a in case.attempts:
            if rejudgeable(a):
                missing += a.output is None and a.output_sha256 is None
                cut += a.output_truncated
    if missing or cut:
        parts = [f"{n:,} without a stored output" for n in (missing,) if n]
        parts += [f"{n:,} whose output was cut when stored" for n in (cut,) if n]
        return f"its outputs are not stored whole ({' and '.join(parts)}), and a judge must read what was answered"
    return None


def rejudgeable(attempt: Attempt) -> bool:
    """An attempt the target answered and the scorers scored (an errored one is kept as it is)."""
    return attempt.error is None


def judge_verdict(attempt: Attempt, pass_threshold: float = 0.5) -> bool | None:
    """The judge's own verdict on an attempt (``metadata.judge``, as the judge scorer records it),
    never the attempt's ``passed``, which the other scorers share."""
    found = attempt.metadata.get(JUDGE)
    if not isinstance(found, dict):
        return None
    word = found.get("verdict")
    if isinstance(word, str) and word in _WORDS:
        return _WORDS[word]
    score = found.get("score")
    if isinstance(score, int | float) and not isinstance(score, bool):
        return score >= pass_threshold
    return None


def threshold(run: RunInfo) -> float:
    """The judge's ``pass_threshold`` in a run's recorded definitions (its default when unset)."""
    for spec in (run.definitions or {}).get("scorers", []):
        if spec.get("name") == JUDGE and spec.get("python") is None:
            value = (spec.get("params") or {}).get("pass_threshold")
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
    return 0.5


def judges_agreement(before: Results, after: Results) -> Agreement:
    """The two judges' verdicts on the same stored outputs: ``before`` as stored, ``after`` the
    same run re-scored (same cases, same attempts, in the same order; an attempt not re-judged is
    the same object in both and left out)."""
    old_t, new_t = threshold(before.run), threshold(after.run)

    def pairs() -> Iterable[tuple[str, bool, bool]]:
        for old_case, new_case in zip(before.cases, after.cases, strict=True):
            several = len(old_case.attempts) > 1
            for k, (a, b) in enumerate(zip(old_case.attempts, new_case.attempts, strict=True)):
                va, vb = judge_verdict(a, old_t), judge_verdict(b, new_t)
                if b is not a and va is not None and vb is not None:  # ``a`` itself: kept, not re-judged
                    yield (f"{old_case.id}#{k + 1}" if several else old_case.id), va, vb

    return agreement(pairs())


def agreement_text(a: Agreement, who: str = "the two judges") -> str:
    """``the two judges agreed on 18 of 20 (90%, κ 0.78)``: the report's headline and ``evalgate
    rejudge`` say it alike."""
    if a.n == 0 or a.share is None:
        return "no output had a verdict from both judges"
    kappa = "κ undefined: one verdict throughout" if a.kappa is None else f"κ {a.kappa:.2f}"
    return f"{who} agreed on {a.agreed:,} of {a.n:,} ({a.share:.0%}, {kappa})"

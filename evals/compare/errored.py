"""A candidate whose attempts ended in errors (docs/spec.md#attempt-errors, docs/spec.md#special-verdicts).

Infra errors are missing answers: above ``gate.max_error_rate`` the candidate is ``incomplete``
(``evals.compare.analysis``). Target, scorer and timeout errors are wrong answers and, against a
baseline, fail through the pass rate. Two cases need more than that, since a pass rate cannot say
them:

- every attempt errored: the run measured nothing. Against a baseline whose pass rate was low it
  could even pass; with no baseline it would be offered as the first one (which a reset refuses).
  It is ``fail`` (exit 1: the candidate fails, the infrastructure did not), whatever the baseline.
- no baseline, and errors above ``max_error_rate``: the run would become the reference every later
  gate is held to, errors included. It is ``fail`` too; a reset still blesses it on purpose.
"""

from __future__ import annotations

from evals.common.escape import log_value
from evals.compare.lazyload import LazyResults
from evals.compare.model import RunSummary
from evals.results.model import Results


def first_error(candidate: Results | LazyResults) -> str | None:
    """The first error of the run, with its case, as a reader can look it up (`evalgate trace`)."""
    for case in candidate.cases:
        for attempt in case.attempts:
            if attempt.error is not None:
                message = log_value(attempt.error.message or attempt.error.kind, limit=200)
                return f"case {case.id}: {message}"
    return None


def error_counts(summary: RunSummary) -> str:
    """``target 60, scorer 2``: the errors by kind, most common first."""
    kinds = sorted(summary.error_counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{kind} {n}" for kind, n in kinds)


def errors_sentence(candidate: Results | LazyResults, summary: RunSummary) -> str:
    """``60 of 60 attempts ended in an error (target 60; the first, case q-1: KeyError: 'X')``."""
    errors = sum(summary.error_counts.values())
    first = first_error(candidate)
    return (
        f"{errors} of {summary.attempts} attempts ended in an error ({error_counts(summary)}"
        + (f"; the first, {first}" if first else "")
        + ")"
    )


def errored_reason(
    candidate: Results | LazyResults,
    summary: RunSummary,
    *,
    max_error_rate: float,
    first_run: bool,
    reset_command: str | None = None,
) -> str | None:
    """Why the candidate's errors make it ``fail`` (see the module's docstring), else None."""
    errors = sum(summary.error_counts.values())
    if not summary.attempts or not errors:
        return None
    if errors == summary.attempts:
        return (
            f"the candidate measured nothing: {errors_sentence(candidate, summary)}; fix the target (one case "
            "shows the error: `evalgate run --limit 1`) and gate again"
        )
    if first_run and summary.error_rate > max_error_rate:
        return (
            f"{summary.error_rate:.1%} of the candidate's attempts ended in an error, above gate.max_error_rate "
            f"{max_error_rate:.1%}: {errors_sentence(candidate, summary)}; as the first baseline every later gate "
            "would be held to these errors: fix the target and gate again (errors that are the target's real "
            "behaviour: bless the run on purpose with "
            f"`{reset_command or 'evalgate reset --reason ...'}`, or raise gate.max_error_rate)"
        )
    return None


def errors_warning(candidate: Results | LazyResults, summary: RunSummary, *, max_error_rate: float) -> str | None:
    """Against a baseline, errors above ``max_error_rate`` count as wrong answers; said in words,
    so a reader of a fallen pass rate learns it is crashes, not answers."""
    if summary.attempts and summary.error_rate > max_error_rate:
        return (
            f"{errors_sentence(candidate, summary)}: {summary.error_rate:.1%}, above gate.max_error_rate "
            f"{max_error_rate:.1%}; target, scorer and timeout errors count as wrong answers"
        )
    return None

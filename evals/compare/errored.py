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

import re

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


# How the runner words a scorer's crash (evals.run.scorers.base): the scorer's name leads.
_SCORER_NAMED = re.compile(r"^scorer '([^']+)'")


def what_to_fix(candidate: Results | LazyResults, summary: RunSummary) -> str:
    """What the errors blame, as the fix: a scorer that raised is the scorer's fault, not the
    target's (its answers may be right), a timeout asks for speed or a longer ``timeout_s``."""
    kinds = {kind for kind, n in summary.error_counts.items() if n}
    fixes = []
    if "target" in kinds:
        fixes.append("fix the target")
    if "timeout" in kinds:
        fixes.append("make the target answer within timeout_s (or raise it)")
    if "scorer" in kinds:
        names = _scorer_names(candidate)
        which = " and ".join(f"the scorer {name!r}" for name in names) if names else "the scorer"
        fixes.append(f"fix {which} (it raised on the target's answers, which may be right)")
    if not fixes:  # only infra errors: no answer came back
        fixes.append("fix the endpoint or its rate limits")
    return "; ".join(fixes)


def _scorer_names(candidate: Results | LazyResults, most: int = 3) -> list[str]:
    names: list[str] = []
    for case in candidate.cases:
        for attempt in case.attempts:
            if attempt.error is not None and attempt.error.kind == "scorer":
                match = _SCORER_NAMED.match(attempt.error.message)
                if match and match[1] not in names:
                    names.append(match[1])
                    if len(names) == most:
                        return names
    return names


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
            f"the candidate measured nothing: {errors_sentence(candidate, summary)}; "
            f"{what_to_fix(candidate, summary)}, then gate again (one case shows the error: `evalgate run --limit 1`)"
        )
    if first_run and summary.error_rate > max_error_rate:
        return (
            f"{summary.error_rate:.1%} of the candidate's attempts ended in an error, above gate.max_error_rate "
            f"{max_error_rate:.1%}: {errors_sentence(candidate, summary)}; as the first baseline every later gate "
            f"would be held to these errors: {what_to_fix(candidate, summary)}, then gate again (errors that are the "
            "target's real behaviour: bless the run on purpose with "
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

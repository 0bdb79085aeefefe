"""Which verdict a comparison gets when more than one applies (docs/spec.md#special-verdicts): the
special verdicts as an ordered list of rules, then the statistics, then the absolute floors.

Each rule reads the :class:`Facts` of a comparison and returns ``(verdict, reason)`` when it
applies, else None; the first that applies decides (:data:`LADDER`, highest precedence first):

0. ``fail`` — fail fast stopped the run on a blocking unit's certain regression.
1. ``incomplete`` — a limit stopped the run; the run is partial; its cases hold no attempt; too
   many infra errors. Nothing else can be read from a run that did not finish.
2. ``incompatible`` — the baseline cannot be compared with (another suite, other definitions, too
   few shared cases): a reset is what to do, not a fix of the candidate's errors.
3. ``fail`` — errors a pass rate cannot say (every attempt errored, or too many on a first run).
4. ``no-baseline`` — nothing to compare with.

When none applies the statistics decide (``decide.gate_verdict``: fail, inconclusive or pass), and
a breached absolute floor then turns any verdict but ``incomplete`` and ``incompatible`` into
``fail`` (:func:`with_breached_floors`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evals.common.errors import EXIT_FAIL, EXIT_INFRA, EXIT_PASS
from evals.compare.compatibility import first_baseline_hint
from evals.compare.failfast import stopped_reason
from evals.compare.floors import floor_sentence
from evals.compare.model import FloorResult, RunSummary, Verdict
from evals.compare.spending import limit_reason

Said = tuple[Verdict, str]


@dataclass(frozen=True)
class Facts:
    """What the ladder's rules read about one comparison."""

    candidate: RunSummary
    cases: int  # the candidate's cases in its file
    max_error_rate: float
    has_baseline: bool
    incompatible: str | None  # why the baseline cannot be compared with
    errored: str | None  # errors a pass rate cannot say (evals.compare.errored)
    on_missing: str
    reset_command: str | None
    resume_command: str | None = None
    gate_command: str | None = None


def stopped_by_fail_fast(f: Facts) -> Said | None:
    """A blocking unit's regression was certain before the run ended (docs/spec.md#fail-fast):
    a fail, though the run is partial."""
    c = f.candidate
    if c.fail_fast is None:
        return None
    return "fail", stopped_reason(c.fail_fast, c.completed_cases, c.total_cases, f.resume_command)


def stopped_by_a_limit(f: Facts) -> Said | None:
    c = f.candidate
    if not c.complete and c.limit is not None:
        return "incomplete", limit_reason(c.limit, c, f.resume_command, f.gate_command)
    return None


def partial_run(f: Facts) -> Said | None:
    c = f.candidate
    if c.complete:
        return None
    return "incomplete", (
        f"candidate run is partial: status {c.status}, {c.completed_cases}/{c.total_cases} cases completed"
        + (f" ({c.message})" if c.message else "")
    )


def nothing_attempted(f: Facts) -> Said | None:
    c = f.candidate
    if not (f.cases and c.attempts == 0):
        return None
    return "incomplete", (
        f"the candidate's {f.cases} cases hold no attempt (its header says {c.status}, "
        f"{c.completed_cases}/{c.total_cases} completed): nothing was measured; "
        "run the suite again, or re-import the harness's results"
    )


def too_many_infra_errors(f: Facts) -> Said | None:
    c = f.candidate
    if c.infra_error_rate <= f.max_error_rate:
        return None
    return "incomplete", (
        f"candidate infra error rate {c.infra_error_rate:.1%} is above max_error_rate "
        f"{f.max_error_rate:.1%}: {c.infra_errors} of {c.attempts} attempts got no "
        "answer (connection, 429 or 5xx after retries) — fix the endpoint or its rate limits and re-run"
    )


def incompatible_baseline(f: Facts) -> Said | None:
    return ("incompatible", f.incompatible) if f.incompatible else None


def errors_not_measured(f: Facts) -> Said | None:
    return ("fail", f.errored) if f.errored else None


def no_baseline(f: Facts) -> Said | None:
    if f.has_baseline:
        return None
    return "no-baseline", (
        f"no baseline to compare with (first run?); on_missing is {f.on_missing}"
        + (f": {first_baseline_hint(f.reset_command)}" if f.on_missing != "seed" else "")
        + "; `evalgate plan` shows which drops and tolerances this suite can certify, per slice"
    )


LADDER: tuple[Callable[[Facts], Said | None], ...] = (
    stopped_by_fail_fast,
    stopped_by_a_limit,
    partial_run,
    nothing_attempted,
    too_many_infra_errors,
    incompatible_baseline,
    errors_not_measured,
    no_baseline,
)


def special_verdict(facts: Facts) -> Said | None:
    """The first rule of :data:`LADDER` that applies, or None: the statistics decide."""
    return next((said for rule in LADDER if (said := rule(facts)) is not None), None)


def with_breached_floors(verdict: Verdict, reason: str, breached: list[FloorResult]) -> Said:
    """A breached floor fails the gate beside the relative test, with or without a baseline; a
    partial or incompatible candidate keeps that verdict (it says more about what to do)."""
    if not breached or verdict in ("incomplete", "incompatible"):
        return verdict, reason
    shown = "; ".join(floor_sentence(f) for f in breached[:3])
    more = f"; and {len(breached) - 3} more (comparison.json)" if len(breached) > 3 else ""
    what = f"absolute floor breached: {shown}{more}"
    return "fail", f"{reason}; {what}" if verdict == "fail" and reason else what


def exit_code_for(verdict: Verdict, policy: str, on_missing: str) -> int:
    """The exit code of a verdict (docs/spec.md#exit-codes): ``policy`` is gate.inconclusive,
    ``on_missing`` baseline.on_missing."""
    if verdict == "pass":
        return EXIT_PASS
    if verdict == "inconclusive":
        return EXIT_FAIL if policy == "fail" else EXIT_PASS
    if verdict == "no-baseline":
        return EXIT_FAIL if on_missing == "fail" else EXIT_PASS
    if verdict == "incomplete":
        return EXIT_INFRA
    return EXIT_FAIL

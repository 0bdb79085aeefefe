"""What a results file says on its own, without a baseline (docs/spec.md#run-summary): pass rate with its CI
overall and per slice, errors by kind (with their most common messages), tokens, latency p50/p95
and cost. ``evalgate run`` ends
with it and ``evalgate show FILE`` prints it for any results file (imported ones included).

Per-case values follow the comparison's rules (evals/compare/metrics.py): attempts that ended in an infra
error are left out, any other error is a wrong answer, a case's value is the mean of its attempts.
Pure Python on purpose: ``evalgate run`` prints this and its start-up must not pay for numpy."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from pydantic import BaseModel, Field

from evals.results.model import Attempt, AttemptError, CaseResult, FailFastStop, ResultsView, RunInfo
from evals.results.spend import JudgeUsage, LimitStop, Spend, cost_text, spend_of, tokens_text

Z_95 = 1.959963984540054
# Error messages shown per kind, and how much of each: enough to tell what broke at a glance; the
# results file keeps every message in full.
MESSAGES_PER_KIND = 3
MESSAGE_CHARS = 160
CASE_ID = "<case id>"  # a message's own case id while messages are grouped
OTHER_CASES = 2  # the cases named after a grouped message's first
FAILED_IDS = 3  # failed cases named per unit in the summary: enough to start `evalgate trace` on


class UnitSummary(BaseModel):
    unit: str = Field(description='"overall" or "key=value"')
    cases: int
    scored: int = Field(description="cases with a pass/fail value (not only infra errors)")
    pass_rate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    score: float | None = None
    errored: int = Field(0, description="cases whose every attempt ended in an infra error")
    failed: int = Field(0, description="cases with a pass value below 1 (an attempt that is no infra error failed)")
    failed_ids: list[str] = Field(default_factory=list, description=f"the first {FAILED_IDS} of them, in file order")


class ErrorMessage(BaseModel):
    kind: str
    message: str = Field(description=f"on one line, clipped to {MESSAGE_CHARS} characters, secrets masked")
    count: int = Field(description="attempts that ended with this message")


class RunStatus(BaseModel):
    """Where a run stands: how both summaries of a run begin, this module's (``evalgate run`` and
    ``show``) and the comparison's (``evals.compare.model.RunSummary``)."""

    suite: str
    status: str
    complete: bool
    total_cases: int
    completed_cases: int


class RunFields(TypedDict):
    """The keyword arguments :func:`run_fields` gives both summaries."""

    suite: str
    status: str
    complete: bool
    total_cases: int
    completed_cases: int
    subset: str | None
    shard: str | None
    message: str | None
    limit: LimitStop | None
    fail_fast: FailFastStop | None


def run_fields(run: RunInfo) -> RunFields:
    """What both summaries take from the run record as it is: :class:`RunStatus` and the subset,
    shard, message and limit that stopped it."""
    return {
        "suite": run.suite,
        "status": run.status,
        "complete": run.is_complete,
        "total_cases": run.total_cases,
        "completed_cases": run.completed_cases,
        "subset": run.subset,
        "shard": run.shard,
        "message": run.message,
        "limit": run.limit,
        "fail_fast": run.fail_fast,
    }


class ResultsSummary(RunStatus):
    subset: str | None = None
    shard: str | None = None
    message: str | None = None
    source: str | None = Field(None, description="the importer's format, for imported files")
    units: list[UnitSummary]
    attempts: int
    errors_by_kind: dict[str, int] = Field(default_factory=dict, description="attempts per error kind")
    infra_causes: dict[str, int] = Field(default_factory=dict, description="infra errors per cause (dns, timeout, ...)")
    error_messages: list[ErrorMessage] = Field(
        default_factory=list, description=f"the {MESSAGES_PER_KIND} most common messages of each error kind"
    )
    distinct_error_messages: dict[str, int] = Field(default_factory=dict, description="distinct messages per kind")
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    cost_usd: float | None = None
    spend: Spend = Field(
        default_factory=Spend,
        description="What the run paid: tokens, cost (unknown when no attempt reports it, never 0), cache "
        "hits; evals/results/spend.py",
    )
    limit: LimitStop | None = Field(default=None, description="The limits: key that stopped the run, if one did.")
    fail_fast: FailFastStop | None = Field(
        default=None, description="gate.fail_fast stopped the run: the unit that regressed and the look, if it did."
    )
    cache_hits: int = Field(0, description="attempts whose answer came from the response cache")
    judge_cache_hits: int = Field(0, description="attempts whose judge verdict came from the response cache")
    cost_usd_paid: float | None = Field(
        None,
        description="cost of the attempts not answered from the cache: what this run paid (cost_usd counts every "
        "attempt at its first run's cost, so runs compare like with like)",
    )


# The attempt metadata the summary reads (the judge's cache hit here, the batch tier and cached
# tokens in spend_of): all a SummaryAttempt keeps of it.
SUMMARY_METADATA = ("judge", "tier", "tokens_cache_read")


class SummaryAttempt:
    """What the summary reads of an ``Attempt``, under the same names: what ``evalgate run`` keeps
    of each attempt as its case finishes, so that its summary needs no case read back from the file
    after the run (~0.3 s at 10,000 cases, all of it after the last answer; and the models' memory).
    A few µs a case, on the event loop."""

    __slots__ = (
        "cached",
        "cost_usd",
        "error",
        "judge_usage",
        "latency_ms",
        "metadata",
        "passed",
        "score",
        "tokens_in",
        "tokens_out",
    )  # fmt: skip

    def __init__(self, attempt: Attempt):
        self.passed = attempt.passed
        self.score = attempt.score
        self.error: AttemptError | None = attempt.error
        self.cached = attempt.cached
        self.metadata = {k: attempt.metadata[k] for k in SUMMARY_METADATA if k in attempt.metadata}
        self.latency_ms = attempt.latency_ms
        self.tokens_in = attempt.tokens_in
        self.tokens_out = attempt.tokens_out
        self.cost_usd = attempt.cost_usd
        self.judge_usage: JudgeUsage | None = attempt.judge_usage

    @property
    def is_infra_error(self) -> bool:
        return self.error is not None and self.error.kind == "infra"


class SummaryCase:
    """What the summary reads of a ``CaseResult`` (see ``SummaryAttempt``)."""

    __slots__ = ("attempts", "id", "slices")

    def __init__(self, case: CaseResult):
        self.id = case.id
        self.slices = case.slices
        self.attempts = [SummaryAttempt(a) for a in case.attempts]


class SummaryView:
    """A run as the summary reads it: its header and its cases' ``SummaryCase``."""

    def __init__(self, run: RunInfo, cases: list[SummaryCase]):
        self.run = run
        self.cases = cases


def wilson(successes: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a proportion (per-case means may be fractional with attempts > 1)."""
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def case_values(case: CaseResult | SummaryCase) -> tuple[float | None, float | None, bool]:
    """(pass value, score, errored) of one case."""
    valid = [a for a in case.attempts if not a.is_infra_error]
    if not valid:
        return None, None, bool(case.attempts)
    passed = [1.0 if a.passed else 0.0 for a in valid if a.passed is not None or a.error is not None]
    scores = [a.score or 0.0 for a in valid if a.score is not None or a.error is not None]
    return _mean(passed), _mean(scores), False


def _unit(name: str, rows: list[tuple[float | None, float | None, bool]], ids: Sequence[str]) -> UnitSummary:
    passed = [p for p, _s, _e in rows if p is not None]
    failed = [i for i, (p, _s, _e) in zip(ids, rows, strict=True) if p is not None and p < 1.0]
    low, high = wilson(sum(passed), len(passed)) if passed else (None, None)
    return UnitSummary(
        unit=name,
        cases=len(rows),
        scored=len(passed),
        pass_rate=_mean(passed),
        ci_low=low,
        ci_high=high,
        score=_mean([s for _p, s, _e in rows if s is not None]),
        errored=sum(1 for _p, _s, e in rows if e),
        failed=len(failed),
        failed_ids=failed[:FAILED_IDS],
    )


def summarize(results: ResultsView | SummaryView, slice_keys: Iterable[str] | None = None) -> ResultsSummary:
    """The summary of ``results``, per value of each of ``slice_keys`` (default: every key a case carries)."""
    from evals.results.infra import infra_cause

    run = results.run
    cases: Sequence[CaseResult | SummaryCase] = results.cases
    # Sorted whatever the caller's order: `run` (the config's keys) and `show` print the same table.
    keys = sorted({k for c in cases for k in c.slices} if slice_keys is None else set(slice_keys))
    values = [case_values(c) for c in cases]
    units = [_unit("overall", values, [c.id for c in cases])]
    for key in keys:
        groups: dict[str, list[tuple[float | None, float | None, bool]]] = {}
        group_ids: dict[str, list[str]] = {}
        for case, row in zip(cases, values, strict=True):
            if key in case.slices:
                groups.setdefault(case.slices[key], []).append(row)
                group_ids.setdefault(case.slices[key], []).append(case.id)
        units.extend(_unit(f"{key}={value}", groups[value], group_ids[value]) for value in sorted(groups))
    kinds: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    messages: Counter[tuple[str, str]] = Counter()
    message_cases: dict[tuple[str, str], list[str]] = {}  # the distinct cases of each, in order
    latencies: list[float] = []
    tokens_in = tokens_out = 0
    has_in = has_out = False
    costs: list[float] = []
    paid: list[float] = []
    attempts = hits = judge_hits = 0
    for case in cases:
        case_latency = []
        for a in case.attempts:
            attempts += 1
            hits += a.cached
            judge = a.metadata.get("judge")
            judge_hits += isinstance(judge, dict) and judge.get("cached") is True
            if a.error is not None:
                kinds[a.error.kind] += 1
                message = (a.error.kind, without_case_id(a.error.message, case.id))
                messages[message] += 1
                seen = message_cases.setdefault(message, [])
                if not seen or seen[-1] != case.id:  # a case's attempts are adjacent
                    seen.append(case.id)
                if a.error.kind == "infra":
                    causes[infra_cause(a.error.message) or "other"] += 1
                continue
            if a.latency_ms is not None:
                case_latency.append(a.latency_ms)
            # A target may report one side only: the other is unknown, not zero.
            has_in, has_out = has_in or a.tokens_in is not None, has_out or a.tokens_out is not None
            tokens_in += a.tokens_in or 0
            tokens_out += a.tokens_out or 0
            if a.cost_usd is not None:
                costs.append(a.cost_usd)
                if not a.cached:
                    paid.append(a.cost_usd)
        if case_latency:  # one value per case, as the comparison's latency metrics
            latencies.append(sum(case_latency) / len(case_latency))
    spend = spend_of(a for case in cases for a in case.attempts)
    paid_usd = (sum(paid) if paid else 0.0) if costs else None
    if spend.judge_cost_usd is not None:  # the judge's calls were paid this run as well
        paid_usd = (paid_usd or 0.0) + spend.judge_cost_usd
    return ResultsSummary(
        **run_fields(run),
        source=run.source.get("format"),
        units=units,
        attempts=attempts,
        errors_by_kind=dict(sorted(kinds.items())),
        **_common_messages(messages, message_cases),
        infra_causes=dict(sorted(causes.items(), key=lambda item: (-item[1], item[0]))),
        tokens_in=tokens_in if has_in else None,
        tokens_out=tokens_out if has_out else None,
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        cost_usd=sum(costs) if costs else None,
        spend=spend,
        cache_hits=hits,
        judge_cache_hits=judge_hits,
        cost_usd_paid=paid_usd,
    )


def _common_messages(
    raw: Counter[tuple[str, str]], cases: Mapping[tuple[str, str], list[str]]
) -> dict[str, Any]:  # the keyword arguments of ResultsSummary
    """``error_messages`` and ``distinct_error_messages`` from the count of each (kind, message)
    and the cases each came from."""
    from evals.results.masking import mask_text

    lines: Counter[tuple[str, str]] = Counter()
    ids: dict[tuple[str, str], list[str]] = {}
    for (kind, message), count in raw.items():  # distinct messages only: a run repeats a few
        key = (kind, " ".join(message.split()))
        lines[key] += count
        ids.setdefault(key, []).extend(cases.get((kind, message), []))
    distinct = Counter(kind for kind, _line in lines)
    ranked = sorted(lines.items(), key=lambda item: (item[0][0], -item[1], item[0][1]))
    shown: list[ErrorMessage] = []
    for (kind, line), count in ranked:
        if sum(1 for m in shown if m.kind == kind) < MESSAGES_PER_KIND:
            # Masked again when shown: a results file evalgate did not write may hold a secret.
            text = mask_text(_with_case_ids(line, ids.get((kind, line), [])))
            shown.append(ErrorMessage(kind=kind, message=text, count=count))
    return {"error_messages": shown, "distinct_error_messages": dict(sorted(distinct.items()))}


def without_case_id(message: str, case_id: str) -> str:
    """``message`` with its own case's quoted id replaced, so one cause (a dead judge: "gave no
    verdict for case 'q-017' after 3 calls") is one line with its count, not one line per case."""
    for quoted in (repr(case_id), f'"{case_id}"'):
        message = message.replace(quoted, CASE_ID)
    return message


def _with_case_ids(line: str, ids: Sequence[str]) -> str:
    """The grouped message with its cases put back: the "<case id>" placeholder told the reader
    nothing, and results.json is where they would have had to look the ids up. The first case
    fills it; the others follow the clipped message, a few by name."""
    if CASE_ID not in line or not ids:
        return one_line(line)
    text = one_line(line.replace(CASE_ID, repr(ids[0])))
    others = list(dict.fromkeys(i for i in ids[1:] if i != ids[0]))
    if others:
        named = ", ".join(repr(i) for i in others[:OTHER_CASES])
        more = f" and {len(others) - OTHER_CASES:,} more" if len(others) > OTHER_CASES else ""
        text += f" (also case{'s' if len(others) > 1 else ''} {named}{more})"
    return text


def one_line(message: str, limit: int = MESSAGE_CHARS) -> str:
    """``message`` with its line breaks and runs of blanks as single spaces, clipped to ``limit``."""
    flat = " ".join(message.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# ------------------------------------------------------------------------------------- text


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    # first column left-aligned (unit names), numbers right-aligned
    return [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]


def headline(summary: ResultsSummary) -> str:
    part = f" ({summary.subset or summary.shard})" if summary.subset or summary.shard else ""
    state = "" if summary.complete else " — PARTIAL" + (f" ({summary.status})" if summary.status != "success" else "")
    origin = f", imported from {summary.source}" if summary.source and summary.source != "evalgate" else ""
    return f"{summary.suite}{part}: {summary.completed_cases}/{summary.total_cases} cases complete{origin}{state}"


def failed_lines(summary: ResultsSummary) -> list[str]:
    """The failed cases' first ids per slice (overall when there are no slices): only the HTML page
    named them, and a terminal user needs an id for `evalgate trace` or `--filter`."""
    sliced = [u for u in summary.units if u.unit != "overall"]
    units = [u for u in (sliced or summary.units) if u.failed]
    if not units:
        return []
    width = max(len(u.unit) for u in units)
    lines = []
    for n, u in enumerate(units):
        more = f", … and {u.failed - len(u.failed_ids):,} more" if u.failed > len(u.failed_ids) else ""
        label = "failed:  " if n == 0 else " " * 9
        lines.append(
            f"{label}{u.unit:<{width}}  {u.failed:>{len(str(max(x.failed for x in units)))}}: "
            f"{', '.join(u.failed_ids)}{more}"
        )
    return lines


def error_lines(summary: ResultsSummary) -> list[str]:
    """The errors by kind, then each kind's most common messages with their counts."""
    if not summary.errors_by_kind:
        return [f"errors:  none in {summary.attempts} attempts"]
    kinds = []
    for kind, count in summary.errors_by_kind.items():
        detail = ""
        if kind == "infra" and summary.infra_causes:
            detail = " (" + ", ".join(f"{c} {n}" for c, n in summary.infra_causes.items()) + ")"
        kinds.append(f"{kind} {count}{detail}")
    lines = [f"errors:  {', '.join(kinds)} of {summary.attempts} attempts"]
    width = max((len(str(m.count)) for m in summary.error_messages), default=0)
    indent = " " * 9  # under the first kind
    for kind in summary.errors_by_kind:
        listed = [m for m in summary.error_messages if m.kind == kind]
        lines += [f"{indent}{m.count:>{width}} × {kind}: {m.message}" for m in listed]
        more = summary.distinct_error_messages.get(kind, 0) - len(listed)
        if more > 0:
            others = f"{more} other message{'s' if more > 1 else ''}"
            lines.append(f"{indent}{'':>{width}}   {kind}: {others} (all in the results file)")
    return lines


def spend_lines(summary: ResultsSummary) -> list[str]:
    """Tokens, cost and cache hits, each on its line: what the run paid, stated even when unknown
    (cache hits paid nothing: they are counted on their own line, not in tokens or cost)."""
    spend = summary.spend
    cache = "cache:   none"
    if summary.cache_hits or summary.judge_cache_hits:
        cache = cache_line(summary) + ("; cached answers are not in tokens or cost above" if summary.cache_hits else "")
    lines = [f"tokens:  {tokens_text(spend)}", f"cost:    {cost_text(spend)}", cache]
    if spend.batched:  # docs/spec.md#batch-pricing
        lines.append(f"batch:   {spend.batched:,} of {spend.attempts:,} attempts answered by the provider's batch API")
    return lines


def cache_line(summary: ResultsSummary) -> str:
    """How much of the run the response cache answered, and what was paid."""
    judge = f", judge verdicts {summary.judge_cache_hits:,}" if summary.judge_cache_hits else ""
    paid = ""
    if summary.cost_usd_paid is not None:
        paid = f"; paid this run ${summary.cost_usd_paid:,.6f}".rstrip("0").rstrip(".")
    return f"cache:   {summary.cache_hits:,} of {summary.attempts:,} attempts from the response cache{judge}{paid}"


def render_text(summary: ResultsSummary) -> str:
    """The summary as an aligned plain-text table (a terminal, a CI log)."""
    show_score = any(u.score is not None for u in summary.units) and not any(
        u.pass_rate is not None for u in summary.units
    )
    show_errored = any(u.errored for u in summary.units)
    header = ["unit", "cases", "pass rate", "95% CI"] + (["score"] if show_score else [])
    rows = [header + (["infra-errored"] if show_errored else [])]
    for u in summary.units:
        ci = "—" if u.ci_low is None or u.ci_high is None else f"{u.ci_low:.1%} – {u.ci_high:.1%}"
        row = [u.unit, str(u.cases), _rate(u.pass_rate), ci]
        if show_score:
            row.append("—" if u.score is None else f"{u.score:.3f}")
        if show_errored:
            row.append(str(u.errored) if u.errored else "")
        rows.append(row)
    lines = [headline(summary), "", *_table(rows), "", *failed_lines(summary), *error_lines(summary)]
    if summary.latency_p50_ms is not None:
        lines.append(f"latency: p50 {summary.latency_p50_ms:,.0f} ms, p95 {summary.latency_p95_ms:,.0f} ms")
    lines += spend_lines(summary)
    if summary.message:
        lines.append(f"note:    {summary.message}")
    return "\n".join(lines) + "\n"

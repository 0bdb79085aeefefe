"""What a run spent (docs/spec.md#spend-reporting): tokens in and out, cost and cache hits, counted over its attempts,
and the words every report uses for them; and the ``limits:`` stop a results file records.

Spend is what the run *paid*: an attempt served from the response cache (``cached: true``) cost
nothing this time, so it is counted as a cache hit and left out of tokens and cost. An attempt
that ended in an infra error got no answer (connection, 429, 5xx: not billed) and reports nothing.
Every other attempt either reports its cost or does not: cost that no attempt reports is
*unknown*, never $0, and cost that only some report is a lower bound ("at least $X (N of M
attempts report cost)"). Tokens follow the same rule.

A ``judge`` scorer's calls are paid too, whether or not the target's answer came from the cache:
an attempt's ``judge_usage`` (the calls a judge was paid for while scoring it; none when its
verdict came from the cache) adds to its tokens and cost here, and its cost is fully known only
when both parts are. The judge's share is also kept apart (``judge_*``), for the reports to name.

Pure Python, no import of the rest of ``evals.results``: ``model`` imports :class:`LimitStop` and
:class:`JudgeUsage` from here, and ``evalgate run`` prints the spend without paying for numpy."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

LimitName = Literal["max_cost_usd", "max_tokens", "max_duration_s"]


class JudgeUsage(BaseModel):
    """What a ``judge`` scorer's calls cost while scoring one attempt: every call the endpoint
    answered (a reply out of the asked format is billed too; a refused or failed call is not)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    calls: Annotated[int, Field(ge=1)] = Field(description="Calls the endpoint answered for this attempt.")
    tokens_in: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="Prompt tokens the endpoint reported; null when a call reported none."
    )
    tokens_out: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="Completion tokens the endpoint reported; null when a call reported none."
    )
    tokens_cache_read: Annotated[int, Field(ge=0)] | None = Field(
        default=None,
        description="Of tokens_in, those the provider read from its prompt cache (priced at the judge's "
        "price_cache_read_per_mtok); null when no call reported any.",
    )
    tokens_cache_write: Annotated[int, Field(ge=0)] | None = Field(
        default=None,
        description="Of tokens_in, those written to the provider's prompt cache (Anthropic's "
        "cache_creation_input_tokens); null when no call reported any.",
    )
    cost_usd: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="Tokens × the judge's price_in_per_mtok/price_out_per_mtok, cached tokens at its cache prices "
        "(USD); null without prices or usage.",
    )

    @property
    def tokens(self) -> int | None:
        if self.tokens_in is None and self.tokens_out is None:
            return None
        return (self.tokens_in or 0) + (self.tokens_out or 0)

    def plus(self, other: JudgeUsage) -> JudgeUsage:
        """Two judges' (or two calls') usage: a side one of them does not report is unknown."""

        def add(a: Any, b: Any) -> Any:
            return None if a is None or b is None else a + b

        def part(a: int | None, b: int | None) -> int | None:  # a part none reported is none, not unknown
            return None if a is None and b is None else (a or 0) + (b or 0)

        return JudgeUsage(
            calls=self.calls + other.calls,
            tokens_in=add(self.tokens_in, other.tokens_in),
            tokens_out=add(self.tokens_out, other.tokens_out),
            tokens_cache_read=part(self.tokens_cache_read, other.tokens_cache_read),
            tokens_cache_write=part(self.tokens_cache_write, other.tokens_cache_write),
            cost_usd=add(self.cost_usd, other.cost_usd),
        )


class Spend(BaseModel):
    """A run's spend over its attempts (or a comparison's side of it)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    attempts: Annotated[int, Field(ge=0)] = Field(default=0, description="Attempt records counted.")
    cached: Annotated[int, Field(ge=0)] = Field(
        default=0, description="Attempts answered from the response cache (cached: true): paid nothing this run."
    )
    answered: Annotated[int, Field(ge=0)] = Field(
        default=0, description="Attempts not from the cache and not an infra error: the ones that may have cost."
    )
    tokens_in: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="Input tokens of the answered attempts; null when none reports them."
    )
    tokens_out: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="Output tokens of the answered attempts; null when none reports them."
    )
    tokens_reported: Annotated[int, Field(ge=0)] = Field(
        default=0, description="Answered attempts that report tokens (in or out)."
    )
    cost_usd: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="Sum of the cost the answered attempts report (USD); null when none reports one: unknown, not 0.",
    )
    cost_reported: Annotated[int, Field(ge=0)] = Field(default=0, description="Answered attempts that report cost.")
    judged: Annotated[int, Field(ge=0)] = Field(
        default=0, description="Attempts whose judge was paid (calls answered, verdict not from the cache)."
    )
    batched: Annotated[int, Field(ge=0)] = Field(
        default=0,
        description="Answered attempts a provider's batch API answered (metadata.tier: batch), priced at the batch "
        "price (docs/spec.md#batch-pricing).",
    )
    judge_tokens: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="The judge's part of the tokens (in + out); null when no paid judge call reports any."
    )
    judge_cost_usd: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="The judge's part of the cost (USD); null when no paid judge call reports one."
    )
    tokens_cache_read: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="Of tokens_in, those a prompt cache served (target and judge); null: none reported."
    )
    judge_tokens_cache_read: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="The judge's part of tokens_cache_read; null when no paid judge call reports any."
    )

    @property
    def tokens(self) -> int | None:
        """In + out; None when no attempt reports either."""
        if self.tokens_in is None and self.tokens_out is None:
            return None
        return (self.tokens_in or 0) + (self.tokens_out or 0)

    @property
    def cost_known(self) -> Literal["all", "some", "none"]:
        """How much of the cost is known: every answered attempt reports it (or none was paid for),
        some do (the sum is a lower bound), or none does (unknown)."""
        if self.cost_reported == self.answered:
            return "all"
        return "some" if self.cost_reported else "none"

    def plus(self, other: Spend) -> Spend:
        def add(a: float | None, b: float | None) -> Any:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Spend(
            attempts=self.attempts + other.attempts,
            cached=self.cached + other.cached,
            answered=self.answered + other.answered,
            tokens_in=add(self.tokens_in, other.tokens_in),
            tokens_out=add(self.tokens_out, other.tokens_out),
            tokens_reported=self.tokens_reported + other.tokens_reported,
            cost_usd=add(self.cost_usd, other.cost_usd),
            cost_reported=self.cost_reported + other.cost_reported,
            judged=self.judged + other.judged,
            batched=self.batched + other.batched,
            judge_tokens=add(self.judge_tokens, other.judge_tokens),
            judge_cost_usd=add(self.judge_cost_usd, other.judge_cost_usd),
            tokens_cache_read=add(self.tokens_cache_read, other.tokens_cache_read),
            judge_tokens_cache_read=add(self.judge_tokens_cache_read, other.judge_tokens_cache_read),
        )


def attempt_spend(attempt: Any) -> Spend:
    """The spend of one attempt (an ``Attempt`` model)."""
    return spend_of((attempt,))


def spend_of(attempts: Iterable[Any]) -> Spend:
    """The spend of ``attempts`` (``Attempt`` models), summed (plain counters: a run summary reads
    every attempt of a big file through here). An attempt is *answered* when something in it was
    paid for: the target (not from the cache; not an infra error, unless it reports what it cost:
    the target answered and its judge could not be reached) or its judge; it reports its cost
    (tokens) when every paid part does."""
    n = cached = answered = tokens_reported = cost_reported = judged = batched = 0
    tokens_in = tokens_out = judge_tokens = cache_read = judge_cache_read = None
    cost = judge_cost = None
    for a in attempts:
        n += 1
        cached += a.cached
        # An infra error is no answer, unless the target answered and what failed was its judge:
        # what the attempt reports having cost was paid for either way.
        reported = a.cost_usd is not None or a.tokens_in is not None or a.tokens_out is not None
        target = not a.cached and (a.error is None or a.error.kind != "infra" or reported)
        judge = a.judge_usage
        if not target and judge is None:
            continue
        answered += 1
        batched += target and (a.metadata or {}).get("tier") == "batch"
        target_tokens = target and (a.tokens_in is not None or a.tokens_out is not None)
        if target and a.tokens_in is not None:
            tokens_in = (tokens_in or 0) + a.tokens_in
        if target and a.tokens_out is not None:
            tokens_out = (tokens_out or 0) + a.tokens_out
        if target and a.cost_usd is not None:
            cost = (cost or 0.0) + a.cost_usd
        if target and is_count(read := a.metadata.get("tokens_cache_read")):
            cache_read = (cache_read or 0) + read
        tokens_known = target_tokens or not target
        cost_known = a.cost_usd is not None or not target
        if judge is not None:
            judged += 1
            if judge.tokens_in is not None:
                tokens_in = (tokens_in or 0) + judge.tokens_in
            if judge.tokens_out is not None:
                tokens_out = (tokens_out or 0) + judge.tokens_out
            if judge.tokens is not None:
                judge_tokens = (judge_tokens or 0) + judge.tokens
            if judge.cost_usd is not None:
                cost = (cost or 0.0) + judge.cost_usd
                judge_cost = (judge_cost or 0.0) + judge.cost_usd
            if judge.tokens_cache_read is not None:
                cache_read = (cache_read or 0) + judge.tokens_cache_read
                judge_cache_read = (judge_cache_read or 0) + judge.tokens_cache_read
            tokens_known = tokens_known and judge.tokens is not None
            cost_known = cost_known and judge.cost_usd is not None
        tokens_reported += tokens_known
        cost_reported += cost_known
    return Spend(
        attempts=n,
        cached=cached,
        answered=answered,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_reported=tokens_reported,
        cost_usd=cost,
        cost_reported=cost_reported,
        judged=judged,
        batched=batched,
        judge_tokens=judge_tokens,
        judge_cost_usd=judge_cost,
        tokens_cache_read=cache_read,
        judge_tokens_cache_read=judge_cache_read,
    )


def is_count(value: Any) -> bool:
    """A token count, as a reply's usage or an attempt's metadata may hold one (both are free-form:
    an endpoint or a python target may put anything there)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class LimitStop(BaseModel):
    """Which of ``limits:`` stopped the run, and what it had spent then. A run stopped
    by a limit is partial (``status`` ``cancelled`` for cost and tokens, ``timeout`` for the
    duration) and ``--resume`` completes it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    limit: LimitName = Field(description="The key under limits: that stopped the run.")
    value: Annotated[float, Field(gt=0)] = Field(
        description="Its value for this run (USD, tokens or seconds): the configured one, or for one shard of N "
        "its 1/N share of cost and tokens."
    )
    spent: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="What that limit measures when the run ended, the attempts that finished after the stop "
        "included (USD, tokens in + out, or seconds of this invocation); null when the target reported none.",
    )
    unknown: bool = Field(
        default=False,
        description="The run stopped because an attempt reported no cost (max_cost_usd) or no tokens (max_tokens): "
        "a limit that cannot be measured cannot be enforced.",
    )
    unreported_by: Literal["target", "judge"] | None = Field(
        default=None,
        description="With unknown: which part of the attempt reported nothing, the target or its judge scorer.",
    )
    spend: Spend = Field(
        default_factory=Spend, description="The whole run's spend when it ended (cases kept by --resume included)."
    )


# ------------------------------------------------------------------------------------------- words


def usd(value: float) -> str:
    """Dollars with enough digits for a cheap run: $0.000123, $0.0123, $0.40, $1,234.50."""
    if value == 0:
        return "$0"
    if value >= 0.1:
        return f"${value:,.2f}"
    return f"${value:.3g}"


def cost_text(spend: Spend) -> str:
    """``$0.0123``; ``at least $0.01 (3 of 5 attempts report cost)``; ``unknown (no attempt
    reports cost)``; ``$0`` only when nothing was paid for (every attempt cached) or it is so."""
    known = spend.cost_known
    judge = ""
    if spend.judged:
        share = usd(spend.judge_cost_usd) if spend.judge_cost_usd is not None else "unknown"
        judge = f" (judge {share})" if known != "none" else ""
    if known == "all":
        return usd(spend.cost_usd or 0.0) + judge
    if known == "some":
        reported = f"{spend.cost_reported:,} of {spend.answered:,} attempts report cost"
        return f"at least {usd(spend.cost_usd or 0.0)}{judge} ({reported})"
    return "unknown (no attempt reports cost)"


def tokens_text(spend: Spend) -> str:
    """``1,234 in, 56 out`` (``–`` on a side no attempt reports), the judge's part and the input a
    prompt cache served after it (``; 800 in read from prompt caches (judge 200)``); ``at least …``
    when some answered attempts report none; ``unknown`` when none does."""
    if spend.tokens is None:
        return "unknown (no attempt reports tokens)" if spend.answered else "0"
    sides = ", ".join(
        f"{n:,} {side}" if n is not None else f"– {side}"
        for n, side in ((spend.tokens_in, "in"), (spend.tokens_out, "out"))
    )
    if spend.judged and spend.judge_tokens is not None:
        sides += f" (judge {spend.judge_tokens:,})"
    if spend.tokens_cache_read:  # of the input: what a provider's prompt cache served, priced apart
        judge = f" (judge {spend.judge_tokens_cache_read:,})" if spend.judge_tokens_cache_read else ""
        sides += f"; {spend.tokens_cache_read:,} in read from prompt caches{judge}"
    if spend.tokens_reported < spend.answered:
        return f"at least {sides} ({spend.tokens_reported:,} of {spend.answered:,} attempts report tokens)"
    return sides


def cache_text(spend: Spend) -> str:
    return f"{spend.cached:,} of {spend.attempts:,} attempts" if spend.cached else "none"


LIMIT_UNITS = {"max_cost_usd": "cost", "max_tokens": "tokens", "max_duration_s": "duration"}


def limit_amount(limit: LimitName, value: float | None) -> str:
    if value is None:
        return "unknown"
    if limit == "max_cost_usd":
        return usd(value)
    if limit == "max_tokens":
        return f"{value:,.0f} tokens"
    return f"{value:,.0f} s" if value >= 10 else f"{value:.2g} s"


def limit_sentence(stop: LimitStop) -> str:
    """``limits.max_cost_usd ($0.50) reached: $0.52 spent``, or why it could not be measured. A
    run stops short of a cost or token limit when its next case would pass it (the estimate the
    runner reserves for each attempt, docs/spec.md#limits): then it says so."""
    key = f"limits.{stop.limit} ({limit_amount(stop.limit, stop.value)})"
    if stop.unknown:
        what = "cost" if stop.limit == "max_cost_usd" else "tokens"
        who = "an attempt's judge" if stop.unreported_by == "judge" else "an attempt"
        return f"{key} cannot be enforced: {who} reported no {what}, so the run stopped"
    said = f"{key} reached: {limit_amount(stop.limit, stop.spent)} spent"
    short = stop.spent is not None and stop.spent < stop.value * (1 - 1e-9) and stop.limit != "max_duration_s"
    return f"{said} (the next case would pass it)" if short else said


def resume_hint(stop: LimitStop, rerun: str = "--resume") -> str:
    """What finishes a run a limit stopped, after "to finish it, ": a budget (cost, tokens) counts
    what the kept cases spent, so it must be raised; the duration is each invocation's own.
    ``rerun``: the command that resumes the run when the caller knows it (with its --config and
    --output), else the flag alone."""
    if stop.limit == "max_duration_s":
        return f"rerun with {rerun} (each invocation gets max_duration_s anew)"
    if stop.unknown and stop.unreported_by == "judge":
        return (
            "give the judge scorer its prices (price_in_per_mtok/price_out_per_mtok) and an endpoint that reports "
            f"usage, or limit tokens instead, then rerun with {rerun}"
            if stop.limit == "max_cost_usd"
            else f"use a judge endpoint that reports usage, or limit cost instead, then rerun with {rerun}"
        )
    if stop.unknown:
        return (
            "have the target report cost_usd (or set target.openai.price_in_per_mtok/price_out_per_mtok) or limit "
            f"tokens instead, then rerun with {rerun}"
            if stop.limit == "max_cost_usd"
            else f"have the target report tokens_in/tokens_out or limit cost instead, then rerun with {rerun}"
        )
    return (
        f"raise limits.{stop.limit}, then rerun with {rerun} (what the kept cases spent counts toward the limit: "
        "with the same limit the run stops again at once)"
    )

"""What ``limits:`` leave for more-evidence batches (docs/spec.md#limits, docs/spec.md#more-evidence).

``limits`` are hard limits of what one gate spends, and batches are spent in the same gate: the
candidate's run and every batch, both sides, a judge's calls included, count toward
``max_cost_usd`` and ``max_tokens``; the candidate run's wall clock and the batches' toward
``max_duration_s``. Each batch side is a child ``evalgate run`` that would otherwise get the whole
limit again from the config, so it runs with what is left (``--max-cost-usd`` ...). A batch that
the next one's estimate (its cases × what an attempt cost on each side so far) would take past a
limit is not started: the gate stays at its first look's verdict, and the report says which limit
ended the batches.

In the more-evidence workflow each side runs its batches in a job of its own and cannot see the
other's spend: each gets half of what the candidate's run left of ``max_cost_usd`` and
``max_tokens`` (``share=0.5``) and estimates its own side only; the gate then applies the whole
limits to what the two sides report."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from evals.results.model import Results
from evals.results.spend import LimitName, Spend, limit_amount, spend_of
from evals.suite.limits import LimitsSpec


def _attempts(results: Results | None) -> Iterable[Any]:
    return (a for c in (results.cases if results is not None else []) for a in c.attempts)


def _duration_s(results: Results) -> float:
    """The run's wall clock from its record (0 when it does not say)."""
    try:
        started = datetime.fromisoformat(str(results.run.started_at).replace("Z", "+00:00"))
        ended = datetime.fromisoformat(str(results.run.ended_at).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (ended - started).total_seconds())


def _per_attempt(spend: Spend) -> tuple[float | None, float | None]:
    """Cost and tokens of one paid attempt, on average (None where nothing was paid or reported)."""
    if not spend.answered:
        return None, None
    cost = spend.cost_usd / spend.answered if spend.cost_usd is not None else None
    tokens = spend.tokens / spend.answered if spend.tokens is not None else None
    return cost, tokens


class BatchBudget:
    """The gate's spend so far against ``limits``, and the caps a batch side runs with."""

    def __init__(self, limits: LimitsSpec, candidate: Results, baseline: Results, *, side: int | None = None) -> None:
        """``side``: 0 (candidate) or 1 (baseline) when this job runs that side's batches alone."""
        self.limits = limits
        self.run = spend_of(_attempts(candidate))
        self.spent = self.run
        self.batches = Spend()
        self.share = 1.0 if side is None else 0.5
        self._clock = time.monotonic() - _duration_s(candidate)
        # A batch's attempts are new ones (never from the cache), on both sides: estimated from the
        # paid attempts of the candidate's run and of the stored baseline's.
        per = [_per_attempt(self.run), _per_attempt(spend_of(_attempts(baseline)))]
        self._per = per if side is None else [per[side]]

    def add(self, results: Results | None) -> Spend:
        """Count one batch side's attempts; returns their spend."""
        spend = spend_of(_attempts(results))
        self.spent = self.spent.plus(spend)
        self.batches = self.batches.plus(spend)
        return spend

    def _left(self) -> dict[LimitName, float | None]:
        lim = self.limits
        run, share = self.run, self.share
        return {
            "max_cost_usd": (lim.max_cost_usd - (run.cost_usd or 0.0)) * share - (self.batches.cost_usd or 0.0)
            if lim.max_cost_usd is not None
            else None,
            "max_tokens": (lim.max_tokens - (run.tokens or 0)) * share - (self.batches.tokens or 0)
            if lim.max_tokens is not None
            else None,
            "max_duration_s": lim.max_duration_s - (time.monotonic() - self._clock)
            if lim.max_duration_s is not None
            else None,
        }

    def refusal(self, cases: int) -> str | None:
        """Why a batch of ``cases`` cases must not start, or None."""
        left = self._left()
        paid: tuple[tuple[LimitName, int], ...] = (("max_cost_usd", 0), ("max_tokens", 1))
        for key, what in paid:
            room = left[key]
            if room is None:
                continue
            per = [p[what] for p in self._per]
            known = [p for p in per if p is not None]
            # A side with no paid attempt to go by costs what the other side's did.
            estimate = cases * sum(p if p is not None else max(known, default=0.0) for p in per)
            if room <= 0 or estimate > room:
                return self.reached(key, estimate if room > 0 else None)
        duration = left["max_duration_s"]
        if duration is not None and duration <= 0:
            return self.reached("max_duration_s")
        return None

    def reached(self, key: LimitName, estimate: float | None = None) -> str:
        """``limits.max_cost_usd $5 reached by the gate ($5.10 spent; the next batch needs about $0.50 more)``."""
        value = getattr(self.limits, key)
        spent = {
            "max_cost_usd": self.spent.cost_usd or 0.0,
            "max_tokens": self.spent.tokens or 0,
            "max_duration_s": time.monotonic() - self._clock,
        }[key]
        said = f"limits.{key} {limit_amount(key, value)} reached by the gate ({limit_amount(key, spent)} spent"
        if estimate is None:
            return said + ")"
        return f"{said}; the next batch needs about {limit_amount(key, estimate)} more)"

    def caps(self) -> dict[str, float | None]:
        """The limits of the next batch side's ``evalgate run`` (``RunOptions``): what is left of each."""
        caps: dict[str, float | None] = {}
        for key, left in self._left().items():
            if left is not None:
                caps[key] = max(left, 1e-9) if key != "max_tokens" else max(int(left), 1)
        return caps

"""The asyncio runner (docs/spec.md#runner): ``concurrency`` workers take (case, attempt) pairs from one queue,
so at most that many attempts are in flight. Only infra failures are retried, on the configured
backoff schedule; each failed try stays in the attempt's ``retry_history``. A target timeout is the
candidate's failure and is never retried.

Stopping on a signal: workers take no new work; in-flight attempts get a grace period, then are
cancelled. Stopping on a limit (``limits:``, docs/spec.md#limits): no new case starts, but every attempt
already paid for or under way is kept — in-flight attempts finish (each within ``timeout_s``) and
so do the other attempts of cases already started, so no paid answer is thrown away. A case is
reported only when all its attempts have finished, so a stopped run holds whole cases only and
``--resume`` can redo the rest.

Under ``max_cost_usd`` or ``max_tokens`` a case starts only when it fits: what was spent, plus a
reservation (the dearest paid attempt so far) for every attempt started or committed to and not yet
finished, plus the case's own attempts beyond its first, stays below the limit. Otherwise the worker
waits for an attempt to finish (its reservation released, its real spend counted) and looks again;
with nothing under way, the next case would pass the limit and the run stops there. So a run passes
a limit only by what the attempts under way when it started its last case cost beyond their
reservation, plus one attempt (docs/spec.md#limits states the bound). An attempt is never cut in
the middle of its tool loop: its calls so far are paid, and cut it would have no answer."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from evals.results.masking import Masker
from evals.results.model import Attempt, AttemptError, CaseResult, RetryRecord
from evals.results.spend import LimitName, LimitStop, Spend, attempt_spend
from evals.results.trace import TraceError, build_trace
from evals.run.cache import ATTEMPT
from evals.run.scorers.builtin import ScorerError, score_attempt_async
from evals.run.targets.base import Target, TargetFailure, TargetOutput, backoff_wait
from evals.suite.options import DEFAULT_GRACE_S

if TYPE_CHECKING:
    from evals.run.scorers.builtin import Scorer
    from evals.suite.cases import Case
    from evals.suite.config import RetrySpec
    from evals.suite.limits import LimitsSpec

StopReason = Literal["done", "cancelled", "limit", "fail_fast"]


@dataclass
class RunSettings:
    attempts: int
    concurrency: int
    timeout_s: float
    retries: RetrySpec
    limits: LimitsSpec | None = None
    grace_s: float = DEFAULT_GRACE_S
    attempt_offset: int = 0
    # What the cases kept by --resume spent: cost and tokens are the run's budget, not each
    # invocation's (resuming with the same limit stops again at once; raising it completes the run).
    spent_before: Spend | None = None


class Runner:
    def __init__(
        self, settings: RunSettings, target: Target, scorers: Sequence[Scorer], *, secrets: Sequence[str] = ()
    ):
        self.settings = settings
        self.target = target
        self.scorers = scorers
        self.secrets = tuple(s for s in secrets if s)
        self.masker = Masker(self.secrets)
        self.reason: StopReason = "done"
        self.limit: LimitStop | None = None
        self.spent = Spend()
        self._stop: asyncio.Event | None = None
        self._abort: asyncio.Event | None = None
        self._queue: deque[tuple[Case, int]] = deque()
        self._started: set[str] = set()
        self._clock = time.monotonic()
        self._total = Spend()  # spent, the cases a --resume kept included (counted under limits only)
        self._committed = 0  # attempts of started cases not finished yet: each holds a reservation
        self._dearest: dict[LimitName, float] = {}  # the most a paid attempt cost (USD, tokens) so far
        self._freed = asyncio.Event()  # set (and replaced) each time an attempt finishes

    # ------------------------------------------------------------------------------------ control

    def stop(self) -> None:
        """A signal: take no new work; in-flight attempts get the grace period. A second stop
        cuts the grace period short."""
        if self._stop is None or self._abort is None:
            return
        if self._stop.is_set():
            self._abort.set()
        else:
            self.reason = "cancelled"
            self._stop.set()

    def stop_early(self) -> None:
        """Fail fast (docs/spec.md#fail-fast): a blocking unit's regression is certain. As at a
        limit, no new case starts and what is in flight (and the rest of started cases) finishes:
        those answers are paid for, and a case is only kept whole."""
        if self.reason != "done":
            return
        self.reason = "fail_fast"
        self._queue = deque(item for item in self._queue if item[0].id in self._started)

    def _limit_reached(self, stop: LimitStop) -> None:
        """No new case starts; what is in flight and the rest of started cases still run (their
        answers are paid for, or will be, and a case is only kept whole)."""
        if self.limit is not None or (self._stop is not None and self._stop.is_set()):
            return
        self.limit = stop
        self.reason = "limit"
        self._queue = deque(item for item in self._queue if item[0].id in self._started)

    def _account(self, attempt: Attempt | None) -> None:
        """Add an attempt's spend and stop when a limit is reached, or cannot be measured."""
        limits = self.settings.limits
        if limits is None:  # counted only when something reads it: the runner's overhead is measured
            return
        if attempt is not None:
            spend = attempt_spend(attempt)
            self.spent = self.spent.plus(spend)
            self._note_dearest(spend)
        total = self._total = self.spent.plus(self.settings.spent_before or Spend())
        if self.limit is not None:
            return
        # An answer must say what it cost; a crash or a timeout has no answer to say it with (its
        # cost, if any, is unknown in the report, but it is no sign of a target that never reports).
        answered = (
            attempt
            if attempt is not None and not attempt.cached and (attempt.error is None or attempt.error.kind == "scorer")
            else None
        )
        # A judge that was paid must say what it cost too (an endpoint without usage, or no prices).
        judge = attempt.judge_usage if attempt is not None else None
        if limits.max_cost_usd is not None:
            target_untold = answered is not None and answered.cost_usd is None
            if target_untold or (judge is not None and judge.cost_usd is None):
                stop = LimitStop(
                    limit="max_cost_usd", value=limits.max_cost_usd, unknown=True, spend=total,
                    unreported_by="target" if target_untold else "judge",
                )  # fmt: skip
                self._limit_reached(stop)
                return
            # A sum of floats: five $0.01 answers reach $0.05 even if they add up to 0.04999….
            if (total.cost_usd or 0.0) >= limits.max_cost_usd * (1 - 1e-9):
                self._limit_reached(
                    LimitStop(limit="max_cost_usd", value=limits.max_cost_usd, spent=total.cost_usd, spend=total)
                )
                return
        if limits.max_tokens is not None:
            untold = answered is not None and answered.tokens_in is None and answered.tokens_out is None
            if untold or (judge is not None and judge.tokens is None):
                self._limit_reached(
                    LimitStop(
                        limit="max_tokens", value=limits.max_tokens, unknown=True, spend=total,
                        unreported_by="target" if untold else "judge",
                    )
                )  # fmt: skip
                return
            if (total.tokens or 0) >= limits.max_tokens:
                self._limit_reached(
                    LimitStop(limit="max_tokens", value=limits.max_tokens, spent=total.tokens, spend=total)
                )

    def _note_dearest(self, spend: Spend) -> None:
        """Keep the most one paid attempt cost: what the runner reserves for each attempt under way.
        The dearest rather than the mean: attempts' costs differ (an agent's loop takes 1 step or
        8), and a mean learnt from the first, cheap ones let a run pass its limit by ~4 attempts."""
        if spend.cost_reported and spend.cost_usd is not None:
            self._dearest["max_cost_usd"] = max(self._dearest.get("max_cost_usd", 0.0), spend.cost_usd)
        if spend.tokens_reported and spend.tokens is not None:
            self._dearest["max_tokens"] = max(self._dearest.get("max_tokens", 0.0), spend.tokens)

    def _no_room(self) -> LimitName | None:
        """The limit the next case does not fit under, or None: spent + a reservation of the
        dearest paid attempt's spend for each attempt committed (the new case's beyond its first
        included) must stay below it. Before any paid attempt there is nothing to estimate by: a
        case starts only when no other is under way (the first answers give the estimate), and
        never more attempts are under way than paid ones were seen."""
        limits = self.settings.limits
        if limits is None:
            return None
        total = self._total
        ahead = self._committed + self.settings.attempts - 1
        measures: tuple[tuple[LimitName, float | None, float | None, int], ...] = (
            ("max_cost_usd", limits.max_cost_usd, total.cost_usd, total.cost_reported),
            ("max_tokens", limits.max_tokens, total.tokens, total.tokens_reported),
        )
        for key, cap, used, seen in measures:
            if cap is None:
                continue
            per = self._dearest.get(key)
            # No more attempts under way than paid ones seen: the dearest of a few is a poor guess
            # of the next (so the slots fill 1, 2, 4, 8 ... as answers come, near the limit or not).
            if self._committed and (per is None or self._committed >= seen):
                return key
            # The same float tolerance as the reached check in _account.
            if per is not None and (used or 0) + per * ahead >= cap * (1 - 1e-9):
                return key
        return None

    def _would_pass(self, key: LimitName) -> None:
        """Nothing is under way and the next case does not fit: the run stops short of the limit
        rather than start a case whose attempts would take it past (limit_sentence says so)."""
        total = self._total
        value = getattr(self.settings.limits, key)
        spent = total.cost_usd if key == "max_cost_usd" else total.tokens
        self._limit_reached(LimitStop(limit=key, value=value, spent=spent, spend=total))

    def _duration_reached(self) -> None:
        assert self.settings.limits is not None and self.settings.limits.max_duration_s is not None
        total = self.spent.plus(self.settings.spent_before or Spend())
        elapsed = time.monotonic() - self._clock
        self._limit_reached(
            LimitStop(limit="max_duration_s", value=self.settings.limits.max_duration_s, spent=elapsed, spend=total)
        )

    # ---------------------------------------------------------------------------------------- run

    async def run(self, cases: Sequence[Case], on_case: Callable[[CaseResult], None]) -> StopReason:
        """Run every attempt of ``cases``; ``on_case`` gets each case as soon as all its attempts are done."""
        stop, abort = self._stop, self._abort = asyncio.Event(), asyncio.Event()
        self.reason, self.limit, self.spent, self._clock = "done", None, Spend(), time.monotonic()
        n = self.settings.attempts
        # A case's attempts are next to each other: a limit stop finishes the started cases first.
        self._queue = deque((case, i) for case in cases for i in range(n))
        self._started, self._committed, self._freed = set(), 0, asyncio.Event()
        # The cases a --resume kept give a first estimate: their mean paid attempt.
        before = self.settings.spent_before or Spend()
        self._dearest = {}
        if before.cost_reported and before.cost_usd is not None:
            self._dearest["max_cost_usd"] = before.cost_usd / before.cost_reported
        if before.tokens_reported and before.tokens is not None:
            self._dearest["max_tokens"] = before.tokens / before.tokens_reported
        slots: dict[str, list[Attempt | None]] = {case.id: [None] * n for case in cases}
        self._account(None)  # the cases a --resume kept may have spent the budget already
        limits = self.settings.limits
        metered = limits is not None and (limits.max_cost_usd is not None or limits.max_tokens is not None)

        async def worker() -> None:
            try:
                while self._queue and not stop.is_set():
                    case, index = self._queue[0]
                    if case.id not in self._started:
                        full = self._no_room() if metered else None
                        if full is not None and self._committed:
                            await self._freed.wait()  # an attempt's end releases its reservation
                            continue
                        if full is not None:
                            self._would_pass(full)  # leaves only started cases' attempts queued
                            continue
                        self._started.add(case.id)
                        self._committed += n
                    self._queue.popleft()
                    try:
                        attempt = await self.attempt(case, self.settings.attempt_offset + index)
                    finally:
                        self._committed -= 1
                    self._account(attempt)
                    if metered:
                        self._freed.set()
                        self._freed = asyncio.Event()
                    slot = slots[case.id]
                    slot[index] = attempt
                    done = [a for a in slot if a is not None]
                    if len(done) == n:
                        del slots[case.id]  # reported: the run keeps no case's attempts
                        on_case(self.case_result(case, done))
            except Exception:
                # A bug or a full disk: stop the others now rather than after the whole suite.
                stop.set()
                abort.set()
                raise

        workers = [asyncio.create_task(worker()) for _ in range(min(self.settings.concurrency, len(self._queue)))]
        loop = asyncio.get_running_loop()
        duration = self.settings.limits.max_duration_s if self.settings.limits else None
        timer = loop.call_later(duration, self._duration_reached) if duration else None
        try:
            await self._wait(workers)
        finally:
            if timer is not None:
                timer.cancel()
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        for task in workers:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error  # a bug in the runner: do not hide it
        if self.limit is not None:  # what was spent in the end: the attempts that finished after it count
            total = self.spent.plus(self.settings.spent_before or Spend())
            measure = {
                "max_cost_usd": total.cost_usd,
                "max_tokens": total.tokens,
                "max_duration_s": time.monotonic() - self._clock,
            }[self.limit.limit]
            self.limit = self.limit.model_copy(update={"spend": total, "spent": measure})
        return self.reason

    async def _wait(self, workers: list[asyncio.Task[None]]) -> None:
        assert self._stop is not None and self._abort is not None
        if not workers:
            return
        all_done = asyncio.gather(*workers, return_exceptions=True)
        stopped = asyncio.create_task(self._stop.wait())
        aborted = asyncio.create_task(self._abort.wait())
        # Futures of different results: typed as such, a set of them would be a set[object].
        done_or_stopped: set[asyncio.Future[Any]] = {all_done, stopped}
        done_or_aborted: set[asyncio.Future[Any]] = {all_done, aborted}
        try:
            await asyncio.wait(done_or_stopped, return_when=asyncio.FIRST_COMPLETED)
            if not all_done.done():
                await asyncio.wait(done_or_aborted, timeout=self.settings.grace_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            aborted.cancel()

    # ------------------------------------------------------------------------------------ attempt

    async def attempt(self, case: Case, number: int = 0) -> Attempt:
        """One attempt: the target call, retried on infra failures only, then scored. ``number``:
        which attempt of the case this is (with ``--attempt-offset``), so that the response cache
        keys attempt 2 apart from attempt 1 and a more-evidence batch's attempts apart from both."""
        ATTEMPT.set(number)  # this task's calls (target, judge) read it where they key a request
        history: list[RetryRecord] = []
        while True:
            started = time.perf_counter()
            failure: TargetFailure | None = None
            result: TargetOutput | None = None
            try:
                async with asyncio.timeout(self.settings.timeout_s) as deadline:
                    result = await self.target.call(case)
            except TargetFailure as exc:
                failure = exc
            except TimeoutError:
                if not deadline.expired():
                    raise
                failure = TargetFailure("timeout", f"no answer within timeout_s={self.settings.timeout_s:g}")
            latency_ms = (time.perf_counter() - started) * 1000.0
            resends = result.resends if result is not None else failure.resends if failure is not None else []
            history.extend(r.model_copy(update={"message": self._mask(r.message)}) for r in resends)
            if failure is None:
                assert result is not None
                return await self._scored(case, result, latency_ms, history)
            if failure.kind == "infra" and len(history) < self.settings.retries.max:
                wait = backoff_wait(self.settings.retries, len(history), failure.retry_after)
                history.append(
                    RetryRecord(
                        message=self._mask(failure.message),
                        status=failure.status,
                        wait_s=wait,
                        latency_ms=latency_ms,
                    )
                )
                await asyncio.sleep(wait)
                continue
            return Attempt(
                # No answer at all is the candidate's failure; an infra error says nothing about it.
                passed=False if failure.kind in ("target", "timeout") else None,
                latency_ms=latency_ms,
                error=AttemptError(kind=failure.kind, message=self._mask(failure.message)),
                retries=len(history),
                retry_history=history,
                metadata={"status": failure.status} if failure.status is not None else {},
            )

    async def _scored(self, case: Case, result: TargetOutput, latency_ms: float, history: list[RetryRecord]) -> Attempt:
        error = trace_error = None
        passed = score = None
        scores: dict[str, float] = {}
        details: dict[str, Any] = {}
        trace = None
        if result.trace is not None:
            try:
                trace = build_trace(result.trace, self._mask)
            except TraceError as exc:  # the target's own bug: its answer stands, the attempt is an error
                trace_error = AttemptError(kind="target", message=self._mask(f"invalid trace: {exc}"))
        # Trajectory scorers read the events as the target made them (unmasked, uncut, like the
        # output the others read); an invalid trace gives them none to judge.
        events = result.trace if trace is not None else None
        try:
            verdict = await score_attempt_async(self.scorers, result.output, case, events)
            passed, score, scores, details = verdict.passed, verdict.score, dict(verdict.scores), verdict.details
            resends, judge_usage = verdict.resends, verdict.usage
        except ScorerError as exc:  # kind "infra" when a judge could not be reached: no verdict
            error = AttemptError(kind=exc.kind, message=self._mask(str(exc)))
            resends, judge_usage = exc.resends, exc.usage
        # A judge's retried calls are this attempt's infra retries too, beside the target's.
        history = [*history, *(r.model_copy(update={"message": self._mask(r.message)}) for r in resends)]
        error = error or trace_error
        stored, digest, truncated = self.masker.clip(result.output)
        return Attempt(
            passed=passed,
            score=score,
            scores=scores,
            # Answers from the response cache count the time they took when first paid for: a
            # latency metric must not see a cached run as a faster model (nor tokens and cost as a
            # cheaper one: the target reports the stored usage). `cached` says it was not paid now.
            latency_ms=latency_ms + result.replayed_ms,
            cached=result.cached,
            judge_usage=judge_usage,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            cost_usd=result.cost_usd,
            output=stored,
            output_sha256=digest,
            output_truncated=truncated,
            error=error,
            retries=len(history),
            retry_history=history,
            metadata=self._mask({**result.metadata, **details}),
            trace=trace,
        )

    def case_result(self, case: Case, attempts: list[Attempt]) -> CaseResult:
        return CaseResult(
            id=case.id,
            slices=dict(case.tags),
            attempts=attempts,
            hash=case.hash,
            input=self.masker.stored(case.input),
            expected=self.masker.stored(case.expected),
            metadata=self._mask(case.metadata),
        )

    def _mask(self, value: Any) -> Any:
        return self.masker.mask(value)

"""What a ``batch: true`` run does (docs/spec.md#batch-pricing).

A run whose target has ``batch: true`` first looks at the results file ``--resume`` reads:

- nothing submitted there (a fresh run, or a resume after a collection): the attempts still to
  run are sent to the provider's batch API in one go, those the response cache already answers
  left out, and the run stops ``pending`` with the batches' ids in ``run.provider_batch``
  (nothing to send: the run goes on, every answer from the cache);
- batches submitted there: they are polled; while one is still running the run stops
  ``pending`` again and says so; once all have ended their answers are read into
  ``BatchAnswers`` and the run goes on as usual — the target takes each attempt's answer from
  there instead of the network (every answer is written to the response cache first), so scoring, the file and
  the gate are those of any run. A request the batch did not answer (errored, expired, cancelled)
  is that attempt's infra error: the run ends ``error`` and the next ``--resume`` submits those.

A request is named by ``custom_id`` = a digest of its case id and attempt number, so the answers
are matched whatever order the provider returns them in, and a resume recomputes the names. The
names do not hold the request's body, so the file also keeps a digest of every request the run had
to make (``requests_digest``): a resume whose config or cases make other requests (another model,
prompt, parameters) refuses to read the batches' answers as theirs, and says what was paid for."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evals.common.errors import UsageError
from evals.results import console
from evals.results.model import ProviderBatch, Results
from evals.run.batch.answers import BatchAnswers, custom_id
from evals.run.batch.providers import MAX_REQUESTS, AnthropicBatches, BatchAPI, OpenAIBatches, Outcome
from evals.run.cache import ATTEMPT
from evals.run.connections import Reply
from evals.run.targets.base import TargetFailure
from evals.run.targets.endpoint import ModelTarget
from evals.suite.targets import AnthropicParams, OpenAIParams

if TYPE_CHECKING:
    from evals.run.targets.base import Target
    from evals.suite.cases import Case


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Lane:
    """A ``batch: true`` target's batch API and what this run sends to it or reads from it."""

    def __init__(self, target: ModelTarget):
        self.target = target
        p = target.params
        self.api: BatchAPI
        self.kind: Literal["openai", "anthropic"]
        if isinstance(p, AnthropicParams):
            self.kind = "anthropic"
            self.api = AnthropicBatches(p.root, target.headers)
        else:
            assert isinstance(p, OpenAIParams)
            self.kind = "openai"
            endpoint = "/v1/responses" if p.api == "responses" else "/v1/chat/completions"
            self.api = OpenAIBatches(p.base_url, target.headers, endpoint)

    def _requests(self, cases: Iterable[Case], attempts: range) -> Iterator[tuple[str, dict[str, Any], str | None]]:
        """Each attempt's request: its ``custom_id``, body and response-cache key."""
        target = self.target
        for case in cases:
            for number in attempts:
                token = ATTEMPT.set(number)  # the cache key holds the attempt, as in the runner
                try:
                    body, key = target.request(target.format.conversation(case.input))
                finally:
                    ATTEMPT.reset(token)
                yield custom_id(case.id, number), body, key

    def digest(self, cases: Iterable[Case], attempts: range) -> str:
        """What every attempt of ``cases`` asks (names and bodies, the cached ones too: the same set
        on the resume, whatever the cache holds by then)."""
        h = hashlib.sha256()
        for cid, body, _ in self._requests(cases, attempts):
            h.update(f"{cid}\0{json.dumps(body, sort_keys=True)}\n".encode())
        return h.hexdigest()

    def submit(self, cases: list[Case], attempts: range) -> ProviderBatch | None:
        """Send every attempt of ``cases`` the response cache cannot answer; None when there is none."""
        lines = [(cid, body) for cid, body, key in self._requests(cases, attempts) if self.target.cached(key) is None]
        if not lines:
            return None
        ids = [self.api.submit(lines[i : i + MAX_REQUESTS]) for i in range(0, len(lines), MAX_REQUESTS)]
        return ProviderBatch(
            api=self.kind,
            state="submitted",
            ids=ids,
            requests=len(lines),
            requests_digest=self.digest(cases, attempts),
            submitted_at=_now(),
        )

    def keep(self, answers: BatchAnswers, cases: Iterable[Case], attempts: range) -> None:
        """Write every collected answer to the response cache before any is scored: a run stopped
        while scoring them (a signal, a limit) loses none, and the next resume is served them from
        the cache instead of paying for them again."""
        cache = self.target.cache
        if cache is None:
            return
        for cid, _, key in self._requests(cases, attempts):
            outcome = answers.outcomes.get(cid)
            if outcome is None or outcome.body is None or key is None:
                continue
            # A malformed answer is not kept: its attempt reads it again and records the infra error.
            with contextlib.suppress(TargetFailure):
                cache.put(
                    key, {**self.target.parse(Reply(200, [], outcome.body)), "latency_ms": 0.0}, self.target.secrets
                )

    def collect(self, submitted: ProviderBatch) -> BatchAnswers | str:
        """The answers once every batch has ended, else what is still running (in words)."""
        statuses = {batch_id: self.api.status(batch_id) for batch_id in submitted.ids}
        running = [f"{i} is {s.state} ({s.counts})" for i, s in statuses.items() if not s.done]
        if running:
            return f"{self.api.name}: batch {'; '.join(running)}"
        outcomes: dict[str, Outcome] = {}
        for batch_id, status in statuses.items():
            if status.error is None:
                outcomes.update(self.api.results(batch_id))
        ended = ", ".join(f"{i} {s.state}" + (f": {s.error}" if s.error else "") for i, s in statuses.items())
        failed = sum(1 for o in outcomes.values() if o.body is None)
        console.info(
            f"{self.api.name}: collected {len(outcomes) - failed} answers of {submitted.requests} requests "
            f"({failed} failed, {max(0, submitted.requests - len(outcomes))} unanswered; batches {ended})",
            source="run",
        )
        return BatchAnswers(outcomes, f"batches {ended}")


def open_lane(target: Target, *, smoke: bool, more_evidence: bool, env: Mapping[str, str] = os.environ) -> Lane | None:
    """The batch lane of a ``batch: true`` model target in a full run; None otherwise. A smoke run,
    a run in a pull request's workflow (a PR's gate, even of the full suite) or a more-evidence
    batch waits for its answers, so it runs synchronously at the list price, and says so."""
    if not isinstance(target, ModelTarget) or not target.params.batch:
        return None
    pull_request = env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_EVENT_NAME", "").startswith("pull_request")
    if smoke or more_evidence or pull_request:
        what = "a smoke run" if smoke else "a more-evidence batch" if more_evidence else "a pull request's run"
        console.info(
            f"target.{target.kind}.batch: true is for full gates and resets; {what} waits for its answers, so its "
            "requests go synchronously, at the list price",
            source="run",
        )
        return None
    target.tier = "batch"
    return Lane(target)


def stranded(where: Path, batch: ProviderBatch, why: str) -> UsageError:
    """A submitted batch this run cannot collect, as the error that says what was paid and what to do."""
    return UsageError(
        f"{where}: holds batch {', '.join(batch.ids)} ({batch.requests} requests submitted {batch.submitted_at} "
        f"to the {batch.api} batch API, paid for there) but {why}, so its answers are not this run's; "
        "to use them, resume with the config and cases that submitted it; to start over, run without "
        f"--resume or delete {where} (a new batch, paid again)"
    )


def keep_submitted(previous: Results, where: Path, why: str) -> None:
    """A resume that would drop ``previous`` (another config or target, ``why``) refuses to while it
    holds a submitted batch: dropping it would submit again and leave the paid batch unread."""
    batch = previous.run.provider_batch
    if batch is not None and batch.state == "submitted":
        raise stranded(where, batch, why)


def batch_step(
    lane: Lane, recorded: ProviderBatch | None, todo: list[Case], attempts: range, rerun: str, where: Path
) -> tuple[ProviderBatch | None, str | None]:
    """This invocation's step, from what the results file ``where`` ``recorded``: the batch to record
    now, and why the run stops here (``pending``) — or None, the run goes on (the target then takes
    its answers from the collected batches, or from the cache when there was nothing to send)."""
    if recorded is not None and recorded.state == "submitted":
        digest = recorded.requests_digest
        if digest is not None and digest != lane.digest(todo, attempts):
            raise stranded(where, recorded, "this run's requests differ (another model, prompt, parameters or cases)")
        got = lane.collect(recorded)
        if isinstance(got, str):
            return recorded, f"{got}; collect it later with {rerun}"
        lane.target.answers = got
        lane.keep(got, todo, attempts)
        return recorded.model_copy(update={"state": "collected", "collected_at": _now()}), None
    submitted = lane.submit(todo, attempts)
    if submitted is None:
        return recorded, None
    return submitted, (
        f"submitted {submitted.requests} requests to the {lane.api.name} (batch {', '.join(submitted.ids)}); "
        f"once it has ended (within 24 h) collect, score and gate them with {rerun}"
    )

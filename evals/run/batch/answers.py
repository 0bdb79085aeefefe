"""A collected batch's answers (docs/spec.md#batch-pricing), apart from the lane that collects them:
the model target reads them (``evals.run.targets.endpoint``) and the lane imports that target."""

from __future__ import annotations

import hashlib

from evals.run.batch.providers import Outcome
from evals.run.cache import ATTEMPT
from evals.run.connections import Reply
from evals.run.targets.base import TargetFailure


def custom_id(case_id: str, attempt: int) -> str:
    """The request's name in the batch: Anthropic allows ``[A-Za-z0-9_-]{1,64}``, so a digest of
    the case id (any text) and the attempt number rather than the id itself."""
    return "eg-" + hashlib.sha256(f"{case_id}\0{attempt}".encode()).hexdigest()[:40]


class BatchAnswers:
    """What the ended batches answered, by ``custom_id``; ``unanswered`` says why a request has
    no line (the batches' final states)."""

    def __init__(self, outcomes: dict[str, Outcome], unanswered: str):
        self.outcomes = outcomes
        self.unanswered = unanswered

    def answered(self, case_id: str) -> Reply | None:
        """The batch's answer to this task's attempt (``ATTEMPT``) of ``case_id``, as a 200 reply."""
        outcome = self.outcomes.get(custom_id(case_id, ATTEMPT.get()))
        return Reply(200, [], outcome.body) if outcome is not None and outcome.body is not None else None

    def failure(self, case_id: str) -> TargetFailure:
        """Why the batch has no answer to that attempt: an infra error (no verdict on the model),
        resumable; ``retry_after`` 0, as the runner's retries of it find the same at once."""
        outcome = self.outcomes.get(custom_id(case_id, ATTEMPT.get()))
        if outcome is None:
            why = f"the batch has no answer for this request ({self.unanswered})"
        else:
            why = f"the batch did not answer this request: {outcome.error}"
        return TargetFailure("infra", f"{why}; --resume submits it again", retry_after=0.0)

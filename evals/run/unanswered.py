"""A model target that answered nothing (docs/spec.md#nothing-answered): every attempt of the run
ended in an HTTP 4xx from its endpoint — a URL where nothing speaks the target's format (404, 405),
a key it refuses (401, 403), a parameter it rejects (400). Each such attempt is the candidate's
failure on its own, but a run of nothing else measured no model: it is a set-up error of the
config (exit 2, like an unset key), not a success every later stage would read as a run of wrong
answers, and not infra (running it again cannot help)."""

from __future__ import annotations

from collections import Counter

from evals.common.escape import log_value
from evals.results.model import CaseResult
from evals.run.targets.base import Wire

# Statuses that say the endpoint is not there, not the format's, or does not take the method.
NOT_THERE = frozenset({404, 405})
REFUSED = frozenset({401, 403})


class AnswerTally:
    """The attempts of a run so far: how many ended in each HTTP 4xx, and whether any other way."""

    def __init__(self) -> None:
        self.statuses: Counter[int] = Counter()
        self.other = 0
        self.first: str | None = None

    def add(self, result: CaseResult) -> None:
        for attempt in result.attempts:
            status = attempt.metadata.get("status")
            error = attempt.error
            if error is not None and error.kind == "target" and isinstance(status, int) and 400 <= status < 500:
                self.statuses[status] += 1
                if self.first is None:
                    self.first = error.message
            else:
                self.other += 1

    def verdict(self, wire: Wire | None) -> str | None:
        """Why the run answered nothing, naming the format, the URL and the config line, or None."""
        refused = sum(self.statuses.values())
        if wire is None or not refused or self.other:
            return None
        codes = ", ".join(
            f"{code} ×{n}" if len(self.statuses) > 1 else str(code) for code, n in self.statuses.most_common()
        )
        every = f"every one of the {refused} requests to {wire.url} was answered HTTP {codes}"
        if set(self.statuses) <= NOT_THERE:
            why = (
                f"the endpoint does not speak {wire.format} at that URL (or, if its answer below says so, does not "
                f"serve the model): fix the base URL at {wire.where()} (docs/providers.md lists each provider's)"
            )
        elif set(self.statuses) <= REFUSED:
            why = f"the endpoint refuses the credentials it was sent: check the key and headers at {wire.where()}"
        else:
            why = f"the endpoint rejects the requests as the config makes them: fix the target at {wire.where()}"
        first = log_value(self.first or "", limit=300)
        # --resume would keep these cases: a 4xx is an answered attempt, and its case complete.
        return (
            f"the target answered nothing: {every}; {why}, then run again without --resume. Its first answer: {first}"
        )

"""What a scorer is and what it yields (docs/spec.md#scorers): the ``Score`` of one output, the ``Scorer`` that
makes it (sync, or async for scorers that call out, like the model-graded ``judge``), and the
errors a scorer raises. The built-ins live in evals/run/scorers/builtin.py, the judge in evals/run/scorers/judge.py,
the trajectory scorers in evals/run/scorers/trajectory.py."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from evals.results.model import ErrorKind, RetryRecord
from evals.results.spend import JudgeUsage
from evals.suite.cases import Case


class Score(BaseModel):
    """``passed``: the verdict, None when the scorer cannot judge (e.g. no expected value).
    ``score`` in [0, 1] or None. ``scores``: named scores (each scorer's own, extras like format_valid)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    passed: bool | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    details: dict[str, Any] = Field(
        default_factory=dict, description="What the scorer wants kept in the attempt's metadata (a judge's reasoning)."
    )
    resends: list[RetryRecord] = Field(
        default_factory=list,
        description="Calls out (the judge's) that failed and were retried before this verdict: they join the "
        "attempt's retry_history and its retries, beside the target's.",
    )
    usage: JudgeUsage | None = Field(
        default=None, description="What the judge's calls for this verdict cost; none when nothing was paid."
    )


class ScorerError(Exception):
    """A scorer crashed or returned something unusable; the runner records error kind "scorer".
    ``resends`` and ``usage``: as in ``Score``, the failed calls retried and what the calls cost
    before it gave up."""

    kind: ErrorKind = "scorer"

    def __init__(self, message: str, *, resends: list[RetryRecord] | None = None, usage: JudgeUsage | None = None):
        super().__init__(message)
        self.resends = list(resends or [])
        # A judge that gave up after replies out of format was still paid for them.
        self.usage = usage


class ScorerUnavailable(ScorerError):
    """A scorer that depends on a service (the judge's endpoint) could not get a verdict from it
    after retries: an infra error — the attempt has no verdict, it is not a wrong answer."""

    kind: ErrorKind = "infra"


def verdict(passed: bool, **extras: float) -> Score:
    return Score(passed=passed, score=1.0 if passed else 0.0, scores=extras)


@dataclass(frozen=True)
class Scorer:
    """A ready scorer: ``scorer(output, case, events) -> Score``. Raises ScorerError. A trajectory
    scorer (``trajectory``) judges the attempt's trace events instead of its output."""

    name: str
    fn: Callable[[Any, Case], Score] | None
    extras: tuple[str, ...] = ()
    afn: Callable[[Any, Case], Awaitable[Score]] | None = None  # async scorers (set instead of fn)
    trajectory: Callable[[Sequence[Any] | None, Case], Score] | None = None  # (set instead of fn)

    def __call__(self, output: Any, case: Case, events: Sequence[Any] | None = None) -> Score:
        try:
            if self.trajectory is not None:
                return self.trajectory(events, case)
            if self.fn is not None:
                return self.fn(output, case)
        except ScorerError:
            raise
        except Exception as exc:
            raise ScorerError(f"scorer {self.name!r} failed on case {case.id!r}: {type(exc).__name__}: {exc}") from exc
        raise ScorerError(f"scorer {self.name!r} is async: score with score_attempt_async")

    async def aclose(self) -> None:
        close = getattr(self.afn, "aclose", None)
        if close is not None:
            await close()

    async def ascore(self, output: Any, case: Case, events: Sequence[Any] | None = None) -> Score:
        if self.afn is None:
            return self(output, case, events)
        try:
            return await self.afn(output, case)
        except ScorerError:
            raise
        except Exception as exc:
            raise ScorerError(f"scorer {self.name!r} failed on case {case.id!r}: {type(exc).__name__}: {exc}") from exc


def as_text(value: Any) -> str:
    """Output as text for the text scorers: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def same_json(a: Any, b: Any) -> bool:
    """Deep equality of JSON values where ``true`` is not ``1`` (Python's ``==`` says it is)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b

"""What every target is (docs/spec.md#targets): the ``Target`` interface the runner calls, what a call gives
(``TargetOutput``) and how one fails (``TargetFailure``, whose ``kind`` tells the runner whether
the failure is the candidate's, ``target``, or the world's, ``infra``, retried). The kinds are in
``evals.run.targets.code`` (Python callable, command) and ``evals.run.targets.endpoint``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals.results.model import ErrorKind, RetryRecord, TargetInfo

if TYPE_CHECKING:
    from evals.suite.cases import Case
    from evals.suite.config import RetrySpec

EXCERPT_CHARS = 500
_RESULT_KEYS = frozenset({"output", "tokens_in", "tokens_out", "cost_usd", "metadata", "trace"})


@dataclass
class TargetOutput:
    output: Any
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Infra failures the target recovered from within the call (a request sent again after a
    # stale keep-alive connection dropped it): the attempt's retry_history records them.
    resends: list[RetryRecord] = field(default_factory=list)
    trace: list[Any] | None = None  # raw events; the runner masks, clips and checks them (evals.results.trace)
    # From the response cache (docs/spec.md#response-cache): every answer of the call was served from it (``cached``),
    # and how long those answers took when they were first paid for (``replayed_ms``), which the
    # runner adds to the attempt's latency so a cached attempt's latency compares like with like.
    cached: bool = False
    replayed_ms: float = 0.0


class TargetFailure(Exception):
    """One failed try. ``retry_after`` is the server's ``Retry-After`` in seconds, if it sent one;
    ``resends`` as in ``TargetOutput``."""

    def __init__(self, kind: ErrorKind, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.resends: list[RetryRecord] = []


def backoff_wait(retries: RetrySpec, retry_number: int, retry_after: float | None) -> float:
    """Seconds to wait before retry ``retry_number`` (0-based). The server's Retry-After wins over
    the schedule, capped at ``max_retry_after_s``; past the schedule's end its last step repeats."""
    if retry_after is not None:
        return min(retry_after, retries.max_retry_after_s)
    if not retries.backoff_s:
        return 0.0
    return retries.backoff_s[min(retry_number, len(retries.backoff_s) - 1)]


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The tail of a stream: where tracebacks and server errors say what went wrong."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def case_payload(case: Case) -> dict[str, Any]:
    """The case a command target reads (and the response cache keys by): as its file wrote it."""
    case = case.as_written()
    return {"id": case.id, "input": case.input, "expected": case.expected, "tags": case.tags, "metadata": case.metadata}


def unpack_result(value: Any, where: str) -> TargetOutput:
    """A target returns either its output, or ``{"output": ..., "tokens_in": ..., ...}``
    (docs/running.md). A JSON object with none of those keys is an output (``json_valid`` and
    ``json_equal`` judge one). A dict with some of them but not ``output``, or ``output`` beside
    keys a result has not, is neither: scored as its JSON text, it failed every case while its
    ``cost_usd`` went unread, so it is a ``target`` error naming the keys."""
    if not isinstance(value, dict):
        return TargetOutput(output=value)
    keys = set(value)
    if "output" not in keys:
        if found := sorted(keys & _RESULT_KEYS):
            raise TargetFailure(
                "target",
                f'{where} returned {{{_keys(keys)}}}: a result dict needs "output" (the answer) beside '
                f'{_keys(found)}; return {{"output": ..., ...}}',
            )
        return TargetOutput(output=value)
    if extra := sorted(keys - _RESULT_KEYS):
        raise TargetFailure(
            "target",
            f"{where} returned {{{_keys(keys)}}}: a result dict has only {_keys(_RESULT_KEYS)}, not "
            f'{_keys(extra)}; a JSON object as the answer goes under output: {{"output": {{...}}}}',
        )
    try:
        return TargetOutput(
            output=value["output"],
            tokens_in=_opt_int(value.get("tokens_in")),
            tokens_out=_opt_int(value.get("tokens_out")),
            cost_usd=_opt_float(value.get("cost_usd")),
            metadata=dict(value.get("metadata") or {}),
            trace=value.get("trace"),
        )
    except (TypeError, ValueError) as exc:
        raise TargetFailure("target", f"{where}: bad result field: {exc}") from None


def _keys(keys: Any) -> str:
    shown = sorted(str(k) for k in keys)
    return ", ".join(shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else "")


def _opt_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"expected a non-negative integer, got {value!r}")
    return int(value)


def _opt_float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or float(value) < 0:
        raise ValueError(f"expected a non-negative number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Wire:
    """What a model target speaks and where: its API format (``openai chat completions``), the URL
    it posts to, and ``where()``, the config line that sets that URL (read only for a message)."""

    format: str
    url: str
    where: Callable[[], str]


class Target(ABC):
    """``secrets`` are values the runner masks wherever they might show up; ``wire`` is a model
    target's format and URL (None for code), named when its endpoint answers nothing."""

    kind: str = ""
    secrets: tuple[str, ...] = ()
    wire: Wire | None = None

    @abstractmethod
    def info(self) -> TargetInfo:
        """What the run records as ``run.target``."""

    @abstractmethod
    async def call(self, case: Case) -> TargetOutput:
        """One try at one case; raises TargetFailure."""

    def observed(self) -> dict[str, Any]:
        """Facts learnt while running (e.g. server fingerprints) for the run's target params."""
        return {}

    async def aclose(self) -> None:
        return None

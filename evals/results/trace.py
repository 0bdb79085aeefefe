"""Attempt traces (docs/spec.md#traces): the ordered events of one attempt — messages,
tool calls and their results, decisions, log lines — as the results file and the history store
keep them.

Two rules make a trace readable by anyone later: ``seq`` runs from 0 without gaps, and every
``tool_call`` is answered by a later ``tool_result`` or ``tool_error`` of the same tool (the
earliest unanswered call of that name; results close calls in order). ``tool_pairs`` states the
second rule once: the results model rejects a trace that breaks it, and the history store keeps
the pairing as a foreign key, so the database refuses a tool call without its result too.

Content is stored masked and truncated (8,192 characters; tool results 2,048) with the sha256 of
the full masked text, like attempt outputs.

An agent's trajectory is read from the trace (docs/spec.md#agent-trajectories): the ``tool_call`` events in order
(``tool_calls``, ``tool_names``) and its model calls (``step_count``: ``log`` events named
``step``). A call that nobody ran is answered by a ``tool_result`` saying ``not executed: why``, so
it stays paired without counting as a tool's error."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.common import jsonsafe

TraceKind = Literal["message", "tool_call", "tool_result", "tool_error", "decision", "log"]
KINDS: tuple[str, ...] = ("message", "tool_call", "tool_result", "tool_error", "decision", "log")
RESULT_KINDS = ("tool_result", "tool_error")
_TOOL_KINDS = ("tool_call", *RESULT_KINDS)  # a tuple: a lean-checked dict's kind may be any JSON
_EVENT_KEYS = frozenset({"seq", "kind", "name", "content", "ts", "sha256", "truncated"})
CONTENT_LIMIT = 8192
TOOL_RESULT_LIMIT = 2048
NAME_LIMIT = 200


class TraceEvent(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    seq: Annotated[int, Field(ge=0)]
    kind: TraceKind
    name: str | None = Field(default=None, description="Role of a message, tool name of a call or result.")
    content: str | None = Field(default=None, description="Masked text, truncated (8,192 chars; tool results 2,048).")
    sha256: str | None = Field(default=None, description="sha256 of the full masked content.")
    truncated: bool = False
    ts: str | None = Field(default=None, description="ISO 8601 time of the event, when the target knew it.")


_VALIDATE_EVENT = TraceEvent.__pydantic_validator__.validate_python


class TraceError(ValueError):
    """A trace that breaks the seq or pairing rule; the message names the event."""


def tool_pairs(events: Sequence[tuple[int, str, str | None]]) -> dict[int, int]:
    """``{call seq: result seq}`` for ``(seq, kind, name)`` events in order. Raises ``TraceError``
    for a gap in ``seq``, a result that answers no call, or a call left unanswered."""
    open_calls: defaultdict[str | None, deque[int]] = defaultdict(deque)
    pairs: dict[int, int] = {}
    for position, (seq, kind, name) in enumerate(events):
        if seq != position:
            raise TraceError(f"trace[{position}]: seq is {seq}, expected {position} (seq runs from 0 without gaps)")
        if kind == "tool_call":
            open_calls[name].append(seq)
        elif kind in RESULT_KINDS:
            if not open_calls[name]:
                raise TraceError(f"trace[{position}]: {kind} of {name!r} answers no earlier tool_call of that tool")
            pairs[open_calls[name].popleft()] = seq
    unanswered = sorted(seq for calls in open_calls.values() for seq in calls)
    if unanswered:
        raise TraceError(
            f"trace[{unanswered[0]}]: tool_call has no tool_result or tool_error after it "
            f"({len(unanswered)} unanswered call(s))"
        )
    return pairs


def check_events(events: Sequence[TraceEvent | dict[str, Any]]) -> None:
    """The rules on validated events: models, or the plain dicts of ``evals.compare.lazyload``'s lean check."""
    # Most traces hold no tool event and number their events right: then there is no pair to make
    # and nothing to report. Anything else (and every error message) is ``tool_pairs``'s.
    for position, event in enumerate(events):
        seq, kind = (event["seq"], event["kind"]) if isinstance(event, dict) else (event.seq, event.kind)
        if seq != position or kind in _TOOL_KINDS:
            break
    else:
        return
    tool_pairs(
        [(e["seq"], e["kind"], e.get("name")) if isinstance(e, dict) else (e.seq, e.kind, e.name) for e in events]
    )


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def clip(text: str | None, limit: int) -> tuple[str | None, str | None, bool]:
    """(stored text, sha256 of the full text, truncated?)."""
    if text is None:
        return None, None, False
    digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    if len(text) <= limit:
        return text, digest, False
    return text[:limit], digest, True


def build_trace(raw: Any, mask: Callable[[Any], Any] = lambda v: v) -> list[TraceEvent]:
    """A trace as a target returned it (a list of ``{kind, name?, content?, ts?}``; ``seq`` may be
    left out and is then the position) → stored events: masked with ``mask``, non-text content as
    JSON, truncated with the sha256 of the full text. Raises ``TraceError`` (naming the event) for
    anything that is not a valid trace."""
    if not isinstance(raw, list):
        raise TraceError(f"trace must be a list of events, got {type(raw).__name__}")
    events: list[TraceEvent] = []
    for position, item in enumerate(raw):
        if not isinstance(item, dict):
            raise TraceError(f"trace[{position}]: an event is an object with kind, name, content; got {item!r:.80}")
        if not _EVENT_KEYS.issuperset(item):
            unknown = set(item) - _EVENT_KEYS
            raise TraceError(f"trace[{position}]: unknown key(s) {', '.join(sorted(unknown))}")
        kind = item.get("kind")
        if kind not in KINDS:
            raise TraceError(f"trace[{position}]: kind {kind!r} is not one of {', '.join(KINDS)}")
        seq = item.get("seq", position)
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise TraceError(f"trace[{position}]: seq must be an integer, got {seq!r}")
        name = item.get("name")
        name = None if name is None else str(mask(str(name)))[:NAME_LIMIT]
        limit = TOOL_RESULT_LIMIT if kind in RESULT_KINDS else CONTENT_LIMIT
        content, digest, truncated = clip(_text(mask(item.get("content"))), limit)
        ts = item.get("ts")
        # The model's validator on a dict: the same checks and errors as TraceEvent(...), without
        # BaseModel.__init__'s Python frame (a few µs an event, three events a case at least).
        event = {"seq": seq, "kind": kind, "name": name, "content": content, "sha256": digest, "truncated": truncated}
        event["ts"] = None if ts is None else str(ts)
        events.append(_VALIDATE_EVENT(event))
    check_events(events)
    return events


def failed_tail(attempts: Sequence[Any], n: int = 5, chars: int = 200) -> list[dict[str, Any]]:
    """The last ``n`` events (content shortened) of the first attempt that failed or erred, else
    of the last attempt: what the report's case diff shows of a case's trace."""
    chosen = next((a for a in attempts if a.passed is False or a.error is not None), attempts[-1] if attempts else None)
    events = (chosen.trace or []) if chosen is not None else []
    return [{"seq": e.seq, "kind": e.kind, "name": e.name, "content": (e.content or "")[:chars]} for e in events[-n:]]


# ---------------------------------------------------------------------------------------- trajectories

# A tool call nobody ran (a target without ``tools:``, or a step past ``max_steps``) is answered by
# a ``tool_result`` whose content starts with this: the call stays paired (the trace rule), and
# ``tool_error_rate`` counts only tools that failed, not calls that were never made.
NOT_EXECUTED = "not executed"
# How a call the loop did not run because of the cap is answered: "not executed: max_steps (4) reached".
MAX_STEPS_CUT = "max_steps ("
# A ``log`` event of this name marks one model call (a step of the agent); ``max_steps`` counts them.
STEP = "step"


def _field(event: Any, name: str) -> Any:
    return event.get(name) if isinstance(event, dict) else getattr(event, name)


def tool_calls(events: Sequence[Any] | None) -> list[tuple[str, Any]] | None:
    """``(name, arguments)`` of each ``tool_call`` in order (events as models or dicts, raw or
    stored); arguments as JSON when the content is JSON text. None for no trace at all: what an
    attempt without a trace did is unknown, not "no tool"."""
    if events is None:
        return None
    calls = []
    for event in events:
        if _field(event, "kind") != "tool_call":
            continue
        content = _field(event, "content")
        if isinstance(content, str):
            with contextlib.suppress(ValueError):  # arguments that are not JSON stay as text
                content = jsonsafe.loads(content)
        calls.append((str(_field(event, "name")), content))
    return calls


def tool_names(events: Sequence[Any] | None) -> list[str] | None:
    """The trajectory: the names of the tools called, in order (None: no trace)."""
    calls = tool_calls(events)
    return None if calls is None else [name for name, _ in calls]


def step_count(events: Sequence[Any] | None) -> int | None:
    """Model calls the attempt made (its ``step`` log events), plus one when the loop stopped at
    its ``max_steps`` with calls still pending: such an agent had not finished, so it needed more
    steps than the cap, and a ``max_steps`` scorer at the cap must not pass it. None when the trace
    marks no step."""
    steps = sum(1 for e in events or () if _field(e, "kind") == "log" and _field(e, "name") == STEP)
    cap = f"{NOT_EXECUTED}: {MAX_STEPS_CUT}"
    cut = any(
        _field(e, "kind") == "tool_result" and str(_field(e, "content") or "").startswith(cap) for e in events or ()
    )
    return steps + cut if steps else None


def first_divergence(a: Sequence[str], b: Sequence[str]) -> int | None:
    """The first position where two tool sequences differ (the shorter one's end counts), or
    None when they are the same."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))

"""One case's attempts and trace events as a timeline people read (docs/spec.md#trace-command):
each attempt's outcome, then its events in order, tool calls as ``→ tool(arguments)`` and their
answers as ``← tool: result`` / ``✗ tool: error``. The HTML page's trace fold writes its events
with :func:`event_line` too, so both read the same."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence

from evals.common.errors import UsageError
from evals.results.model import Attempt, CaseResult
from evals.results.trace import tool_names

CONTENT_CHARS = 400
_MARK = {"tool_call": "→", "tool_result": "←", "tool_error": "✗"}


def _shorten(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[:limit] + "…"


def event_line(kind: str, name: str | None, content: str | None, limit: int | None = CONTENT_CHARS) -> str:
    """One event as a line: ``→ search({"q": "x"})``, ``← search: 3 hits``, ``✗ search: timeout``,
    ``user: hello``, ``step 1: search``."""
    text = _shorten(content or "", limit)
    if kind == "tool_call":
        return f"→ {name}({text})"
    if kind in _MARK:
        return f"{_MARK[kind]} {name}: {text}"
    if kind == "log" and name == "step":
        return text  # "step 2: search, fetch"
    label = name or kind
    return f"{label}: {text}" if kind == "message" else f"{kind} {label}: {text}"


def find_case(cases: Sequence[CaseResult], case_id: str, where: str) -> CaseResult:
    """The case of that id; a UsageError naming ``where`` and the closest ids otherwise."""
    for case in cases:
        if case.id == case_id:
            return case
    close = difflib.get_close_matches(case_id, [c.id for c in cases], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f" ({len(cases)} cases there)"
    raise UsageError(f"{where} has no case {case_id!r}{hint}")


def _outcome(a: Attempt) -> str:
    if a.error is not None:
        state = f"{a.error.kind} error"
    else:
        state = {True: "pass", False: "fail", None: "no verdict"}[a.passed]
    parts = [state]
    if a.score is not None:
        parts.append(f"score {a.score:.2f}")
    parts += [f"{name} {value:.2f}" for name, value in a.scores.items()]
    if a.latency_ms is not None:
        parts.append(f"{a.latency_ms:,.0f} ms")
    if a.tokens_in is not None or a.tokens_out is not None:
        parts.append(f"tokens {a.tokens_in or 0:,} in / {a.tokens_out or 0:,} out")
    if a.retries:
        parts.append(f"{a.retries} infra retr{'y' if a.retries == 1 else 'ies'}")
    if a.cached:
        # Its tokens and latency are the first run's: this run paid nothing for it.
        parts.append("from the response cache")
    return " · ".join(parts)


def _indented(label: str, text: str) -> list[str]:
    first, *rest = text.splitlines() or [""]
    return [f"  {label}{first}", *(f"  {' ' * len(label)}{line}" for line in rest)]


def render_timeline(case: CaseResult, source: str, *, attempt: int | None = None, chars: int = CONTENT_CHARS) -> str:
    """The case's attempts (or only ``attempt``, 1-based) as text, events in order."""
    attempts = list(enumerate(case.attempts, 1))
    if attempt is not None:
        if not 1 <= attempt <= len(attempts):
            raise UsageError(
                f"case {case.id!r} in {source} has {len(attempts)} attempt(s): --attempt 1 to {len(attempts)}"
            )
        attempts = [attempts[attempt - 1]]
    slices = ", ".join(f"{k}={v}" for k, v in sorted(case.slices.items()))
    lines = [f"case {case.id}" + (f" ({slices})" if slices else "") + f" — {source}, {len(case.attempts)} attempt(s)"]
    for number, a in attempts:
        lines += ["", f"attempt {number}: {_outcome(a)}"]
        for retry in a.retry_history:
            lines.append(f"  retried: {_shorten(retry.message, chars)}")
        if a.trace is None:
            lines.append("  (no trace recorded)")
        for e in a.trace or []:
            lines += _indented(f"#{e.seq:<3} ", event_line(e.kind, e.name, e.content, chars))
        tools = tool_names(a.trace)
        if tools:
            lines.append(f"  tools: {' → '.join(tools)}")
        if a.error is not None:
            lines += _indented("error: ", _shorten(a.error.message, chars))
        if a.output is not None:
            output = a.output if isinstance(a.output, str) else json.dumps(a.output, ensure_ascii=False, default=str)
            lines += _indented("output: ", _shorten(output, chars))
    return "\n".join(lines) + "\n"

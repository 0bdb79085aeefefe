"""One case's attempts and trace events read back from the history (``evalgate trace --history``):
the newest recorded run that holds the case, as the results model, so the timeline is the one a
results file gives. The history keeps each attempt's output excerpt, retry count and whether it
came from the response cache, not its retry messages."""

from __future__ import annotations

import json

from evals.common.errors import UsageError
from evals.history.engine import Engine
from evals.results.model import Attempt, AttemptError, CaseResult
from evals.results.trace import TraceEvent

# The migration that added attempts.cached (0005_attempt_cached.sql).
CACHED_SINCE = 5


def case_from_history(engine: Engine, case_id: str, suite: str | None = None) -> tuple[CaseResult, str]:
    """(the case, where it was found: run id, suite, commit, start). UsageError when no run has it."""
    found = engine.query(
        "SELECT r.id, r.suite, r.git_sha, r.started_at, c.case_no, c.input_excerpt, c.expected_excerpt "
        "FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.case_id = ?"
        + (" AND r.suite = ?" if suite else "")
        # A run with no start time is not the newest: PostgreSQL sorts NULL first when descending.
        + " ORDER BY r.started_at IS NULL, r.started_at DESC, r.id DESC LIMIT 1",
        (case_id, suite) if suite else (case_id,),
    )
    if not found:
        where = f" of suite {suite!r}" if suite else ""
        raise UsageError(
            f"history {engine.where}: no recorded run{where} holds case {case_id!r}: check the id, or record the "
            "run first (`evalgate history add RESULTS`), or read the file itself with --results"
        )
    run_id, run_suite, sha, started, case_no, input_excerpt, expected_excerpt = found[0]
    key = (run_id, case_no)
    events: dict[int, list[TraceEvent]] = {}
    for attempt_no, seq, kind, name, content, sha256, truncated, ts in engine.query(
        "SELECT attempt_no, seq, kind, name, content, sha256, truncated, ts FROM events "
        "WHERE run_id = ? AND case_no = ? ORDER BY attempt_no, seq",
        key,
    ):
        events.setdefault(attempt_no, []).append(
            TraceEvent(seq=seq, kind=kind, name=name, content=content, sha256=sha256, truncated=bool(truncated), ts=ts)
        )
    cached = "cached" if engine.version() >= CACHED_SINCE else "NULL"
    attempts = [
        Attempt(
            passed=None if passed is None else bool(passed),
            score=score,
            scores=json.loads(scores) if scores else {},
            latency_ms=latency,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=cost,
            error=AttemptError(kind=kind, message=message or "") if kind else None,
            retries=retries,
            output=output,
            # NULL: recorded before the history kept the flag (0005); not known to be cached.
            cached=bool(cached),
            trace=events.get(attempt_no),
        )
        for (
            attempt_no, passed, score, scores, latency, tokens_in, tokens_out, cost, kind, message, retries, output,
            cached,
        ) in engine.query(
            "SELECT attempt_no, passed, score, scores, latency_ms, tokens_in, tokens_out, cost_usd, error_kind, "
            # Readers do not migrate: a database no newer evalgate has written to has no such column.
            f"error_message, retries, output_excerpt, {cached} FROM attempts WHERE run_id = ? AND case_no = ? "
            "ORDER BY attempt_no",
            key,
        )
    ]  # fmt: skip
    slices = dict(engine.query("SELECT slice_key, slice_value FROM case_slices WHERE run_id = ? AND case_no = ?", key))
    case = CaseResult(id=case_id, slices=slices, attempts=attempts, input=input_excerpt, expected=expected_excerpt)
    commit = f", commit {sha[:10]}" if sha else ""
    return case, f"history run {run_id} of suite {run_suite}{commit}, started {started or 'at an unknown time'}"

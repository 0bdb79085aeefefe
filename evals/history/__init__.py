"""The history (docs/spec.md#history-store): every run, gate, promotion and reset as rows in SQLite or PostgreSQL.

The ``record_*`` functions are what the commands call after their work is done. They never
raise and never change a verdict or an exit code: a history that cannot be written is a warning
on stderr, and the returned ``Recorded`` counts the failed writes (``gate`` puts that count into
the report's warnings). Of this package ``evalgate run`` imports at start-up only ``live`` (its
child records the run while it runs: standard library and settings); the commands import the
rest when they record.

Reached only from ``evals.pipeline`` and ``evals.cli``; may import ``evals.store`` and
everything below it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from evals.history.settings import history_url, switched_off
from evals.results import console

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.history.engine import Engine
    from evals.history.live import LiveRecord
    from evals.history.record import Run, Writer
    from evals.results.manifest import SnapshotInfo
    from evals.results.model import Results
    from evals.run.recorder import WrittenRun
    from evals.store.baseline import BaselineStore
    from evals.suite.config import SuiteConfig

__all__ = [
    "Recorded",
    "history_url",
    "open_history",
    "read_history",
    "record_comparison",
    "record_promotion",
    "record_reset",
    "record_run",
    "store_trends",
]


@dataclass
class Recorded:
    """What a ``record_*`` call did: where, how many writes failed and why."""

    url: str | None = None
    failures: int = 0
    messages: list[str] = field(default_factory=list)
    run_ids: dict[str, int] = field(default_factory=dict)
    without_cases: list[str] = field(default_factory=list)  # "candidate", "baseline": recorded as a header

    @property
    def warning(self) -> str | None:
        if not self.failures:
            return None
        return (
            f"history: {self.failures} write(s) failed ({'; '.join(self.messages)[:500]}); "
            "the verdict and exit code do not depend on the history"
        )


@contextmanager
def open_history(url: str, *, migrate: bool = True) -> Iterator[Engine]:
    """An engine on ``url`` with its schema up to date (the migrations; ``evalgate history init``
    applies the same ones)."""
    from evals.history.engine import open_engine

    engine = open_engine(url)
    try:
        if migrate:
            engine.migrate()
        yield engine
    finally:
        engine.close()


T = TypeVar("T")


def read_history(config: SuiteConfig, read: Callable[[Engine], T]) -> T | None:
    """``read(engine)`` on this config's history, or None: no history here (off, or no database
    yet: nothing is created), or one that cannot be read (said as a warning: what reads the
    history — a plan, a smoke draw, a case diff's flaky marks — never fails on it)."""
    url = history_url(config)
    if url is None:
        return None
    from evals.history.engine import sqlite_path

    path = sqlite_path(url)
    if path is not None and not path.exists():
        return None
    try:
        with open_history(url, migrate=False) as engine:
            if engine.version() == 0:
                return None
            return read(engine)
    except Exception as exc:
        from evals.history.url import redact_text, redact_url

        problem = redact_text(str(exc), url)
        console.warning(f"history {redact_url(url)}: could not read it ({problem}); going on without it")
        return None


def _record(config: SuiteConfig | None, what: str, work: Callable[[Writer, Recorded], Any]) -> Recorded:
    url = history_url(config)
    done = Recorded(url)
    if url is None:
        return done
    try:
        from evals.history.record import Writer

        with open_history(url) as engine:
            work(Writer(engine), done)
    except Exception as exc:  # the history never breaks a command
        _failed(done, what, type(exc).__name__, str(exc))
    return done


def _failed(done: Recorded, what: str, kind: str, problem: str) -> None:
    """A write that failed (``kind``: the exception's class), counted and said, the URL's secrets hidden."""
    from evals.history.url import redact_text, redact_url

    assert done.url is not None
    problem = redact_text(problem.strip(), done.url)
    done.failures += 1
    done.messages.append(f"{what}: {kind}: {problem[:300]}")
    console.warning(f"history {redact_url(done.url)}: could not record {what}: {problem}")


def record_run(results: Run, *, config: SuiteConfig | None = None, command: str = "run") -> Recorded:
    """Record a results file (``run``, ``import``, ``merge``)."""

    def work(writer: Writer, done: Recorded) -> None:
        done.run_ids["candidate"] = writer.run(results, recorded_by=command)

    return _record(config, f"the {command} results", work)


def record_written(
    written: WrittenRun, *, config: SuiteConfig | None = None, live: LiveRecord | None = None
) -> Recorded:
    """Record the run ``evalgate run`` just wrote: by ``live``, the child process that recorded it
    while it ran (``evals.history.live``), when it can; else from its cases' JSON (``Writer.written``)."""
    what = "the run results"
    if live is not None:
        answer = live.finish(written.run, written.case_ids)
        if answer.fallback is None:
            done = Recorded(live.url)
            if answer.run_id is not None:
                done.run_ids["candidate"] = answer.run_id
            else:
                _failed(done, what, answer.error or "Error", answer.problem or "")
            return done

    def work(writer: Writer, done: Recorded) -> None:
        done.run_ids["candidate"] = writer.written(written.run, written.case_json, recorded_by="run")

    return _record(config, what, work)


def record_comparison(
    comparison: Comparison,
    candidate: Run,
    baseline: Run | None,
    *,
    config: SuiteConfig | None = None,
    action: str = "gate",
    actor: str | None = None,
    cases: bool = True,
    candidate_sha: str | None = None,
    baseline_snapshot: SnapshotInfo | None = None,
) -> Recorded:
    """Record both runs and the decision (``gate``, ``compare``), and give each regressed slice
    its trend over the last baselines (``comparison.trends``, the report's chart). A failure is
    added to the comparison's warnings, so the report shows it; the verdict is untouched.
    ``cases=False``: a run the history does not hold yet is recorded as its header alone
    (``Recorded.without_cases`` names it); ``evalgate history add`` records its cases later.
    ``candidate_sha``: what the candidate stands for when its run has no commit (``--sha``).
    ``baseline_snapshot``: the store's manifest entry of the baseline a gate used, recorded as
    ``history sync`` records it (once), so the history knows that run became a baseline."""

    def work(writer: Writer, done: Recorded) -> None:
        # The baseline first: two runs that started in the same second (a fast suite) then
        # keep their order in the trend, which breaks such ties by the row's id.
        for role, run in (("baseline", baseline), ("candidate", candidate)):
            if run is None:
                continue
            done.run_ids[role] = writer.run(run, recorded_by=action, cases=cases)
            named = [done.run_ids[r] for r in done.without_cases]  # one run on both sides is named once
            run_id = done.run_ids[role]
            if not cases and len(run.cases) and run_id not in named and not writer.has_cases(run_id):
                done.without_cases.append(role)
        cand, base = done.run_ids["candidate"], done.run_ids.get("baseline")
        writer.gate(
            action,
            suite=candidate.run.suite,
            candidate_run=cand,
            baseline_run=base,
            comparison=comparison,
            candidate_sha=candidate_sha,
            actor=actor,
        )
        if base is not None and baseline_snapshot is not None and baseline is not None:
            from evals.history.sync import record_entry

            try:
                record_entry(writer, baseline.run.suite, base, baseline_snapshot)
            except Exception:  # a concurrent gate or sync wrote the same entry first (its own transaction)
                if not writer.engine.query(
                    "SELECT 1 FROM gates WHERE snapshot_digest = ?", (baseline_snapshot.digest,)
                ):
                    raise
        if comparison.regressed:
            from evals.history.trends import regressed_trends

            comparison.trends = regressed_trends(writer.engine, comparison, cand)

    done = _record(config, f"the {action}", work)
    if done.warning and done.warning not in comparison.warnings:
        comparison.warnings.append(done.warning)
    return done


def store_trends(
    comparison: Comparison, candidate: Run, store: BaselineStore, *, config: SuiteConfig | None = None, last: int = 8
) -> None:
    """The regressed slices' trends when there is no history to read them from: in GitHub Actions
    without a history URL, the baseline store's snapshots are the default branch's history (docs/spec.md#history-sync),
    so its ``last`` newest are loaded into a throwaway SQLite history, with the candidate. Only when a slice regressed,
    never when the user switched the history off; like every ``record_*``, it never raises: a trend that cannot be built
    is left out, with a warning."""
    regressed_slice = any(u.slice_key is not None for u in comparison.regressed)
    if comparison.trends or not regressed_slice or history_url(config) is not None or switched_off(config):
        return
    try:
        from evals.history.record import Writer
        from evals.history.sync import sync_store
        from evals.history.trends import regressed_trends

        with tempfile.TemporaryDirectory(prefix="evalgate-trend-") as tmp, open_history(f"{tmp}/h.sqlite") as engine:
            writer = Writer(engine)
            sync_store(writer, store, last=last)
            run_id = writer.run(candidate, recorded_by="gate")
            comparison.trends = regressed_trends(engine, comparison, run_id, last=last)
    except Exception as exc:  # a chart is never worth a failed gate
        console.warning(f"no trend for the regressed slices: {type(exc).__name__}: {exc}")


def record_promotion(
    candidate: Results,
    snapshot: SnapshotInfo | None,
    *,
    config: SuiteConfig | None = None,
    comparison: Comparison | None = None,
) -> Recorded:
    """Record a promotion (or a seed) that the store accepted: ``snapshot`` is its manifest entry."""
    if snapshot is None:
        return Recorded(history_url(config))
    from evals.history.sync import action_of

    action = action_of(snapshot.verdict)

    def work(writer: Writer, done: Recorded) -> None:
        run_id = writer.run(candidate, recorded_by=action)
        done.run_ids["candidate"] = run_id
        writer.gate(
            action,
            suite=candidate.run.suite,
            candidate_run=run_id,
            comparison=comparison,
            candidate_sha=snapshot.sha,
            verdict=snapshot.verdict,
            reason=snapshot.reason,
            actor=snapshot.actor,
            blessed=snapshot.blessed,
            snapshot=snapshot,
            created_at=snapshot.created_at,
        )

    return _record(config, f"the {action}", work)


def record_reset(
    candidate: Results,
    snapshot: SnapshotInfo | None,
    comparison: Comparison | None,
    baseline: Run | None,
    *,
    config: SuiteConfig | None = None,
) -> Recorded:
    """Record a reset: the blessed run, with its reason and actor, and what it was compared with."""
    if snapshot is None:
        return Recorded(history_url(config))

    def work(writer: Writer, done: Recorded) -> None:
        run_id = writer.run(candidate, recorded_by="reset")
        base = writer.run(baseline, recorded_by="reset") if baseline is not None else None
        writer.gate(
            "reset",
            suite=candidate.run.suite,
            candidate_run=run_id,
            baseline_run=base,
            comparison=comparison,
            candidate_sha=snapshot.sha,
            verdict="reset",
            reason=comparison.reason if comparison else None,
            actor=snapshot.actor,
            reset_reason=snapshot.reason,
            blessed=True,
            snapshot=snapshot,
            created_at=snapshot.created_at,
        )

    return _record(config, "the reset", work)

"""Writing runs, gates and store actions into the history (docs/spec.md#history-writes).

A run is identified by a digest of its content (header, case ids, per-attempt outcome, output
hash and latency), so the same run recorded twice — by ``run`` and then by the ``gate`` that
started it, or by ``gate`` and later by ``history sync`` from the store's snapshot — is one row.
Each run is written in one transaction with its cases, slices, attempts and trace events (bulk:
``executemany`` on SQLite, ``COPY`` on PostgreSQL). Texts that came from a case or a target are
masked (``evals.results.masking``) unless evalgate made the file (its runner and importers mask everything
they write, ``run.evalgate_version`` says so): masking is most of the cost of writing a large
trace, and doing it twice finds nothing new. Target parameters are always masked."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evals.common.gcpause import gc_paused
from evals.compare.lazyload import CaseList, LazyResults
from evals.history.engine import Engine
from evals.history.rows import (
    ATTEMPT_COLUMNS,
    CASE_COLUMNS,
    ERROR_CHARS,
    EVENT_COLUMNS,
    SLICE_COLUMNS,
    LeanRows,
    attempt_row,
    bit,
    case_rows,
    case_set,
    event_rows,
    plain,
    run_digest,
    slice_rows,
    text_of,
)
from evals.results.masking import mask_secrets, mask_text
from evals.results.model import SCHEMA_VERSION

if TYPE_CHECKING:
    from evals.compare.looks import EvidenceLook
    from evals.compare.model import Comparison
    from evals.results.manifest import SnapshotInfo
    from evals.results.model import CaseResult, ResultsView, RunInfo

    Run = ResultsView

RUN_COLUMNS = (
    "digest", "suite", "git_sha", "git_ref", "event", "pr_number", "pr_title", "config_hash", "target_kind",
    "model", "params", "status", "total_cases", "completed_cases", "attempts_per_case", "subset", "shard",
    "message", "source_format", "started_at", "ended_at", "recorded_at", "recorded_by", "evalgate_version",
    "git_dirty", "case_set",
)  # fmt: skip
GATE_COLUMNS = (
    "action", "suite", "candidate_run_id", "baseline_run_id", "candidate_sha", "baseline_sha", "verdict", "reason",
    "exit_code", "actor", "reset_reason", "blessed", "drift_ok", "event", "pr_number", "snapshot_digest",
    "created_at",
)  # fmt: skip
UNIT_COLUMNS = (
    "gate_id", "unit", "slice_key", "slice_value", "metric", "direction", "baseline", "candidate", "delta",
    "tolerance", "ci_low", "ci_high", "p_value", "p_adjusted", "mde", "n", "blocking", "verdict", "method",
)  # fmt: skip


LOOK_COLUMNS = (
    "gate_id", "look", "units", "cases", "attempts", "cost_usd", "outcome", "strongest_unit", "strongest_p_value",
    "strongest_level",
)  # fmt: skip


def _look_row(
    gate_id: int, look: EvidenceLook
) -> tuple[int, int, str, int, int, float | None, str, str | None, float | None, float | None]:
    """The look with its strongest tested unit: the smallest p against what it needed alone."""
    tested = [v for v in look.values if v.p_value is not None and v.level]
    top = min(tested, key=lambda v: v.p_value / v.level if v.p_value is not None and v.level else 1.0, default=None)
    unit = f"{top.metric} on {top.unit}" if top else None
    return (
        gate_id, look.look, ",".join(look.units), look.cases, look.attempts, look.cost_usd, look.outcome,
        unit, top.p_value if top else None, top.level if top else None,
    )  # fmt: skip


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Context:
    """Where a record comes from: the GitHub event and pull request, when there is one."""

    event: str | None = None
    pr_number: int | None = None
    pr_title: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Context:
        event = env.get("GITHUB_EVENT_NAME") or ("local" if env.get("GITHUB_ACTIONS") != "true" else None)
        number = title = None
        path = env.get("GITHUB_EVENT_PATH")
        if path and event and event.startswith("pull_request"):
            try:
                with open(path, encoding="utf-8") as handle:
                    pr = json.load(handle).get("pull_request") or {}
                number = pr.get("number") if isinstance(pr.get("number"), int) else None
                title = mask_text(str(pr["title"]))[:300] if pr.get("title") else None
            except (OSError, ValueError, AttributeError):
                pass
        return cls(event, number, title)


class _RecordedAlready(Exception):
    """The run's digest is in the history already: its transaction is rolled back."""

    def __init__(self, results: LazyResults):
        self.results = results


class Writer:
    """Records into one open engine; every method is one transaction."""

    def __init__(self, engine: Engine, context: Context | None = None):
        self.engine = engine
        self.context = context or Context.from_env()

    def run_id(self, digest: str) -> int | None:
        rows = self.engine.query("SELECT id FROM runs WHERE digest = ?", (digest,))
        return rows[0][0] if rows else None

    def has_cases(self, run_id: int) -> bool:
        return bool(self.engine.query("SELECT 1 FROM cases WHERE run_id = ? LIMIT 1", (run_id,)))

    def run(self, results: Run, *, recorded_by: str, digest: str | None = None, cases: bool = True) -> int:
        """The run's id, recording it (with every case, attempt and event) unless it is there
        already. ``cases=False`` records a new run's header alone (``compare`` of files the
        history has not seen: the decision needs a run to point at, not 400,000 rows); a later
        full record of the same run adds its cases to that row."""
        lean = results.cases if isinstance(results.cases, CaseList) else None
        listed = [] if lean is not None else list(results.cases)
        digest = digest or run_digest(results, None if lean is not None else listed)
        existing = self.run_id(digest)
        if existing is not None:
            if cases and len(results.cases) and not self.has_cases(existing):
                with self.engine.transaction():
                    if not self.has_cases(existing):  # checked again under the write lock
                        self._cases(existing, results, lean, listed)
            return existing
        identity = (lean.ids, lean.hashes) if lean is not None else ([c.id for c in listed], [c.hash for c in listed])
        with self.engine.transaction():
            run_id = self._header(results.run, digest, case_set(*identity), recorded_by)
            if cases:
                self._cases(run_id, results, lean, listed)
        return run_id

    def written(self, info: RunInfo, case_json: list[bytes], *, recorded_by: str) -> int:
        """:meth:`run` of a run evalgate just wrote (``evalgate run``: ``info`` and each case's
        JSON, as the results file holds them), in one pass: each chunk of cases is parsed once, for
        its rows and for the columns the digest reads, and its rows go in as it comes (a second
        parse was a third of the record's CPU, docs/performance.md). The digest needs every case:
        the header is written first under a placeholder and named at the end, in the same
        transaction; a run recorded already is rolled back and :meth:`run` does what it does. The
        garbage collector waits meanwhile (``evals.common.gcpause``): nothing made here is a cycle."""
        mask = not info.evalgate_version
        try:
            with gc_paused(), self.engine.transaction():
                placeholder = f"pending:{uuid.uuid4().hex}"  # unique, as digests are
                run_id = self._header(info, placeholder, None, recorded_by)

                def rows(first: int, parsed: list[dict[str, Any]], chunk: CaseList) -> None:
                    LeanRows(run_id, chunk, mask, offset=first).insert(self.engine, parsed)

                cases = CaseList.from_json(case_json, chunk=LeanRows.CHUNK, each=rows)
                results = LazyResults(SCHEMA_VERSION, info, cases)
                digest = run_digest(results)
                if self.run_id(digest) is not None:
                    raise _RecordedAlready(results)
                self.engine.execute(
                    "UPDATE runs SET digest = ?, case_set = ? WHERE id = ?",
                    (digest, case_set(cases.ids, cases.hashes), run_id),
                )
        except _RecordedAlready as already:
            return self.run(already.results, recorded_by=recorded_by)
        return run_id

    def staged(
        self, info: RunInfo, digest: str, identity: str, move: Callable[[int], None], *, recorded_by: str
    ) -> int | None:
        """:meth:`written` of a run whose rows were made while it ran (``evals.history.live``):
        its header under ``digest``, then ``move(run_id)`` puts its rows in, in one transaction.
        None, with nothing written, when the digest is there already (the caller then records the
        run as :meth:`written` does, which knows what to do with it)."""
        with self.engine.transaction():
            if self.run_id(digest) is not None:  # checked under the write lock
                return None
            run_id = self._header(info, digest, identity, recorded_by)
            move(run_id)
        return run_id

    def _header(self, info: RunInfo, digest: str, identity: str | None, recorded_by: str) -> int:
        """The run's row in ``runs``, inside the caller's transaction; its id."""
        target = info.target
        ctx = self.context
        header = (
            digest, info.suite, info.git_sha, info.git_ref, ctx.event, ctx.pr_number, ctx.pr_title,
            info.config_hash, target.kind if target else None, target.model if target else None,
            json.dumps(mask_secrets(target.params), sort_keys=True, default=str) if target else None,
            info.status, info.total_cases, info.completed_cases, info.attempts_per_case, info.subset, info.shard,
            text_of(info.message, ERROR_CHARS), info.source.get("format") if info.source else None,
            info.started_at, info.ended_at, now_iso(), recorded_by, info.evalgate_version, bit(info.git_dirty),
            identity,
        )  # fmt: skip
        marks = ", ".join("?" * len(RUN_COLUMNS))
        run_id = self.engine.execute(
            f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({marks}) RETURNING id", header
        )
        assert run_id is not None
        return run_id

    def _cases(self, run_id: int, results: Run, lean: CaseList | None, cases: list[CaseResult]) -> None:
        """The run's cases, slices, attempts and events, inside the caller's transaction."""
        mask = not results.run.evalgate_version
        if lean is not None:
            LeanRows(run_id, lean, mask).insert(self.engine)
            return
        self.engine.insert_rows("cases", CASE_COLUMNS, case_rows(run_id, cases, mask))
        self.engine.insert_rows("case_slices", SLICE_COLUMNS, slice_rows(run_id, (c.slices for c in cases)))
        self.engine.insert_rows(
            "attempts",
            ATTEMPT_COLUMNS,
            (attempt_row(run_id, no, i, a, mask) for no, c in enumerate(cases) for i, a in enumerate(c.attempts)),
        )
        self.engine.insert_rows(
            "events",
            EVENT_COLUMNS,
            (
                row
                for no, c in enumerate(cases)
                for i, a in enumerate(c.attempts)
                if a.trace
                for row in event_rows(run_id, no, i, a.trace, mask_text if mask else None)
            ),
        )

    def gate(
        self,
        action: str,
        *,
        suite: str,
        candidate_run: int,
        baseline_run: int | None = None,
        comparison: Comparison | None = None,
        candidate_sha: str | None = None,
        verdict: str | None = None,
        reason: str | None = None,
        actor: str | None = None,
        reset_reason: str | None = None,
        blessed: bool = False,
        snapshot: SnapshotInfo | None = None,
        created_at: str | None = None,
    ) -> int | None:
        """One row of ``gates`` (and the comparison's unit results). None when the snapshot's
        action is recorded already (``history sync`` run twice, or after the gate that promoted it)."""
        if snapshot is not None and self.engine.query(
            "SELECT id FROM gates WHERE action = ? AND snapshot_digest = ?", (action, snapshot.digest)
        ):
            return None
        c = comparison
        baseline_sha = None
        if c is not None and c.baseline is not None:
            baseline_sha = c.baseline.snapshot.sha if c.baseline.snapshot else None
            baseline_sha = baseline_sha or (c.baseline_run.git_sha if c.baseline_run else None)
        row = (
            action, suite, candidate_run, baseline_run,
            candidate_sha or (c.candidate_run.git_sha if c else None), baseline_sha,
            verdict or (c.verdict if c else None), text_of(reason or (c.reason if c else None), ERROR_CHARS),
            c.exit_code if c else None, text_of(actor, 200), text_of(reset_reason, ERROR_CHARS), int(blessed),
            bit(c.drift_ok) if c else None, self.context.event, self.context.pr_number,
            snapshot.digest if snapshot else None, created_at or now_iso(),
        )  # fmt: skip
        marks = ", ".join("?" * len(GATE_COLUMNS))
        with self.engine.transaction():
            gate_id = self.engine.execute(
                f"INSERT INTO gates ({', '.join(GATE_COLUMNS)}) VALUES ({marks}) RETURNING id", row
            )
            assert gate_id is not None
            if c is not None and c.units:
                self.engine.insert_rows(
                    "unit_results",
                    UNIT_COLUMNS,
                    ((gate_id, *(plain(getattr(u, name)) for name in UNIT_COLUMNS[1:])) for u in c.units),
                )
            if c is not None and c.more_evidence is not None and c.more_evidence.looks:
                self.engine.insert_rows(
                    "gate_looks", LOOK_COLUMNS, (_look_row(gate_id, look) for look in c.more_evidence.looks)
                )
        return gate_id

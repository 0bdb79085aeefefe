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

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count, repeat
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import TypeAdapter

from evals.common.gcpause import gc_paused
from evals.compare.lazyload import CaseList, LazyResults
from evals.history.engine import Engine
from evals.results.masking import mask_secrets, mask_text
from evals.results.model import SCHEMA_VERSION
from evals.results.trace import TraceEvent, tool_pairs

if TYPE_CHECKING:
    from evals.compare.looks import EvidenceLook
    from evals.compare.model import Comparison
    from evals.results.manifest import SnapshotInfo
    from evals.results.model import Attempt, CaseResult, ResultsView, RunInfo

    Run = ResultsView

EXCERPT_CHARS = 1000
ERROR_CHARS = 2000

RUN_COLUMNS = (
    "digest", "suite", "git_sha", "git_ref", "event", "pr_number", "pr_title", "config_hash", "target_kind",
    "model", "params", "status", "total_cases", "completed_cases", "attempts_per_case", "subset", "shard",
    "message", "source_format", "started_at", "ended_at", "recorded_at", "recorded_by", "evalgate_version",
    "git_dirty", "case_set",
)  # fmt: skip
CASE_COLUMNS = ("run_id", "case_no", "case_id", "case_hash", "input_excerpt", "expected_excerpt")
SLICE_COLUMNS = ("run_id", "case_no", "slice_key", "slice_value")
ATTEMPT_COLUMNS = (
    "run_id", "case_no", "attempt_no", "passed", "score", "scores", "format_valid", "latency_ms", "tokens_in",
    "tokens_out", "cost_usd", "error_kind", "error_message", "retries", "output_excerpt", "output_sha256",
    "output_truncated", "cached",
)  # fmt: skip
EVENT_COLUMNS = (
    "run_id", "case_no", "attempt_no", "seq", "kind", "name", "content", "sha256", "truncated", "ts",
    "result_seq", "result_kind",
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


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _text(value: Any, limit: int, mask: bool = True) -> str | None:
    text = _as_text(value)
    if text is None:
        return None
    return (mask_text(text) if mask else text)[:limit]


def _texts(values: list[Any], limit: int, mask: bool) -> list[str | None]:
    """:func:`_text` of each of ``values``: a column of rows at a time."""
    texts = [_as_text(v) for v in values]
    return [None if t is None else (mask_text(t) if mask else t)[:limit] for t in texts]


def run_digest(results: Run, cases: Iterable[CaseResult] | None = None) -> str:
    """What identifies a run's content (see the module docstring). ``cases``: the run's cases
    already read (a lean run builds each case when it is read)."""
    h = hashlib.sha256(results.run.model_dump_json().encode("utf-8"))
    if cases is None and isinstance(results.cases, CaseList):
        _lean_digest(h, results.cases)
        return "sha256:" + h.hexdigest()
    for case in results.cases if cases is None else cases:
        h.update(f"\x00{case.id}\x01{case.hash or ''}".encode())
        for a in case.attempts:
            kind = a.error.kind if a.error else ""
            h.update(f"\x02{a.passed}\x03{a.score}\x03{a.output_sha256}\x03{kind}\x03{a.latency_ms}".encode())
    return "sha256:" + h.hexdigest()


def _bit(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _plain(value: Any) -> Any:
    """Booleans as 0/1: both engines store flags as integers."""
    return int(value) if isinstance(value, bool) else value


def _attempt_row(run_id: int, case_no: int, attempt_no: int, a: Attempt, mask: bool) -> tuple[Any, ...]:
    format_valid = a.scores.get("format_valid")
    return (
        run_id,
        case_no,
        attempt_no,
        _bit(a.passed),
        a.score,
        json.dumps(a.scores, sort_keys=True) if a.scores else None,
        float(format_valid) if isinstance(format_valid, int | float) else None,
        a.latency_ms,
        a.tokens_in,
        a.tokens_out,
        a.cost_usd,
        a.error.kind if a.error else None,
        _text(a.error.message, ERROR_CHARS, mask) if a.error else None,
        a.retries,
        _text(a.output, 8192, mask),
        a.output_sha256,
        int(a.output_truncated),
        int(a.cached),
    )


def _event_rows(
    run_id: int, case_no: int, attempt_no: int, events: list[TraceEvent], mask: Callable[[str], str] | None
) -> list[tuple[Any, ...]]:
    """The attempt's events as rows; a tool call names the seq and kind of its answer. The
    hottest loop of a large record (hundreds of thousands of events): one pass per attempt."""
    fields = [(e.seq, e.kind, e.name, e.content, e.sha256, e.truncated, e.ts) for e in events]
    pairs = tool_pairs([f[:3] for f in fields])
    key = (run_id, case_no, attempt_no)
    rows = []
    for seq, kind, name, content, sha, truncated, ts in fields:
        if mask is not None and content is not None:
            content = mask(content)
        answer = pairs.get(seq) if kind == "tool_call" else None
        answer_kind = None if answer is None else fields[answer][1]  # seq is the position (validated)
        rows.append((*key, seq, kind, name, content, sha, int(truncated), ts, answer, answer_kind))
    return rows


def _case_rows(run_id: int, cases: Iterable[Any], mask: bool, first: int = 0) -> Iterator[tuple[Any, ...]]:
    """Rows of ``cases`` (models, or a lean run's JSON objects), numbered from ``first``."""
    for no, c in enumerate(cases, first):
        if isinstance(c, dict):
            case_id, case_hash, given, expected = c["id"], c.get("hash"), c.get("input"), c.get("expected")
        else:
            case_id, case_hash, given, expected = c.id, c.hash, c.input, c.expected
        yield run_id, no, case_id, case_hash, _text(given, EXCERPT_CHARS, mask), _text(expected, EXCERPT_CHARS, mask)


def _slice_rows(run_id: int, case_slices: Iterable[Mapping[str, Any]], first: int = 0) -> Iterator[tuple[Any, ...]]:
    return ((run_id, no, k, str(v)) for no, slices in enumerate(case_slices, first) for k, v in sorted(slices.items()))


def _floats(values: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in values.tolist()]  # NaN (absent) → None


def _ints(values: np.ndarray) -> list[int | None]:
    return [None if v != v else int(v) for v in values.tolist()]


_EVENTS = TypeAdapter(list[TraceEvent])
_BOOL = TypeAdapter(bool)


def case_set(ids: Iterable[str], hashes: Iterable[str | None]) -> str:
    """What identifies a run's case set: two runs of the same cases, each with the same input and
    expected value, have the same one (docs/spec.md#repeated-runs), whatever order they ran in."""
    pairs = sorted(f"{case_id}\x01{case_hash or ''}" for case_id, case_hash in zip(ids, hashes, strict=True))
    return "sha256:" + hashlib.sha256("\x00".join(pairs).encode()).hexdigest()


def _lean_digest(h: Any, cases: CaseList) -> None:
    """:func:`run_digest`'s updates for a lean run, from its columns alone: the very bytes the
    models would give (numbers read as the models' floats, verdicts as their bools)."""
    h.update("".join(digest_parts(cases)).encode())


def digest_parts(cases: CaseList) -> list[str]:
    """Each case's part of :func:`run_digest` (after the header's), in the order of ``cases``: the
    digest of a run is its header's and then these in the file's order, so the parts of cases read
    in any order (``evals.history.live``) make the same digest."""
    at = cases.attempts
    passed = [None if v != v else v == 1.0 for v in at.passed.tolist()]
    score, latency, kinds = _floats(at.score), _floats(at.latency), at.error_kind.tolist()
    bounds = np.searchsorted(at.case, np.arange(len(cases) + 1)).tolist()  # case no's attempts: bounds[no]:bounds[no+1]
    attempts = [
        f"\x02{p}\x03{s}\x03{sha}\x03{kind or ''}\x03{ms}"
        for p, s, sha, kind, ms in zip(passed, score, cases.output_sha256, kinds, latency, strict=True)
    ]
    return [
        f"\x00{case_id}\x01{case_hash or ''}" + "".join(attempts[bounds[no] : bounds[no + 1]])
        for no, (case_id, case_hash) in enumerate(zip(cases.ids, cases.hashes, strict=True))
    ]


class _LeanRows:
    """A lean run's rows (``evals.compare.lazyload``), built a column at a time: numbers from its attempt
    columns, texts from each case's JSON (read once, a chunk of cases at a time), no model built;
    trace events validated only where an attempt has a trace."""

    # Cases parsed at a time: a chunk of 1,024 parsed cases is ~4 MB less of `evalgate run`'s peak
    # RSS than one of 4,096 (10,000 one-step cases: 113 vs 117 MB), for the same CPU.
    CHUNK = 1024

    def __init__(self, run_id: int, cases: CaseList, mask: bool, offset: int = 0):
        """``offset``: the run's number of ``cases``' first case (they are a chunk of the run)."""
        self.run_id, self.cases, self.mask, self.offset = run_id, cases, mask, offset
        at = cases.attempts
        first_attempt = np.searchsorted(at.case, np.arange(len(cases)))
        self.case_no = (at.case + offset).tolist()
        self.attempt_no = (np.arange(at.case.size) - first_attempt[at.case]).tolist()
        passed = [None if v != v else int(v == 1.0) for v in at.passed.tolist()]
        self.numbers = (passed, _floats(at.score))  # the attempt columns before `scores`
        self.usage = (_floats(at.latency), _ints(at.tokens_in), _ints(at.tokens_out), _floats(at.cost))
        self.kinds, self.retries = at.error_kind.tolist(), at.retries.tolist()

    def insert(self, engine: Engine, parsed: list[dict[str, Any]] | None = None, into: str = "") -> None:
        """The rows, into ``engine``; ``parsed``: the cases' JSON objects when the caller has them
        parsed already (else they are parsed here, a chunk at a time). ``into``: the schema of the
        tables (``"stage."``: ``evals.history.live``'s staging copies; the history's own by default)."""
        run_id, cases, mask = self.run_id, self.cases, self.mask
        traced: list[tuple[int, int, list[Any]]] = []
        first = k = 0  # the chunk's first case and first attempt
        for chunk in cases.raw(self.CHUNK) if parsed is None else [parsed]:
            given = _texts([c.get("input") for c in chunk], EXCERPT_CHARS, mask)
            expected = _texts([c.get("expected") for c in chunk], EXCERPT_CHARS, mask)
            end, no = first + len(chunk), self.offset + first
            ids, hashes = cases.ids[first:end], cases.hashes[first:end]
            engine.insert_rows(
                f"{into}cases", CASE_COLUMNS, zip(repeat(run_id), count(no), ids, hashes, given, expected)
            )
            slices = cases.case_slices[first:end]
            engine.insert_rows(f"{into}case_slices", SLICE_COLUMNS, _slice_rows(run_id, slices, no))
            attempts = [a for c in chunk for a in c.get("attempts", ())]
            engine.insert_rows(f"{into}attempts", ATTEMPT_COLUMNS, self._attempt_rows(k, attempts, traced))
            first, k = end, k + len(attempts)
        events = _EVENTS.validate_python
        engine.insert_rows(
            f"{into}events",
            EVENT_COLUMNS,
            (
                row
                for no, i, trace in traced
                for row in _event_rows(run_id, no, i, events(trace), mask_text if mask else None)
            ),
        )

    def _attempt_rows(
        self, k: int, attempts: list[dict[str, Any]], traced: list[tuple[int, int, list[Any]]]
    ) -> Iterator[tuple[Any, ...]]:
        """Attempt rows as :func:`_attempt_row` makes them, of ``attempts`` (JSON objects; the
        first is attempt ``k`` of the run); notes into ``traced`` attempts with a trace."""
        end, mask = k + len(attempts), self.mask
        case_no, attempt_no = self.case_no[k:end], self.attempt_no[k:end]
        traced += [(case_no[j], attempt_no[j], a["trace"]) for j, a in enumerate(attempts) if a.get("trace")]
        scores = [{n: float(v) for n, v in s.items()} if s else None for s in (a.get("scores") for a in attempts)]
        truncated = (a.get("output_truncated", False) for a in attempts)
        cached = (a.get("cached", False) for a in attempts)
        return zip(
            repeat(self.run_id, len(attempts)),
            case_no,
            attempt_no,
            *(column[k:end] for column in self.numbers),
            [json.dumps(s, sort_keys=True) if s else None for s in scores],
            [s.get("format_valid") if s else None for s in scores],
            *(column[k:end] for column in self.usage),
            self.kinds[k:end],
            _texts([(a.get("error") or {}).get("message") for a in attempts], ERROR_CHARS, mask),
            self.retries[k:end],
            _texts([a.get("output") for a in attempts], 8192, mask),
            [a.get("output_sha256") for a in attempts],
            [int(t if isinstance(t, bool) else _BOOL.validate_python(t)) for t in truncated],
            [int(c if isinstance(c, bool) else _BOOL.validate_python(c)) for c in cached],
            strict=True,
        )


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
                    _LeanRows(run_id, chunk, mask, offset=first).insert(self.engine, parsed)

                cases = CaseList.from_json(case_json, chunk=_LeanRows.CHUNK, each=rows)
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
            _text(info.message, ERROR_CHARS), info.source.get("format") if info.source else None,
            info.started_at, info.ended_at, now_iso(), recorded_by, info.evalgate_version, _bit(info.git_dirty),
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
            _LeanRows(run_id, lean, mask).insert(self.engine)
            return
        self.engine.insert_rows("cases", CASE_COLUMNS, _case_rows(run_id, cases, mask))
        self.engine.insert_rows("case_slices", SLICE_COLUMNS, _slice_rows(run_id, (c.slices for c in cases)))
        self.engine.insert_rows(
            "attempts",
            ATTEMPT_COLUMNS,
            (_attempt_row(run_id, no, i, a, mask) for no, c in enumerate(cases) for i, a in enumerate(c.attempts)),
        )
        self.engine.insert_rows(
            "events",
            EVENT_COLUMNS,
            (
                row
                for no, c in enumerate(cases)
                for i, a in enumerate(c.attempts)
                if a.trace
                for row in _event_rows(run_id, no, i, a.trace, mask_text if mask else None)
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
            verdict or (c.verdict if c else None), _text(reason or (c.reason if c else None), ERROR_CHARS),
            c.exit_code if c else None, _text(actor, 200), _text(reset_reason, ERROR_CHARS), int(blessed),
            _bit(c.drift_ok) if c else None, self.context.event, self.context.pr_number,
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
                    ((gate_id, *(_plain(getattr(u, name)) for name in UNIT_COLUMNS[1:])) for u in c.units),
                )
            if c is not None and c.more_evidence is not None and c.more_evidence.looks:
                self.engine.insert_rows(
                    "gate_looks", LOOK_COLUMNS, (_look_row(gate_id, look) for look in c.more_evidence.looks)
                )
        return gate_id

"""The rows a run becomes in the history (docs/spec.md#history-writes) and the digest that names it:
from models (``attempt_row``, ``event_rows``, ...) or, for a lean run, a column at a time
(``LeanRows``), with the very values either way. ``evals.history.record`` writes them;
``evals.history.live`` makes them while a run runs.

A run is identified by a digest of its content (header, case ids, per-attempt outcome, output hash
and latency): ``run_digest``, whose per-case parts ``digest_parts`` gives for a lean run. Texts that
came from a case or a target are masked unless evalgate made the file (``text_of``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import count, repeat
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import TypeAdapter

from evals.compare.lazyload import CaseList
from evals.history.engine import Engine
from evals.results.masking import mask_text
from evals.results.trace import TraceEvent, tool_pairs

if TYPE_CHECKING:
    from evals.results.model import Attempt, CaseResult, ResultsView

    Run = ResultsView

EXCERPT_CHARS = 1000
ERROR_CHARS = 2000

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


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def text_of(value: Any, limit: int, mask: bool = True) -> str | None:
    text = _as_text(value)
    if text is None:
        return None
    return (mask_text(text) if mask else text)[:limit]


def _texts(values: list[Any], limit: int, mask: bool) -> list[str | None]:
    """:func:`text_of` of each of ``values``: a column of rows at a time."""
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


def bit(value: bool | None) -> int | None:
    return None if value is None else int(value)


def plain(value: Any) -> Any:
    """Booleans as 0/1: both engines store flags as integers."""
    return int(value) if isinstance(value, bool) else value


def attempt_row(run_id: int, case_no: int, attempt_no: int, a: Attempt, mask: bool) -> tuple[Any, ...]:
    format_valid = a.scores.get("format_valid")
    return (
        run_id,
        case_no,
        attempt_no,
        bit(a.passed),
        a.score,
        json.dumps(a.scores, sort_keys=True) if a.scores else None,
        float(format_valid) if isinstance(format_valid, int | float) else None,
        a.latency_ms,
        a.tokens_in,
        a.tokens_out,
        a.cost_usd,
        a.error.kind if a.error else None,
        text_of(a.error.message, ERROR_CHARS, mask) if a.error else None,
        a.retries,
        text_of(a.output, 8192, mask),
        a.output_sha256,
        int(a.output_truncated),
        int(a.cached),
    )


def event_rows(
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


def case_rows(run_id: int, cases: Iterable[Any], mask: bool, first: int = 0) -> Iterator[tuple[Any, ...]]:
    """Rows of ``cases`` (models, or a lean run's JSON objects), numbered from ``first``."""
    for no, c in enumerate(cases, first):
        if isinstance(c, dict):
            case_id, case_hash, given, expected = c["id"], c.get("hash"), c.get("input"), c.get("expected")
        else:
            case_id, case_hash, given, expected = c.id, c.hash, c.input, c.expected
        yield (
            run_id,
            no,
            case_id,
            case_hash,
            text_of(given, EXCERPT_CHARS, mask),
            text_of(expected, EXCERPT_CHARS, mask),
        )


def slice_rows(
    run_id: int, case_slices: Iterable[Mapping[str, Any]], numbers: Iterable[int] | None = None
) -> Iterator[tuple[Any, ...]]:
    """``numbers``: each case's number (0, 1, 2, ... by default)."""
    numbered = zip(count() if numbers is None else numbers, case_slices, strict=False)  # count() never ends
    return ((run_id, no, k, str(v)) for no, slices in numbered for k, v in sorted(slices.items()))


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


class LeanRows:
    """A lean run's rows (``evals.compare.lazyload``), built a column at a time: numbers from its attempt
    columns, texts from each case's JSON (read once, a chunk of cases at a time), no model built;
    trace events validated only where an attempt has a trace."""

    # Cases parsed at a time: a chunk of 1,024 parsed cases is ~4 MB less of `evalgate run`'s peak
    # RSS than one of 4,096 (10,000 one-step cases: 113 vs 117 MB), for the same CPU.
    CHUNK = 1024

    def __init__(self, run_id: int, cases: CaseList, mask: bool, offset: int = 0, numbers: Sequence[int] | None = None):
        """``offset``: the run's number of ``cases``' first case (they are a chunk of the run); or
        ``numbers``: each case's (``evals.history.live`` stages cases under their numbers in the
        file as they come, in any order)."""
        self.run_id, self.cases, self.mask = run_id, cases, mask
        self.nos = range(offset, offset + len(cases)) if numbers is None else numbers
        at = cases.attempts
        first_attempt = np.searchsorted(at.case, np.arange(len(cases)))
        self.case_no = np.asarray(self.nos, dtype=np.int64)[at.case].tolist()
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
            end = first + len(chunk)
            ids, hashes, nos = cases.ids[first:end], cases.hashes[first:end], self.nos[first:end]
            engine.insert_rows(f"{into}cases", CASE_COLUMNS, zip(repeat(run_id), nos, ids, hashes, given, expected))
            slices = cases.case_slices[first:end]
            engine.insert_rows(f"{into}case_slices", SLICE_COLUMNS, slice_rows(run_id, slices, nos))
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
                for row in event_rows(run_id, no, i, events(trace), mask_text if mask else None)
            ),
        )

    def _attempt_rows(
        self, k: int, attempts: list[dict[str, Any]], traced: list[tuple[int, int, list[Any]]]
    ) -> Iterator[tuple[Any, ...]]:
        """Attempt rows as :func:`attempt_row` makes them, of ``attempts`` (JSON objects; the
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

"""What a run writes (docs/spec.md#running): the results file as cases finish (``Recorder``), and the
run just written as ``evalgate run`` reads it after (``WrittenRun``: its cases kept as their JSON,
made into models only if something asks, and what its summary reads of them)."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Protocol

from evals.results.files import parse_results, write_results_bytes
from evals.results.model import (
    SCHEMA_VERSION,
    CaseResult,
    Results,
    RunInfo,
)
from evals.results.summary import SummaryCase, SummaryView
from evals.suite.cases import Case

WRITE_EVERY_S = 2.0


class RunSink(Protocol):
    """Where a run's record goes as it is made, besides the results file: the history's live
    record (``evals.history.live.LiveRecord``)."""

    def order(self, ids: list[str]) -> None:
        """The run's case ids in the file's order, before any case."""

    def add(self, data: bytes) -> None:
        """A case's JSON as the file holds it, as it finishes (the kept ones of a resume first)."""

    def end(self, run: RunInfo, ids: list[str]) -> None:
        """The run's final header and the ids of the cases written, in the file's order."""


class Recorder:
    """The results file as it grows; ``write`` always states the true status and counts.

    Each case is serialised once, when it finishes, and kept only as those bytes (the models are
    dropped: with traces, holding them took the run past 120 MB at 10,000 cases). A write joins
    the pieces with the run's header into the very bytes ``dump_results`` would make of the whole
    (a test holds them equal). Dumping the whole file each time instead took ~0.1 s at 10,000
    cases, and a write blocks the event loop: every in-flight request waited for it."""

    def __init__(
        self,
        output: Path,
        cases: list[Case],
        run: RunInfo,
        kept: dict[str, CaseResult],
        sink: RunSink | None = None,
    ):
        """``sink``: told the cases' order now, each case as it is kept (the kept ones of a
        resume first), and the run's end (``end``)."""
        self.output = output
        self.sink = sink
        self.order = [c.id for c in cases]
        if sink is not None:
            sink.order(self.order)
        self.run = run
        self.done: dict[str, bool] = {}  # case id → complete
        self.errored: dict[str, bool] = {}  # case id → an attempt ended in an error
        self._json: dict[str, bytes] = {}
        self._summary: dict[str, SummaryCase] = {}
        self.completed = 0
        self.last_write = 0.0
        self.interval = WRITE_EVERY_S
        for result in kept.values():
            self._keep(result)

    def _keep(self, result: CaseResult) -> None:
        self.completed += result.complete - self.done.get(result.id, False)
        self.done[result.id] = result.complete
        self.errored[result.id] = any(a.error is not None for a in result.attempts)
        self._json[result.id] = data = result.model_dump_json().encode("utf-8")
        self._summary[result.id] = SummaryCase(result)
        if self.sink is not None:
            self.sink.add(data)

    def results(self) -> Results:
        """What was written, as models (read back from its bytes)."""
        return parse_results(self.data(), self.output)

    def _ids(self) -> list[str]:
        """The ids of the cases kept, in the file's order."""
        return [i for i in self.order if i in self._json]

    def end(self) -> None:
        """Tell the sink the run is over, with the header the last ``write`` writes."""
        if self.sink is not None:
            self.run.completed_cases = self.completed
            self.sink.end(self.run, self._ids())

    def written(self) -> WrittenRun:
        """What was written, as ``evalgate run`` reads it after."""
        ids = self._ids()
        summary = SummaryView(self.run, [self._summary[i] for i in ids])
        return WrittenRun(self.run, [self._json[i] for i in ids], sum(self.errored.values()), ids=ids, summary=summary)

    def data(self) -> bytes:
        """The results file's JSON, as ``dump_results`` would make it, without re-serialising the cases."""
        self.run.completed_cases = self.completed
        cases = b",".join(self._json[i] for i in self._ids())
        run = self.run.model_dump_json().encode("utf-8")
        return b'{"schema_version":%d,"run":%s,"cases":[%s]}' % (SCHEMA_VERSION, run, cases)

    def write(self) -> None:
        started = time.monotonic()
        write_results_bytes(self.data(), self.output)
        self.last_write = time.monotonic()
        # A big suite's file takes a while to write, and writing blocks the event loop: space the
        # writes so they never take more than ~5% of the run.
        self.interval = max(WRITE_EVERY_S, 20 * (self.last_write - started))

    def add(self, result: CaseResult) -> None:
        self._keep(result)
        if time.monotonic() - self.last_write >= self.interval:
            self.write()


class WrittenRun:
    """A results file just written, for ``main``: ``run`` at hand, ``summary`` (what the run's
    summary reads of each case, kept as it finished), and ``cases`` made from the recorder's bytes
    the first time something asks for them (the HTML page, a history without the live record):
    during the run no case is held as models."""

    schema_version = SCHEMA_VERSION

    def __init__(
        self, run: RunInfo, case_json: list[bytes], errored_cases: int, *, ids: list[str], summary: SummaryView
    ):
        """``ids``: the cases' ids, in the file's order (as ``case_json`` and ``summary``'s cases)."""
        self.run = run
        self.case_ids = ids
        self._case_json = case_json
        self.errored_cases = errored_cases
        self.summary = summary

    @functools.cached_property
    def cases(self) -> list[CaseResult]:
        pending, self._case_json = self._case_json[::-1], []
        cases = []
        while pending:  # each case's bytes go as its model comes
            cases.append(CaseResult.model_validate_json(pending.pop()))
        return cases

    @property
    def case_json(self) -> list[bytes]:
        """Each case's JSON as the results file holds it (what ``cases`` is read from)."""
        return self._case_json

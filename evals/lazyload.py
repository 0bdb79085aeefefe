"""Results files for ``compare``, without holding every case as a pydantic object.

A 100,000-case run validated into ``Results`` takes ~430 MB (measured; mostly per-instance
overhead of ``CaseResult``/``Attempt``), so two of them break the 500 MB budget of SPEC §10.
``load_lazy`` keeps the parsed JSON and validates each case with the very same ``CaseResult``
model, once at load and again whenever a case is read, so nothing is accepted that
``load_results`` would reject: on any problem it hands the bytes to ``parse_results``, whose
error (exit 2, naming the file and the case) is the one the user sees.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from pydantic import ValidationError

from evals.results import CaseResult, Results, RunInfo, parse_results, read_json_bytes


class CaseList(Sequence[CaseResult]):
    """The cases of a run, validated on access from their JSON objects."""

    def __init__(self, raw: list[dict[str, Any]]):
        self._raw = raw

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> CaseResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[CaseResult]: ...
    def __getitem__(self, index: int | slice) -> CaseResult | list[CaseResult]:
        if isinstance(index, slice):
            return [CaseResult.model_validate(c) for c in self._raw[index]]
        return CaseResult.model_validate(self._raw[int(index)])

    def __iter__(self) -> Iterator[CaseResult]:
        for raw in self._raw:
            yield CaseResult.model_validate(raw)


class LazyResults:
    """Reads like ``Results`` (``schema_version``, ``run``, ``cases``) for ``compare``."""

    def __init__(self, schema_version: int, run: RunInfo, cases: CaseList):
        self.schema_version = schema_version
        self.run = run
        self.cases = cases


def _check(raw: bytes) -> LazyResults | None:
    """The run, or None when anything is off (the caller then lets parse_results explain)."""
    try:
        data = json.loads(raw)
        if not isinstance(data, dict) or not isinstance(data.get("cases", []), list):
            return None
        header = Results.model_validate({**data, "cases": []})
        cases = data.get("cases", [])
        seen: set[str] = set()
        for item in cases:
            case = CaseResult.model_validate(item)
            if case.id in seen:
                return None
            seen.add(case.id)
    except (ValueError, ValidationError, TypeError, RecursionError):
        return None
    return LazyResults(header.schema_version, header.run, CaseList(cases))


def load_lazy(path: str | Path) -> Results | LazyResults:
    """Load a results file for comparison; every problem is an InputFileError (exit 2) with the
    same message ``load_results`` gives."""
    path = Path(path)
    raw = read_json_bytes(path)
    return _check(raw) or parse_results(raw, path)

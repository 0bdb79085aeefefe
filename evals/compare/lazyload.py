"""Results files for ``compare``, fast and lean: a 100,000-case run validated into ``Results``
takes ~410 MB and ~1.5 s (measured; mostly per-instance overhead of ``CaseResult``/``Attempt``).

``load_lazy`` parses the JSON once (pydantic-core's parser) and validates the whole document in
one pydantic-core call against the very schemas of ``Results``, ``CaseResult`` and ``Attempt``
(:func:`_lean_schema`: each model's fields and config, checked into plain dicts that are dropped
per case). From the validated JSON it keeps the attempts as arrays for ``metrics.scan``, the ids,
hashes and slices, and each case as compact JSON, turned into a ``CaseResult`` only when read
(the few cases a report quotes). Nothing is accepted that ``load_results`` would reject: on any
problem the bytes go to ``parse_results``, whose error (exit 2, naming the file and the case) is
the one the user sees.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, overload

import pydantic_core
from pydantic import ValidationError
from pydantic_core import SchemaValidator, core_schema

from evals.compare.metrics import AttemptColumns, ColumnarCases
from evals.results.files import parse_results, read_json_bytes
from evals.results.model import CaseResult, Results, RunInfo


class CaseList(ColumnarCases):
    """The cases of a run: validated once at load, each kept as compact JSON and turned into a
    ``CaseResult`` when read."""

    def __init__(self, cases: list[dict[str, Any]], case_json: list[bytes] | None = None):
        """``case_json``: each case's JSON as it was parsed into ``cases``, when the caller has it."""
        self.ids = [c["id"] for c in cases]
        self.hashes = [c.get("hash") for c in cases]
        # Cases mostly share a few slice combinations: one dict per combination, not per case.
        shared: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        self.case_slices = [shared.setdefault(tuple(s.items()), s) for s in (c.get("slices") or {} for c in cases)]
        self.attempts = AttemptColumns.collect([c.get("attempts", ()) for c in cases], dicts=True)
        # One entry per attempt, for the history's run digest (evals.history.record).
        self.output_sha256 = [a.get("output_sha256") for c in cases for a in c.get("attempts", ())]
        # The few cases the judge checks read (evals.compare.judging), so they need no second
        # parse of every case: most runs have none.
        judged = set(self.attempts.case[self.attempts.judge_said].tolist())
        judged.update(i for i, c in enumerate(cases) if "human_verdict" in (c.get("metadata") or ()))
        self.judged = [judge_view(cases[i]) for i in sorted(judged)]
        self._json = case_json if case_json is not None else [pydantic_core.to_json(c) for c in cases]

    @classmethod
    def from_json(
        cls,
        case_json: list[bytes],
        chunk: int = 1024,
        each: Callable[[int, list[dict[str, Any]], CaseList], None] | None = None,
    ) -> CaseList:
        """The cases of a results file evalgate just wrote (valid: the run made it from its
        models), from each case's JSON: parsed a chunk at a time, keeping of each attempt only what
        the columns read (its trace's tool calls, not its messages), so the parsed run is never
        held whole beside the JSON. ``each``: called with every chunk as it is parsed (its first
        case's index, its parsed cases, its own ``CaseList``), for a reader of the whole cases
        (the history's rows) that would otherwise parse them a second time."""
        slim: list[dict[str, Any]] = []
        for first in range(0, len(case_json), chunk):
            parsed = pydantic_core.from_json(b"[" + b",".join(case_json[first : first + chunk]) + b"]")
            for case in parsed:
                attempts = [_columns_of(a) for a in case.get("attempts", ())]
                kept = {"id": case["id"], "hash": case.get("hash"), "slices": case.get("slices")}
                if (human := (case.get("metadata") or {}).get("human_verdict")) is not None:
                    kept["metadata"] = {"human_verdict": human}
                slim.append({**kept, "attempts": attempts})
            if each is not None:
                each(first, parsed, cls(slim[first:], case_json[first : first + chunk]))
        return cls(slim, case_json)

    def __len__(self) -> int:
        return len(self._json)

    @overload
    def __getitem__(self, index: int) -> CaseResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[CaseResult]: ...
    def __getitem__(self, index: int | slice) -> CaseResult | list[CaseResult]:
        if isinstance(index, slice):
            return [CaseResult.model_validate_json(c) for c in self._json[index]]
        return CaseResult.model_validate_json(self._json[int(index)])

    def __iter__(self) -> Iterator[CaseResult]:
        for raw in self._json:
            yield CaseResult.model_validate_json(raw)

    def raw(self, size: int) -> Iterator[list[dict[str, Any]]]:
        """The cases' validated JSON objects as they are in the file (defaults left out), ``size``
        at a time: one parse per chunk costs a third less than one per case."""
        for first in range(0, len(self._json), size):
            yield pydantic_core.from_json(b"[" + b",".join(self._json[first : first + size]) + b"]")


def judge_view(case: dict[str, Any]) -> dict[str, Any]:
    """Of a case, what the judge checks read: its id, its human verdict and its attempts' judge
    metadata (a case as evals.compare.judging reads it, without its outputs and traces)."""
    human = (case.get("metadata") or {}).get("human_verdict")
    return {
        "id": case["id"],
        "metadata": {} if human is None else {"human_verdict": human},
        "attempts": [
            {"metadata": {"judge": judge}} if (judge := (a.get("metadata") or {}).get("judge")) is not None else {}
            for a in case.get("attempts", ())
        ],
    }


# What AttemptColumns.collect and CaseList read of an attempt; the rest stays in the case's JSON.
_COLUMN_FIELDS = (
    "passed", "score", "scores", "latency_ms", "tokens_in", "tokens_out", "cost_usd", "error", "retries", "cached",
    "judge_usage", "output_sha256",
)  # fmt: skip


def _columns_of(attempt: dict[str, Any]) -> dict[str, Any]:
    kept = {name: attempt[name] for name in _COLUMN_FIELDS if name in attempt}
    # Of the free-form metadata, only the prompt-cache tokens the spend counts and what the judge
    # checks read.
    metadata = attempt.get("metadata") or {}
    slim = {name: metadata[name] for name in ("tokens_cache_read", "judge") if metadata.get(name) is not None}
    if slim:
        kept["metadata"] = slim
    trace = attempt.get("trace")
    if trace is not None:  # the tools called are all the columns take of it (None: no trace at all)
        kept["trace"] = [event for event in trace if event.get("kind") == "tool_call"]
    return kept


class LazyResults:
    """Reads like ``Results`` (``schema_version``, ``run``, ``cases``) for ``compare``."""

    def __init__(self, schema_version: int, run: RunInfo, cases: CaseList):
        self.schema_version = schema_version
        self.run = run
        self.cases = cases


def _lean_schema(schema: Any) -> Any:
    """``schema`` (a pydantic core schema) with every model checked as a typed dict of the same
    fields, config and extra-key rule: the same checks, without building model instances. A field
    with a default becomes optional and, when absent, stays absent (the loader reads defaults
    itself). Whatever sits under a validator function that sees validated values (after, wrap,
    plain: model or field validators) is kept as it is, models and all, since the function expects
    them, and so are models used in several places (core-schema definitions). ``Results``' own
    check (unique ids, completed ≤ total) is left to :func:`_validated`."""
    if isinstance(schema, list):
        return [_lean_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind in ("definitions", "definition-ref"):  # shared or recursive models: kept as they are
        return schema
    if kind in ("function-after", "function-wrap", "function-plain"):
        inner = schema.get("schema", {})
        if inner.get("type") == "model" and inner["cls"] is Results and schema["function"]["function"] is _UNIQUE_IDS:
            return _lean_schema(inner)
        return schema
    if kind == "model" and schema["schema"].get("type") == "model-fields":
        fields = {}
        for name, field in schema["schema"]["fields"].items():
            inner = field["schema"]
            optional = inner.get("type") == "default"
            fields[name] = core_schema.typed_dict_field(
                _lean_schema(inner["schema"] if optional else inner), required=not optional
            )
        # No ref: the model itself may still be used, unchanged, under a validator elsewhere.
        lean = core_schema.typed_dict_schema(fields, extra_behavior="forbid", config=schema.get("config"))
        if schema["cls"] is CaseResult:  # checked, then dropped: the loader keeps the input
            return core_schema.no_info_after_validator_function(_drop, lean)
        return lean
    return {key: _lean_schema(value) for key, value in schema.items()}


def _drop(_: Any) -> None:
    return None


_UNIQUE_IDS = Results.__pydantic_decorators__.model_validators["_unique_ids"].func


@functools.cache
def _validator() -> SchemaValidator:
    schema = _lean_schema(Results.__pydantic_core_schema__)
    # A results file must say which schema it follows (parse_results insists too).
    schema["fields"]["schema_version"]["required"] = True
    return SchemaValidator(schema)


def _validated(raw: bytes) -> dict[str, Any] | None:
    """The parsed file if it is a valid results file, else None (parse_results then explains)."""
    try:
        data = pydantic_core.from_json(raw, allow_inf_nan=False)
        _validator().validate_python(data)
    except (ValueError, ValidationError, RecursionError):
        return None
    run = data["run"]
    cases = data.get("cases", [])
    if run["completed_cases"] > run["total_cases"] or len({c["id"] for c in cases}) != len(cases):
        return None
    return data


def load_lazy(path: str | Path) -> Results | LazyResults:
    """Load a results file for comparison; every problem is an InputFileError (exit 2) with the
    same message ``load_results`` gives."""
    path = Path(path)
    raw = read_json_bytes(path)
    data = _validated(raw)
    if data is None:
        return parse_results(raw, path)
    del raw  # the parsed copy is all that is needed from here on: free the bytes before the next step
    try:
        cases = CaseList(data.get("cases", []))
    except (ValueError, TypeError):
        # A value the models coerce but the columns cannot take as written (booleans are strict
        # in both, so a "passed": "yes" never gets here): such a file loads through the models,
        # which read it as load_results does.
        del data
        return parse_results(read_json_bytes(path), path)
    return LazyResults(data["schema_version"], RunInfo.model_validate(data["run"]), cases)

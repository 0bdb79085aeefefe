"""Braintrust experiment exports: the experiment's rows (spans), as JSON lines, a JSON list, or the
API's fetch response (``{"events": [...]}``; a BTQL response's ``{"data": [...]}`` too).

A test case is a root span (no ``span_parents``: ``Eval()`` names it ``eval``); its ``input`` is
what Braintrust itself uses to match test cases between experiments, so the case id is the
dataset record's id (``origin.id``) when the data came from a Braintrust dataset, else the input
(as JSON). Rows with the same input and expected value are the trials of one case (attempts).
Scores: the root row's ``scores``, or — as the Python SDK logs them — the ``scores`` of its
``score`` child spans; a score of ``null`` is a skipped scorer. Braintrust has no pass/fail: the
main score (``--metric``, default the first scorer in the file) is the case's ``score``, and its
``passed`` when that scorer only ever gave 0 or 1. A root ``error`` is the task's exception (infra
when it names a connection or capacity failure, else the target's); a main scorer that raised
(``metadata.scorer_errors``, the score span's ``error``) is a scorer error (infra for a judge that
could not be reached), and other scorers' errors are kept in the attempt's metadata. Score spans'
``metadata`` rationale is kept as the case's reason. Slices: the root ``metadata`` (label-like
values) and the row's ``tags`` (``tag``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evals.common import jsonsafe
from evals.common.errors import InputFileError
from evals.importers.common import (
    ImportOptions,
    as_number,
    as_object,
    attempt,
    build_results,
    canonical_json,
    choose_slices,
    iter_jsonl,
    make_error,
    new_case,
    not_format,
    read_text,
)
from evals.results.files import json_problem
from evals.results.infra import error_kind
from evals.results.masking import mask_text
from evals.results.model import Attempt, CaseResult, Results, TargetInfo

FORMAT = "braintrust"
_ID_MAX_CHARS = 120
_REASON_KEYS = ("rationale", "reason", "reasoning", "explanation")
_HIDDEN_METADATA = ("scorer_errors", "classifier_errors")
_TRACEBACK_MAX_CHARS = 4000


def _rows(path: Path) -> list[dict[str, Any]]:
    text = read_text(path)
    stripped = text.lstrip("\ufeff \t\r\n")
    rows: Any
    if stripped.startswith("["):
        try:
            rows = jsonsafe.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InputFileError(path, f"not a valid Braintrust export: invalid JSON: {json_problem(exc)}") from None
    else:
        try:
            whole = jsonsafe.loads(stripped)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("events") or whole.get("data"), list):
            rows = whole.get("events") or whole.get("data")
        else:
            rows = [obj for _lineno, obj in iter_jsonl(path, "Braintrust export")]
    if not isinstance(rows, list) or not rows:
        raise not_format(path, FORMAT, "no rows")
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("span_id"), str) or "root_span_id" not in row:
            raise not_format(
                path,
                FORMAT,
                f"row {index} has no span_id/root_span_id: not an experiment's rows"
                " (export the experiment, not a dataset)",
            )
    return rows


def _is_root(row: dict[str, Any]) -> bool:
    if isinstance(row.get("is_root"), bool):
        return row["is_root"]
    return not row.get("span_parents")


def _span_type(row: dict[str, Any]) -> str | None:
    attrs = row.get("span_attributes")
    return attrs.get("type") if isinstance(attrs, dict) else None


def _span_name(row: dict[str, Any]) -> str:
    attrs = row.get("span_attributes")
    return str(attrs.get("name") or "") if isinstance(attrs, dict) else ""


def _last_line(text: Any) -> str:
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else str(text)


class _Trace:
    """One root span with what its child spans say about the scores."""

    def __init__(self, root: dict[str, Any], children: list[dict[str, Any]]):
        self.root = root
        scores: dict[str, float | None] = {}
        root_scores = as_object(root.get("scores"))
        self.reasons: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        for child in children:
            if _span_type(child) != "score":
                continue
            name = _span_name(child)
            if isinstance(child.get("scores"), dict):
                for key, value in child["scores"].items():
                    scores.setdefault(key, value)
            meta = as_object(child.get("metadata"))
            reason = next((meta[k] for k in _REASON_KEYS if isinstance(meta.get(k), str) and meta[k]), None)
            if reason:
                self.reasons[name] = reason
            if child.get("error"):
                self.errors[name] = str(child["error"])
        scores.update(root_scores)
        meta = as_object(root.get("metadata"))
        for name, trace in (meta.get("scorer_errors") or {}).items():
            self.errors.setdefault(str(name), str(trace))
        self.scores = scores
        self.metadata = {k: v for k, v in meta.items() if k not in _HIDDEN_METADATA}
        self.children = children

    def tokens(self) -> tuple[int | None, int | None]:
        metrics = as_object(self.root.get("metrics"))
        if "prompt_tokens" in metrics or "completion_tokens" in metrics:
            return metrics.get("prompt_tokens"), metrics.get("completion_tokens")
        llm = [c.get("metrics") or {} for c in self.children if _span_type(c) == "llm"]
        if not llm:
            return None, None
        prompt = [m["prompt_tokens"] for m in llm if isinstance(m.get("prompt_tokens"), int)]
        completion = [m["completion_tokens"] for m in llm if isinstance(m.get("completion_tokens"), int)]
        return (sum(prompt) if prompt else None), (sum(completion) if completion else None)


def _attempt(trace: _Trace, main: str, binary: bool) -> Attempt:
    root = trace.root
    value = as_number(trace.scores.get(main))
    error = None
    passed: bool | None = None
    # The SDK records a traceback: its last line (the exception) is the message and decides the
    # kind (source lines quoted in a traceback are no evidence); the traceback is kept beside it.
    traceback = None
    if root.get("error"):
        traceback = str(root["error"])
        error = make_error(error_kind(_last_line(traceback)), _last_line(traceback))
    elif main in trace.errors:
        traceback = trace.errors[main]
        kind = error_kind(_last_line(traceback), default="scorer")
        error = make_error(kind, f"scorer {main!r} raised {_last_line(traceback)}")
    elif value is not None and binary:
        passed = value == 1.0
    metrics = as_object(root.get("metrics"))
    start, end = as_number(metrics.get("start")), as_number(metrics.get("end"))
    tokens_in, tokens_out = trace.tokens()
    metadata: dict[str, Any] = {}
    if trace.reasons:
        metadata["reason"] = "\n".join(
            f"{name} ({_fmt(trace.scores.get(name))}): {reason}" for name, reason in trace.reasons.items()
        )
    if traceback:
        metadata["traceback"] = traceback[-_TRACEBACK_MAX_CHARS:]
    if trace.errors:
        metadata["scorer_errors"] = {name: _last_line(text) for name, text in trace.errors.items()}
    for key in ("id", "span_id", "root_span_id"):
        if isinstance(root.get(key), str):
            metadata[f"braintrust_{key}"] = root[key]
    return attempt(
        passed=passed,
        score=value if error is None else None,
        scores={k: n for k, v in trace.scores.items() if (n := as_number(v)) is not None},
        latency_ms=(end - start) * 1000 if start is not None and end is not None else None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=as_number(metrics.get("estimated_cost")),
        output=root.get("output"),
        error=error,
        metadata=metadata,
    )


def _fmt(value: Any) -> str:
    number = as_number(value)
    return "skipped" if number is None else f"{number:g}"


def _case_key(root: dict[str, Any]) -> tuple[str, str]:
    """(grouping key, readable id) of a root span."""
    origin = as_object(root.get("origin"))
    if isinstance(origin.get("id"), str) and origin["id"]:
        return f"origin:{origin['id']}", origin["id"]
    value = root.get("input")
    text = value if isinstance(value, str) else canonical_json(value)
    # An id is written everywhere as it is (results, comment, history): never a secret the
    # input held. A masked input is named by its digest, so two such cases stay apart.
    key = canonical_json([root.get("input"), root.get("expected")])
    masked = mask_text(text)
    return key, text if masked == text else f"input #{_digest(key)}"


def _tags(trace: _Trace) -> dict[str, Any]:
    tags = trace.root.get("tags")
    found = dict(trace.metadata)
    if isinstance(tags, list) and tags and all(isinstance(t, str) for t in tags):
        found["tag"] = ",".join(sorted(tags))
    return found


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    traces: list[_Trace] = []
    experiments: set[str] = set()
    projects: set[str] = set()
    n_rows = 0
    for path in inputs:
        rows = _rows(path)
        n_rows += len(rows)
        children: dict[Any, list[dict[str, Any]]] = {}
        roots: list[dict[str, Any]] = []
        for row in rows:
            (roots if _is_root(row) else children.setdefault(row.get("root_span_id"), [])).append(row)
            if isinstance(row.get("experiment_id"), str):
                experiments.add(row["experiment_id"])
            if isinstance(row.get("project_id"), str):
                projects.add(row["project_id"])
        if not roots:
            raise InputFileError(path, f"none of its {len(rows)} rows is a root span (a row without span_parents)")
        traces.extend(_Trace(root, children.get(root.get("root_span_id"), [])) for root in roots)

    scorers: list[str] = []
    for trace in traces:
        for name in [*trace.scores, *trace.errors]:
            if name not in scorers:
                scorers.append(name)
    where = inputs[0] if len(inputs) == 1 else ", ".join(map(str, inputs))
    if not any(as_number(v) is not None for t in traces for v in t.scores.values()):
        raise InputFileError(
            where,
            f"no scores in its {n_rows} rows: nothing to gate on",
            "the Python SDK keeps scores on each test case's score spans: export every span of the experiment"
            " (GET /v1/experiment/<id>/fetch, or BTQL), not the root rows only",
        )
    main = options.metric or scorers[0]
    if main not in scorers:
        raise InputFileError(where, f"--metric {main!r}: no such score (scores: {', '.join(scorers)})")
    values = [as_number(t.scores.get(main)) for t in traces]
    binary = all(v in (0.0, 1.0) for v in values if v is not None)

    groups: dict[str, list[_Trace]] = {}
    texts: dict[str, str] = {}
    for trace in traces:
        key, text = _case_key(trace.root)
        groups.setdefault(key, []).append(trace)
        texts[key] = text
    counts: dict[str, int] = {}
    for key, text in texts.items():
        texts[key] = short = text if len(text) <= _ID_MAX_CHARS else text[: _ID_MAX_CHARS - 10] + "…#" + _digest(key)
        counts[short] = counts.get(short, 0) + 1
    cases: list[CaseResult] = []
    tags: dict[str, dict[str, Any]] = {}
    for key, group in groups.items():
        case_id = texts[key] if counts[texts[key]] == 1 else f"{texts[key]} #{_digest(key)}"
        first = group[0].root
        case = new_case(case_id, input_value=first.get("input"), expected=first.get("expected"), hashed=True)
        case.attempts = [_attempt(t, main, binary) for t in group]
        tags[case_id] = _tags(group[0])
        cases.append(case)
    slices = choose_slices(tags, options.slice_keys)
    for case in cases:
        case.slices = slices[case.id]
    return build_results(
        cases,
        fmt=FORMAT,
        inputs=inputs,
        suite="braintrust",
        options=options,
        target=TargetInfo(kind="braintrust"),
        started_at=min((str(t.root["created"]) for t in traces if t.root.get("created")), default=None),
        source={
            "experiment_ids": sorted(experiments),
            "project_ids": sorted(projects),
            "rows": n_rows,
            "root_spans": len(traces),
            "scorers": scorers,
            "metric": main,
            "metric_is_binary": binary,
        },
        tags=tags,
    )


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:8]

"""promptfoo ``eval -o results.json`` (``results.version`` 3).

Rows carry no stable id (``id`` is random per run), so a case is identified by its test
(description, else its vars) and, only when the file holds several, by provider and prompt:
a baseline run with one model and a candidate run with another must still pair. ``--repeat``
writes identical rows that become the case's attempts. ``error`` is also set on plain assertion
failures; only ``failureReason == 2`` (the provider or the test itself crashed) is an error.
Slices: the tests' ``metadata`` by default; ``--slice-key`` may also name vars.

A rating given in promptfoo's viewer is a ``componentResults`` entry of assertion type ``human``
(it also overrides the row's ``success``): it becomes the case's ``metadata.human_verdict``, and the
model-graded assertions' own verdicts (``llm-rubric``, ``g-eval``, ``factuality``, …) the attempt's
``metadata.judge.passed``, so the report can set the judge against people (docs/spec.md#human-labels)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from evals.common.errors import InputFileError
from evals.importers.common import (
    ImportOptions,
    as_number,
    as_object,
    attempt,
    build_results,
    canonical_json,
    choose_slices,
    load_json,
    make_error,
    new_case,
    not_format,
    numeric_scores,
)
from evals.results.infra import error_kind
from evals.results.model import Attempt, CaseResult, Results, TargetInfo

FORMAT = "promptfoo"
SUPPORTED_VERSION = 3
FAILURE_ERROR = 2  # promptfoo ResultFailureReason.ERROR; 1 is ASSERT (a wrong answer)
_ID_MAX_CHARS = 120
HUMAN = "human"  # promptfoo's HUMAN_ASSERTION_TYPE
# promptfoo's assertion types that ask a model for the verdict.
MODEL_GRADED = frozenset(
    {
        "llm-rubric", "g-eval", "factuality", "model-graded-closedqa", "model-graded-factuality", "answer-relevance",
        "context-faithfulness", "context-recall", "context-relevance", "search-rubric", "select-best",
    }
)  # fmt: skip


def _rows(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data = load_json(path, "promptfoo results file")
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, dict) or not isinstance(results.get("results"), list):
        raise not_format(path, FORMAT, "no results.results list (write it with `promptfoo eval -o results.json`)")
    version = results.get("version")
    if version != SUPPORTED_VERSION:
        raise not_format(
            path, FORMAT, f"results.version is {version!r}; this importer reads version {SUPPORTED_VERSION}"
        )
    rows = results["results"]
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or "success" not in row:
            raise not_format(path, FORMAT, f"results.results[{index}] is not an eval result (no 'success')")
        if not isinstance(row["success"], bool):
            raise InputFileError(path, f"results.results[{index}].success is {row['success']!r}, not true/false")
    return data, rows


def _provider(row: dict[str, Any]) -> str:
    provider = row.get("provider")
    if isinstance(provider, dict):
        return str(provider.get("label") or provider.get("id") or "")
    return str(provider or "")


def _prompt(row: dict[str, Any]) -> str:
    prompt = row.get("prompt")
    if isinstance(prompt, dict):
        return str(prompt.get("label") or prompt.get("raw") or "")
    return str(prompt or "")


def _test(row: dict[str, Any]) -> dict[str, Any]:
    test = row.get("testCase")
    return test if isinstance(test, dict) else {}


def _short(text: str, key: str) -> str:
    if len(text) <= _ID_MAX_CHARS:
        return text
    return text[: _ID_MAX_CHARS - 10] + "…#" + hashlib.sha256(key.encode()).hexdigest()[:8]


def _case_ids(groups: dict[str, list[dict[str, Any]]], many_providers: bool, many_prompts: bool) -> dict[str, str]:
    """A readable, stable id per group: the test's description (or vars), disambiguated by a
    short hash only when two different tests would otherwise share it."""
    base: dict[str, str] = {}
    for key, rows in groups.items():
        row = rows[0]
        test = _test(row)
        text = str(test.get("description") or canonical_json(row.get("vars") or test.get("vars") or {}))
        if many_providers:
            text += f" [{_provider(row)}]"
        if many_prompts:
            text += f" [prompt: {_prompt(row)}]"
        base[key] = _short(text, key)
    counts: dict[str, int] = {}
    for text in base.values():
        counts[text] = counts.get(text, 0) + 1
    return {
        key: text if counts[text] == 1 else f"{text} #{hashlib.sha256(key.encode()).hexdigest()[:8]}"
        for key, text in base.items()
    }


def _attempt(row: dict[str, Any]) -> Attempt:
    response = as_object(row.get("response"))
    usage = response.get("tokenUsage") or row.get("tokenUsage") or {}
    grading = as_object(row.get("gradingResult"))
    error = None
    if row.get("failureReason") == FAILURE_ERROR:
        message = str(row.get("error") or response.get("error") or "promptfoo reported an error")
        error = make_error(error_kind(message), message)
    metadata: dict[str, Any] = {}
    if grading.get("reason") and not row.get("success"):
        metadata["reason"] = grading["reason"]
    judged = [c["pass"] for c in _components(grading) if _kind(c) in MODEL_GRADED and isinstance(c.get("pass"), bool)]
    if judged:
        metadata["judge"] = {"passed": all(judged), "source": "promptfoo model-graded assertions"}
    cost = as_number(row.get("cost"))
    return attempt(
        passed=bool(row.get("success")),
        score=as_number(row.get("score")),
        scores=numeric_scores(row.get("namedScores") or grading.get("namedScores") or {}),
        latency_ms=as_number(row.get("latencyMs")),
        tokens_in=usage.get("prompt"),
        tokens_out=usage.get("completion"),
        cost_usd=cost if cost is not None else as_number(response.get("cost")),
        output=response.get("output"),
        error=error,
        metadata=metadata,
    )


def _components(grading: dict[str, Any]) -> list[dict[str, Any]]:
    found = grading.get("componentResults")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _kind(component: dict[str, Any]) -> Any:
    return as_object(component.get("assertion")).get("type")


def _human_verdict(rows: list[dict[str, Any]]) -> bool | None:
    """The last rating a person gave any of the case's rows in promptfoo's viewer."""
    rated = [
        c["pass"]
        for row in rows
        for c in _components(as_object(row.get("gradingResult")))
        if _kind(c) == HUMAN and isinstance(c.get("pass"), bool)
    ]
    return rated[-1] if rated else None


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    files = [(path, *_rows(path)) for path in inputs]
    groups: dict[str, list[dict[str, Any]]] = {}
    for _path, _data, rows in files:
        for row in rows:
            test = _test(row)
            key = canonical_json(
                [test.get("description"), row.get("vars"), test.get("assert"), _provider(row), _prompt(row)]
            )
            groups.setdefault(key, []).append(row)
    all_rows = [row for rows in groups.values() for row in rows]
    providers = sorted({_provider(r) for r in all_rows})
    prompts = sorted({_prompt(r) for r in all_rows})
    ids = _case_ids(groups, len(providers) > 1, len(prompts) > 1)

    cases: list[CaseResult] = []
    tags: dict[str, dict[str, Any]] = {}
    fixed: dict[str, dict[str, str]] = {}
    for key, rows in groups.items():
        first = rows[0]
        test = _test(first)
        case = new_case(ids[key], input_value=first.get("vars"), expected=test.get("assert"), hashed=True)
        case.attempts = [_attempt(row) for row in rows]
        if (human := _human_verdict(rows)) is not None:
            case.metadata["human_verdict"] = human
        metadata = {k: v for k, v in (test.get("metadata") or {}).items() if not str(k).startswith("_")}
        # vars are usually payloads (questions, documents): slices only when asked for by key
        tags[case.id] = metadata if options.slice_keys is None else {**(first.get("vars") or {}), **metadata}
        fixed[case.id] = {}
        if len(providers) > 1:
            fixed[case.id]["provider"] = _provider(first)
        if len(prompts) > 1:
            fixed[case.id]["prompt"] = _prompt(first)[:64]
        cases.append(case)
    slices = choose_slices(tags, options.slice_keys)
    for case in cases:
        case.slices = {**slices[case.id], **fixed[case.id]}

    data = files[0][1]
    meta = data.get("metadata") or {}
    config = data.get("config") or {}
    provider_ids = sorted(
        {str((r.get("provider") or {}).get("id", "")) for r in all_rows if isinstance(r.get("provider"), dict)}
    )
    return build_results(
        cases,
        fmt=FORMAT,
        inputs=inputs,
        suite=str(config.get("description") or "promptfoo"),
        options=options,
        target=TargetInfo(
            kind="promptfoo",
            model=provider_ids[0] if len(provider_ids) == 1 else None,
            params={"providers": providers, "prompts": prompts},
        ),
        started_at=data["results"].get("timestamp") or meta.get("evaluationCreatedAt"),
        source={
            "eval_ids": [d.get("evalId") for _p, d, _r in files],
            "promptfoo_version": meta.get("promptfooVersion"),
            "node_version": meta.get("nodeVersion"),
            "results_version": SUPPORTED_VERSION,
            "stats": {
                k: v
                for k, v in (data["results"].get("stats") or {}).items()
                if k in ("successes", "failures", "errors")
            },
        },
        tags=tags,
    )

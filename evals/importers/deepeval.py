"""DeepEval test runs: what ``deepeval test run`` and ``evaluate()`` write.

Three files hold a run: ``.deepeval/.latest_test_run.json`` (the TestRun under ``testRunData``),
``.deepeval/.latest_run_full.json`` and ``$DEEPEVAL_RESULTS_FOLDER/test_run_<date>.json`` (the
TestRun itself: ``testCases``, ``metricsScores``, ``testPassed``...), and ``evaluate()``'s
returned ``EvaluationResult`` dumped with pydantic (``test_results``, snake_case fields).

A case is a test case (its ``name``: the pytest test under ``deepeval test run``, ``test_case_<n>``
from ``evaluate()`` unless the case was named); every metric is a named score, and the case passes
when all its metrics succeeded, as DeepEval decides it (a ``flaky`` metric never decides). A metric
that errored (``error`` set, or no score or no success: DeepEval's own ``metricsScores`` counts
those as ``errors``, apart from ``fails``) is not a wrong answer: a case whose only problem is an
errored metric is an error, infra when the error names a connection or capacity failure (the judge
model could not be reached), else a scorer error; a case where another metric failed is a failure.
DeepEval itself counts such cases in ``testFailed``. ``--metric NAME`` makes one metric decide."""

from __future__ import annotations

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
    load_json_of,
    make_error,
    new_case,
    not_format,
)
from evals.results.infra import error_kind
from evals.results.model import Attempt, CaseResult, Results, TargetInfo

FORMAT = "deepeval"
_REASON_MAX_CHARS = 4000


def _run(path: Path) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """(shape, run fields, test cases) of one file; cases normalised to snake_case keys."""
    data = load_json_of(path, FORMAT, "DeepEval test run")
    if not isinstance(data, dict):
        raise not_format(path, FORMAT, "not a JSON object")
    if "testRunData" in data or ("testRunLink" in data and "testCases" not in data):
        run = data.get("testRunData")
        if not isinstance(run, dict):
            raise InputFileError(
                path,
                "holds only the link to the run on Confident AI (testRunLink), not its results",
                "import $DEEPEVAL_RESULTS_FOLDER/test_run_<date>.json or .deepeval/.latest_run_full.json instead",
            )
        shape = "latest_test_run"
    elif isinstance(data.get("testCases"), list) or isinstance(data.get("conversationalTestCases"), list):
        run, shape = data, "test_run"
    elif isinstance(data.get("test_results"), list):
        return "evaluation_result", data, [_from_result(path, i, r) for i, r in enumerate(data["test_results"])]
    else:
        raise not_format(
            path,
            FORMAT,
            "no testCases, testRunData or test_results (write it with `deepeval test run`, or set"
            " DEEPEVAL_RESULTS_FOLDER for evaluate())",
        )
    single = run.get("testCases") or []
    convo = run.get("conversationalTestCases") or []
    if not isinstance(single, list) or not isinstance(convo, list):
        raise InputFileError(path, "testCases / conversationalTestCases is not a list")
    cases = [_from_api(path, f"testCases[{i}]", c) for i, c in enumerate(single)]
    cases += [_from_api(path, f"conversationalTestCases[{i}]", c, conversational=True) for i, c in enumerate(convo)]
    return shape, run, cases


def _metric(raw: Any, where: str, path: Path) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise InputFileError(path, f"{where}: a metric without a name")
    return {
        "name": raw["name"],
        "threshold": as_number(raw.get("threshold")),
        "success": raw.get("success") if isinstance(raw.get("success"), bool) else None,
        "score": as_number(raw.get("score")),
        "reason": raw.get("reason"),
        "error": raw.get("error"),
        "flaky": bool(raw.get("flaky")),
        "evaluation_model": raw.get("evaluationModel", raw.get("evaluation_model")),
        "evaluation_cost": as_number(raw.get("evaluationCost", raw.get("evaluation_cost"))),
    }


def _from_api(path: Path, where: str, raw: Any, conversational: bool = False) -> dict[str, Any]:
    """A test case of a TestRun (camelCase, LLMApiTestCase / ConversationalApiTestCase)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise InputFileError(path, f"{where}: a test case without a name")
    metrics = raw.get("metricsData") or []
    if not isinstance(metrics, list):
        raise InputFileError(path, f"{where}.metricsData is not a list")
    return {
        "name": raw["name"],
        "where": where,
        "input": raw.get("turns") if conversational else raw.get("input"),
        "output": None if conversational else raw.get("actualOutput"),
        "expected": raw.get("expectedOutcome") if conversational else raw.get("expectedOutput"),
        "success": raw.get("success"),
        "metrics": [_metric(m, f"{where}.metricsData[{j}]", path) for j, m in enumerate(metrics)],
        "metadata": as_object(raw.get("metadata")),
        "tags": raw.get("tags") if isinstance(raw.get("tags"), list) else [],
        "seconds": as_number(raw.get("completionTime")),
        "tokens_in": raw.get("inputTokenCount"),
        "tokens_out": raw.get("outputTokenCount"),
        "cost": as_number(raw.get("tokenCost")),
        "order": raw.get("order"),
        "conversational": conversational,
    }


def _from_result(path: Path, index: int, raw: Any) -> dict[str, Any]:
    """A ``TestResult`` of a dumped ``EvaluationResult`` (snake_case)."""
    where = f"test_results[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise InputFileError(path, f"{where}: a test result without a name")
    metrics = raw.get("metrics_data") or []
    if not isinstance(metrics, list):
        raise InputFileError(path, f"{where}.metrics_data is not a list")
    conversational = bool(raw.get("conversational"))
    return {
        "name": raw["name"],
        "where": where,
        "input": raw.get("turns") if conversational else raw.get("input"),
        "output": None if conversational else raw.get("actual_output"),
        "expected": raw.get("expected_output"),
        "success": raw.get("success"),
        "metrics": [_metric(m, f"{where}.metrics_data[{j}]", path) for j, m in enumerate(metrics)],
        "metadata": as_object(raw.get("metadata")),
        "tags": [],
        "seconds": None,
        "tokens_in": None,
        "tokens_out": None,
        "cost": None,
        "order": raw.get("index"),
        "conversational": conversational,
    }


def metric_errored(metric: dict[str, Any]) -> bool:
    """DeepEval's own rule (``TestRun.construct_metrics_scores``): no score or no success is an error."""
    return metric["error"] is not None or metric["score"] is None or metric["success"] is None


def _attempt(case: dict[str, Any], chosen: str | None) -> Attempt:
    metrics = case["metrics"]
    if chosen is not None:
        deciding = [m for m in metrics if m["name"] == chosen]
    else:
        deciding = [m for m in metrics if not m["flaky"]]
    errored = [m for m in deciding if metric_errored(m)]
    failed = [m for m in deciding if not metric_errored(m) and m["success"] is False]
    scored = [m["score"] for m in deciding if not metric_errored(m)]
    error = None
    if failed:
        passed: bool | None = False
    elif errored:
        passed = None
        texts = [f"metric {m['name']!r} errored: {m['error'] or 'no score recorded'}" for m in errored]
        error = make_error(error_kind(*texts, default="scorer"), "; ".join(texts))
    elif deciding:
        passed = True
    elif chosen is not None:
        passed = None  # the chosen metric did not score this case
    else:
        passed = case["success"] if isinstance(case["success"], bool) else None  # no metrics: DeepEval's verdict
    score = None
    if scored and all(0.0 <= s <= 1.0 for s in scored) and not (errored and not failed):
        score = sum(scored) / len(scored)
    lines = []
    for m in sorted(metrics, key=lambda m: (m["success"] is not False, metric_errored(m))):
        if m["reason"]:
            verdict = "errored" if metric_errored(m) else "passed" if m["success"] else "failed"
            lines.append(f"{m['name']} ({verdict}, score {m['score']}, threshold {m['threshold']}): {m['reason']}")
    metadata: dict[str, Any] = {
        "metrics": [
            {k: m[k] for k in ("name", "success", "score", "threshold", "error", "flaky", "evaluation_model")}
            for m in metrics
        ]
    }
    if lines:
        metadata["reason"] = "\n".join(lines)[:_REASON_MAX_CHARS]
    seconds = case["seconds"]
    eval_cost = [m["evaluation_cost"] for m in metrics if m["evaluation_cost"]]
    if eval_cost:
        metadata["evaluation_cost_usd"] = sum(eval_cost)
    return attempt(
        passed=passed,
        score=score,
        scores={m["name"]: m["score"] for m in metrics if not metric_errored(m)},
        latency_ms=seconds * 1000 if seconds is not None else None,
        tokens_in=case["tokens_in"],
        tokens_out=case["tokens_out"],
        cost_usd=case["cost"],
        output=case["output"],
        error=error,
        metadata=metadata,
    )


def _tags(case: dict[str, Any]) -> dict[str, Any]:
    """Slice candidates: the test case's metadata, and its ``key:value`` / ``key=value`` tags."""
    found: dict[str, Any] = {}
    for tag in case["tags"]:
        if isinstance(tag, str):
            for sep in (":", "="):
                key, got, value = tag.partition(sep)
                if got and key.strip() and value.strip():
                    found[key.strip()] = value.strip()
                    break
    return {**found, **case["metadata"]}


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    """The test case names; a name shared by different test cases gets a short hash of its input."""
    import hashlib

    inputs: dict[str, set[str]] = {}
    for case in cases:
        inputs.setdefault(case["name"], set()).add(canonical_json([case["input"], case["expected"]]))
    ids = []
    for case in cases:
        if len(inputs[case["name"]]) == 1:
            ids.append(case["name"])
        else:
            digest = hashlib.sha256(canonical_json([case["input"], case["expected"]]).encode()).hexdigest()[:8]
            ids.append(f"{case['name']} #{digest}")
    return ids


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    runs = [(path, *_run(path)) for path in inputs]
    chosen = options.metric
    if chosen is not None:
        names = {m["name"] for _p, _s, _r, cases in runs for c in cases for m in c["metrics"]}
        if chosen not in names:
            raise InputFileError(
                inputs[0] if len(inputs) == 1 else ", ".join(map(str, inputs)),
                f"--metric {chosen!r}: no test case has that metric (metrics: {', '.join(sorted(names)) or 'none'})",
            )
    results: dict[str, CaseResult] = {}
    tags: dict[str, dict[str, Any]] = {}
    for _path, _shape, _run_fields, cases in runs:
        for case_id, case in zip(_ids(cases), cases, strict=True):
            if case_id not in results:
                results[case_id] = new_case(case_id, input_value=case["input"], expected=case["expected"], hashed=True)
                tags[case_id] = _tags(case)
            results[case_id].attempts.append(_attempt(case, chosen))
    slices = choose_slices(tags, options.slice_keys)
    for case_id, result in results.items():
        result.slices = slices[case_id]

    run = runs[0][2]
    hyper = as_object(run.get("hyperparameters"))
    model = hyper.get("model") if isinstance(hyper.get("model"), str) else None
    test_file = run.get("testFile")
    suite = Path(test_file).stem if isinstance(test_file, str) and test_file else run.get("identifier") or "deepeval"
    return build_results(
        results.values(),
        fmt=FORMAT,
        inputs=inputs,
        suite=str(suite),
        options=options,
        target=TargetInfo(kind="deepeval", model=model, params=dict(hyper)),
        source={
            "shapes": [s for _p, s, _r, _c in runs],
            "test_file": test_file,
            "identifier": run.get("identifier"),
            "dataset_alias": run.get("datasetAlias"),
            "metric": chosen,
            # DeepEval's own counts, per file: testFailed includes the cases with an errored metric.
            "test_passed": [r.get("testPassed") for _p, _s, r, _c in runs],
            "test_failed": [r.get("testFailed") for _p, _s, r, _c in runs],
            "metrics_scores": [
                {k: m.get(k) for k in ("metric", "passes", "fails", "errors")}
                for m in (run.get("metricsScores") or [])
                if isinstance(m, dict)
            ],
            "run_duration_s": as_number(run.get("runDuration")),
            "evaluation_cost_usd": as_number(run.get("evaluationCost")),
        },
        tags=tags,
    )

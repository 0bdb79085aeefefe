"""OpenAI evals record files (``oaieval ... --record_path run.jsonl``): a ``spec`` line, a
``final_report`` line and one event per line (``sampling``, ``match``, ``metrics``, ...), in no
guaranteed order (the final report may come before the events). Events are grouped by
``sample_id`` and ordered by ``event_id``; each ``match`` event is one attempt (or, for evals that
record no matches, each ``metrics`` event); a sample with only ``error`` events gets one errored
attempt per error. A file without a final report is a run that did not
finish and is imported as a partial run."""

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
    iter_jsonl,
    make_error,
    new_case,
    not_format,
    numeric_scores,
)
from evals.importers.detect import sniff
from evals.results.infra import error_kind
from evals.results.model import Attempt, CaseResult, Results, TargetInfo

FORMAT = "openai_evals"


def _read(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]:
    if sniff(path) != FORMAT:
        raise not_format(path, FORMAT, "no spec, final_report or sample events in its first lines")
    spec: dict[str, Any] = {}
    report = None
    events = []
    for lineno, obj in iter_jsonl(path, "OpenAI evals record file"):
        if "spec" in obj:
            spec = obj["spec"] if isinstance(obj["spec"], dict) else {}
        elif "final_report" in obj:
            report = obj["final_report"] if isinstance(obj["final_report"], dict) else {}
        elif "sample_id" in obj and "type" in obj:
            events.append(obj)
        else:
            raise InputFileError(f"{path}:{lineno}", "not a spec, final_report or event line of an OpenAI evals record")
    return spec, report, events


def _event_order(event: dict[str, Any]) -> tuple[int, str]:
    number = event.get("event_id")
    return (number if isinstance(number, int) else 1 << 62, str(event.get("created_at") or ""))


def _attempts(events: list[dict[str, Any]]) -> tuple[list[Attempt], Any, Any]:
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in sorted(events, key=_event_order):
        by_type.setdefault(str(event["type"]), []).append(as_object(event.get("data")))
    samplings = by_type.get("sampling", [])
    graded = by_type.get("match") or by_type.get("metrics") or []
    out = []
    for index, data in enumerate(graded):
        sampling = samplings[index] if index < len(samplings) else {}
        usage = as_object(sampling.get("usage"))
        correct = data.get("correct")
        scores = {k: v for k, v in numeric_scores(data).items() if k != "correct"}
        out.append(
            attempt(
                passed=correct if isinstance(correct, bool) else None,
                score=as_number(correct) if isinstance(correct, bool) else as_number(data.get("score")),
                scores=scores,
                tokens_in=usage.get("prompt_tokens"),
                tokens_out=usage.get("completion_tokens"),
                output=data.get("sampled", sampling.get("sampled")),
                metadata={k: data[k] for k in ("picked", "options") if data.get(k) is not None},
            )
        )
    if not out:
        # ``record_error`` events ({"type": exception class, "message": str(exc)}) of a sample that
        # was never graded: each is a failed attempt, an infra one when it names a network failure.
        for data in by_type.get("error", []):
            message = str(data.get("message") or "")
            name = str(data.get("type") or "error")
            out.append(attempt(error=make_error(error_kind(name, message), f"{name}: {message}".strip(": "))))
    prompt = samplings[0].get("prompt") if samplings else None
    expected = next((d.get("expected") for d in graded if d.get("expected") is not None), None)
    return out, prompt, expected


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    spec: dict[str, Any] = {}
    reports = []
    events_by_sample: dict[str, list[dict[str, Any]]] = {}
    unfinished = []
    for path in inputs:
        file_spec, report, events = _read(path)
        spec = spec or file_spec
        if report is None:
            unfinished.append(path.name)
        else:
            reports.append(report)
        for event in events:
            events_by_sample.setdefault(str(event["sample_id"]), []).append(event)

    cases: list[CaseResult] = []
    for sample_id in sorted(events_by_sample, key=_natural):
        attempts, prompt, expected = _attempts(events_by_sample[sample_id])
        if not attempts:
            continue  # sampled but never graded: nothing to compare
        case = new_case(sample_id, input_value=prompt, expected=expected, hashed=prompt is not None)
        case.attempts = attempts
        cases.append(case)

    completion_fns = spec.get("completion_fns") or []
    return build_results(
        cases,
        fmt=FORMAT,
        inputs=inputs,
        suite=str(spec.get("base_eval") or spec.get("eval_name") or "openai-evals"),
        options=options,
        status="error" if unfinished else "success",
        message=f"no final_report in {', '.join(unfinished)}: the run did not finish" if unfinished else None,
        target=TargetInfo(
            kind="openai_evals",
            model=",".join(map(str, completion_fns)) or None,
            params={"seed": (spec.get("run_config") or {}).get("seed")} if spec.get("run_config") else {},
        ),
        started_at=spec.get("created_at"),
        source={
            "eval_name": spec.get("eval_name"),
            "split": spec.get("split"),
            "run_id": spec.get("run_id"),
            "eval_spec": (spec.get("run_config") or {}).get("eval_spec"),
            "final_report": reports[0] if len(reports) == 1 else reports,
        },
    )


def _natural(sample_id: str) -> tuple[tuple[int, int, str], ...]:
    """'x.s1.10' after 'x.s1.9'."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in sample_id.split("."))

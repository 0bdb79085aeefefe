"""lm-evaluation-harness ``--log_samples`` output: ``samples_<task>_<date>.jsonl`` files, plus the
run's ``results_<date>.json`` when given (or found beside them) for provenance and the expected
number of documents.

lm-eval writes one line per document *per filter* (gsm8k: ``strict-match`` and
``flexible-extract``), so one filter per task is imported: ``--filter [TASK=]NAME``, by default
the task's first filter in the file (the first pipeline of the task's config). ``doc_id`` only
counts within a task, so case ids are ``<task>/<doc_id>`` and the task is a slice. Every numeric
per-document metric becomes a named score; ``--metric`` (default: the first listed) decides
``score``, and ``passed`` when that metric only takes the values 0 and 1."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evals.errors import InputFileError
from evals.importers.common import (
    ImportOptions,
    as_number,
    attempt,
    build_results,
    choose_slices,
    iter_jsonl,
    load_json,
    new_case,
    not_format,
)
from evals.importers.detect import sniff
from evals.results import CaseResult, TargetInfo

FORMAT = "lm_eval"
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.:\-]+)\.jsonl$")
_RESULTS_NAME = re.compile(r"^results_.*\.json$")


def _collect(inputs: list[Path]) -> tuple[list[Path], list[Path]]:
    """(samples files, results files) from files and directories."""
    samples: list[Path] = []
    results: list[Path] = []
    for path in inputs:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix == ".jsonl" and sniff(child) == FORMAT:
                    samples.append(child)
                elif child.is_file() and _RESULTS_NAME.match(child.name):
                    results.append(child)
            continue
        if not path.exists():
            raise InputFileError(path, "file not found")
        if path.suffix == ".json" and not path.name.startswith("samples_"):
            results.append(path)
        else:
            samples.append(path)
    if not samples:
        raise InputFileError(", ".join(map(str, inputs)), "no lm-eval samples_<task>_<date>.jsonl files found")
    if not results:  # lm-eval writes the run's results file beside the samples
        for folder in sorted({p.parent for p in samples}):
            results.extend(sorted(p for p in folder.glob("results_*.json") if p.is_file()))
    return samples, results


def _task_of(path: Path) -> str:
    match = _SAMPLES_NAME.match(path.name)
    return match["task"] if match else path.stem.removeprefix("samples_")


def _read_samples(path: Path) -> list[dict[str, Any]]:
    if sniff(path) != FORMAT:
        raise not_format(path, FORMAT, "its lines are not lm-eval samples (doc_id, doc, filter, metrics)")
    lines = []
    for lineno, obj in iter_jsonl(path, "lm-eval samples file"):
        if "doc_id" not in obj:
            raise not_format(path, FORMAT, f"line {lineno} has no doc_id (not an lm-eval samples line)")
        if not isinstance(obj["doc_id"], int | str) or isinstance(obj["doc_id"], bool) or obj["doc_id"] == "":
            raise InputFileError(f"{path}:{lineno}", f"doc_id is {obj['doc_id']!r}; lm-eval writes a document index")
        obj["_line"] = lineno
        lines.append(obj)
    if not lines:
        raise InputFileError(path, "empty lm-eval samples file")
    return lines


def _pick_filter(task: str, lines: list[dict[str, Any]], options: ImportOptions, path: Path) -> str:
    available = list(dict.fromkeys(str(line.get("filter", "none")) for line in lines))
    wanted = options.filters.get(task) or options.filters.get("*")
    if wanted is None:
        return available[0]
    if wanted not in available:
        raise InputFileError(path, f"task {task!r} has no filter {wanted!r}; filters: {', '.join(available)}")
    return wanted


def _pick_metric(task: str, lines: list[dict[str, Any]], options: ImportOptions, path: Path) -> str:
    listed = list(dict.fromkeys(m for line in lines for m in line.get("metrics") or []))
    numeric = [m for m in listed if any(as_number(line.get(m)) is not None for line in lines)]
    if options.metric is None:
        if not numeric:
            raise InputFileError(
                path, f"task {task!r} has no numeric metric (listed: {', '.join(listed) or 'none'}): nothing to gate on"
            )
        return numeric[0]
    if options.metric not in numeric:
        raise InputFileError(
            path, f"task {task!r} has no numeric metric {options.metric!r}; metrics: {', '.join(numeric) or 'none'}"
        )
    return options.metric


def _output(filtered: Any) -> Any:
    while isinstance(filtered, list) and len(filtered) == 1:
        filtered = filtered[0]
    return filtered


def _provenance(results_files: list[Path]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in results_files:
        data = load_json(path, "lm-eval results file")
        if not isinstance(data, dict) or "results" not in data:
            raise not_format(path, FORMAT, "a results_*.json file without 'results'")
        for key, value in data.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            else:
                merged.setdefault(key, value)
    return merged


def import_files(inputs: list[Path], options: ImportOptions):
    samples_files, results_files = _collect(inputs)
    run = _provenance(results_files)
    n_samples = run.get("n-samples") or {}
    cases: list[CaseResult] = []
    tags: dict[str, dict[str, Any]] = {}
    chosen: dict[str, dict[str, Any]] = {}
    expected_total = 0
    task_files: dict[str, Path] = {}
    for path in samples_files:
        task = _task_of(path)
        if task in task_files:
            raise InputFileError(
                path, f"task {task!r} also comes from {task_files[task]}: pass the samples of one run per task"
            )
        task_files[task] = path
        lines = _read_samples(path)
        filter_name = _pick_filter(task, lines, options, path)
        metric = _pick_metric(task, lines, options, path)
        lines = [line for line in lines if str(line.get("filter", "none")) == filter_name]
        binary = all(as_number(line.get(metric)) in (0.0, 1.0, None) for line in lines)
        chosen[task] = {"filter": filter_name, "metric": metric}
        effective = (n_samples.get(task) or {}).get("effective")
        expected_total += effective if isinstance(effective, int) else 0
        seen: set[str] = set()
        for line in lines:
            case_id = f"{task}/{line['doc_id']}"
            if case_id in seen:
                raise InputFileError(
                    f"{path}:{line['_line']}", f"doc_id {line['doc_id']} repeats for filter {filter_name!r}"
                )
            seen.add(case_id)
            main = as_number(line.get(metric))
            if main is None:
                raise InputFileError(
                    f"{path}:{line['_line']}", f"metric {metric!r} is {line.get(metric)!r}, not a number"
                )
            case = new_case(case_id, input_value=line.get("doc"), expected=line.get("target"), hashed=True)
            scores = {m: v for m in line.get("metrics") or [] if (v := as_number(line.get(m))) is not None}
            case.attempts.append(
                attempt(
                    passed=(main == 1.0) if binary else None,
                    score=main,
                    scores=scores,
                    output=_output(line.get("filtered_resps")),
                    metadata={"filter": filter_name},
                )
            )
            doc = line.get("doc")
            tags[case_id] = doc if isinstance(doc, dict) else {}
            cases.append(case)
    # A document's own fields are mostly payload; they become slices only when asked for by key.
    slices = choose_slices(tags, options.slice_keys or [])
    for case in cases:
        case.slices = {**slices[case.id], "task": case.id.rsplit("/", 1)[0]}

    config = run.get("config") or {}
    model_args = config.get("model_args")
    tasks = sorted(chosen)
    return build_results(
        cases,
        fmt=FORMAT,
        inputs=inputs,
        suite=",".join(tasks),
        options=options,
        total_cases=expected_total or None,
        target=TargetInfo(
            kind="lm_eval",
            model=run.get("model_name") or None,
            params={
                k: v
                for k, v in {
                    "model": config.get("model"),
                    "model_args": model_args,
                    "gen_kwargs": config.get("gen_kwargs"),
                    "n_shot": run.get("n-shot"),
                }.items()
                if v not in (None, {}, "")
            },
        ),
        source={
            "lm_eval_version": run.get("lm_eval_version"),
            "git_hash": run.get("git_hash"),
            "transformers_version": run.get("transformers_version"),
            "task_versions": run.get("versions"),
            "imported": chosen,
            "results_files": [str(p) for p in results_files],
            "samples_files": [str(p) for p in samples_files],
        },
        tags=tags,
    )

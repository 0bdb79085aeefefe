"""lm-evaluation-harness ``--log_samples`` output: ``samples_<task>_<date>.jsonl`` files, plus the
run's ``results_<date>.json`` when given (or found beside them) for provenance and the expected
number of documents.

lm-eval writes one line per document *per filter* (gsm8k: ``strict-match`` and
``flexible-extract``), so one filter per task is imported: ``--filter [TASK=]NAME``, by default
the task's first filter in the file (the first pipeline of the task's config). ``doc_id`` only
counts within a task, so case ids are ``<task>/<doc_id>`` and the task is a slice. Every numeric
per-document metric becomes a named score; ``--metric`` (default: the first listed) decides
``score``, and ``passed`` when that metric only takes the values 0 and 1.

Lines name their filter and metrics (``filter``, ``metrics``) from lm-eval 0.4.7 on (PR #2517);
v0.4.0 to v0.4.6 write only each metric's value, so the names come from the run's results file."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from evals.common.errors import InputFileError
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
from evals.results.model import CaseResult, Results, TargetInfo

FORMAT = "lm_eval"
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.:\-]+)\.jsonl$")
_RESULTS_NAME = re.compile(r"^results_.*\.json$")
# What lm-eval writes on every samples line besides the metrics' values (v0.4.0 to now), and the
# line number this importer notes.
_LINE_KEYS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics", "_line"}
_LINE_KEYS |= {"doc_hash", "prompt_hash", "target_hash"}  # from v0.4.3 on
_NO_SAMPLES_HINT = "re-run lm_eval with --log_samples and import the samples_<task>_<date>.jsonl files or their folder"


def _collect(inputs: list[Path]) -> tuple[list[Path], list[Path]]:
    """(samples files, results files) from files and directories."""
    samples: list[Path] = []
    results: list[Path] = []
    for path in inputs:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                # A file named as lm-eval names its samples is read, so a broken or empty one is
                # reported instead of its task silently left out.
                if _SAMPLES_NAME.match(child.name) or (child.suffix == ".jsonl" and sniff(child) == FORMAT):
                    samples.append(child)
                elif _RESULTS_NAME.match(child.name):
                    results.append(child)
            continue
        if not path.exists():
            raise InputFileError(path, "file not found")
        if path.suffix == ".json" and not path.name.startswith("samples_"):
            results.append(path)
        else:
            samples.append(path)
    if not samples:
        where = ", ".join(map(str, inputs))
        if results:
            raise InputFileError(
                where,
                "no lm-eval samples_<task>_<date>.jsonl files found; a results_*.json file holds only the run's "
                "aggregate scores, not the per-document results a gate compares",
                _NO_SAMPLES_HINT,
            )
        raise InputFileError(where, "no lm-eval samples_<task>_<date>.jsonl files found", _NO_SAMPLES_HINT)
    if not results:  # lm-eval writes the run's results file beside the samples
        for folder in sorted({p.parent for p in samples}):
            results.extend(sorted(p for p in folder.glob("results_*.json") if p.is_file()))
    return samples, results


def _task_of(path: Path) -> str:
    match = _SAMPLES_NAME.match(path.name)
    return match["task"] if match else path.stem.removeprefix("samples_")


def _read_samples(path: Path) -> list[dict[str, Any]]:
    if path.stat().st_size == 0:
        raise InputFileError(
            path,
            f"empty (0 bytes): it holds no samples of task {_task_of(path)!r}; lm-eval writes one line per "
            "document, so the file was cut or not copied whole",
            "copy it again from the run's output, or re-run the task with --log_samples",
        )
    # A file named as lm-eval names its samples gets line-numbered errors below instead.
    if not _SAMPLES_NAME.match(path.name) and sniff(path) != FORMAT:
        raise not_format(path, FORMAT, "its lines are not lm-eval samples (doc_id, doc, filtered_resps, metrics)")
    lines = []
    for lineno, obj in iter_jsonl(path, "lm-eval samples file"):
        if "doc_id" not in obj:
            raise not_format(path, FORMAT, f"line {lineno} has no doc_id (not an lm-eval samples line)")
        if not isinstance(obj["doc_id"], int | str) or isinstance(obj["doc_id"], bool) or obj["doc_id"] == "":
            raise InputFileError(f"{path}:{lineno}", f"doc_id is {obj['doc_id']!r}; lm-eval writes a document index")
        obj["_line"] = lineno
        lines.append(obj)
    if not lines:
        raise InputFileError(path, f"holds no lines: no samples of task {_task_of(path)!r}")
    return lines


def _declared(run: dict[str, Any], task: str) -> tuple[list[str], list[str]]:
    """(filters, metrics) the run's results file names for ``task``, in lm-eval's order: the
    config's ``filter_list`` (no list: lm-eval's one filter ``none``) and ``metric_list``, then the
    ``"metric,filter"`` keys of ``results[task]``. Nothing known: ([], [])."""
    config = (run.get("configs") or {}).get(task)
    config = config if isinstance(config, dict) else {}
    scored = [key.split(",", 1) for key in (run.get("results") or {}).get(task) or {} if "," in key]
    scored = [(metric, filt) for metric, filt in scored if not metric.endswith("_stderr")]
    metrics = [str(m["metric"]) for m in config.get("metric_list") or [] if isinstance(m, dict) and "metric" in m]
    metrics += [metric for metric, _ in scored]
    if isinstance(config.get("filter_list"), list):
        filters = [str(f["name"]) for f in config["filter_list"] if isinstance(f, dict) and "name" in f]
    elif config:
        filters = ["none"]
    else:
        filters = [filt for _, filt in scored]
    return list(dict.fromkeys(filters)), list(dict.fromkeys(metrics))


def _name_old_lines(task: str, lines: list[dict[str, Any]], run: dict[str, Any], path: Path) -> bool:
    """Give lines written before lm-eval 0.4.7 their ``filter`` and ``metrics``; True when some
    had none. lm-eval writes a task's lines filter by filter in ``filter_list`` order (per rank
    when several processes ran), one per document each, so a document's k-th line is the k-th
    filter. Without a results file the metrics are the line's other numeric values."""
    if all("filter" in line and "metrics" in line for line in lines):
        return False
    filters, metrics = _declared(run, task)
    nth: Counter[Any] = Counter()
    for line in lines:
        if "metrics" not in line:
            names = metrics or [k for k, v in line.items() if k not in _LINE_KEYS and as_number(v) is not None]
            line["metrics"] = [m for m in names if m in line]
        if "filter" in line or not filters:
            continue
        k = nth[line["doc_id"]]
        nth[line["doc_id"]] += 1
        if k >= len(filters):
            raise InputFileError(
                f"{path}:{line['_line']}",
                f"doc_id {line['doc_id']} has {k + 1} lines but the run's results file names {len(filters)} "
                f"filter(s) for task {task!r} ({', '.join(filters)}); lm-eval before 0.4.7 writes no filter name "
                "per line, so lines are matched to filters by their order",
                "pass the results_*.json file written by the same run",
            )
        line["filter"] = filters[k]
    return True


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


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
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
        unnamed = _name_old_lines(task, lines, run, path)
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
                    f"{path}:{line['_line']}",
                    f"doc_id {line['doc_id']} repeats for filter {filter_name!r}",
                    "lm-eval before 0.4.7 writes no filter name per line: pass the run's results_*.json file too"
                    if unnamed and "filter" not in line
                    else None,
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

"""pytest-json-report files (``pytest --json-report``: ``.report.json``).

A case is a test (its ``nodeid``); the same nodeid in several files (reruns) gives several
attempts. The test's ``outcome`` is the plugin's own (pytest's report status of its worst stage):
``passed`` and ``xpassed`` (an expected failure that passed; pytest does not fail the run) pass,
``failed`` is a wrong answer (a strict xpass is ``failed`` too), ``error`` — a setup or teardown
that raised — is an error, not a failure (infra when its message names a connection or capacity
failure, unless the test's own call had already failed: then the failure is the verdict),
``skipped`` and ``xfailed`` tests are left out and counted, as pytest's JUnit XML writes them as
skipped. Collection errors (a test file that does not import) make the run ``error``: what that
file held never ran. Slices: ``user_properties`` (``record_property``) and ``metadata``
(``json_metadata``) by default, and the test's custom markers (``marker``); ``--slice-key`` may
also name ``file`` and ``class``; ``file`` is a slice by default when the tests come from several
files."""

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
    choose_slices,
    load_json_of,
    make_error,
    new_case,
    not_format,
)
from evals.results.infra import error_kind
from evals.results.model import Attempt, CaseResult, Results, RunStatus

FORMAT = "pytest_json"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
_LEFT_OUT = ("skipped", "xfailed")
_STAGES = ("setup", "call", "teardown")
_IDS_KEPT = 100
# Keywords pytest adds for every test that are not markers a user chose.
_BUILTIN_MARKS = {"parametrize", "usefixtures", "filterwarnings", "skip", "skipif", "xfail", "pytestmark"}


def _report(path: Path) -> dict[str, Any]:
    data = load_json_of(path, FORMAT, "pytest-json-report file")
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict) or "exitcode" not in data:
        raise not_format(path, FORMAT, "no summary and exitcode (write it with `pytest --json-report`)")
    if "tests" not in data:
        raise InputFileError(
            path,
            "holds only the summary, no per-test results (written with --json-report-summary)",
            "re-run pytest with --json-report and without --json-report-summary",
        )
    if not isinstance(data["tests"], list):
        raise InputFileError(path, "tests is not a list")
    for index, test in enumerate(data["tests"]):
        if not isinstance(test, dict) or not isinstance(test.get("nodeid"), str) or not test["nodeid"]:
            raise InputFileError(path, f"tests[{index}] has no nodeid")
        if test.get("outcome") not in OUTCOMES:
            raise InputFileError(
                path, f"tests[{index}] ({test['nodeid']}): outcome {test.get('outcome')!r} is not one of {OUTCOMES}"
            )
    return data


def _exception(stage: dict[str, Any]) -> str:
    """The exception line of a stage (``crash.message``, else the traceback's last ``E`` line):
    what says whether it was infrastructure. The traceback's source lines do not count (the
    ``getaddrinfo`` call inside ``socket.create_connection`` is no DNS failure)."""
    crash = as_object(stage.get("crash"))
    if crash.get("message"):
        return str(crash["message"])
    lines = [line[1:].strip() for line in str(stage.get("longrepr") or "").splitlines() if line.startswith("E ")]
    return lines[-1] if lines else str(stage.get("longrepr") or "").strip()[-300:]


def _stage_text(stage: dict[str, Any]) -> str:
    crash = as_object(stage.get("crash"))
    message = str(crash.get("message") or "")
    longrepr = str(stage.get("longrepr") or "")
    return f"{message}\n{longrepr}".strip() if longrepr and longrepr != message else message or longrepr


def _markers(test: dict[str, Any], root: str) -> list[str]:
    """Custom markers: the keywords that are not a node name of the test (its file, class,
    function, parameters, directories up to pytest's rootdir), nor pytest's own marks."""
    nodeid = test["nodeid"]
    names = {"", *Path(root).parts}
    for part in nodeid.replace("::", "/").split("/"):
        names.add(part)
        if "[" in part:
            base, _, param = part.partition("[")
            names.update({base, param.rstrip("]")})
    keywords = test["keywords"] if isinstance(test.get("keywords"), list) else []
    return sorted({k for k in keywords if isinstance(k, str) and k and k not in names and k not in _BUILTIN_MARKS})


def _tags(test: dict[str, Any], root: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(default slice candidates, everything --slice-key may name) of a test."""
    default: dict[str, Any] = {}
    for prop in test.get("user_properties") or []:
        if isinstance(prop, dict):
            default.update(prop)
    if isinstance(test.get("metadata"), dict):
        default.update(test["metadata"])
    markers = _markers(test, root)
    if markers:
        default["marker"] = ",".join(markers)
    parts = test["nodeid"].split("::")
    named = {"file": parts[0], **({"class": "::".join(parts[1:-1])} if len(parts) > 2 else {}), **default}
    return default, named


def _attempt(test: dict[str, Any]) -> Attempt:
    outcome = test["outcome"]
    stages = {s: test[s] for s in _STAGES if isinstance(test.get(s), dict)}
    seconds = [as_number(stage.get("duration")) for stage in stages.values()]
    total = sum(s for s in seconds if s is not None) if any(s is not None for s in seconds) else None
    broken = [s for s, stage in stages.items() if stage.get("outcome") == "failed"]
    text = "\n".join(f"{s}: {_stage_text(stages[s])}" for s in broken) or None
    error = None
    if outcome == "error":
        call_failed = stages.get("call", {}).get("outcome") == "failed"
        exceptions = "; ".join(f"{s}: {_exception(stages[s])}" for s in broken)
        kind = "target" if call_failed else error_kind(exceptions)
        error = make_error(kind, exceptions or "error in setup or teardown")
    return attempt(
        passed=outcome in ("passed", "xpassed"),
        score=1.0 if outcome in ("passed", "xpassed") else 0.0 if outcome == "failed" else None,
        latency_ms=total * 1000 if total is not None else None,
        output=text if outcome not in ("passed", "xpassed") else None,
        error=error,
        metadata={"outcome": outcome, **({"failed_stages": broken} if broken else {})},
    )


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    cases: dict[str, CaseResult] = {}
    default_tags: dict[str, dict[str, Any]] = {}
    named_tags: dict[str, dict[str, Any]] = {}
    left_out: dict[str, list[str]] = {o: [] for o in _LEFT_OUT}
    counted = dict.fromkeys(OUTCOMES, 0)
    summaries: list[dict[str, Any]] = []
    collection_errors: list[str] = []
    exitcodes: list[Any] = []
    expected_total = 0
    for path in inputs:
        report = _report(path)
        summaries.append(report["summary"])
        exitcodes.append(report.get("exitcode"))
        for collector in report.get("collectors") or []:
            if isinstance(collector, dict) and collector.get("outcome") == "failed":
                first = str(collector.get("longrepr") or "").strip().splitlines()[-1:] or [""]
                collection_errors.append(f"{collector.get('nodeid') or '(root)'}: {first[0][:300]}")
        # pytest's collected count covers tests that never ran (a collection error interrupts the run).
        collected = report["summary"].get("collected")
        ran = len(report["tests"])
        expected_total = max(expected_total, int(collected) if isinstance(collected, int) else ran)
        for test in report["tests"]:
            outcome = test["outcome"]
            counted[outcome] += 1
            node = test["nodeid"]
            if outcome in _LEFT_OUT:
                left_out[outcome].append(node)
                continue
            if node not in cases:
                cases[node] = new_case(node)
                default_tags[node], named_tags[node] = _tags(test, str(report.get("root") or ""))
            cases[node].attempts.append(_attempt(test))
    for outcome in _LEFT_OUT:
        left_out[outcome] = [n for n in dict.fromkeys(left_out[outcome]) if n not in cases]
    files = sorted({named_tags[n]["file"] for n in cases})
    if options.slice_keys is None:
        slices = choose_slices(default_tags, None)
        if len(files) > 1:
            for node in cases:
                slices[node]["file"] = named_tags[node]["file"]
        tags = {n: {**named_tags[n], **default_tags[n]} for n in cases}
    else:
        slices = choose_slices(named_tags, options.slice_keys)
        tags = named_tags
    for node, case in cases.items():
        case.slices = slices[node]
    n_left_out = sum(len(v) for v in left_out.values())
    status: RunStatus = "success"
    message = None
    if collection_errors:
        status = "error"
        message = f"{len(collection_errors)} collection error(s): {collection_errors[0]}"
    elif any(code in (2, 3) for code in exitcodes):
        status = "cancelled" if 2 in exitcodes else "error"
        message = f"pytest exited with code {', '.join(map(str, exitcodes))} (interrupted or internal error)"
    if not cases and not collection_errors and status == "success":
        where = inputs[0] if len(inputs) == 1 else ", ".join(map(str, inputs))
        raise InputFileError(
            where,
            f"no test ran ({counted['skipped']} skipped, {counted['xfailed']} xfailed)"
            if n_left_out
            else "the report holds no tests",
        )
    return build_results(
        cases.values(),
        fmt=FORMAT,
        inputs=inputs,
        suite=Path(files[0]).stem if len(files) == 1 else "pytest",
        options=options,
        status=status,
        message=message,
        total_cases=max(len(cases), expected_total - n_left_out),
        source={
            "summary": summaries[0] if len(summaries) == 1 else summaries,
            "outcomes_counted": counted,
            "skipped": len(left_out["skipped"]),
            "skipped_ids": left_out["skipped"][:_IDS_KEPT],
            "xfailed": len(left_out["xfailed"]),
            "xfailed_ids": left_out["xfailed"][:_IDS_KEPT],
            "collection_errors": collection_errors[:_IDS_KEPT],
            "exitcodes": exitcodes,
        },
        tags=tags,
    )

"""JUnit XML (pytest ``--junitxml``, node ``--test-reporter=junit``, Maven Surefire, ...).

A case is ``classname::name`` (prefixed by its suite when two suites hold the same one). The
``<testcase>`` elements are counted, never the suite header: pytest's header can count a
teardown error as an extra test, and some writers repeat a test case for it; repeats of one case
in one file are merged, keeping the worst outcome. The same case in several files (reruns) gives
several attempts. ``<failure>`` is a wrong answer, ``<error>`` an error (infra only when its
message names a connection or capacity failure), ``<skipped>`` cases are left out and counted.
``<properties>`` become slices."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from evals.common.errors import InputFileError
from evals.importers.common import (
    ImportOptions,
    as_number,
    attempt,
    build_results,
    choose_slices,
    make_error,
    new_case,
    not_format,
    read_text,
)
from evals.results.infra import error_kind
from evals.results.model import CaseResult, Results

FORMAT = "junit"
_OUTCOME_RANK = {"passed": 0, "failure": 1, "error": 2}
_SKIPPED_IDS_KEPT = 100


def _parse(path: Path) -> ET.Element:
    text = read_text(path)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        line = exc.position[0] if exc.position else None
        if not text.lstrip().startswith("<"):
            raise not_format(path, FORMAT, "not XML") from None
        raise InputFileError(f"{path}:{line}" if line else path, f"invalid XML: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise not_format(path, FORMAT, f"the root element is <{root.tag}>, not <testsuites> or <testsuite>")
    return root


def _testcases(root: ET.Element) -> list[tuple[str, ET.Element]]:
    """(enclosing suite name, testcase) for every testcase, in document order."""
    found: list[tuple[str, ET.Element]] = []

    def walk(element: ET.Element, suite: str) -> None:
        for child in element:
            if child.tag == "testsuite":
                walk(child, child.get("name") or suite)
            elif child.tag == "testcase":
                found.append((suite, child))

    walk(root, root.get("name") or "")
    return found


def _outcome(testcase: ET.Element) -> tuple[str, str | None]:
    """('passed'|'failure'|'error'|'skipped', message text)."""
    for tag in ("error", "failure", "skipped"):
        element = testcase.find(tag)
        if element is not None:
            message = element.get("message") or ""
            body = (element.text or "").strip()
            text = f"{message}\n{body}".strip() if body and body != message else message
            return tag, text or element.get("type") or tag
    return "passed", None


def _properties(testcase: ET.Element) -> dict[str, str]:
    return {
        prop.get("name", ""): prop.get("value", prop.text or "")
        for prop in testcase.iter("property")
        if prop.get("name")
    }


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    cases: dict[str, CaseResult] = {}
    tags: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    header_tests = 0
    suites: list[str] = []
    for path in inputs:
        root = _parse(path)
        header_tests += sum(
            int(s.get("tests") or 0) for s in root.iter("testsuite") if (s.get("tests") or "").isdigit()
        )
        entries = _testcases(root)
        suites.extend(s.get("name") or "" for s in root.iter("testsuite"))
        base_ids = [
            f"{tc.get('classname')}::{tc.get('name')}" if tc.get("classname") else str(tc.get("name") or "")
            for _suite, tc in entries
        ]
        suites_of: dict[str, set[str]] = {}
        for (suite, _tc), base in zip(entries, base_ids, strict=True):
            suites_of.setdefault(base, set()).add(suite)
        # merged[id] = (outcome, message, seconds, properties) for this file
        merged: dict[str, tuple[str, str | None, float | None, dict[str, str]]] = {}
        for (suite, testcase), base in zip(entries, base_ids, strict=True):
            if not base:
                raise InputFileError(path, "a <testcase> has no name")
            case_id = f"{suite}/{base}" if len(suites_of[base]) > 1 else base
            outcome, message = _outcome(testcase)
            seconds = as_number(_float(testcase.get("time")))
            props = _properties(testcase)
            if case_id in merged:
                old = merged[case_id]
                worse = outcome if _OUTCOME_RANK.get(outcome, -1) > _OUTCOME_RANK.get(old[0], -1) else old[0]
                message = message if worse == outcome else old[1]
                total = (old[2] or 0.0) + (seconds or 0.0) if old[2] is not None or seconds is not None else None
                merged[case_id] = (worse, message, total, {**old[3], **props})
            else:
                merged[case_id] = (outcome, message, seconds, props)
        for case_id, (outcome, message, seconds, props) in merged.items():
            if outcome == "skipped":
                skipped.append(case_id)
                continue
            error = None
            if outcome == "error":
                error = make_error(error_kind(message or ""), message or "error")
            if case_id not in cases:
                cases[case_id] = new_case(case_id)
                tags[case_id] = dict(props)
            cases[case_id].attempts.append(
                attempt(
                    passed=outcome == "passed",
                    score=1.0 if outcome == "passed" else 0.0 if outcome == "failure" else None,
                    latency_ms=seconds * 1000 if seconds is not None else None,
                    output=message if outcome != "passed" else None,
                    error=error,
                )
            )
    # A case skipped in one file but run in another is a run case.
    skipped = [s for s in dict.fromkeys(skipped) if s not in cases]
    slices = choose_slices(tags, options.slice_keys)
    for case_id, case in cases.items():
        case.slices = slices[case_id]
    suite_names = [s for s in dict.fromkeys(suites) if s]
    return build_results(
        cases.values(),
        fmt=FORMAT,
        inputs=inputs,
        suite=suite_names[0] if len(suite_names) == 1 else "junit",
        options=options,
        total_cases=len(cases),
        source={
            "skipped": len(skipped),
            "skipped_ids": skipped[:_SKIPPED_IDS_KEPT],
            "testcases_counted": sum(len(c.attempts) for c in cases.values()) + len(skipped),
            "header_tests": header_tests,
            "suites": suite_names,
        },
        tags=tags,
    )


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None

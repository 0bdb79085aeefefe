"""``--from auto``: recognise a harness's output by its content, never by its file name (names
like ``results.json`` are shared by half the tools)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.common import jsonsafe
from evals.common.errors import InputFileError, UsageError
from evals.results.files import json_problem, looks_truncated, read_json_bytes

# Directory scans look this deep: a Harbor job is job/trial/result.json; lm-eval writes
# output/<model>/samples_*.jsonl.
_MAX_DEPTH = 3
_SNIFF_LINES = 5


def _json_kind(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    if {"schema_version", "run", "cases"} <= obj.keys():
        return "evalgate"
    results = obj.get("results")
    if isinstance(results, dict) and "version" in results and isinstance(results.get("results"), list):
        return "promptfoo"
    if isinstance(obj.get("eval"), dict) and "task" in obj["eval"] and "version" in obj:
        return "inspect_ai"
    if "trial_name" in obj and "task_name" in obj:
        return "harbor"
    if "n_total_trials" in obj and "stats" in obj:
        return "harbor"
    if _braintrust_row(obj) or (
        isinstance(obj.get("events"), list) and obj["events"] and _braintrust_row(obj["events"][0])
    ):
        return "braintrust"
    if isinstance(obj.get("testRunData"), dict) or (
        isinstance(obj.get("testCases"), list) and {"testPassed", "metricsScores", "testFile"} & obj.keys()
    ):
        return "deepeval"
    if isinstance(obj.get("test_results"), list) and {"confident_link", "test_run_id"} & obj.keys():
        return "deepeval"
    if isinstance(obj.get("summary"), dict) and {"exitcode", "root"} <= obj.keys():
        return "pytest_json"
    if "spec" in obj or "final_report" in obj or {"sample_id", "type", "data"} <= obj.keys():
        return "openai_evals"
    if "doc_id" in obj and ({"filter", "filtered_resps", "resps"} & obj.keys()):
        return "lm_eval"
    # lm-eval's results_<date>.json: the importer then says it lacks the per-document samples.
    if isinstance(results, dict) and isinstance(obj.get("configs"), dict) and {"versions", "n-shot"} & obj.keys():
        return "lm_eval"
    return None


def _braintrust_row(obj: Any) -> bool:
    """A Braintrust experiment row (span): its ids and the experiment or span attributes."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("span_id"), str)
        and "root_span_id" in obj
        and bool({"span_attributes", "experiment_id"} & obj.keys())
    )


def _sniff_text(text: str) -> tuple[str | None, str | None]:
    """(format, why it is none) of a file's text."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("<"):
        try:
            for _event, element in ET.iterparse(_StringReader(stripped), events=("start",)):
                return ("junit", None) if element.tag in ("testsuites", "testsuite") else (None, None)
        except ET.ParseError as exc:
            return None, f"invalid XML ({exc})"
        return None, None
    if stripped.startswith("["):
        # A JSON list: a Braintrust export's rows.
        try:
            rows = jsonsafe.loads(stripped)
        except json.JSONDecodeError as exc:
            problem = f"invalid JSON: {json_problem(exc)}"
            return None, problem + ("; the file looks truncated" if looks_truncated(exc) else "")
        return ("braintrust", None) if rows and _braintrust_row(rows[0]) else (None, None)
    if not stripped.startswith("{"):
        return None, None
    try:
        return _json_kind(jsonsafe.loads(stripped)), None
    except json.JSONDecodeError as exc:
        problem = f"invalid JSON: {json_problem(exc)}"
        if looks_truncated(exc):
            problem += "; the file looks truncated"
    # JSON lines: any of the first lines tells. "\n" only ends a line (see common.iter_jsonl).
    for line in [line for line in stripped.split("\n") if line.strip()][:_SNIFF_LINES]:
        try:
            kind = _json_kind(jsonsafe.loads(line))
        except json.JSONDecodeError:
            return None, problem
        if kind in ("openai_evals", "lm_eval", "braintrust"):
            return kind, None
    return None, problem


class _StringReader:
    """ElementTree.iterparse wants a file; feed it the text lazily so only the root is parsed."""

    def __init__(self, text: str):
        self._data = text.encode("utf-8")
        self._pos = 0

    def read(self, size: int = -1) -> bytes:
        size = 65536 if size is None or size < 0 else size
        chunk = self._data[self._pos : self._pos + size]
        self._pos += len(chunk)
        return chunk


def _sniff_file(path: Path) -> tuple[str | None, str | None]:
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        return None, f"cannot read: {exc}"
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except (zipfile.BadZipFile, OSError) as exc:
            return None, f"a zip file cut short or damaged ({exc}); an inspect_ai .eval log copied while being written?"
        return ("inspect_ai", None) if {"header.json", "_journal/start.json"} & names else (None, None)
    try:
        raw = read_json_bytes(path)
    except InputFileError as exc:
        return None, exc.problem
    if not raw.strip():
        return None, "the file is empty"
    try:
        return _sniff_text(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return None, None


def _sniff_dir(path: Path) -> str | None:
    found: set[str] = set()
    for child in sorted(_walk(path, _MAX_DEPTH)):
        if child.suffix in (".json", ".jsonl"):
            kind, _problem = _sniff_file(child)
            if kind in ("harbor", "lm_eval"):
                found.add(kind)
    return found.pop() if len(found) == 1 else None


def _walk(root: Path, depth: int) -> Iterator[Path]:
    for child in root.iterdir():
        if child.is_dir() and depth > 1:
            yield from _walk(child, depth - 1)
        elif child.is_file():
            yield child


def sniff(path: Path) -> str | None:
    """The format ``path`` holds, or None when it is none of them."""
    path = Path(path)
    if path.is_dir():
        return _sniff_dir(path)
    return _sniff_file(path)[0]


def detect_format(inputs: list[Path]) -> str:
    """One format for all inputs, or a UsageError naming the file that is not recognised."""
    kinds: dict[str, list[Path]] = {}
    for path in inputs:
        if not path.exists():
            raise InputFileError(path, "file not found")
        kind, problem = (_sniff_dir(path), None) if path.is_dir() else _sniff_file(path)
        if kind is None:
            if problem:
                raise InputFileError(path, f"{problem}: cannot tell which harness wrote it")
            raise InputFileError(
                path,
                "not a recognised results file (evalgate, promptfoo, inspect_ai, lm_eval, openai_evals, harbor, junit,"
                " deepeval, pytest_json, braintrust)",
                "pass --from FORMAT to get the reason it does not parse as that format",
            )
        kinds.setdefault(kind, []).append(path)
    if len(kinds) > 1:
        listing = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in kinds.items())
        raise UsageError(f"inputs hold different formats ({listing}); import them separately")
    return next(iter(kinds))

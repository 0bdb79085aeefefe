"""A lean run (``evals.compare.lazyload``) is recorded from its columns and per-case JSON, without
building models: the rows and the digest must be exactly those the model path writes for the
same file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.compare.lazyload import CaseList, LazyResults, load_lazy
from evals.history import open_history
from evals.history.record import Writer
from evals.history.rows import LeanRows, run_digest
from evals.results.files import load_results
from evals.results.model import Results
from evals.results.trace import build_trace

TABLES = {
    "runs": "SELECT * FROM runs ORDER BY id",
    "cases": "SELECT * FROM cases ORDER BY rowid",
    "case_slices": "SELECT * FROM case_slices ORDER BY rowid",
    "attempts": "SELECT * FROM attempts ORDER BY rowid",
    "events": "SELECT * FROM events ORDER BY rowid",
}


def write_file(path: Path, evalgate_version: str | None) -> None:
    """Cases as a hand-written (or another tool's) file may hold them: numbers written as ints
    where the models hold floats, fields left out, errors, named scores, outputs of every JSON
    type, secrets to mask, slices, several attempts, cases without attempts, traces."""
    trace = build_trace(
        [
            {"kind": "message", "name": "user", "content": "token=abc123secretvalue"},
            {"kind": "tool_call", "name": "calc", "content": "1+1"},
            {"kind": "tool_result", "name": "calc", "content": "2"},
            {"kind": "message", "name": "assistant", "content": "2"},
        ]
    )
    cases: list[dict[str, Any]] = []
    for i in range(11):
        attempts: list[dict[str, Any]] = []
        for k in range(i % 4):  # 0 to 3 attempts
            a: dict[str, Any] = {"passed": (i + k) % 3 != 0, "score": 1 if (i + k) % 3 else 0.25, "latency_ms": 5 + i}
            if i % 2:
                a |= {"tokens_in": 10 + i, "tokens_out": 3, "cost_usd": 0.001 * i, "retries": k}
            if i % 3 == 0:
                a["scores"] = {"format_valid": 1, "judge": 0.5}
            if i == 5 and k == 1:
                a = {"error": {"kind": "target", "message": "Bearer sk-abcdefghijklmnopqrstuvwxyz1234 refused"}}
            if i == 7 and k == 2:
                a = {"error": {"kind": "infra", "message": "HTTP 503"}, "latency_ms": 2.0, "retries": 2}
            a["output"] = [f"out {i}", {"n": k}] if i % 5 == 0 else f"FINAL ANSWER: {i} password=hunter2hunter2"
            if i % 4 == 1:
                a |= {"output_sha256": f"sha256:{i}{k}", "output_truncated": True}
            if i % 4 == 3 and k:
                a["cached"] = True  # answered from the response cache
            if i in (2, 6, 10):
                a["trace"] = [e.model_dump(exclude_none=True) for e in trace]
            attempts.append(a)
        case: dict[str, Any] = {"id": f"c{i}", "attempts": attempts, "input": {"q": f"question {i}"}}
        if i % 3:
            case["slices"] = {"language": "ko" if i % 2 else "en", "topic": f"t{i % 2}"}
        if i % 2:
            case |= {"hash": f"sha256:h{i}", "expected": "42", "metadata": {"m": i}}
        cases.append(case)
    run: dict[str, Any] = {"suite": "demo", "status": "success", "total_cases": 11, "completed_cases": 10}
    run |= {"git_sha": "a" * 40, "target": {"kind": "http", "model": "m", "params": {"api_key": "sk-live-1"}}}
    if evalgate_version:
        run["evalgate_version"] = evalgate_version
    path.write_text(json.dumps({"schema_version": 1, "run": run, "cases": cases}), encoding="utf-8")


def recorded(url: str, results: Results | LazyResults) -> dict[str, list[tuple[Any, ...]]]:
    with open_history(url) as db:
        Writer(db).run(results, recorded_by="compare")
        tables = {name: db.query(sql) for name, sql in TABLES.items()}
    recorded_at = 22  # differs by the clock only
    tables["runs"] = [row[:recorded_at] + row[recorded_at + 1 :] for row in tables["runs"]]
    return tables


@pytest.mark.parametrize("evalgate_version", [None, "0.9.0"], ids=["masked", "evalgate-made"])
@pytest.mark.parametrize("chunk", [3, 4096])
def test_lean_run_records_the_rows_and_digest_of_the_model_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evalgate_version: str | None, chunk: int
) -> None:
    monkeypatch.setattr(LeanRows, "CHUNK", chunk)  # chunks of cases, and one chunk for the whole run
    path = tmp_path / "run.json"
    write_file(path, evalgate_version)
    models, lean = load_results(path), load_lazy(path)
    assert isinstance(lean, LazyResults)
    assert run_digest(lean) == run_digest(models)
    by_models = recorded(str(tmp_path / "models.sqlite"), models)
    by_lean = recorded(str(tmp_path / "lean.sqlite"), lean)
    assert {name: len(rows) for name, rows in by_models.items()} == {
        "runs": 1, "cases": 11, "case_slices": 14, "attempts": 15, "events": 24,
    }  # fmt: skip
    assert by_lean == by_models
    masked = json.dumps(by_models["attempts"])
    assert ("hunter2hunter2" in masked) == bool(evalgate_version)


@pytest.mark.parametrize("evalgate_version", [None, "0.9.0"], ids=["masked", "evalgate-made"])
def test_a_run_just_written_records_from_its_cases_json_what_the_models_record(
    tmp_path: Path, evalgate_version: str | None
) -> None:
    """``evalgate run`` records its run from the cases' JSON it holds, parsed a chunk at a time and
    keeping of each attempt what the columns read, not as models (45 MB at 10,000 cases: the
    default path's peak RSS past docs/spec.md#performance-targets)."""
    path = tmp_path / "run.json"
    write_file(path, evalgate_version)
    data = json.loads(path.read_text(encoding="utf-8"))
    models = load_results(path)
    held = LazyResults(1, models.run, CaseList.from_json([json.dumps(c).encode() for c in data["cases"]], chunk=4))
    assert run_digest(held) == run_digest(models)
    lean = load_lazy(path)
    assert isinstance(lean, LazyResults)
    assert held.cases.attempts.tools == lean.cases.attempts.tools  # the trace's tool calls are kept
    assert recorded(str(tmp_path / "held.sqlite"), held) == recorded(str(tmp_path / "models.sqlite"), models)


@pytest.mark.parametrize("evalgate_version", [None, "0.9.0"], ids=["masked", "evalgate-made"])
def test_a_run_just_written_is_recorded_in_one_pass_as_the_models_record_it_and_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evalgate_version: str | None
) -> None:
    """``evalgate run`` records its run from the cases' JSON parsed once, each chunk's rows going
    in as it is parsed, under a digest set at the end: the same rows as the models', and a run
    recorded already is not recorded again (its id is given, its cases added if it had none)."""
    monkeypatch.setattr(LeanRows, "CHUNK", 4)  # several chunks, the last one short
    path = tmp_path / "run.json"
    write_file(path, evalgate_version)
    data = json.loads(path.read_text(encoding="utf-8"))
    models = load_results(path)
    case_json = [json.dumps(c).encode() for c in data["cases"]]
    url = str(tmp_path / "written.sqlite")
    with open_history(url) as db:
        first = Writer(db).written(models.run, case_json, recorded_by="compare")
        assert Writer(db).written(models.run, case_json, recorded_by="compare") == first
        assert db.query("SELECT count(*) FROM runs") == [(1,)]
        tables = {name: db.query(sql) for name, sql in TABLES.items()}
    tables["runs"] = [row[:22] + row[23:] for row in tables["runs"]]  # recorded_at: the clock's
    assert tables == recorded(str(tmp_path / "models.sqlite"), models)
    header_only = str(tmp_path / "header.sqlite")
    with open_history(header_only) as db:
        run_id = Writer(db).run(models, recorded_by="compare", cases=False)
        assert Writer(db).written(models.run, case_json, recorded_by="compare") == run_id
        assert db.query("SELECT count(*) FROM cases") == [(11,)]

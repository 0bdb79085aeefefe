"""The DeepEval, pytest-json-report and Braintrust importers (docs/spec.md#importers) on files the tools wrote
here, offline (tests/fixtures/README.md says how): counts checked against the tools' own
summaries, errors kept apart from failures, ``--from auto`` detection next to the older formats,
and an import → gate round trip where a broken slice fails the gate."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from fakes.paths import FIXTURES
from test_importers import ALL

from evals.common.errors import InputFileError
from evals.compare.analysis import compare
from evals.compare.casediff import grader_reasoning
from evals.importers import import_results
from evals.importers.deepeval import metric_errored
from evals.importers.detect import sniff
from evals.results.files import load_results, save_results
from evals.results.infra import infra_cause
from evals.results.model import Results
from evals.suite.config import SuiteConfig
from evals.suite.gate import GateSpec

FIX = FIXTURES / "importers"
DEEPEVAL_CLI = FIX / "deepeval" / "latest_test_run_cli.json"
DEEPEVAL_EVALUATE = FIX / "deepeval" / "test_run_evaluate.json"
DEEPEVAL_RESULT = FIX / "deepeval" / "evaluation_result.json"
PYTEST_JSON = FIX / "pytest_json" / "report.json"
PYTEST_JSON_COLLECTION = FIX / "pytest_json" / "report_collection_error.json"
BRAINTRUST = FIX / "braintrust" / "support_bot_rows.jsonl"

NEW = [
    ("deepeval", DEEPEVAL_CLI),
    ("deepeval", DEEPEVAL_EVALUATE),
    ("deepeval", DEEPEVAL_RESULT),
    ("pytest_json", PYTEST_JSON),
    ("pytest_json", PYTEST_JSON_COLLECTION),
    ("braintrust", BRAINTRUST),
]
SCALE = 30


def by_id(results: Results):
    return {c.id: c for c in results.cases}


def outcome(a) -> str:
    """'pass', 'fail', or 'error:<kind>' of one attempt."""
    if a.error is not None:
        return f"error:{a.error.kind}"
    return {True: "pass", False: "fail", None: "none"}[a.passed]


def gate_config(*runs: Results, slices: list[str] | None = None) -> SuiteConfig:
    keys = slices if slices is not None else sorted({k for run in runs for c in run.cases for k in c.slices})
    return SuiteConfig(suite=runs[0].run.suite, cases="imported", slices=keys, gate=GateSpec(max_error_rate=0.9))


# ---------------------------------------------------------------------------------- DeepEval


def test_deepeval_test_run_counts_match_deepevals_own_totals():
    """`deepeval test run -i`: each test case's metrics are named scores, a case passes when all
    of them succeeded; DeepEval's testPassed/testFailed and metricsScores agree with the import."""
    raw = json.loads(DEEPEVAL_CLI.read_text())["testRunData"]
    r = import_results("deepeval", [DEEPEVAL_CLI])
    cases = by_id(r)
    assert r.run.suite == "support_bot_checks" and r.run.source["test_file"] == "support_bot_checks.py"
    assert len(r.cases) == len(raw["testCases"]) == 6
    outcomes = Counter(outcome(c.attempts[0]) for c in r.cases)
    assert outcomes == {"pass": 2, "fail": 2, "error:infra": 1, "error:scorer": 1}
    # DeepEval counts a case with an errored metric as failed; evalgate keeps it apart as an error.
    assert outcomes["pass"] == raw["testPassed"] == r.run.source["test_passed"][0]
    assert outcomes["fail"] + outcomes["error:infra"] + outcomes["error:scorer"] == raw["testFailed"]
    per_metric: dict[str, Counter] = {}
    for case in r.cases:
        for m in case.attempts[0].metadata["metrics"]:
            per_metric.setdefault(m["name"], Counter())[
                "errors" if metric_errored(m) else "passes" if m["success"] else "fails"
            ] += 1
    for summary in raw["metricsScores"]:
        got = per_metric[summary["metric"]]
        assert (got["passes"], got["fails"], got["errors"]) == (summary["passes"], summary["fails"], summary["errors"])
    # GEval's judge could not be reached: infra, no verdict; the two metrics that ran are kept.
    sso = cases["test_support_answer[billing-sso]"].attempts[0]
    assert sso.passed is None and sso.error.kind == "infra" and "APIConnectionError" in sso.error.message
    assert sso.scores == {"Exact Answer": 1.0, "Brevity": 0.9583}
    assert r.run.completed_cases == 5 and r.run.total_cases == 6
    # A metric that cannot run on the case (missing retrieval_context) is the scorer's error...
    italy = cases["test_support_answer[geo-italy]"].attempts[0]
    assert italy.error.kind == "scorer" and "retrieval_context" in italy.error.message
    # ...but next to a metric that failed, the case is a plain failure.
    reset = cases["test_support_answer[account-reset]"].attempts[0]
    assert reset.passed is False and reset.error is None and reset.score == pytest.approx((0 + 0.7917) / 2)
    assert cases["test_support_answer[math-add]"].slices == {"category": "math", "language": "en"}
    # Each metric's reason is the case's grader reasoning, failing metrics first, as the report shows it.
    reasoning = grader_reasoning(reset.metadata)
    assert reasoning.startswith("Exact Answer (failed, score 0.0, threshold 1.0): expected 'open settings")
    assert "Brevity (passed, score 0.7917, threshold 0.5): 13 words" in reasoning
    assert all(c.hash for c in r.cases) and cases["test_support_answer[math-div]"].input == "What is 10 / 4?"


def test_deepeval_evaluate_run_and_its_returned_result_import_alike():
    """evaluate()'s test run file (DEEPEVAL_RESULTS_FOLDER) and its returned EvaluationResult
    (model_dump_json) are the same run: the same cases, verdicts and scores."""
    run = import_results("deepeval", [DEEPEVAL_EVALUATE])
    result = import_results("deepeval", [DEEPEVAL_RESULT])
    raw = json.loads(DEEPEVAL_EVALUATE.read_text())
    assert [c.id for c in run.cases] == [f"test_case_{i}" for i in range(6)]
    assert run.run.target.params == {"model": "canned-support-bot", "prompt version": "v1"}
    assert run.run.target.model == "canned-support-bot"
    for a, b in zip(run.cases, result.cases, strict=True):
        assert (a.id, a.hash, a.slices) == (b.id, b.hash, b.slices)
        assert [x.model_dump() for x in a.attempts] == [x.model_dump() for x in b.attempts]
    outcomes = Counter(outcome(c.attempts[0]) for c in run.cases)
    assert outcomes == {"pass": 3, "fail": 2, "error:scorer": 1}
    assert outcomes["pass"] == raw["testPassed"] and sum(outcomes.values()) - outcomes["pass"] == raw["testFailed"]


def test_deepeval_metric_option_and_reruns():
    brevity = import_results("deepeval", [DEEPEVAL_CLI], metric="Brevity")
    assert all(c.attempts[0].passed is True and c.attempts[0].error is None for c in brevity.cases)
    assert by_id(brevity)["test_support_answer[account-reset]"].attempts[0].score == 0.7917
    with pytest.raises(InputFileError, match=r"--metric 'Accuracy': no test case has that metric \(metrics: Brevity"):
        import_results("deepeval", [DEEPEVAL_CLI], metric="Accuracy")
    rerun = import_results("deepeval", [DEEPEVAL_CLI, DEEPEVAL_CLI])
    assert all(len(c.attempts) == 2 for c in rerun.cases)


# ------------------------------------------------------------------------ pytest-json-report


def test_pytest_json_outcomes_match_the_reports_summary():
    raw = json.loads(PYTEST_JSON.read_text())
    summary = raw["summary"]
    r = import_results("pytest_json", [PYTEST_JSON])
    cases = by_id(r)
    outcomes = Counter(c.attempts[0].metadata["outcome"] for c in r.cases)
    verdicts = Counter(outcome(c.attempts[0]).split(":")[0] for c in r.cases)
    assert r.run.source["skipped"] == summary["skipped"] == 2
    assert r.run.source["xfailed"] == summary["xfailed"] == 1
    assert len(r.cases) == summary["total"] - summary["skipped"] - summary["xfailed"] == 14
    assert verdicts["pass"] == summary["passed"] + summary["xpassed"]
    assert verdicts["fail"] == summary["failed"]
    assert verdicts["error"] == summary["error"]
    assert dict(outcomes) == {k: v for k, v in summary.items() if k in ("passed", "failed", "error", "xpassed")}
    assert r.run.source["outcomes_counted"] == {k: summary.get(k, 0) for k in r.run.source["outcomes_counted"]}
    # setup/teardown errors are errors, not failures; a refused connection in setup is infra.
    assert cases["checks/text_checks.py::test_needs_db"].attempts[0].error.kind == "target"
    model = cases["checks/text_checks.py::test_needs_model"].attempts[0]
    assert model.error.kind == "infra" and model.passed is None
    # its traceback quotes socket's getaddrinfo call; the cause is the exception, a refused connection
    assert model.error.message == "setup: ConnectionRefusedError: [Errno 111] Connection refused"
    assert infra_cause(model.error.message) == "connection" and "getaddrinfo" in model.output
    teardown = cases["checks/text_checks.py::test_teardown_breaks"].attempts[0]
    assert teardown.error.message == "teardown: RuntimeError: cleanup failed"
    assert "def scratch_dir():" in teardown.output  # the traceback stays in the attempt's output
    both = cases["checks/text_checks.py::test_fails_then_teardown_breaks"].attempts[0]
    assert both.error.kind == "target" and both.metadata["failed_stages"] == ["call", "teardown"]
    # xpass passes; a strict xpass is pytest's failure.
    assert cases["checks/math_checks.py::test_unexpectedly_fine"].attempts[0].passed is True
    assert cases["checks/math_checks.py::test_strict_xpass"].attempts[0].passed is False
    assert r.run.completed_cases == 13 and r.run.is_complete is False


def test_pytest_json_slices_from_properties_markers_files_and_classes():
    r = by_id(import_results("pytest_json", [PYTEST_JSON]))
    assert r["checks/math_checks.py::test_multiply"].slices == {
        "category": "math",
        "language": "en",
        "marker": "smoke",
        "file": "checks/math_checks.py",
    }
    assert r["checks/math_checks.py::TestDivision::test_zero"].slices == {
        "marker": "slow",
        "file": "checks/math_checks.py",
    }
    named = by_id(import_results("pytest_json", [PYTEST_JSON], slice_keys=["class", "category"]))
    assert named["checks/math_checks.py::TestDivision::test_half"].slices == {"class": "TestDivision"}
    assert named["checks/text_checks.py::test_reverse"].slices == {"category": "text"}
    rerun = import_results("pytest_json", [PYTEST_JSON, PYTEST_JSON])
    assert all(len(c.attempts) == 2 for c in rerun.cases)


def test_pytest_json_collection_error_is_a_failed_run_not_an_empty_pass():
    r = import_results("auto", [PYTEST_JSON_COLLECTION])
    assert r.run.status == "error" and r.cases == []
    assert r.run.total_cases == 2 and r.run.completed_cases == 0
    assert "broken/broken_checks.py" in r.run.message and "ModuleNotFoundError" in r.run.message


def test_pytest_json_summary_only_report_is_refused(tmp_path):
    raw = json.loads(PYTEST_JSON.read_text())
    for key in ("tests", "collectors"):
        raw.pop(key)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(InputFileError, match="holds only the summary") as info:
        import_results("auto", [path])
    assert "--json-report-summary" in info.value.hint


# -------------------------------------------------------------------------------- Braintrust


def _bt_rows() -> list[dict]:
    return [json.loads(line) for line in BRAINTRUST.read_text().splitlines() if line.strip()]


def test_braintrust_rows_trials_scores_and_errors():
    rows = _bt_rows()
    roots = [row for row in rows if not row.get("span_parents")]
    r = import_results("braintrust", [BRAINTRUST])
    cases = by_id(r)
    assert sum(len(c.attempts) for c in r.cases) == len(roots) == r.run.source["root_spans"] == 12
    assert len(r.cases) == len({json.dumps(root["input"], sort_keys=True) for root in roots}) == 6
    assert all(len(c.attempts) == 2 for c in r.cases)  # trial_count=2
    assert r.run.source["scorers"] == ["exact_match", "brevity", "helpfulness"]
    assert r.run.source["metric"] == "exact_match" and r.run.source["metric_is_binary"] is True
    # Every score span's score is the case's named score, null (skipped) ones left out.
    score_spans = [row for row in rows if row["span_attributes"]["type"] == "score" and row.get("scores")]
    logged = Counter((name, value) for row in score_spans for name, value in row["scores"].items() if value is not None)
    imported = Counter((n, v) for c in r.cases for a in c.attempts for n, v in a.scores.items())
    assert imported == logged
    add = cases['{"question":"What is 2 + 2?"}']
    assert [outcome(a) for a in add.attempts] == ["pass", "pass"] and add.slices == {
        "category": "math",
        "language": "en",
    }
    assert add.expected == "4" and add.hash
    # The task's exception: a refused connection is infra, a ValueError the target's.
    order = cases['{"question":"Where is my order?"}'].attempts[0]
    assert order.error.kind == "infra"
    assert order.error.message == "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>"
    assert order.metadata["traceback"].startswith("Traceback (most recent call last):")
    summary = cases['{"question":"Summarise the attached file"}'].attempts[0]
    assert summary.error.kind == "target" and summary.passed is False
    # The main scorer raised (no expected answer): a scorer error, the other scores kept.
    italy = cases['{"question":"Quelle est la capitale de l\'Italie ?"}'].attempts[0]
    assert italy.error.kind == "scorer" and "ValueError: this case has no expected answer" in italy.error.message
    assert italy.scores == {"brevity": 1.0}
    # A judge that could not be reached, next to a main score: the verdict stands, the error is kept.
    sso = cases['{"question":"Which plan includes SSO?"}']
    assert sso.slices["tag"] == "judge"
    first = sso.attempts[0]
    assert first.passed is False and first.error is None
    assert first.metadata["scorer_errors"] == {"helpfulness": "openai.APIConnectionError: Connection error."}
    assert grader_reasoning(first.metadata) == "brevity (0.75): 14 words (limit 8)"
    assert Counter(outcome(a) for c in r.cases for a in c.attempts) == {
        "pass": 2,
        "fail": 4,
        "error:infra": 2,
        "error:target": 2,
        "error:scorer": 2,
    }


def test_braintrust_export_shapes_and_metric_option(tmp_path):
    rows = _bt_rows()
    jsonl = import_results("braintrust", [BRAINTRUST])
    as_list = tmp_path / "export.json"
    as_list.write_text(json.dumps(rows))
    fetched = tmp_path / "fetch.json"
    fetched.write_text(json.dumps({"events": rows, "cursor": None}))
    for path in (as_list, fetched):
        assert sniff(path) == "braintrust"
        other = import_results("auto", [path])
        assert [c.model_dump() for c in other.cases] == [c.model_dump() for c in jsonl.cases]
    brevity = import_results("braintrust", [BRAINTRUST], metric="brevity")
    assert brevity.run.source["metric_is_binary"] is False
    sso = by_id(brevity)['{"question":"Which plan includes SSO?"}'].attempts[0]
    assert sso.passed is None and sso.score == 0.75
    with pytest.raises(InputFileError, match=r"--metric 'accuracy': no such score \(scores: exact_match"):
        import_results("braintrust", [BRAINTRUST], metric="accuracy")


def test_braintrust_root_rows_without_scores_are_refused(tmp_path):
    """The Python SDK logs scores on the score spans: an export of the root rows alone has none."""
    path = tmp_path / "roots.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _bt_rows() if not row.get("span_parents")))
    with pytest.raises(InputFileError, match="no scores in its 12 rows") as info:
        import_results("auto", [path])
    assert "export every span" in info.value.hint


# -------------------------------------------------------------------------- detection, CLI


@pytest.mark.parametrize(("fmt", "path"), NEW, ids=lambda v: v.name if isinstance(v, Path) else v)
def test_auto_detects_the_new_formats_by_content(fmt, path, tmp_path):
    neutral = tmp_path / "input"
    shutil.copy(path, neutral)
    assert sniff(neutral) == fmt
    a, b = import_results(fmt, [path]).model_dump(), import_results("auto", [neutral]).model_dump()
    for side in (a, b):
        side["run"]["source"].pop("files")
        side["run"]["message"] = None
    assert a == b


def test_every_older_fixture_still_detects_as_before():
    for fmt, path in ALL:
        assert sniff(path) == fmt, path


def run_cli(*args: str, python_exe: str) -> subprocess.CompletedProcess:
    return subprocess.run([python_exe, "-m", "evals", "import", *args], capture_output=True, text=True, timeout=60)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("make_input", "fmt", "expected"),
    [
        (lambda tmp: PYTEST_JSON, "deepeval", r"report\.json: not a deepeval file: .*looks like pytest_json"),
        (lambda tmp: DEEPEVAL_CLI, "braintrust", r"not a braintrust file: .*looks like deepeval"),
        (lambda tmp: BRAINTRUST, "pytest_json", r"not a pytest_json file: .*looks like braintrust"),
        (
            lambda tmp: _write(tmp / "latest.json", '{"testRunLink": "https://app.confident-ai.com/x"}'),
            "deepeval",
            r"latest\.json: holds only the link to the run on Confident AI.*DEEPEVAL_RESULTS_FOLDER",
        ),
        (
            lambda tmp: _write(tmp / "dataset.jsonl", '{"id": "1", "input": "q", "expected": "a"}\n'),
            "braintrust",
            r"dataset\.jsonl: not a braintrust file: row 0 has no span_id/root_span_id",
        ),
        (
            lambda tmp: _write(
                tmp / "odd.json", '{"summary": {}, "exitcode": 0, "root": "/x", "tests": [{"nodeid": "t"}]}'
            ),
            "auto",
            r"odd\.json: tests\[0\] \(t\): outcome None is not one of",
        ),
        (
            lambda tmp: _write(tmp / "cut.json", DEEPEVAL_CLI.read_text()[:900]),
            "auto",
            r"cut\.json: invalid JSON.*truncated",
        ),
    ],
    ids=[
        "pytest-as-deepeval",
        "deepeval-as-braintrust",
        "braintrust-as-pytest",
        "link-only",
        "dataset",
        "outcome",
        "cut",
    ],
)
def test_bad_inputs_exit_2_naming_the_file_and_what_to_do(make_input, fmt, expected, tmp_path, python_exe):
    path = make_input(tmp_path)
    proc = run_cli("--from", fmt, str(path), "-o", str(tmp_path / "out.json"), python_exe=python_exe)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert re.search(expected, proc.stderr, re.DOTALL), proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_cli_imports_each_format_by_name(tmp_path, python_exe):
    for fmt, path, counts in (
        ("deepeval", DEEPEVAL_CLI, "6 cases (6 attempts) from deepeval"),
        ("pytest-json", PYTEST_JSON, "14 cases (14 attempts) from pytest_json"),
        ("braintrust", BRAINTRUST, "6 cases (12 attempts) from braintrust"),
    ):
        out = tmp_path / f"{fmt}.json"
        proc = run_cli("--from", fmt, str(path), "-o", str(out), python_exe=python_exe)
        assert proc.returncode == 0, proc.stderr
        assert counts in proc.stderr
        assert load_results(out) == import_results(fmt, [path])


# ----------------------------------------------------------------- import → gate round trip


def _scaled_deepeval(tmp: Path, broken: str | None) -> Path:
    """SCALE copies of every test case (renamed); the cases of category ``broken`` fail Exact Answer."""
    data = json.loads(DEEPEVAL_CLI.read_text())
    run = data["testRunData"]
    cases = []
    for k in range(SCALE):
        for case in run["testCases"]:
            case = copy.deepcopy(case)
            case["name"] = f"{case['name']}-r{k}"
            case["input"] = f"{case['input']} (r{k})"
            # an unreachable judge leaves a run incomplete (exit 3): the gate copies have none
            case["metricsData"] = [m for m in case["metricsData"] if "GEval" not in m["name"]]
            if case["metadata"]["category"] == broken:
                for metric in case["metricsData"]:
                    if metric["name"] == "Exact Answer":
                        metric.update(success=False, score=0.0, reason="flipped for the test")
                case["success"] = False
            cases.append(case)
    run["testCases"] = cases
    out = tmp / f"deepeval-{broken}.json"
    out.write_text(json.dumps(data))
    return out


def _scaled_pytest_json(tmp: Path, broken: str | None) -> Path:
    data = json.loads(PYTEST_JSON.read_text())
    tests = []
    for k in range(SCALE):
        for test in data["tests"]:
            if test["nodeid"].endswith("test_needs_model"):
                continue  # its infra error would leave the run incomplete (exit 3)
            test = copy.deepcopy(test)
            test["nodeid"] = f"{test['nodeid']}-r{k}"
            props = {key: v for p in test.get("user_properties") or [] for key, v in p.items()}
            if props.get("category") == broken and test["outcome"] == "passed":
                test["outcome"] = "failed"
                test["call"].update(outcome="failed", longrepr="AssertionError: flipped for the test")
            tests.append(test)
    data["tests"] = tests
    data["summary"] = dict(Counter(t["outcome"] for t in tests), total=len(tests), collected=len(tests))
    out = tmp / f"pytest-{broken}.json"
    out.write_text(json.dumps(data))
    return out


def _scaled_braintrust(tmp: Path, broken: str | None) -> Path:
    rows = _bt_rows()
    categories = {
        row["root_span_id"]: (row.get("metadata") or {}).get("category") for row in rows if not row.get("span_parents")
    }
    out = tmp / f"braintrust-{broken}.jsonl"
    with out.open("w") as fh:
        for k in range(SCALE):
            for row in rows:
                if categories[row["root_span_id"]] is None:
                    continue  # the task errors: an infra one would leave the run incomplete (exit 3)
                row = copy.deepcopy(row)
                row["root_span_id"] = f"{row['root_span_id']}-r{k}"
                row["span_id"] = f"{row['span_id']}-r{k}"
                row["span_parents"] = [f"{p}-r{k}" for p in row.get("span_parents") or []] or None
                if isinstance(row.get("input"), dict) and "question" in row["input"]:
                    row["input"] = {**row["input"], "copy": k}
                if (
                    categories[row["root_span_id"][: -len(f"-r{k}")]] == broken
                    and row["span_attributes"]["name"] == "exact_match"
                ):
                    row["scores"] = {"exact_match": 0.0}
                fh.write(json.dumps(row) + "\n")
    return out


ROUND_TRIPS = [
    ("deepeval", _scaled_deepeval, "geo", "category"),
    ("pytest_json", _scaled_pytest_json, "text", "category"),
    ("braintrust", _scaled_braintrust, "math", "category"),
]


@pytest.mark.parametrize(("fmt", "make", "broken", "key"), ROUND_TRIPS, ids=[r[0] for r in ROUND_TRIPS])
def test_import_gate_round_trip_a_broken_slice_fails(fmt, make, broken, key, tmp_path):
    baseline = import_results(fmt, [make(tmp_path, None)])
    out = tmp_path / "baseline.json.gz"
    save_results(baseline, out)
    assert load_results(out) == baseline
    same = compare(baseline, baseline, gate_config(baseline, slices=[key]))
    assert same.verdict == "pass", same.reason
    candidate = import_results("auto", [make(tmp_path, broken)])
    result = compare(baseline, candidate, gate_config(baseline, candidate, slices=[key]))
    assert result.verdict == "fail" and result.exit_code == 1, result.reason
    regressed = {u.unit for u in result.units if u.verdict == "regressed"}
    assert f"{key}={broken}" in regressed
    assert not {u for u in regressed if u.startswith(f"{key}=") and u != f"{key}={broken}"}
    flipped = result.case_diff.pass_to_fail
    assert flipped and all(e.slices[key] == broken for e in flipped)
    if fmt == "deepeval":  # the failing metric's reason is what the report shows as the grader's reasoning
        assert flipped[0].candidate_reasoning.startswith("Exact Answer (failed, score 0.0, threshold 1.0): flipped")


def test_gate_command_on_a_deepeval_run(tmp_path, python_exe):
    """`evalgate gate --results FILE --results-format deepeval --slice-key category`: seed, then fail."""
    (tmp_path / "evalgate.yml").write_text(
        "suite: support\ncases: cases.jsonl\ngate: {max_error_rate: 0.9}\nbaseline: {store: local, on_missing: seed}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}

    def gate(results: Path, *extra: str) -> subprocess.CompletedProcess:
        args = ["gate", "--mode", "compare", "--results", str(results), "--results-format", "deepeval"]
        return subprocess.run(
            [python_exe, "-m", "evals", *args, "--slice-key", "category", *extra],
            cwd=tmp_path,
            env={**env, "GITHUB_SHA": "1" * 40},
            capture_output=True,
            text=True,
            timeout=120,
        )

    seeded = gate(_scaled_deepeval(tmp_path, None), "--promote")
    assert seeded.returncode == 0, seeded.stderr
    failed = gate(_scaled_deepeval(tmp_path, "geo"))
    assert failed.returncode == 1, failed.stderr
    comparison = json.loads((tmp_path / ".evalgate" / "out" / "comparison.json").read_text())
    assert comparison["verdict"] == "fail"
    assert any(u["unit"] == "category=geo" and u["verdict"] == "regressed" for u in comparison["units"])


def test_show_slices_as_import_does(python_exe):
    proc = subprocess.run(
        [python_exe, "-m", "evals", "show", str(PYTEST_JSON), "--from", "pytest-json", "--slice-key", "class"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode in (0, 3), proc.stderr  # 3: a partial run (one infra error) says so
    units = re.findall(r"^(class=\S+)\s+(\d+)", proc.stdout, re.MULTILINE)
    assert units == [("class=TestDivision", "2")], proc.stdout
    assert "infra 1 (connection 1)" in proc.stdout


def test_a_braintrust_case_id_never_carries_a_secret_from_its_input(tmp_path):
    """Without a dataset record id a case is named by its input; an id is written as it is
    everywhere, so an input holding a key is named by its digest instead."""
    rows = _bt_rows()
    secret = "sk-live-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    for row in rows:
        if row.get("input") == {"question": "Which plan includes SSO?"}:
            row["input"] = {"question": f"Which plan includes SSO? my key is {secret}"}
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    imported = import_results("braintrust", [path])
    ids = [c.id for c in imported.cases]
    assert not any(secret[:12] in i for i in ids) and len(set(ids)) == len(ids)
    assert any(i.startswith("input #") for i in ids)
    assert secret not in imported.model_dump_json()

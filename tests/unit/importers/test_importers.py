"""Importers (docs/spec.md#importers) on real files made by the tools (tests/fixtures/README.md says how):
the mapping of each format, `--from auto`, a round trip through `compare` (pass, zero deltas),
modified copies that must regress, and bad files through the real CLI (exit 2)."""

from __future__ import annotations

import copy
import json
import os
import random
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
import zstandard
from fakes.paths import FIXTURES

from evals.common.errors import InputFileError, UsageError
from evals.compare.analysis import compare
from evals.importers import import_results
from evals.importers.detect import sniff
from evals.importers.inspect_ai import value_to_float
from evals.results.files import load_results, save_results
from evals.results.model import Results
from evals.suite.config import SuiteConfig
from evals.suite.gate import GateSpec

FIX = FIXTURES / "importers"
PROMPTFOO = FIX / "promptfoo" / "repeat2_results.json"
PROMPTFOO_2P = FIX / "promptfoo" / "two_providers_results.json"
INSPECT_EVAL = FIX / "inspect_ai" / "arith_3epochs.eval"
INSPECT_JSON = FIX / "inspect_ai" / "arith_2epochs.json"
INSPECT_PARTIAL = FIX / "inspect_ai" / "arith_error_partial.eval"
LM_EVAL = FIX / "lm_eval" / "run"
OPENAI = FIX / "openai_evals" / "autogpt_test_match_record.jsonl"
HARBOR = FIX / "harbor" / "toy-job"
HARBOR_PARTIAL = FIX / "harbor" / "toy-job-partial"
PYTEST_XML = FIX / "junit" / "pytest_junit.xml"
NODE_XML = FIX / "junit" / "node_junit.xml"

COMPLETE = [
    ("promptfoo", PROMPTFOO),
    ("promptfoo", PROMPTFOO_2P),
    ("inspect_ai", INSPECT_EVAL),
    ("inspect_ai", INSPECT_JSON),
    ("lm_eval", LM_EVAL),
    ("openai_evals", OPENAI),
    ("harbor", HARBOR),
    ("junit", PYTEST_XML),
    ("junit", NODE_XML),
]
ALL = [*COMPLETE, ("inspect_ai", INSPECT_PARTIAL), ("harbor", HARBOR_PARTIAL)]
# Replicas of each fixture case in the regression copies: enough paired cases for the gate's
# exact test to call flipped cases a significant drop.
# Enough copies of each fixture case for a comparison that can pass: with n unchanged cases the
# smoothed interval is ±1.645/(n + 2), inside a 0.02 band from n = 81 on.
SCALE = 30


def gate_config(*runs: Results) -> SuiteConfig:
    """An evalgate.yml for an imported suite. The fixtures hold deliberate errors (crashing
    providers, broken fixtures), so the error-rate guard is relaxed to let the gate compare."""
    keys = sorted({k for run in runs for case in run.cases for k in case.slices})
    return SuiteConfig(suite=runs[0].run.suite, cases="imported", slices=keys, gate=GateSpec(max_error_rate=0.5))


def by_id(results: Results):
    return {c.id: c for c in results.cases}


def same_mapping(a: Results, b: Results) -> None:
    """Equal apart from where the files were."""
    left, right = a.model_dump(), b.model_dump()
    assert (left["run"]["message"] is None) == (right["run"]["message"] is None)
    for side in (left, right):
        side["run"]["message"] = None  # names the file
        side["run"]["source"].pop("files", None)
        for key in ("results_files", "samples_files"):
            side["run"]["source"].pop(key, None)
    assert left == right


# ------------------------------------------------------------------------------------ mapping


def test_promptfoo_repeat_attempts_errors_and_named_scores():
    r = import_results("promptfoo", [PROMPTFOO])
    cases = by_id(r)
    assert list(cases) == [
        "france",
        '{"question":"What is 2+2?"}',
        '{"question":"What is the color of the sky?"}',
        "planet",
        "crash",
    ]
    assert all(len(c.attempts) == 2 for c in r.cases)  # --repeat 2, grouped
    assert r.run.attempts_per_case == 2
    # A failed assertion has `error` set in the file but is a wrong answer, not an error.
    sky = cases['{"question":"What is the color of the sky?"}'].attempts[0]
    assert sky.passed is False and sky.error is None and "blue" in sky.metadata["reason"]
    crash = cases["crash"].attempts[0]
    assert crash.error is not None and crash.error.kind == "target" and crash.passed is False
    assert cases['{"question":"What is 2+2?"}'].attempts[0].scores == {"accuracy": 1.0, "brevity": 1.0}
    assert cases["france"].slices == {"topic": "geo"} and cases["france"].attempts[0].output == "Paris"
    assert cases["france"].attempts[0].latency_ms > 0
    assert cases["france"].hash and cases["france"].input == {"question": "What is the capital of France?"}
    assert r.run.target.model == "exec: python3 provider.py"
    assert r.run.source["promptfoo_version"] == "0.121.9" and r.run.is_complete


def test_promptfoo_providers_become_part_of_the_id_and_a_slice():
    r = import_results("promptfoo", [PROMPTFOO_2P])
    assert len(r.cases) == 10
    cases = by_id(r)
    assert cases["france [local-echo]"].attempts[0].passed is True
    assert cases["france [local-echo-v2]"].attempts[0].passed is False
    assert {c.slices["provider"] for c in r.cases} == {"local-echo", "local-echo-v2"}
    assert r.run.target.model is None and r.run.target.params["providers"] == ["local-echo", "local-echo-v2"]
    # vars are slices only when asked for
    assert "question" not in r.cases[0].slices
    asked = import_results("promptfoo", [PROMPTFOO_2P], slice_keys=["question", "topic"])
    assert by_id(asked)["planet [local-echo]"].slices == {
        "question": "What is the largest planet?",
        "topic": "science",
        "provider": "local-echo",
    }


def test_inspect_eval_zstd_epochs_scores_and_provenance():
    with zipfile.ZipFile(INSPECT_EVAL) as zf:
        assert {i.compress_type for i in zf.infolist()} == {93}  # the real file is zstd, as docs/spec.md#importers says
    r = import_results("inspect_ai", [INSPECT_EVAL])
    cases = by_id(r)
    assert sorted(cases) == ["add-1", "add-2", "mul-1", "mul-2", "sub-1"]
    assert all(len(c.attempts) == 3 for c in r.cases) and r.run.attempts_per_case == 3
    assert [a.passed for a in cases["mul-1"].attempts] == [False] * 3
    flaky = [a.passed for a in cases["mul-2"].attempts]
    assert True in flaky and False in flaky  # the scripted flaky sample differs across epochs
    a = cases["add-1"].attempts[0]
    assert a.scores == {"match": 1.0, "includes": 1.0} and a.output == "The answer is 2."
    assert a.tokens_in and a.tokens_out == 5 and a.latency_ms is not None
    assert cases["add-2"].slices == {"category": "add", "level": "hard"}
    assert cases["add-1"].expected == "2" and cases["add-1"].hash
    assert r.run.target.model == "mockllm/model" and r.run.source["inspect_ai_version"]
    assert r.run.is_complete and r.run.started_at


def test_inspect_eval_deflate_reads_like_zstd(tmp_path):
    """Older inspect versions wrote deflate members; the same log re-zipped that way imports identically."""
    old = tmp_path / "old.eval"
    with zipfile.ZipFile(INSPECT_EVAL) as src, zipfile.ZipFile(old, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, _raw_member(INSPECT_EVAL, info))
    same_mapping(import_results("inspect_ai", [INSPECT_EVAL]), import_results("auto", [old]))


def test_inspect_json_log_and_score_values(tmp_path):
    r = import_results("inspect_ai", [INSPECT_JSON])
    assert len(r.cases) == 5 and all(len(c.attempts) == 2 for c in r.cases)
    assert [value_to_float(v) for v in ("C", "I", "P", "N", "yes", 0.25, True, "0.5", "odd")] == [
        1.0,
        0.0,
        0.5,
        0.0,
        1.0,
        0.25,
        1.0,
        0.5,
        None,
    ]
    with pytest.raises(InputFileError, match="task 'arith' is also in"):
        import_results("inspect_ai", [INSPECT_JSON, INSPECT_EVAL])
    other = json.loads(INSPECT_JSON.read_text())
    other["eval"]["task"] = "arith_v2"
    (tmp_path / "other.json").write_text(json.dumps(other))
    two = by_id(import_results("inspect_ai", [INSPECT_JSON, tmp_path / "other.json"]))
    assert len(two) == 10 and two["arith_v2/add-1"].slices["task"] == "arith_v2"
    chosen = import_results("inspect_ai", [INSPECT_JSON], metric="includes")
    assert chosen.cases[0].attempts[0].score == 1.0
    with pytest.raises(InputFileError, match="no scorer 'nope'"):
        import_results("inspect_ai", [INSPECT_JSON], metric="nope")


def test_inspect_partial_log_counts_samples_not_the_summary(tmp_path):
    r = import_results("inspect_ai", [INSPECT_PARTIAL])
    assert r.run.status == "error" and not r.run.is_complete
    assert (r.run.total_cases, r.run.completed_cases) == (5, 3)  # mul-2 and sub-1 lost an epoch
    assert "connection reset" in r.run.message
    errors = {c.id: [a.error.kind for a in c.attempts if a.error] for c in r.cases}
    assert errors["mul-2"] == ["infra"]  # a connection error is not the model's fault
    assert errors["sub-1"] == ["infra"]  # cancelled by the failing run, not answered
    assert r.run.source["summary_samples"] == [{"total_samples": None, "completed_samples": None}]
    # The process died before writing header.json: the journal still tells what ran.
    crashed = tmp_path / "crashed.eval"
    with zipfile.ZipFile(INSPECT_EVAL) as src, zipfile.ZipFile(crashed, "w") as dst:
        for info in src.infolist():
            if info.filename not in ("header.json", "summaries.json", "reductions.json"):
                dst.writestr(info, _raw_member(INSPECT_EVAL, info), compress_type=zipfile.ZIP_STORED)
    broken = import_results("auto", [crashed])
    assert broken.run.status == "error" and "never finished" in broken.run.message
    assert broken.run.total_cases == 5 and len(broken.cases) == 5


def _raw_member(path: Path, info: zipfile.ZipInfo) -> bytes:
    """A zstd member's content (Python 3.11's zipfile cannot decompress method 93 itself)."""
    with open(path, "rb") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = int.from_bytes(fh.read(2), "little"), int.from_bytes(fh.read(2), "little")
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        return zstandard.ZstdDecompressor().decompress(fh.read(info.compress_size), max_output_size=info.file_size)


def test_lm_eval_filters_metrics_and_task_scoping(tmp_path):
    r = import_results("lm_eval", [LM_EVAL])
    cases = by_id(r)
    assert len(r.cases) == 10  # 5 docs × 2 tasks, one filter each (toy_gen has two in the file)
    assert "toy_gen/0" in cases and "toy_mc/0" in cases
    assert cases["toy_mc/1"].slices == {"task": "toy_mc"}
    assert cases["toy_mc/1"].attempts[0].scores == {"acc": 1.0, "acc_norm": 1.0}
    assert cases["toy_mc/1"].attempts[0].passed is True
    assert r.run.source["imported"]["toy_gen"] == {"filter": "strict-match", "metric": "exact_match"}
    assert cases["toy_gen/0"].attempts[0].output == "[invalid]"
    assert r.run.source["lm_eval_version"] == "0.4.13" and r.run.target.params["model"] == "dummy"
    flexible = import_results("lm-eval", [LM_EVAL], filters={"toy_gen": "flexible-extract"})
    assert [by_id(flexible)[f"toy_gen/{i}"].attempts[0].passed for i in range(5)] == [True, True, False, False, True]
    with pytest.raises(InputFileError, match=r"no filter 'loose'.*strict-match, flexible-extract"):
        import_results("lm_eval", [LM_EVAL], filters={"toy_gen": "loose"})
    shutil.copytree(LM_EVAL, tmp_path / "rerun")
    with pytest.raises(InputFileError, match="task 'toy_gen' also comes from"):
        import_results("lm_eval", [LM_EVAL, tmp_path / "rerun"])
    by_kind = import_results("lm_eval", [LM_EVAL], slice_keys=["kind"])
    assert by_id(by_kind)["toy_gen/2"].slices == {"kind": "yesno", "task": "toy_gen"}


def test_openai_evals_unordered_lines_and_unfinished_runs(tmp_path):
    r = import_results("openai_evals", [OPENAI])
    assert [c.id for c in r.cases] == ["test-match.s1.0", "test-match.s1.1", "test-match.s1.2"]
    washington = by_id(r)["test-match.s1.1"]
    assert washington.attempts[0].passed is True and washington.expected == "George Washington"
    assert washington.attempts[0].output == "George Washington" and washington.input.startswith("Complete")
    assert r.run.suite == "test-match" and r.run.target.model == "auto_gpt_completion_fn"
    assert r.run.source["final_report"] == {"accuracy": 0.3333333333333333}
    lines = OPENAI.read_text().splitlines()
    shuffled = tmp_path / "shuffled.jsonl"
    random.Random(3).shuffle(lines)
    shuffled.write_text("\n".join(lines) + "\n")
    same_mapping(r, import_results("auto", [shuffled]))
    unfinished = tmp_path / "unfinished.jsonl"
    unfinished.write_text("\n".join(line for line in lines if "final_report" not in line) + "\n")
    partial = import_results("openai_evals", [unfinished])
    assert partial.run.status == "error" and "did not finish" in partial.run.message


def test_harbor_trials_rewards_and_exceptions():
    r = import_results("harbor", [HARBOR])
    cases = by_id(r)
    assert len(r.cases) == 6 and all(len(c.attempts) == 2 for c in r.cases)
    assert [a.passed for a in cases["fix-bug"].attempts] == [False, True]
    timed_out = cases["build-pkg"].attempts[0]  # Harbor counts the reward of an agent that ran out of time
    assert (
        timed_out.error is None and timed_out.passed is False and timed_out.metadata["exception"] == "AgentTimeoutError"
    )
    assert [a.error.kind for a in cases["grader-bug"].attempts] == ["scorer", "scorer"]
    assert cases["parse-csv"].attempts[1].scores == {"reward": 0.0, "tests_passed": 0.6}
    a = cases["hello-world"].attempts[0]
    assert (a.tokens_in, a.tokens_out, a.cost_usd, a.latency_ms) == (1200, 80, 0.0021, 100_000.0)
    assert r.run.target.model == "openai/gpt-4o-mini" and r.run.is_complete
    by_tests = import_results("harbor", [HARBOR], metric="tests_passed")
    assert by_id(by_tests)["parse-csv"].attempts[1].score == 0.6


def test_harbor_partial_job_reads_trials_not_the_summary(tmp_path):
    r = import_results("harbor", [HARBOR_PARTIAL])
    assert r.run.status == "cancelled" and not r.run.is_complete
    assert (r.run.total_cases, r.run.completed_cases) == (6, 3)  # 12 trials planned / 2 attempts
    assert by_id(r)["flaky-env"].attempts[0].error.kind == "infra"  # the sandbox never started
    # Trial results alone (no job config or summary) still import, as a complete run of what is there.
    trials = tmp_path / "trials"
    for trial in HARBOR.glob("*/result.json"):
        (trials / trial.parent.name).mkdir(parents=True)
        shutil.copy(trial, trials / trial.parent.name / "result.json")
    alone = import_results("auto", [trials])
    assert alone.run.is_complete and len(alone.cases) == 6
    same_cases = import_results("harbor", [HARBOR]).cases
    assert alone.cases == same_cases


def test_junit_counts_testcases_skips_errors_and_properties(tmp_path):
    r = import_results("junit", [PYTEST_XML])
    cases = by_id(r)
    assert len(r.cases) == 9 and "sample_checks::test_later" not in cases
    assert r.run.source["skipped"] == 1 and r.run.source["skipped_ids"] == ["sample_checks::test_later"]
    assert cases["sample_checks::test_add[2-2-5]"].attempts[0].passed is False
    assert cases["sample_checks::test_add[2-2-5]"].attempts[0].error is None
    assert cases["sample_checks::test_needs_db"].attempts[0].error.kind == "target"
    assert cases["sample_checks.TestUnits::test_zero"].attempts[0].passed is False
    assert cases["sample_checks::test_greeting"].slices == {"category": "text"}
    node = import_results("auto", [NODE_XML])
    assert node.run.source["header_tests"] == 3 and node.run.source["testcases_counted"] == 4
    # pytest can write a test twice (its call, then its teardown error): one case, the worse outcome.
    tree = ET.parse(PYTEST_XML)
    suite = tree.getroot().find("testsuite")
    greeting = next(tc for tc in suite if tc.get("name") == "test_greeting")
    twin = copy.deepcopy(greeting)
    ET.SubElement(twin, "error", message="failed on teardown with ConnectionRefusedError: connection refused")
    suite.append(twin)
    doubled = tmp_path / "doubled.xml"
    tree.write(doubled)
    merged = by_id(import_results("junit", [doubled]))
    assert len(merged) == 9 and merged["sample_checks::test_greeting"].attempts[0].error.kind == "infra"
    # The same case in two files (a rerun) is two attempts.
    rerun = import_results("junit", [PYTEST_XML, PYTEST_XML])
    assert all(len(c.attempts) == 2 for c in rerun.cases)


# ------------------------------------------------------------------------------- auto-detect


@pytest.mark.parametrize(("fmt", "path"), ALL, ids=lambda v: v.name if isinstance(v, Path) else v)
def test_auto_detects_by_content_not_name(fmt, path, tmp_path):
    neutral = tmp_path / "input"  # no telling name or extension; a directory keeps the tool's inner layout
    if path.is_dir():
        shutil.copytree(path, neutral)
    else:
        shutil.copy(path, neutral)
    assert sniff(neutral) == fmt
    same_mapping(import_results(fmt, [path]), import_results("auto", [neutral]))


# ---------------------------------------------------------------------------- round trip + gate


@pytest.mark.parametrize(("fmt", "path"), COMPLETE, ids=lambda v: v.name if isinstance(v, Path) else v)
def test_round_trip_through_compare_has_zero_deltas(fmt, path, tmp_path):
    imported = import_results(fmt, [path])
    out = tmp_path / "results.json"
    save_results(imported, out)
    reloaded = load_results(out)
    assert reloaded == imported
    result = compare(reloaded, reloaded, gate_config(reloaded))
    # A handful of fixture cases cannot show that nothing dropped by more than 2 points, so the
    # verdict may be inconclusive (exit 0); it is never a regression.
    assert result.verdict in ("pass", "inconclusive"), result.reason
    assert result.exit_code == 0
    assert all(u.delta in (0, None) for u in result.units)
    assert not any(u.verdict == "regressed" for u in result.units)
    assert result.case_diff.n_pass_to_fail == result.case_diff.n_fail_to_pass == 0


def _scaled_promptfoo(tmp: Path, flip: set[str]) -> Path:
    data = json.loads(PROMPTFOO.read_text())
    rows = []
    for k in range(SCALE):
        for row in data["results"]["results"]:
            row = copy.deepcopy(row)
            name = row["testCase"].get("description") or row["vars"]["question"]
            row["testCase"]["description"] = f"{name} r{k}"
            if name in flip and row["success"]:
                row.update(success=False, score=0, failureReason=1, namedScores={"accuracy": 0})
            rows.append(row)
    data["results"]["results"] = rows
    out = tmp / f"promptfoo-{len(flip)}.json"
    out.write_text(json.dumps(data))
    return out


def _scaled_inspect(tmp: Path, flip: set[str]) -> Path:
    data = json.loads(INSPECT_JSON.read_text())
    samples = []
    for k in range(SCALE):
        for sample in data["samples"]:
            sample = copy.deepcopy(sample)
            if sample["id"] in flip:
                for score in sample["scores"].values():
                    score["value"] = "I"
            sample["id"] = f"{sample['id']}-r{k}"
            samples.append(sample)
    data["samples"] = samples
    out = tmp / f"inspect-{len(flip)}.json"
    out.write_text(json.dumps(data))
    return out


def _scaled_lm_eval(tmp: Path, flip: set[str]) -> Path:
    folder = tmp / f"lm-{len(flip)}"
    folder.mkdir()
    for path in LM_EVAL.iterdir():
        if not path.name.startswith("samples_"):
            shutil.copy(path, folder / path.name)
            continue
        task = path.name.split("_2026")[0].removeprefix("samples_")
        lines = []
        for k in range(SCALE):
            for line in path.read_text().splitlines():
                row = json.loads(line)
                if f"{task}/{row['doc_id']}" in flip:
                    row.update({m: 0.0 for m in row["metrics"]})
                row["doc_id"] += 1000 * k
                lines.append(json.dumps(row))
        (folder / path.name).write_text("\n".join(lines) + "\n")
    return folder


def _scaled_openai(tmp: Path, flip: set[str]) -> Path:
    lines = []
    for line in OPENAI.read_text().splitlines():
        row = json.loads(line)
        if "sample_id" not in row:
            lines.append(line)
            continue
        for k in range(SCALE):
            event = copy.deepcopy(row)
            if event["sample_id"] in flip and event["type"] == "match":
                event["data"]["correct"] = False
            event["sample_id"] = f"{event['sample_id']}.r{k}"
            event["event_id"] += 100 * k
            lines.append(json.dumps(event))
    out = tmp / f"openai-{len(flip)}.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def _scaled_harbor(tmp: Path, flip: set[str]) -> Path:
    job = tmp / f"harbor-{len(flip)}"
    job.mkdir()
    shutil.copy(HARBOR / "config.json", job / "config.json")
    shutil.copy(HARBOR / "result.json", job / "result.json")
    for trial_dir in sorted(p for p in HARBOR.iterdir() if p.is_dir()):
        trial = json.loads((trial_dir / "result.json").read_text())
        for k in range(SCALE):
            copy_ = copy.deepcopy(trial)
            if copy_["task_name"] in flip:
                copy_["verifier_result"]["rewards"]["reward"] = 0.0
            copy_["task_name"] += f"-r{k}"
            copy_["trial_name"] += f"-r{k}"
            (job / copy_["trial_name"]).mkdir()
            (job / copy_["trial_name"] / "result.json").write_text(json.dumps(copy_))
    result = json.loads((HARBOR / "result.json").read_text())
    result["n_total_trials"] *= SCALE
    (job / "result.json").write_text(json.dumps(result))
    return job


def _scaled_junit(tmp: Path, flip: set[str]) -> Path:
    tree = ET.parse(PYTEST_XML)
    suite = tree.getroot().find("testsuite")
    originals = list(suite.findall("testcase"))
    for tc in originals:
        suite.remove(tc)
    for k in range(SCALE):
        for tc in originals:
            twin = copy.deepcopy(tc)
            if f"{tc.get('classname')}::{tc.get('name')}" in flip:
                ET.SubElement(twin, "failure", message="flipped for the test")
            twin.set("name", f"{tc.get('name')}-r{k}")
            suite.append(twin)
    out = tmp / f"junit-{len(flip)}.xml"
    tree.write(out)
    return out


REGRESSIONS = [
    ("promptfoo", _scaled_promptfoo, {"france", "planet"}),
    ("inspect_ai", _scaled_inspect, {"add-1", "sub-1"}),
    ("lm_eval", _scaled_lm_eval, {"toy_mc/1"}),
    ("openai_evals", _scaled_openai, {"test-match.s1.1"}),
    ("harbor", _scaled_harbor, {"hello-world"}),
    ("junit", _scaled_junit, {"sample_checks::test_greeting", "sample_checks.TestUnits::test_division"}),
]


@pytest.mark.parametrize(("fmt", "make", "flip"), REGRESSIONS, ids=[r[0] for r in REGRESSIONS])
def test_round_trip_of_a_scaled_copy_passes(fmt, make, flip, tmp_path):
    imported = import_results(fmt, [make(tmp_path, set())])
    result = compare(imported, imported, gate_config(imported))
    assert result.verdict == "pass", result.reason
    assert result.exit_code == 0
    assert all(u.delta in (0, None) for u in result.units)


@pytest.mark.parametrize(("fmt", "make", "flip"), REGRESSIONS, ids=[r[0] for r in REGRESSIONS])
def test_modified_copy_regresses(fmt, make, flip, tmp_path):
    baseline = import_results(fmt, [make(tmp_path, set())])
    candidate = import_results("auto", [make(tmp_path, flip)])
    result = compare(baseline, candidate, gate_config(baseline, candidate))
    assert result.verdict == "fail", result.reason
    assert result.exit_code == 1
    assert result.case_diff.n_pass_to_fail == len(flip) * SCALE
    assert result.case_diff.n_fail_to_pass == 0
    overall = next(u for u in result.units if u.unit == "overall" and u.metric == "pass_rate")
    assert overall.verdict == "regressed" and overall.delta < 0


def test_incomplete_imports_are_gated_as_incomplete():
    full = import_results("harbor", [HARBOR])
    partial = import_results("harbor", [HARBOR_PARTIAL])
    assert compare(full, partial, gate_config(full)).verdict == "incomplete"


# ------------------------------------------------------------------------------- bad inputs


def run_cli(*args: str, python_exe: str) -> subprocess.CompletedProcess:
    return subprocess.run([python_exe, "-m", "evals", "import", *args], capture_output=True, text=True, timeout=60)


def test_cli_writes_a_results_file(tmp_path, python_exe):
    out = tmp_path / "imported.json.gz"
    proc = run_cli("--from", "auto", str(INSPECT_EVAL), "-o", str(out), "--slice-key", "level", python_exe=python_exe)
    assert proc.returncode == 0, proc.stderr
    assert "imported 5 cases (15 attempts) from inspect_ai" in proc.stderr
    results = load_results(out)
    assert {c.slices["level"] for c in results.cases} == {"easy", "hard"}
    assert all("category" not in c.slices for c in results.cases)


@pytest.mark.parametrize(
    ("make_input", "fmt", "expected"),
    [
        (lambda tmp: INSPECT_JSON, "promptfoo", r"not a promptfoo file: no results\.results.*looks like inspect_ai"),
        (lambda tmp: PROMPTFOO, "junit", r"not a junit file: not XML.*looks like promptfoo"),
        (lambda tmp: _write(tmp / "notes.txt", "just some text\n"), "auto", r"notes\.txt: not a recognised results"),
        (lambda tmp: _write(tmp / "run.eval", "PK\x03\x04 cut"), "inspect_ai", r"run\.eval: truncated or corrupt"),
        (lambda tmp: _cut(INSPECT_EVAL, tmp / "cut.eval"), "inspect_ai", r"cut\.eval: truncated or corrupt \.eval log"),
        (lambda tmp: _cut(INSPECT_EVAL, tmp / "cut.eval"), "auto", r"cut\.eval: a zip file cut short or damaged"),
        (
            lambda tmp: _cut(PROMPTFOO, tmp / "cut.json"),
            "auto",
            r"cut\.json: invalid JSON: .* at column \d+; the file looks truncated: cannot tell",
        ),
        (lambda tmp: _cut(PROMPTFOO, tmp / "cut.json"), "promptfoo", r"cut\.json:\d+: not a valid promptfoo .* column"),
        (lambda tmp: PROMPTFOO, "inspect_ai", r"not an inspect_ai file"),
        (lambda tmp: _write(tmp / "bad.xml", "<testsuites><testcase name='x'>"), "junit", r"bad\.xml:1: invalid XML"),
        (lambda tmp: _old_promptfoo(tmp), "promptfoo", r"results\.version is 2; this importer reads version 3"),
        (lambda tmp: _write(tmp / "samples_x.jsonl", '{"doc_id": 0}\nnot json\n'), "lm_eval", r"samples_x\.jsonl"),
        (lambda tmp: tmp / "missing.json", "auto", r"missing\.json: file not found"),
        (lambda tmp: PROMPTFOO, "csv", r"unknown import format 'csv'"),
        (lambda tmp: _promptfoo_success(tmp, "x"), "promptfoo", r"results\.results\[0\]\.success is 'x'"),
        (
            lambda tmp: _write(
                tmp / "samples_x.jsonl", '{"doc_id": null, "filter": "none", "metrics": ["acc"], "acc": 1}\n'
            ),
            "lm_eval",
            r"samples_x\.jsonl:1: doc_id is None",
        ),
        (
            lambda tmp: _write(
                tmp / "samples_x.jsonl", '{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": "high"}\n'
            ),
            "lm_eval",
            r"samples_x\.jsonl: task 'x' has no numeric metric \(listed: acc\)",
        ),
    ],
    ids=[
        "wrong-format",
        "json-as-junit",
        "text",
        "truncated-zip",
        "cut-eval",
        "cut-eval-auto",
        "cut-json-auto",
        "cut-json",
        "article",
        "bad-xml",
        "old-promptfoo",
        "bad-jsonl",
        "missing",
        "fmt",
        "promptfoo-success-not-bool",
        "lm-eval-null-doc-id",
        "lm-eval-metric-not-number",
    ],
)
@pytest.mark.e2e
def test_bad_inputs_exit_2_with_file_and_reason(make_input, fmt, expected, tmp_path, python_exe):
    path = make_input(tmp_path)
    proc = run_cli("--from", fmt, str(path), "-o", str(tmp_path / "out.json"), python_exe=python_exe)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert re.search(expected, proc.stderr, re.DOTALL), proc.stderr
    assert " at at " not in proc.stderr
    assert not (tmp_path / "out.json").exists()


def _cut(source: Path, path: Path) -> Path:
    """The first half of a real file: what a copy made while the tool was writing holds."""
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _promptfoo_success(tmp: Path, value) -> Path:
    data = json.loads(PROMPTFOO.read_text())
    data["results"]["results"][0]["success"] = value
    return _write(tmp / "success.json", json.dumps(data))


def _old_promptfoo(tmp: Path) -> Path:
    data = json.loads(PROMPTFOO.read_text())
    data["results"]["version"] = 2
    return _write(tmp / "old.json", json.dumps(data))


def test_options_are_checked():
    with pytest.raises(UsageError, match="invalid import options"):
        import_results("junit", [PYTEST_XML], bogus=1)
    with pytest.raises(UsageError, match="different formats"):
        import_results("auto", [PYTEST_XML, PROMPTFOO])


@pytest.mark.e2e
def test_gate_takes_imported_results_end_to_end(tmp_path, python_exe):
    """`evalgate gate --results X --results-format F` (the action's mode: compare): seed the
    baseline from one import, then gate a regressed copy against it."""
    (tmp_path / "evalgate.yml").write_text(
        "suite: arith\ncases: cases.jsonl\nslices: [category]\n"
        "gate: {max_error_rate: 0.5}\nbaseline: {store: local, on_missing: seed}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}

    def gate(results: Path, *extra: str) -> subprocess.CompletedProcess:
        args = ["gate", "--mode", "compare", "--results", str(results), "--results-format", "auto", *extra]
        return subprocess.run(
            [python_exe, "-m", "evals", *args],
            cwd=tmp_path,
            env={**env, "GITHUB_SHA": "1" * 40},
            capture_output=True,
            text=True,
            timeout=120,
        )

    seeded = gate(_scaled_inspect(tmp_path, set()), "--promote")
    assert seeded.returncode == 0, seeded.stderr
    failed = gate(_scaled_inspect(tmp_path, {"add-1", "sub-1"}))
    assert failed.returncode == 1, failed.stderr
    comparison = json.loads((tmp_path / ".evalgate" / "out" / "comparison.json").read_text())
    assert comparison["verdict"] == "fail"
    assert comparison["case_diff"]["n_pass_to_fail"] == 2 * SCALE


def test_evalgate_results_pass_through_auto_and_by_name(tmp_path, python_exe):
    """evalgate's own results file (what `evalgate run` writes: no importer provenance) is
    recognised by content and written back unchanged; a broken one fails as load_results says."""
    own = import_results("inspect_ai", [INSPECT_EVAL])
    own.run.source = {}
    given = tmp_path / "results.json.gz"
    save_results(own, given)
    for fmt in ("auto", "evalgate"):
        out = tmp_path / f"{fmt}.json"
        proc = run_cli("--from", fmt, str(given), "-o", str(out), python_exe=python_exe)
        assert proc.returncode == 0, proc.stderr
        assert "imported 5 cases (15 attempts) from evalgate" in proc.stderr
        assert load_results(out).model_dump() == own.model_dump()

    broken = json.loads(out.read_text())
    broken["cases"].append(broken["cases"][0])
    bad = _write(tmp_path / "dup.json", json.dumps(broken))
    with pytest.raises(InputFileError) as expected:
        load_results(bad)
    proc = run_cli("--from", "auto", str(bad), "-o", str(tmp_path / "none.json"), python_exe=python_exe)
    assert proc.returncode == 2 and "duplicate case id" in proc.stderr, proc.stderr
    assert expected.value.problem in proc.stderr
    assert not (tmp_path / "none.json").exists()


def test_default_slices_are_labels_that_group_cases_even_in_a_one_case_import():
    """A value only one case has groups nothing (a one-case log's label_confidence=0.886…);
    asked for by name, a key is kept."""
    from evals.importers.common import choose_slices

    assert choose_slices({"a": {"label_confidence": 0.886, "lang": "ko"}}, None) == {"a": {}}
    assert choose_slices({"a": {"lang": "ko"}}, ["lang"]) == {"a": {"lang": "ko"}}
    two = {"a": {"lang": "ko", "n": 1}, "b": {"lang": "ko", "n": 2}}
    assert choose_slices(two, None) == {"a": {"lang": "ko"}, "b": {"lang": "ko"}}

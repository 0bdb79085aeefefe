"""lm-evaluation-harness output as real runs leave it (docs/spec.md#importers): samples from lm-eval before 0.4.7,
which name neither filter nor metrics per line; lines holding U+2028 inside strings; a run whose
samples file is empty; a results file without samples. Fixtures: tests/fixtures/README.md."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fakes.paths import FIXTURES

from evals.common.errors import InputFileError
from evals.importers import import_results
from evals.importers.common import iter_jsonl
from evals.importers.detect import sniff

FIX = FIXTURES / "importers" / "lm_eval"
TOY = FIX / "run"  # lm-eval 0.4.13: lines carry `filter` and `metrics`
KOBEST = FIX / "kt_kobest_boolq"  # lm-eval 0.4.5 (a fork): they do not
GPQA = FIX / "kt_gpqa_diamond_line5"
GPQA_LINE = GPQA / "samples_leaderboard_gpqa_diamond_2024-11-21T17-26-18.889065.jsonl"
RESULTS_ONLY = FIX / "kt_mmlu_pro_results_only"  # the run's samples file is too large to keep


def evalgate_import(python_exe: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    out = tmp / "out.json"
    proc = subprocess.run(
        [python_exe, "-m", "evals", "import", *args, "-o", str(out)], capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in proc.stderr
    assert (proc.returncode == 0) == out.exists(), proc.stderr
    return proc


def outcomes(results) -> dict[str, tuple]:
    return {
        c.id: (a.passed, a.score, a.scores, a.output, a.metadata, c.input, c.hash)
        for c in results.cases
        for a in c.attempts
    }


def old_format_copy(run: Path, dest: Path, order=None) -> Path:
    """``run`` as lm-eval 0.4.0-0.4.6 writes it: the same lines without the `filter` and `metrics`
    keys that PR #2517 added (lm_eval/evaluator.py, v0.4.6 vs v0.4.7), optionally reordered."""
    dest.mkdir(parents=True)
    for path in run.iterdir():
        if not path.name.startswith("samples_"):
            shutil.copy(path, dest / path.name)
            continue
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]
        for line in lines:
            del line["filter"], line["metrics"]
        lines = order(lines) if order else lines
        (dest / path.name).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return dest


def two_ranks(lines: list[dict]) -> list[dict]:
    """The order lm-eval gathers a 2-process run in: each rank's lines (its docs, filter by
    filter), rank 0's first."""
    return [line for rank in (0, 1) for line in lines if line["doc_id"] % 2 == rank]


# ------------------------------------------------------------------- samples before lm-eval 0.4.7


def test_samples_without_filter_and_metrics_take_them_from_the_results_file(tmp_path, python_exe):
    results_file = json.loads(next(KOBEST.glob("results_*.json")).read_text(encoding="utf-8"))
    r = import_results("lm_eval", [KOBEST])
    assert len(r.cases) == 10 and r.run.completed_cases == r.run.total_cases == 10
    assert r.run.source["imported"] == {"kobest_boolq": {"filter": "get-answer", "metric": "exact_match"}}
    passed = [c.attempts[0].passed for c in r.cases]
    assert sum(passed) / len(passed) == results_file["results"]["kobest_boolq"]["exact_match,get-answer"] == 0.4
    assert all(c.attempts[0].scores.keys() == {"exact_match"} for c in r.cases)
    assert r.cases[0].attempts[0].metadata == {"filter": "get-answer"}
    assert r.run.source["git_hash"] == "12a266ca"
    named = import_results("lm_eval", [KOBEST], metric="exact_match", filters={"*": "get-answer"})
    assert outcomes(named) == outcomes(r)
    with pytest.raises(InputFileError, match=r"no filter 'strict-match'; filters: get-answer"):
        import_results("lm_eval", [KOBEST], filters={"*": "strict-match"})
    proc = evalgate_import(python_exe, tmp_path, "--from", "auto", str(KOBEST))
    assert proc.returncode == 0 and "10/10 complete" in proc.stderr, proc.stderr


def test_old_lines_of_several_filters_are_matched_to_the_filter_list_in_order(tmp_path):
    """toy_gen has two filters: lm-eval writes each document once per filter, filter by filter in
    the config's filter_list order, per rank when several processes ran."""
    new = import_results("lm_eval", [TOY])
    new_flex = import_results("lm_eval", [TOY], filters={"toy_gen": "flexible-extract"})
    for i, order in enumerate((None, two_ranks)):
        old = old_format_copy(TOY, tmp_path / f"old{i}", order)
        assert outcomes(import_results("lm_eval", [old])) == outcomes(new)
        assert outcomes(import_results("lm_eval", [old], filters={"toy_gen": "flexible-extract"})) == outcomes(new_flex)
    assert {c.attempts[0].passed for c in new_flex.cases if c.id.startswith("toy_gen")} != {
        c.attempts[0].passed for c in new.cases if c.id.startswith("toy_gen")
    }  # the two filters really differ, so a mix-up would show


def test_old_lines_without_their_results_file(tmp_path):
    """Alone, a samples file's metrics are its lines' other numeric values (not `target`, which
    is a number for multiple-choice tasks); filters cannot be told apart, so repeats are refused."""
    old = old_format_copy(TOY, tmp_path / "old")
    alone = tmp_path / "alone"
    alone.mkdir()
    for task in ("toy_mc", "toy_gen"):
        shutil.copy(next(old.glob(f"samples_{task}_*.jsonl")), alone)
    [mc] = alone.glob("samples_toy_mc_*.jsonl")
    r = import_results("lm_eval", [mc])
    assert outcomes(r) == {k: v for k, v in outcomes(import_results("lm_eval", [TOY])).items() if "toy_mc" in k}
    assert r.run.source["imported"]["toy_mc"]["metric"] == "acc"
    [gen] = alone.glob("samples_toy_gen_*.jsonl")
    with pytest.raises(InputFileError, match=r"toy_gen_.*\.jsonl:6: doc_id 0 repeats .*pass the run's results_"):
        import_results("lm_eval", [gen])


def test_old_lines_beyond_the_declared_filters_are_an_error(tmp_path):
    old = old_format_copy(TOY, tmp_path / "old")
    [results_path] = old.glob("results_*.json")
    results = json.loads(results_path.read_text(encoding="utf-8"))
    del results["configs"]["toy_gen"]["filter_list"][1]  # as if the run had one filter
    results_path.write_text(json.dumps(results), encoding="utf-8")
    with pytest.raises(InputFileError, match=r":6: doc_id 0 has 2 lines but .* names 1 filter\(s\) .*strict-match"):
        import_results("lm_eval", [old])


# ------------------------------------------------------------------------------ JSON lines reading


def test_json_lines_end_at_newline_not_at_unicode_line_separators(tmp_path):
    """lm-eval dumps with ensure_ascii=False: this real line holds two raw U+2028 in its question."""
    raw = GPQA_LINE.read_bytes()
    assert raw.count("\u2028".encode()) == 2 and raw.count(b"\n") == 1
    r = import_results("lm_eval", [GPQA_LINE])
    [case] = r.cases
    assert case.id == "leaderboard_gpqa_diamond/4" and "\u2028" in json.dumps(case.input, ensure_ascii=False)
    assert r.run.source["imported"] == {"leaderboard_gpqa_diamond": {"filter": "none", "metric": "exact_match"}}
    assert r.run.total_cases == 10  # the results file's count; the fixture keeps one line of ten
    # Sniffing reads line by line once the whole text is not one JSON value.
    twice = tmp_path / "twice.jsonl"
    twice.write_bytes(raw * 2)
    assert sniff(twice) == "lm_eval"
    # Line numbers stay right, with "\r\n" line ends too.
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(raw.replace(b"\n", b"\r\n") + b"\r\n" + b"not json\r\n")
    with pytest.raises(InputFileError) as info:
        list(iter_jsonl(crlf, "lm-eval samples file"))
    assert info.value.where.endswith("crlf.jsonl:3"), info.value
    crlf_run = tmp_path / "crlf_run"
    shutil.copytree(GPQA, crlf_run)
    (crlf_run / GPQA_LINE.name).write_bytes(raw.replace(b"\n", b"\r\n"))
    assert outcomes(import_results("lm_eval", [crlf_run])) == outcomes(r)


# -------------------------------------------------------------------------- nothing to import


@pytest.mark.parametrize(
    ("fmt", "which"),
    [("auto", "dir"), ("lm_eval", "dir"), ("lm_eval", "samples")],
)
def test_an_empty_samples_file_is_reported_as_empty(fmt, which, tmp_path, python_exe):
    """A samples file that a failed copy left empty (the real results file beside it counts 12032
    documents)."""
    run = tmp_path / "run"
    shutil.copytree(RESULTS_ONLY, run)
    samples = run / "samples_leaderboard_mmlu_pro_2024-11-24T13-37-13.882223.jsonl"
    samples.touch()
    proc = evalgate_import(python_exe, tmp_path, "--from", fmt, str(run if which == "dir" else samples))
    assert proc.returncode == 2
    assert f"{samples}: empty (0 bytes): it holds no samples of task 'leaderboard_mmlu_pro'" in proc.stderr
    assert "copy it again" in proc.stderr


@pytest.mark.parametrize("fmt", ["auto", "lm_eval"])
def test_a_results_file_alone_asks_for_log_samples(fmt, tmp_path, python_exe):
    [results] = RESULTS_ONLY.glob("results_*.json")
    proc = evalgate_import(python_exe, tmp_path, "--from", fmt, str(results))
    assert proc.returncode == 2
    assert f"{results}: no lm-eval samples_<task>_<date>.jsonl files found" in proc.stderr
    assert "re-run lm_eval with --log_samples" in proc.stderr, proc.stderr


def test_a_broken_samples_file_in_a_folder_is_reported_not_skipped(tmp_path, python_exe):
    run = tmp_path / "run"
    shutil.copytree(TOY, run)
    [cut] = run.glob("samples_toy_gen_*.jsonl")
    cut.write_bytes(cut.read_bytes()[:100])  # a copy made while lm-eval was writing
    proc = evalgate_import(python_exe, tmp_path, "--from", "lm_eval", str(run))
    assert proc.returncode == 2
    assert f"{cut}:1: not a valid lm-eval samples file: invalid JSON" in proc.stderr, proc.stderr

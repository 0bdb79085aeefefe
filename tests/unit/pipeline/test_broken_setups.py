"""Set-ups that cannot produce a meaningful verdict never exit 0 (docs/spec.md#config-errors,
docs/spec.md#special-verdicts, docs/spec.md#exit-codes). Each is tried as a new user would: the ``evalgate`` CLI in a
fresh folder, a real suite run in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

BOT = "def answer(question):\n    return 'FINAL ANSWER: ' + str(len(question))\n"


def write_suite(folder: Path, *, cases: list[dict] | None = None, extra: str = "", suite: str = "demo") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if cases is None:
        cases = [
            {"id": f"c{i}", "input": "x" * (i % 7), "expected": str(i % 5), "tags": {"language": ["en", "ko"][i % 2]}}
            for i in range(60)
        ]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (folder / "bot.py").write_text(BOT, encoding="utf-8")
    config = folder / "evalgate.yml"
    config.write_text(
        f"suite: {suite}\ncases: cases.jsonl\ntarget:\n  python: bot:answer\n  path: ['.']\n"
        f"scorers: [final_answer]\n{extra}baseline: {{store: local, path: baselines}}\n",
        encoding="utf-8",
    )
    return config


def evalgate(repo_root: Path, python_exe: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(repo_root)
    return subprocess.run(
        [python_exe, "-m", "evals", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def assert_usage_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr


def reset_with_results(
    repo_root: Path, python_exe: str, config: Path, name: str, *, suite: str, cases: list[dict]
) -> subprocess.CompletedProcess[str]:
    """`evalgate reset --results NAME` next to ``config``, NAME a complete run of ``suite``."""
    run = {"suite": suite, "status": "success", "total_cases": len(cases), "completed_cases": len(cases)}
    (config.parent / name).write_text(json.dumps({"schema_version": 1, "run": run, "cases": cases}))
    args = ["reset", "--reason", "x", "--results", name, "--config", str(config)]
    return evalgate(repo_root, python_exe, *args, cwd=config.parent)


@pytest.mark.e2e
def test_empty_case_set_is_a_usage_error(tmp_path, repo_root, python_exe):
    config = write_suite(tmp_path, cases=[])
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert_usage_error(proc, "evalgate.yml:2: the case set is empty: cases.jsonl holds no case (add cases: one JSON")
    # A reset must not bless it either.
    proc = evalgate(
        repo_root, python_exe, "gate", "--mode", "reset", "--reason", "x", "--config", str(config), cwd=tmp_path
    )
    assert_usage_error(proc, "the case set is empty")
    # Nor an empty results file brought to `evalgate reset --results`.
    proc = reset_with_results(repo_root, python_exe, config, "empty.json", suite="demo", cases=[])
    assert_usage_error(proc, "empty.json: the run holds no case", "nothing was blessed")
    assert not list((tmp_path / "baselines").glob("baseline-*"))


def test_a_config_listing_no_case_file_says_so_plainly(tmp_path, repo_root, python_exe):
    """``cases: []``: no blank file name, no parentheses inside the hint's parentheses."""
    config = write_suite(tmp_path)
    config.write_text(config.read_text().replace("cases: cases.jsonl", "cases: []"))
    proc = evalgate(repo_root, python_exe, "run", "--config", str(config), cwd=tmp_path)
    assert_usage_error(proc, "evalgate.yml:2: the case set is empty: cases: lists no file (name the case files")
    message = proc.stderr[proc.stderr.index("(") + 1 : proc.stderr.rindex(")")]
    assert "(" not in message and ")" not in message


def test_an_empty_results_file_is_said_to_be_empty(tmp_path, repo_root, python_exe):
    (tmp_path / "results.json").write_bytes(b"")
    for args in (["show", "results.json"], ["show", "results.json", "--from", "auto"]):
        proc = evalgate(repo_root, python_exe, *args, cwd=tmp_path)
        assert_usage_error(proc, "results.json: the file is empty")
        assert "truncated" not in proc.stderr and "invalid JSON" not in proc.stderr


def test_metric_name_typo_names_line_and_choices(tmp_path, repo_root, python_exe):
    config = write_suite(tmp_path, extra="metrics:\n  passrate: {tolerance: 0.02}\n")
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert_usage_error(proc, "evalgate.yml:8", "unknown metric 'passrate'", "pass_rate", "format_valid", "pass@k")


@pytest.mark.e2e
def test_slice_key_no_case_carries(tmp_path, repo_root, python_exe):
    config = write_suite(tmp_path, extra="slices: [langauge]\n")
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert_usage_error(proc, "evalgate.yml:7", "'langauge' carried by no case", "tag keys: language")


@pytest.mark.e2e
def test_scorer_needing_expected_on_a_case_without_one(tmp_path, repo_root, python_exe):
    cases = [{"id": "a", "input": "q", "expected": "1"}, {"id": "b", "input": "qq"}, {"id": "c", "input": "q"}]
    config = write_suite(tmp_path, cases=cases)
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert_usage_error(
        proc, "cases.jsonl:2", "case 'b' has no expected value", "'final_answer'", "evalgate.yml:6", "1 more"
    )


@pytest.mark.e2e
@pytest.mark.parametrize("scorers", ["[json_valid]", "[{contains: {value: FINAL}}]"])
def test_scorers_that_need_no_expected_run(tmp_path, repo_root, python_exe, scorers):
    config = write_suite(tmp_path, cases=[{"id": "a", "input": "q"}, {"id": "b", "input": "qq"}])
    config.write_text(config.read_text().replace("[final_answer]", scorers))
    proc = evalgate(repo_root, python_exe, "run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def commit(folder: Path) -> None:
    """A new user's suite lives in a git checkout: snapshots are named by commit."""
    git = ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", "-c", "init.defaultBranch=main"]
    if not (folder / ".git").exists():
        subprocess.run([*git, "init", "-q", str(folder)], check=True)
    subprocess.run([*git, "-C", str(folder), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(folder), "commit", "-q", "--allow-empty", "-m", "change"], check=True)


def reset(repo_root: Path, python_exe: str, config: Path) -> None:
    commit(config.parent)
    proc = evalgate(
        repo_root,
        python_exe,
        "gate",
        "--mode",
        "reset",
        "--reason",
        "start",
        "--config",
        str(config),
        cwd=config.parent,
    )
    assert proc.returncode == 0, proc.stderr


def assert_incompatible(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "evalgate gate: incompatible: " in proc.stdout
    for fragment in (*fragments, "evalgate reset"):
        assert fragment in proc.stdout, proc.stdout


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (
            {"suite": "other-suite"},
            ("suite 'demo'", "suite 'other-suite'", "a store of its own", "if this suite was renamed"),
        ),
        (
            {"cases": [{"id": f"new{i}", "input": "x", "expected": "1"} for i in range(60)]},
            ("no case in common", "baseline's 60 cases", "a reset accepts it"),
        ),
    ],
    ids=["another-suite", "no-case-in-common"],
)
def test_baseline_that_cannot_be_compared_is_incompatible(tmp_path, repo_root, python_exe, change, fragments):
    config = write_suite(tmp_path)
    reset(repo_root, python_exe, config)
    write_suite(tmp_path, **change)
    commit(tmp_path)
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert_incompatible(proc, *fragments)


@pytest.mark.e2e
def test_full_gate_on_5_of_60_cases_is_incompatible(tmp_path, repo_root, python_exe):
    config = write_suite(tmp_path)
    reset(repo_root, python_exe, config)
    lines = (tmp_path / "cases.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "cases.jsonl").write_text("".join(lines[:5]))
    commit(tmp_path)
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert_incompatible(proc, "lacks 55 of the baseline's 60 cases", "max_removed_share 20%", "a reset accepts it")
    # The removal was deliberate: a reset accepts it, and the next gate compares the 5 cases.
    reset(repo_root, python_exe, config)
    commit(tmp_path)
    after = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert "incompatible" not in after.stdout and after.returncode in (0, 1), after.stdout + after.stderr


@pytest.mark.e2e
def test_changed_scorer_definition_says_what_changed(tmp_path, repo_root, python_exe):
    config = write_suite(tmp_path)
    reset(repo_root, python_exe, config)
    config.write_text(config.read_text().replace("[final_answer]", "[{final_answer: {rel_tol: 0.1}}]"))
    commit(tmp_path)
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert_incompatible(proc, "scorer 'final_answer' changed from", '"rel_tol": 0.1', "a reset accepts it")
    # Stopped before running, the gate still writes its own report: before, the out dir kept the
    # previous gate's (here the reset's) report.md, comment.md and comparison.json.
    out = tmp_path / ".evalgate" / "out"
    assert "report: .evalgate/out/report.md" in proc.stdout
    for name in ("report.md", "comment.md"):
        text = (out / name).read_text(encoding="utf-8")
        assert "evalgate INCOMPATIBLE:** Scorer/metric definitions differ" in text and "no case was run" in text
        assert "partial" not in text
    comparison = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert comparison["verdict"] == "incompatible" and comparison["exit_code"] == 1
    assert comparison["candidate_run"]["status"] == "not run"


def test_old_max_detectable_drop_key_is_read_as_target_mde_with_a_warning(tmp_path, repo_root, python_exe):
    config = write_suite(tmp_path, extra="gate: {max_detectable_drop: 0.2}\n")
    proc = evalgate(repo_root, python_exe, "run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "evalgate.yml:7: gate.max_detectable_drop is now gate.target_mde" in proc.stderr


@pytest.mark.e2e
def test_named_score_no_run_records_is_a_usage_error(tmp_path, repo_root, python_exe):
    """With a python scorer the config cannot know its named scores; the runs can."""
    (tmp_path / "scoring.py").write_text(
        "def judge(output, case):\n    return {'score': 1.0, 'scores': {'tone': 1.0}}\n"
    )
    config = write_suite(tmp_path, extra="metrics:\n  pass_rate: {}\n  tonne: {gate: false}\n")
    config.write_text(config.read_text().replace("[final_answer]", "[final_answer, {python: 'scoring:judge'}]"))
    for out in ("a.json", "b.json"):
        assert (
            evalgate(repo_root, python_exe, "run", "--config", str(config), "--output", out, cwd=tmp_path).returncode
            == 0
        )
    args = ["compare", "--config", str(config), "--baseline", "a.json", "--candidate", "b.json"]
    proc = evalgate(repo_root, python_exe, *args, cwd=tmp_path)
    assert_usage_error(proc, "evalgate.yml:9", "metric 'tonne' is a named score that no case of the runs records")
    config.write_text(config.read_text().replace("tonne", "tone"))
    assert evalgate(repo_root, python_exe, *args, cwd=tmp_path).returncode in (0, 1)


@pytest.mark.e2e
def test_compare_with_a_slice_key_no_case_of_the_runs_carries(tmp_path, repo_root, python_exe):
    """`compare --config` on results files (from `run`, or imported from a harness) checks the
    config's slices against the runs' cases, as `run` checks them against the case files."""
    config = write_suite(tmp_path, extra="slices: [language]\n")
    for out in ("a.json", "b.json"):
        proc = evalgate(repo_root, python_exe, "run", "--config", str(config), "--output", out, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    config.write_text(config.read_text().replace("slices: [language]", "slices: [langauge]"))
    args = ["compare", "--config", str(config), "--baseline", "a.json", "--candidate", "b.json"]
    proc = evalgate(repo_root, python_exe, *args, cwd=tmp_path)
    assert_usage_error(proc, "evalgate.yml:7", "'langauge' carried by no case", "tag keys: language")
    config.write_text(config.read_text().replace("langauge", "language"))
    assert evalgate(repo_root, python_exe, *args, cwd=tmp_path).returncode in (0, 1)


@pytest.mark.e2e
@pytest.mark.parametrize("cut", ['"passed": fals', '"output": "안녕하세요, 세계', '"score": 1.0, '])
def test_results_file_cut_short_says_it_looks_truncated(tmp_path, repo_root, python_exe, cut):
    """Wherever the cut falls (inside a literal, a long string, after non-ASCII text)."""
    case = {"id": "ko-1", "note": "한국어 " * 50}
    head = json.dumps({"schema_version": 1, "run": {"suite": "demo"}, "cases": [case]})
    (tmp_path / "cut.json").write_text(head[:-3] + ', "attempts": [{' + cut, encoding="utf-8")
    proc = evalgate(repo_root, python_exe, "show", "cut.json", cwd=tmp_path)
    assert_usage_error(proc, "cut.json:1: invalid JSON", "the file looks truncated")


@pytest.mark.e2e
def test_candidate_whose_cases_hold_no_attempt_is_never_a_pass(tmp_path, repo_root, python_exe):
    """A results file that lists the cases but no attempt of any (a writer that failed, a hand-made
    file): its header may say success, but nothing was measured."""
    config = write_suite(tmp_path)
    proc = evalgate(repo_root, python_exe, "run", "--config", str(config), "--output", "a.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    raw = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    for case in raw["cases"]:
        case["attempts"] = []
    (tmp_path / "empty.json").write_text(json.dumps(raw), encoding="utf-8")
    args = ["compare", "--config", str(config), "--baseline", "a.json", "--candidate", "empty.json"]
    proc = evalgate(repo_root, python_exe, *args, cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "incomplete" in proc.stdout and "60 cases hold no attempt" in proc.stdout


def test_reset_of_another_suites_run_is_refused(tmp_path, repo_root, python_exe):
    """Blessed, another suite's run would be a baseline every later gate of this suite calls
    `incompatible`: the reset says so and blesses nothing (before: exit 0, blessed)."""
    config = write_suite(tmp_path)
    commit(tmp_path)
    case = {"id": "c0", "slices": {}, "attempts": [{"passed": True, "score": 1.0}]}
    proc = reset_with_results(repo_root, python_exe, config, "other.json", suite="promptfoo-eval", cases=[case])
    assert_usage_error(proc, "'promptfoo-eval'", "'demo'", "--suite demo", "nothing was blessed")
    assert not list((tmp_path / "baselines").glob("baseline-*"))


@pytest.mark.e2e
def test_pass_at_k_with_fewer_attempts_than_k_is_a_usage_error(tmp_path, repo_root, python_exe):
    """pass@3 of one attempt per case can never be estimated: refused when the config loads (it
    runs its own suite), and by compare on results files that hold too few attempts."""
    config = write_suite(tmp_path, extra="metrics:\n  pass@3: {}\n")
    proc = evalgate(repo_root, python_exe, "run", "--config", str(config), cwd=tmp_path)
    assert_usage_error(proc, "evalgate.yml:8", "'pass@3' needs at least 3 attempts per case", "attempts: 3")
    plain = write_suite(tmp_path / "plain")
    for out in ("a.json", "b.json"):
        proc = evalgate(repo_root, python_exe, "run", "--config", str(plain), "--output", out, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    results_only = tmp_path / "gate.yml"  # no target: the attempts are the results files'
    results_only.write_text("suite: demo\ncases: plain/cases.jsonl\nmetrics:\n  pass@3: {}\n", encoding="utf-8")
    args = ["compare", "--config", str(results_only), "--baseline", "a.json", "--candidate", "b.json"]
    proc = evalgate(repo_root, python_exe, *args, cwd=tmp_path)
    assert_usage_error(
        proc, "gate.yml:4", "'pass@3' needs at least 3 judged attempts", "no case of the runs has more than 1"
    )
    config.write_text(config.read_text().replace("pass@3: {}", "pass@3: {}\nattempts: 3"))
    proc = evalgate(repo_root, python_exe, "run", "--config", str(config), "--output", "c.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.e2e
def test_command_target_that_cannot_start_is_a_usage_error(tmp_path, repo_root, python_exe):
    """Before: every case an error, `success`, exit 0 — and a reset blessed it."""
    config = write_suite(tmp_path)
    for command, fragments in (
        ("['nonexistent-binary', '--flag']", ("'nonexistent-binary' is not on the PATH",)),
        ("['./bot.py']", ("bot.py is not an executable file", "chmod +x ./bot.py")),
        ("['./missing.sh']", ("no such file", "missing.sh")),
    ):
        config.write_text(
            config.read_text().split("target:")[0] + f"target:\n  command: {command}\nscorers: [final_answer]\n"
            "baseline: {store: local, path: baselines}\n",
            encoding="utf-8",
        )
        proc = evalgate(repo_root, python_exe, "run", "--config", str(config), cwd=tmp_path)
        assert_usage_error(proc, "evalgate.yml:4", "the command target cannot start", *fragments)


@pytest.mark.e2e
def test_a_run_whose_every_attempt_errored_is_never_blessed(tmp_path, repo_root, python_exe):
    """A target that raises on every call measured nothing: neither a reset nor a first gate's
    seed makes it the baseline (every later gate would pass against it)."""
    config = write_suite(tmp_path, extra="")
    (tmp_path / "bot.py").write_text("def answer(question):\n    return question['tags']\n", encoding="utf-8")
    commit(tmp_path)
    proc = evalgate(repo_root, python_exe, "reset", "--reason", "x", "--config", str(config), cwd=tmp_path)
    assert_usage_error(proc, "every one of its 60 attempts ended in an error", "target 60", "nothing was blessed")
    assert "TypeError" in proc.stderr
    config.write_text(config.read_text().replace("path: baselines}", "path: baselines, on_missing: seed}"))
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert not list((tmp_path / "baselines").glob("baseline-*"))
    # Before: `no-baseline`, exit 0, a report that never named the errors.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = "fail: the candidate measured nothing: 60 of 60 attempts ended in an error (target 60; the first, case c0: "
    assert said in proc.stdout and "TypeError" in proc.stdout, proc.stdout
    report = (tmp_path / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    assert "evalgate FAIL:** The candidate measured nothing" in report and "TypeError" in report
    assert "evalgate reset" not in proc.stdout + report  # the reset it would suggest refuses this run


def _every_attempt_errored(
    tmp_path: Path, repo_root: Path, python_exe: str, baseline_passed: bool, error: Callable[[int], tuple[str, str]]
) -> subprocess.CompletedProcess[str]:
    """``evalgate compare`` of a 60-case candidate whose every attempt ended in ``error(i)`` (kind,
    message) against a reset baseline whose cases all passed or all failed."""
    outcome = {"passed": baseline_passed, "score": float(baseline_passed)}
    cases = [{"id": f"c{i}", "slices": {}, "attempts": [outcome]} for i in range(60)]
    reset_with_results(repo_root, python_exe, write_suite(tmp_path), "baseline.json", suite="demo", cases=cases)
    errored = [
        {"id": f"c{i}", "slices": {}, "attempts": [{"error": dict(zip(("kind", "message"), error(i), strict=True))}]}
        for i in range(60)
    ]
    run = {"suite": "demo", "status": "success", "total_cases": 60, "completed_cases": 60}
    (tmp_path / "errored.json").write_text(json.dumps({"schema_version": 1, "run": run, "cases": errored}))
    return evalgate(
        repo_root, python_exe, "compare", "--baseline", "baseline.json", "--candidate", "errored.json", cwd=tmp_path
    )


def test_a_target_that_errors_on_every_case_fails_against_any_baseline(tmp_path, repo_root, python_exe):
    """Against a baseline that failed every case too, a run of errors was `pass_rate` unchanged
    (not a fail); against one that passed, the banner said only "pass rate fell": both now fail
    and name the error."""
    proc = _every_attempt_errored(tmp_path, repo_root, python_exe, False, lambda i: ("target", "KeyError: 'API_KEY'"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "60 of 60 attempts ended in an error (target 60; the first, case c0: KeyError: 'API_KEY')" in proc.stdout
    assert "; fix the target, then gate again" in proc.stdout


def test_a_scorer_that_raises_on_every_case_is_blamed_not_the_target(tmp_path, repo_root, python_exe):
    """Every attempt a scorer error: the target's answers may be right, so the fix named is the
    scorer's (before: "fix the target")."""
    crash = "scorer 'judge' failed on case 'c{}': KeyError: 'verdict'"
    proc = _every_attempt_errored(tmp_path, repo_root, python_exe, True, lambda i: ("scorer", crash.format(i)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "(scorer 60; the first, case c0: scorer 'judge' failed" in proc.stdout
    assert "; fix the scorer 'judge' (it raised on the target's answers, which may be right), then gate" in proc.stdout
    assert "fix the target" not in proc.stdout


def test_a_first_gate_with_errors_above_max_error_rate_is_not_offered_as_the_baseline(tmp_path, repo_root, python_exe):
    """12 of 60 attempts crashing on a first gate: before, `no-baseline`, exit 0, "store this run as
    the baseline"; against a baseline such a run fails through its pass rate and says why."""
    config = write_suite(tmp_path)
    crashes = "def answer(question):\n    if len(question) == 5:\n        raise KeyError('API_KEY')\n    return 'x'\n"
    (tmp_path / "bot.py").write_text(crashes, encoding="utf-8")
    commit(tmp_path)
    proc = evalgate(repo_root, python_exe, "gate", "--seed", "--config", str(config), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "above gate.max_error_rate 10.0%: 8 of 60 attempts ended in an error (target 8; the first" in proc.stdout
    assert not list((tmp_path / "baselines").glob("baseline-*"))


def test_a_cancelled_run_with_no_case_is_incomplete_not_a_slice_error(tmp_path, repo_root, python_exe):
    """A run job cancelled before its first case: `incomplete` (exit 3), for the gate and the
    reset alike, not "slice key carried by no case" (exit 2)."""
    config = write_suite(tmp_path, extra="slices: [language]\n")
    commit(tmp_path)
    run = {"suite": "demo", "status": "cancelled", "total_cases": 60, "completed_cases": 0, "message": "SIGINT"}
    (tmp_path / "cut.json").write_text(json.dumps({"schema_version": 1, "run": run, "cases": []}), encoding="utf-8")
    proc = evalgate(repo_root, python_exe, "gate", "--results", "cut.json", "--config", str(config), cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "incomplete" in proc.stdout and "0/60" in proc.stdout
    args = ["reset", "--reason", "x", "--results", "cut.json", "--config", str(config)]
    proc = evalgate(repo_root, python_exe, *args, cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "not complete (cancelled, 0/60 cases: SIGINT); nothing was blessed" in proc.stderr


def test_gate_on_another_suites_results_is_a_usage_error_like_the_reset(tmp_path, repo_root, python_exe):
    """Before: `incompatible ... a reset accepts it` (exit 1), and that reset then refused it."""
    config = write_suite(tmp_path)
    reset(repo_root, python_exe, config)
    other = write_suite(tmp_path / "other", suite="quickstart")
    proc = evalgate(repo_root, python_exe, "run", "--config", str(other), "--output", "q.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    args = ["gate", "--mode", "full", "--results", "q.json", "--config", str(config)]
    proc = evalgate(repo_root, python_exe, *args, cwd=tmp_path)
    assert_usage_error(proc, "suite 'quickstart'", "evalgate.yml (and its baseline) is suite 'demo'", "--suite demo")


@pytest.mark.e2e
def test_a_gate_of_uncommitted_changes_says_so(tmp_path, repo_root, python_exe):
    """Before: `candidate 616f88fc63 vs baseline 616f88fc63` and "Nothing in the runs' provenance
    differs", for a candidate run on an edited, uncommitted bot.py."""
    config = write_suite(tmp_path)
    (tmp_path / ".gitignore").write_text(".evalgate/\nreport.html\n", encoding="utf-8")
    reset(repo_root, python_exe, config)
    (tmp_path / "bot.py").write_text(BOT + "# tuned\n", encoding="utf-8")
    args = ["gate", "--config", str(config), "--html", "report.html"]
    proc = evalgate(repo_root, python_exe, *args, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    out = tmp_path / ".evalgate" / "out"
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["run"]["git_dirty"] is True
    report = (out / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    for text in (report, html):
        assert "+ uncommitted changes vs baseline" in text
        assert "Nothing in the runs' provenance" not in text
    assert "| uncommitted changes | no | yes |" in report
    # Committed, the next run is clean again: no mark.
    commit(tmp_path)
    proc = evalgate(repo_root, python_exe, "gate", "--config", str(config), cwd=tmp_path)
    assert "uncommitted" not in (out / "report.md").read_text(encoding="utf-8")

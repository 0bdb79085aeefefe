"""Flaky cases (docs/spec.md#flaky-cases): flip rates from a run's attempts and from the history's runs of the
same config, the case diff's marks, and `evalgate flaky`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fakes.history_db import history_url as history_url  # the fixture
from fakes.history_db import pg_admin_url as pg_admin_url  # the fixture
from fakes.paths import ROOT
from fakes.suites import load_suite

from evals.compare.analysis import compare
from evals.compare.flaky import attempt_flip_rate, pass_hat_k, run_flip_rate, stability
from evals.history import record_run
from evals.history.flaky import known_flaky
from evals.report.html import render_html
from evals.report.markdown import render_markdown
from evals.results.files import save_results
from evals.results.model import Attempt, CaseResult, Results, RunInfo

# Five history runs: c0 always passes, c1 flips twice in its four consecutive pairs (50%), c2 always
# fails, c3 passes in the first three runs only (one flip of four: 25%).
HISTORY = {"c0": [1, 1, 1, 1, 1], "c1": [1, 0, 0, 1, 1], "c2": [0, 0, 0, 0, 0], "c3": [1, 1, 1, 0, 0]}


def run_of(config, outcomes: dict[str, list[int]], started: str, attempts: int) -> Results:
    cases = [
        CaseResult(
            id=case_id,
            slices={"language": "ko" if case_id in ("c1", "c3") else "en"},
            attempts=[Attempt(passed=bool(x), score=float(x)) for x in passes],
            input=f"q{case_id}",
        )
        for case_id, passes in outcomes.items()
    ]
    run = RunInfo(
        suite=config.suite,
        status="success",
        total_cases=len(cases),
        completed_cases=len(cases),
        started_at=started,
        git_sha="a" * 40,  # one clean commit: the history's runs repeat the same code
        git_dirty=False,
        config_hash=config.config_hash(),
        attempts_per_case=attempts,
    )
    return Results(run=run, cases=cases)


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("EVALGATE_HISTORY", raising=False)
    monkeypatch.setenv("EVALGATE_HISTORY_URL", str(tmp_path / "history.sqlite"))
    cases = [{"id": c, "input": f"q{c}", "tags": {"language": "ko" if c in ("c1", "c3") else "en"}} for c in HISTORY]
    config = load_suite(tmp_path, cases, target={"python": "m:f"}, scorers=["exact"], slices=["language"])
    for r in range(5):
        done = record_run(run_of(config, {c: [v[r]] for c, v in HISTORY.items()}, f"2026-11-0{r + 1}T10:00:00Z", 1))
        assert done.failures == 0
    return config


def test_rates_from_attempts_and_from_runs() -> None:
    # 2 of 3 attempts passed: of the 3 pairs of attempts, 2 disagree.
    assert attempt_flip_rate(np.array([2, 3, 0, 1]), np.array([3, 3, 3, 1])).tolist()[:3] == [2 / 3, 0.0, 0.0]
    assert np.isnan(attempt_flip_rate(np.array([1]), np.array([1]))[0])
    assert [stability(3, 3), stability(1, 3), stability(0, 3)] == ["stable pass", "flaky", "stable fail"]
    assert pass_hat_k(2, 3, 2) == pytest.approx(1 / 3) and pass_hat_k(3, 3, 3) == 1.0 and pass_hat_k(1, 1, 2) is None
    assert run_flip_rate([1, 0, 0, 1, 1]) == 0.5 and run_flip_rate([1]) is None


def test_flips_of_known_flaky_cases_are_marked(suite) -> None:
    """A suite with 3 attempts a case and a history of 5 runs: c1's flip is marked from the history
    (50% of runs), c3 (flips 25% in the history) too, and c0, never flaky in the history, from the
    candidate's attempts (1 of 3 passed: 2 of 3 pairs disagree); c2 flipped on both counts."""
    flaky = known_flaky(suite)
    assert flaky == {"c1": 0.5, "c3": 0.25}
    before = {"c0": [1, 1, 1], "c1": [1, 1, 1], "c2": [0, 0, 0], "c3": [1, 1, 1]}
    after = {"c0": [0, 0, 1], "c1": [0, 0, 0], "c2": [1, 1, 1], "c3": [0, 0, 0]}
    baseline = run_of(suite, before, "2026-11-06T10:00:00Z", 3)
    candidate = run_of(suite, after, "2026-11-07T10:00:00Z", 3)
    comparison = compare(baseline, candidate, suite, flaky=flaky)
    marks = {e.id: (e.flaky_rate, e.flaky_basis) for e in comparison.case_diff.pass_to_fail}
    assert marks == {"c0": (pytest.approx(2 / 3), "attempts"), "c1": (0.5, "history"), "c3": (0.25, "history")}
    (fixed,) = comparison.case_diff.fail_to_pass
    assert fixed.id == "c2" and fixed.flaky_rate is None and fixed.flaky_note is None
    markdown = render_markdown(comparison)
    assert "· flaky (flips 50% of runs)" in markdown and "· flaky (its attempts disagree 67% of the time)" in markdown
    html = render_html(comparison=comparison)
    assert '<div class="muted">flaky (flips 25% of runs)</div>' in html


@pytest.mark.e2e
def test_flaky_command_lists_them_per_slice(suite, tmp_path: Path) -> None:
    def flaky(*argv: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "evals", "flaky", "--config", str(suite.path), *argv]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path)

    listed = flaky("--slice", "language=ko")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "flaky cases over the latest 5 repeated run(s) of this config (history: baselines and re-runs):",
        "language=ko: 2 of 2 cases flaky",
        "  c1  flips 50% of runs  (passes 60% over 5 runs)",
        "  c3  flips 25% of runs  (passes 60% over 5 runs)",
    ]
    results = tmp_path / "three.json"
    save_results(run_of(suite, {"c0": [1, 1, 1], "c1": [1, 0, 1], "c2": [0, 0, 0], "c3": [0, 0, 1]}, "x", 3), results)
    within = flaky("--results", str(results))
    assert within.returncode == 0, within.stderr
    assert "overall: 4 cases: 1 stable pass, 2 flaky, 1 stable fail; pass@3 75.0%, pass^3 25.0%" in within.stdout
    assert "  c1  2/3 attempts passed: they disagree 67% of the time" in within.stdout
    unknown = flaky("--slice", "language=xx")
    assert unknown.returncode == 2 and "language=en, language=ko" in unknown.stderr


def test_a_slice_key_with_one_value_on_every_case_is_no_unit_of_flaky_either():
    """As in compare and plan: `task=toy` on every case would be overall again."""
    from evals.history.flaky import _units

    slices = [{"task": "toy", "lang": "ko" if i % 2 else "en"} for i in range(6)]
    assert [u[0] for u in _units(slices, ["task", "lang"], None)] == ["overall", "lang=en", "lang=ko"]


@pytest.mark.e2e
def test_which_runs_repeat_the_same_code(history_url: str, tmp_path: Path) -> None:
    """Baselines and runs nobody gated count; a gated or compared proposal does not (unless it became
    a baseline), the run being decided about is left out by its digest, and a reset starts the
    repeats again. On SQLite and PostgreSQL (the rule is one query)."""
    from evals.history import open_history
    from evals.history.discordance import observed_discordance
    from evals.history.record import Writer
    from evals.history.repeats import repeated_runs
    from evals.history.rows import run_digest

    cases = [{"id": c, "input": f"q{c}"} for c in HISTORY]
    config = load_suite(tmp_path, cases, target={"python": "m:f"}, scorers=["exact"])
    every = {c: 1 for c in HISTORY}
    broken = {c: 0 for c in HISTORY}
    with open_history(history_url) as engine:
        writer = Writer(engine)

        def run(day: int, outcomes: dict[str, int], *actions: str) -> int:
            results = run_of(config, {c: [v] for c, v in outcomes.items()}, f"2026-11-{day:02d}T10:00:00Z", 1)
            run_id = writer.run(results, recorded_by="run")
            for action in actions:
                writer.gate(action, suite=config.suite, candidate_run=run_id)
            return run_id

        seeded = run(1, every, "gate", "seed")  # gated, then it became the baseline
        rerun = run(2, every)  # `evalgate run` of the same code
        run(3, broken, "gate")  # a PR's proposal that broke every case
        run(4, broken, "compare")
        promoted = run(5, every, "gate", "promote")
        gated = run_of(config, {c: [0] for c in HISTORY}, "2026-11-06T10:00:00Z", 1)
        writer.run(gated, recorded_by="run")  # the gate's suite run, recorded before its gate decides

        def ids(leave_out: str | None = None) -> list[int]:
            return [r.id for r in repeated_runs(engine, config.suite, config.config_hash(), 20, leave_out=leave_out)]

        assert ids(run_digest(gated)) == [promoted, rerun, seeded]
        assert observed_discordance(engine, config.suite, config.config_hash()).discordance > 0  # the gated run
        assert known_flaky(config, gated) == {}  # without it: no case flipped between repeats
        assert known_flaky(config) == pytest.approx({c: 1 / 3 for c in HISTORY})  # with it: each "flipped" once

        after = run(7, broken, "reset")  # a deliberate change, accepted
        again = run(8, broken)
        assert ids() == [again, after]
        assert observed_discordance(engine, config.suite, config.config_hash()).discordance == 0.0


# ---------------------------------------------------------------- end to end: what counts as flaky
# Flaky means the same code gives different outcomes. These run the user's story in a git repository
# with the history on SQLite: a PR that breaks a slice is a change, never a flip.


def evalgate_in(repo: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "evals", *argv]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def history_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALGATE_"))}
    env.update(EVALGATE_HISTORY_URL=str(tmp_path / "history.sqlite"), PYTHONPATH=str(ROOT))
    return {**env, **extra}


def bot_repo(tmp_path: Path, bot: str) -> Path:
    """60 echo cases over en, es and ko answered by ``bot.py`` (``answer``), committed."""
    from fakes.suites import echo_cases, git, write_suite

    repo = tmp_path / "repo"
    cases = [
        {**case, "id": f"{case['tags']['language']}-{i:03d}"}
        for i, case in enumerate(echo_cases(60, language=["en", "es", "ko"]))
    ]
    write_suite(repo, cases, target={"python": "bot:answer", "path": ["."]}, scorers=["exact"], slices=["language"])
    (repo / "bot.py").write_text(bot, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "bot", date="2026-11-01T10:00:00Z")
    return repo


def flipped(repo: Path) -> list[dict]:
    import json

    diff = json.loads((repo / ".evalgate" / "out" / "comparison.json").read_text(encoding="utf-8"))["case_diff"]
    return diff["pass_to_fail"] + diff["fail_to_pass"]


@pytest.mark.e2e
def test_a_pr_that_breaks_a_slice_is_no_flaky_case_and_no_noise_for_plan(tmp_path: Path) -> None:
    """A deterministic bot: gate, reset ("first baseline"), then a gate with the es slice broken.
    The broken cases flipped because the code changed: neither the gated run itself nor another
    gated proposal counts as a repeat, so no case is flaky and the plan measures no noise from it."""
    repo = bot_repo(
        tmp_path,
        "import os\n\ndef answer(q):\n"
        "    broken = os.environ.get('MYBOT_BREAK') == 'es' and int(q[1:]) % 3 == 1 and int(q[1:]) % 2\n"
        "    return 'no' if broken else q\n",
    )
    env = history_env(tmp_path)
    assert evalgate_in(repo, env, "gate").returncode in (0, 2)
    reset = evalgate_in(repo, env, "reset", "--reason", "first baseline")
    assert reset.returncode == 0, reset.stderr
    broken = evalgate_in(repo, {**env, "MYBOT_BREAK": "es"}, "gate")
    assert broken.returncode == 1, broken.stderr
    cases = flipped(repo)
    assert len(cases) == 10 and {c["id"][:2] for c in cases} == {"es"}
    assert [c["flaky_rate"] for c in cases] == [None] * 10
    report = (repo / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    assert "**es-001**" in report and "flaky" not in report

    # One repeated run so far (the reset's): nothing to list, and plan says it assumes.
    listed = evalgate_in(repo, env, "flaky")
    assert listed.returncode == 2 and "holds 1 repeated run(s)" in listed.stderr, listed.stderr
    planned = evalgate_in(repo, env, "plan")
    assert planned.returncode == 0, planned.stderr
    assert "assumed (10%)" in planned.stdout and "observed" not in planned.stdout

    # A re-run of the unchanged bot is a repeat: the noise it shows is the bot's, none.
    assert evalgate_in(repo, env, "run", "-o", "again.json", "--no-summary").returncode == 0
    listed = evalgate_in(repo, env, "flaky")
    assert listed.returncode == 0, listed.stderr
    assert "overall: 0 of 60 cases flaky" in listed.stdout
    planned = evalgate_in(repo, env, "plan")
    assert "discordance 0.0%" in planned.stdout and "60 paired cases over 1 pair(s) of runs" in planned.stdout

    # Accepting the break with a reset starts the repeats again there: the change is not a flip.
    accepted = evalgate_in(repo, {**env, "MYBOT_BREAK": "es"}, "reset", "--reason", "es answers changed on purpose")
    assert accepted.returncode == 0, accepted.stderr
    assert evalgate_in(repo, {**env, "MYBOT_BREAK": "es"}, "run", "-o", "again.json", "--no-summary").returncode == 0
    planned = evalgate_in(repo, env, "plan")
    assert "discordance 0.0%" in planned.stdout and "60 paired cases over 1 pair(s) of runs" in planned.stdout


@pytest.mark.e2e
def test_the_quickstart_regression_is_no_flaky_case(tmp_path: Path) -> None:
    """The README's demo: the quickstart gated with its committed baseline, then with
    QUICKSTART_REGRESS=ko. The Korean cases it broke are not flaky."""
    import shutil

    from fakes.suites import git

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "quickstart", repo, ignore=shutil.ignore_patterns(".evalgate"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "quickstart", date="2026-11-01T10:00:00Z")
    env = history_env(tmp_path)
    first = evalgate_in(repo, env, "gate")
    assert first.returncode == 0, first.stderr
    regressed = evalgate_in(repo, {**env, "QUICKSTART_REGRESS": "ko"}, "gate")
    assert regressed.returncode == 1, regressed.stderr
    cases = flipped(repo)
    assert cases and all(c["slices"]["language"] == "ko" for c in cases)
    assert {c["flaky_rate"] for c in cases} == {None}
    assert "flaky" not in (repo / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    planned = evalgate_in(repo, env, "plan")
    assert planned.returncode == 0, planned.stderr
    assert "observed" not in planned.stdout or "discordance 0.0%" in planned.stdout, planned.stdout


# Three ways to run the quickstart's broken Korean handling: the switch, the edit left uncommitted,
# the edit committed. None of them is the code of the baseline's commit.
BREAK_KO = ('os.environ.get("QUICKSTART_REGRESS", "")', 'os.environ.get("QUICKSTART_REGRESS", "ko")')


@pytest.mark.e2e
@pytest.mark.parametrize("change", ["environment", "uncommitted", "committed"])
def test_a_run_of_the_changed_quickstart_makes_no_case_flaky(tmp_path: Path, change: str) -> None:
    """The local loop: the quickstart gated, the broken bot run once with `evalgate run`, then
    gated. The run of the change is of other code than the baseline (another commit, or a dirty
    tree), so the cases it broke are not flaky in the gate, `evalgate flaky` lists none and `plan`
    has no pair of repeats to read a discordance from."""
    import shutil

    from fakes.suites import commit_all, git

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "quickstart", repo, ignore=shutil.ignore_patterns(".evalgate"))
    commit_all(repo, "quickstart")
    env = history_env(tmp_path)
    assert evalgate_in(repo, env, "gate").returncode == 0
    if change == "environment":
        env = {**env, "QUICKSTART_REGRESS": "ko"}
    else:
        bot = repo / "bot.py"
        bot.write_text(bot.read_text(encoding="utf-8").replace(*BREAK_KO), encoding="utf-8")
        if change == "committed":
            git(repo, "commit", "-qam", "break Korean", date="2026-11-02T10:00:00Z")
    assert evalgate_in(repo, env, "run", "-o", "changed.json", "--no-summary").returncode == 0
    regressed = evalgate_in(repo, env, "gate")
    assert regressed.returncode == 1, regressed.stderr
    cases = flipped(repo)
    assert cases and all(c["slices"]["language"] == "ko" for c in cases)
    assert {c["flaky_rate"] for c in cases} == {None}
    assert "flaky" not in (repo / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    listed = evalgate_in(repo, env, "flaky")  # the changed run alone, if clean: no pair to flip in
    assert listed.returncode == 2 and "flips need two or more" in listed.stderr, listed.stderr
    planned = evalgate_in(repo, env, "plan")
    assert planned.returncode == 0, planned.stderr
    assert "observed" not in planned.stdout, planned.stdout


@pytest.mark.e2e
def test_a_target_that_is_flaky_at_one_commit_is_still_found(tmp_path: Path) -> None:
    """A bot that answers right half of the time: its reset run and a re-run of the same commit
    disagree on about half of the cases, so the gate's flips of those cases are marked flaky, and
    `evalgate flaky` and `plan` see the noise (the gated run itself still left out)."""
    repo = bot_repo(tmp_path, "import random\n\ndef answer(q):\n    return q if random.random() < 0.5 else 'no'\n")
    env = history_env(tmp_path)
    reset = evalgate_in(repo, env, "reset", "--reason", "first baseline")
    assert reset.returncode == 0, reset.stderr
    assert evalgate_in(repo, env, "run", "-o", "again.json", "--no-summary").returncode == 0
    gate = evalgate_in(repo, env, "gate")
    assert gate.returncode in (0, 1, 2), gate.stderr
    rates = {c["id"]: c["flaky_rate"] for c in flipped(repo)}
    assert 1.0 in rates.values() and None in rates.values(), rates  # flaky in the history, and not yet seen so
    assert "· flaky (flips 100% of runs)" in (repo / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    listed = evalgate_in(repo, env, "flaky")
    assert listed.returncode == 0 and "flaky cases over the latest 2 repeated run(s)" in listed.stdout, listed.stderr
    planned = evalgate_in(repo, env, "plan")
    assert "60 paired cases over 1 pair(s) of runs" in planned.stdout
    assert "discordance 0.0%" not in planned.stdout

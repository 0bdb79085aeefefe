"""Flaky cases (SPEC §14): flip rates from a run's attempts and from the history's runs of the
same config, the case diff's marks, and `evalgate flaky`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from suites import load_suite

from evals.compare.analysis import compare
from evals.compare.flaky import attempt_flip_rate, pass_hat_k, run_flip_rate, stability
from evals.history import record_run
from evals.history.flaky import known_flaky
from evals.report.html import render_html
from evals.report.markdown import render_markdown
from evals.results.model import Attempt, CaseResult, Results, RunInfo, save_results

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


def test_flaky_command_lists_them_per_slice(suite, tmp_path: Path) -> None:
    def flaky(*argv: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "evals", "flaky", "--config", str(suite.path), *argv]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path)

    listed = flaky("--slice", "language=ko")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "flaky cases over the latest 5 whole run(s) of this config (history):",
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

"""gate.fail_fast on the bundled quickstart's pull requests (docs/spec.md#fail-fast): a PR that breaks
Korean by about 50 pp stops scheduling cases early and fails (exit 1), its results file saying how
far it ran and why, the headline "stopped after N of 240 cases: language=ko regressed" (comment
and HTML); an unchanged PR runs every case and passes. (A resume completing a stopped run:
tests/unit/run/test_fail_fast_run.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fakes.suites import commit_all
from test_pr_rules import _evalgate, _pr_env, _quickstart_repo

# Appended to the quickstart's bot: about half of the Korean questions answered wrongly (the
# quickstart's own QUICKSTART_REGRESS=ko breaks 40% of them, about −35 pp).
BROKEN_KOREAN = """

_answer_before = answer


def answer(question: str) -> str:
    if _HANGUL.search(question) and _unit(question, "regress-ko-50") < 0.55:
        working, _, wrong = _solve(question)
        return f"{working}\\nFINAL ANSWER: {wrong}"
    return _answer_before(question)
"""


def _gate_pr(repo: Path, base: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    env = _pr_env(repo, base, commit_all(repo, "the change"), tmp_path)
    env.pop("QUICKSTART_REGRESS")
    env["EVALGATE_HISTORY"] = "off"
    # Every case (not the PR's smoke subset), so a stop is fail fast's alone.
    done = _evalgate(repo, env, "--mode", "full", "--html", "out/report.html")
    return done, json.loads((repo / "out" / "comparison.json").read_text(encoding="utf-8"))


def test_a_broken_slice_stops_early_and_fails_and_an_unchanged_pr_runs_every_case(tmp_path):
    repo, _ = _quickstart_repo(tmp_path)
    config = repo / "evalgate.yml"
    config.write_text(config.read_text(encoding="utf-8") + "gate: {fail_fast: true}\n", encoding="utf-8")
    base = commit_all(repo, "fail fast")
    bot = repo / "bot.py"
    original = bot.read_text(encoding="utf-8")

    bot.write_text(original + BROKEN_KOREAN, encoding="utf-8")
    done, comparison = _gate_pr(repo, base, tmp_path)
    assert done.returncode == 1, done.stderr
    run = json.loads((repo / "out" / "results.json").read_text(encoding="utf-8"))["run"]
    stop, ran = run["fail_fast"], run["completed_cases"]
    assert run["status"] == "cancelled" and stop["unit"] == "language=ko" and ran < 200
    assert stop["cases_at_look"] <= ran  # what was in flight at the look finished
    assert comparison["verdict"] == "fail" and comparison["reason"].startswith(f"stopped after {ran} of 240 cases")
    banner = (repo / "out" / "comment.md").read_text(encoding="utf-8").splitlines()[1]
    assert f"Stopped after {ran} of 240 cases: language=ko regressed" in banner
    html = (repo / "out" / "report.html").read_text(encoding="utf-8")
    assert f"Stopped after {ran} of 240 cases: language=ko regressed" in html
    assert f"stopped early by fail fast after {ran} of 240 cases" in html  # the Spend section says so too
    ko = next(u for u in comparison["units"] if u["unit"] == "language=ko" and u["metric"] == "pass_rate")
    assert ko["verdict"] == "regressed"

    bot.write_text(original + "\n# a comment\n", encoding="utf-8")
    done, comparison = _gate_pr(repo, base, tmp_path)
    assert done.returncode == 0, done.stderr
    assert comparison["verdict"] == "pass" and comparison["candidate_run"]["completed_cases"] == 240
    assert comparison["candidate_run"]["fail_fast"] is None

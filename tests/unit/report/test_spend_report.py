"""Spend in every report (docs/spec.md#spend-reporting) through the real CLI on results files: the run
summary, the PR comment and the HTML page state tokens, cost and cache hits of the candidate beside
the baseline's; cost no attempt reports is "unknown", never $0, and cost some attempts report is
"at least"; cache hits are counted and paid nothing. And the cost gate of docs/config.md
(``cost_usd: {tolerance: "10%", gate: true}``): +30% per case fails naming cost_usd, the same cost
passes, and a side that reports no cost is said to be unknown instead of passing."""

from __future__ import annotations

import html
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.common.errors import EXIT_FAIL, EXIT_PASS
from evals.compare.analysis import compare
from evals.report.html import render_html
from evals.report.markdown import render_markdown
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.results.spend import LimitStop
from evals.results.summary import summarize

COST_GATE = """\
suite: t
cases: cases.jsonl
metrics:
  cost_usd: {tolerance: "10%", gate: true}
"""


def evalgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "evals", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


def write_results(path: Path, attempts: list[dict[str, Any]]) -> Path:
    """A complete run of one case per attempt (ids c000..), each passed."""
    cases = [{"id": f"c{i:03d}", "attempts": [{"passed": True, **a}]} for i, a in enumerate(attempts)]
    run = {"suite": "t", "status": "success", "total_cases": len(cases), "completed_cases": len(cases)}
    path.write_text(json.dumps({"schema_version": 1, "run": run, "cases": cases}), encoding="utf-8")
    return path


def suite(folder: Path, config: str = "suite: t\ncases: cases.jsonl\n") -> Path:
    (folder / "cases.jsonl").write_text('{"id": "c000", "input": "x"}\n', encoding="utf-8")
    (folder / "evalgate.yml").write_text(config, encoding="utf-8")
    return folder / "evalgate.yml"


def gate(folder: Path, results: Path, out: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return evalgate("gate", "--config", "evalgate.yml", "--results", str(results), "--out-dir", out, *extra, cwd=folder)


@pytest.mark.e2e
def test_unknown_and_partly_known_cost_and_cache_hits_in_the_summary_the_comment_and_the_page(tmp_path: Path) -> None:
    suite(tmp_path)
    # The baseline's target reported no cost at all; the candidate's reports it on 6 of its 8
    # answered attempts, and 2 more came from the response cache (their cost is not paid again).
    base = write_results(tmp_path / "base.json", [{"tokens_in": 10, "tokens_out": 2}] * 10)
    cand = write_results(
        tmp_path / "cand.json",
        [{"tokens_in": 10, "tokens_out": 2, "cost_usd": 0.005}] * 6
        + [{"tokens_in": 10, "tokens_out": 2}] * 2
        + [{"tokens_in": 10, "tokens_out": 2, "cost_usd": 0.005, "cached": True}] * 2,
    )

    shown = evalgate("show", str(base), cwd=tmp_path)
    assert "cost:    unknown (no attempt reports cost)" in shown.stdout and "$0" not in shown.stdout
    assert "tokens:  100 in, 20 out" in shown.stdout and "cache:   none" in shown.stdout
    evalgate("show", str(base), "--html", "base.html", cwd=tmp_path)
    spend = (tmp_path / "base.html").read_text(encoding="utf-8").split('<p id="spend">', 1)[1].split("</p>", 1)[0]
    assert spend == "Tokens: 100 in, 20 out. Cost: unknown (no attempt reports cost). Cache hits: none."
    shown = evalgate("show", str(cand), cwd=tmp_path)
    assert "cost:    at least $0.03 (6 of 8 attempts report cost)" in shown.stdout
    assert "tokens:  80 in, 16 out" in shown.stdout  # the cache hits' tokens were not paid for
    cache = "cache:   2 of 10 attempts from the response cache; paid this run $0.03; cached answers are not in tokens"
    assert cache in shown.stdout

    seeded = gate(tmp_path, base, "o0", "--seed")
    assert seeded.returncode == EXIT_PASS, seeded.stdout + seeded.stderr
    done = gate(tmp_path, cand, "o1", "--html", "o1/report.html")
    assert done.returncode == EXIT_PASS, done.stdout + done.stderr
    comment = (tmp_path / "o1" / "comment.md").read_text(encoding="utf-8")
    summary = "💰 Spend: candidate ≥ $0.03 for 10 attempts, 2 cached · baseline cost unknown for 10 attempts"
    assert f"<details><summary>{summary}</summary>" in html.unescape(comment)  # entities inside HTML
    assert "| baseline | 10 | 100 in, 20 out | unknown (no attempt reports cost) | none |" in comment
    assert "| candidate | 10 | 80 in, 16 out | at least \\$0.03 (6 of 8 attempts report cost) | 2 of 10 attempts |" in (
        comment
    )
    assert "baseline and candidate have attempts that report none" in comment
    assert "\\$0 " not in comment and "| \\$0 |" not in comment
    page = (tmp_path / "o1" / "report.html").read_text(encoding="utf-8")
    table = page.split('<table id="spend">', 1)[1].split("</table>", 1)[0]
    assert "<td>baseline</td>" in table and "unknown (no attempt reports cost)" in table
    assert "at least $0.03 (6 of 8 attempts report cost)" in table and "2 of 10 attempts" in table


@pytest.mark.e2e
def test_the_cost_gate_example(tmp_path: Path) -> None:
    """docs/config.md's cost gate, end to end: per-case costs of 60 cases (5–11 tenths of a cent,
    ±2% noise); a candidate whose cost per case rose 30% fails naming cost_usd; one of the same
    cost passes; one whose target reports no cost is said to be unknown and does not pass."""
    suite(tmp_path, COST_GATE)

    def costs(factor: float, seed: int, reported: bool = True) -> list[dict[str, Any]]:
        rnd = random.Random(seed)
        return [
            {"cost_usd": 0.001 * (5 + i % 7) * factor * (1 + rnd.uniform(-0.02, 0.02))} if reported else {}
            for i in range(60)
        ]

    base = write_results(tmp_path / "base.json", costs(1.0, 1))

    def compare(name: str, attempts: list[dict[str, Any]]) -> tuple[subprocess.CompletedProcess[str], str]:
        cand = write_results(tmp_path / f"{name}.json", attempts)
        done = evalgate(
            "compare", "--config", "evalgate.yml", "--baseline", str(base), "--candidate", str(cand),
            "--report", f"{name}.md", cwd=tmp_path,
        )  # fmt: skip
        return done, (tmp_path / f"{name}.md").read_text(encoding="utf-8")

    rose, report = compare("rose", costs(1.3, 2))
    assert rose.returncode == EXIT_FAIL, rose.stdout + rose.stderr
    assert "evalgate compare: fail: regression: cost_usd on overall +" in rose.stdout
    assert "+30% per attempt" in report

    same, report = compare("same", costs(1.0, 3))
    assert same.returncode == EXIT_PASS and "evalgate compare: pass:" in same.stdout, same.stdout

    unknown, report = compare("unknown", costs(1.0, 4, reported=False))
    assert "evalgate compare: pass" not in unknown.stdout
    assert "inconclusive: cost_usd: fewer than 2 paired cases with a value on both sides" in unknown.stdout
    assert (
        "cost\\_usd is gated, but the candidate run reports no cost\\_usd on any case: unknown, not 0, so the "
        "cost\\_usd gate could not be checked" in report
    )


def _stopped(stop: LimitStop | None, done: int, sha: str) -> Results:
    cases = [
        CaseResult(id=f"s-{i:02d}", attempts=[Attempt(passed=True, tokens_in=120, tokens_out=30, cost_usd=0.002)])
        for i in range(done)
    ]
    status = "timeout" if stop and stop.limit == "max_duration_s" else ("cancelled" if stop else "success")
    run = RunInfo(suite="spend", status=status, total_cases=40, completed_cases=done, git_sha=sha * 40, limit=stop)
    return Results(run=run, cases=cases)


def _as_read(markdown: str) -> str:
    """The comment's words as a reader sees them: markdown escapes and code spans dropped."""
    return re.sub(r"\\(.)", r"\1", html.unescape(markdown)).replace("`", "")


def _page_text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.split("<body>", 1)[1]))


@pytest.mark.parametrize(
    ("stop", "named", "first_step"),
    [
        (
            LimitStop(limit="max_cost_usd", value=0.05, spent=0.06),
            "limits.max_cost_usd ($0.05) reached: $0.06 spent after 30 of 40 cases",
            "raise limits.max_cost_usd (what the 30 cases already done spent counts toward it",
        ),
        (
            LimitStop(limit="max_tokens", value=2000, spent=None, unknown=True),
            "limits.max_tokens (2,000 tokens) cannot be enforced: an attempt reported no tokens",
            "make the target report tokens (or limit something it reports)",
        ),
        (
            LimitStop(limit="max_duration_s", value=60, spent=61),
            "limits.max_duration_s (60 s) reached: 61 s spent after 30 of 40 cases",
            "which gets its own max_duration_s",
        ),
    ],
    ids=["cost", "unmeasured-tokens", "duration"],
)
def test_a_limit_stop_is_said_once_in_the_comment_and_on_the_page(stop: LimitStop, named: str, first_step: str) -> None:
    """The banner names the limit and what was spent; one paragraph says how to finish the run;
    neither the warnings nor anything else says either again."""
    comparison = compare(_stopped(None, 40, "a"), _stopped(stop, 30, "b"))
    assert comparison.verdict == "incomplete"
    resume = "evalgate run --resume --output results.json"
    for kind in ("comment", "summary", "full"):
        text = _as_read(render_markdown(comparison, kind=kind))
        banner = next(line for line in text.splitlines() if "evalgate INCOMPLETE" in line)
        assert named in banner and "--resume" not in banner, banner
        for words in (named, "stopped by a limit", "30 of 40", first_step, resume, "evalgate gate --results"):
            assert text.count(words) == 1, (kind, words, text)
        assert text.count("--resume") == 1 and "The candidate run is partial" not in text
    page = _page_text(render_html(comparison=comparison))
    for words in (named, "stopped by a limit", "30 of 40", first_step, resume, "evalgate gate --results"):
        assert page.count(words) == 1, (words, page)
    assert page.count("--resume") == 1 and "The candidate run is partial" not in page


def test_a_run_page_says_its_limit_stop_once() -> None:
    """The page of a run (no comparison) a limit stopped: its limit paragraph names the limit,
    what was spent and how to finish; the status line above it does not repeat the run's message."""
    stop = LimitStop(limit="max_cost_usd", value=0.05, spent=0.06)
    partial = _stopped(stop, 30, "b")
    partial.run.message = "limits.max_cost_usd ($0.05) reached: $0.06 spent after 30 of 40 cases; to finish it, …"
    page = _page_text(render_html(results=partial, summary=summarize(partial)))
    assert page.count("limits.max_cost_usd ($0.05)") == 1 and page.count("--resume") == 1, page
    assert "with $0.06 spent" in page and "30/40 cases complete (cancelled)" in page


def test_the_finish_paragraph_names_the_gate_s_own_commands() -> None:
    """A gate of a config elsewhere than ./evalgate.yml: the paragraph and the reason give the full
    commands the gate knows (config, results file, flags), not the bare flags."""
    resume = "evalgate run --config suites/chat/evalgate.yml --output out/results.json --smoke --resume"
    again = "evalgate gate --config suites/chat/evalgate.yml --results out/results.json --mode smoke"
    stop = LimitStop(limit="max_cost_usd", value=0.05, spent=0.06)
    comparison = compare(_stopped(None, 40, "a"), _stopped(stop, 30, "b"), resume_command=resume, gate_command=again)
    assert comparison.reason.endswith(
        f"then rerun with `{resume}` (what the kept cases spent counts toward the limit: "
        f"with the same limit the run stops again at once), then `{again}`"
    )
    assert (comparison.resume_command, comparison.gate_command) == (resume, again)
    text = _as_read(render_markdown(comparison))
    page = _page_text(render_html(comparison=comparison))
    for shown in (text, page):
        assert shown.count(resume) == 1 and shown.count(again) == 1, shown
        assert "--output results.json" not in shown and "--results results.json" not in shown
    finished = compare(_stopped(None, 40, "a"), _stopped(None, 40, "b"), resume_command=resume, gate_command=again)
    assert finished.resume_command is None and finished.gate_command is None, "said only of a run a limit stopped"

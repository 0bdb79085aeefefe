"""The PR comment and the HTML page as a person sees them (docs/spec.md#html-report), in a real headless Chromium:
the comment through a GFM renderer with GitHub's alerts (marked + marked-alert), the page as
written. Asserted on what is drawn: the bars' drawn widths order as |Δ|, the first flipped
case's output is on screen without a click, no machine path, the page says what the comment
says (warnings, units by severity, failures-only toggles, named scores, judge reasoning, traces)
under a CSP that pins its one script by hash."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.paths import ROOT
from test_html_report import (  # noqa: F401
    QUICKSTART,
    browser,
    comment_in_browser,
    comment_in_column,
    fit_in_browser,
    keep_screenshot,
    open_in_browser,
)

from evals.compare.analysis import compare
from evals.compare.looks import EvidenceLook, EvidenceValue, MoreEvidence
from evals.compare.model import Comparison
from evals.report import facts
from evals.report.filters import BAR_CELLS
from evals.report.html import render_html
from evals.report.markdown import render_markdown
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.results.spend import LimitStop, spend_of
from evals.results.trace import TraceEvent


@pytest.fixture(scope="module")
def regressed_gate(tmp_path_factory) -> Path:
    """The quickstart gated with its Korean regression: comment.md, comparison.json, gate.html."""
    where = tmp_path_factory.mktemp("gate")
    env = {**os.environ, "QUICKSTART_REGRESS": "ko"}
    command = [sys.executable, "-m", "evals", "gate", "--config", str(QUICKSTART), "--out-dir", str(where / "out")]
    done = subprocess.run(
        [*command, "--html", str(where / "gate.html")], capture_output=True, text=True, env=env, cwd=where, check=False
    )
    assert done.returncode == 1, done.stderr
    return where


def _pp(text: str) -> float:
    return abs(float(text.replace("−", "-").replace("±", "").replace("pp", "").strip()))


def test_pr_comment_as_github_draws_it(browser, regressed_gate: Path) -> None:  # noqa: F811
    comparison = json.loads((regressed_gate / "out" / "comparison.json").read_text())
    shot = regressed_gate / "comment.png"
    seen = comment_in_browser(browser, regressed_gate / "out" / "comment.md", shot)
    keep_screenshot(shot)
    assert seen["requests"] == [f"file://{(regressed_gate / 'out' / 'comment.html').resolve()}"]
    # The verdict is a red alert whose sentence names the slice in percentage points.
    assert seen["alert"] == "markdown-alert markdown-alert-caution"
    assert "evalgate FAIL: pass rate on language=ko fell 38.7 pp" in seen["alertText"]
    # Every drawn bar is as long as its |Δ|: the worst slice the longest, an unchanged one empty.
    bars = seen["bars"]
    assert {b["unit"] for b in bars} >= {"overall", "language=ko"}
    by_width = sorted(bars, key=lambda b: b["width"])
    assert [_pp(b["delta"]) for b in by_width] == sorted(_pp(b["delta"]) for b in bars)
    ko = max(bars, key=lambda b: b["width"])
    assert ko["unit"] == "language=ko" and ko["width"] > 100
    cell = ko["width"] / BAR_CELLS  # a partial block's glyph is drawn within its cell
    for b in bars:
        assert b["width"] == pytest.approx(ko["width"] * _pp(b["delta"]) / _pp(ko["delta"]), abs=cell + 1)
    # The first flipped case's candidate output is on screen, not behind a fold.
    first = comparison["case_diff"]["pass_to_fail"][0]
    assert seen["firstOutput"] is not None and seen["firstOutput"].strip() == first["candidate_output"].strip()
    assert seen["text"].index(first["id"]) < seen["text"].index("All units")
    # The rest sits in folds; no machine path anywhere.
    folds = seen["folds"]
    assert folds[0].startswith("💰 Spend: candidate ")  # the first fold; its line is what is read
    # Then the units that did not move the verdict, counted on their folds' lines, then all units.
    quiet = {u["unit"] for u in comparison["units"] if u["verdict"] == "inconclusive"}
    assert quiet and re.fullmatch(r"\d+ units? (inconclusive|saw no change) \(.*\)", folds[1])
    units = folds.index(f"All units ({len(comparison['units'])})")
    assert folds[units + 1].startswith("How each unit was tested")
    assert folds[units + 2].startswith("Case diff: 31 pass → fail")
    comment = (regressed_gate / "out" / "comment.md").read_text()
    for path in (str(regressed_gate), str(ROOT), "/tmp/", "/home/", "/root/", "/work/"):
        assert path not in seen["text"] and path not in comment
    # The local store is named by the end of its path (it lies outside the working folder here).
    assert "Source: local store …/quickstart/baselines" in comment


def test_html_page_says_what_the_comment_says(browser, regressed_gate: Path) -> None:  # noqa: F811
    comparison = json.loads((regressed_gate / "out" / "comparison.json").read_text())
    comment = (regressed_gate / "out" / "comment.md").read_text()
    page = regressed_gate / "gate.html"
    shot = regressed_gate / "page.png"
    first = comparison["case_diff"]["pass_to_fail"][0]["id"]
    seen = open_in_browser(browser, page, shot, first)
    keep_screenshot(shot)
    assert not seen["errors"] and seen["requests"] == [f"file://{page.resolve()}"]
    # The script ran under a CSP that allows it by hash only.
    assert "unsafe-inline" not in seen["csp"] and re.search(r"script-src 'sha256-[A-Za-z0-9+/]+=*'", seen["csp"])
    assert seen["after"]["cases"] == 1
    # The same sentence as the comment's banner, in % and pp.
    assert "pass rate on language=ko fell 38.7 pp (88.8% → 50.0%" in seen["text"]
    assert "fell 38.7 pp** (88.8% → 50.0%" in comment
    # Units by severity: the four regressed first, then the rest; the toggle leaves exactly those.
    verdicts = [v.split(" (")[0] for _u, v in seen["units"]]
    regressed = sum(u["verdict"] == "regressed" for u in comparison["units"])
    assert verdicts[:regressed] == ["regressed"] * regressed and "regressed" not in verdicts[regressed:]
    assert seen["toggled"]["units"] == regressed == 4
    # The case diff's failures-only toggle hides the fail → pass rows (the case list's, the passing cases).
    d = comparison["case_diff"]
    assert seen["toggled"]["diff"] == seen["before"]["diff"] - len(d["fail_to_pass"]) - (
        d["n_fail_to_pass"] > len(d["fail_to_pass"])
    )
    cases = seen["before"]["cases"]
    assert 0 < seen["toggled"]["cases"] < cases
    # What the comment's folds say is on the page: MDE, underpowered units, what changed, the baseline.
    for words in ("MDE", "underpowered", "What changed", "Baseline", "final_answer 1.00 → 0.00"):
        assert words in seen["text"]


def _run(sha: str, fail: set[int], *, retries: int = 0) -> Results:
    cases = []
    for i in range(60):
        passed = i not in fail
        cases.append(
            CaseResult(
                id=f"c-{i:02d}",
                slices={"lang": "ko" if i % 2 else "en"},
                input=f"question {i}",
                expected=str(i),
                attempts=[
                    Attempt(
                        passed=passed,
                        score=1.0 if passed else 0.0,
                        scores={"helpfulness": 0.9 if passed else 0.2},
                        output=f"answer {i if passed else 'wrong'}",
                        retries=retries if i == 3 else 0,
                        metadata={"judge": {"reasoning": f"{'correct' if passed else 'misses it'} on c-{i:02d}"}},
                        trace=[
                            TraceEvent(seq=0, kind="message", name="user", content=f"question {i}"),
                            TraceEvent(seq=1, kind="message", name="assistant", content=f"step for {sha[:3]} {i}"),
                        ],
                    )
                ],
            )
        )
    return Results(
        run=RunInfo(suite="judged", status="success", total_cases=60, completed_cases=60, git_sha=sha * 40),
        cases=cases,
    )


def test_judge_reasoning_named_scores_and_traces_on_both(browser, tmp_path: Path) -> None:  # noqa: F811
    comparison = compare(_run("a", set()), _run("b", {1, 3, 5, 7, 9, 11, 13}, retries=2), tolerance=0.02)
    assert comparison.verdict == "fail"
    md = render_markdown(comparison)
    (tmp_path / "comment.md").write_text(md)
    shown = comment_in_browser(browser, tmp_path / "comment.md", tmp_path / "judged-comment.png")
    keep_screenshot(tmp_path / "judged-comment.png")
    top = shown["text"].split("All units")[0]
    assert "judge on the baseline: correct on c-01" in top and "judge on the candidate: misses it on c-01" in top
    assert "helpfulness 0.90 → 0.20" in top
    page = tmp_path / "judged.html"
    page.write_text(render_html(results=_run("b", {1, 3, 5, 7, 9, 11, 13}), comparison=comparison))
    seen = open_in_browser(browser, page, tmp_path / "judged.png", "c-01")
    keep_screenshot(tmp_path / "judged.png")
    assert not seen["errors"]
    for words in (
        "judge: misses it on c-01",
        "judge: correct on c-01",
        "helpfulness 0.90 → 0.20",
        "trace (2 events)",
    ):
        assert words in seen["text"], words
    # Every warning of the comment is on the page too (here: the infra retries of c-03).
    notices = facts.notices(comparison, facts.baseline_info(comparison))
    assert notices and all(n in seen["text"] for n in notices)
    assert all(html.escape(n, quote=False) in page.read_text() for n in notices)


@pytest.fixture(scope="module")
def more_evidence_gate(tmp_path_factory) -> Path:
    """The quickstart (es cut to 25 cases) whose candidate commit breaks Spanish, gated with
    gate.more_evidence: inconclusive at the first look, fail after batches (comment.md, comparison.json)."""
    from fakes.suites import git
    from test_more_evidence_quickstart import _configure, _copy_quickstart, _gate, flaky_spanish

    where = tmp_path_factory.mktemp("evidence")
    repo, store = _copy_quickstart(where / "quickstart"), where / "store"
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "baseline")
    _gate(repo, store, "--seed")
    with (repo / "bot.py").open("a", encoding="utf-8") as fh:
        fh.write(flaky_spanish(where / "calls"))  # a deterministic bot would stop after one batch
    _configure(repo, gate={"more_evidence": {"max_batches": 10}})
    git(repo, "commit", "-qam", "candidate: breaks Spanish")
    code, comparison, err = _gate(repo, store)
    assert (code, comparison["verdict"]) == (1, "fail"), err
    return repo / ".evalgate" / "out"


def test_the_comments_more_evidence_section_as_github_draws_it(browser, more_evidence_gate: Path) -> None:  # noqa: F811
    comparison = json.loads((more_evidence_gate / "comparison.json").read_text())
    me = comparison["more_evidence"]
    shot = more_evidence_gate / "comment-more-evidence.png"
    seen = comment_in_browser(browser, more_evidence_gate / "comment.md", shot)
    keep_screenshot(shot)
    text = seen["text"]
    batches = len(me["looks"]) - 1
    # The alert names the slice more evidence failed; its first open case is that slice's.
    assert "language=es" in seen["alertText"]
    first = comparison["case_diff"]["pass_to_fail"][0]
    assert first["slices"]["language"] == "es" and seen["firstOutput"].strip() == first["candidate_output"].strip()
    # The section is on screen: its heading, what was re-run and what it showed; the method and
    # one table row per batch are one click away.
    heading = f"🔁 More evidence: regressed after {batches} batches: pass_rate on language=es"
    assert heading in text
    assert text.index(first["id"]) < text.index(heading)
    assert f"so {batches} batches re-ran the cases of" in text and "language=es" in text
    assert "How more evidence decides, and every look" in seen["folds"]
    rows = seen["evidenceRows"]
    assert [row[0] for row in rows] == [str(look["look"]) for look in me["looks"][1:]]
    assert rows[-1][-1] == "fail" and all(row[-1] == "continue" for row in rows[:-1])
    assert all("language=es" in row[1] for row in rows)
    assert "e-value" not in text and "looking again" not in text
    # The section ends its own paragraph (it once ran on into the list of inconclusive units).
    paragraph = next(line for line in text.splitlines() if "re-ran the cases of" in line)
    assert "inconclusive (not enough evidence" not in paragraph


def _spent(sha: str, n: int, *, cost: bool, status: str = "success", limit: bool = False) -> Results:
    cases = [
        CaseResult(
            id=f"s-{i:02d}",
            attempts=[
                Attempt(
                    passed=True, tokens_in=120, tokens_out=30, cost_usd=0.002 if cost else None, cached=cost and i < 4
                )
            ],
        )
        for i in range(n)
    ]
    stop = None
    if limit:
        spend = spend_of(a for c in cases for a in c.attempts)
        stop = LimitStop(limit="max_cost_usd", value=0.05, spent=spend.cost_usd, spend=spend)
    run = RunInfo(suite="spend", status=status, total_cases=40, completed_cases=n, git_sha=sha * 40, limit=stop)
    return Results(run=run, cases=cases)


def test_spend_beside_the_baseline_and_a_limit_stop_as_drawn(browser, tmp_path: Path) -> None:  # noqa: F811
    """A candidate stopped by limits.max_cost_usd against a baseline whose target reported no cost:
    the comment's banner names the limit and what was spent, one paragraph gives the commands that
    finish it, each said once on screen; its Spend fold's line is on screen; the page's spend table
    says "unknown", never $0."""
    comparison = compare(_spent("a", 40, cost=False), _spent("b", 30, cost=True, status="cancelled", limit=True))
    assert comparison.verdict == "incomplete"
    (tmp_path / "comment.md").write_text(render_markdown(comparison))
    shown = comment_in_browser(browser, tmp_path / "comment.md", tmp_path / "spend-comment.png")
    keep_screenshot(tmp_path / "spend-comment.png")
    assert shown["alert"] == "markdown-alert markdown-alert-important"
    named = "limits.max_cost_usd ($0.05) reached: $0.052 spent after 30 of 40 cases"
    assert f"stopped by a limit, so it cannot pass: {named}." in shown["alertText"]
    assert "--resume" not in shown["alertText"]
    text = shown["text"]
    finish = "raise limits.max_cost_usd (what the 30 cases already done spent counts toward it"
    for words in (named, "30 of 40", finish, "evalgate run --resume --output results.json", "evalgate gate --results"):
        assert text.count(words) == 1, (words, text)
    assert "The candidate run is partial" not in text
    assert shown["folds"][0] == (
        "💰 Spend: candidate $0.052 for 30 attempts, 4 cached · baseline cost unknown for 40 attempts"
    )
    page = tmp_path / "spend.html"
    page.write_text(render_html(comparison=comparison))
    seen = open_in_browser(browser, page, tmp_path / "spend.png", "s-01")
    keep_screenshot(tmp_path / "spend.png")
    assert not seen["errors"]
    for words in ("Spend", "unknown (no attempt reports cost)", "$0.052", "4 of 30 attempts"):
        assert words in seen["text"], words
    for words in (named, "30 of 40", finish, "evalgate run --resume --output results.json", "evalgate gate --results"):
        assert seen["text"].count(words) == 1, (words, seen["text"])
    table = page.read_text().split('<table id="spend">', 1)[1].split("</table>", 1)[0]
    baseline_row = table.split("<td>baseline</td>", 1)[1].split("</tr>", 1)[0]
    assert "unknown (no attempt reports cost)" in baseline_row and "$0" not in baseline_row


# 800 px is the window every other browser test here opens (puppeteer's default); 1280 a laptop's;
# 600 a narrow window or a side panel.
WIDTHS = [1280, 800, 600]


@pytest.mark.parametrize("which", ["spend", "gate"])
def test_every_table_fits_the_page_column(browser, regressed_gate: Path, tmp_path: Path, which: str) -> None:  # noqa: F811
    """The runs table under What changed (11 columns), the provenance table (40-character commits)
    and every other table stay inside the page's column at each width: a table too wide wraps or
    scrolls inside its own box, and the page never scrolls sideways."""
    if which == "spend":
        page = tmp_path / "spend.html"
        comparison = compare(_spent("a", 40, cost=False), _spent("b", 30, cost=True, status="cancelled", limit=True))
        page.write_text(render_html(comparison=comparison))
    else:
        page = regressed_gate / "gate.html"
    fits = fit_in_browser(browser, page, tmp_path / f"fit-{which}", WIDTHS)
    for width in WIDTHS:
        keep_screenshot(tmp_path / f"fit-{which}-{width}.png")
    for width, fit in fits.items():
        # The runs table itself fits where the other tests look at the page; narrower, its box does.
        drawn = fit["runsRight"] if int(width) >= 800 else fit["runsBoxRight"]
        assert drawn is not None and drawn <= fit["column"] + 0.5, (width, fit)
        assert fit["out"] == [], (width, fit["out"])
        assert fit["pageWidth"] <= fit["window"], (width, fit)


# GitHub's comment column on a pull request's conversation page, in px.
COMMENT_COLUMN = 860
# A laptop's window height: what a reviewer sees of the page before scrolling.
FIRST_SCREEN = 900


def _rerun_fail(regressed_gate: Path) -> Comparison:
    """The quickstart's failing comparison as if more evidence had reached it: three batches of
    re-runs of language=ko after an inconclusive first look (the looks as comparison.json records them)."""
    c = Comparison.model_validate_json((regressed_gate / "out" / "comparison.json").read_text())

    def look(i: int, p: float, outcome: str) -> EvidenceLook:
        value = EvidenceValue(
            metric="pass_rate", unit="language=ko", cases=80, attempts_per_case=i + 1.0, observed_drop=0.3,
            p_value=p if i else None, level=2.4e-5 * i * i if i else None, rejected=outcome == "fail", rerun=i > 0,
        )  # fmt: skip
        units = ["language=ko"] if i else []
        return EvidenceLook(look=i, units=units, cases=80 if i else 0, attempts=160 if i else 0, values=[value],
                            cost_usd=0.04 if i else None, outcome=outcome)  # fmt: skip

    me = MoreEvidence(
        rho=0.2, first_look_alpha=0.04, sequential_alpha=0.01, select="looks_worse", max_batches=10,
        baseline_side="re-run at the baseline's commit", ended="fail", summary="regressed after 3 batches",
        looks=[look(0, 1.0, "continue"), look(1, 0.02, "continue"), look(2, 1e-3, "continue"), look(3, 1e-6, "fail")],
        estimand="each case's mean over its attempts", attempts=480, cost_usd=0.12,
    )  # fmt: skip
    return c.model_copy(update={"more_evidence": me})


@pytest.mark.parametrize("which", ["quickstart", "more-evidence"])
def test_the_comment_fits_githubs_column(browser, regressed_gate: Path, tmp_path: Path, which: str) -> None:  # noqa: F811
    """At 860 px, with every fold open: no table wider than the column (GitHub would scroll it and
    cut the columns past the edge: the Role column once was), every interval on one line (each
    once took three), and a verdict more evidence reached says so in its banner."""
    if which == "quickstart":
        comment = regressed_gate / "out" / "comment.md"
    else:
        comment = tmp_path / "comment.md"
        comment.write_text(render_markdown(_rerun_fail(regressed_gate)), encoding="utf-8")
    shot = tmp_path / f"column-{which}.png"
    seen = comment_in_column(browser, comment, shot, COMMENT_COLUMN)
    keep_screenshot(shot)
    keep_screenshot(shot.with_name(f"column-{which}-open.png"))
    fit = seen["fit"]
    assert fit["bodyWidth"] == COMMENT_COLUMN
    regressed = next(t for t in fit["tables"] if t["open"])
    assert regressed["head"] == ["Unit", "Metric", "Baseline → Candidate", "Δ", "|Δ|", "CI"]
    for table in fit["tables"]:
        assert table["scrollWidth"] <= table["clientWidth"], table
    assert len(fit["intervals"]) >= 4
    for cell in fit["intervals"]:
        assert cell["lines"] == 1 and cell["height"] < 1.5 * cell["lineHeight"], cell
    if which == "more-evidence":
        assert "Reached after 3 batches of re-runs (480 more attempts, $0.12)." in seen["alertText"]


@pytest.mark.parametrize("which", ["quickstart", "more-evidence"])
def test_the_pages_first_screen_holds_the_verdict_the_regressed_units_and_the_first_broken_case(
    browser,  # noqa: F811
    regressed_gate: Path,
    tmp_path: Path,
    which: str,
) -> None:
    """As the page opens in a 1280 × 900 window: the verdict, the regressed units and the first
    broken case end within the first screen; the rest is folded (the page was 36,740 px tall)."""
    if which == "quickstart":
        page = regressed_gate / "gate.html"
    else:
        page = tmp_path / "more-evidence.html"
        page.write_text(render_html(comparison=_rerun_fail(regressed_gate)), encoding="utf-8")
    comparison = json.loads((regressed_gate / "out" / "comparison.json").read_text())
    first = comparison["case_diff"]["pass_to_fail"][0]
    shot = tmp_path / f"first-screen-{which}.png"
    seen = open_in_browser(browser, page, shot, first["id"])
    keep_screenshot(shot.with_name(f"first-screen-{which}-first.png"))
    screen = seen["firstScreen"]
    for part in ("verdict", "regressed", "firstCase"):
        assert screen[part] is not None and screen[part] <= FIRST_SCREEN, (part, screen)
    assert screen["pageHeight"] < 3 * FIRST_SCREEN, screen
    text = seen["text"]  # every fold opened
    top = text[: text.index("All units (")]
    assert first["id"] in top and first["candidate_output"].strip() in top
    regressed = [u["unit"] for u in comparison["units"] if u["verdict"] == "regressed"]
    assert all(unit in top for unit in regressed)
    if which == "more-evidence":
        assert "Reached after 3 batches of re-runs" in top

"""The markdown report, annotations and JUnit XML (docs/spec.md#machine-outputs), rendered from Comparisons that the
real ``compare`` builds from results files; size tiers on a 100,000-case comparison."""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes.mdcheck import problems

from evals.common.errors import InputFileError
from evals.compare.analysis import compare
from evals.compare.model import Comparison
from evals.report.ci_outputs import annotation_lines, junit_xml
from evals.report.filters import BAR_CELLS, bar
from evals.report.markdown import render_markdown, write_reports
from evals.results.files import parse_results
from evals.results.manifest import BaselineRef, SnapshotInfo
from evals.results.model import Results
from evals.suite.config import SuiteConfig

LANGS = ("ko", "en", "ja", "de")


def results(
    sha: str,
    passed: Any,
    *,
    n: int = 400,
    status: str = "success",
    completed: int | None = None,
    config_hash: str = "sha256:cfg",
    model: str = "openai:gpt-4o-mini",
    retries: Any = lambda i: 0,
    slices: bool = True,
) -> Results:
    """``n`` cases q-000.. with slice language=ko/en/ja/de (by i % 4); ``passed(i)`` decides each case."""
    cases = [
        {
            "id": f"q-{i:03d}",
            "slices": {"language": LANGS[i % 4]} if slices else {},
            "input": {"question": f"what is {i} + {i}?"},
            "expected": str(2 * i),
            "attempts": [
                {
                    "passed": bool(passed(i)),
                    "score": 1.0 if passed(i) else 0.0,
                    "output": f"FINAL ANSWER: {2 * i if passed(i) else -1}",
                    "retries": retries(i),
                    "latency_ms": 100.0,
                }
            ],
        }
        for i in range(n)
    ]
    data = {
        "schema_version": 1,
        "run": {
            "suite": "support-bot",
            "status": status,
            "total_cases": n,
            "completed_cases": n if completed is None else completed,
            "git_sha": sha,
            "config_hash": config_hash,
            "target": {"kind": "openai", "model": model, "params": {"temperature": 0}},
            "ended_at": "2026-11-20T10:00:00Z",
        },
        "cases": cases,
    }
    return parse_results(json.dumps(data).encode(), f"{sha[:7]}.json")


BASE = "a" * 40
CAND = "b" * 40


def base_pass(i: int) -> bool:
    return i % 10 != 0  # 90% pass, every 10th fails


def ko_regression(i: int) -> bool:
    """A third of the Korean cases (i % 12 == 4) now fail; one failing Japanese case (30) now passes."""
    if i == 30:
        return True
    return base_pass(i) and i % 12 != 4


ALERTS = {"pass": "TIP", "fail": "CAUTION", "inconclusive": "WARNING", "no-baseline": "NOTE"}


def first_line(md: str) -> str:
    """The banner's sentence: the line under the GitHub alert marker the comment opens with."""
    marker, line = md.split("\n", 2)[:2]
    assert re.fullmatch(r"> \[!(TIP|CAUTION|WARNING|NOTE|IMPORTANT)\]", marker), marker
    return line


@pytest.fixture(scope="module")
def regression() -> Comparison:
    return compare(results(BASE, base_pass), results(CAND, ko_regression, model="openai:gpt-4.1-mini"), tolerance=0.02)


def test_regression_report_names_the_slice_and_the_flipped_cases(regression: Comparison) -> None:
    assert regression.verdict == "fail"
    md = render_markdown(regression)
    assert re.match(r"> \*\*❌ evalgate FAIL:\*\* \S", first_line(md))
    regressed_section = md.split("#### 🔻 Regressed", 1)[1].split("\n\n", 2)[1]
    assert "language=ko" in regressed_section
    flipped = [e.id for e in regression.case_diff.pass_to_fail]
    assert len(flipped) == 20 and regression.case_diff.n_pass_to_fail == 27
    for case_id in flipped:
        assert f"**{case_id}** · language=ko · pass → fail" in md
    # The first three are open, before any fold; the rest are in the case diff's fold, said so.
    before_folds = md.split("<details>", 1)[0]
    assert "#### Cases that broke (showing 3 of 27)" in before_folds
    assert [f"**{i}**" in before_folds for i in flipped[:4]] == [True, True, True, False]
    assert "**pass → fail**: 27 cases; the first 17 of the 24 not shown above:" in md
    assert "**fail → pass**: 1 case" in md and "**q-030**" in md
    # Excerpts of input, expected and both outputs of a flipped case.
    entry = before_folds.split(f"**{flipped[0]}**", 1)[1].split(f"**{flipped[1]}**", 1)[0]
    for label in ("| input |", "| expected |", "| baseline output |", "| candidate output |"):
        assert label in entry
    assert "FINAL ANSWER: -1" in entry
    assert problems(md) == []


def test_the_fold_counts_the_cases_it_lists_against_the_ones_not_shown_above() -> None:
    """9 cases broke, 3 are open above the fold: the fold's list says it holds the other 6 (it said
    "9 cases, besides the 3 shown above" and then listed 6)."""
    broke = {4, 16, 28, 52, 64, 76, 88, 112, 124}  # Korean cases that passed in the baseline
    c = compare(
        results(BASE, base_pass, n=200),
        results(CAND, lambda i: base_pass(i) and i not in broke, n=200),
        tolerance=0.02,
    )
    assert c.case_diff.n_pass_to_fail == 9
    md = render_markdown(c)
    assert "**pass → fail**: 9 cases; the 6 not shown above:" in md
    assert "besides the" not in md
    fold = md.split("**pass → fail**", 1)[1].split("**fail → pass**", 1)[0]
    assert sum(f"q-{i:03d}" in fold for i in broke) == 6
    assert problems(md) == []


def test_sections_come_in_the_documented_order(regression: Comparison) -> None:
    md = render_markdown(regression)
    order = ["evalgate FAIL", "#### 🔻 Regressed", "#### Cases that broke", "<summary>All units"]
    order += ["<summary>Case diff", "<summary>What changed", "<summary>Baseline"]
    positions = [md.index(marker) for marker in order]
    assert positions == sorted(positions)


def bar_cells(md: str, section: str) -> dict[str, tuple[str, int]]:
    """Unit → (Δ, bar length in eighths of a cell) from the units table after ``section``."""
    table = md.split(section, 1)[1].split("\n\n", 2)[1]
    head, _rule, *rows = [line for line in table.split("\n") if line.startswith("|")]
    names = [c.strip() for c in head.strip("|").split(" | ")]
    out = {}
    for row in rows:
        cells = dict(zip(names, [c.strip() for c in row.strip("|").split(" | ")], strict=True))
        bar = cells["\\|Δ\\|"]
        out[cells["Unit"]] = (
            cells["Δ"],
            8 * bar.count("█") + (" ▏▎▍▌▋▊▉".index(bar[-1]) if bar and bar[-1] != "█" else 0),
        )
    return out


def test_delta_bars_are_as_long_as_the_change(regression: Comparison) -> None:
    """No chart drawn up from an axis minimum: a text bar per unit whose length is |Δ|, the worst
    slice the longest (the mermaid chart drew language=ko, −27 pp, as the shortest bar)."""
    md = render_markdown(regression)
    assert "mermaid" not in md
    bars = bar_cells(md, "#### 🔻 Regressed")
    full = 8 * BAR_CELLS
    assert bars == {"language=ko": ("−27.0\u00a0pp", full), "overall": ("−6.5\u00a0pp", round(full * 6.5 / 27))}
    # Units by severity: the longest bar, the slice, after overall (the one the whole gate reads).
    assert list(bars) == ["overall", "language=ko"]
    assert bar(0.0, 0.27) == "" and bar(-0.27, 0.27) == "█" * BAR_CELLS


def test_all_units_table_and_what_changed(regression: Comparison) -> None:
    md = render_markdown(regression)
    table, stats = md.split("<summary>All units", 1)[1].split("</details>", 1)[0].split("<summary>How each unit", 1)
    # The verdicts open; how each unit was tested one more click away, so each table fits a comment.
    assert "| Unit | Metric | Baseline → Candidate | Δ | CI | Verdict |" in table
    assert "| Unit | Metric | n | Test | Interval | MDE | Role | p / q |" in stats
    for shown in (table, stats):
        rows = [line for line in shown.split("\n") if line.startswith("| ") and "Unit" not in line]
        assert len(rows) == len(regression.units) == 5
    overall = next(r for r in stats.split("\n") if r.startswith("| overall |"))
    assert "| 400 |" in overall and "blocking" in overall
    changed = md.split("<summary>What changed", 1)[1]
    assert "| model | openai:gpt-4o-mini | openai:gpt-4.1-mini |" in changed
    assert "| git\\_sha |" in changed


@pytest.mark.parametrize(
    ("verdict", "emoji", "word"),
    [
        ("pass", "✅", "PASS"),
        ("fail", "❌", "FAIL"),
        ("inconclusive", "⚠️", "INCONCLUSIVE"),
        ("no-baseline", "🆕", "NO BASELINE"),
        ("incomplete", "🚧", "INCOMPLETE"),
        ("incompatible", "⛔", "INCOMPATIBLE"),
    ],
)
def test_every_verdict_renders_with_its_line_first(verdict: str, emoji: str, word: str) -> None:
    base = results(BASE, base_pass)
    if verdict == "pass":
        comparison = compare(base, results(CAND, base_pass))
    elif verdict == "fail":
        comparison = compare(base, results(CAND, ko_regression))
    elif verdict == "inconclusive":
        small = results(BASE, base_pass, n=40)
        comparison = compare(small, results(CAND, lambda i: base_pass(i) and i not in (1, 2), n=40))
    elif verdict == "no-baseline":
        comparison = compare(None, results(CAND, base_pass))
    elif verdict == "incomplete":
        comparison = compare(base, results(CAND, base_pass, status="cancelled", completed=250))
    else:
        comparison = compare(base, results(CAND, base_pass, config_hash="sha256:other"))
    assert comparison.verdict == verdict
    for kind in ("comment", "summary", "full"):
        md = render_markdown(comparison, kind=kind)
        assert md.startswith(f"> [!{ALERTS.get(verdict, 'IMPORTANT')}]\n")
        line = first_line(md)
        assert line.startswith(f"> **{emoji} evalgate {word}:** ")
        assert len(line) > len(f"> **{emoji} evalgate {word}:** ") + 10  # a sentence follows
        assert problems(md) == []
        assert "{{" not in md and "None" not in md
    md = render_markdown(comparison)
    if verdict == "no-baseline":
        assert "No baseline was found" in md
        # With nothing to compare, "What changed: nothing in the runs' provenance differs" is noise.
        assert "What changed" not in md and "Nothing in the runs' provenance" not in md
        assert "· 400 cases" in md and "paired cases" not in md
    if verdict == "incompatible":
        assert "scorer and metric definitions differ" in md and "reset" in md
    if verdict == "incomplete":
        assert "The candidate run is partial (status cancelled, 250 of 400 cases completed)" in md
        assert "| candidate | cancelled (partial) | 250 / 400 |" in md


def test_inconclusive_configured_to_fail_shows_a_failing_mark() -> None:
    small = results(BASE, base_pass, n=40)
    comparison = compare(small, results(CAND, lambda i: base_pass(i) and i not in (1, 2), n=40), inconclusive="fail")
    assert comparison.verdict == "inconclusive" and comparison.exit_code == 1
    md = render_markdown(comparison)
    assert md.startswith("> [!CAUTION]\n") and first_line(md).startswith("> **❌ evalgate INCONCLUSIVE:** ")


def test_improved_units_are_listed() -> None:
    comparison = compare(results(BASE, base_pass), results(CAND, lambda i: base_pass(i) or i % 4 == 2))
    assert comparison.improved
    md = render_markdown(comparison)
    improved = md.split("#### 🔺 Improved", 1)[1]
    assert "language=ja" in improved.split("\n\n", 2)[1]
    assert "fail → pass" in md


def snapshot_ref(days_old: float) -> BaselineRef:
    created = (datetime.now(UTC) - timedelta(days=days_old)).strftime("%Y-%m-%dT%H:%M:%SZ")
    snap = SnapshotInfo(
        sha=BASE,
        name=f"baseline-{BASE}.json.gz",
        digest="sha256:00",
        created_at=created,
        verdict="pass",
        actor="octocat",
        reason="nightly @release-team",
    )
    return BaselineRef(source="github-release:eval-baseline", snapshot=snap, note="snapshot of the PR's base commit")


def test_baseline_used_and_its_age() -> None:
    fresh = compare(results(BASE, base_pass), results(CAND, base_pass), baseline_ref=snapshot_ref(2))
    md = render_markdown(fresh)
    baseline = md.split("<summary>Baseline", 1)[1]
    assert baseline.startswith(" aaaaaaaaaa, 2 days old</summary>")
    assert "- Source: github-release:eval-baseline; commit aaaaaaaaaa" in baseline
    assert "commit aaaaaaaaaa" in baseline and "2.0 days ago" in baseline
    assert "by octocat" in baseline and "@\u200drelease" in baseline
    assert "days old (more than" not in md
    assert "vs baseline aaaaaaaaaa (2 days old)" in md.split("\n\n", 2)[1]
    old = compare(results(BASE, base_pass), results(CAND, base_pass), baseline_ref=snapshot_ref(45))
    md = render_markdown(old)
    assert "The baseline is 45 days old (more than baseline.max\\_age\\_days = 30)" in md
    assert "⚠️ older than 30 days" in md


def test_infra_recovery_and_partial_baseline_are_disclosed() -> None:
    comparison = compare(
        results(BASE, base_pass, status="timeout", completed=380),
        results(CAND, base_pass, retries=lambda i: 2 if i % 50 == 0 else 0),
    )
    md = render_markdown(comparison)
    assert "Infra recovery: 8 cases needed infra retries (16 retries)" in md
    assert "baseline run is partial (timeout, 380/400 cases)" in md


def test_drift_guard_failure_is_reported() -> None:
    blessed = results("c" * 40, lambda i: True)
    comparison = compare(
        results(BASE, base_pass),
        results(CAND, base_pass),
        blessed=blessed,
        blessed_ref=BaselineRef(source="github-release:eval-baseline"),
    )
    assert comparison.drift is not None and not comparison.drift.ok
    md = render_markdown(comparison)
    assert "Drift guard:" in md.split("\n\n", 3)[2]
    assert "Drift guard against the last blessed baseline cccccccccc: **failed**" in md


def test_drift_guard_is_not_repeated_when_the_baseline_is_the_blessed_one() -> None:
    """The drift guard's failure against the baseline the gate used is the headline again."""
    base = results(BASE, base_pass)
    comparison = compare(
        base, results(CAND, ko_regression), blessed=base, blessed_ref=BaselineRef(source="github-release:x")
    )
    assert comparison.drift is not None and not comparison.drift.ok and comparison.verdict == "fail"
    md = render_markdown(comparison)
    assert "[!WARNING]" not in md and "Drift guard:" not in md
    assert "Drift guard against the last blessed baseline aaaaaaaaaa: that is this baseline" in md


# ------------------------------------------------------------------------------------ size tiers


@pytest.fixture(scope="module")
def many_flips() -> Comparison:
    """2,000 cases, 600 pass → fail and 400 fail → pass, every case-diff entry kept (max_cases 2,000)."""
    config = SuiteConfig.model_validate(
        {"suite": "s", "cases": "c.jsonl", "slices": ["language"], "report": {"max_cases": 2000}}
    )
    base = results(BASE, lambda i: i % 10 < 7, n=2000)
    cand = results(CAND, lambda i: (i % 10 < 7) != (i % 10 in (0, 1, 2, 7, 8)), n=2000)
    return compare(base, cand, config)


@pytest.mark.e2e
def test_tiers_step_down_and_say_what_was_cut(many_flips: Comparison) -> None:
    full = render_markdown(many_flips, kind="full", max_cases=2000)
    assert "Shortened" not in full and len(re.findall(r"^\*\*q-\d+\*\* ·", full, re.M)) == 1000
    seen = []
    for limit in (100_000, 20_000, 4_000, 3_000, 1_000):
        md = render_markdown(many_flips, max_chars=limit, max_cases=2000)
        assert len(md.encode()) <= limit
        assert first_line(md).startswith("> **❌ evalgate FAIL:** ")
        assert problems(md) == []
        m = re.search(r"✂️ Shortened to fit ([\d,]+) bytes \((\w+) view\): left out (.+)\. The full report", md)
        assert m, md[-500:]
        assert m.group(1) == f"{limit:,}"
        seen.append(m.group(2))
    assert seen[0] == "full" and seen[-1] == "headline" and "regressions" in seen
    assert seen == sorted(seen, key=["full", "compact", "regressions", "headline"].index)


def test_compact_tier_leaves_out_unchanged_units() -> None:
    """50 slices of 100 cases, one of which regresses: the all-units table is what does not fit."""

    def run(sha: str, flip: bool) -> Results:
        cases = [
            {
                "id": f"t-{i:05d}",
                "slices": {"topic": f"topic-{i % 50:03d}"},
                "attempts": [{"passed": i % 3 != 0 and not (flip and i % 50 == 7)}],
            }
            for i in range(5000)
        ]
        run = {"suite": "s", "status": "success", "total_cases": 5000, "completed_cases": 5000, "git_sha": sha}
        return parse_results(json.dumps({"schema_version": 1, "run": run, "cases": cases}).encode(), sha)

    # A tolerance of 5 pp: 100 unchanged cases show "unchanged" at their tested level (about 99.9%).
    comparison = compare(run(BASE, False), run(CAND, True), tolerance=0.05)
    assert [u.unit for u in comparison.regressed] == ["topic=topic-007"]
    full = render_markdown(comparison, kind="full")
    # 50 rows in the table of all units, 50 in the one of how each was tested, one among the regressed.
    assert full.count("| topic=topic-") == 101
    md = render_markdown(comparison, max_chars=len(full.encode()) * 2 // 3)
    assert "(compact view): left out unchanged units" in md
    table, stats = md.split("<summary>All units", 1)[1].split("</details>", 1)[0].split("<summary>How each unit", 1)
    for shown in (table, stats):
        rows = [line.split(" | ")[0] for line in shown.split("\n") if line.startswith("| ") and "Unit" not in line]
        assert rows == ["| topic=topic-007", "| overall"]  # by severity: the regressed slice first
    assert "**t-00007** · topic=topic-007 · pass → fail\n\n(no excerpts recorded)" in md


def test_regressions_tier_lists_ids_without_excerpts(many_flips: Comparison) -> None:
    md = render_markdown(many_flips, max_chars=3_000, max_cases=2000)
    assert "(regressions view)" in md
    assert "```text" not in md and "| candidate output |" not in md.split("<details>", 1)[1]
    assert re.search(r"^language=\w\w: q-\d{3} \(", md, re.M)


def test_hard_cut_when_even_the_headline_is_too_big(many_flips: Comparison) -> None:
    md = render_markdown(many_flips, max_chars=300)
    assert len(md.encode()) <= 300
    assert "Cut at 300 bytes" in md


@pytest.mark.e2e
def test_100k_cases_fit_a_comment_and_a_summary() -> None:
    n = 100_000
    cases = [
        {
            "id": f"case-{i:06d}",
            "slices": {"lang": f"l{i % 50}"},
            "input": f"question {i}",
            "expected": str(i),
            "attempts": [{"passed": i % 5 != 0, "output": f"answer {i} " * 20}],
        }
        for i in range(n)
    ]
    run = {"suite": "big", "status": "success", "total_cases": n, "completed_cases": n, "git_sha": BASE}
    base = parse_results(json.dumps({"schema_version": 1, "run": run, "cases": cases}).encode(), "baseline.json")
    # The candidate shares the untouched cases (validating a second 100k-case file adds nothing here):
    # 8,000 cases flip pass → fail and 2,000 fail → pass.
    flipped = [
        c.model_copy(update={"attempts": [a.model_copy(update={"passed": not a.passed}) for a in c.attempts]})
        if (i % 25 in (1, 2) or i % 50 == 0)
        else c
        for i, c in enumerate(base.cases)
    ]
    cand = base.model_copy(update={"cases": flipped, "run": base.run.model_copy(update={"git_sha": CAND})})
    config = SuiteConfig.model_validate(
        {"suite": "big", "cases": "c", "slices": ["lang"], "report": {"max_cases": 3000}}
    )
    comparison = compare(base, cand, config)
    assert comparison.case_diff.n_pass_to_fail == 8000 and comparison.case_diff.n_fail_to_pass == 2000
    full = render_markdown(comparison, kind="full", max_cases=3000)
    assert len(full.encode()) > 1_048_576
    for kind, limit in (("comment", 65_536), ("summary", 1_048_576)):
        md = render_markdown(comparison, kind=kind, max_cases=3000)
        assert len(md.encode()) <= limit
        assert first_line(md).startswith("> **❌ evalgate FAIL:** ")
        assert f"Shortened to fit {limit:,} bytes" in md
        assert "The full report (report.md) and comparison.json are in this workflow run" in md.replace("\\", "")
        assert problems(md) == []


# ------------------------------------------------------------------------------------ user templates


def test_user_template_gets_the_context_and_escapes_by_default(tmp_path: Path) -> None:
    evil_base = results(BASE, base_pass, n=40)
    data = json.loads(results(CAND, lambda i: i % 2 == 1, n=40).model_dump_json())
    data["cases"][2]["id"] = "<img src=x>@octocat|[x](http://e)"
    cand = parse_results(json.dumps(data).encode(), "c.json")
    data_b = json.loads(evil_base.model_dump_json())
    data_b["cases"][2]["id"] = data["cases"][2]["id"]
    comparison = compare(parse_results(json.dumps(data_b).encode(), "b.json"), cand)
    (tmp_path / "partial.md.j2").write_text("tier={{ tier }}\n")
    template = tmp_path / "mine.md.j2"
    template.write_text(
        "## {{ status.emoji }} {{ c.verdict }} — {{ c.reason|md }}\n"
        "{% include 'partial.md.j2' %}"
        "{% for e in c.case_diff.pass_to_fail %}\n"
        "- raw: {{ e.id }} / cell: {{ e.id|cell }}\n"
        "{% endfor %}\n"
        "{% with rows = regressed, wide = false %}{% include '_units.md.j2' %}{% endwith %}\n"
    )
    md = render_markdown(comparison, template=template)
    assert md.startswith("## ❌ fail — ")
    assert "tier=full" in md
    assert "- raw: &lt;img src=x&gt;@\u200doctocat\\|\\[x\\](http\u200d://e)" in md
    assert "| overall | pass\\_rate |" in md
    assert problems(md) == []


@pytest.mark.parametrize(
    ("source", "where", "problem"),
    [
        ("line one\n{% for x in %}\n", "bad.md.j2:2", "syntax error"),
        ("ok\n\n{{ no_such_variable }}\n", "bad.md.j2:3", "'no_such_variable' is undefined"),
        ("{{ c.units[999].unit }}\n", "bad.md.j2:1", "report template failed"),
        ("x\n{{ c.__init__.__globals__ }}\n", "bad.md.j2:2", "unsafe"),
    ],
)
def test_broken_user_template_is_an_input_error(tmp_path: Path, regression, source, where, problem) -> None:
    template = tmp_path / "bad.md.j2"
    template.write_text(source)
    with pytest.raises(InputFileError) as err:
        render_markdown(regression, template=template)
    assert str(err.value).startswith(str(tmp_path / where))
    assert problem in str(err.value)


def test_missing_user_template(tmp_path: Path, regression) -> None:
    with pytest.raises(InputFileError, match="report template not found"):
        render_markdown(regression, template=tmp_path / "nope.md.j2")


# ------------------------------------------------------------------------------------ machine outputs


def test_annotations(regression: Comparison) -> None:
    lines = annotation_lines(regression)
    assert lines[0].startswith("::error title=evalgate%3A pass_rate regressed on overall::pass_rate on overall: ")
    assert any("regressed on language=ko" in line for line in lines)
    assert lines[-1].startswith("::error title=evalgate%3A fail::")
    assert all("%25" in line for line in lines[:-1])  # "90.0%" is escaped as data
    passing = compare(results(BASE, base_pass), results(CAND, base_pass))
    assert annotation_lines(passing) == []


def test_junit_xml(regression: Comparison) -> None:
    root = ET.fromstring(junit_xml(regression))
    assert root.get("tests") == str(len(regression.units))
    failures = root.findall("testcase/failure")
    assert len(failures) == int(root.get("failures")) == len(regression.failing_units)
    assert {c.get("classname") for c in root.findall("testcase") if c.find("failure") is not None} == {
        u.unit for u in regression.failing_units
    }


def test_write_reports(tmp_path: Path, regression: Comparison) -> None:
    write_reports(regression, report=tmp_path / "r.md", json_path=tmp_path / "c.json", junit=tmp_path / "junit.xml")
    assert first_line((tmp_path / "r.md").read_text()).startswith("> **❌ evalgate FAIL:** ")
    assert Comparison.model_validate_json((tmp_path / "c.json").read_text()) == regression
    ET.fromstring((tmp_path / "junit.xml").read_text())


def test_seed_workflow_command_writes_the_report(tmp_path: Path, python_exe: str) -> None:
    (tmp_path / "baseline.json").write_text(results(BASE, base_pass).model_dump_json())
    (tmp_path / "candidate.json").write_text(results(CAND, ko_regression).model_dump_json())
    proc = subprocess.run(
        [
            python_exe,
            "-m",
            "evals.compare",
            "--baseline",
            "baseline.json",
            "--candidate",
            "candidate.json",
            "--tolerance",
            "0.02",
            "--report",
            "report.md",
            "--junit",
            "junit.xml",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    md = (tmp_path / "report.md").read_text()
    assert first_line(md).startswith("> **❌ evalgate FAIL:** ")
    assert "language=ko" in md.split("#### 🔻 Regressed", 1)[1].split("####", 1)[0]
    assert "**q-004**" in md
    suite = ET.fromstring((tmp_path / "junit.xml").read_text())
    assert any(f.get("type") == "regressed" for f in suite.iter("failure"))


def test_cli_uses_the_configured_template_and_names_a_broken_one(tmp_path: Path, python_exe: str) -> None:
    (tmp_path / "baseline.json").write_text(results(BASE, base_pass).model_dump_json())
    (tmp_path / "candidate.json").write_text(results(CAND, ko_regression).model_dump_json())
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "mine.md.j2").write_text(
        "{{ status.emoji }} {{ c.verdict }}\n{% for u in regressed %}- {{ u.unit|md }}\n{% endfor %}"
    )
    (tmp_path / "bad.md.j2").write_text("ok\n{% if %}\n")
    (tmp_path / "evalgate.yml").write_text(
        "suite: support-bot\ncases: cases.jsonl\nslices: [language]\nreport: {template: tpl/mine.md.j2}\n"
    )
    base_cmd = [python_exe, "-m", "evals.compare", "--config", "evalgate.yml", "--baseline", "baseline.json"]
    base_cmd += ["--candidate", "candidate.json", "--report", "report.md"]
    proc = subprocess.run(base_cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert (tmp_path / "report.md").read_text() == "❌ fail\n- overall\n- language=ko\n"
    proc = subprocess.run(
        [*base_cmd, "--template", "bad.md.j2"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "bad.md.j2:2: report template syntax error" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_gate_renders_within_the_limit_it_asks_for_with_a_config(many_flips: Comparison) -> None:
    # The gate leaves room for its own headline in the 1 MiB step summary: the config's report
    # options must not replace the size limit it passes.
    from evals.report.files import render

    config = SuiteConfig(suite="demo", cases="c.jsonl", report={"max_cases": 50})
    text = render(many_flips, config, "summary", max_chars=20_000)
    assert len(text.encode("utf-8")) <= 20_000
    assert "Shortened to fit" in text


def test_cost_and_speed_of_both_runs_shown_by_default() -> None:
    """Latency, tokens and cost appear in the report without being configured (docs/spec.md#local-loop), as a
    description of each run: no unit, test or verdict of their own."""

    def with_costs(res: Results, latency: float, tokens: int, cost: float) -> Results:
        data = res.model_dump(mode="json")
        for case in data["cases"]:
            for a in case["attempts"]:
                a.update(latency_ms=latency, tokens_in=tokens, tokens_out=10, cost_usd=cost)
        return Results.model_validate(data)

    base = with_costs(results(BASE, lambda i: True), 100.0, 90, 0.001)
    cand = with_costs(results(CAND, lambda i: True), 250.0, 190, 0.003)
    comparison = compare(base, cand)
    assert {u.metric for u in comparison.units} == {"pass_rate"}
    md = render_markdown(comparison)
    table = md.split("| Run | Latency p50 |", 1)[1].split("\n\n", 1)[0]
    assert "| baseline | 100 ms | 100 ms | 100 | $0.001 |" in table
    assert "| candidate | 250 ms | 250 ms | 200 | $0.003 |" in table
    assert comparison.candidate_run.cost_usd_per_case == pytest.approx(0.003)

    bare = compare(results(BASE, lambda i: True), results(CAND, lambda i: True))
    assert bare.candidate_run.tokens_per_case is None and bare.candidate_run.cost_usd_per_case is None
    assert "| Tokens / case |" in render_markdown(bare)  # latency is recorded: the table stays


def test_a_breached_floor_has_its_section_and_the_banner_without_a_baseline() -> None:
    """An absolute floor fails a first run (no baseline); the banner and a section of
    its own say which floor and by how much; the run's cases are not listed as "added"."""
    from evals.suite.scoring import MetricSpec

    config = SuiteConfig(suite="demo", cases=[], metrics={"pass_rate": MetricSpec(min=0.95)})
    comparison = compare(None, results(CAND, base_pass), config)
    assert comparison.verdict == "fail"
    md = render_markdown(comparison)
    assert first_line(md).startswith("> **❌ evalgate FAIL:** pass\\_rate on overall below its floor min 0.95: ")
    assert "#### ⛔ Beyond an absolute floor (1)\n\n- pass\\_rate on overall below its floor min 0.95" in md
    assert "added" not in md and "What changed" not in md and problems(md) == []


def test_a_pass_names_the_slices_it_could_not_clear() -> None:
    """A pass bounds overall only: a slice whose own interval reaches past the tolerance is named
    as inconclusive, never counted among slices "within the band"."""
    clean = compare(results(BASE, base_pass), results(CAND, base_pass), tolerance=0.02)
    assert first_line(render_markdown(clean)).endswith("(400 paired cases); no slice regressed (4 tested).")
    doubt = compare(results(BASE, base_pass), results(CAND, lambda i: base_pass(i) and i not in (2, 6)), tolerance=0.02)
    assert doubt.verdict == "pass"
    # The other slices saw no change: at their tested level that resolves more than ±2 pp on 100 cases.
    assert [u.unit for u in doubt.units if u.verdict == "inconclusive" and not u.no_change_seen] == ["language=ja"]
    line = first_line(render_markdown(doubt))
    assert "inconclusive on language=ja (no significant regression, not enough cases to rule one out)" in line
    assert "no slice regressed" not in line


def test_the_failing_slices_cases_come_first_in_the_comment_and_the_case_diff():
    """The case diff is cut at report.max_cases: in the suite's order, the noisy flips of the other
    slices (their ids come first) filled it and the cases of the slice that failed the gate were
    not shown. Now the failing slice's cases are listed first, the top cases and the fold too."""
    broken_ko = {i for i in range(280, 400) if i % 4 == 0}  # 30 ko cases, late in the suite
    # en, ja, de (i % 4 = 1, 2, 3): of each one's first 16 cases, 8 fail in the baseline only and
    # 8 others in the candidate only: noise both ways, early in the suite.
    early = {r: [i for i in range(64) if i % 4 == r] for r in (1, 2, 3)}
    base_only = {i for cases in early.values() for i in cases[:8]}
    cand_only = {i for cases in early.values() for i in cases[8:]}

    config = SuiteConfig(suite="support-bot", cases=[], slices=["language"], report={"max_cases": 5})
    c = compare(
        results(BASE, lambda i: i not in base_only), results(CAND, lambda i: i not in cand_only | broken_ko), config
    )
    assert c.verdict == "fail"
    assert {u.unit for u in c.units if u.verdict == "regressed" and u.slice_key} == {"language=ko"}
    assert c.case_diff.n_pass_to_fail == 24 + 30
    assert [e.slices["language"] for e in c.case_diff.pass_to_fail] == ["ko"] * 5
    md = render_markdown(c)
    top = md[md.index("Cases that broke") :]
    first = int(re.search(r"q-(\d{3})", top).group(1))
    assert first in broken_ko, first
    fold = md[md.index("**pass → fail**") :]
    fold = fold[: fold.index("**fail → pass**")]  # the fold's pass → fail entries
    assert "language=ko" in fold and not any(f"language={lang}" in fold for lang in ("en", "ja", "de"))
    # The HTML page's case diff table: its first pass → fail rows are the failing slice's too.
    from evals.report.html import render_html

    page = render_html(comparison=c)
    rows = re.findall(r'state-pass-to-fail">pass → fail.*?</td><td>(q-\d{3})</td>', page)
    assert rows and all(int(r[2:]) in broken_ko for r in rows), rows


def test_case_ranks_order_failing_then_regressed_then_looking_worse_then_the_rest():
    from evals.compare.casediff import FAILING, LOOKS_WORSE, OTHER, REGRESSED, case_ranks
    from evals.compare.metrics import scan
    from evals.compare.pairing import pair

    base, cand = results(BASE, lambda i: True, n=40), results(CAND, lambda i: i % 4 not in (0, 1), n=40)
    c = compare(base, cand, SuiteConfig(suite="support-bot", cases=[], slices=["language"]))
    units = {u.unit: u for u in c.units if u.metric == "pass_rate"}
    units["language=ko"].verdict = "regressed"
    units["language=en"] = units["language=en"].model_copy(update={"verdict": "regressed", "gated": False})
    units["language=ja"] = units["language=ja"].model_copy(update={"verdict": "inconclusive", "delta": -0.05})
    units["language=de"] = units["language=de"].model_copy(update={"verdict": "inconclusive", "delta": -0.01})
    units["overall"].verdict = "regressed"  # every case's: it orders nothing
    bt, ct = scan(base.cases, len(base.cases), []), scan(cand.cases, len(cand.cases), [])
    ranks = case_ranks(ct, pair(bt, ct, False), list(units.values()), ["language"])
    expected = {"ko": FAILING, "en": REGRESSED, "ja": LOOKS_WORSE, "de": OTHER}
    assert ranks.tolist() == [expected[LANGS[i % 4]] for i in range(40)]


def test_a_gate_id_that_is_not_the_suite_is_named_in_the_comment_and_on_the_page() -> None:
    """Two gates of one suite (one of them with more evidence) post two sticky comments on a pull
    request: each says which gate it is. A gate named after its suite says nothing more."""
    from evals.report.html import render_html

    base, cand = results(BASE, base_pass), results(CAND, ko_regression)
    named = SuiteConfig(suite="support-bot", cases="c.jsonl", slices=["language"], gate={"id": "support-bot-more"})
    comparison = compare(base, cand, named)
    assert comparison.gate.id == "support-bot-more"
    head = render_markdown(comparison).split("\n")[3]
    assert head.startswith("support-bot (gate support-bot-more) · candidate bbbbbbb")
    assert "<h1>evalgate: support-bot <small>(gate support-bot-more)</small></h1>" in render_html(comparison=comparison)
    for config in (SuiteConfig(suite="support-bot", cases="c.jsonl", gate={"id": "support-bot"}), None):
        plain = compare(base, cand, config)
        assert plain.gate.id is None and "(gate " not in render_markdown(plain)


def test_a_first_gate_shows_the_candidates_own_pass_rates() -> None:
    """Before: a no-baseline report said only "demo · candidate … · 400 cases" and the spend, so
    a reader could not tell whether the run deserved to be blessed."""
    from evals.report.html import render_html

    config = SuiteConfig(suite="demo", cases=[], slices=["language"])
    comparison = compare(None, results(CAND, lambda i: i % 4 != 0), config)
    assert comparison.verdict == "no-baseline"
    md = render_markdown(comparison)
    assert "| Candidate | Cases | Pass rate | 95% CI |" in md and problems(md) == []
    assert "| overall | 400 | 75.0% | 70.5% – 79.0% |" in md
    assert "| language=ko | 100 | 0.0% | 0.0% – 3.7% |" in md
    assert "| language=en | 100 | 100.0% | 96.3% – 100.0% |" in md
    page = render_html(comparison=comparison)
    assert '<table id="candidate-units">' in page and "<td>language=ko</td>" in page and "70.5% – 79.0%" in page
    # Against a baseline the units table says it all: no second table.
    compared = compare(results(CAND, lambda i: True), results(CAND, lambda i: True), config)
    assert compared.candidate_units == [] and "| Candidate | Cases |" not in render_markdown(compared)

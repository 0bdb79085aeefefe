"""The report reads as its verdict (docs/spec.md#report-consistency): no *underpowered* beside a unit
that regressed or improved and no power warning beside a fail, whatever the comparison holds; a
cached candidate's spend as "cached: nothing paid"; a verdict more evidence reached says so in its
banner; intervals on one line with their level said once; the units that did not move the verdict
folded. Rendered from Comparisons the real ``compare`` builds (the quickstart-like regression of
test_report.py)."""

from __future__ import annotations

import json
import re

import pytest
from test_report import BASE, CAND, base_pass, first_line, ko_regression, results

from evals.compare.analysis import compare
from evals.compare.looks import EvidenceLook, MoreEvidence
from evals.compare.model import Comparison
from evals.report.filters import fmt_interval, interval_levels
from evals.report.html import render_html
from evals.report.markdown import render_markdown
from evals.results.files import parse_results
from evals.results.model import Results

POWER = "pass_rate overall can only detect drops of 16.1 pp or more (target_mde 0.1 = 10 pp)"


@pytest.fixture(scope="module")
def regression() -> Comparison:
    return compare(results(BASE, base_pass), results(CAND, ko_regression), tolerance=0.02)


def _said_as_underpowered(c: Comparison) -> Comparison:
    """Every unit marked underpowered and a power warning: what comparison files said of a clear
    fail before the MDE was honest, and what an old file still says."""
    units = [u.model_copy(update={"underpowered": True}) for u in c.units]
    return c.model_copy(update={"units": units, "warnings": [*c.warnings, POWER]})


def test_no_underpowered_label_beside_a_unit_that_moved_nor_a_power_warning_beside_a_fail(regression) -> None:
    c = _said_as_underpowered(regression)
    assert c.verdict == "fail" and any(u.verdict == "regressed" for u in c.units)
    md = render_markdown(c)
    assert "can only detect drops" not in md
    stats = md.split("<summary>How each unit", 1)[1].split("</details>", 1)[0]
    for line in stats.splitlines():
        unit = next((u for u in c.units if line.startswith(f"| {u.unit} |")), None)
        if unit is not None:
            assert ("underpowered" in line) == (unit.verdict not in ("regressed", "improved")), line
    # The regressed table a reviewer reads first says neither.
    regressed = md.split("#### 🔻 Regressed", 1)[1].split("####", 1)[0]
    assert "underpowered" not in regressed
    page = render_html(comparison=c)
    assert "can only detect drops" not in page
    rows = re.findall(r'<tr class="regressed failing">.*?</tr>', page, flags=re.S)
    assert rows and not any("underpowered" in row for row in rows)
    # Where the verdict is not a fail, the warning is what limits it, and stays.
    inconclusive = c.model_copy(update={"verdict": "inconclusive", "exit_code": 0})
    assert POWER.replace("_", "\\_") in render_markdown(inconclusive) and POWER in render_html(comparison=inconclusive)


def _cached(sha: str, cached: bool) -> Results:
    cases = [
        {"id": f"c{i:03d}", "attempts": [{"passed": True, "cost_usd": 0.002, "tokens_in": 10, "cached": cached}]}
        for i in range(40)
    ]
    run = {"suite": "s", "status": "success", "total_cases": 40, "completed_cases": 40, "git_sha": sha}
    return parse_results(json.dumps({"schema_version": 1, "run": run, "cases": cases}).encode(), sha)


def test_a_cached_rerun_says_it_paid_nothing_not_minus_100_percent() -> None:
    c = compare(_cached(BASE, False), _cached(CAND, True))
    md = render_markdown(c)
    line = md.split("<summary>💰", 1)[1].split("</summary>", 1)[0]
    assert line == " Spend: candidate cached: nothing paid (40 attempts) · baseline &#36;0.08 for 40 attempts"
    assert "100%" not in md
    assert "candidate cached: nothing paid (40 attempts)" in render_html(comparison=c)


def _decided_by_reruns(c: Comparison, batches: int) -> Comparison:
    looks = [EvidenceLook(look=0, outcome="continue")]
    looks += [
        EvidenceLook(look=i, units=["language=ko"], cases=100, attempts=200, cost_usd=0.05, outcome="continue")
        for i in range(1, batches + 1)
    ]
    looks[-1] = looks[-1].model_copy(update={"outcome": "fail"})
    me = MoreEvidence(
        rho=0.5,
        first_look_alpha=0.025,
        sequential_alpha=0.025,
        select="looks_worse",
        max_batches=10,
        baseline_side="re-run at the baseline's commit",
        looks=looks,
        ended="fail",
        summary=f"fail after {batches} batches",
        estimand="each case's mean over its attempts",
        attempts=200 * batches,
        cost_usd=0.05 * batches,
    )
    return c.model_copy(update={"more_evidence": me})


def test_a_fail_reached_by_more_evidence_says_so_in_its_banner(regression) -> None:
    c = _decided_by_reruns(regression, 3)
    clause = "Reached after 3 batches of re-runs (600 more attempts, \\$0.15)."
    assert first_line(render_markdown(c)).endswith(clause)
    assert "Reached after 3 batches of re-runs (600 more attempts, $0.15)." in render_html(comparison=c)
    # The first look decided it: nothing to say.
    assert "Reached after" not in render_markdown(regression)
    one = _decided_by_reruns(regression, 1)
    assert first_line(render_markdown(one)).endswith("Reached after 1 batch of re-runs (200 more attempts, \\$0.05).")


def test_an_interval_is_one_unbreakable_cell_with_its_level_said_once(regression) -> None:
    ko = next(u for u in regression.units if u.unit == "language=ko")
    shown = fmt_interval(ko)
    assert " " not in shown and re.fullmatch(r"−\d+\.\d\u2060…\u2060−\d+\.\d\u00a0pp", shown), shown
    # An old comparison file (no tested level): the marginal level, said to be unadjusted.
    old = [u.model_copy(update={"ci_level": None}) for u in regression.units]
    assert interval_levels(old) == "90% intervals of Δ, each unit on its own (not adjusted)"
    # Each unit's tested level: the regressed ones' under their table, every unit's under all units.
    levels = {"overall": 0.989, "language=ko": 0.999, "language=de": 0.995, "language=en": 0.998}
    tested = [u.model_copy(update={"ci_level": levels.get(u.unit, 0.997)}) for u in regression.units]
    assert {u.unit for u in tested if u.verdict == "regressed"} == {"overall", "language=ko"}
    assert interval_levels(tested) == "intervals of Δ at each unit's tested level (98.9–99.9%)"
    assert interval_levels(tested[1:4]) == "intervals of Δ at each unit's tested level (99.5–99.8%)"
    md = render_markdown(regression.model_copy(update={"units": tested}))
    assert "<sub>CI: intervals of Δ at each unit's tested level (98.9–99.9%);" in md


def test_units_that_did_not_move_the_verdict_are_one_fold_each(regression) -> None:
    md = render_markdown(regression)
    quiet = [u for u in regression.units if u.verdict == "inconclusive"]
    assert quiet
    before_folds = md.split("<details>", 1)[0]
    for u in quiet:
        assert f"{u.metric} on {u.unit}".replace("_", "\\_") not in before_folds
    assert re.search(r"<details><summary>\d+ units? (inconclusive|saw no change)", md)

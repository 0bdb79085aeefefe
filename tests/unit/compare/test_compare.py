"""compare(): pairing, metrics, decisions and verdicts; the CLI through real subprocesses."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evals.common.errors import InputFileError, UsageError
from evals.compare.analysis import compare
from evals.compare.lazyload import load_lazy
from evals.compare.model import Comparison
from evals.results.files import load_results, save_results
from evals.results.manifest import BaselineRef
from evals.results.model import Attempt, AttemptError, CaseResult, Results, RunInfo, case_hash
from evals.suite.config import SuiteConfig
from evals.suite.gate import GateSpec
from evals.suite.overrides import apply_tolerance_override
from evals.suite.scoring import MetricSpec


def run_of(cases: list[CaseResult], *, sha: str = "base", status: str = "success", **run) -> Results:
    info = {"suite": "demo", "status": status, "total_cases": len(cases), "completed_cases": len(cases)}
    info.update({"git_sha": sha, "config_hash": "sha256:same", **run})
    return Results(run=RunInfo(**info), cases=cases)


def case(i: int, passed: bool, *, lang: str = "en", latency: float = 100.0, **extra) -> CaseResult:
    attempt = Attempt(passed=passed, score=float(passed), latency_ms=latency, output=f"answer {i}")
    return CaseResult(
        id=f"q{i:04d}",
        slices={"language": lang},
        attempts=[attempt],
        input=f"question {i}",
        expected="42",
        hash=case_hash(f"question {i}", "42"),
        **extra,
    )


def outcomes(n: int, rate: float, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n) < rate


def regression_pair() -> tuple[Results, Results]:
    """800 cases, 400 Korean + 400 English; the candidate breaks 30% of the Korean cases that
    passed and leaves English alone."""
    ok = outcomes(800, 0.9, 1)
    langs = ["ko" if i % 2 else "en" for i in range(800)]
    broken = outcomes(800, 0.3, 2)
    base = [case(i, bool(ok[i]), lang=langs[i]) for i in range(800)]
    cand = [case(i, bool(ok[i] and not (langs[i] == "ko" and broken[i])), lang=langs[i]) for i in range(800)]
    return run_of(base), run_of(cand, sha="cand")


def test_regression_on_one_slice_fails_and_names_it():
    baseline, candidate = regression_pair()
    c = compare(baseline, candidate, tolerance=0.02)
    assert c.verdict == "fail" and c.exit_code == 1
    assert "language=ko" in c.reason
    ko = next(u for u in c.units if u.unit == "language=ko")
    en = next(u for u in c.units if u.unit == "language=en")
    assert ko.blocking and ko.verdict == "regressed" and ko.p_adjusted is not None and ko.p_adjusted < 0.05
    assert ko.method == "clt" and ko.n == 400
    assert en.verdict == "unchanged" and en.delta == 0
    flipped = {e.id for e in c.case_diff.pass_to_fail}
    assert c.case_diff.n_pass_to_fail == sum(
        1
        for a, b in zip(baseline.cases, candidate.cases, strict=True)
        if a.attempts[0].passed and not b.attempts[0].passed
    )
    assert flipped and all(e.slices["language"] == "ko" for e in c.case_diff.pass_to_fail)
    first = c.case_diff.pass_to_fail[0]
    assert first.input.startswith("question") and first.baseline_passed and not first.candidate_passed
    assert c.provenance[0].field == "git_sha"


def test_small_slices_use_mcnemar_and_block_at_their_share_of_alpha():
    ok = outcomes(200, 0.7, 3)
    base = [case(i, bool(ok[i]), lang=f"l{i % 8}") for i in range(200)]
    flip = outcomes(200, 0.7, 4)
    cand = [case(i, bool(flip[i]), lang=f"l{i % 8}") for i in range(200)]
    c = compare(run_of(base), run_of(cand, sha="c"))
    slices = [u for u in c.units if u.unit != "overall"]
    assert len(slices) == 8 and all(u.method == "mcnemar-mid-p" and u.blocking for u in slices)
    # 25 of 200 cases each: the slices' 0.7 of α split by case counts
    assert all(u.weight == pytest.approx(0.7 / 8) and u.alpha_level == pytest.approx(0.05 * 0.7 / 8) for u in slices)
    assert all(u.q_value is not None and u.p_adjusted >= u.p_value for u in slices)
    assert all(u.ci_method == "mcnemar-inverted" for u in slices)
    # beside it, the marginal interval: the smoothed one, binary and under 100 cases
    assert all((u.marginal_low, u.marginal_high) == (u.smoothed_low, u.smoothed_high) for u in slices)
    # A slice that regressed showed its test could see the drop: never called underpowered.
    assert {u.verdict for u in slices} == {"regressed", "inconclusive"}
    assert all(u.underpowered == (u.verdict != "regressed") for u in slices)
    assert all(u.cases_for_target > 25 for u in slices if u.underpowered)
    overall = c.units[0]
    assert overall.blocking and overall.weight == pytest.approx(0.3) and overall.method == "mcnemar-mid-p"
    assert overall.mde > 0.1 and overall.underpowered
    # The gate failed on a slice: what overall could not see does not limit a fail, so no power warning.
    assert c.verdict == "fail" and not any("detect" in w for w in c.warnings), c.warnings


def test_tiny_slices_whose_cases_all_moved_alike_cannot_fail_or_pass():
    """All-unchanged or all-flipped tiny slices have a plain paired SE of 0 and a zero-width
    bootstrap interval; their tiny share of α and the smoothed interval keep them inconclusive."""
    ok = outcomes(400, 0.8, 14)
    tiny = {"t5": (5, True, True), "t4": (4, True, False), "t3": (3, False, False)}  # size, base, cand
    base = [case(i, bool(ok[i]), lang="big") for i in range(400)]
    cand = [case(i, bool(ok[i]), lang="big") for i in range(400)]
    i = 400
    for lang, (size, before, after) in tiny.items():
        base += [case(j, before, lang=lang) for j in range(i, i + size)]
        cand += [case(j, after, lang=lang) for j in range(i, i + size)]
        i += size
    c = compare(run_of(base), run_of(cand, sha="c"))
    by = {u.unit: u for u in c.units}
    assert all(u.blocking for u in c.units)
    for name in ("language=t5", "language=t4", "language=t3"):
        u = by[name]
        # None: no drop at all is caught with power 0.8 by a test of so few cases at its level.
        assert u.mde is None and u.underpowered and u.q_value is not None, u
        assert u.verdict == "inconclusive" and u.smoothed_low < -0.02
        # binary and under 100 cases: the marginal interval is the smoothed one, never a point; the
        # interval at the tested level is the McNemar test inverted, or with no discordant pair the
        # smoothed one at that level
        assert u.marginal_high - u.marginal_low > 0.3 and u.ci_high - u.ci_low > 0.3
        assert u.ci_method == ("mcnemar-inverted" if name == "language=t4" else "smoothed")
    assert by["language=t4"].weight == pytest.approx(0.7 * 4 / 412)
    # the 400 unchanged cases can show no change: 1.645 / 402 < 0.02
    assert by["language=big"].verdict == "unchanged" and by["language=big"].mde < 0.10
    # 400 cases that all agree: the CLT's inversion would be the point 0, the smoothed interval is printed
    assert by["language=big"].ci_method == "smoothed" and by["language=big"].ci_low < 0 < by["language=big"].ci_high
    assert c.verdict == "pass"


def test_tiny_unbounded_and_continuous_slices_are_not_degenerate():
    def scored(i: int, score: float, latency: float, lang: str) -> CaseResult:
        attempt = Attempt(score=score, latency_ms=latency, tokens_in=100, tokens_out=20)
        return CaseResult(id=f"q{i}", slices={"language": lang}, attempts=[attempt])

    rng = np.random.default_rng(15)
    scores, lat = rng.random(400), rng.gamma(2.0, 100.0, 400)
    base = [scored(i, scores[i], lat[i], "big") for i in range(400)]
    cand = [scored(i, scores[i], lat[i], "big") for i in range(400)]
    base += [scored(400 + j, 0.9, 150.0, "tiny") for j in range(4)]
    cand += [scored(400 + j, 0.6, 150.0, "tiny") for j in range(4)]  # every score down by exactly 0.3
    config = SuiteConfig(
        suite="demo",
        cases="c.jsonl",
        slices=["language"],
        metrics={"score": MetricSpec(), "latency_p50_ms": MetricSpec(tolerance=5.0), "tokens": MetricSpec()},
    )
    c = compare(run_of(base), run_of(cand, sha="c"), config)
    tiny = [u for u in c.units if u.unit == "language=tiny"]
    assert len(tiny) == 3
    for u in tiny:
        assert u.mde > u.tolerance and u.verdict not in ("unchanged", "regressed"), u
    big = {u.metric: u for u in c.units if u.unit == "language=big"}
    assert big["score"].blocking and big["score"].verdict == "unchanged"


def test_identical_runs_pass_and_are_reproducible():
    ok = outcomes(500, 0.7, 5)
    base = run_of([case(i, bool(ok[i]), lang="ko" if i < 250 else "en") for i in range(500)])
    cand = base.model_copy(update={"run": base.run.model_copy(update={"git_sha": "cand"})})
    first = compare(base, cand)
    assert first.verdict == "pass" and first.exit_code == 0
    assert all(u.verdict == "unchanged" for u in first.units)
    again = compare(base, cand)
    assert [u.model_dump() for u in again.units] == [u.model_dump() for u in first.units]


def test_smoke_candidate_compares_with_the_same_ids_only():
    ok = outcomes(300, 0.8, 6)
    base = run_of([case(i, bool(ok[i])) for i in range(300)])
    smoke = run_of([case(i, bool(ok[i])) for i in range(0, 300, 6)], sha="c", subset="smoke")
    c = compare(base, smoke)
    assert c.case_diff.n_paired == 50 and c.units[0].n == 50
    assert c.case_diff.removed == [] and c.case_diff.n_outside_subset == 250
    # 50 unchanged cases cannot show a drop ≤ 0.02: the Agresti–Min bound is 1.645/52 ≈ 0.032
    assert c.verdict == "inconclusive" and c.exit_code == 0
    assert "no change seen, but its 50 paired cases resolve only ±0.03" in c.reason
    bigger = run_of([case(i, bool(ok[i])) for i in range(0, 300, 2)], sha="c", subset="smoke")
    assert compare(base, bigger).verdict == "pass"  # 150 unchanged cases can: 1.645/152 ≈ 0.011


def test_added_removed_and_changed_cases_are_listed_not_paired():
    ok = outcomes(100, 0.8, 7)
    base = run_of([case(i, bool(ok[i])) for i in range(100)])
    cand_cases = [case(i, bool(ok[i])) for i in range(3, 100)] + [case(500, False), case(501, True)]
    edited = cand_cases[0].model_copy(
        update={"hash": case_hash("a new question", "42"), "attempts": [Attempt(passed=False)]}
    )
    cand_cases[0] = edited
    c = compare(base, run_of(cand_cases, sha="c"))
    d = c.case_diff
    assert d.removed == ["q0000", "q0001", "q0002"] and d.n_removed == 3
    assert d.added == ["q0500", "q0501"]
    assert d.changed == ["q0003"]
    assert d.n_paired == 96 and c.units[0].n == 96
    assert d.n_pass_to_fail == 0  # the edited case is not a flip: its question changed


def test_infra_errors_are_not_failures():
    ok = outcomes(200, 0.8, 8)
    base = run_of([case(i, bool(ok[i])) for i in range(200)])
    infra = Attempt(error=AttemptError(kind="infra", message="503 after retries"), retries=5)
    cand_cases = []
    for i in range(200):
        c_ = case(i, bool(ok[i]))
        if i % 20 == 0:  # 10 cases: infra failure only -> errored, left out
            c_ = c_.model_copy(update={"attempts": [infra]})
        elif i % 20 == 1:  # 10 cases: one infra failure, then a good attempt -> counts as that attempt
            c_ = c_.model_copy(update={"attempts": [infra, *c_.attempts]})
        cand_cases.append(c_)
    c = compare(base, run_of(cand_cases, sha="c"))
    assert c.verdict == "pass", c.reason
    assert c.units[0].delta == 0 and c.units[0].n == 190
    assert c.case_diff.n_errored == 10 and c.case_diff.n_pass_to_fail == 0
    assert c.candidate_run.errored_cases == 10 and c.candidate_run.cases_with_infra_retries == 20
    assert c.candidate_run.infra_errors == 20 and c.candidate_run.infra_retries == 100


def with_errors(cases: list[CaseResult], kind: str, every: int) -> list[CaseResult]:
    """Every ``every``-th case's only attempt ends in an error of ``kind``."""
    broken = Attempt(error=AttemptError(kind=kind, message="it broke"), retries=5 if kind == "infra" else 0)
    return [c if i % every else c.model_copy(update={"attempts": [broken]}) for i, c in enumerate(cases)]


def test_target_errors_are_wrong_answers_and_fail_through_pass_rate():
    """A target that crashes on 15% of cases is a regression (exit 1), not an infra problem (exit 3)."""
    base = run_of([case(i, True) for i in range(200)])
    for kind in ("target", "timeout", "scorer"):
        cand = run_of(with_errors([case(i, True) for i in range(200)], kind, 7), sha="c")  # 29 of 200: 14.5%
        c = compare(base, cand)
        assert c.verdict == "fail" and c.exit_code == 1, (kind, c.reason)
        assert c.units[0].candidate == pytest.approx(171 / 200) and c.units[0].verdict == "regressed"
        assert c.candidate_run.error_rate == pytest.approx(29 / 200) and c.candidate_run.infra_error_rate == 0


def test_infra_errors_over_max_error_rate_make_the_run_incomplete():
    base = run_of([case(i, True) for i in range(200)])
    cand = run_of(with_errors([case(i, True) for i in range(200)], "infra", 7), sha="c")
    c = compare(base, cand)
    assert c.verdict == "incomplete" and c.exit_code == 3
    assert "infra error rate 14.5%" in c.reason and "29 of 200 attempts" in c.reason
    assert c.candidate_run.infra_error_rate == pytest.approx(29 / 200)
    # infra-errored cases are left out, not failed: the rest is compared as usual
    assert c.units[0].n == 171 and c.units[0].delta == 0
    config = SuiteConfig(suite="demo", cases="c.jsonl", gate=GateSpec(max_error_rate=0.2))
    assert compare(base, cand, config).verdict == "pass"


def test_max_age_days_reaches_the_report():
    from evals.report import markdown as report
    from evals.results.manifest import SnapshotInfo

    ok = outcomes(200, 0.8, 16)
    base, cand = run_of([case(i, bool(ok[i])) for i in range(200)]), run_of([case(i, bool(ok[i])) for i in range(200)])
    created = (datetime.now(UTC) - timedelta(days=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    snap = SnapshotInfo(sha="abc1234", name="baseline-abc1234.json.gz", digest="sha256:00", created_at=created)
    ref = BaselineRef(source="local:.evalgate/baselines", snapshot=snap)
    strict = SuiteConfig.model_validate({"suite": "demo", "cases": "c.jsonl", "baseline": {"max_age_days": 3}})
    c = compare(base, cand, strict, baseline_ref=ref)
    assert c.gate.max_age_days == 3
    assert "older than 3 days" in report.render_markdown(c)
    default = compare(base, cand, baseline_ref=ref)
    assert default.gate.max_age_days == 30
    assert "older than" not in report.render_markdown(default)


def test_latency_metric_lower_is_better_uses_bootstrap():
    rng = np.random.default_rng(9)
    lat = rng.gamma(2.0, 200.0, 400)
    base = run_of([case(i, True, latency=float(lat[i])) for i in range(400)])
    cand = run_of([case(i, True, latency=float(lat[i] * 1.5)) for i in range(400)], sha="c")
    config = SuiteConfig(
        suite="demo",
        cases="c.jsonl",
        metrics={"pass_rate": MetricSpec(), "latency_p95_ms": MetricSpec(tolerance="20%")},
    )
    c = compare(base, cand, config)
    p95 = next(u for u in c.units if u.metric == "latency_p95_ms")
    assert p95.direction == "lower" and p95.method == "bootstrap"
    assert p95.delta == pytest.approx(np.percentile(lat, 95) * 0.5)
    assert p95.tolerance == pytest.approx(0.2 * np.percentile(lat, 95))
    assert p95.verdict == "regressed" and c.verdict == "fail"
    ungated = config.model_copy(
        update={"metrics": {"pass_rate": MetricSpec(), "latency_p95_ms": MetricSpec(tolerance="20%", gate=False)}}
    )
    assert compare(base, cand, ungated).verdict == "pass"


def test_large_latency_slice_blocks_and_target_mde_is_relative():
    # target_mde is a share of the baseline value for unbounded metrics: a 600-case slice whose
    # p50 latency is well measured fails the gate; a 20-case slice of widely spread latencies is
    # underpowered.
    rng = np.random.default_rng(3)
    n_big, n_small = 600, 20
    lat = np.concatenate([rng.normal(1000.0, 30.0, n_big), rng.gamma(1.0, 1000.0, n_small)])
    langs = ["en"] * n_big + ["ko"] * n_small
    base = run_of([case(i, True, lang=langs[i], latency=float(lat[i])) for i in range(n_big + n_small)])
    slower = [float(lat[i] * (1.3 if langs[i] == "en" else 1.0)) for i in range(n_big + n_small)]
    cand = run_of([case(i, True, lang=langs[i], latency=slower[i]) for i in range(n_big + n_small)], sha="c")
    config = SuiteConfig(
        suite="demo", cases="c.jsonl", slices=["language"], metrics={"latency_p50_ms": MetricSpec(tolerance="5%")}
    )
    c = compare(base, cand, config)
    en = next(u for u in c.units if u.unit == "language=en")
    ko = next(u for u in c.units if u.unit == "language=ko")
    assert en.blocking and en.verdict == "regressed" and not en.underpowered
    assert ko.blocking and ko.underpowered and ko.verdict != "regressed"
    assert c.verdict == "fail" and "language=en" in c.reason


def test_pass_at_k_and_named_scores_over_attempts():
    def multi(i: int, passes: int) -> CaseResult:
        attempts = [Attempt(passed=j < passes, scores={"format_valid": 1.0}) for j in range(5)]
        return CaseResult(id=f"q{i}", attempts=attempts)

    base = run_of([multi(i, 3) for i in range(60)], attempts_per_case=5)
    cand = run_of([multi(i, 1) for i in range(60)], sha="c", attempts_per_case=5)
    config = SuiteConfig(
        suite="demo",
        cases="c.jsonl",
        metrics={"pass@2": MetricSpec(), "pass_rate": MetricSpec(), "format_valid": MetricSpec(gate=False)},
    )
    c = compare(base, cand, config)
    by = {u.metric: u for u in c.units}
    assert by["pass@2"].baseline == pytest.approx(1 - 1 / 10) and by["pass@2"].candidate == pytest.approx(1 - 6 / 10)
    assert by["pass_rate"].baseline == pytest.approx(0.6) and by["pass_rate"].method == "bootstrap-t"
    assert by["format_valid"].delta == 0 and not by["format_valid"].blocking
    assert c.verdict == "fail"


def test_incompatible_names_both_hashes():
    base = run_of([case(i, True) for i in range(20)], config_hash="sha256:aaa")
    cand = run_of([case(i, True) for i in range(20)], sha="c", config_hash="sha256:bbb")
    c = compare(base, cand)
    assert c.verdict == "incompatible" and c.exit_code == 1
    assert "sha256:aaa" in c.reason and "sha256:bbb" in c.reason and c.units == []


def test_incompatible_says_which_definitions_changed_and_how_to_reset(monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    old = {"scorers": [{"name": "exact", "python": None, "params": {}}], "directions": {}}
    new = {
        "scorers": [{"name": "exact", "python": None, "params": {"ignore_case": True}}, {"name": "json_valid"}],
        "directions": {"tokens": "higher"},
    }
    base = run_of([case(i, True) for i in range(20)], config_hash="sha256:aaa", definitions=old)
    cand = run_of([case(i, True) for i in range(20)], sha="c", config_hash="sha256:bbb", definitions=new)
    c = compare(base, cand)
    assert c.verdict == "incompatible" and "scorer 'json_valid' added" in c.reason
    assert "scorer 'exact' changed from" in c.reason and '"ignore_case": true' in c.reason
    assert "direction of 'tokens': default → higher" in c.reason
    assert "`evalgate reset" in c.reason and "workflow_dispatch" in c.reason
    # An older baseline without definitions: say so, rather than only quoting two hashes.
    older = run_of([case(i, True) for i in range(20)], config_hash="sha256:aaa")
    assert "does not record its scorer definitions" in compare(older, cand).reason
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    on_github = compare(base, cand).reason
    assert "workflow_dispatch reset" in on_github and "evalgate reset" not in on_github


def test_other_suite_and_no_common_case_are_incompatible():
    base = run_of([case(i, True) for i in range(20)])
    other = run_of([case(i, True) for i in range(20)], sha="c", suite="elsewhere")
    c = compare(base, other)
    assert c.verdict == "incompatible" and c.exit_code == 1 and "suite 'demo'" in c.reason
    # Another suite's baseline is not this suite's to reset: the store is what to change.
    assert "a reset accepts it" not in c.reason
    assert "reads another suite's baseline, and a reset here would replace it" in c.reason
    assert "baseline.path for the local store, baseline.tag for a GitHub release" in c.reason
    assert "if this suite was renamed, bless its first run on purpose" in c.reason
    disjoint = run_of([case(i, True) for i in range(100, 120)], sha="c")
    c = compare(base, disjoint)
    assert c.verdict == "incompatible" and "no case in common" in c.reason and c.exit_code == 1
    # A smoke candidate may hold few of the baseline's cases; a full one may not.
    few = [case(i, True) for i in range(3)]
    assert compare(base, run_of(few, sha="c", subset="smoke")).verdict != "incompatible"
    c = compare(base, run_of(few, sha="c"))
    assert c.verdict == "incompatible" and "lacks 17 of the baseline's 20 cases (85%" in c.reason


def test_drift_guard_against_the_blessed_baseline():
    ok = outcomes(600, 0.9, 10)
    blessed = run_of([case(i, bool(ok[i])) for i in range(600)], sha="blessed")
    worse = outcomes(600, 0.8, 11)
    drifted = [case(i, bool(ok[i] and worse[i])) for i in range(600)]
    base, cand = run_of(drifted, sha="prev"), run_of(drifted, sha="c")
    c = compare(base, cand, blessed=blessed)
    assert c.verdict == "pass" and not c.drift_ok
    assert c.drift.verdict == "regressed" and "blessed" in c.drift.reason
    assert compare(base, cand, blessed=base).drift_ok


def test_no_baseline_follows_on_missing():
    cand = run_of([case(i, True) for i in range(10)])
    c = compare(None, cand)
    assert c.verdict == "no-baseline" and c.exit_code == 0 and c.case_diff.n_added == 10
    strict = SuiteConfig.model_validate({"suite": "demo", "cases": "c.jsonl", "baseline": {"on_missing": "fail"}})
    assert compare(None, cand, strict).exit_code == 1


def test_comparison_round_trips_through_json():
    baseline, candidate = regression_pair()
    c = compare(baseline, candidate)
    again = Comparison.model_validate_json(c.model_dump_json())
    assert again == c


def test_a_comparison_from_a_newer_evalgate_is_read_without_the_fields_this_one_lacks():
    """The comment phase runs the default branch's evalgate on a report a PR's evalgate wrote."""
    import json

    from evals.common.errors import InputFileError
    from evals.report.files import parse_comparison

    baseline, candidate = regression_pair()
    c = compare(baseline, candidate)
    data = json.loads(c.model_dump_json())
    data["new_section"] = {"x": 1}
    data["gate"]["new_setting"] = True
    data["units"][0]["new_stat"] = 0.5
    ignored: list[str] = []
    assert parse_comparison(json.dumps(data).encode(), "comparison.json", ignored) == c
    assert sorted(ignored) == ["gate.new_setting", "new_section", "units.0.new_stat"]
    # A field it knows, with a value it does not accept, is still refused, extras or not.
    data["verdict"] = "maybe"
    with pytest.raises(InputFileError, match="verdict"):
        parse_comparison(json.dumps(data).encode(), "comparison.json")


def test_a_comparison_of_the_e_process_days_still_reads():
    """comparison.json files written before more evidence's t-test (their e-values, thresholds and
    observation counts) are read with those left out and the new statistics unknown: the comment
    phase of a default branch that moved on still posts a PR's stored report."""
    import json

    from evals.report.files import parse_comparison

    baseline, candidate = regression_pair()
    data = json.loads(compare(baseline, candidate).model_dump_json())
    data["more_evidence"] = {
        "rho": 0.2,
        "first_look_alpha": 0.04,
        "sequential_alpha": 0.01,
        "select": "looks_worse",
        "max_batches": 10,
        "baseline_side": "re-run at the baseline's commit",
        "looks": [
            {
                "look": 1,
                "units": ["language=ko"],
                "cases": 25,
                "attempts": 50,
                "values": [
                    {
                        "metric": "pass_rate",
                        "unit": "language=ko",
                        "e_value": 139000.0,
                        "threshold": 2857.1,
                        "rejected": True,
                        "observed_drop": 0.3,
                        "observations": 50,
                        "rerun": True,
                    }
                ],
                "outcome": "fail",
            }
        ],
        "ended": "fail",
        "summary": "regressed after 1 batch",
        "estimand": "the same cases",
    }
    ignored: list[str] = []
    c = parse_comparison(json.dumps(data).encode(), "comparison.json", ignored)
    value = c.more_evidence.looks[0].values[0]
    assert value.rejected and value.observed_drop == 0.3 and value.p_value is None and value.cases == 0
    assert sorted(ignored) == [f"more_evidence.looks.0.values.0.{k}" for k in ("e_value", "observations", "threshold")]
    from evals.report.html import render_html
    from evals.report.markdown import render_markdown

    assert "More evidence" in render_markdown(c, kind="comment") and "More evidence" in render_html(comparison=c)


def test_tolerance_override_changes_only_rate_metrics_and_not_the_config_hash(tmp_path):
    from evals.suite.loading import load_config

    (tmp_path / "evalgate.yml").write_text(
        "suite: demo\ncases: cases.jsonl\nscorers: [final_answer]\nmetrics:\n  pass_rate: {tolerance: 0.05}\n"
        "  score: {}\n"
        "  error_rate: {tolerance: 0.01}\n  pass@3: {}\n  latency_p95_ms: {tolerance: '20%'}\n"
        "  tokens: {tolerance: 50}\n  format_valid: {tolerance: 0.1, gate: false}\n"
    )
    config = load_config(tmp_path / "evalgate.yml")
    before = config.model_dump()
    for value, expected in ((0.03, 0.03), ("0.03", 0.03), (" 5% ", "5%"), (0, 0.0)):
        out = apply_tolerance_override(config, value)
        tol = {name: spec.tolerance for name, spec in out.metrics.items()}
        assert tol == {
            "pass_rate": expected,
            "score": expected,
            "error_rate": expected,
            "pass@3": expected,
            "latency_p95_ms": "20%",
            "tokens": 50,
            "format_valid": 0.1,
        }
        assert out.config_hash() == config.config_hash() and out.root == config.root
        assert out.metrics["format_valid"].gate is False
    assert config.model_dump() == before  # the input is not changed
    for bad in ("abc", "-0.1", -1, "nan", float("inf"), "5 %%", ""):
        with pytest.raises(UsageError, match="--tolerance"):
            apply_tolerance_override(config, bad)
    # 2 meant as two points is 200 pp on a rate: refused with both ways to write what was meant
    for big, share in (("2", "0.02"), (1, "0.01"), (" 1.5 ", "0.015")):
        with pytest.raises(UsageError, match="percentage points") as info:
            apply_tolerance_override(config, big)
        assert f"--tolerance {share} for" in str(info.value) and "% of the baseline value" in str(info.value)
    assert apply_tolerance_override(config, "150%").metrics["pass_rate"].tolerance == "150%"


# ---------------------------------------------------------------------------------------- CLI


def cli(python_exe: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python_exe, "-m", "evals.compare", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.e2e
def test_cli_seed_flags_exit_code_is_the_verdict(tmp_path, python_exe):
    baseline, candidate = regression_pair()
    save_results(baseline, tmp_path / "baseline.json")
    save_results(candidate, tmp_path / "candidate.json.gz")
    args = ["--baseline", "baseline.json", "--candidate", "candidate.json.gz", "--tolerance", "0.02"]
    proc = cli(python_exe, *args, "--json", "comparison.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "fail" in proc.stdout and "language=ko" in proc.stdout
    data = json.loads((tmp_path / "comparison.json").read_text())
    assert data["verdict"] == "fail" and data["exit_code"] == 1
    same = cli(python_exe, "--baseline", "baseline.json", "--candidate", "baseline.json", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr


def test_cli_report_names_the_slice_and_flipped_cases(tmp_path, python_exe):
    baseline, candidate = regression_pair()
    save_results(baseline, tmp_path / "baseline.json")
    save_results(candidate, tmp_path / "candidate.json")
    args = ["--baseline", "baseline.json", "--candidate", "candidate.json", "--tolerance", "0.02"]
    proc = cli(python_exe, *args, "--report", "report.md", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "language=ko" in report
    flipped = compare(baseline, candidate).case_diff.pass_to_fail[0].id
    assert flipped in report


@pytest.mark.e2e
def test_cli_special_verdict_exit_codes(tmp_path, python_exe):
    full = run_of([case(i, True) for i in range(30)])
    save_results(full, tmp_path / "base.json")
    partial = run_of([case(i, True) for i in range(10)], status="cancelled", total_cases=30, completed_cases=10)
    save_results(partial, tmp_path / "partial.json")
    other = run_of([case(i, True) for i in range(30)], config_hash="sha256:other")
    save_results(other, tmp_path / "other.json")
    incomplete = cli(python_exe, "--baseline", "base.json", "--candidate", "partial.json", cwd=tmp_path)
    assert incomplete.returncode == 3 and "incomplete" in incomplete.stdout and "10/30" in incomplete.stdout
    incompatible = cli(python_exe, "--baseline", "base.json", "--candidate", "other.json", cwd=tmp_path)
    assert incompatible.returncode == 1 and "sha256:other" in incompatible.stdout
    first = cli(python_exe, "--candidate", "base.json", cwd=tmp_path)
    assert first.returncode == 0 and "no-baseline" in first.stdout
    save_results(run_of(with_errors([case(i, True) for i in range(30)], "infra", 5)), tmp_path / "infra.json")
    infra = cli(python_exe, "--baseline", "base.json", "--candidate", "infra.json", cwd=tmp_path)
    assert infra.returncode == 3 and "infra error rate 20.0%" in infra.stdout
    save_results(run_of(with_errors([case(i, True) for i in range(30)], "target", 5)), tmp_path / "crash.json")
    crash = cli(python_exe, "--baseline", "base.json", "--candidate", "crash.json", cwd=tmp_path)
    assert crash.returncode == 1 and "regression" in crash.stdout, crash.stdout


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"schema_version": 1, "run": {"suite": "x", "status": "succ', "invalid JSON"),
        ('{"schema_version": 2, "run": {}, "cases": []}', "schema_version"),
        ("[1, 2]", "not a results file"),
        (
            '{"schema_version": 1, "run": {"suite": "x", "status": "success", "total_cases": 2, "completed_cases": 2},'
            ' "cases": [{"id": "a", "attempts": [{"score": NaN}]}, {"id": "b"}]}',
            "case id 'a'",
        ),
        (
            '{"schema_version": 1, "run": {"suite": "x", "status": "success", "total_cases": 2, "completed_cases": 2},'
            ' "cases": [{"id": "a"}, {"id": "a"}]}',
            "duplicate case id",
        ),
    ],
)
@pytest.mark.e2e
def test_cli_bad_input_exits_2_naming_the_file(tmp_path, python_exe, content, problem):
    save_results(run_of([case(1, True)]), tmp_path / "good.json")
    (tmp_path / "bad.json").write_text(content)
    proc = cli(python_exe, "--baseline", "bad.json", "--candidate", "good.json", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "bad.json" in proc.stderr and problem in proc.stderr
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------------------- loader


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_lean_loader_accepts_exactly_what_load_results_accepts(tmp_path, data):
    """compare's CLI loads with evals.compare.lazyload; fuzzed files must get the same verdict (and the
    same message) as from load_results, and a parse never crashes."""
    good = run_of([case(i, i % 2 == 0, lang="ko" if i % 3 else "en") for i in range(4)])
    text = good.model_dump_json()
    action = data.draw(st.sampled_from(["cut", "flip", "insert"]))
    at = data.draw(st.integers(0, len(text) - 1))
    if action == "cut":
        text = text[:at]
    elif action == "flip":
        text = text[:at] + data.draw(st.sampled_from(list('{}[]",:0123456789aNx '))) + text[at + 1 :]
    else:
        text = (
            text[:at] + data.draw(st.sampled_from(["NaN", '"extra": 1,', "-1", "null", '"id": "q0000",'])) + text[at:]
        )
    path = tmp_path / "fuzz.json"
    path.write_text(text)
    try:
        expected = load_results(path)
    except InputFileError as exc:
        with pytest.raises(InputFileError) as caught:
            load_lazy(path)
        assert str(caught.value) == str(exc)
    else:
        lean = load_lazy(path)
        assert lean.run == expected.run and list(lean.cases) == expected.cases


def test_cli_config_sets_metrics_slices_and_inconclusive_policy(tmp_path, capsys):
    from evals.cli.app import main as evalgate

    ok = outcomes(60, 0.7, 12)
    flip = outcomes(60, 0.7, 13)
    save_results(run_of([case(i, bool(ok[i]), lang=f"l{i % 3}") for i in range(60)]), tmp_path / "b.json")
    save_results(run_of([case(i, bool(flip[i]), lang=f"l{i % 3}") for i in range(60)], sha="c"), tmp_path / "c.json")
    (tmp_path / "evalgate.yml").write_text(
        "suite: demo\ncases: cases.jsonl\nslices: [language]\n"
        "metrics:\n  pass_rate: {tolerance: 0.05}\n  latency_p95_ms: {tolerance: '20%', gate: false}\n"
        "gate: {inconclusive: fail}\n"
    )
    args = ["compare", "--baseline", str(tmp_path / "b.json"), "--candidate", str(tmp_path / "c.json")]
    args += ["--config", str(tmp_path / "evalgate.yml"), "--json", str(tmp_path / "out.json")]
    assert evalgate(args) == 1
    assert "inconclusive" in capsys.readouterr().out
    data = Comparison.model_validate_json((tmp_path / "out.json").read_text())
    assert data.verdict == "inconclusive" and data.gate.inconclusive == "fail"
    assert {u.metric for u in data.units} == {"pass_rate", "latency_p95_ms"} and len(data.units) == 8
    assert data.units[0].tolerance == 0.05
    assert evalgate([*args, "--inconclusive", "warn", "--tolerance", "0.03"]) == 0
    data = Comparison.model_validate_json((tmp_path / "out.json").read_text())
    assert data.units[0].tolerance == 0.03 and data.exit_code == 0
    assert {m.metric: m.tolerance for m in data.gate.metrics} == {"pass_rate": 0.03, "latency_p95_ms": "20%"}
    assert evalgate([*args, "--tolerance", "10%"]) in (0, 1)
    data = Comparison.model_validate_json((tmp_path / "out.json").read_text())
    assert data.units[0].tolerance == pytest.approx(0.1 * data.units[0].baseline)
    assert evalgate([*args, "--tolerance", "lots"]) == 2
    assert "--tolerance 'lots'" in capsys.readouterr().err
    assert evalgate([*args[:2], str(tmp_path / "missing.json"), *args[3:]]) == 2
    assert "missing.json: file not found" in capsys.readouterr().err


def _quoted_bound(reason: str) -> tuple[float, str, float, float]:
    """The inconclusive reason's "could be down by up to X (NAME LOW to HIGH, n=..)"."""
    import re

    m = re.search(
        r"(?:could be down by up to |resolve only ±)([0-9.e+-]+) \((90% CI|smoothed interval) ([+-][0-9.e+-]+) "
        r"to ([+-][0-9.e+-]+)[,)]",
        reason,
    )
    assert m, reason
    return float(m[1]), m[2], float(m[3]), float(m[4])


def test_inconclusive_reason_prints_the_interval_that_bound_the_decision():
    # 50 identical outcomes: the bootstrap CI would be +0 to +0; a binary unit under 100 cases
    # reports the smoothed one, ±1.645/52, and that decides.
    ok = outcomes(50, 0.8, 6)
    same = compare(run_of([case(i, bool(ok[i])) for i in range(50)]), run_of([case(i, bool(ok[i])) for i in range(50)]))
    drop, name, low, high = _quoted_bound(same.reason)
    assert same.verdict == "inconclusive" and name == "90% CI" and same.units[0].ci_method == "smoothed"
    assert drop == pytest.approx(-low, rel=1e-3) and low == pytest.approx(-1.645 / 52, rel=1e-2)
    assert "CI +0 to +0" not in same.reason

    # 60 cases, 6 flips each way: a wide bootstrap interval, printed with the bound it gave.
    base_ok = [i % 2 == 0 for i in range(60)]
    cand_ok = [(not b) if i < 12 else b for i, b in enumerate(base_ok)]
    noisy = compare(
        run_of([case(i, base_ok[i]) for i in range(60)]), run_of([case(i, cand_ok[i]) for i in range(60)], sha="c")
    )
    drop, name, low, high = _quoted_bound(noisy.reason)
    unit = next(u for u in noisy.units if u.unit == "overall")
    shown = (unit.marginal_low, unit.marginal_high) if name == "90% CI" else (unit.smoothed_low, unit.smoothed_high)
    assert noisy.verdict == "inconclusive" and name == "90% CI"
    assert (low, high) == pytest.approx(shown, rel=1e-3) and drop == pytest.approx(-low, rel=1e-3)


def test_tolerance_wider_than_target_mde_is_named_as_the_limit():
    ok = outcomes(400, 0.8, 9)
    base = run_of([case(i, bool(ok[i])) for i in range(400)])
    cand = run_of([case(i, bool(ok[i])) for i in range(400)], sha="c")

    def warnings(tolerance: float) -> list[str]:
        config = SuiteConfig(
            suite="demo",
            cases="c.jsonl",
            metrics={"pass_rate": MetricSpec(tolerance=tolerance)},
            gate=GateSpec(target_mde=0.05),
        )
        return [w for w in compare(base, cand, config).warnings if "target_mde" in w]

    wide = warnings(0.08)
    assert len(wide) == 1 and "tolerance (8 pp) is itself larger than target_mde 0.05 = 5 pp" in wide[0]
    assert "paired cases would reach it" not in wide[0]
    # A tolerance inside the limit with too few cases to see it: more cases do help.
    few = compare(
        run_of([case(i, bool(ok[i])) for i in range(30)]),
        run_of([case(i, bool(ok[i])) for i in range(30)], sha="c"),
        SuiteConfig(
            suite="demo",
            cases="c.jsonl",
            metrics={"pass_rate": MetricSpec(tolerance=0.02)},
            gate=GateSpec(target_mde=0.05),
        ),
    )
    assert any("paired cases would reach it" in w for w in few.warnings), few.warnings
    assert warnings(0.02) == []


def test_compare_help_and_usage_errors_load_no_numpy_scipy_or_jinja(python_exe):
    """`evalgate compare --help` answers without the numeric stack (docs/spec.md#performance-targets: CLI start < 0.5
    s)."""
    probe = (
        "import sys\nfrom evals.cli.app import main\n"
        "for argv in (['compare', '--help'], ['compare']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'jinja2', 'evals.compare.analysis') if m in sys.modules))\n"
    )
    done = subprocess.run([python_exe, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr
    assert "--candidate" in done.stdout and "required" in done.stderr


def test_a_baseline_that_started_after_the_candidate_is_called_out():
    """Swapped --baseline/--candidate files look like a pass with improvements: say so."""
    ok = outcomes(200, 0.7, 8)
    cases = [case(i, bool(ok[i])) for i in range(200)]
    older = run_of(cases, started_at="2026-11-30T10:00:00Z")
    newer = run_of(cases, sha="cand", started_at="2026-12-01T10:00:00+00:00")
    swapped = compare(newer, older)
    assert any("are the baseline and the candidate the right way round?" in w for w in swapped.warnings)
    assert not any("right way round" in w for w in compare(older, newer).warnings)
    assert not any("right way round" in w for w in compare(run_of(cases, started_at="yesterday"), older).warnings)


def test_pass_at_k_on_runs_made_with_k_attempts_that_lost_some_to_infra_is_not_a_usage_error():
    """Three attempts a case, two of each lost to infra errors: the run's own problem (the verdict
    says so), not a config asking for pass@3 of one attempt (exit 2)."""
    lost = Attempt(error=AttemptError(kind="infra", message="Connection error."))
    cases = [CaseResult(id=f"q{i}", attempts=[Attempt(passed=i % 2 == 0, score=1.0), lost, lost]) for i in range(40)]
    config = SuiteConfig(suite="demo", cases="c.jsonl", metrics={"pass@3": MetricSpec()})
    config._path = Path("evalgate.yml")
    base, cand = run_of(cases, attempts_per_case=3), run_of(cases, sha="cand", attempts_per_case=3)
    assert compare(base, cand, config=config).verdict in ("incomplete", "inconclusive")
    with pytest.raises(UsageError, match="needs at least 3 judged attempts"):
        compare(run_of(cases), run_of(cases, sha="cand"), config=config)  # made with one attempt a case


def _judged(i: int, passed: bool, lang: str) -> CaseResult:
    """A case whose 0/1 judge verdict is its pass/fail (a model-graded scorer's score)."""
    attempt = Attempt(passed=passed, scores={"judge": float(passed)}, output=f"answer {i}")
    return CaseResult(id=f"q{i:04d}", slices={"kind": lang}, attempts=[attempt], input=f"q {i}", expected="42")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_0_1_judge_and_pass_rate_get_the_same_test_and_verdict_on_the_same_outcomes(seed):
    """docs/spec.md#tests-per-unit: a metric is binary when its per-case values are all 0/1 in both runs, whatever its
    name; the same outcomes once went through the bootstrap-t as `judge` and McNemar as
    `pass_rate`, and a slice was 'regressed' on one and 'inconclusive' on the other."""
    rng = np.random.default_rng(seed)
    kinds = ["capital", "math", "en"]
    ok = rng.random(240) < 0.75
    lose = rng.random(240) < 0.35
    base = [_judged(i, bool(ok[i]), kinds[i % 3]) for i in range(240)]
    cand = [_judged(i, bool(ok[i] and not (i % 3 == 0 and lose[i])), kinds[i % 3]) for i in range(240)]
    verdicts = {}
    for metric in ("pass_rate", "judge"):
        config = SuiteConfig(suite="demo", cases="c.jsonl", slices=["kind"], metrics={metric: MetricSpec()})
        c = compare(run_of(base), run_of(cand, sha="c"), config)
        verdicts[metric] = (c.verdict, [(u.unit, u.verdict, u.method, u.p_value, u.ci_low) for u in c.units])
    assert verdicts["pass_rate"] == verdicts["judge"]
    methods = {m for _, _, m, _, _ in verdicts["judge"][1]}
    assert methods == {"mcnemar-mid-p"}  # 240 and 80 cases: under 300, binary


def test_an_untouched_suite_says_no_change_seen_and_what_it_would_take():
    """80 byte-identical cases: the gate cannot pass at 0.02 (its band is ±0.0201); it says so,
    and how many cases would certify the tolerance, instead of a bare inconclusive."""
    ok = outcomes(80, 0.7, 21)
    base = [case(i, bool(ok[i]), lang="en" if i % 2 else "ko") for i in range(80)]
    c = compare(run_of(base), run_of(base, sha="c"), tolerance=0.02)
    assert c.verdict == "inconclusive"
    assert "no change seen" in c.reason and "±0.02006" in c.reason and "81 paired cases would certify it" in c.reason
    for u in c.units:
        assert u.no_change_seen and u.discordance == 0 and u.verdict == "inconclusive"
        assert u.note.startswith(f"no change seen on its {u.n} paired cases (resolves ±")
    overall = c.units[0]
    assert overall.certifiable == pytest.approx(1.6448536 / 82) and overall.cases_to_certify == 81
    # At the band it resolves, the same runs pass.
    assert compare(run_of(base), run_of(base, sha="c"), tolerance=0.0201).verdict == "pass"


def test_an_inconclusive_gate_names_the_tolerance_its_suite_certifies():
    rng = np.random.default_rng(8)
    p = rng.beta(0.5, 0.2, 200)
    base = [case(i, bool(rng.random() < p[i])) for i in range(200)]
    cand = [case(i, bool(rng.random() < p[i])) for i in range(200)]
    c = compare(run_of(base), run_of(cand, sha="c"), tolerance=0.02)
    assert c.verdict == "inconclusive", c.reason
    overall = c.units[0]
    flipped = sum(b.attempts[0].passed != k.attempts[0].passed for b, k in zip(base, cand, strict=True))
    assert overall.discordance == pytest.approx(flipped / 200)
    assert f"{flipped / 200:.1%} of them differing between the runs" in c.reason
    assert f"at a tolerance of {overall.certifiable:.4g}" in c.reason
    assert f"needs about {overall.cases_to_certify} paired cases" in c.reason


# ------------------------------------------------------------------------------ absolute floors


def floor_config(**metric) -> SuiteConfig:
    return SuiteConfig(suite="demo", cases=[], slices=["language"], metrics={"pass_rate": MetricSpec(**metric)})


def floor_run(en_rate: float, ko_rate: float, n: int = 100) -> Results:
    """``n`` English and ``n`` Korean cases passing at the given rates (exactly)."""
    cases = [case(i, i < en_rate * n, lang="en") for i in range(n)]
    cases += [case(n + i, i < ko_rate * n, lang="ko") for i in range(n)]
    return run_of(cases, sha="cand")


def test_a_floor_breach_fails_the_gate_without_a_baseline():
    """docs/spec.md#absolute-floors: `min` is judged on the candidate's own interval and needs no baseline: a run at
    0.60 under a floor of 0.80 fails (exit 1) where it used to say no-baseline (exit 0)."""
    c = compare(None, floor_run(0.6, 0.6), floor_config(min=0.8))
    assert (c.verdict, c.exit_code) == ("fail", 1)
    assert "absolute floor breached" in c.reason and "pass_rate on overall below its floor min 0.8" in c.reason
    [floor] = c.floors
    assert floor.verdict == "breached" and floor.ci_high < 0.8 and floor.n == 200 and floor.confidence == 0.9
    assert Comparison.model_validate_json(c.model_dump_json()).breached_floors == [floor]


def test_overall_floors_are_not_judged_on_a_smoke_subset():
    """A stratified smoke subset over-samples small slices, so overall on it is no estimate of the
    suite: an overall floor there cannot fail the gate (the full run judges it); a per-slice floor,
    a simple random sample within its slice, still does."""
    smoke = floor_run(0.6, 0.6)
    smoke.run.subset = "smoke"
    c = compare(None, smoke, floor_config(min=0.8))
    assert c.verdict == "no-baseline" and not c.floors
    assert any("not judged on the smoke subset" in w and "pass_rate on overall below" in w for w in c.warnings)
    sliced = compare(None, smoke, floor_config(min=0.8, per_slice=True))
    assert sliced.verdict == "fail" and {f.unit for f in sliced.breached_floors} == {"language=en", "language=ko"}


def test_a_floor_no_case_can_be_judged_on_is_said():
    """A per-slice floor on a score that one slice's cases never record cannot be checked there:
    a warning, not a silent pass."""
    run = floor_run(0.9, 0.9)
    for c_ in run.cases:
        if c_.slices["language"] == "en":
            c_.attempts[0].scores = {"judge": 1.0}
    config = SuiteConfig(
        suite="demo",
        cases=[],
        slices=["language"],
        metrics={"pass_rate": MetricSpec(), "judge": MetricSpec(min=0.8, per_slice=True)},
    )
    c = compare(None, run, config)
    assert {f.unit for f in c.floors if f.metric == "judge"} == {"overall", "language=en"}
    assert {f.unit: f.n for f in c.floors if f.metric == "judge"} == {"overall": 100, "language=en": 100}
    assert any("judge on language=ko: no case of the candidate has a value" in w for w in c.warnings)


def test_a_floor_breach_fails_beside_a_passing_relative_test():
    same = floor_run(0.6, 0.6)
    c = compare(same, floor_run(0.6, 0.6), floor_config(min=0.8))
    assert c.verdict == "fail" and not c.regressed and c.breached_floors


def test_per_slice_floor_fails_on_the_slice_only_with_a_significant_breach():
    """Overall 0.75 straddles nothing it cannot clear at 0.70; Korean at 0.50 is far below it."""
    c = compare(None, floor_run(1.0, 0.5), floor_config(min=0.7, per_slice=True))
    assert c.verdict == "fail"
    verdicts = {f.unit: f.verdict for f in c.floors}
    assert verdicts == {"overall": "met", "language=en": "met", "language=ko": "breached"}
    assert "language=ko" in c.reason and "overall" not in c.reason


def test_a_value_below_the_floor_inside_its_interval_warns_and_does_not_fail():
    """0.74 on 100 cases against a floor of 0.75: the interval reaches the floor, so the
    candidate only *could* be below it — a warning, not a failure (docs/spec.md#absolute-floors: fail when the upper
    bound is below min)."""
    c = compare(None, floor_run(0.74, 0.74, n=50), floor_config(min=0.75))
    assert c.verdict == "no-baseline" and c.exit_code == 0
    assert [f.verdict for f in c.floors] == ["uncertain"]
    assert any("could be below its floor min 0.75" in w for w in c.warnings)


def test_a_ceiling_fails_when_the_whole_interval_is_above_it():
    c = compare(None, floor_run(0.5, 0.5), floor_config(max=0.3))
    assert c.verdict == "fail" and "above its ceiling max 0.3" in c.reason


def test_compare_cli_exits_1_on_a_breached_floor_with_no_baseline(tmp_path, python_exe):
    save_results(floor_run(0.6, 0.6), tmp_path / "cand.json")
    (tmp_path / "evalgate.yml").write_text("suite: demo\ncases: []\nmetrics:\n  pass_rate: {min: 0.8}\n")
    done = subprocess.run(
        [python_exe, "-m", "evals", "compare", "--candidate", "cand.json", "--config", "evalgate.yml",
         "--json", "c.json", "--report", "r.md"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert json.loads((tmp_path / "c.json").read_text())["floors"][0]["verdict"] == "breached"
    report = (tmp_path / "r.md").read_text()
    assert "Beyond an absolute floor (1)" in report and "below its floor min 0.8" in report


def test_a_slice_key_with_one_value_on_every_case_is_no_unit():
    """A one-task import sliced by `task` listed `task=toy` as a unit of its own — overall
    again under another name, with no α, in every table of the report."""
    from evals.report.markdown import render_markdown

    def run(sha: str, flip: int) -> Results:
        cases = [case(i, i % 4 != 0 and i != flip, lang="ko" if i % 2 else "en") for i in range(60)]
        for c in cases:
            c.slices["task"] = "toy"
        return run_of(cases, sha=sha)

    c = compare(run("base", -1), run("cand", 5), tolerance=0.02)
    assert c.gate.slice_keys == ["language", "task"]
    assert {u.unit for u in c.units} == {"overall", "language=en", "language=ko"}
    md = render_markdown(c, kind="full")
    assert "| language=ko |" in md and "| task=toy |" not in md  # a case may still name its tags
    assert "task=toy (" not in md  # nor in "Why each slice could or could not block"


def test_a_candidate_whose_config_loosens_its_own_gate_says_so_in_the_headline():
    """A PR's config set tolerance 0.5 and gate: false on the metric that broke: the fail became
    inconclusive and "What changed" listed only the commit. Every run records its gate settings;
    the comparison lists what the candidate's config changes of the baseline's, in the headline."""
    from evals.compare.gate_changes import gate_changes
    from evals.report.glance import headline

    strict = SuiteConfig(suite="demo", cases="c.jsonl", slices=["language"], metrics={"pass_rate": {"tolerance": 0.02}})
    loose = SuiteConfig(
        suite="demo",
        cases="c.jsonl",
        slices=["language"],
        metrics={"pass_rate": {"tolerance": 0.5, "gate": False}, "score": {"gate": False}},
        gate=GateSpec(slice_alpha_share=0.0),
    )
    baseline, candidate = regression_pair()
    baseline = baseline.model_copy(
        update={"run": baseline.run.model_copy(update={"gate_settings": strict.gate_settings()})}
    )
    assert compare(baseline, candidate, strict).gate_changes == []
    # Another gate of the same rules (the more-evidence workflow's config): no change of rules.
    another = strict.model_copy(update={"gate": GateSpec(id="more", more_evidence={"max_batches": 10})})
    assert compare(baseline, candidate, another).gate_changes == []
    c = compare(baseline, candidate, loose)
    assert c.verdict != "fail"
    assert "metrics.pass_rate.tolerance: 0.02 → 0.5" in c.gate_changes
    assert "metrics.pass_rate.gate: true → false" in c.gate_changes
    assert "gate.slice_alpha_share: 0.7 → 0.0" in c.gate_changes
    assert any(line.startswith("metrics.score: (not set) → {") for line in c.gate_changes)
    said = headline(c, markdown=False)
    assert "changes its own gate against the baseline's: " in said and "metrics.pass_rate.gate: true → false" in said
    # A baseline that recorded none (an older evalgate, an imported file): nothing to compare with.
    assert gate_changes(None, loose.gate_settings()) == []


def test_a_run_records_its_configs_gate_settings(tmp_path):
    import sys

    from fakes.suites import echo_cases, write_suite

    from evals.run.execution import execute
    from evals.suite.loading import load_config

    echo = "import json, sys; print(json.dumps({'output': json.load(sys.stdin)['input']}))"
    path = write_suite(tmp_path, echo_cases(3), target={"command": [sys.executable, "-c", echo]}, scorers=["exact"])
    config = load_config(path)
    results = execute(config, tmp_path / "r.json", progress=False)
    assert results.run.gate_settings == config.gate_settings()
    assert results.run.gate_settings["metrics"]["pass_rate"]["tolerance"] == 0.02

"""The judge's self-agreement over its repeats and its agreement with people in a comparison
(docs/spec.md#judge-noise, docs/spec.md#human-labels): read from the attempts' ``metadata.judge``
and the cases' ``metadata.human_verdict``, shown in the report, and ``metrics.judge_agreement``
as a floor that fails the gate when the judge's agreement with people is surely below it — and
that never lets the gate pass when too few cases are labelled to tell."""

from __future__ import annotations

import pytest
from fakes.suites import load_suite

from evals.compare.analysis import compare
from evals.compare.judging import human_verdict, judge_checks, self_agreement
from evals.compare.lazyload import CaseList, LazyResults, load_lazy
from evals.report.markdown import render_markdown
from evals.results.files import save_results
from evals.results.model import Attempt, CaseResult, Results, RunInfo, case_hash


def judged_case(i: int, verdicts: list[bool], human: object = None) -> CaseResult:
    """A case graded by a judge with ``len(verdicts)`` repeats (one verdict: no repeats)."""
    passed = 2 * sum(verdicts) >= len(verdicts)
    judge: dict[str, object] = {"verdict": "pass" if passed else "fail", "passed": passed, "reasoning": "r"}
    if len(verdicts) > 1:
        judge["repeats"] = [{"passed": v, "score": float(v)} for v in verdicts]
    attempt = Attempt(passed=passed, score=float(passed), output=f"a{i}", metadata={"judge": judge})
    return CaseResult(
        id=f"c{i:03d}",
        attempts=[attempt],
        input=f"q{i}",
        expected="x",
        hash=case_hash(f"q{i}", "x"),
        metadata={} if human is None else {"human_verdict": human},
    )


def results(cases: list[CaseResult], sha: str) -> Results:
    info = {"suite": "t", "status": "success", "total_cases": len(cases), "completed_cases": len(cases)}
    return Results(run=RunInfo(**info, git_sha=sha, config_hash="sha256:same"), cases=cases)


def test_human_verdicts_read_as_bools_or_words():
    assert [human_verdict({"human_verdict": v}) for v in (True, "PASS", " fail ", "no", 1, "maybe")] == [
        True,
        True,
        False,
        False,
        None,
        None,
    ]


def test_self_agreement_counts_outputs_whose_verdicts_agree_and_fleiss_kappa():
    run = results([judged_case(0, [True] * 3), judged_case(1, [False] * 3), judged_case(2, [True, True, False])], "c")
    s = self_agreement(run)
    assert s is not None and (s.outputs, s.repeats, s.unanimous, s.cases) == (3, 3, 2, ["c002"])
    assert s.pair_agreement == pytest.approx((1 + 1 + 1 / 3) / 3)
    p = 5 / 9  # passing verdicts of all nine
    chance = p * p + (1 - p) * (1 - p)
    assert s.kappa == pytest.approx((s.pair_agreement - chance) / (1 - chance))
    assert self_agreement(results([judged_case(0, [True])], "c")) is None  # no repeats: nothing to say


def test_a_case_whose_judge_disagreed_with_itself_is_marked_in_the_case_diff(tmp_path):
    base = results([judged_case(i, [True] * 3) for i in range(30)], "b")
    cand = results([judged_case(i, [True] * 3) for i in range(29)] + [judged_case(29, [True, False, False])], "c")
    config = load_suite(tmp_path, [], scorers=[{"judge": {"model": "m:x", "api_key_env": None, "rubric": "r"}}])
    c = compare(base, cand, config)
    [entry] = c.case_diff.pass_to_fail
    assert entry.flaky_basis == "judge" and entry.flaky_note == (
        "judge unsure (its repeated verdicts disagree 67% of the time)"
    )
    assert c.judge is not None and c.judge.baseline is not None and c.judge.baseline.share == 1.0
    assert c.judge.candidate is not None and c.judge.candidate.cases == ["c029"]
    report = render_markdown(c)
    assert "agreed with itself on 97% of outputs (3 verdicts each)" in report and "judge unsure" in report


def test_the_lean_forms_read_the_same_judge_checks_as_the_models(tmp_path):
    # The lean forms keep only the judged and labelled cases for these checks (no second parse of
    # every case): unjudged cases in between, repeats, labels with and without a judge verdict.
    plain = [
        CaseResult(
            id=f"p{i:03d}", attempts=[Attempt(passed=True, score=1.0)], input=f"p{i}", hash=case_hash(f"p{i}", None)
        )
        for i in range(40)
    ]
    judged = [judged_case(i, [True, i % 3 == 0, True], human=i % 4 != 0) for i in range(20)]
    unjudged_label = plain[5].model_copy(update={"metadata": {"human_verdict": "fail"}})
    run = results([*plain[:5], unjudged_label, *plain[6:20], *judged, *plain[20:]], "c")
    save_results(run, tmp_path / "c.json")
    from_file = load_lazy(tmp_path / "c.json")
    assert isinstance(from_file, LazyResults)
    assert len(from_file.cases.judged) == 21  # the 20 judged and the one labelled case, not the 59 others
    written = LazyResults(
        run.schema_version, run.run, CaseList.from_json([c.model_dump_json().encode() for c in run.cases])
    )
    config = load_suite(tmp_path, [], metrics={"pass_rate": {}, "judge_agreement": {"min": 0.5, "min_cases": 5}})
    expected = judge_checks(None, run, config)
    assert expected is not None and expected.candidate is not None and expected.humans is not None
    assert expected.humans.labelled == 21 and expected.candidate.outputs == 20
    assert judge_checks(None, from_file, config) == expected
    assert judge_checks(None, written, config) == expected


def labelled_runs(n: int, wrong: int, tmp_path) -> tuple[Results, Results]:
    """``n`` labelled cases, identical in both runs; the judge passes all, people fail ``wrong`` of them."""
    cases = [judged_case(i, [True], human="pass" if i >= wrong else False) for i in range(n)]
    base, cand = results(cases, "b"), results(cases, "c")
    save_results(cand, tmp_path / "cand.json")
    return base, cand


def test_a_judge_that_disagrees_with_people_fails_the_agreement_floor(tmp_path):
    config = load_suite(tmp_path, [], metrics={"pass_rate": {}, "judge_agreement": {"min": 0.8}})
    base, cand = labelled_runs(100, 35, tmp_path)
    for run in (cand, load_lazy(tmp_path / "cand.json")):  # the models, and the lean form the CLI reads
        c = compare(base, run, config)
        assert c.verdict == "fail" and "judge_agreement on overall below its floor min 0.8: 0.65" in c.reason
        humans = c.judge.humans if c.judge else None
        assert humans is not None and humans.agreement.n == 100 and humans.agreement.bias == pytest.approx(0.35)
        assert humans.agreement.disagreements[:2] == ["c000", "c001"]
    report = render_markdown(c)
    assert "agreement 65.0%" in report and "It disagrees with people on: c000, c001" in report
    # The same runs pass where the judge agrees with people well enough.
    base, cand = labelled_runs(100, 5, tmp_path)
    assert compare(base, cand, config).verdict == "pass"


def test_too_few_labelled_cases_never_pass_in_silence(tmp_path):
    config = load_suite(tmp_path, [], metrics={"judge_agreement": {"min": 0.8}})
    assert set(config.metrics) == {"pass_rate"}  # the floor alone leaves the default metric gated
    base, cand = labelled_runs(100, 0, tmp_path)
    for case in cand.cases[10:]:
        case.metadata = {}
    c = compare(base, cand, config)
    assert c.verdict == "inconclusive"
    assert c.reason.startswith("metrics.judge_agreement.min 0.8 needs 20 cases with a human verdict")
    assert "the candidate has 10" in c.reason


def test_a_smoke_subset_with_few_labels_warns_and_leaves_the_floor_to_the_full_run(tmp_path):
    config = load_suite(tmp_path, [], metrics={"judge_agreement": {"min": 0.8}})
    base, cand = labelled_runs(100, 0, tmp_path)
    cand.run.subset = "smoke"
    for case in cand.cases[10:]:
        case.metadata = {}
    c = compare(base, cand, config)
    assert c.verdict == "pass" and any("needs 20 cases with a human verdict" in w for w in c.warnings)


def test_case_ids_in_the_judge_section_are_escaped(tmp_path):
    from evals.report.html import render_html

    config = load_suite(tmp_path, [], metrics={"pass_rate": {}, "judge_agreement": {"min": 0.8}})
    base, cand = labelled_runs(30, 1, tmp_path)
    for run in (base, cand):
        run.cases[0].id = "<img src=x onerror=alert(1)>"
    c = compare(base, cand, config)
    assert c.judge is not None and c.judge.humans is not None
    assert c.judge.humans.agreement.disagreements == ["<img src=x onerror=alert(1)>"]
    for text in (render_markdown(c), render_html(comparison=c)):
        assert "disagrees with people on" in text and "<img" not in text

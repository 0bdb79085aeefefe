"""Where gate.fail_fast applies (docs/spec.md#fail-fast): a pull request's gate that runs the suite
against a baseline; a push, a default-branch or local full gate, a gate of a results file it did not
run, an informative smoke draw and a first run keep the whole α (fail fast turned off for that
gate, and said). The fixed-sample rule's α follows: 0.9·α with fail fast, the whole α without
(docs/spec.md#alpha-split)."""

from __future__ import annotations

import pytest

from evals.compare.plan import first_look_alpha, fixed_rule_alpha
from evals.github.activity import Activity
from evals.pipeline.failfast import fail_fast_applies, fail_fast_baseline
from evals.results.files import load_results
from evals.results.manifest import BaselineRef
from evals.results.model import Results, RunInfo
from evals.store.baseline import LoadedBaseline
from evals.suite.config import SuiteConfig

CONFIG = SuiteConfig.model_validate({"suite": "demo", "cases": [], "gate": {"fail_fast": True}})
PR = Activity(kind="smoke", why="pull_request", in_actions=True, event_name="pull_request", pr_number=7)
PUSH = Activity(kind="full", why="push", in_actions=True, event_name="push", promote=True)
LOCAL = Activity(kind="full", why="local")
BASELINE = LoadedBaseline(
    Results(run=RunInfo(suite="demo", status="success", total_cases=0, completed_cases=0)), BaselineRef(source="x")
)


def test_a_pull_requests_gate_that_runs_the_suite_fails_fast(tmp_path):
    config = fail_fast_applies(CONFIG, PR, BASELINE, runs_suite=True)
    assert config.gate.fail_fast
    assert fixed_rule_alpha(config.gate) == pytest.approx(0.045)
    path = fail_fast_baseline(config, BASELINE, tmp_path)
    assert path is not None and load_results(path).run.suite == "demo"  # what the child run reads


@pytest.mark.parametrize(
    ("activity", "baseline", "runs_suite", "why"),
    [
        (PUSH, BASELINE, True, "for pull-request gates"),
        (LOCAL, BASELINE, True, "for pull-request gates"),
        (PR, BASELINE, False, "a results file it did not run"),
        (PR, None, True, "no baseline"),
        (PR, "informative", True, "informative smoke draw"),
    ],
)
def test_elsewhere_every_case_runs_and_the_fixed_rule_keeps_the_whole_alpha(
    activity, baseline, runs_suite, why, tmp_path, capsys
):
    config = CONFIG
    if baseline == "informative":
        config = CONFIG.model_copy(update={"smoke": CONFIG.smoke.model_copy(update={"select": "informative"})})
        baseline = BASELINE
    config = fail_fast_applies(config, activity, baseline, runs_suite=runs_suite)
    assert not config.gate.fail_fast
    said = capsys.readouterr()
    assert "gate.fail_fast is not used" in said.err + said.out and why in said.err + said.out
    assert fixed_rule_alpha(config.gate) == first_look_alpha(config.gate) == 0.05
    assert fail_fast_baseline(config, baseline, tmp_path) is None

"""A fail-fast run end to end in process (``execute`` with the stopping rule, docs/spec.md#fail-fast):
a python target that broke one slice stops scheduling at the first look, its file partial
(``cancelled``) and saying why; ``--resume`` runs the rest and completes it."""

from __future__ import annotations

from pathlib import Path

from fakes.suites import echo_cases, load_suite

from evals.compare.failfast import FailFast, look_points
from evals.results.files import load_results
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.run.execution import execute
from evals.suite.cases import load_cases

# Every ko case (the odd ones) answered wrongly.
BOT = "def answer(q):\n    return 'wrong' if int(q[1:]) % 2 else q\n"


def test_a_broken_slice_stops_the_run_at_a_look_and_resume_completes_it(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    cases = echo_cases(200, lang=["en", "ko"])
    config = load_suite(tmp_path, cases, target={"python": "bot:answer", "path": ["."]}, slices=["lang"], concurrency=1)
    passed = [
        CaseResult(id=c["id"], slices=c["tags"], hash=case.hash, attempts=[Attempt(passed=True)])
        for c, case in zip(cases, load_cases(config), strict=True)
    ]
    info = RunInfo(suite=config.suite, status="success", total_cases=200, completed_cases=200)
    baseline = Results(run=info, cases=passed)
    out = tmp_path / "results.json"

    execute(config, out, progress=False, fail_fast=lambda order: FailFast.plan(config, baseline, order))
    run = load_results(out).run
    assert run.status == "cancelled" and run.fail_fast is not None
    assert run.fail_fast.unit == "lang=ko" and run.fail_fast.look == 1
    assert run.fail_fast.cases_at_look == look_points(200)[0] <= run.completed_cases < 200
    assert run.message is not None and run.message.startswith(f"stopped after {run.completed_cases} of 200 cases")

    execute(config, out, progress=False, resume=True)
    run = load_results(out).run
    assert run.status == "success" and run.completed_cases == 200 and run.fail_fast is None

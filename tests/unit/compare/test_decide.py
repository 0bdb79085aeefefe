"""The decision rule (evals.compare.decide): α allocated before the run by design (case counts), weighted
Holm, verdicts that do not depend on anything but the inputs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from evals.compare.decide import alpha_weights, decide, gate_verdict
from evals.compare.metrics import metric_def
from evals.compare.model import UnitResult
from evals.compare.paired import MetricInput, UnitIndex
from evals.suite.gate import GateSpec
from evals.suite.scoring import MetricSpec


def unit(name: str, n: int, metric: str = "pass_rate", gated: bool = True) -> UnitResult:
    key, _, value = name.partition("=")
    return UnitResult(
        unit=name,
        slice_key=key if value else None,
        slice_value=value or None,
        metric=metric,
        direction="higher",
        gated=gated,
        baseline=None,
        candidate=None,
        delta=None,
        tolerance=0.02,
        confidence=0.9,
        n=n,
        blocking=False,
        verdict="inconclusive",
    )


def layout_1000(metric: str = "pass_rate", gated: bool = True) -> list[UnitResult]:
    return [unit("overall", 1000, metric, gated), unit("s=big", 400, metric, gated)] + [
        unit(f"s=small{k}", 100, metric, gated) for k in range(6)
    ]


def test_allocation_for_1000_cases_400_plus_6x100():
    gate = GateSpec()
    levels = gate.alpha * alpha_weights(layout_1000(), gate.slice_alpha_share, gate.slice_weights)
    # docs/spec.md#alpha-split: the slices share 0.7 of α (overall 0.3), split by paired cases within the key.
    assert levels[0] == pytest.approx(0.015)  # overall
    assert levels[1] == pytest.approx(0.014)  # the 400-case slice
    assert levels[2:] == pytest.approx([0.0035] * 6)  # each 100-case slice
    assert levels.sum() == pytest.approx(gate.alpha)


def test_allocation_rules_keys_metrics_and_share():
    units = layout_1000()
    sqrt = alpha_weights(units, 0.5, "sqrt_cases")
    assert sqrt[1] / sqrt[2] == pytest.approx(2.0) and sqrt.sum() == pytest.approx(1.0)
    equal = alpha_weights(units, 0.5, "equal")
    assert equal[1:] == pytest.approx([0.5 / 7] * 7)
    only_overall = alpha_weights(units, 0.0, "cases")
    assert list(only_overall) == [1.0] + [0.0] * 7
    # Two slice keys: each key gets half of the slices' share, whatever its number of values.
    two_keys = [unit("overall", 100), unit("a=x", 50), unit("a=y", 50), unit("b=z", 70), unit("b=w", 30)]
    assert alpha_weights(two_keys, 0.5, "cases") == pytest.approx([0.5, 0.125, 0.125, 0.175, 0.075])
    # Two gated metrics split α equally first; an ungated metric gets none.
    both = layout_1000() + layout_1000("score") + layout_1000("tokens", gated=False)
    w = alpha_weights(both, 0.5, "cases")
    assert w[0] == pytest.approx(0.25) and w[8] == pytest.approx(0.25) and w[9] == pytest.approx(0.1)
    assert not w[16:].any() and w.sum() == pytest.approx(1.0)
    # A key whose one value holds every case is the overall test again: no α of its own.
    assert list(alpha_weights([unit("overall", 30), unit("lang=en", 30)], 0.5, "cases")) == [1.0, 0.0]


def inputs(base: np.ndarray, cand: np.ndarray) -> list[MetricInput]:
    spec = MetricSpec(tolerance=0.02)
    return [MetricInput(metric_def("pass_rate", spec), spec, base, cand)]


def units_of(sizes: list[int]) -> list[UnitIndex]:
    codes = np.repeat(np.arange(len(sizes)), sizes)
    return [UnitIndex("overall", None, None, None)] + [
        UnitIndex(f"s=v{k}", "s", f"v{k}", np.flatnonzero(codes == k)) for k in range(len(sizes))
    ]


def test_a_broken_100_case_slice_fails_the_gate_on_its_own():
    """The first version made this slice advisory (its discordant pairs raised its MDE): a
    40-point drop on a 100-case slice of 1,000 failed the gate 20-31% of the time."""
    rng = np.random.default_rng(7)
    base = (rng.random(1000) < 0.7).astype(float)
    cand = base.copy()
    broken = np.flatnonzero(base[400:500] == 1.0)[:40] + 400
    cand[broken] = 0.0
    results = decide(inputs(base, cand), units_of([400] + [100] * 6), GateSpec())
    verdict, reason = gate_verdict(results)
    hit = results[2]
    assert hit.unit == "s=v1" and hit.verdict == "regressed" and hit.blocking
    assert hit.alpha_level == pytest.approx(0.0035) and hit.p_adjusted <= 0.05
    assert verdict == "fail" and reason.startswith("regression: pass_rate on s=v1")


def test_same_inputs_same_blocking_units_and_verdicts():
    rng = np.random.default_rng(11)
    base = (rng.random(2000) < rng.beta(0.35, 0.15, 2000)).astype(float)
    cand = np.where(rng.random(2000) < 0.05, 1.0 - base, base)
    units = units_of([200] * 10)
    first = decide(inputs(base, cand), units, GateSpec())
    again = decide(inputs(base.copy(), cand.copy()), units_of([200] * 10), GateSpec())
    assert [u.model_dump() for u in first] == [u.model_dump() for u in again]
    # The allocation is design: another outcome on the same cases blocks the same units at the same levels.
    other = decide(inputs(base, base), units, GateSpec())
    assert [(u.blocking, u.weight) for u in first] == [(u.blocking, u.weight) for u in other]


@pytest.mark.e2e
def test_quickstart_smoke_ko_regression_fails_on_the_ko_slice(tmp_path, repo_root, python_exe):
    """examples/quickstart with QUICKSTART_REGRESS=ko, smoke subset against a full baseline, via
    the CLI as its README shows: the gate fails, and language=ko is the regressed unit it names."""
    config = repo_root / "examples" / "quickstart" / "evalgate.yml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "QUICKSTART_"))}

    def evalgate(*args: str, regress: bool = False) -> subprocess.CompletedProcess[str]:
        extra = {"QUICKSTART_REGRESS": "ko"} if regress else {}
        return subprocess.run(
            [python_exe, "-m", "evals", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**env, **extra},
            timeout=120,
        )

    assert evalgate("run", "--config", str(config), "--output", "base.json").returncode == 0
    assert evalgate("run", "--config", str(config), "--smoke", "--output", "cand.json", regress=True).returncode == 0
    args = ["compare", "--config", str(config), "--baseline", "base.json", "--candidate", "cand.json"]
    proc = evalgate(*args, "--json", "c.json", "--report", "r.md")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("evalgate compare: fail: regression: pass_rate on language=ko")
    units = {(u["unit"], u["metric"]): u for u in json.loads(Path(tmp_path / "c.json").read_text())["units"]}
    ko = units[("language=ko", "pass_rate")]
    assert ko["verdict"] == "regressed" and ko["blocking"] and ko["p_adjusted"] <= 0.05
    assert all(
        u["verdict"] != "regressed"
        for (name, _), u in units.items()
        if name.startswith("language=") and name != "language=ko"
    )
    report = (tmp_path / "r.md").read_text()
    assert "Why each slice could or could not block" in report and "language=ko (pass\\_rate): could block" in report


def test_report_counts_one_unit_without_stray_characters():
    from evals.compare.analysis import compare
    from evals.report.markdown import render_markdown
    from evals.results.model import Attempt, CaseResult, Results, RunInfo
    from evals.suite.config import SuiteConfig

    def run(sha: str) -> Results:
        cases = [CaseResult(id=f"q{i}", attempts=[Attempt(passed=i % 5 != 0)]) for i in range(50)]
        info = RunInfo(suite="demo", status="success", total_cases=50, completed_cases=50, git_sha=sha)
        return Results(run=info, cases=cases)

    c = compare(run("a"), run("b"), SuiteConfig(suite="demo", cases="c.jsonl"))
    text = render_markdown(c, kind="full")
    # 50 identical cases: not a bare "inconclusive" but a unit that saw no change, and its band
    assert "<summary>1 unit saw no change (both runs agree on every case)</summary>" in text
    assert "\n\npass\\_rate on overall (resolves ±3.17 pp).\n</details>" in text

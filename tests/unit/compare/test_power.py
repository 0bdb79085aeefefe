"""The MDE is the drop a unit's own test catches with the configured power (docs/spec.md#mde):
exact for McNemar's discrete counts, one computation behind the report and ``evalgate plan``, and
its warnings only where they limit what a pass or an inconclusive means."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evals.compare.analysis import compare
from evals.compare.decide import decide
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput, UnitIndex
from evals.compare.plan import plan_suite, render_text
from evals.compare.power import binary_cases, binary_mde, binary_power, exact_power, normal_power
from evals.compare.stats import mcnemar_worse, paired_clt
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.suite.gate import GateSpec, MoreEvidenceSpec
from evals.suite.scoring import MetricSpec

LEVEL_25_OF_500 = 0.05 * 0.7 / 20  # a 25-case slice of 20×25: its weighted-Holm share of α


def brute_force_power(drop: float, n: int, psi: float, level: float, margin: float, mid_p: bool) -> float:
    """Every (b, c) one by one: its multinomial probability, and the real test's verdict on it."""
    p10, p01 = psi / 2 + drop, psi / 2
    total = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            if (b - c) / n > margin and mcnemar_worse(b, c, n, margin, mid_p=mid_p) <= level:
                rest = n - b - c
                total += math.comb(n, b) * math.comb(n - b, c) * p10**b * p01**c * (1 - p10 - p01) ** rest
    return total


@pytest.mark.parametrize("mcnemar", ["mid-p", "exact"])
@pytest.mark.parametrize(
    ("n", "psi", "drop", "level"), [(25, 0.0, 0.4, 0.00175), (40, 0.2, 0.25, 0.01), (60, 0.4, 0.1, 0.05)]
)
def test_exact_power_is_the_sum_over_every_count_the_test_rejects(n, psi, drop, level, mcnemar):
    got = exact_power(drop, n, psi, level, 0.02, mcnemar)
    assert got == pytest.approx(brute_force_power(drop, n, psi, level, 0.02, mcnemar == "mid-p"), rel=1e-9, abs=1e-15)


def test_a_25_case_slice_of_500_cannot_fail_below_9_of_25_cases():
    # At α·w 0.00175 McNemar rejects 9 pass→fail flips of 25 and nothing fewer (with no flip back):
    assert mcnemar_worse(8, 0, 25, 0.02, mid_p=True) > LEVEL_25_OF_500 >= mcnemar_worse(9, 0, 25, 0.02, mid_p=True)
    # so no drop under 36 pp is caught 4 times in 5, however deterministic the target.
    found = binary_mde(25, 0.0, LEVEL_25_OF_500, 0.02, 0.8, "mid-p")
    assert found is not None and found >= 0.36
    assert exact_power(found, 25, 0.0, LEVEL_25_OF_500, 0.02, "mid-p") >= 0.8
    # plan and the report give the same number for it.
    units = [("overall", None, 500)] + [(f"s=v{k:02d}", "s", 25) for k in range(20)]
    row = plan_suite("t", units, {"pass_rate": MetricSpec(tolerance=0.02)}, GateSpec(), 0.0, "given").rows[1]
    assert row.level == pytest.approx(LEVEL_25_OF_500) and row.mde == found
    spec = MetricSpec(tolerance=0.02)
    codes = np.repeat(np.arange(20), 25)
    index = [UnitIndex("overall", None, None, None)]
    index += [UnitIndex(f"s=v{k:02d}", "s", f"v{k:02d}", np.flatnonzero(codes == k)) for k in range(20)]
    same = np.ones(500)
    results = decide([MetricInput(metric_def("pass_rate", spec), spec, same, same.copy())], index, GateSpec())
    assert results[1].mde == found and results[1].underpowered


@pytest.mark.parametrize("n", [25, 100, 299, 400, 2000])
@pytest.mark.parametrize("psi", [0.0, 0.1, 0.4])
def test_power_rises_with_the_drop_and_the_mde_reaches_it(n, psi):
    level = 0.0035
    drops = np.linspace(0.0, 1.0 - psi, 101)
    power = np.array([binary_power(d, n, psi, level, 0.02, "mid-p") for d in drops])
    assert np.all(np.diff(power) >= -1e-12), (n, psi)
    found = binary_mde(n, psi, level, 0.02, 0.8, "mid-p")
    if found is None:
        assert power[-1] < 0.8
        return
    assert binary_power(found, n, psi, level, 0.02, "mid-p") >= 0.8
    assert binary_power(found - 2e-4, n, psi, level, 0.02, "mid-p") < 0.8


def clt_power_by_enumeration(drop: float, n: int, psi: float, level: float, margin: float) -> float:
    """The real paired CLT test (``paired_clt``) on every likely (b, c), weighted by its probability."""
    from scipy.special import gammaln

    p10, p01 = psi / 2 + drop, psi / 2
    b, c = (x.ravel() for x in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    b, c = b[b + c <= n], c[b + c <= n]
    log_pmf = gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1) - gammaln(n - b - c + 1)
    log_pmf += b * np.log(p10) + (c * np.log(p01) if p01 else np.where(c > 0, -np.inf, 0.0))
    log_pmf += (n - b - c) * np.log(1 - p10 - p01)
    total = 0.0
    for bi, ci, weight in zip(b, c, np.exp(log_pmf), strict=True):
        if weight < 1e-9:
            continue
        d = np.concatenate([-np.ones(bi), np.ones(ci), np.zeros(n - bi - ci)])
        _, _, p_worse, _ = paired_clt(d, margin)
        total += weight * (p_worse <= level and d.mean() < -margin)
    return total


@pytest.mark.parametrize(("psi", "drops"), [(0.0, (0.05, 0.06)), (0.2, (0.08, 0.10, 0.12))])
def test_the_clt_unit_s_power_is_its_real_test_s(psi, drops):
    """400 cases at α·w 0.014: with ψ 0 the no-change SE is 0 and the drop's own flips set the
    spread. The normal power is within 0.02 of the real test's; one SE for both (the drop's) was
    0.075 off at a drop of 5 pp."""
    for drop in drops:
        exact = clt_power_by_enumeration(drop, 400, psi, 0.014, 0.02)
        assert normal_power(drop, 400, psi, 0.014, 0.02) == pytest.approx(exact, abs=0.02), drop


def test_cases_for_a_target_drop_reach_the_power():
    for psi in (0.0, 0.1, 0.3):
        needed = binary_cases(0.10, psi, 0.0035, 0.02, 0.8, "mid-p")
        assert needed is not None
        assert binary_power(0.10, needed, psi, 0.0035, 0.02, "mid-p") >= 0.8
    assert binary_cases(0.02, 0.1, 0.0035, 0.02, 0.8, "mid-p") is None  # within the tolerance: no number helps


def test_plan_with_more_evidence_sizes_the_first_look_at_its_share_of_alpha():
    units = [("overall", None, 1000), ("s=big", "s", 400)] + [(f"s=v{k}", "s", 100) for k in range(6)]
    metrics = {"pass_rate": MetricSpec(tolerance=0.02)}
    plain = plan_suite("t", units, metrics, GateSpec(), 0.1, "given")
    gate = GateSpec(more_evidence=MoreEvidenceSpec(max_batches=4, rho=0.2))
    looked = plan_suite("t", units, metrics, gate, 0.1, "given")
    for a, b in zip(plain.rows, looked.rows, strict=True):
        assert b.level == pytest.approx(0.8 * a.level)
        assert b.mde == binary_mde(b.unit.n, 0.1, b.level, 0.02, 0.8, "mid-p")
        assert b.mde is not None and a.mde is not None and b.mde > a.mde
        assert b.certifies > a.certifies
    text = render_text(looked)
    assert "more evidence is on: the first look decides at (1 − ρ)·α = 0.04 (ρ 0.2 of α" in text
    assert "more evidence" not in render_text(plain)


def _run(outcomes: list[bool], langs: list[str], sha: str) -> Results:
    cases = [
        CaseResult(id=f"q{i:03d}", slices={"language": lang}, attempts=[Attempt(passed=ok)])
        for i, (ok, lang) in enumerate(zip(outcomes, langs, strict=True))
    ]
    info = {"suite": "demo", "status": "success", "total_cases": len(cases), "completed_cases": len(cases)}
    return Results(run=RunInfo(git_sha=sha, config_hash="sha256:same", **info), cases=cases)


def test_a_regressed_unit_is_not_underpowered_and_a_fail_gets_no_power_warning():
    """200 cases: 160 English whose outcomes flip both ways between runs (24 each way), 40 Korean.
    Breaking 16 Korean cases fails the gate on language=ko; overall (−8 pp) cannot see 10 pp."""
    langs = ["en"] * 160 + ["ko"] * 40
    base = [not 24 <= i < 48 for i in range(160)] + [True] * 40  # cases 24-47 fail in the baseline ...
    cand_en = [i >= 24 for i in range(160)]  # ... and pass in the candidate; cases 0-23 the other way
    broken = cand_en + [i >= 16 for i in range(40)]
    failed = compare(_run(base, langs, "a"), _run(broken, langs, "b"))
    units = {u.unit: u for u in failed.units}
    assert failed.verdict == "fail" and units["language=ko"].verdict == "regressed"
    assert units["language=ko"].mde > 0.10 and not units["language=ko"].underpowered
    assert units["overall"].underpowered and units["overall"].verdict == "inconclusive"
    assert not any("detect" in w for w in failed.warnings), failed.warnings
    # The same noise without the Korean drop: inconclusive, and overall's blindness is said.
    kept = compare(_run(base, langs, "a"), _run(cand_en + [True] * 40, langs, "b"))
    assert kept.verdict == "inconclusive"
    assert any("overall can only detect drops of" in w for w in kept.warnings), kept.warnings

"""``evalgate plan`` (docs/spec.md#certifiable-band): its figures are confirmed by
simulated unchanged runs through the gate's own decision code, its discordance comes from runs
the history recorded (two real ``evalgate run``s of a noisy target), and it says when it assumes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fakes.paths import ROOT
from fakes.suites import commit_all, echo_cases, write_suite

from evals.compare.decide import decide, gate_verdict
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput, UnitIndex
from evals.compare.plan import ASSUMED_DISCORDANCE, plan_suite, units_of_cases
from evals.compare.power import binary_cases, binary_mde, exact_power, normal_power
from evals.suite.cases import load_cases
from evals.suite.gate import GateSpec
from evals.suite.loading import load_config
from evals.suite.scoring import MetricSpec

QUICKSTART = ROOT / "examples" / "quickstart" / "evalgate.yml"


def plan_cli(config: Path, *args: str, cwd: Path | None = None, env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "evals", "plan", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def certified(output: str) -> float:
    """The tolerance the plan says an unchanged candidate passes at, as printed (pp → fraction)."""
    match = re.search(r"with [\d,]+ cases it is within ±([\d.]+) pp 4 runs in 5", output)
    assert match, output
    return float(match[1]) / 100


def aa_pass_rate(
    units: list[tuple[str, str | None, int]], keys: dict[str, np.ndarray], tolerance: float, psi: float, reps: int
) -> float:
    """Unchanged candidates: both runs drawn from the same per-case pass probabilities, a share
    2ψ of the cases a coin flip (p = ½, so ψ of all cases differ between two runs on average) and
    the rest deterministic; each pair goes through decide() and gate_verdict()."""
    n = units[0][2]
    spec = MetricSpec(tolerance=tolerance)
    index = [UnitIndex("overall", None, None, None)]
    for name, key, _ in units[1:]:
        index.append(UnitIndex(name, key, name.split("=", 1)[1], np.flatnonzero(keys[key] == name)))
    rng = np.random.default_rng(17)
    passed = 0
    for rep in range(reps):
        coin = rng.random(n) < 2 * psi
        fixed = (rng.random(n) < 0.75).astype(float)
        p = np.where(coin, 0.5, fixed)
        base = (rng.random(n) < p).astype(float)
        cand = (rng.random(n) < p).astype(float)
        results = decide([MetricInput(metric_def("pass_rate", spec), spec, base, cand)], index, GateSpec(), seed=rep)
        passed += gate_verdict(results)[0] == "pass"
    return passed / reps


def suite_units(config_path: Path) -> tuple[list[tuple[str, str | None, int]], dict[str, np.ndarray]]:
    config = load_config(config_path)
    cases = load_cases(config)
    keys = {k: np.array([f"{k}={c.tags.get(k, '')}" for c in cases], dtype=object) for k in config.slices}
    return units_of_cases(cases, config.slices), keys


@pytest.mark.e2e
def test_the_quickstart_plan_is_what_unchanged_runs_show():
    done = plan_cli(QUICKSTART)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"assumed ({ASSUMED_DISCORDANCE:.0%})" in out and "give --discordance" in out
    assert re.search(r"^overall\s+pass_rate\s+240\s+0\.3000", out, re.M)
    assert re.search(r"^language=ko\s+pass_rate\s+80\s+0\.1167", out, re.M)  # 80/240 of the language key's half of 0.7
    tolerance = certified(out)
    units, keys = suite_units(QUICKSTART)
    share = aa_pass_rate(units, keys, tolerance, ASSUMED_DISCORDANCE, 400)
    assert share >= 0.75, (tolerance, share)
    # ... and the configured 0.02 is far from it: the plan said "mostly inconclusive", and it is.
    assert "mostly inconclusive at ±2.00 pp" in out
    assert aa_pass_rate(units, keys, 0.02, ASSUMED_DISCORDANCE, 200) < 0.5


@pytest.mark.e2e
@pytest.mark.parametrize("psi", [0.0, 0.1, 0.25])
def test_an_80_case_suite_s_plan_is_what_unchanged_runs_show(tmp_path, psi):
    config = write_suite(
        tmp_path, echo_cases(80, lang=["en", "ko"]), slices=["lang"], metrics={"pass_rate": {"tolerance": 0.02}}
    )
    done = plan_cli(config, "--discordance", str(psi))
    assert done.returncode == 0, done.stderr
    tolerance = certified(done.stdout)
    units, keys = suite_units(config)
    assert units == [("overall", None, 80), ("lang=en", "lang", 40), ("lang=ko", "lang", 40)]
    if psi == 0:
        # 1.645 / 82 = 0.02006, printed rounded up so that the tolerance it names does pass
        assert tolerance == pytest.approx(0.0201) and "needs about 81 paired cases" in done.stdout
    share = aa_pass_rate(units, keys, tolerance, psi, 400)
    assert share >= 0.75, (psi, tolerance, share)


def test_the_plan_figures_follow_the_gate_s_formulas():
    gate = GateSpec()
    units = [("overall", None, 1000), ("s=big", "s", 400)] + [(f"s=v{k}", "s", 100) for k in range(6)]
    plan = plan_suite("t", units, {"pass_rate": MetricSpec(tolerance=0.02)}, gate, 0.2, "given")
    overall, big, small = plan.rows[0], plan.rows[1], plan.rows[2]
    assert (overall.weight, big.weight, small.weight) == pytest.approx((0.3, 0.28, 0.07))
    # The MDE is the power of the unit's own test: McNemar's exact power under 300 cases ...
    assert small.level == pytest.approx(0.0035)
    assert small.mde == binary_mde(100, 0.2, 0.0035, 0.02, 0.8, "mid-p")
    assert exact_power(small.mde, 100, 0.2, 0.0035, 0.02, "mid-p") == pytest.approx(0.8, abs=2e-3)
    # ... and the CLT's with the alternative's variance (ψ + Δ − Δ²) from 300 on.
    assert normal_power(overall.mde, 1000, 0.2, 0.015, 0.02) == pytest.approx(0.8, abs=2e-3)
    assert small.cases_for_target == binary_cases(0.10, 0.2, 0.0035, 0.02, 0.8, "mid-p") > 100
    assert overall.cases_to_certify is not None and overall.certifies > 0.02


@pytest.mark.e2e
def test_the_plan_reads_the_discordance_two_recorded_runs_show(tmp_path, monkeypatch):
    """Two real `evalgate run`s of a target that answers right at random: the history records
    both, and the plan uses the share of cases whose verdict differed between them."""
    monkeypatch.delenv("EVALGATE_HISTORY")  # on by default outside Actions: beside the config
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    (tmp_path / "coin.py").write_text(
        "import random\n\ndef answer(text):\n    return text if random.random() < 0.7 else 'no'\n", encoding="utf-8"
    )
    config = write_suite(
        tmp_path,
        echo_cases(120, lang=["en", "ko", "ja"]),
        slices=["lang"],
        target={"python": "coin:answer", "path": ["."]},
        scorers=["exact"],
        metrics={"pass_rate": {"tolerance": 0.02}},
    )
    commit_all(tmp_path)  # both runs repeat one clean commit
    outputs = []
    for k in range(2):
        out = tmp_path / f"run{k}.json"
        done = subprocess.run(
            [sys.executable, "-m", "evals", "run", "--config", str(config), "-o", str(out), "--no-summary"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(out)
    from evals.results.files import load_results

    first, second = (load_results(p) for p in outputs)
    differ = sum(
        a.attempts[0].passed != b.attempts[0].passed
        for a, b in zip(sorted(first.cases, key=lambda c: c.id), sorted(second.cases, key=lambda c: c.id), strict=True)
    )
    done = plan_cli(config, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "observed in the history: 120 paired cases over 1 pair(s) of runs" in done.stdout
    assert f"discordance {differ / 120:.1%}" in done.stdout
    # --discordance wins over the history, and a share outside 0..1 is a usage error.
    assert "given with --discordance" in plan_cli(config, "--discordance", "0.3", cwd=tmp_path).stdout
    bad = plan_cli(config, "--discordance", "30", cwd=tmp_path)
    assert bad.returncode == 2 and "from 0 to 1" in bad.stderr


def test_no_history_file_is_created_by_a_plan(tmp_path):
    config = write_suite(tmp_path, echo_cases(10), metrics={"pass_rate": {"tolerance": 0.05}})
    done = plan_cli(config, cwd=tmp_path)
    assert done.returncode == 0 and "assumed" in done.stdout
    assert not (tmp_path / ".evalgate").exists()

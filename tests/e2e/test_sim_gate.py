"""benchmarks/sim_gate.py (the grid of docs/spec.md#validity-targets) at small, fixed-seed sizes: its multinomial
reduction is the per-case model's, its vectorised rule is the gate's own (every replicate checked
end to end through decide/gate_verdict), its exact bounds reproduce the outside audit's
(../shared/research/decision-rule.md §2b), and the default rule keeps its headline properties.
The grid itself (60,000 / 20,000 / 100,000 replicates) is the benchmark's job."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from fakes.paths import ROOT

SIM = ROOT / "benchmarks" / "sim_gate.py"


@pytest.fixture(scope="module")
def sim():
    spec = importlib.util.spec_from_file_location("sim_gate", SIM)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sim_gate"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("model", ["independent", "heterogeneous", "near-deterministic"])
def test_the_multinomial_pair_probabilities_are_the_per_case_model_s(sim, model):
    rng = np.random.default_rng(5)
    n, scale = 400_000, 1 - 0.2 / sim.MEAN
    shape = sim.MODELS[model]
    p = np.full(n, sim.MEAN) if shape is None else rng.beta(*shape, size=n)
    base = rng.random(n) < p
    cand = rng.random(n) < p * scale
    p10, p01 = sim.pair_probs(model, scale)
    assert np.mean(base & ~cand) == pytest.approx(p10, abs=0.003)
    assert np.mean(~base & cand) == pytest.approx(p01, abs=0.003)


@pytest.mark.parametrize(
    ("layout", "scenario", "drop_slice", "drop"),
    [("500", "aa", 0, 0.0), ("1000", "boundary", 0, 0.0), ("1000", "drop", 1, 0.3), ("2000", "drop", 0, 0.1)],
)
def test_the_vectorised_rule_is_the_gate_s_rule_on_every_checked_replicate(sim, layout, scenario, drop_slice, drop):
    cell = sim.run_cell(
        layout, "heterogeneous", 120, seed=9, scenario=scenario, drop_slice=drop_slice, drop=drop, check=120
    )
    assert cell.checked == 120 and cell.mismatches == 0
    # docs/spec.md#confidence-intervals: every unit's printed interval agrees with its verdict
    assert cell.intervals == 120 * (1 + len(sim.LAYOUTS[layout])) and cell.disagreements == 0


def test_exact_bounds_reproduce_the_audit(sim):
    """The audit's exact lower bounds for mid-p + 0.7 (§2b): 0.722 (400-case slice, −0.10, het),
    0.901 (100-case, −0.30, independent), 0.837 (200-case, −0.20, independent)."""
    cases = [("1000", 0, 0.10, "heterogeneous", 0.722), ("1000", 1, 0.30, "independent", 0.901)]
    cases.append(("2000", 1, 0.20, "independent", 0.837))
    for layout, which, drop, model, audit in cases:
        n, level = sim.LAYOUTS[layout][which], sim.unit_level(layout, 1 + which)
        bound = sim.exact_unit_power(n, *sim.pair_probs(model, 1 - drop / sim.MEAN), level)
        assert bound == pytest.approx(audit, abs=0.0015), (layout, which, model)


@pytest.mark.parametrize(
    ("layout", "model"), [("500", "independent"), ("1000", "independent"), ("300", "heterogeneous")]
)
def test_aa_and_boundary_false_fail_rates(sim, layout, model):
    aa = sim.run_cell(layout, model, 6000, seed=1, scenario="aa")
    boundary = sim.run_cell(layout, model, 6000, seed=1, scenario="boundary")
    # docs/spec.md#validity-targets: ≤ 0.05 and ≤ 0.055; at 6,000 replicates the Monte Carlo SE is ≤ 0.003.
    assert aa.fail <= 0.03 and boundary.fail <= 0.055


def test_a_broken_100_case_slice_is_caught_where_the_first_version_missed_it(sim):
    cell = sim.run_cell("1000", "heterogeneous", 4000, seed=2, scenario="drop", drop_slice=1, drop=0.40)
    assert cell.found >= 0.99
    assert cell.old_found <= 0.5  # its discordant pairs raised its MDE above 0.10: advisory


def test_the_spec_power_cells_at_a_few_thousand_replicates(sim):
    het400 = sim.run_cell("1000", "heterogeneous", 8000, seed=3, scenario="drop", drop_slice=0, drop=0.10)
    ind100 = sim.run_cell("1000", "independent", 8000, seed=3, scenario="drop", drop_slice=1, drop=0.30)
    uniform = sim.run_cell("1000", "independent", 8000, seed=3, scenario="uniform", drop=sim.UNIFORM_DROP)
    # Targets 0.70, 0.90, 0.45; Monte Carlo SE ≤ 0.0055 here, so the margins are ≥ 2 SE below truth.
    assert het400.found >= 0.70 and ind100.found >= 0.885 and uniform.fail >= 0.44

"""benchmarks/sim_judge_noise.py (docs/decision-rule.md#judge-noise) at tiny sizes: its judge grades through the
judge's own mean_verdict rule (the majority of k flipped verdicts is wrong as often as the
binomial says) and its cells run the gate's own decide end to end. The table itself is the
benchmark's job."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from fakes.paths import ROOT

SIM = ROOT / "benchmarks" / "sim_judge_noise.py"


@pytest.fixture(scope="module")
def sim():
    spec = importlib.util.spec_from_file_location("sim_judge_noise", SIM)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sim_judge_noise"] = module
    spec.loader.exec_module(module)
    return module


def test_the_simulated_judge_is_wrong_as_often_as_its_majority_rule_says(sim):
    rng = np.random.default_rng(3)
    right = rng.random(200_000) < 0.7
    assert np.array_equal(sim.judged(right, 0.0, 3, rng), right.astype(float))
    for flip, k, wrong in ((0.1, 1, 0.1), (0.1, 3, 3 * 0.1**2 - 2 * 0.1**3), (0.15, 3, 3 * 0.15**2 - 2 * 0.15**3)):
        assert np.mean(sim.judged(right, flip, k, rng) != right) == pytest.approx(wrong, abs=0.003)


def test_a_cell_runs_the_gate_end_to_end(sim):
    aa = sim.cell(None, 0.1, 3, replicates=2, seed=1)
    assert set(aa) == {"fail", "found", "pass"} and aa["found"] == 0.0
    drop = sim.cell((1, 0.6), 0.0, 1, replicates=2, seed=1)  # a 60-point drop on a 100-case slice
    assert drop["found"] == 1.0

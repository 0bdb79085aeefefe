"""benchmarks/sim_intervals.py at small, fixed-seed sizes: its levels are the step-down's
(``bounds.holm_levels``), its bounds are the ones ``decide`` prints, it finds no interval that
disagrees with its verdict (docs/spec.md#confidence-intervals), and it does find them when handed
a wrong level. The full check (20,000 replicates a cell) is the benchmark's job."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from fakes.paths import ROOT

from evals.compare.bounds import agree, holm_levels
from evals.compare.decide import decide
from evals.compare.paired import MetricInput

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def sim():
    sys.path.insert(0, str(BENCHMARKS))  # sim_intervals imports sim_gate from beside it
    try:
        import sim_intervals

        yield sim_intervals
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def unit_bounds(sim):
    return sim.UnitBounds(sim.SIM_GATE)


@pytest.mark.parametrize("layout", ["500", "1000"])
def test_the_vectorised_levels_are_holm_levels_row_by_row(sim, layout):
    rng = np.random.default_rng(4)
    weights = sim.gate_weights(layout)
    # p-values spread over the step-down's range, ties included, so that every step is reached
    p = np.round(rng.uniform(0, 0.08, size=(400, weights.size)) ** 2 * 10, 4)
    rows = sim.holm_level_rows(p, weights, 0.05)
    for row, got in zip(p, rows, strict=True):
        assert got.tolist() == pytest.approx(holm_levels(row, weights, 0.05).tolist(), rel=1e-14, abs=0)


@pytest.mark.parametrize(
    ("layout", "model", "scenario", "drop_slice", "drop"),
    [
        ("300", "near-deterministic", "drop", 1, 0.2),
        ("1000", "heterogeneous", "drop", 1, 0.3),
        ("500", "independent", "boundary", 0, 0.0),
    ],
)
def test_the_bounds_are_the_ones_decide_prints(sim, unit_bounds, layout, model, scenario, drop_slice, drop):
    reps = 12
    got = sim.cell_bounds(
        layout, model, reps, 0, scenario=scenario, drop_slice=drop_slice, drop=drop, bounds=unit_bounds
    )
    sizes = sim.LAYOUTS[layout]
    spec = unit_bounds.units
    for rep in range(reps):
        gate_sim = sys.modules["sim_gate"]  # the draws' own layout and case arrays
        base, cand = gate_sim._cases(sizes, got.b[rep, 1:], got.c[rep, 1:])
        units = gate_sim.units_for(sizes)
        results = decide([MetricInput(spec.definition, spec.spec, base, cand)], units, sim.SIM_GATE, seed=rep)
        for u, r in enumerate(results):
            upper, lower = agree(
                got.upper[rep, u],
                got.lower[rep, u],
                got.margin[rep, u],
                regressed=bool(got.regressed[rep, u]),
                improved=bool(got.improved[rep, u]),
            )
            assert (r.verdict == "regressed", r.verdict == "improved") == (got.regressed[rep, u], got.improved[rep, u])
            assert (r.ci_low, r.ci_high) == pytest.approx((lower, upper), abs=1e-12), (rep, r.unit)


def test_every_replicate_at_a_small_count_agrees():
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "sim_intervals.py"), "--replicates", "300", "--layouts", "300", "500"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "78 cells, 23,400 replicates" in done.stdout and "disagreements: 0" in done.stdout, done.stdout


def test_a_wrong_level_is_found(sim, unit_bounds):
    """Every unit at Holm's first-step level α·w: a unit rejected at a later step was tested at
    α·w/W_k, above α·w, so its bound at α·w can reach into the band beside "regressed"."""

    def first_step(p, w, alpha):
        return np.broadcast_to(alpha * w, p.shape)

    cell = {"scenario": "drop", "drop_slice": 1, "drop": 0.2, "bounds": unit_bounds}
    wrong = sim.check_cell("300", "near-deterministic", 300, 0, levels=first_step, **cell)
    right = sim.check_cell("300", "near-deterministic", 300, 0, **cell)
    assert wrong.disagree > 0 and right.disagree == 0 and right.regressed == wrong.regressed > 0

"""A small fixed-seed run of benchmarks/sim_gate.py (the real decision code on simulated runs):
A/A false fails stay low, and a broken slice fails the gate where the first version's rule —
run on the same tested units — made it advisory. The SPEC §5 grid itself (≥ 400 replicates per
cell) is the benchmark's job: `.venv/bin/python benchmarks/sim_gate.py`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parent.parent / "benchmarks" / "sim_gate.py"


@pytest.fixture(scope="module")
def sim():
    spec = importlib.util.spec_from_file_location("sim_gate", SIM)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sim_gate"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("layout", "model"), [("500", "near-deterministic"), ("1000", "independent")])
def test_aa_and_boundary_false_fail_rates(sim, layout, model):
    aa = sim.run_cell(layout, model, 150, seed=1, scenario="aa")
    boundary = sim.run_cell(layout, model, 150, seed=1, scenario="boundary")
    assert aa.fail <= 0.06 and boundary.fail <= 0.08


def test_a_broken_100_case_slice_is_caught_where_the_first_version_missed_it(sim):
    cell = sim.run_cell("1000", "heterogeneous", 60, seed=2, scenario="drop", drop_slice=1, drop=0.40)
    assert cell.found >= 0.9
    assert cell.old_found <= 0.5  # its discordant pairs raised its MDE above 0.10: advisory


def test_a_drop_on_the_400_case_slice_is_found_as_often_as_before(sim):
    cell = sim.run_cell("1000", "near-deterministic", 100, seed=3, scenario="drop", drop_slice=0, drop=0.20)
    assert cell.found >= 0.9 and cell.found >= cell.old_found - 0.05

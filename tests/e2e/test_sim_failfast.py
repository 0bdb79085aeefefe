"""benchmarks/sim_failfast.py (the simulation of fail fast, docs/spec.md#fail-fast) at tiny, fixed-seed
sizes: it runs, its vectorised rule agrees with ``FailFast`` fed case by case, an unchanged suite is
almost never stopped, and a 100-case slice's −0.50 is stopped early and named. The 10,000-replicate
table (docs/decision-rule.md) is the benchmark's job."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from fakes.paths import ROOT

SIM = ROOT / "benchmarks" / "sim_failfast.py"


@pytest.fixture(scope="module")
def sim():
    spec = importlib.util.spec_from_file_location("sim_failfast", SIM)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sim_failfast"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_rule_agrees_with_failfast_and_stops_a_broken_slice_early(sim):
    tests = sim.UnitTests(sim.SIM_GATE)
    null = sim.run_cell("300", "heterogeneous", 300, 5, "aa", tests, check=5)
    assert null.mismatches == 0 and null.stopped <= 0.01
    broken = sim.run_cell("300", "heterogeneous", 300, 5, "drop", tests, 0, 0.5, check=5)
    assert broken.mismatches == 0 and broken.stopped > 0.95
    assert broken.fast >= broken.fixed - 0.02 and broken.median_share <= 0.5

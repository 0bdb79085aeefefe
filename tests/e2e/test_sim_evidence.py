"""benchmarks/sim_evidence.py (the simulation of "more evidence", docs/spec.md#more-evidence) at tiny, fixed-seed
sizes: it runs, its look 0 is the gate's own rule end to end, a deterministic target stops after
one batch and fails exactly as often as its first look, and a broken 25-case slice is found by the
later looks. The 10,000-replicate grid is the benchmark's job."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest
from fakes.paths import ROOT

SIM = ROOT / "benchmarks" / "sim_evidence.py"


@pytest.fixture(scope="module")
def sim():
    spec = importlib.util.spec_from_file_location("sim_evidence", SIM)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sim_evidence"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tests_cache(sim):
    return {}


def test_a_deterministic_target_fails_no_more_often_than_its_first_look(sim, tests_cache):
    res, mismatches = sim.simulate(
        "500", "heterogeneous", "det-boundary", 0.0, 400, seed=3, max_batches=10, tests=tests_cache, check=30
    )
    assert mismatches == 0
    for policy in sim.POLICIES:
        o = res[policy]
        assert o.fail_by(10) == o.fail_by(0)  # the same answers: no look after the first batch
        selected = o.extra > 0
        assert np.all(o.repeated == selected)  # every gate that ran a batch stopped after it
        assert np.all(o.look[selected & (o.end == 0)] == 11)


def test_stochastic_nulls_stay_small_and_a_broken_25_case_slice_is_found(sim, tests_cache):
    res, _ = sim.simulate("300", "heterogeneous", "redraw-once", 0.0, 300, seed=4, max_batches=4, tests=tests_cache)
    for o in res.values():
        assert o.fail_by(4) <= 0.04 and not o.repeated.any()
        assert np.all(np.isin(o.end, [0, 1, 2])) and np.all(o.extra <= 4)
    res, _ = sim.simulate("500", "near-deterministic", "drop", 0.40, 200, seed=5, tests=tests_cache)
    lw = res["looks_worse"]
    assert lw.found_by(10) >= 0.85 and lw.found_by(10) > lw.found_by(0) + 0.3


def test_the_benchmark_prints_every_target_with_its_replicates():
    done = subprocess.run(
        [sys.executable, str(SIM), "--replicates", "30", "--check", "2", "--layouts", "300"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert "30 replicates per cell" in done.stdout and "targets (30 replicates a cell):" in done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith(("  met", "  NOT met"))]
    # 300: six null scenarios × three models × (two policies + the later looks' share).
    assert len(lines) == 6 * 3 * 3
    assert "0 disagreements" in done.stdout

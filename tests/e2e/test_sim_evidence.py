"""benchmarks/sim_evidence.py (the simulation of "more evidence", docs/spec.md#more-evidence) at tiny, fixed-seed
sizes: it runs, its look 0 is the gate's own rule end to end, and the anytime-valid rule keeps
A/A false fails small while naive re-testing does not do better. The 3,000-replicate grid is the
benchmark's job."""

from __future__ import annotations

import importlib.util
import re
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


def test_aa_false_fails_are_small_and_look_0_is_the_gate_s_rule(sim, tests_cache):
    res, mismatches = sim.simulate(
        "300", "heterogeneous", "aa", 0.0, 300, seed=3, max_batches=4, tests=tests_cache, check=40
    )
    assert mismatches == 0
    assert set(res) == set(sim.POLICIES)
    for policy in ("hybrid20/looks_worse", "hybrid20/all"):
        o = res[policy]
        assert o.fail_by(4) <= 0.04
        assert np.all(np.isin(o.end, [0, 1, 2]))
        assert np.all(o.extra >= 0) and np.all(o.extra <= 4)
    # `all` re-runs every case: an open replicate costs one suite per batch, and some pass later.
    al = res["hybrid20/all"]
    assert al.extra.max() == pytest.approx(4.0)
    assert np.any((al.end == 2) & (al.look > 0))
    assert res["naive/all"].fail_by(4) >= res["hybrid20/all"].fail_by(4) - 0.02


def test_a_broken_25_case_slice_is_found_with_more_evidence(sim, tests_cache):
    res, _ = sim.simulate("500", "near-deterministic", "drop", 0.40, 200, seed=4, max_batches=10, tests=tests_cache)
    lw = res["hybrid20/looks_worse"]
    assert lw.found_by(10) >= 0.85
    assert lw.found_by(10) > lw.found_by(0) + 0.3


def test_the_benchmark_prints_power_within_4_batches_per_cell():
    """Power within 4 batches beside the 10 of docs/spec.md#more-evidence: one line per drop cell and model."""
    import subprocess

    done = subprocess.run(
        [sys.executable, str(SIM), "--replicates", "20", "--check", "2", "--layouts", "300"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    block = done.stdout.split("power within 4 batches", 1)[1].split("end-to-end check", 1)[0]
    lines = [line for line in block.splitlines() if "within 4 batches" in line]
    assert len(lines) == 2 * 3  # 300: slices −0.10 and −0.20, three per-case models
    for line in lines:
        within4, within10 = (float(x) for x in re.findall(r"within (?:4 batches|10) (\d\.\d{3})", line))
        assert 0 <= within4 <= within10 <= 1

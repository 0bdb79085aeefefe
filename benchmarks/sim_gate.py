"""Simulations of the gate's decision rule against the SPEC §5 validity targets.

Each replicate draws a baseline and a candidate run from a per-case model and runs them through
``evals.compare.decide`` — the paired tests, the α allocation and the weighted-Holm verdicts that gate
real runs — then ``gate_verdict``. The same tested units are also judged by the first version's
rule (a slice blocks only when its observed MDE at Holm's strictest level is ≤ 0.10; Holm over the
blocking units), so every cell shows the new figure beside the first version's, on the same data.

Per-case models (binary outcomes, one attempt, mean pass rate 0.7):
  independent         every case Bernoulli(0.7) in both runs
  heterogeneous       case difficulty p_i ~ Beta(1.4, 0.6): run-to-run correlation 1/3
  near-deterministic  p_i ~ Beta(0.35, 0.15): correlation 2/3 (most cases always pass or fail)
Layouts: 500 = 20×25, 1000 = 400 + 6×100, 2000 = 10×200, 300 = 3×100 (one slice key).
Scenarios: A/A (nothing changes); null boundary (every case's p scaled so every unit's true drop
is δ = 0.02); one slice drops by 0.05–0.40 (p_i scaled by 1 − drop/0.7), on the largest slice
and on a small one. Power = the gate fails and the dropped slice itself is regressed.

    .venv/bin/python benchmarks/sim_gate.py                    # 400 replicates per cell
    .venv/bin/python benchmarks/sim_gate.py --replicates 100 --layouts 1000
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np

from evals.compare.decide import alpha_weights, assign_verdicts, gate_verdict, paired_tests
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput, Tested, UnitIndex
from evals.compare.stats import holm, mde
from evals.suite.config import GateSpec, MetricSpec

MEAN = 0.7
TOLERANCE = 0.02
MODELS = {"independent": None, "heterogeneous": (1.4, 0.6), "near-deterministic": (0.35, 0.15)}
LAYOUTS = {"500": [25] * 20, "1000": [400] + [100] * 6, "2000": [200] * 10, "300": [100] * 3}
DROPS = (0.05, 0.10, 0.20, 0.30, 0.40)
# The first version's eligibility limit (gate.max_detectable_drop, default 0.10).
FIRST_VERSION_MAX_DROP = 0.10
# SPEC §5 targets: (layout, slice index, drop, model or None for every model) -> minimum power.
# The default gate with the fewest bootstrap resamples allowed: for binary outcomes the p-values
# come from McNemar (< 300 cases) or the paired CLT, so the resamples only set the CI edges
# ("pass" vs "inconclusive"), never whether the gate fails; they are most of the CPU time.
SIM_GATE = GateSpec(bootstrap_resamples=200)
POWER_TARGETS = {("1000", 0, 0.10, "heterogeneous"): 0.70, ("1000", 1, 0.30, None): 0.90, ("2000", 1, 0.20, None): 0.80}


def units_for(sizes: list[int]) -> tuple[list[UnitIndex], np.ndarray]:
    codes = np.repeat(np.arange(len(sizes)), sizes)
    units = [UnitIndex("overall", None, None, None)]
    units += [UnitIndex(f"slice=s{k:02d}", "slice", f"s{k:02d}", np.flatnonzero(codes == k)) for k in range(len(sizes))]
    return units, codes


def draw(model: str, scale: np.ndarray, replicates: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """All replicates at once: (replicates × cases) baseline and candidate outcomes. ``scale``
    multiplies each case's pass probability in the candidate."""
    n = scale.size
    shape = MODELS[model]
    p = np.full((replicates, n), MEAN) if shape is None else rng.beta(*shape, size=(replicates, n))
    base = (rng.random((replicates, n)) < p).astype(float)
    cand = (rng.random((replicates, n)) < p * scale).astype(float)
    return base, cand


def first_version(tested: list[Tested], gate: GateSpec) -> tuple[bool, set[int]]:
    """The first version's rule on the same tested units: overall always blocks; the largest set
    of k slices whose observed MDE at α/(1 + k) is ≤ 0.10 blocks too; Holm over the blocking units.
    Returns (gate fails, indices of blocking regressed units)."""
    slices = [i for i, t in enumerate(tested) if i > 0 and 0.0 < t.se < np.inf]
    se = np.array([tested[i].se for i in slices])
    margin = np.array([tested[i].margin for i in slices])
    chosen: list[int] = []
    for k in range(len(slices), 0, -1):
        mdes = mde(se, gate.alpha / (1 + k), gate.power, margin)
        order = np.argsort(mdes, kind="stable")[:k]
        if mdes[order[-1]] <= FIRST_VERSION_MAX_DROP:
            chosen = [slices[i] for i in order]
            break
    blocking = [0, *chosen]
    adjusted = holm(np.array([tested[i].p_worse for i in blocking]))
    regressed = {
        i
        for i, p in zip(blocking, adjusted, strict=True)
        if p <= gate.alpha and tested[i].oriented_delta < -tested[i].margin
    }
    return bool(regressed), regressed


@dataclass
class Cell:
    fail: float
    found: float  # the dropped slice itself regressed (power runs)
    old_fail: float
    old_found: float
    replicates: int


def run_cell(
    layout: str,
    model: str,
    replicates: int,
    seed: int,
    *,
    scenario: str,
    drop_slice: int = 0,
    drop: float = 0.0,
    gate: GateSpec = SIM_GATE,
) -> Cell:
    sizes = LAYOUTS[layout]
    units, codes = units_for(sizes)
    spec = MetricSpec(tolerance=TOLERANCE)
    definition = metric_def("pass_rate", spec)
    scale = np.ones(codes.size)
    if scenario == "boundary":
        scale[:] = 1 - TOLERANCE / MEAN
    elif scenario == "drop":
        scale[codes == drop_slice] = 1 - drop / MEAN
    kind = ["aa", "boundary", "drop"].index(scenario)
    rng = np.random.default_rng(
        [seed, list(LAYOUTS).index(layout), list(MODELS).index(model), drop_slice, round(drop * 100), kind]
    )
    base, cand = draw(model, scale, replicates, rng)
    fail = found = old_fail = old_found = 0
    target = 1 + drop_slice
    for rep in range(replicates):
        tested = paired_tests([MetricInput(definition, spec, base[rep], cand[rep])], units, gate, seed=rep)
        old, old_regressed = first_version(tested, gate)
        results = [t.result for t in tested]
        assign_verdicts(tested, alpha_weights(results, gate.slice_alpha_share, gate.slice_weights), gate)
        failed = gate_verdict(results)[0] == "fail"
        fail += failed
        found += failed and results[target].verdict == "regressed" and results[target].blocking
        old_fail += old
        old_found += old and target in old_regressed
    return Cell(fail / replicates, found / replicates, old_fail / replicates, old_found / replicates, replicates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=400, help="replicates per cell (default 400)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layouts", nargs="*", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument("--drops", nargs="*", type=float, default=list(DROPS))
    args = parser.parse_args()
    gate = SIM_GATE
    started, cpu0 = time.perf_counter(), os.times()
    print(
        f"gate: alpha={gate.alpha} slice_alpha_share={gate.slice_alpha_share} slice_weights={gate.slice_weights} "
        f"tolerance={TOLERANCE}; {args.replicates} replicates per cell; figures: new rule (first version)"
    )
    misses: list[str] = []
    worst_loss = (0.0, "")
    print(f"\n{'layout':<7} {'model':<19} {'A/A false-fail':>16} {'boundary false-fail':>20}")
    for layout in args.layouts:
        for model in MODELS:
            aa = run_cell(layout, model, args.replicates, args.seed, scenario="aa")
            nb = run_cell(layout, model, args.replicates, args.seed, scenario="boundary")
            print(f"{layout:<7} {model:<19} {aa.fail:>7.3f} ({aa.old_fail:.3f}) {nb.fail:>11.3f} ({nb.old_fail:.3f})")
            if aa.fail > 0.05 or nb.fail > 0.055:
                misses.append(f"false-fail {layout} {model}: A/A {aa.fail:.3f}, boundary {nb.fail:.3f}")
    print("\npower: the gate fails and names the dropped slice — new rule (first version)")
    head = " ".join(f"{d:>15.2f}" for d in args.drops)
    print(f"{'layout':<7} {'slice':<9} {'model':<19} {head}")
    for layout in args.layouts:
        sizes = LAYOUTS[layout]
        for which in (0, 1):
            for model in MODELS:
                cells = [
                    run_cell(layout, model, args.replicates, args.seed, scenario="drop", drop_slice=which, drop=d)
                    for d in args.drops
                ]
                shown = " ".join(f"{c.found:>6.3f} ({c.old_found:.3f})" for c in cells)
                print(f"{layout:<7} {f'{sizes[which]} cases':<9} {model:<19} {shown}")
                for d, c in zip(args.drops, cells, strict=True):
                    loss = c.old_found - c.found
                    if loss > worst_loss[0]:
                        worst_loss = (loss, f"{layout} {sizes[which]}-case slice {model} drop {d:.2f}")
                    for (t_layout, t_slice, t_drop, t_model), minimum in POWER_TARGETS.items():
                        hit = (t_layout, t_slice) == (layout, which) and t_model in (None, model)
                        if hit and abs(d - t_drop) < 1e-9 and c.found < minimum:
                            misses.append(f"power {layout} slice {which} {model} drop {d}: {c.found:.3f} < {minimum}")
    if worst_loss[0] > 0.05:
        misses.append(f"worse than the first version by {worst_loss[0]:.3f}: {worst_loss[1]}")
    print(f"\nlargest loss against the first version: {worst_loss[0]:.3f} {worst_loss[1]}")
    print("SPEC §5 targets: " + ("all met" if not misses else "MISSED: " + "; ".join(misses)))
    cpu = os.times()
    used = cpu.user - cpu0.user + cpu.system - cpu0.system
    print(f"wall {time.perf_counter() - started:.1f} s, CPU (user+sys) {used:.1f} s")


if __name__ == "__main__":
    main()

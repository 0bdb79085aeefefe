"""Size of the p-value of a mean on a small non-binary unit at the null boundary (true drop = δ,
normal per-case deltas N(−δ, 0.15)): the percentile bootstrap's (what such units used before), the
bootstrap-t's (``evals.compare.stats.bootstrap_t_p``, what they use) and the paired t-test's (exact here),
each as a multiple of its level α. 2,000 resamples, as the gate's default. Then the gate itself
(``evals.compare.decide``): 20 slices of 20 cases on a continuous ``score`` (tolerance 0.02), every unit's
true drop at δ, and an A/A run: the share of runs the gate fails; and the same layout gating
``latency_p95_ms`` (lognormal latencies, tolerance 10%), whose percentile bootstrap has no
studentized form: a known limit (docs/decision-rule.md).

    .venv/bin/python benchmarks/sim_small_units.py            # 8,000 runs per cell, 300 gates (~80 s CPU)
    .venv/bin/python benchmarks/sim_small_units.py --runs 20000 --gates 1000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats as sps

from evals.compare import stats

LEVELS = np.array([0.05, 0.01, 0.0025])
DELTA = 0.02


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8000)
    parser.add_argument("--gates", type=int, default=300)
    args = parser.parse_args()
    runs = args.runs
    rng = np.random.default_rng(0)
    started = time.process_time()
    for n in (10, 20, 50):
        percentile, studentized, student = (np.zeros(LEVELS.size) for _ in range(3))
        for _ in range(runs):
            d = rng.normal(-DELTA, 0.15, n)
            means, ses = stats.bootstrap_mean_se(d, 2000, rng)
            se = float(d.std(ddof=1)) / np.sqrt(n)
            percentile += stats.bootstrap_p_worse(means, DELTA)[0] <= LEVELS
            studentized += stats.bootstrap_t_p(means, ses, float(d.mean()), se, DELTA)[0] <= LEVELS
            student += sps.t.cdf((d.mean() + DELTA) / se, n - 1) <= LEVELS
        cells = (
            f"α {a:g}: percentile {p / runs / a:.2f}× bootstrap-t {b / runs / a:.2f}× t {t / runs / a:.2f}×"
            for a, p, b, t in zip(LEVELS, percentile, studentized, student, strict=True)
        )
        print(f"n={n:3d}  " + "  ".join(cells), flush=True)
    print(f"{runs} runs per cell; CPU {time.process_time() - started:.1f} s")
    for shift, name in ((-DELTA, "every unit's true drop at δ"), (0.0, "A/A")):
        share = gate_fails(shift, args.gates)
        print(f"gate, 20 slices × 20 cases, score, {name}: fails in {share:.3f} of {args.gates} runs")
    for slower, name in ((1.10, "every unit's p95 10% slower (the boundary)"), (1.0, "A/A")):
        share = p95_gate_fails(slower, args.gates)
        print(f"gate, 20 slices × 20 cases, latency_p95_ms, {name}: fails in {share:.3f} of {args.gates} runs")


def gate_fails(shift: float, runs: int) -> float:
    from evals.compare.decide import decide, gate_verdict
    from evals.compare.metrics import metric_def
    from evals.compare.paired import MetricInput, UnitIndex
    from evals.suite.gate import GateSpec
    from evals.suite.scoring import MetricSpec

    rng = np.random.default_rng(42)
    codes = np.repeat(np.arange(20), 20)
    units = [UnitIndex("overall", None, None, None)]
    units += [UnitIndex(f"s={j}", "s", str(j), np.flatnonzero(codes == j)) for j in range(20)]
    spec = MetricSpec(tolerance=DELTA)
    fails = 0
    for r in range(runs):
        base = rng.random(codes.size)
        cand = base + shift + rng.normal(0, 0.15, codes.size)
        results = decide([MetricInput(metric_def("score", spec), spec, base, cand)], units, GateSpec(), seed=r)
        fails += gate_verdict(results)[0] == "fail"
    return fails / runs


def p95_gate_fails(slower: float, runs: int) -> float:
    from evals.compare.decide import decide, gate_verdict
    from evals.compare.metrics import metric_def
    from evals.compare.paired import MetricInput, UnitIndex
    from evals.suite.gate import GateSpec
    from evals.suite.scoring import MetricSpec

    rng = np.random.default_rng(7)
    codes = np.repeat(np.arange(20), 20)
    units = [UnitIndex("overall", None, None, None)]
    units += [UnitIndex(f"s={j}", "s", str(j), np.flatnonzero(codes == j)) for j in range(20)]
    spec = MetricSpec(tolerance="10%")
    fails = 0
    for r in range(runs):
        base = rng.lognormal(6, 0.5, codes.size)
        cand = rng.lognormal(6, 0.5, codes.size) * slower
        results = decide([MetricInput(metric_def("latency_p95_ms", spec), spec, base, cand)], units, GateSpec(), seed=r)
        fails += gate_verdict(results)[0] == "fail"
    return fails / runs


if __name__ == "__main__":
    main()

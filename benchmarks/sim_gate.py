"""A/A and power simulations of the gate's decision rule (SPEC §5 validity targets).

Each replicate draws a baseline and a candidate run from the same per-case model (A/A) and runs
them through ``evals.compare.decide`` and ``gate_verdict`` — the code that gates real runs — then
counts how often the gate fails (false failures), passes, or is inconclusive. For contrast it
applies the naive rule "fail if candidate < baseline − tolerance overall or in any slice".

Per-case models (binary outcomes, one attempt, mean pass rate 0.7):
  independent       every case Bernoulli(0.7) in both runs (run-to-run correlation 0)
  heterogeneous     case difficulty p_i ~ Beta(1.4, 0.6): correlation between runs 1/3
  near-determ.      p_i ~ Beta(0.35, 0.15): correlation 2/3 (most cases always pass or always fail)
Layouts (500 cases): 20 slices × 25, and one slice of 100 + 19 slices of ~21.
Power: 500 cases in slices of 400 and 100; the candidate's pass rate on the 400-case slice is
0.10 lower (each p_i scaled by 1 − 0.10/0.7).

    .venv/bin/python benchmarks/sim_gate.py                  # 1,000 replicates per cell
    .venv/bin/python benchmarks/sim_gate.py --replicates 200 --seed 1
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from evals.compare import MetricInput, UnitIndex, decide, gate_verdict
from evals.config import GateSpec, MetricSpec
from evals.metrics import metric_def

MODELS = {"independent": None, "heterogeneous": 1.0 / 3.0, "near-deterministic": 2.0 / 3.0}
MEAN = 0.7


LAYOUTS = {
    "20x25": [25] * 20,
    "100+19x21": [100] + [len(part) for part in np.array_split(np.arange(400), 19)],
    "400+100": [400, 100],
}


def case_probabilities(model: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Per-case pass probabilities whose Beta ICC is the run-to-run correlation of outcomes."""
    rho = MODELS[model]
    if rho is None:
        return np.full(n, MEAN)
    total = 1.0 / rho - 1.0  # ICC of Beta(a, b) is 1 / (a + b + 1)
    return rng.beta(MEAN * total, (1 - MEAN) * total, size=n)


@dataclass
class CellResult:
    layout: str
    model: str
    replicates: int
    fail: float
    passed: float
    inconclusive: float
    naive_fail: float
    blocking_slices: float  # mean number of blocking slices
    target_blocking: float = float("nan")  # power runs: the dropped slice was blocking
    target_regressed: float = float("nan")  # power runs: ... and found regressed


def units_for(sizes: list[int]) -> tuple[list[UnitIndex], np.ndarray]:
    codes = np.repeat(np.arange(len(sizes)), sizes)
    units = [UnitIndex("overall", None, None, None)]
    units += [UnitIndex(f"slice=s{k:02d}", "slice", f"s{k:02d}", np.flatnonzero(codes == k)) for k in range(len(sizes))]
    return units, codes


def run_cell(
    layout_name: str,
    model: str,
    replicates: int,
    seed: int,
    *,
    drop_slice: int | None = None,
    drop: float = 0.10,
    tolerance: float = 0.02,
    gate: GateSpec | None = None,
) -> CellResult:
    gate = gate or GateSpec()
    sizes = LAYOUTS[layout_name]
    units, codes = units_for(sizes)
    spec = MetricSpec(tolerance=tolerance)
    definition = metric_def("pass_rate", spec)
    rng = np.random.default_rng([seed, list(LAYOUTS).index(layout_name), list(MODELS).index(model)])
    counts = {"pass": 0, "fail": 0, "inconclusive": 0}
    naive = found = target_blocking = blocking = 0
    n = len(codes)
    for rep in range(replicates):
        p = case_probabilities(model, n, rng)
        q = p.copy()
        if drop_slice is not None:
            q[codes == drop_slice] *= 1 - drop / MEAN
        base = (rng.random(n) < p).astype(float)
        cand = (rng.random(n) < q).astype(float)
        results = decide([MetricInput(definition, spec, base, cand)], units, gate, seed=rep)
        verdict, _ = gate_verdict(results)
        counts[verdict] += 1
        blocking += sum(1 for u in results if u.blocking and u.unit != "overall")
        if drop_slice is not None:
            target = results[1 + drop_slice]
            target_blocking += target.blocking
            found += target.blocking and target.verdict == "regressed"
        rates_b = np.bincount(codes, base) / sizes
        rates_c = np.bincount(codes, cand) / sizes
        naive += bool(cand.mean() < base.mean() - tolerance or np.any(rates_c < rates_b - tolerance))
    return CellResult(
        layout_name,
        model,
        replicates,
        fail=counts["fail"] / replicates,
        passed=counts["pass"] / replicates,
        inconclusive=counts["inconclusive"] / replicates,
        naive_fail=naive / replicates,
        blocking_slices=blocking / replicates,
        target_blocking=target_blocking / replicates if drop_slice is not None else float("nan"),
        target_regressed=found / replicates if drop_slice is not None else float("nan"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    gate = GateSpec()
    print(
        f"gate: alpha={gate.alpha} power={gate.power} max_detectable_drop={gate.max_detectable_drop} "
        f"tolerance=0.02 bootstrap_resamples={gate.bootstrap_resamples}; {args.replicates} replicates per cell"
    )
    head = f"{'layout':<10} {'model':<19} {'false-fail':>10} {'pass':>6} {'inconcl.':>8}"
    print(f"{head} {'naive fail':>10} {'block sl.':>9}")
    started = time.perf_counter()
    for name in ("20x25", "100+19x21"):
        for model in MODELS:
            r = run_cell(name, model, args.replicates, args.seed, gate=gate)
            print(
                f"{r.layout:<10} {r.model:<19} {r.fail:>10.3f} {r.passed:>6.3f} {r.inconclusive:>8.3f} "
                f"{r.naive_fail:>10.3f} {r.blocking_slices:>9.2f}"
            )
    print("\npower: true drop of 0.10 on a 400-case slice (500 cases: 400 + 100)")
    print(f"{'model':<19} {'gate fails':>10} {'slice blocks':>12} {'slice found':>11} {'found|blocks':>12}")
    for model in MODELS:
        r = run_cell("400+100", model, args.replicates, args.seed, drop_slice=0, gate=gate)
        given = r.target_regressed / r.target_blocking if r.target_blocking else float("nan")
        print(f"{model:<19} {r.fail:>10.3f} {r.target_blocking:>12.3f} {r.target_regressed:>11.3f} {given:>12.3f}")
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()

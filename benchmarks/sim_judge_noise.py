"""What a noisy judge does to the gate, and what ``judge: {repeats: k}`` buys back (docs/spec.md#judge-noise,
docs/decision-rule.md#judge-noise).

Each case's answer is right with a probability drawn per case (the heterogeneous model of
benchmarks/sim_gate.py: p_i ~ Beta(1.4, 0.6), mean 0.7), drawn afresh in each run (a stochastic
target: its outputs differ between runs, so the judge's calls are not cache hits). A judge grades
each answer k times, each verdict independently flipped with probability ``flip`` (10% and 15%: the
range measured for LLM judges, docs/decision-rule.md#judge-noise); the case's verdict is the real
``mean_verdict`` rule of evals.run.scorers.judge (the share of passing verdicts reaches
pass_threshold 0.5) and the gate is the real ``decide`` + ``gate_verdict`` of evals.compare.decide
on the per-case verdicts (layout 1000 = 400 + 6×100, tolerance 0.02, the default gate).

Scenarios: A/A (nothing changes: false fails, and how often the gate can certify a pass) and a
one-slice drop of the answers' true pass rate (p_i scaled by 1 − drop/0.7): 0.10 on the 400-case
slice, 0.30 on a 100-case slice. Power = the gate fails and names the dropped slice.

Independent flips are the case repeats help most: a judge that is wrong about an output the same
way every time (a rubric it misreads) is not helped by repeats at all; its agreement with people
(docs/spec.md#human-labels) is what shows that.

    nice -n 15 .venv/bin/python benchmarks/sim_judge_noise.py --replicates 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evals.compare.decide import decide, gate_verdict
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput, UnitIndex
from evals.run.scorers.judge import mean_verdict
from evals.suite.gate import GateSpec
from evals.suite.scoring import MetricSpec

MEAN, SHAPE, TOLERANCE, THRESHOLD = 0.7, (1.4, 0.6), 0.02, 0.5
SIZES = [400] + [100] * 6
FLIPS = (0.0, 0.10, 0.15)
REPEATS = (1, 3, 5)
SCENARIOS = {"A/A": None, "400-case slice −0.10": (0, 0.10), "100-case slice −0.30": (1, 0.30)}
GATE = GateSpec(bootstrap_resamples=200)  # binary units: McNemar / CLT decide; resamples set only CI edges


def units() -> list[UnitIndex]:
    codes = np.repeat(np.arange(len(SIZES)), SIZES)
    found = [UnitIndex("overall", None, None, None)]
    return found + [UnitIndex(f"slice=s{k}", "slice", f"s{k}", np.flatnonzero(codes == k)) for k in range(len(SIZES))]


def judged(right: np.ndarray, flip: float, k: int, rng: np.random.Generator) -> np.ndarray:
    """Each answer judged ``k`` times, each verdict wrong with probability ``flip``; the case's
    verdict by the judge's own rule."""
    wrong = rng.random((right.size, k)) < flip
    passes = (right[:, None] != wrong).sum(axis=1)
    return mean_verdict(passes, k, THRESHOLD).astype(float)


def cell(scenario: tuple[int, float] | None, flip: float, k: int, replicates: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    layout = units()
    definition, spec = metric_def("pass_rate"), MetricSpec(tolerance=TOLERANCE)
    n = sum(SIZES)
    fails = found = passes = 0
    for rep in range(replicates):
        p = rng.beta(*SHAPE, size=n)
        scale = np.ones(n)
        if scenario is not None:
            index, drop = scenario
            rows = layout[1 + index].rows
            assert rows is not None
            scale[rows] = 1.0 - drop / MEAN
        base = judged(rng.random(n) < p, flip, k, rng)
        cand = judged(rng.random(n) < p * scale, flip, k, rng)
        results = decide([MetricInput(definition, spec, base, cand)], layout, GATE, seed=rep)
        verdict = gate_verdict(results)[0]
        fails += verdict == "fail"
        passes += verdict == "pass"
        if scenario is not None:
            found += verdict == "fail" and results[1 + scenario[0]].verdict == "regressed"
    return {"fail": fails / replicates, "found": found / replicates, "pass": passes / replicates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=2000, help="replicates per cell")
    parser.add_argument("--seed", type=int, default=36)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"layout 400 + 6×100, heterogeneous cases, tolerance {TOLERANCE}, {args.replicates:,} replicates a cell\n")
    drops = [name for name, scenario in SCENARIOS.items() if scenario is not None]
    print("| judge flips | repeats | A/A false fail | A/A pass | " + " | ".join(f"power: {s}" for s in drops) + " |")
    print("|---|--:|--:|--:|" + "--:|" * len(drops))
    for f_index, flip in enumerate(FLIPS):
        for k in REPEATS if flip else (1,):
            seed = args.seed + 100 * f_index + k
            aa = cell(None, flip, k, args.replicates, seed)
            powers = [
                cell(SCENARIOS[name], flip, k, args.replicates, seed + 10 * (i + 1))["found"]
                for i, name in enumerate(drops)
            ]
            row = [f"{flip:.0%}", str(k), f"{aa['fail']:.3f}", f"{aa['pass']:.3f}", *(f"{x:.3f}" for x in powers)]
            print("| " + " | ".join(row) + " |", flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

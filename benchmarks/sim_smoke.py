"""The informative smoke subset against today's stratified draw (docs/spec.md#informative-smoke), with the real code.

Each replicate draws a suite's per-case pass probabilities from one of the three per-case models of
docs/spec.md#validity-targets (independent p = 0.7; heterogeneous Beta(1.4, 0.6); near-deterministic Beta(0.35, 0.15)),
a synthetic history of ``--runs`` (default 20) whole runs of it, a baseline run and a candidate run (A/A: the same
probabilities; drop: one slice's probabilities scaled by ``1 − drop/0.7``, as in ``benchmarks/sim_gate.py``). Both smoke
subsets of the same size are drawn by ``evals.run.smoke`` (``smoke_subset``: per_slice_min per slice, then seeded ranks;
``informative_subset``: Neyman-allocated strata of the history), seeded per replicate, and gated by
``evals.compare.decide.decide`` + ``gate_verdict`` on the subset's paired cases — the informative one with its design
(``evals.compare.sampling.Strata``: the stratified Horvitz–Thompson test), the stratified one unweighted, exactly as
``evalgate compare`` treats them. Printed per layout × model: A/A false fails (the gate fails), power (the gate fails
and names the dropped slice), and the bias of the slice estimates — the mean over replicates and slices of (subset's
estimate of a slice's delta − the full suite's delta in the same runs), with its standard error.

Layouts (one slice key): 1000 = 400 + 6×100 with smoke 100 (per_slice_min 5), 500 = 20×25 with
smoke 50 (per_slice_min 2, so both draws take 50). The drop is on slice s01 (100 cases; 25 on 500).

    .venv/bin/python benchmarks/sim_smoke.py                       # 2,000 replicates a cell
    .venv/bin/python benchmarks/sim_smoke.py --replicates 200 --layouts 1000 --models heterogeneous
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np

from evals.compare.decide import decide, gate_verdict
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput, UnitIndex
from evals.compare.sampling import Strata
from evals.run.smoke import CaseHistory, informative_subset, smoke_subset
from evals.suite.cases import Case
from evals.suite.config import GateSpec, MetricSpec, SmokeSpec

MEAN = 0.7
TOLERANCE = 0.02
MODELS = {"independent": None, "heterogeneous": (1.4, 0.6), "near-deterministic": (0.35, 0.15)}
# layout -> (slice sizes, smoke cases, per_slice_min giving exactly that many in the stratified draw)
LAYOUTS = {"1000": ([400] + [100] * 6, 100, 5), "500": ([25] * 20, 50, 2)}
DROP_SLICE = 1
# As in sim_gate: for binary outcomes the resamples only set CI edges, never whether the gate fails.
SIM_GATE = GateSpec(bootstrap_resamples=200)
SELECTS = ("stratified", "informative")


@dataclass
class Tally:
    fails: int = 0
    found: int = 0
    replicates: int = 0
    errors: list[float] = field(default_factory=list)  # subset's slice delta − full suite's, per slice

    def bias(self) -> tuple[float, float]:
        e = np.array(self.errors)
        return float(e.mean()), float(e.std(ddof=1) / np.sqrt(e.size))


def suite(sizes: list[int]) -> tuple[list[Case], np.ndarray]:
    codes = np.repeat(np.arange(len(sizes)), sizes)
    cases = [Case(id=f"c{i:05d}", input=i, tags={"slice": f"s{k:02d}"}) for i, k in enumerate(codes)]
    return cases, codes


def probabilities(model: str, n: int, rng: np.random.Generator) -> np.ndarray:
    shape = MODELS[model]
    return np.full(n, MEAN) if shape is None else rng.beta(*shape, size=n)


def gate(
    base: np.ndarray, cand: np.ndarray, rows: np.ndarray, codes: np.ndarray, strata: Strata | None
) -> tuple[bool, bool, dict[int, float]]:
    """(gate failed, dropped slice regressed, each slice's estimated delta) on the subset ``rows``."""
    spec = MetricSpec(tolerance=TOLERANCE)
    metric = MetricInput(metric_def("pass_rate", spec), spec, base[rows], cand[rows])
    sub = codes[rows]
    units = [UnitIndex("overall", None, None, None)]
    units += [UnitIndex(f"slice=s{k:02d}", "slice", f"s{k:02d}", np.flatnonzero(sub == k)) for k in np.unique(sub)]
    results = decide([metric], units, SIM_GATE, strata=strata)
    verdict, _ = gate_verdict(results)
    dropped = f"slice=s{DROP_SLICE:02d}"
    found = any(u.unit == dropped and u.verdict == "regressed" and u.blocking for u in results)
    deltas = {int(u.slice_value[1:]): float(u.delta) for u in results if u.slice_value is not None}
    return verdict == "fail", verdict == "fail" and found, deltas


def run_cell(layout: str, model: str, drop: float, replicates: int, runs: int, seed: int) -> dict[str, Tally]:
    sizes, smoke, per_slice_min = LAYOUTS[layout]
    cases, codes = suite(sizes)
    index = {c.id: i for i, c in enumerate(cases)}
    tallies = {name: Tally() for name in SELECTS}
    rng = np.random.default_rng([seed, len(sizes), int(drop * 100), list(MODELS).index(model)])
    scale = np.where(codes == DROP_SLICE, 1.0 - drop / MEAN, 1.0)
    for r in range(replicates):
        p = probabilities(model, codes.size, rng)
        past = (rng.random((runs, codes.size)) < p).astype(float)
        base = (rng.random(codes.size) < p).astype(float)
        cand = (rng.random(codes.size) < p * scale).astype(float)
        history = CaseHistory(runs, {c.id: past[:, i].tolist() for i, c in enumerate(cases)})
        spec = SmokeSpec(cases=smoke, per_slice_min=per_slice_min, seed=seed * 1_000_003 + r)
        truth = {k: float((cand - base)[codes == k].mean()) for k in range(len(sizes))}
        for name in SELECTS:
            if name == "informative":
                draw = informative_subset(cases, spec, ["slice"], history)
                chosen = draw.cases
                strata = Strata.of(draw.sample, [c.id for c in chosen])
            else:
                chosen, strata = smoke_subset(cases, spec, ["slice"]), None
            rows = np.array([index[c.id] for c in chosen], dtype=np.intp)
            failed, found, deltas = gate(base, cand, rows, codes, strata)
            tally = tallies[name]
            tally.replicates += 1
            tally.fails += failed
            tally.found += found
            tally.errors.extend(deltas[k] - truth[k] for k in deltas)
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=2_000, help="per cell (default 2,000)")
    parser.add_argument("--runs", type=int, default=20, help="whole runs in the synthetic history (default 20)")
    parser.add_argument("--drop", type=float, default=0.30, help="the dropped slice's drop (default 0.30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layouts", nargs="*", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    started = time.perf_counter()
    print(
        f"smoke subsets at equal size, {args.replicates} replicates a cell, history of {args.runs} runs, "
        f"one-slice drop {args.drop:.2f} on s{DROP_SLICE:02d}, tolerance {TOLERANCE}, default gate"
    )
    header = f"{'layout':>6} {'model':<19} {'select':<12} {'A/A fail':>9} {'power':>7} {'bias (A/A, ±SE)':>20}"
    print(header)
    for layout in args.layouts:
        sizes, smoke, _ = LAYOUTS[layout]
        for model in args.models:
            null = run_cell(layout, model, 0.0, args.replicates, args.runs, args.seed)
            drop = run_cell(layout, model, args.drop, args.replicates, args.runs, args.seed + 1)
            for name in SELECTS:
                aa, dd = null[name], drop[name]
                bias, se = aa.bias()
                print(
                    f"{layout:>6} {model:<19} {name:<12} {aa.fails / aa.replicates:>9.3f} "
                    f"{dd.found / dd.replicates:>7.3f} {bias:>+11.4f} ±{se:.4f}"
                )
            found = drop["informative"].found, drop["stratified"].found
            ratio = f"{found[0] / found[1]:.2f}×" if found[1] else f"n/a (stratified found it {found[1]} times)"
            dbias, dse = drop["informative"].bias()
            print(
                f"{'':>6} {'':<19} informative/stratified power {ratio}; "
                f"informative bias under the drop {dbias:+.4f} ±{dse:.4f} (smoke {smoke} of {sum(sizes)})"
            )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

"""The informative smoke subset against today's stratified draw (docs/spec.md#informative-smoke), with the real code.

Each suite draw takes a suite's per-case pass probabilities from one of the three per-case models of
docs/spec.md#validity-targets (independent p = 0.7; heterogeneous Beta(1.4, 0.6); near-deterministic Beta(0.35, 0.15))
and a synthetic history of ``--runs`` (default 20) whole runs. Both smoke subsets of the same size are drawn from it
by ``evals.run.smoke`` (``smoke_subset``: per_slice_min per slice, then seeded ranks; ``informative_subset``:
Neyman-allocated strata of the history), seeded per suite draw. Then ``--inner`` (default 50) replicates of a baseline
run and a candidate run (A/A: the same probabilities; drop: one slice's probabilities scaled by ``1 − drop/0.7``, as
in ``benchmarks/sim_gate.py``) are gated on each subset's paired cases: the informative one by
``evals.compare.sampling.stratified_tests`` (the stratified Horvitz–Thompson test ``decide`` runs on a smoke run with
a design, here vectorised over the replicates), the stratified one by ``evals.compare.paired.paired_test`` of each
distinct (n, b, c) (binary deltas: the counts fix the test), and both through the gate's α weights
(``decide.alpha_weights``, from the units' case counts) and ``stats.weighted_holm``. ``--check`` replicates a cell
also go end to end through ``decide`` + ``gate_verdict`` on case arrays; every disagreement is counted and printed (it
must be 0).

Printed per layout × model: A/A false fails (the gate fails), power (the gate fails and names the dropped slice), the
bias of the slice estimates — the mean over replicates and slices of (subset's estimate of a slice's delta − the full
suite's delta in the same runs), with its standard error — and the replicate counts. Then the **stale history** cells:
the history was recorded from a target *less* noisy than today's, each case's run-to-run variance ``2p(1 − p)`` in the
history being ``--stale`` (default ½ and ¼) of today's (same side of ½: a case that passed 88% of the history's runs
passes 70% today at ½), A/A and the drop, informative draw only (the stratified draw never reads the history).

Layouts (one slice key): 1000 = 400 + 6×100 with smoke 100 (per_slice_min 5), 500 = 20×25 with
smoke 50 (per_slice_min 2, so both draws take 50). The drop is on slice s01 (100 cases; 25 on 500).

    nice -n 5 .venv/bin/python benchmarks/sim_smoke.py                       # 10,000 replicates a cell
    .venv/bin/python benchmarks/sim_smoke.py --replicates 400 --layouts 1000 --models heterogeneous
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np

from evals.compare.decide import alpha_weights, decide, gate_verdict
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput, UnitIndex, paired_test
from evals.compare.sampling import Strata, stratified_estimates, stratified_tests
from evals.compare.stats import weighted_holm
from evals.run.smoke import CaseHistory, informative_subset, smoke_subset
from evals.suite.cases import Case
from evals.suite.config import SmokeSpec
from evals.suite.gate import GateSpec
from evals.suite.scoring import MetricSpec

MEAN = 0.7
TOLERANCE = 0.02
SPEC = MetricSpec(tolerance=TOLERANCE)
MODELS = {"independent": None, "heterogeneous": (1.4, 0.6), "near-deterministic": (0.35, 0.15)}
# layout -> (slice sizes, smoke cases, per_slice_min giving exactly that many in the stratified draw)
LAYOUTS = {"1000": ([400] + [100] * 6, 100, 5), "500": ([25] * 20, 50, 2)}
DROP_SLICE = 1
# As in sim_gate: for binary outcomes the resamples only set CI edges, never whether the gate fails.
SIM_GATE = GateSpec(bootstrap_resamples=200)
SELECTS = ("stratified", "informative")


@dataclass(frozen=True)
class UnitDesign:
    """What ``alpha_weights`` reads of a unit: its design, not its outcomes."""

    slice_key: str | None
    n: int
    metric: str = "pass_rate"
    gated: bool = True


@dataclass
class Tally:
    fails: int = 0
    found: int = 0
    replicates: int = 0
    checked: int = 0
    mismatches: int = 0
    errors: list[np.ndarray] = field(default_factory=list)  # subset's slice delta − full suite's, per slice

    def bias(self) -> tuple[float, float]:
        e = np.concatenate(self.errors)
        return float(e.mean()), float(e.std(ddof=1) / np.sqrt(e.size))


def suite(sizes: list[int]) -> tuple[list[Case], np.ndarray]:
    codes = np.repeat(np.arange(len(sizes)), sizes)
    cases = [Case(id=f"c{i:05d}", input=i, tags={"slice": f"s{k:02d}"}) for i, k in enumerate(codes)]
    return cases, codes


def probabilities(model: str, n: int, rng: np.random.Generator) -> np.ndarray:
    shape = MODELS[model]
    return np.full(n, MEAN) if shape is None else rng.beta(*shape, size=n)


def stale(p: np.ndarray, share: float) -> np.ndarray:
    """Pass probabilities whose Bernoulli variance is ``share`` of ``p``'s, on the same side of ½."""
    calm = (1.0 - np.sqrt(np.clip(1.0 - 4.0 * share * p * (1.0 - p), 0.0, 1.0))) / 2.0
    return np.where(p < 0.5, calm, 1.0 - calm)


def units_of(codes: np.ndarray) -> list[UnitIndex]:
    units = [UnitIndex("overall", None, None, None)]
    units += [UnitIndex(f"slice=s{k:02d}", "slice", f"s{k:02d}", np.flatnonzero(codes == k)) for k in np.unique(codes)]
    return units


def gate(
    base: np.ndarray, cand: np.ndarray, rows: np.ndarray, codes: np.ndarray, strata: Strata | None
) -> tuple[bool, bool]:
    """End to end: (gate failed, dropped slice regressed) by ``decide`` + ``gate_verdict`` on the subset ``rows``."""
    metric = MetricInput(metric_def("pass_rate", SPEC), SPEC, base[rows], cand[rows])
    results = decide([metric], units_of(codes[rows]), SIM_GATE, strata=strata)
    verdict, _ = gate_verdict(results)
    dropped = f"slice=s{DROP_SLICE:02d}"
    found = any(u.unit == dropped and u.verdict == "regressed" and u.blocking for u in results)
    return verdict == "fail", verdict == "fail" and found


class CountTests:
    """``paired_test`` of each distinct (n, b, c) of the unweighted path, computed once: p_worse,
    oriented delta and margin. Binary deltas: the counts fix the test's inputs exactly."""

    def __init__(self) -> None:
        self.cache: dict[tuple[int, int, int], tuple[float, float, float]] = {}

    def __call__(self, n: int, b: int, c: int) -> tuple[float, float, float]:
        key = (n, b, c)
        if key not in self.cache:
            base, cand = np.ones(n), np.ones(n)
            cand[:b] = 0.0
            base[b : b + c] = 0.0
            metric = MetricInput(metric_def("pass_rate", SPEC), SPEC, base, cand)
            t = paired_test(metric, UnitIndex("u", None, None, None), SIM_GATE, np.random.default_rng(0))
            self.cache[key] = (t.p_worse, t.oriented_delta, t.margin) if n >= 2 else (1.0, 0.0, t.margin)
        return self.cache[key]


COUNTS = CountTests()


def unit_tests(
    base: np.ndarray, cand: np.ndarray, units: list[UnitIndex], strata: Strata | None, counts: CountTests
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """p_worse, oriented delta and margin of every unit (columns) for every replicate (rows) of the subset's
    paired outcomes ``base``/``cand`` (replicates × subset rows)."""
    shape = (base.shape[0], len(units))
    p, delta, margin = np.ones(shape), np.zeros(shape), np.zeros(shape)
    for j, unit in enumerate(units):
        rows = np.arange(base.shape[1]) if unit.rows is None else unit.rows
        b, c = base[:, rows], cand[:, rows]
        if strata is not None:
            if rows.size < 2:
                continue
            part = strata.rows(rows)
            band = np.vectorize(SPEC.band)(stratified_estimates(b, part).mean)
            est, p[:, j], _ = stratified_tests(c - b, part, band)
            delta[:, j], margin[:, j] = est.mean, band
        else:
            worse, better = ((b > c).sum(axis=1), (c > b).sum(axis=1))
            for r in range(shape[0]):
                p[r, j], delta[r, j], margin[r, j] = counts(rows.size, int(worse[r]), int(better[r]))
    return p, delta, margin


def run_cell(
    layout: str,
    model: str,
    drop: float,
    args: argparse.Namespace,
    seed: int,
    share: float = 1.0,
    selects: tuple[str, ...] = SELECTS,
) -> dict[str, Tally]:
    sizes, smoke, per_slice_min = LAYOUTS[layout]
    cases, codes = suite(sizes)
    index = {c.id: i for i, c in enumerate(cases)}
    tallies = {name: Tally() for name in selects}
    rng = np.random.default_rng([seed, len(sizes), int(drop * 100), list(MODELS).index(model), int(share * 100)])
    scale = np.where(codes == DROP_SLICE, 1.0 - drop / MEAN, 1.0)
    dropped = 1 + DROP_SLICE  # the dropped slice's unit (after overall)
    draws = -(-args.replicates // args.inner)
    for s in range(draws):
        inner = min(args.inner, args.replicates - s * args.inner)
        p = probabilities(model, codes.size, rng)
        past = (rng.random((args.runs, codes.size)) < stale(p, share)).astype(float)
        base = (rng.random((inner, codes.size)) < p).astype(float)
        cand = (rng.random((inner, codes.size)) < p * scale).astype(float)
        history = CaseHistory(args.runs, {c.id: past[:, i].tolist() for i, c in enumerate(cases)})
        spec = SmokeSpec(cases=smoke, per_slice_min=per_slice_min, seed=seed * 1_000_003 + s)
        truth = np.stack([(cand - base)[:, codes == k].mean(axis=1) for k in range(len(sizes))], axis=1)
        for name in selects:
            strata: Strata | None
            if name == "informative":
                draw = informative_subset(cases, spec, ["slice"], history)
                assert draw.sample is not None
                chosen = draw.cases
                strata = Strata.of(draw.sample, [c.id for c in chosen])
            else:
                chosen, strata = smoke_subset(cases, spec, ["slice"]), None
            rows = np.array([index[c.id] for c in chosen], dtype=np.intp)
            units = units_of(codes[rows])
            designs = [UnitDesign(u.key, rows.size if u.rows is None else u.rows.size) for u in units]
            weights = alpha_weights(designs, SIM_GATE.slice_alpha_share, SIM_GATE.slice_weights)
            pw, delta, margin = unit_tests(base[:, rows], cand[:, rows], units, strata, COUNTS)
            adjusted = np.stack([weighted_holm(row, weights) for row in pw])
            regressed = (adjusted <= SIM_GATE.alpha) & (delta < -margin) & (weights > 0)
            failed = regressed.any(axis=1)
            found = failed & regressed[:, dropped]
            tally = tallies[name]
            tally.replicates += inner
            tally.fails += int(failed.sum())
            tally.found += int(found.sum())
            slices = [int(u.value[1:]) for u in units[1:] if u.value is not None]
            tally.errors.append((delta[:, 1:] - truth[:, slices]).ravel())
            if s < args.check:
                tally.checked += 1
                end_to_end = gate(base[0], cand[0], rows, codes, strata)
                tally.mismatches += end_to_end != (bool(failed[0]), bool(found[0]))
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=10_000, help="per cell (default 10,000)")
    parser.add_argument("--inner", type=int, default=50, help="replicates per suite draw (default 50)")
    parser.add_argument("--check", type=int, default=100, help="replicates a cell run end to end (default 100)")
    parser.add_argument("--runs", type=int, default=20, help="whole runs in the synthetic history (default 20)")
    parser.add_argument("--drop", type=float, default=0.30, help="the dropped slice's drop (default 0.30)")
    parser.add_argument("--stale", type=float, nargs="*", default=[0.5, 0.25], help="history variance / today's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layouts", nargs="*", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    started = time.perf_counter()
    print(
        f"smoke subsets at equal size, {args.replicates:,} replicates a cell ({args.inner} per suite draw), history "
        f"of {args.runs} runs, one-slice drop {args.drop:.2f} on s{DROP_SLICE:02d}, tolerance {TOLERANCE}, default gate"
    )
    print(
        f"{'layout':>6} {'model':<19} {'select':<12} {'A/A fail':>9} {'power':>7} {'bias (A/A, ±SE)':>20} {'reps':>13}"
    )
    checked = mismatched = 0
    for layout in args.layouts:
        sizes, smoke, _ = LAYOUTS[layout]
        for model in args.models:
            null = run_cell(layout, model, 0.0, args, args.seed)
            drop = run_cell(layout, model, args.drop, args, args.seed + 1)
            for name in SELECTS:
                aa, dd = null[name], drop[name]
                bias, se = aa.bias()
                checked += aa.checked + dd.checked
                mismatched += aa.mismatches + dd.mismatches
                print(
                    f"{layout:>6} {model:<19} {name:<12} {aa.fails / aa.replicates:>9.4f} "
                    f"{dd.found / dd.replicates:>7.3f} {bias:>+11.4f} ±{se:.4f} {aa.replicates:>6}+{dd.replicates}"
                )
            found = drop["informative"].found, drop["stratified"].found
            ratio = f"{found[0] / found[1]:.2f}×" if found[1] else f"n/a (stratified found it {found[1]} times)"
            dbias, dse = drop["informative"].bias()
            print(
                f"{'':>6} {'':<19} informative/stratified power {ratio}; "
                f"informative bias under the drop {dbias:+.4f} ±{dse:.4f} (smoke {smoke} of {sum(sizes)})"
            )
    if args.stale:
        print("stale history (its per-case variance a share of today's), informative draw")
        print(f"{'layout':>6} {'model':<19} {'share':>6} {'A/A fail':>9} {'power':>7} {'reps':>13}")
    for layout in args.layouts:
        for model in args.models:
            for share in args.stale:
                aa = run_cell(layout, model, 0.0, args, args.seed, share, ("informative",))["informative"]
                dd = run_cell(layout, model, args.drop, args, args.seed + 1, share, ("informative",))["informative"]
                checked += aa.checked + dd.checked
                mismatched += aa.mismatches + dd.mismatches
                print(
                    f"{layout:>6} {model:<19} {share:>6.2f} {aa.fails / aa.replicates:>9.4f} "
                    f"{dd.found / dd.replicates:>7.3f} {aa.replicates:>6}+{dd.replicates}"
                )
    print(f"end-to-end check: {checked:,} replicates through decide/gate_verdict, {mismatched} disagreements")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

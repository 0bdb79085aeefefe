"""Simulation of "more evidence" (docs/spec.md#more-evidence) with the real code: look 0 is the gate's
fixed-sample rule (``evals.compare.paired`` through ``benchmarks/sim_gate.py``'s count tables,
``evals.compare.decide.alpha_weights``); every later look is ``evals.compare.evidence.drop_test``
(the t-test on per-case means) at ``evals.compare.evidence.look_levels``, merged by weighted Holm
(``sim_gate.weighted_holm_rows``, the row-wise ``evals.compare.stats.weighted_holm``).

The procedure simulated (the one the product implements), gate α = 0.05, ρ = 0.2, K = 10 batches:

- **Look 0**: the fixed-sample rule at (1 − ρ)·α = 0.04 (mid-p McNemar / paired CLT per unit,
  weighted Holm, pass when nothing regressed and overall's interval stays within −δ).
- **Selection** (``looks_worse``, the default): the slices whose observed drop (per-case means so
  far) is beyond δ and whose earlier re-runs did not all repeat the first look; ``all``: every
  case. A batch is one more attempt of each selected case on BOTH sides.
- **A batch that repeats the first look** on both sides for every re-run case ends the batches
  with no look ("the target answered the same"); a slice whose re-runs all repeated is not
  selected again.
- **Look k ≥ 1**: every unit holding a re-run case is tested by the t-test on its per-case means
  (n = its case count) at level α_k (the Lan–DeMets Pocock-type share of ρ·α), weighted Holm with
  the gate's weights; a rejected unit whose mean drop is beyond δ fails the gate. Pass: overall's
  opposite test ("the drop is at least δ") rejects at α_k.

Per-case models (mean pass rate 0.7, from sim_gate): independent p = 0.7, heterogeneous
Beta(1.4, 0.6), near-deterministic Beta(0.35, 0.15); each case's p_i is fixed within a replicate
(re-runs are attempts of the same cases). Scenarios, each on both sides unless said:

- ``aa``: nothing changes.  ``boundary``: the candidate's p_i scaled by 1 − δ/0.7 (true drop δ).
- ``det-neutral``: a deterministic target (temperature 0, a seeded bot): each side's answer per
  case is drawn once (Bernoulli(p_i), independently per side: cases flip both ways, neutral
  overall) and every re-run repeats it.  ``det-boundary``: the same at the boundary.
- ``redraw-once`` / ``redraw-look``: a stochastic change with equal mean per slice that only
  redraws which cases are hard: the candidate's p_i is a draw from the model independent of the
  baseline's, once (fixed over the looks), or afresh at every look — a batch is one attempt a
  case, so that is every attempt too; the baseline's p_i stays fixed.
- ``drop``: slice 0 down by the given drop (p_i scaled by 1 − drop/0.7).

Cost: extra attempts counted once per side they run on, as a multiple of the first look's
attempts on both sides (2 × the suite). ``later looks`` = the false fails the looks after the
first add (their bound is ρ·α = 0.01 by the union bound: the size of the t-test at the tiny levels,
checked). ``--check`` replicates per cell also run look 0 end to end through ``decide`` /
``gate_verdict`` at α = 0.04 (disagreements must be 0).

    .venv/bin/python benchmarks/sim_evidence.py                                  # 10,000 replicates a cell
    .venv/bin/python benchmarks/sim_evidence.py --replicates 500 --layouts 500
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_gate import LAYOUTS, MEAN, MODELS, TOLERANCE, case_arrays, scales_for, units_for, weighted_holm_rows

from evals.compare.decide import alpha_weights, decide, gate_verdict, paired_tests
from evals.compare.evidence import drop_test, look_levels
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput, UnitIndex
from evals.suite.gate import GateSpec
from evals.suite.scoring import MetricSpec

ALPHA, RHO = 0.05, 0.2
MAX_BATCHES = 10
SIM_LAYOUTS = ("500", "300", "1000")
NULLS = ("aa", "boundary", "det-neutral", "det-boundary", "redraw-once", "redraw-look")
POLICIES = ("looks_worse", "all")
# False-fail limits over every look; det-neutral's is look 0's own rate + 0.01 (set per cell).
LIMITS = {"aa": 0.05, "boundary": 0.055, "det-boundary": 0.055, "redraw-once": 0.05, "redraw-look": 0.05}
POWER_TARGET = ("500", 0.30, 0.85)  # a 25-case slice's −0.30 within 10 batches, every model


class CountTests:
    """``paired_test`` of each distinct (n, b, c) under one gate, computed once (binary pairs:
    the counts fix the test's inputs): p_worse, oriented delta and the bad end of overall's
    interval (the lower of the reported and the smoothed one, as ``decide.bad_side``)."""

    def __init__(self, gate: GateSpec):
        self.gate = gate
        self.spec = MetricSpec(tolerance=TOLERANCE)
        self.definition = metric_def("pass_rate", self.spec)
        self.cache: dict[tuple[int, int, int], tuple[float, float, float]] = {}

    def lookup(self, n: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n, b, c = np.broadcast_arrays(np.asarray(n, dtype=np.int64), np.asarray(b), np.asarray(c))
        keys, inverse = np.unique(np.stack([n.ravel(), b.ravel(), c.ravel()], axis=1), axis=0, return_inverse=True)
        whole = UnitIndex("overall", None, None, None)
        rows = np.empty((len(keys), 3))
        for i, (ni, bi, ci) in enumerate(keys.tolist()):
            got = self.cache.get((ni, bi, ci))
            if got is None:
                base, cand = case_arrays(ni, bi, ci)
                t = paired_tests([MetricInput(self.definition, self.spec, base, cand)], [whole], self.gate, seed=0)[0]
                got = (t.p_worse, t.oriented_delta, min(t.oriented_low, t.smoothed_low))
                self.cache[(ni, bi, ci)] = got
            rows[i] = got
        out = rows[inverse.ravel()].reshape(*n.shape, 3)
        return out[..., 0], out[..., 1], out[..., 2]


def gate_weights(sizes: list[int]) -> np.ndarray:
    spec = MetricSpec(tolerance=TOLERANCE)
    design = [
        t.result
        for t in paired_tests(
            [MetricInput(metric_def("pass_rate", spec), spec, *case_arrays(sum(sizes), 0, 0))],
            units_for(sizes),
            GateSpec(bootstrap_resamples=200),
            seed=0,
        )
    ]
    gate = GateSpec()
    return alpha_weights(design, gate.slice_alpha_share, gate.slice_weights)


@dataclass
class Outcome:
    """Per replicate: the end (0 inconclusive, 1 fail, 2 pass), the look it ended at, whether the
    dropped slice was named, the extra attempts (both sides) and whether a repeated batch stopped it."""

    end: np.ndarray
    look: np.ndarray
    named: np.ndarray
    extra: np.ndarray
    repeated: np.ndarray

    def fail_by(self, t: int) -> float:
        return float(np.mean((self.end == 1) & (self.look <= t)))

    def found_by(self, t: int) -> float:
        return float(np.mean((self.end == 1) & self.named & (self.look <= t)))


def _unit_sums(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """replicates × cases → replicates × (overall + slices)."""
    per_slice = np.add.reduceat(x, starts, axis=1)
    return np.concatenate([per_slice.sum(axis=1, keepdims=True), per_slice], axis=1)


def _draw_p(rng: np.random.Generator, model: str, shape: tuple[int, ...]) -> np.ndarray:
    beta = MODELS[model]
    return np.full(shape, MEAN) if beta is None else rng.beta(*beta, size=shape)


def simulate(
    layout: str,
    model: str,
    scenario: str,
    drop: float,
    replicates: int,
    seed: int,
    *,
    max_batches: int = MAX_BATCHES,
    policies: tuple[str, ...] = POLICIES,
    tests: dict[float, CountTests] | None = None,
    check: int = 0,
) -> tuple[dict[str, Outcome], int]:
    """One cell: every policy from the same look-0 draws. Returns the outcomes and the number of
    look-0 disagreements with ``decide``/``gate_verdict`` over ``check`` replicates."""
    sizes = LAYOUTS[layout]
    tests = tests if tests is not None else {}
    first = tests.setdefault(round((1 - RHO) * ALPHA, 6), CountTests(GateSpec(alpha=(1 - RHO) * ALPHA)))
    weights = gate_weights(sizes)
    n_cases = sum(sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    slice_of = np.repeat(np.arange(len(sizes)), sizes)
    unit_n = np.array([n_cases, *sizes], dtype=float)
    target = 1  # slice 0 (unit 1) is the dropped one
    kinds = [*NULLS, "drop"]
    rng = np.random.default_rng(
        [seed, list(LAYOUTS).index(layout), list(MODELS).index(model), kinds.index(scenario), round(drop * 100)]
    )
    shape = (replicates, n_cases)
    p = _draw_p(rng, model, shape)
    deterministic = scenario.startswith("det-")
    redraw = scenario.startswith("redraw-")
    base_scenario = "boundary" if scenario.endswith("boundary") else "drop" if scenario == "drop" else "aa"
    scale = np.array(scales_for(sizes, base_scenario, 0, drop))[slice_of]
    q = p * scale
    q0 = _draw_p(rng, model, shape) if redraw else q
    base0 = rng.random(shape) < p
    cand0 = rng.random(shape) < q0
    b0 = _unit_sums(base0 & ~cand0, starts)
    c0 = _unit_sums(~base0 & cand0, starts)
    n0 = np.broadcast_to(unit_n.astype(np.int64), b0.shape)
    p0, delta0, worst0 = first.lookup(n0, b0, c0)
    reg0 = (weighted_holm_rows(p0, weights) <= (1 - RHO) * ALPHA) & (delta0 < -TOLERANCE)
    fail0 = reg0.any(axis=1)
    pass0 = ~fail0 & (worst0[:, 0] >= -TOLERANCE)
    mismatches = 0
    if check:
        gate = GateSpec(alpha=(1 - RHO) * ALPHA)
        units = units_for(sizes)
        for r in range(min(check, replicates)):
            metric = MetricInput(first.definition, first.spec, base0[r].astype(float), cand0[r].astype(float))
            verdict = gate_verdict(decide([metric], units, gate, seed=0))[0]
            mine = "fail" if fail0[r] else "pass" if pass0[r] else "inconclusive"
            mismatches += verdict != mine
    levels = look_levels(RHO * ALPHA, max_batches)
    out: dict[str, Outcome] = {}
    for pi, policy in enumerate(policies):
        prng = np.random.default_rng(
            [seed, kinds.index(scenario), round(drop * 100), list(MODELS).index(model), 7 + pi]
        )
        end = np.where(fail0, 1, np.where(pass0, 2, 0)).astype(np.int8)
        look = np.where(end > 0, 0, max_batches + 1)
        named = fail0 & reg0[:, target]
        extra = np.zeros(replicates)
        stopped = np.zeros(replicates, dtype=bool)  # a batch repeated the first look
        sb, sc = base0.astype(np.int32), cand0.astype(np.int32)  # successes per case so far
        # Attempts per case so far: a batch re-runs a case on both sides, so it is the same on each.
        attempts = np.ones(shape, dtype=np.int32)
        rerun = np.zeros((replicates, len(sizes)), dtype=bool)  # slice had a re-run
        spent = np.zeros((replicates, len(sizes)), dtype=bool)  # slice's re-runs all repeated
        for t in range(1, max_batches + 1):
            open_ = np.flatnonzero((end == 0) & ~stopped)
            if open_.size == 0:
                break
            d = (sb[open_] - sc[open_]) / attempts[open_]
            if policy == "looks_worse":
                mean = _unit_sums(d, starts)[:, 1:] / unit_n[1:]
                sel = (mean > TOLERANCE) & ~spent[open_]
            else:
                sel = ~spent[open_]
            some = sel.any(axis=1)
            open_, sel = open_[some], sel[some]
            if open_.size == 0:
                break
            cases = sel[:, slice_of]
            if deterministic:
                nb, nc = base0[open_], cand0[open_]
            else:
                fresh = scenario == "redraw-look"
                cand_p = _draw_p(prng, model, cases.shape) * scale if fresh else q0[open_]
                nb = prng.random(cases.shape) < p[open_]
                nc = prng.random(cases.shape) < cand_p
            extra[open_] += 2 * cases.sum(axis=1)
            same = (nb == base0[open_]) & (nc == cand0[open_]) | ~cases
            slice_same = np.logical_and.reduceat(same, starts, axis=1) & sel
            spent[open_] |= slice_same
            whole = same.all(axis=1)
            stopped[open_[whole]] = True
            sb[open_] += (nb & cases).astype(np.int32)
            sc[open_] += (nc & cases).astype(np.int32)
            attempts[open_] += cases.astype(np.int32)
            rerun[open_] |= sel
            live = open_[~whole]  # a repeated batch takes no look
            if live.size == 0:
                continue
            d = (sb[live] - sc[live]) / attempts[live]
            total, square = _unit_sums(d, starts), _unit_sums(d * d, starts)
            p_worse = drop_test(total, square, unit_n, TOLERANCE, "worse")
            tested = np.concatenate([np.ones((live.size, 1), dtype=bool), rerun[live]], axis=1)
            p_worse = np.where(tested, p_worse, 1.0)
            rej = (weighted_holm_rows(p_worse, weights) <= levels[t - 1]) & (total / unit_n > TOLERANCE)
            fl = rej.any(axis=1)
            ps = ~fl & (drop_test(total[:, 0], square[:, 0], n_cases, TOLERANCE, "not_worse") <= levels[t - 1])
            end[live[fl]] = 1
            end[live[ps]] = 2
            look[live[fl | ps]] = t
            named[live[fl]] = rej[fl, target]
        out[policy] = Outcome(end, look, named, extra / (2 * n_cases), stopped)
    return out, mismatches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=10_000, help="per cell (default 10,000)")
    parser.add_argument("--max-batches", type=int, default=MAX_BATCHES)
    parser.add_argument("--check", type=int, default=20, help="replicates per cell checked end to end at look 0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layouts", nargs="*", default=list(SIM_LAYOUTS), choices=list(SIM_LAYOUTS))
    args = parser.parse_args()
    started, cpu0 = time.perf_counter(), os.times()
    tests: dict[float, CountTests] = {}
    T = args.max_batches
    print(
        f"more evidence: α={ALPHA} ρ={RHO} (look 0: fixed rule at {(1 - RHO) * ALPHA:.2f}; looks 1..{T}: t-test on "
        f"per-case means, α spent {', '.join(f'{x:.5f}' for x in look_levels(RHO * ALPHA, T))}), δ={TOLERANCE}, "
        f"{args.replicates:,} replicates per cell"
    )
    met: list[str] = []
    misses: list[str] = []
    checked = mismatched = 0
    for layout in args.layouts:
        sizes = LAYOUTS[layout]
        print(f"\n== {layout} ({'+'.join(str(s) for s in sizes)}): false fails over every look")
        print(
            f"{'scenario':<15} {'model':<19} {'look 0':>7} {'lw':>7} {'later':>7} {'all':>7} {'stopped':>7} "
            f"{'cost lw':>8} {'cost all':>8}"
        )
        for scenario in NULLS:
            for model in MODELS:
                res, bad = simulate(
                    layout, model, scenario, 0.0, args.replicates, args.seed, max_batches=T, tests=tests,
                    check=args.check,
                )  # fmt: skip
                checked, mismatched = checked + min(args.check, args.replicates), mismatched + bad
                lw, al = res["looks_worse"], res["all"]
                print(
                    f"{scenario:<15} {model:<19} {lw.fail_by(0):>7.4f} {lw.fail_by(T):>7.4f} "
                    f"{lw.fail_by(T) - lw.fail_by(0):>7.4f} {al.fail_by(T):>7.4f} {lw.repeated.mean():>7.3f} "
                    f"{lw.extra.mean():>7.2f}× {al.extra.mean():>7.2f}×"
                )
                limit = LIMITS.get(scenario, lw.fail_by(0) + 0.01)
                for policy, o in (("looks_worse", lw), ("all", al)):
                    label = f"{scenario} {layout} {model} {policy}: {o.fail_by(T):.4f} ≤ {limit:.4f}"
                    (met if o.fail_by(T) <= limit else misses).append(label)
                later = lw.fail_by(T) - lw.fail_by(0)
                # The later looks' share, with 3 Monte Carlo standard errors of slack.
                slack = 3 * (RHO * ALPHA / args.replicates) ** 0.5
                label = f"{scenario} {layout} {model} later looks: {later:.4f} ≤ {RHO * ALPHA:g} (+{slack:.4f} MC)"
                (met if later <= RHO * ALPHA + slack else misses).append(label)
        if layout == POWER_TARGET[0]:
            drop = POWER_TARGET[1]
            print(f"\n== {layout}: slice 0 ({sizes[0]} cases) −{drop:.2f}: fails and names the slice")
            print(f"{'model':<19} {'look 0':>7} {'4 batches':>9} {f'{T} batches':>10} {f'all, {T}':>8} {'cost lw':>8}")
            for model in MODELS:
                res, bad = simulate(
                    layout, model, "drop", drop, args.replicates, args.seed, max_batches=T, tests=tests,
                    check=args.check,
                )  # fmt: skip
                checked, mismatched = checked + min(args.check, args.replicates), mismatched + bad
                lw, al = res["looks_worse"], res["all"]
                print(
                    f"{model:<19} {lw.found_by(0):>7.3f} {lw.found_by(min(4, T)):>9.3f} {lw.found_by(T):>10.3f} "
                    f"{al.found_by(T):>8.3f} {lw.extra.mean():>7.2f}×"
                )
                label = f"25-case −{drop:.2f} {layout} {model} looks_worse within {T}: {lw.found_by(T):.3f} ≥ 0.85"
                (met if lw.found_by(T) >= POWER_TARGET[2] else misses).append(label)
    print(
        "\ncolumns: look 0 = the first look alone; lw = select looks_worse (the default), all = select all, over "
        f"every look up to {T}; later = what the later looks add (lw; bound ρα = {RHO * ALPHA:g}); stopped = share of "
        "gates a repeated batch ended (lw); cost = extra attempts, both sides, / the first look's (2 × suite)"
    )
    print(f"end-to-end check of look 0: {checked:,} replicates through decide/gate_verdict, {mismatched} disagreements")
    print(f"\ntargets ({args.replicates:,} replicates a cell):")
    for label in met:
        print(f"  met      {label}")
    for label in misses:
        print(f"  NOT met  {label.replace('≤', '>').replace('≥', '<')}")
    if mismatched:
        print(f"  NOT met  {mismatched} look-0 replicates disagree with decide/gate_verdict")
    cpu = os.times()
    used = cpu.user - cpu0.user + cpu.system - cpu0.system
    print(f"\nwall {time.perf_counter() - started:.1f} s, CPU (user+sys) {used:.1f} s")


if __name__ == "__main__":
    main()

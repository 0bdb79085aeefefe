"""Simulation of "more evidence" (docs/spec.md#more-evidence): the hybrid20 anytime-valid rule with the
real code (``evals.compare.evidence`` for the e-process and e-Holm, ``evals.compare.paired``
through ``benchmarks/sim_gate.py``'s count tables for today's fixed-sample rule,
``evals.compare.decide.alpha_weights`` for the α weights).

The procedure simulated (the one the product implements), gate α = 0.05, ρ = 0.2:

- **Look 0**: today's fixed-sample rule at (1 − ρ)·α = 0.04 (``GateSpec(alpha=0.04)``: mid-p
  McNemar / paired CLT per unit, weighted Holm, pass when no unit regressed and overall's interval
  stays within −δ). If it fails, the gate fails.
- **Every look, look 0 included**: per gated unit (overall and every slice, weights = the gate's
  ``alpha_weights``) the log wealth ``log_wealth_counts(..., δ, "worse")`` accumulated over all the
  unit's observations so far; ``e_holm`` at ρ·α = 0.01; any rejected unit → fail, naming it
  (power = the dropped slice is among the regressed / rejected units of the failing look).
- **Pass**: at look 0 by today's rule at 0.04, or at any look when overall's ``"not_worse"``
  e-value is ≥ 1/(ρ·α) = 100 and nothing was rejected.
- Otherwise inconclusive → one more batch, if the budget (``--max-batches`` T, default 10) remains
  and some cases are selected; "still inconclusive" after that.
- **Selection** ``looks_worse``: the slices (not overall) neither regressed nor rejected whose
  accumulated observed mean drop (all their observations so far) is > δ. ``all``: every case (the
  only way overall's wealth grows, so the only way to a later pass).
- **A batch** = one fresh attempt of each selected case on BOTH sides, each case's pass
  probability fixed within a replicate ("attempts": the finite-case null "these cases' mean drop
  ≤ δ" holds exactly in A/A and only on average at the boundary — the honest test). A unit's
  wealth is updated by a batch only if the batch re-ran every one of its cases (with
  ``looks_worse``, overall and the other slices keep their look-0 wealth).

Also simulated, on the same look-0 draws:

- **naive**: today's fixed rule at the full α = 0.05 re-applied after each batch (``all``
  selection) to the accumulated pairs of each unit — every attempt pair counted as one binary
  pair, so the real tests run on counts (mid-p McNemar under 300 pairs, the paired CLT above).
  This is the research's naive rule; on per-case means of k attempts the small units would go to
  the bootstrap-t instead, too slow to simulate at this size. Read at T = 4 and T = 10.
- **candidate-only**: ``looks_worse`` batches that re-run only the candidate; each batch's
  y_i = base_i(look 0) − cand_i(new), the stored baseline's single value reused. Its false fails
  are printed whatever they are: reusing one baseline value makes a case's expected drop
  base_i − p_i, which is not 0 given the look-0 outcome, so the e-process is not valid here.

Per-case models (mean pass rate 0.7, from sim_gate): independent p = 0.7, heterogeneous
Beta(1.4, 0.6), near-deterministic Beta(0.35, 0.15). Layouts 500 = 20×25 and 300 = 3×100.
Scenarios: A/A; boundary (every case's p scaled by 1 − δ/0.7: every unit's true drop is δ = 0.02
on average); one slice (slice 0) down by 0.30 / 0.40 (25-case, layout 500) or 0.10 / 0.20
(100-case, layout 300), p_i scaled by 1 − drop/0.7. Cost = extra paired attempts (one case re-run
on both sides counts 1; candidate-only counts its candidate attempts) over all replicates, as a
multiple of the suite size. ``--check`` replicates per cell also run look 0 end to end through
``decide`` / ``gate_verdict`` at α = 0.04 (disagreements must be 0).

    .venv/bin/python benchmarks/sim_evidence.py                  # 3,000 replicates per cell
    .venv/bin/python benchmarks/sim_evidence.py --replicates 500 --layouts 500
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_gate import LAYOUTS, MEAN, MODELS, TOLERANCE, case_arrays, scales_for, units_for, weighted_holm_rows

from evals.compare.decide import alpha_weights, decide, gate_verdict, paired_tests
from evals.compare.evidence import e_holm, log_e, log_wealth_counts
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput, UnitIndex
from evals.suite.config import GateSpec, MetricSpec

ALPHA, RHO = 0.05, 0.2
MAX_BATCHES = 10
SIM_LAYOUTS = ("500", "300")
# (layout, scenario, drop): the cells docs/spec.md#more-evidence sets targets for.
CELLS = [
    ("500", "aa", 0.0),
    ("500", "boundary", 0.0),
    ("500", "drop", 0.30),
    ("500", "drop", 0.40),
    ("300", "aa", 0.0),
    ("300", "boundary", 0.0),
    ("300", "drop", 0.10),
    ("300", "drop", 0.20),
]
POLICIES = ("hybrid20/looks_worse", "hybrid20/all", "naive/all", "candidate-only")
TARGETS = {"aa": 0.05, "boundary": 0.055}
POWER_TARGET = ("500", 0.30, 0.85)  # a 25-case slice's −0.30 within 10 batches


class CountTests:
    """``paired_test`` of each distinct (n, b, c) under one gate, computed once (binary pairs:
    the counts fix the test's inputs), as ``sim_gate.UnitTests`` but sparse (naive looks reach
    n = 11 × 500 pairs): p_worse, oriented delta and the bad end of overall's interval (the
    lower of the reported and the smoothed one, as ``decide.bad_side``)."""

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


def fixed_rule(tests: CountTests, n_units, b, c, weights, alpha):
    """Today's rule on per-unit counts (replicates × units): regressed units and pass."""
    p, delta, worst = tests.lookup(n_units, b, c)
    regressed = (weighted_holm_rows(p, weights) <= alpha) & (delta < -TOLERANCE)
    passed = ~regressed.any(axis=1) & (worst[:, 0] >= -TOLERANCE)
    return regressed, passed


@dataclass
class Outcome:
    """Per replicate: the end (0 open/inconclusive, 1 fail, 2 pass), the look it ended at, whether
    the dropped slice was named, and the extra attempts."""

    end: np.ndarray
    look: np.ndarray
    named: np.ndarray
    extra: np.ndarray
    inconclusive0: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def fail_by(self, t: int) -> float:
        return float(np.mean((self.end == 1) & (self.look <= t)))

    def found_by(self, t: int) -> float:
        return float(np.mean((self.end == 1) & self.named & (self.look <= t)))


def _unit_sums(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """replicates × cases → replicates × (overall + slices)."""
    per_slice = np.add.reduceat(x, starts, axis=1)
    return np.concatenate([per_slice.sum(axis=1, keepdims=True), per_slice], axis=1)


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
    full = tests.setdefault(ALPHA, CountTests(GateSpec(alpha=ALPHA)))
    weights = gate_weights(sizes)
    n_cases = sum(sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    slice_of = np.repeat(np.arange(len(sizes)), sizes)
    unit_n = np.array([n_cases, *sizes])
    target = 1  # slice 0 is the dropped one
    kind = ["aa", "boundary", "drop"].index(scenario)
    rng = np.random.default_rng([seed, list(LAYOUTS).index(layout), list(MODELS).index(model), kind, round(drop * 100)])
    shape = MODELS[model]
    p = np.full((replicates, n_cases), MEAN) if shape is None else rng.beta(*shape, size=(replicates, n_cases))
    scale = np.array(scales_for(sizes, scenario, 0, drop))[slice_of]
    q = p * scale
    base0 = rng.random(p.shape) < p
    cand0 = rng.random(p.shape) < q
    b0 = _unit_sums(base0 & ~cand0, starts)
    c0 = _unit_sums(~base0 & cand0, starts)
    n0 = np.broadcast_to(unit_n, b0.shape)
    reg0, pass0 = fixed_rule(first, n0, b0, c0, weights, (1 - RHO) * ALPHA)
    fail0 = reg0.any(axis=1)
    mismatches = 0
    if check:
        gate = GateSpec(alpha=(1 - RHO) * ALPHA)
        units = units_for(sizes)
        for r in range(min(check, replicates)):
            metric = MetricInput(first.definition, first.spec, base0[r].astype(float), cand0[r].astype(float))
            verdict = gate_verdict(decide([metric], units, gate, seed=0))[0]
            mine = "fail" if fail0[r] else "pass" if pass0[r] else "inconclusive"
            mismatches += verdict != mine
    level = RHO * ALPHA
    threshold = -math.log(level)
    out: dict[str, Outcome] = {}
    for pi, policy in enumerate(policies):
        prng = np.random.default_rng([seed, kind, round(drop * 100), list(MODELS).index(model), 101 + pi])
        end = np.zeros(replicates, dtype=np.int8)
        look = np.full(replicates, max_batches + 1)
        named = np.zeros(replicates, dtype=bool)
        extra = np.zeros(replicates)
        b_acc, c_acc, n_acc = b0.astype(float), c0.astype(float), n0.astype(float).copy()
        drop_sum = (b0 - c0)[:, 1:].astype(float)  # per slice: Σ y over its observations so far
        drop_n = n0[:, 1:].astype(float).copy()
        naive = policy.startswith("naive")
        if naive:
            reg, passed = fixed_rule(full, n0, b0, c0, weights, ALPHA)
            failed = reg.any(axis=1)
            rejected = reg
        else:
            worse = log_wealth_counts(b0, c0, n0, TOLERANCE, "worse")  # replicates × units × L
            not_worse = log_wealth_counts(b0[:, 0], c0[:, 0], n_cases, TOLERANCE, "not_worse")
            rejected = e_holm(log_e(worse), weights, level)
            failed = fail0 | rejected.any(axis=1)
            passed = ~failed & (pass0 | (log_e(not_worse) >= threshold))
            rejected = rejected | reg0
        end[failed], end[passed] = 1, 2
        look[failed | passed] = 0
        named[failed] = rejected[failed, target]
        inconclusive0 = end == 0
        for t in range(1, max_batches + 1):
            open_ = np.flatnonzero(end == 0)
            if open_.size == 0:
                break
            if policy.endswith("looks_worse") or policy == "candidate-only":
                sel_slices = ~rejected[open_, 1:] & (drop_sum[open_] / drop_n[open_] > TOLERANCE)
            else:
                sel_slices = np.ones((open_.size, len(sizes)), dtype=bool)
            some = sel_slices.any(axis=1)
            open_, sel_slices = open_[some], sel_slices[some]
            if open_.size == 0:
                break
            sel_cases = sel_slices[:, slice_of]
            cand = (prng.random(sel_cases.shape) < q[open_]) & sel_cases
            if policy == "candidate-only":
                base = base0[open_] & sel_cases
                extra[open_] += sel_cases.sum(axis=1) / n_cases
            else:
                base = (prng.random(sel_cases.shape) < p[open_]) & sel_cases
                extra[open_] += sel_cases.sum(axis=1) / n_cases
            bb = _unit_sums(base & ~cand, starts)
            cc = _unit_sums(~base & cand & sel_cases, starts)
            updated = np.concatenate([sel_slices.all(axis=1, keepdims=True), sel_slices], axis=1)
            nn = updated * unit_n
            bb, cc = bb * updated, cc * updated
            drop_sum[open_] += (bb - cc)[:, 1:]
            drop_n[open_] += nn[:, 1:]
            if naive:
                b_acc[open_] += bb
                c_acc[open_] += cc
                n_acc[open_] += nn
                reg, pss = fixed_rule(
                    full, n_acc[open_].astype(np.int64), b_acc[open_].astype(np.int64), c_acc[open_].astype(np.int64),
                    weights, ALPHA,
                )  # fmt: skip
                fl = reg.any(axis=1)
                rej = reg
            else:
                worse[open_] += log_wealth_counts(bb, cc, nn, TOLERANCE, "worse")
                rej = e_holm(log_e(worse[open_]), weights, level)
                fl = rej.any(axis=1)
                if updated[:, 0].any():
                    not_worse[open_] += updated[:, :1] * log_wealth_counts(
                        bb[:, 0], cc[:, 0], nn[:, 0], TOLERANCE, "not_worse"
                    )
                pss = ~fl & (log_e(not_worse[open_]) >= threshold)
            rejected[open_] |= rej
            end[open_[fl]] = 1
            end[open_[pss & ~fl]] = 2
            look[open_[fl | pss]] = t
            named[open_[fl]] = rej[fl, target]
        out[policy] = Outcome(end, look, named, extra, inconclusive0)
    return out, mismatches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=3000, help="per cell (default 3,000)")
    parser.add_argument("--max-batches", type=int, default=MAX_BATCHES)
    parser.add_argument("--check", type=int, default=20, help="replicates per cell checked end to end at look 0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layouts", nargs="*", default=list(SIM_LAYOUTS), choices=list(SIM_LAYOUTS))
    args = parser.parse_args()
    started, cpu0 = time.perf_counter(), os.times()
    tests: dict[float, CountTests] = {}
    T = args.max_batches
    print(
        f"more evidence: α={ALPHA} ρ={RHO} (look 0 fixed rule at {(1 - RHO) * ALPHA:.2f}, "
        f"e-Holm at {RHO * ALPHA:.2f}), "
        f"δ={TOLERANCE}, max_batches={T}, {args.replicates:,} replicates per cell, re-run attempts (p_i fixed)"
    )
    misses: list[str] = []
    met: list[str] = []
    power: list[str] = []
    checked = mismatched = 0
    for layout, scenario, drop in CELLS:
        if layout not in args.layouts:
            continue
        sizes = LAYOUTS[layout]
        name = {"aa": "A/A", "boundary": "boundary"}.get(scenario, f"{sizes[0]}-slice −{drop:.2f}")
        print(f"\n== {layout} ({len(sizes)}×{sizes[0]}), {name}")
        if scenario in ("aa", "boundary"):
            print(
                f"{'model':<19} {'look 0':>10} {'h20/lw':>7} {'h20/all':>7} {'naive T4':>8} {'naive T10':>9} "
                f"{'cand-only':>9} {'cost lw':>7} {'cost all':>8} {'resolved(all)':>13}"
            )
        else:
            print(
                f"{'model':<19} {'look 0':>10} {'h20/lw T4':>9} {'h20/lw T10':>10} {'h20/all T4':>10} "
                f"{'h20/all T10':>11} {'naive T10':>9} {'cost lw':>7} {'cost all':>8}"
            )
        for model in MODELS:
            res, bad = simulate(
                layout, model, scenario, drop, args.replicates, args.seed, max_batches=T, tests=tests, check=args.check
            )
            checked, mismatched = checked + min(args.check, args.replicates), mismatched + bad
            lw, al, nv, co = (res[k] for k in POLICIES)
            cost_lw, cost_all = lw.extra.mean(), al.extra.mean()
            if scenario in ("aa", "boundary"):
                inc0 = al.inconclusive0
                resolved = float(np.mean(al.end[inc0] != 0)) if inc0.any() else float("nan")
                print(
                    f"{model:<19} {lw.fail_by(0):>10.4f} {lw.fail_by(T):>7.4f} {al.fail_by(T):>7.4f} "
                    f"{nv.fail_by(4):>8.4f} {nv.fail_by(T):>9.4f} {co.fail_by(T):>9.4f} {cost_lw:>6.2f}× "
                    f"{cost_all:>7.2f}× {resolved:>13.3f}"
                )
                if scenario == "aa":
                    ends = [float(np.mean(al.end == k)) for k in (2, 1, 0)]
                    shares = " / ".join(f"{e:.3f}" for e in ends)
                    print(f"{'':<19}   all, A/A: pass / fail / inconclusive = {shares}")
                for policy, o in (("hybrid20/looks_worse", lw), ("hybrid20/all", al)):
                    label = f"{name} {layout} {model} {policy}: {o.fail_by(T):.4f} ≤ {TARGETS[scenario]}"
                    (met if o.fail_by(T) <= TARGETS[scenario] else misses).append(label)
            else:
                print(
                    f"{model:<19} {lw.found_by(0):>10.3f} {lw.found_by(4):>9.3f} {lw.found_by(T):>10.3f} "
                    f"{al.found_by(4):>10.3f} {al.found_by(T):>11.3f} {nv.found_by(T):>9.3f} {cost_lw:>6.2f}× "
                    f"{cost_all:>7.2f}×"
                )
                power.append(
                    f"  {name:<15} {layout:<4} {model:<19} within 4 batches {lw.found_by(min(4, T)):.3f}, within {T} "
                    f"{lw.found_by(T):.3f} (look 0 alone {lw.found_by(0):.3f}; select all within 4: "
                    f"{al.found_by(min(4, T)):.3f})"
                )
                if (layout, drop) == POWER_TARGET[:2]:
                    label = f"{name} {layout} {model} hybrid20/looks_worse within {T}: {lw.found_by(T):.3f} ≥ 0.85"
                    (met if lw.found_by(T) >= POWER_TARGET[2] else misses).append(label)
    print(
        "\ncolumns: false fails (A/A, boundary) or 'fails and names the slice' (drops) over all looks up to T; "
        "look 0 = look 0 alone; naive = today's rule at 0.05 re-applied to the accumulated pairs (all cases "
        "re-run); cand-only = looks_worse batches of the candidate only against the stored baseline's values; "
        "cost = mean extra paired attempts / suite size; resolved(all) = share of look-0-inconclusive gates that "
        "ended pass or fail with `all`"
    )
    if power:
        print("\npower within 4 batches (the gate fails naming the slice; shipped rule, select looks_worse):")
        print("\n".join(power))
    print(f"end-to-end check of look 0: {checked:,} replicates through decide/gate_verdict, {mismatched} disagreements")
    print("\ntargets (A/A ≤ 5%, boundary ≤ 5.5% over all looks; 25-slice −0.30 ≥ 0.85 within 10 batches):")
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

"""Simulation of ``gate.fail_fast`` (docs/spec.md#fail-fast) against the fixed-sample rule alone.

The draws are ``benchmarks/sim_gate.py``'s: binary outcomes, one attempt, the three per-case models
and the four layouts of docs/spec.md#validity-targets, tolerance 0.02, the default gate. A run of M
cases in the stratified order holds, at a look after m completed cases, about m/M of every slice:
each slice's cases are cut into the same blocks (``evals.compare.failfast.look_points``) and each
block's (pass→fail, fail→pass) counts are drawn as a multinomial, so a replicate's units have their
Σd = b − c, Σd² = b + c and n at every look. The stopping rule is the real one:
``evals.compare.failfast.look_p`` (the t-test more evidence uses), ``stops`` and the levels of
``evals.compare.evidence.look_levels`` at ``FAIL_FAST_SHARE·α``. A run not stopped is decided by the
fixed-sample rule at ``(1 − FAIL_FAST_SHARE)·α`` (``evals.compare.paired.paired_test`` per distinct
count, weighted Holm with the gate's weights), and the fixed rule alone at α is judged on the same
draws. ``--check N`` replicates per cell also go case by case through ``FailFast.plan`` / ``add`` —
the object ``evalgate run`` feeds — and every disagreement about whether and where it stopped is
counted (it must be 0).

Reported per cell: false fails (A/A, every unit's true drop = δ) with and without fail fast; for
one 100-case slice's −0.30 and −0.50, the power (the gate fails and names that slice) of both and
the median share of cases run.

    nice -n 15 .venv/bin/python benchmarks/sim_failfast.py                      # 10,000 per cell
    nice -n 15 .venv/bin/python benchmarks/sim_failfast.py --replicates 1000 --check 20
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_gate import (
    LAYOUTS,
    MODELS,
    SIM_GATE,
    TOLERANCE,
    UnitTests,
    gate_weights,
    pair_probs,
    scales_for,
    weighted_holm_rows,
)

from evals.compare.evidence import look_levels
from evals.compare.failfast import FAIL_FAST_SHARE, FailFast, look_p, look_points, stops
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.run.failfast import interleave, stratified_order
from evals.suite.cases import Case
from evals.suite.config import SuiteConfig
from evals.suite.scoring import MetricSpec

ALPHA = SIM_GATE.alpha
NULL_LIMIT = 0.005  # fail fast's false fails at most the fixed rule's + this
POWER_LOSS = 0.02  # its power at least the fixed rule's − this
DROPS = (0.30, 0.50)
POWER_CELLS = (("1000", 1), ("300", 0))  # (layout, a 100-case slice)


@dataclass
class Cell:
    fixed: float  # the fixed rule alone at α: fails (null) or fails naming the slice (power)
    fast: float  # with fail fast
    fixed_fails: float  # the gate fails, whichever unit it names
    fast_fails: float
    stopped: float  # share of replicates fail fast stopped
    median_share: float  # median share of the cases run
    mean_share: float
    mismatches: int = 0
    checked: int = 0


def block_sizes(sizes: list[int], seed: int = 0) -> np.ndarray:
    """slices × blocks: each slice's cases among the order's cases between looks, in the real
    stratified order (``evals.run.failfast.interleave``)."""
    total = sum(sizes)
    slices = np.repeat(np.arange(len(sizes)), sizes)
    labels = slices[interleave(slices.tolist(), seed)]
    edges = [0, *look_points(total), total]
    return np.array(
        [[int(np.sum(labels[lo:hi] == k)) for lo, hi in itertools.pairwise(edges)] for k in range(len(sizes))]
    )


def draw(layout: str, model: str, replicates: int, seed: int, scenario: str, drop_slice: int, drop: float):
    sizes = LAYOUTS[layout]
    probs = [pair_probs(model, s) for s in scales_for(sizes, scenario, drop_slice, drop)]
    blocks = block_sizes(sizes)
    kind = ["aa", "boundary", "drop"].index(scenario)
    rng = np.random.default_rng([seed, list(LAYOUTS).index(layout), list(MODELS).index(model), round(drop * 100), kind])
    b = np.zeros((replicates, len(sizes), blocks.shape[1]), dtype=np.int64)
    c = np.zeros_like(b)
    for k, (p10, p01) in enumerate(probs):
        for j, n in enumerate(blocks[k].tolist()):
            got = rng.multinomial(n, [p10, p01, 1.0 - p10 - p01], size=replicates)
            b[:, k, j], c[:, k, j] = got[:, 0], got[:, 1]
    return sizes, blocks, b, c


def with_overall(x: np.ndarray) -> np.ndarray:
    """replicates × slices × … → replicates × (overall + slices) × …"""
    return np.concatenate([x.sum(axis=1, keepdims=True), x], axis=1)


def run_cell(
    layout: str, model: str, replicates: int, seed: int, scenario: str, tests: UnitTests, drop_slice: int = 0,
    drop: float = 0.0, check: int = 0,
) -> Cell:  # fmt: skip
    sizes, blocks, b, c = draw(layout, model, replicates, seed, scenario, drop_slice, drop)
    weights = gate_weights(layout)
    looks = blocks.shape[1] - 1
    levels = look_levels(FAIL_FAST_SHARE * ALPHA, looks)
    cb, cc = with_overall(np.cumsum(b, axis=2)), with_overall(np.cumsum(c, axis=2))
    cn = with_overall(np.cumsum(np.broadcast_to(blocks, b.shape), axis=2))
    delta = np.full(cb.shape[1], TOLERANCE)
    stop_look = np.full(replicates, looks)  # looks = not stopped
    named = np.zeros(replicates, dtype=bool)
    target = 1 + drop_slice
    for k in range(looks):
        p = look_p(cb[..., k] - cc[..., k], cb[..., k] + cc[..., k], cn[..., k], delta)
        now = stops(p, weights, float(levels[k])) & (stop_look == looks)
        rejected = weighted_holm_rows(p, weights) <= levels[k]
        named |= now & rejected[:, target]
        stop_look[now] = k
    # The whole run: the fixed-sample rule, at α alone and at (1 − share)·α after fail fast.
    fb, fc = cb[..., -1], cc[..., -1]
    p, d = np.empty(fb.shape), np.empty(fb.shape)
    for u, n in enumerate([sum(sizes), *sizes]):
        p[:, u], d[:, u], _ = tests.lookup(n, fb[:, u], fc[:, u])
    adjusted = weighted_holm_rows(p, weights)
    fixed = (adjusted <= ALPHA) & (d < -TOLERANCE)
    final = (adjusted <= (1 - FAIL_FAST_SHARE) * ALPHA) & (d < -TOLERANCE)
    stopped = stop_look < looks
    if scenario == "drop":
        fixed_hit = fixed.any(axis=1) & fixed[:, target]
        fast_hit = (stopped & named) | (~stopped & final.any(axis=1) & final[:, target])
    else:
        fixed_hit, fast_hit = fixed.any(axis=1), stopped | final.any(axis=1)
    total = sum(sizes)
    points = np.array([*look_points(total), total])
    share = points[stop_look] / total
    mismatches = sum(
        _check(sizes, blocks, b[rep], c[rep], int(stop_look[rep]) if stopped[rep] else None) for rep in range(check)
    )
    return Cell(
        float(fixed_hit.mean()), float(fast_hit.mean()), float(fixed.any(axis=1).mean()),
        float((stopped | final.any(axis=1)).mean()), float(stopped.mean()), float(np.median(share)),
        float(share.mean()), mismatches, min(check, replicates),
    )  # fmt: skip


def _check(sizes: list[int], blocks: np.ndarray, b: np.ndarray, c: np.ndarray, stop_look: int | None) -> bool:
    """One replicate through ``FailFast`` case by case, in the blocks' order; True when its stop
    (and the look) differs from the vectorised rule's."""
    config = SuiteConfig(
        suite="sim", cases=[], slices=["slice"], metrics={"pass_rate": MetricSpec(tolerance=TOLERANCE)}
    )
    # Each slice's cases in suite order; the stratified order then puts them in the blocks the
    # counts were drawn for (its position within its slice fixes the block): its block's outcomes.
    cases = [
        Case(id=f"s{k:02d}-{i}", input="x", tags={"slice": f"s{k:02d}"}) for k, n in enumerate(sizes) for i in range(n)
    ]
    ordered = stratified_order(cases, ["slice"], 0)
    base, cand = {}, []
    seen = dict.fromkeys(range(len(sizes)), 0)
    for case in ordered:
        k = int(case.tags["slice"][1:])
        i, seen[k] = seen[k], seen[k] + 1
        j = int(np.searchsorted(np.cumsum(blocks[k]), i, side="right"))
        first = i - int(np.cumsum(blocks[k])[j - 1]) if j else i  # its place within its block
        bo, co = (1, 0) if first < b[k, j] else (0, 1) if first < b[k, j] + c[k, j] else (1, 1)
        base[case.id] = _result(case, bo)
        cand.append(_result(case, co))
    run = RunInfo(suite="sim", status="success", total_cases=len(cases), completed_cases=len(cases))
    rule = FailFast.plan(config, Results(run=run, cases=list(base.values())), ordered)
    got = None
    for result in cand:
        stop = rule.add(result)
        if stop is not None:
            got = stop.look - 1
            break
    return got != stop_look


def _result(case: Case, passed: int) -> CaseResult:
    return CaseResult(id=case.id, slices=dict(case.tags), hash=case.hash, attempts=[Attempt(passed=bool(passed))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=10_000)
    parser.add_argument("--check", type=int, default=20, help="replicates per cell also run through FailFast itself")
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--layouts", nargs="*", default=list(LAYOUTS))
    args = parser.parse_args()
    started = time.perf_counter()
    tests = UnitTests(SIM_GATE)
    print(f"fail fast: share {FAIL_FAST_SHARE} of α {ALPHA}, {args.replicates} replicates a cell")
    print("\nfalse fails (fixed rule alone → with fail fast; limit: fixed + 0.005)")
    print(f"{'layout':>6} {'model':>19} {'scenario':>9} {'fixed':>7} {'fast':>7} {'stopped':>8}  ok")
    bad = 0
    mismatches = 0
    for layout in args.layouts:
        for model in MODELS:
            for scenario in ("aa", "boundary"):
                cell = run_cell(layout, model, args.replicates, args.seed, scenario, tests, check=args.check)
                ok = cell.fast <= cell.fixed + NULL_LIMIT
                bad += not ok
                mismatches += cell.mismatches
                print(
                    f"{layout:>6} {model:>19} {scenario:>9} {cell.fixed:7.4f} {cell.fast:7.4f} {cell.stopped:8.4f}"
                    f"  {'yes' if ok else 'NO'}"
                )
    print("\none 100-case slice dropped (power: the gate fails naming it; share: cases run)")
    head = f"{'layout':>6} {'model':>19} {'drop':>5} {'fixed':>7} {'fast':>7} {'fails:':>7} {'fixed':>6} {'fast':>6}"
    print(f"{head} {'median':>7} {'mean':>6}  ok")
    for layout, which in POWER_CELLS:
        if layout not in args.layouts:
            continue
        for drop in DROPS:
            for model in MODELS:
                cell = run_cell(layout, model, args.replicates, args.seed, "drop", tests, which, drop, check=args.check)
                ok = cell.fast >= cell.fixed - POWER_LOSS
                bad += not ok
                mismatches += cell.mismatches
                print(
                    f"{layout:>6} {model:>19} {drop:5.2f} {cell.fixed:7.4f} {cell.fast:7.4f} {'':>7} "
                    f"{cell.fixed_fails:6.4f} {cell.fast_fails:6.4f} "
                    f"{cell.median_share:7.2f} {cell.mean_share:6.2f}  {'yes' if ok else 'NO'}"
                )
    print(f"\nFailFast itself vs the vectorised rule: {mismatches} disagreements")
    print(f"cells off target: {bad}; wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()

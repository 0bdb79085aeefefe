"""Printed intervals against verdicts in every replicate of every cell of benchmarks/sim_gate.py
(docs/spec.md#confidence-intervals, docs/spec.md#validity-targets).

A unit's verdict and its printed interval agree when a regressed unit's upper bound lies below
−δ and every other unit's does not, and the mirror with the lower bound and +δ for improved.
``evals.compare.bounds`` inverts each unit's own test at the level weighted Holm tested it at, so
they agree by construction; this checks the construction numerically on the draws of
``sim_gate.py`` (the same seeds, so the same replicates), not only on the few hundred per cell
that ``sim_gate.py --check`` runs end to end through ``decide``.

Per replicate: each unit's p-values (worse and better) and oriented delta, weighted Holm's
verdicts (``sim_gate.weighted_holm_rows``) and each unit's step level on either side
(:func:`holm_level_rows`, ``bounds.holm_levels`` over rows). Per distinct (n, b, c) the real
``paired_test`` runs once (its p-values, margin and ``Bounds``); per distinct (n, b, c, level)
the real ``Bounds.upper``/``lower`` runs once: counts and levels repeat across replicates, so
20,000 replicates a cell cost a few thousand inversions. The bounds are checked as the inversion
gives them, before ``bounds.agree`` settles floating-point rounding at ±δ itself; a bound on the
wrong side by at most ``ROUNDING`` is counted apart (what ``agree`` is for), beyond it is a
disagreement (there must be none). Every unit of these layouts is blocking (weight > 0), so no
level here is BH's α·R/m.

    .venv/bin/python benchmarks/sim_intervals.py                  # 20,000 replicates per cell
    .venv/bin/python benchmarks/sim_intervals.py --replicates 500 --layouts 300
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sim_gate import (
    DROPS,
    LAYOUTS,
    MODELS,
    SIM_GATE,
    UNIFORM_DROP,
    UnitTests,
    case_arrays,
    cell_counts,
    gate_weights,
    weighted_holm_rows,
)

from evals.compare.bounds import Bounds
from evals.compare.decide import paired_tests
from evals.compare.paired import MetricInput, UnitIndex
from evals.suite.gate import GateSpec

# A bound this close to ±δ on the verdict's wrong side is rounding, which bounds.agree settles.
ROUNDING = 1e-12
Levels = Callable[[np.ndarray, np.ndarray, float], np.ndarray]


def holm_level_rows(p: np.ndarray, w: np.ndarray, alpha: float) -> np.ndarray:
    """``evals.compare.bounds.holm_levels`` of every row of ``p`` (all weights > 0): a unit rejected
    at step k gets α·w/W_k, the others α·w/W_J (W_J: the weight of the units not rejected)."""
    order = np.argsort(p / w, axis=1, kind="stable")
    ws = w[order]
    remaining = np.cumsum(ws[:, ::-1], axis=1)[:, ::-1]
    rejected = np.take_along_axis(weighted_holm_rows(p, w), order, axis=1) <= alpha
    kept = np.where(rejected, 0.0, ws).sum(axis=1, keepdims=True)
    sorted_levels = alpha * ws / np.where(rejected, remaining, np.where(kept > 0, kept, 1.0))
    levels = np.empty_like(sorted_levels)
    np.put_along_axis(levels, order, sorted_levels, axis=1)
    return levels


class UnitBounds:
    """The real ``paired_test`` of each distinct (n, b, c), and its bounds at each distinct level,
    each computed once. The method and the margin follow from (n, b, c) (binary pass rates at
    tolerance δ), so they need no place in the keys."""

    def __init__(self, gate: GateSpec):
        self.gate = gate
        self.units = UnitTests(gate)  # its metric definition and spec
        self.tables: dict[int, np.ndarray] = {}  # n -> (n+1)×(n+1)×4: p_worse, p_better, delta, margin
        self.bounds: dict[tuple[int, int, int], Bounds] = {}
        self.values: dict[tuple[str, int, int, int, float], float] = {}

    def tests(self, n: int, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Per replicate: (p_worse, p_better, oriented delta, margin), the last axis."""
        table = self.tables.setdefault(n, np.full((n + 1, n + 1, 4), np.nan))
        todo = np.unique(np.stack([b, c], axis=1), axis=0)
        todo = todo[np.isnan(table[todo[:, 0], todo[:, 1], 0])]
        whole = UnitIndex("overall", None, None, None)
        metric = self.units.definition, self.units.spec
        for bi, ci in todo.tolist():
            t = paired_tests([MetricInput(*metric, *case_arrays(n, bi, ci))], [whole], self.gate, seed=0)[0]
            assert t.bounds is not None
            self.bounds[n, bi, ci] = t.bounds
            table[bi, ci] = (t.p_worse, t.p_better, t.oriented_delta, t.margin)
        return table[b, c]

    def bound(self, side: str, n: int, b: np.ndarray, c: np.ndarray, level: np.ndarray) -> np.ndarray:
        """``Bounds.upper`` (side "upper") or ``lower`` of each replicate's unit at its level."""
        keys, inverse = np.unique(np.stack([b, c, level.view(np.int64)], axis=1), axis=0, return_inverse=True)
        out = np.empty(len(keys))
        for k, (bi, ci, bits) in enumerate(keys.tolist()):
            a = float(np.int64(bits).view(np.float64))
            key = (side, n, bi, ci, a)
            if key not in self.values:
                bounds = self.bounds[n, bi, ci]
                self.values[key] = bounds.upper(a) if side == "upper" else bounds.lower(a)
            out[k] = self.values[key]
        return out[inverse.ravel()]


@dataclass
class Agreement:
    replicates: int
    intervals: int = 0
    regressed: int = 0
    improved: int = 0
    disagree: int = 0  # a bound beyond ROUNDING on the wrong side of ±δ for its verdict
    rounding: int = 0  # a bound on the wrong side by at most ROUNDING (bounds.agree settles it)
    cpu: float = 0.0


@dataclass
class CellBounds:
    """One cell's units, replicates × units: counts, verdicts as ``decide`` gives them, and the
    oriented bounds at the levels tested, as inverted (before ``bounds.agree``)."""

    b: np.ndarray
    c: np.ndarray
    margin: np.ndarray
    regressed: np.ndarray
    improved: np.ndarray
    upper: np.ndarray
    lower: np.ndarray


def cell_bounds(
    layout: str,
    model: str,
    replicates: int,
    seed: int,
    *,
    scenario: str,
    drop_slice: int = 0,
    drop: float = 0.0,
    bounds: UnitBounds,
    levels: Levels = holm_level_rows,
) -> CellBounds:
    """Every unit of every replicate of one cell, its bounds at the levels ``levels`` gives (the
    step-down's own unless a test hands in a wrong one)."""
    gate = bounds.gate
    sizes = LAYOUTS[layout]
    b, c = cell_counts(layout, model, replicates, seed, scenario, drop_slice, drop)
    unit_n = [sum(sizes), *sizes]
    unit_b = np.concatenate([b.sum(axis=1, keepdims=True), b], axis=1)
    unit_c = np.concatenate([c.sum(axis=1, keepdims=True), c], axis=1)
    tests = np.stack([bounds.tests(n, unit_b[:, u], unit_c[:, u]) for u, n in enumerate(unit_n)], axis=1)
    p_worse, p_better, delta, margin = (tests[..., k] for k in range(4))
    weights = gate_weights(layout, gate)
    assert (weights > 0).all(), "every unit blocking: BH's advisory level is not exercised here"
    # decide's verdicts (sim_gate.py --check confirms weighted_holm_rows gives decide's)
    regressed = (weighted_holm_rows(p_worse, weights) <= gate.alpha) & (delta < -margin)
    improved = ~regressed & (weighted_holm_rows(p_better, weights) <= gate.alpha) & (delta > margin)
    worse_levels, better_levels = levels(p_worse, weights, gate.alpha), levels(p_better, weights, gate.alpha)
    upper, lower = (
        np.stack([bounds.bound(side, n, unit_b[:, u], unit_c[:, u], at[:, u]) for u, n in enumerate(unit_n)], axis=1)
        for side, at in (("upper", worse_levels), ("lower", better_levels))
    )
    return CellBounds(unit_b, unit_c, margin, regressed, improved, upper, lower)


def check_cell(layout: str, model: str, replicates: int, seed: int, **cell: Any) -> Agreement:
    """:func:`cell_bounds` (same arguments), each bound against its unit's verdict."""
    started = time.process_time()
    got = cell_bounds(layout, model, replicates, seed, **cell)
    # How far each bound lies on the wrong side of ±δ for its verdict (≤ 0: the right side).
    wrong = np.maximum(
        np.where(got.regressed, got.upper + got.margin, -got.margin - got.upper),
        np.where(got.improved, got.margin - got.lower, got.lower - got.margin),
    )
    return Agreement(
        replicates,
        intervals=got.regressed.size,
        regressed=int(got.regressed.sum()),
        improved=int(got.improved.sum()),
        disagree=int(np.count_nonzero(wrong > ROUNDING)),
        rounding=int(np.count_nonzero((wrong >= 0) & (wrong <= ROUNDING))),
        cpu=time.process_time() - started,
    )


def cells(layouts: list[str]) -> list[tuple[str, str, dict[str, float | int | str]]]:
    """sim_gate.py's cells: A/A, boundary, each slice drop on the largest and a small slice, uniform."""
    out: list[tuple[str, str, dict[str, float | int | str]]] = []
    for layout in layouts:
        for model in MODELS:
            out += [(layout, model, {"scenario": s}) for s in ("aa", "boundary")]
            for which in (0, 1):
                out += [(layout, model, {"scenario": "drop", "drop_slice": which, "drop": d}) for d in DROPS]
            out.append((layout, model, {"scenario": "uniform", "drop": UNIFORM_DROP}))
    return out


def describe(layout: str, model: str, cell: dict[str, float | int | str]) -> str:
    scenario = cell["scenario"]
    if scenario == "drop":
        which = int(cell["drop_slice"])
        what = f"slice {which} ({LAYOUTS[layout][which]}) −{float(cell['drop']):.2f}"
    elif scenario == "uniform":
        what = f"uniform −{float(cell['drop']):.2f}"
    else:
        what = str(scenario)
    return f"{layout:<6} {model:<19} {what}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=20_000, help="per cell (default 20,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layouts", nargs="*", default=list(LAYOUTS), choices=list(LAYOUTS))
    args = parser.parse_args()
    started, cpu0 = time.perf_counter(), os.times()
    bounds = UnitBounds(SIM_GATE)
    print(
        f"gate: alpha={SIM_GATE.alpha} slice_alpha_share={SIM_GATE.slice_alpha_share} "
        f"mcnemar={SIM_GATE.mcnemar}; {args.replicates:,} replicates per cell (sim_gate.py's draws, seed {args.seed})"
    )
    print(f"\n{'cell':<48} {'intervals':>10} {'regressed':>10} {'improved':>9} {'rounding':>9} {'disagree':>9}")
    total = Agreement(0)
    for layout, model, cell in cells(args.layouts):
        got = check_cell(layout, model, args.replicates, args.seed, bounds=bounds, **cell)
        print(
            f"{describe(layout, model, cell):<48} {got.intervals:>10,} {got.regressed:>10,} {got.improved:>9,} "
            f"{got.rounding:>9} {got.disagree:>9}   ({got.cpu:.1f} s)"
        )
        for field in ("replicates", "intervals", "regressed", "improved", "disagree", "rounding"):
            setattr(total, field, getattr(total, field) + getattr(got, field))
    inversions = len(bounds.values)
    print(
        f"\n{len(cells(args.layouts))} cells, {total.replicates:,} replicates, {total.intervals:,} intervals "
        f"({total.regressed:,} regressed, {total.improved:,} improved); {inversions:,} distinct bounds computed; "
        f"on the wrong side by ≤ {ROUNDING:g} (settled by bounds.agree): {total.rounding}; "
        f"disagreements: {total.disagree}"
    )
    cpu = os.times()
    used = cpu.user - cpu0.user + cpu.system - cpu0.system
    print(f"wall {time.perf_counter() - started:.1f} s, CPU (user+sys) {used:.1f} s")
    return 1 if total.disagree else 0


if __name__ == "__main__":
    sys.exit(main())

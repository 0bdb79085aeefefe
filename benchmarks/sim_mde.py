"""Is a drop equal to the printed MDE caught with the configured power? (docs/spec.md#mde)

For each layout of docs/spec.md#validity-targets (500 = 20×25, 1000 = 400 + 6×100, 2000 = 10×200,
300 = 3×100) and each no-change discordance ψ in {0, 0.1, 0.2, 0.4} (ψ 0: a deterministic target),
one slice of each size is dropped by exactly the MDE the real code prints for it, and the whole
gate is run on the draw: P(caught) = the gate fails and names that slice (weighted Holm across
every unit, then ``gate_verdict``). The target is ``gate.power`` ± 0.05 in every cell.

The model (``evals.compare.power``): a case of a slice goes pass→fail with p10 = ψ/2 + Δ and
fail→pass with p01 = ψ/2 (Δ = 0 for the slices not dropped), so a unit's counts are multinomial and
a replicate is one draw per slice; each distinct (n, b, c) is tested once by the gate's
``paired_test`` and the replicates go through the gate's α weights and weighted Holm, vectorised
(``benchmarks/sim_gate.py``'s machinery). ``--check`` replicates a cell are also run end to end
through ``decide`` and ``gate_verdict`` on case arrays; every disagreement is counted (it must be 0).

Two MDEs are taken, each as the real code prints it:
  plan    ``evalgate plan``'s (``evals.compare.plan.plan_suite``) with the true ψ given;
  report  the report's, through ``decide`` on a no-change draw of the layout at ψ: the MDE then
          follows the ψ that draw shows, so each replicate drops the slice by its own draw's MDE.
The "alone" column is exact: the probability that the slice's own test rejects it at its first
weighted-Holm level α·w (what the MDE promises; Holm can only add to it), summed over its
multinomial counts with every p-value from ``paired_test``.

    .venv/bin/python benchmarks/sim_mde.py                  # 10,000 replicates a cell
    .venv/bin/python benchmarks/sim_mde.py --replicates 1000 --layouts 500 --psi 0 0.1
    .venv/bin/python benchmarks/sim_mde.py --estimators     # why the report's ψ is what it is (exact)
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from sim_gate import (
    LAYOUTS,
    SIM_GATE,
    TOLERANCE,
    UnitTests,
    _cases,
    case_arrays,
    units_for,
    weighted_holm_rows,
)

from evals.compare.decide import alpha_weights, decide, gate_verdict
from evals.compare.metrics import metric_def
from evals.compare.paired import MetricInput
from evals.compare.plan import plan_suite
from evals.compare.power import binary_mde, binary_power, run_discordance
from evals.suite.scoring import MetricSpec

PSIS = (0.0, 0.1, 0.2, 0.4)
SPEC = MetricSpec(tolerance=TOLERANCE)
DEFINITION = metric_def("pass_rate", SPEC)
SLACK = 0.05  # the target: P(caught) within gate.power ± 0.05
# A cell whose draws print an MDE a drop can reach fewer times than this is not judged (too few to say).
MIN_JUDGED = 100


def slices_tested(sizes: list[int]) -> list[int]:
    """The first slice of each size in the layout (every slice of a size is alike)."""
    return [sizes.index(n) for n in dict.fromkeys(sizes)]


def plan_mde(sizes: list[int], which: int, psi: float) -> float | None:
    units = [("overall", None, sum(sizes))] + [(f"slice=s{k:02d}", "slice", n) for k, n in enumerate(sizes)]
    plan = plan_suite("sim", units, {"pass_rate": SPEC}, SIM_GATE, psi, "given")
    return plan.rows[1 + which].mde


class ReportMde:
    """The slice's MDE as ``decide`` prints it for a no-change draw of the layout. It follows the
    slice's fail→pass flips and the run's (``evals.compare.power.run_discordance``), so it is
    computed once per distinct pair of those, through ``decide`` on the first draw that shows
    them; ``verify`` replays other draws in full and counts any MDE that differs."""

    def __init__(self, sizes: list[int], which: int):
        self.sizes, self.which = sizes, which
        self.units = units_for(sizes)
        self.seen: dict[tuple[int, int], float] = {}
        self.mismatches = 0

    def _decide(self, b: np.ndarray, c: np.ndarray) -> float:
        base, cand = _cases(self.sizes, b, c)
        found = decide([MetricInput(DEFINITION, SPEC, base, cand)], self.units, SIM_GATE, seed=0)[1 + self.which].mde
        return math.nan if found is None else found

    def __call__(self, b: np.ndarray, c: np.ndarray, verify: int) -> np.ndarray:
        """The printed MDE of every replicate (rows of ``b``, ``c``: counts per slice)."""
        out = np.empty(b.shape[0])
        for rep in range(b.shape[0]):
            key = (int(c[rep, self.which]), int(c[rep].sum()))
            if key not in self.seen:
                self.seen[key] = self._decide(b[rep], c[rep])
            elif rep < verify:
                got = self._decide(b[rep], c[rep])
                self.mismatches += not (got == self.seen[key] or (math.isnan(got) and math.isnan(self.seen[key])))
            out[rep] = self.seen[key]
        return out


def draw(n: int, p10: np.ndarray, p01: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(b, c) of n cases per replicate: b ~ Bin(n, p10), then c among the rest."""
    b = rng.binomial(n, p10)
    c = rng.binomial(n - b, np.minimum(p01 / np.maximum(1.0 - p10, 1e-300), 1.0))
    return b, c


def weights_of(sizes: list[int]) -> np.ndarray:
    design = [
        r
        for r in decide(
            [MetricInput(DEFINITION, SPEC, *case_arrays(sum(sizes), 0, 0))], units_for(sizes), SIM_GATE, seed=0
        )
    ]
    return alpha_weights(design, SIM_GATE.slice_alpha_share, SIM_GATE.slice_weights)


def caught(
    sizes: list[int],
    which: int,
    psi: float,
    drops: np.ndarray,
    rng: np.random.Generator,
    tests: UnitTests,
    weights: np.ndarray,
    check: int,
) -> tuple[float, int]:
    """P(the gate fails and names slice ``which``) when it drops by ``drops`` (one per
    replicate) and every other slice is unchanged at ψ; and the disagreements of ``check``
    replicates replayed through ``decide`` and ``gate_verdict``."""
    reps = drops.size
    b = np.empty((reps, len(sizes)), dtype=np.int64)
    c = np.empty_like(b)
    for k, n in enumerate(sizes):
        p10 = psi / 2.0 + (drops if k == which else np.zeros(reps))
        b[:, k], c[:, k] = draw(n, p10, psi / 2.0, rng)
    unit_n = [sum(sizes), *sizes]
    unit_b = np.concatenate([b.sum(axis=1, keepdims=True), b], axis=1)
    unit_c = np.concatenate([c.sum(axis=1, keepdims=True), c], axis=1)
    p, delta = np.empty(unit_b.shape), np.empty(unit_b.shape)
    for u, n in enumerate(unit_n):
        p[:, u], delta[:, u], _ = tests.lookup(n, unit_b[:, u], unit_c[:, u])
    regressed = (weighted_holm_rows(p, weights) <= SIM_GATE.alpha) & (delta < -TOLERANCE)
    found = regressed.any(axis=1) & regressed[:, 1 + which]
    mismatches = 0
    units = units_for(sizes)
    for rep in range(min(check, reps)):
        base, cand = _cases(sizes, b[rep], c[rep])
        results = decide([MetricInput(DEFINITION, SPEC, base, cand)], units, SIM_GATE, seed=rep)
        real = gate_verdict(results)[0] == "fail" and results[1 + which].verdict == "regressed"
        mismatches += real != bool(found[rep])
    return float(found.mean()), mismatches


def alone(n: int, psi: float, drop: float, level: float, tests: UnitTests) -> float:
    """Exact P(the slice's own test rejects at ``level``) at this drop: its multinomial counts
    (probability ≥ 1e-13) through ``paired_test``."""
    from scipy.special import gammaln

    p10, p01 = psi / 2.0 + drop, psi / 2.0
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = (b + c <= n) & ((c == 0) | (p01 > 0)) & ((b + c == n) | (p10 + p01 < 1))
    b, c = b[ok], c[ok]
    rest = n - b - c
    log_pmf = gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1) - gammaln(rest + 1) + b * math.log(p10)
    if p01 > 0:
        log_pmf += c * math.log(p01)
    if p10 + p01 < 1:
        log_pmf += rest * math.log(1.0 - p10 - p01)
    pmf = np.exp(log_pmf)
    keep = pmf > 1e-13
    p, delta, _ = tests.lookup(n, b[keep], c[keep])
    return float(pmf[keep][(p <= level) & (delta < -TOLERANCE)].sum())


# ψ of a run's unit, as alternatives to ``run_discordance``: (pass→fail b, fail→pass c, n, the run's ψ).
ESTIMATORS = {
    "2·min(b, c)/n": lambda b, c, n, suite: 2 * min(b, c) / n,
    "(b + c)/n": lambda b, c, n, suite: (b + c) / n,
    "2·c/n": lambda b, c, n, suite: run_discordance(c, n),
    "2·c/n shrunk (the gate's)": lambda b, c, n, suite: run_discordance(c, n, suite),
}


def estimator_table() -> None:
    """Exact, for the slice's own test at α·w: a no-change draw at ψ shows (b, c), the MDE is
    computed from its estimated ψ, and a drop equal to it is tested at the true ψ; the mean power
    over the draws that print an MDE a drop can reach. The run's ψ is taken as the truth (a
    500-case run estimates it to ±0.02)."""
    from scipy.stats import binom

    print("P(slice alone catches a drop equal to its report MDE), exact, by the estimate of ψ")
    print(f"{'n':>4} {'ψ':>4} " + " ".join(f"{name:>26}" for name in ESTIMATORS))
    for n, level in ((25, 0.00175), (100, 0.0035), (200, 0.0035), (400, 0.014)):
        for psi in PSIS[1:]:
            flips = binom.pmf(np.arange(n + 1), n, psi / 2)
            cells = []
            for estimate in ESTIMATORS.values():
                seen: dict[float, float | None] = {}
                total = mass = 0.0
                for b in np.flatnonzero(flips > 1e-7):
                    rest = binom.pmf(np.arange(n - b + 1), n - b, psi / 2 / (1 - psi / 2))
                    for c in np.flatnonzero(flips[b] * rest > 1e-7):
                        key = round(estimate(int(b), int(c), n, psi), 9)
                        if key not in seen:
                            found = binary_mde(n, key, level, TOLERANCE, SIM_GATE.power, SIM_GATE.mcnemar)
                            ok = found is not None and psi + found <= 1
                            seen[key] = binary_power(found, n, psi, level, TOLERANCE, SIM_GATE.mcnemar) if ok else None
                        if seen[key] is not None:
                            total += flips[b] * rest[c] * seen[key]
                            mass += flips[b] * rest[c]
                cells.append(f"{total / mass:>26.3f}" if mass > 0.01 else f"{'(no MDE)':>26}")
            print(f"{n:>4} {psi:>4.1f} " + " ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=10_000)
    parser.add_argument("--check", type=int, default=50, help="replicates a cell replayed through decide()")
    parser.add_argument("--layouts", nargs="*", default=list(LAYOUTS))
    parser.add_argument("--psi", nargs="*", type=float, default=list(PSIS))
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--estimators", action="store_true", help="only the exact table of estimates of ψ")
    args = parser.parse_args()
    if args.estimators:
        estimator_table()
        return
    power = SIM_GATE.power
    tests = UnitTests(SIM_GATE)
    print(
        f"P(caught) of a slice dropped by its printed MDE (power {power:g}, target ±{SLACK:g}); "
        f"{args.replicates:,} replicates a cell, {args.check} replayed end to end"
    )
    print(
        f"{'layout':>6} {'slice':>5} {'ψ':>4} {'α·w':>8} | {'plan MDE':>8} {'alone':>6} {'caught':>6} | "
        f"{'report MDE':>15} {'caught':>6} {'n/a':>5} | ok"
    )
    start, worst, mismatches, none = time.time(), 0.0, 0, 0
    for layout in args.layouts:
        sizes = LAYOUTS[layout]
        weights = weights_of(sizes)
        for which in slices_tested(sizes):
            n = sizes[which]
            level = SIM_GATE.alpha * float(weights[1 + which])
            report = ReportMde(sizes, which)
            for psi in args.psi:
                rng = np.random.default_rng([args.seed, int(layout), which, round(psi * 100)])
                planned = plan_mde(sizes, which, psi)
                plan_alone = plan_caught = math.nan
                if planned is not None:
                    plan_alone = alone(n, psi, planned, level, tests)
                    plan_caught, bad = caught(
                        sizes, which, psi, np.full(args.replicates, planned), rng, tests, weights, args.check
                    )
                    mismatches += bad
                # The report's MDE: a no-change draw of the layout at ψ, the slice's MDE through decide().
                b0 = np.empty((args.replicates, len(sizes)), dtype=np.int64)
                c0 = np.empty_like(b0)
                for k, size in enumerate(sizes):
                    b0[:, k], c0[:, k] = draw(size, np.full(args.replicates, psi / 2.0), psi / 2.0, rng)
                printed = report(b0, c0, args.check)
                # No MDE printed (no drop reaches the power), or one no drop at this ψ can equal
                # (ψ + Δ > 1): nothing to drop by.
                some = ~np.isnan(printed) & (psi + np.nan_to_num(printed) <= 1.0)
                report_caught = math.nan
                if some.sum() >= MIN_JUDGED:
                    report_caught, bad = caught(sizes, which, psi, printed[some], rng, tests, weights, args.check)
                    mismatches += bad
                mismatches += report.mismatches
                report.mismatches = 0
                spread = f"{np.nanmin(printed) * 100:.1f}–{np.nanmax(printed) * 100:.1f} pp" if some.any() else "none"
                cells = [x for x in (plan_caught, report_caught) if not math.isnan(x)]
                none += int(planned is None) + int(some.sum() < MIN_JUDGED)
                worst = max([worst, *(abs(x - power) for x in cells)])
                ok = all(abs(x - power) <= SLACK for x in cells)
                planned_pp = "none" if planned is None else f"{planned * 100:.1f} pp"
                print(
                    f"{layout:>6} {n:>5} {psi:>4.1f} {level:>8.5f} | {planned_pp:>8} {plan_alone:>6.3f} "
                    f"{plan_caught:>6.3f} | {spread:>15} {report_caught:>6.3f} {1 - some.mean():>5.1%} | "
                    f"{'yes' if ok else 'NO'}",
                    flush=True,
                )
    print(
        f"largest |P(caught) − {power:g}|: {worst:.3f}; end-to-end disagreements: {mismatches}; "
        f"cells with nothing to drop by: {none}; {time.time() - start:.0f} s"
    )
    print(
        "n/a: share of no-change draws whose printed MDE is none, or above 1 − ψ (no drop at this ψ reaches it); "
        f"a column with fewer than {MIN_JUDGED} droppable draws is not judged (nan)"
    )


if __name__ == "__main__":
    main()

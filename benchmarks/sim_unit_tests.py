"""How powerful can one slice's test be at the level docs/spec.md#alpha-split gives it? The evidence behind the
power targets evalgate's gate does not meet (benchmarks/sim_gate.py).

Under the default allocation a 100-case slice of 1,000 cases is tested at α = 0.0025 and a
200-case slice of 2,000 at α = 0.0025 (weighted Holm: overall 0.025, the slices share 0.025 by
case count). This script draws paired binary outcomes from the per-case models of docs/spec.md#validity-targets and
compares one-sided tests of H0: drop ≤ δ (δ = 0.02) at those levels:

  exact     the conditional exact McNemar test with the margin, as the gate runs it
            (``evals.compare.stats.mcnemar_worse``)
  mid-p     the same with half the probability of the observed count (not exact)
  tango     Tango's (1998, Stat. Med. 17:891) score test for a difference of paired proportions
            with a margin: asymptotic, the most powerful valid test we found
  wald      the paired z-test with the unrestricted variance (the paired CLT): anti-conservative
            on small slices

Each cell prints the share of replicates in which the test rejects and the point estimate is
below −δ, for the null boundary (true drop δ: the test's real size, to compare with α; five times
the replicates) and for the power cells of docs/spec.md#validity-targets.

    .venv/bin/python benchmarks/sim_unit_tests.py                  # 20,000 replicates per cell
    .venv/bin/python benchmarks/sim_unit_tests.py --replicates 4000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special

from evals.compare.stats import mcnemar_worse

DELTA = 0.02
MEAN = 0.7
MODELS = {"independent": None, "heterogeneous": (1.4, 0.6), "near-deterministic": (0.35, 0.15)}
# (slice cases, its α under the default allocation, true drops; the docs/spec.md#validity-targets target in the name)
CELLS = [
    (100, 0.0025, (DELTA, 0.30), "100-case slice of 1,000: 0.30 drop, target ≥ 0.90"),
    (200, 0.0025, (DELTA, 0.20), "200-case slice of 2,000: 0.20 drop, target ≥ 0.80"),
    (25, 0.00125, (DELTA, 0.30), "25-case slice of 500 (size check)"),
]
TESTS = ("exact", "mid-p", "tango", "wald")


def p_values(b: np.ndarray, c: np.ndarray, d: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """One-sided p-values of H0: drop ≤ δ; ``b`` pass→fail, ``c`` fail→pass, ``d`` per-case
    deltas (candidate − baseline), one row per replicate."""
    exact = np.array([mcnemar_worse(int(x), int(y), n, DELTA) for x, y in zip(b, c, strict=True)])
    disc = b + c
    pi0 = np.minimum(0.5 + DELTA * n / (2.0 * np.maximum(disc, 1)), 1.0)
    point = np.where(disc > 0, special.bdtr(b, disc, pi0) - special.bdtr(b - 1, disc, pi0), 0.0)
    mid = np.where((disc == 0) | (pi0 >= 1.0) | (b == 0), 1.0, exact - 0.5 * point)
    # Tango: the variance under the null boundary, at the restricted maximum-likelihood estimate.
    a2, bb, cc = 2.0 * n, -b - c + (2.0 * n - b + c) * DELTA, -c * DELTA * (1 - DELTA)
    q = (-bb + np.sqrt(bb * bb - 4 * a2 * cc)) / (2 * a2)
    tango = special.ndtr(-(b - c - n * DELTA) / np.sqrt(n * (2 * q + DELTA * (1 - DELTA))))
    se = d.std(axis=1, ddof=1) / np.sqrt(n)
    mean = d.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        wald = np.where(se > 0, special.ndtr((mean + DELTA) / se), np.where(mean < -DELTA, 0.0, 1.0))
    return {"exact": exact, "mid-p": mid, "tango": tango, "wald": wald}


def cell(n: int, alpha: float, drop: float, model: str, replicates: int, rng: np.random.Generator) -> dict[str, float]:
    shape = MODELS[model]
    p = np.full((replicates, n), MEAN) if shape is None else rng.beta(*shape, size=(replicates, n))
    base = rng.random((replicates, n)) < p
    cand = rng.random((replicates, n)) < p * (1 - drop / MEAN)
    b, c = (base & ~cand).sum(axis=1), (~base & cand).sum(axis=1)
    d = cand.astype(float) - base
    below = d.mean(axis=1) < -DELTA
    return {name: float(np.mean((pv <= alpha) & below)) for name, pv in p_values(b, c, d, n).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.process_time()
    rng = np.random.default_rng(args.seed)
    print(f"δ = {DELTA}; {args.replicates:,} replicates per cell; share rejecting (tests: {', '.join(TESTS)})")
    for n, alpha, drops, title in CELLS:
        print(f"\n{title}; tested at α = {alpha}")
        print(f"  {'model':<19} {'true drop':>11}  " + "  ".join(f"{t:>7}" for t in TESTS))
        for model in MODELS:
            for drop in drops:
                size = drop == DELTA  # a size needs more replicates and digits to compare with α
                shares = cell(n, alpha, drop, model, args.replicates * (5 if size else 1), rng)
                what = f"{drop:.2f}" + (" (size)" if size else "")
                print(f"  {model:<19} {what:>11}  " + "  ".join(f"{shares[t]:>7.{4 if size else 3}f}" for t in TESTS))
    print(f"\nCPU {time.process_time() - started:.1f} s")


if __name__ == "__main__":
    main()

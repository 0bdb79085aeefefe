"""The power of a unit's own test against a drop, and the minimum detectable drop (MDE) and the
cases it implies (docs/spec.md#mde). One computation behind the gate's per-unit MDE, *underpowered*
and "cases for target_mde" (``evals.compare.decide``) and ``evalgate plan`` (``evals.compare.plan``).

The model of a binary unit of ``n`` paired cases: between two runs of the same code a share ψ of
the cases flips (the no-change discordance), half each way, so a case goes pass→fail with
``p10 = ψ/2`` and fail→pass with ``p01 = ψ/2``. A drop Δ adds one-way flips: ``p10 = ψ/2 + Δ``,
``p01 = ψ/2`` (the pass rate falls by Δ, the discordance grows to ψ + Δ; the model needs
ψ + Δ ≤ 1). The test is the one ``evals.compare.paired`` runs, with the verdict's two conditions
(p ≤ the unit's level and the observed drop beyond the tolerance δ):

- under ``CLT_MIN_CASES`` paired cases, McNemar (mid-p or exact, as ``gate.mcnemar``): the power
  is **exact**, the sum of the Multinomial(n; p10, p01, 1 − p10 − p01) probabilities of the counts
  (b, c) the test rejects, each judged by ``evals.compare.stats.mcnemar_worse_grid``. McNemar is
  discrete: a 25-case slice at α·w 0.00175 rejects nothing under 9 of 25 cases lost, whatever the
  normal approximation says;
- from ``CLT_MIN_CASES`` on, the paired CLT, by the normal approximation: it rejects past the
  critical drop c whose own SE puts it z_{1−ℓ} SEs beyond δ (:func:`normal_power`), and under the
  drop the observed drop spreads by the alternative's SE ``√((ψ + Δ − Δ²)/n)``, not the
  no-change ``√(ψ/n)``: the power is ``Φ((Δ − c)/SE_Δ)``.

The MDE is the smallest Δ whose power reaches ``gate.power`` (bisection: the power rises with Δ,
which ``tests/unit/compare/test_power.py`` checks); the cases for a target drop are the fewest n
whose power at that drop reaches it (bisection over n; the exact power is a sawtooth in n, so the
n found can be a case or two above the smallest). Metrics that are not binary keep the normal form
on the standard error the unit's test observed (bootstrap-t, percentile bootstrap, CLT of a score,
a smoke run's stratified estimate): ``margin + (z_{1−ℓ} + z_power)·SE``, the SE scaling with √(n/n').
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal

import numpy as np

from evals.compare.paired import CLT_MIN_CASES
from evals.compare.stats import mcnemar_worse_grid, norm_cdf, norm_ppf

McNemar = Literal["mid-p", "exact"]
# The MDE's bisection stops when the bracket is this narrow: a tenth of the 0.1 pp the report prints.
DROP_RESOLUTION = 1e-4
# No search for cases goes past this many paired cases.
CASE_LIMIT = 10**9
# A slice's ψ borrows this many cases at the run's ψ (:func:`run_discordance`).
SHRINK_CASES = 25


def run_discordance(better: int, n: int, suite: float | None = None) -> float:
    """ψ of a run's unit: twice its share of fail→pass flips (``better``), which the model's drop
    leaves alone (p01 = ψ/2 under a drop as without one), so the unit that dropped is sized by its
    noise, not by its own drop's flips; shrunk towards ``suite`` (the run's ψ over all its cases,
    when the unit is part of it) with ``SHRINK_CASES`` pseudo-cases: a 25-case slice's own flips
    estimate ψ 0.2 to ±0.12. Chosen by ``benchmarks/sim_mde.py --estimators`` (a drop equal to the
    MDE a no-change run prints, caught by the slice's own test, exactly): twice the smaller flip
    count undercounts ψ, 0.65–0.78; a 25-case slice's own fail→pass flips, 0.70 at ψ 0.2; shrunk,
    0.77–0.80, as the total (b + c)/n (0.75–0.80), which would count the drop's flips as noise."""
    if suite is None:
        return 2.0 * better / n if n else 0.0
    return (2.0 * better + SHRINK_CASES * suite) / (n + SHRINK_CASES)


@lru_cache(maxsize=512)
def _rejected(n: int, level: float, margin: float, mcnemar: McNemar) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counts (b pass→fail, c fail→pass) of n paired cases the unit's McNemar test calls
    regressed (its p ≤ level and the observed drop (b − c)/n beyond the margin), and the log of
    each one's multinomial coefficient: what every drop's power sums over.

    With d = b + c discordant pairs fixed, both conditions hold from some b on (the p-value falls
    as b rises: P(B > b) + ½·P(B = b) loses ½·(P(B = b) + P(B = b + 1)) a step), so each d's
    threshold is found by bisection, for every d at once: O(n log n) tests, not O(n²)."""
    from scipy.special import gammaln  # scipy only where a binary unit is sized

    d = np.arange(n + 1)
    low = (d + margin * n) // 2
    low = np.where(2 * low - d > margin * n, low, low + 1).astype(np.int64)  # the first b with b − c > δ·n
    high = d + 1  # d + 1: no b of this d is rejected
    while np.any(low < high):
        mid = np.minimum((low + high) // 2, d)
        rejected = (low < high) & (mcnemar_worse_grid(mid, d - mid, n, margin, mid_p=mcnemar == "mid-p") <= level)
        high = np.where(rejected, mid, high)
        low = np.where(rejected | (low >= high), low, mid + 1)
    counts = np.maximum(d + 1 - high, 0)
    starts = np.repeat(high, counts)
    b = starts + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    c = np.repeat(d, counts) - b
    return b, c, gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1) - gammaln(n - b - c + 1)


def exact_power(drop: float, n: int, psi: float, level: float, margin: float, mcnemar: McNemar) -> float:
    """P(the McNemar test of n paired cases calls the unit regressed) under the model's drop."""
    b, c, log_pmf = _rejected(n, level, margin, mcnemar)
    if b.size == 0:
        return 0.0
    p10, p01 = psi / 2.0 + drop, psi / 2.0
    # x·log(p) with 0·log(0) = 0: a zero-probability cell contributes only when its count is 0.
    for count, prob in ((b, p10), (c, p01), (n - b - c, 1.0 - p10 - p01)):
        log_pmf = log_pmf + (count * math.log(prob) if prob > 0 else np.where(count > 0, -np.inf, 0.0))
    return float(min(np.exp(log_pmf).sum(), 1.0))


def normal_power(drop: float, n: int, psi: float, level: float, margin: float) -> float:
    """The paired CLT's power, by the normal approximation. The test divides the observed drop D
    by the SE it sees, √((S − D²)/n) with S the observed discordance, so it rejects past the
    critical drop c where c = δ + z_{1−ℓ}·√((S_c − c²)/n), S_c the discordance expected of a run
    that shows D = c (S moves with D: one for one when ψ is 0, since every flip is then the
    drop's). Under the drop, D spreads by the alternative's SE √((ψ + Δ − Δ²)/n). One SE for
    both (the drop's) is 0.08 off in power on a deterministic 400-case slice; this is within 0.02
    of the real test there (``tests/unit/compare/test_power.py``)."""
    p10, p01 = psi / 2.0 + drop, psi / 2.0
    variance = p10 + p01 - drop * drop
    if variance <= 0:
        return 1.0 if drop > margin else 0.0
    # E[S | D = c] of the multinomial counts: the regression of S on D.
    slope = (p10 * (1.0 - p10) - p01 * (1.0 - p01)) / variance
    z = float(norm_ppf(1.0 - level))

    def excess(c: float) -> float:
        seen = p10 + p01 + slope * (c - drop)
        return c - margin - z * math.sqrt(max(seen - c * c, 0.0) / n)

    low, high = margin, 1.0
    if excess(high) <= 0:
        return 0.0
    while high - low > DROP_RESOLUTION / 10:
        mid = (low + high) / 2.0
        low, high = (mid, high) if excess(mid) <= 0 else (low, mid)
    return norm_cdf((drop - high) / math.sqrt(variance / n))


def binary_power(drop: float, n: int, psi: float, level: float, margin: float, mcnemar: McNemar) -> float:
    """The power of the test ``evals.compare.paired`` runs on a binary unit of n paired cases."""
    if n < 2:
        return 0.0
    if n < CLT_MIN_CASES:
        return exact_power(drop, n, psi, level, margin, mcnemar)
    return normal_power(drop, n, psi, level, margin)


def binary_mde(n: int, psi: float, level: float, margin: float, power: float, mcnemar: McNemar) -> float | None:
    """The smallest drop the unit's test catches with ``power`` (None: none up to 1 − ψ does)."""
    psi = min(max(psi, 0.0), 1.0)
    low, high = margin, 1.0 - psi
    if high <= low or binary_power(high, n, psi, level, margin, mcnemar) < power:
        return None
    while high - low > DROP_RESOLUTION:
        mid = (low + high) / 2.0
        if binary_power(mid, n, psi, level, margin, mcnemar) >= power:
            high = mid
        else:
            low = mid
    return high


def binary_cases(target: float, psi: float, level: float, margin: float, power: float, mcnemar: McNemar) -> int | None:
    """The fewest paired cases whose test catches a drop of ``target`` with ``power`` (None: no
    number does, e.g. a target within the tolerance or beyond 1 − ψ)."""
    if target <= margin or psi + target > 1.0:
        return None

    def reaches(n: int) -> bool:
        return binary_power(target, n, psi, level, margin, mcnemar) >= power

    low, high = 2, CLT_MIN_CASES - 1
    if not reaches(high):
        low, high = CLT_MIN_CASES, CLT_MIN_CASES
        while not reaches(high):
            if high >= CASE_LIMIT:
                return None
            low, high = high + 1, min(2 * high, CASE_LIMIT)
    while low < high:
        mid = (low + high) // 2
        if reaches(mid):
            high = mid
        else:
            low = mid + 1
    return low


def se_cases(n: int, se: float, level: float, power: float, margin: float, target: float) -> int | None:
    """Cases that bring the normal form's MDE (``evals.compare.stats.mde``) to ``target``, the SE
    scaling with √(n/n') (None: past the tolerance no number of cases helps)."""
    room = target - margin
    if room <= 0 or se <= 0:
        return None
    z = float(norm_ppf(1.0 - level)) + float(norm_ppf(power))
    return math.ceil(n * (z * se / room) ** 2)

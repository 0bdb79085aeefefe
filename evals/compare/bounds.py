"""Each unit's interval at the level it was tested at (docs/spec.md#confidence-intervals).

A unit's verdict comes from its one-sided tests at the level the multiple-testing rule gave it;
printing a marginal 90% interval beside it let "inconclusive" stand beside an interval wholly
below −δ. So the printed interval *is* the tests, inverted: the oriented upper bound ``U`` is the
largest θ that the "worse" test does not reject at level ``a_worse`` as "Δ ≥ θ", the lower bound
``L`` the mirror from the "better" test at ``a_better``. A test that rejects "Δ ≥ −δ" at ``a``
then is the same event as ``U < −δ`` (and improved as ``L > δ``), whatever the method:

- McNemar (mid-p or exact, with the δ shift): the margin moves the null's π0 = ½ + m·n/(2·D), and
  the p-value grows with π0, so ``U`` is where the p-value crosses the level, found on π0 by
  Brent's method (mid-p has no closed form); the far end, which decides nothing, is widened
  (:class:`McNemarBounds`);
- paired CLT and the stratified t: ``U = mean + q_{1−a}·SE`` (normal or Student quantile);
- bootstrap-t: ``p = (1 + #{t* ≤ (mean + m)/SE}) / (B + 1) ≤ a`` exactly when
  ``(mean + m)/SE`` is below the (k+1)-th smallest t*, k = ⌊a·(B + 1)⌋ − 1, so ``U = mean −
  t*_(k+1)·SE``; the percentile bootstrap likewise: ``U`` is the (k+1)-th largest resample.

The levels come from the step-down itself (:func:`holm_levels`): a unit weighted Holm rejected at
step k was tested at ``α·w/W_k`` (``W_k``: the weight still in play at that step); a unit it did
not reject at ``α·w/W_J`` (``W_J``: the weight of all the units it did not reject), where each
of them has ``p > α·w/W_J``, so its bound reaches the band. Strassburger & Bretz (2008, Stat Med
27:4914) give simultaneous bounds compatible with weighted Holm; for simultaneous coverage they
set a rejected unit's bound at the margin itself (−δ) when not every hypothesis is rejected. We
print the inverted bound at the unit's step level instead: it agrees with the verdict in the
same way (rejected ⇔ beyond −δ) and says *how far* beyond −δ the data put the unit, which a
bound pinned at −δ cannot; the price is that the printed set of intervals is not simultaneous,
each is at its own printed level. Advisory units (weight 0), whose verdicts are Benjamini–
Hochberg's, get the level ``α·R/m`` (R: BH's rejections, at least 1; m: the units): the
false-coverage-statement intervals of Benjamini & Yekutieli (2005, JASA 100:71), which agree with
BH's selections exactly (:func:`bh_level`).

Bounds are oriented (positive = better) and clipped to what a mean delta can be (±1 for rates
and scores; ± the data's range otherwise). Which side of −δ a bound lies on is the verdict's
(:func:`agree`): the inversion puts it there already, and only floating-point rounding at the
boundary itself could put it on the other.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from evals.compare.model import CiMethod
from evals.compare.stats import mcnemar_worse, norm_ppf, weighted_holm


@dataclass(frozen=True, eq=False)
class Bounds(ABC):
    """Inverts one unit's own test: ``upper(a)``, ``lower(a)`` are its oriented bounds at level ``a``."""

    method: CiMethod
    limit: float  # |Δ| can be no larger: the bounds are clipped to ±limit

    def upper(self, level: float) -> float:
        return float(np.clip(self._upper(level), -self.limit, self.limit))

    def lower(self, level: float) -> float:
        return float(np.clip(self._lower(level), -self.limit, self.limit))

    @abstractmethod
    def _upper(self, level: float) -> float: ...

    @abstractmethod
    def _lower(self, level: float) -> float: ...


def _mcnemar_upper(worse: int, better: int, n: int, level: float, mid_p: bool) -> float:
    """The largest θ = −m whose test ``mcnemar_worse(worse, better, n, m) ≤ level`` fails to reject:
    the p-value is continuous and rises with π0 = ½ + m·n/(2·D), from 0 at π0 = 0 (``worse`` ≥ 1,
    the caller's) to 1 at π0 = 1, so Brent's method finds where it crosses ``level``."""
    from scipy.optimize import brentq  # as stats.mcnemar_worse: only small binary units get here

    d = worse + better

    def excess(pi0: float) -> float:
        if pi0 <= 0.0:  # the margin −D/n would give π0 a rounding below 0, where B has no distribution
            return -level
        return mcnemar_worse(worse, better, n, (2.0 * pi0 - 1.0) * d / n, mid_p=mid_p) - level

    root = float(brentq(excess, 0.0, 1.0, xtol=1e-15, rtol=4 * np.finfo(float).eps))
    return -(2.0 * root - 1.0) * d / n


@dataclass(frozen=True, eq=False)
class NormalBounds(Bounds):
    """A test of ``(center + m)/se`` against the normal (``df`` None: the paired CLT) or Student's t
    with ``df`` degrees of freedom (the stratified test); also the smoothed interval of a McNemar
    unit with no discordant pair, which has no test to invert (it cannot reject anything)."""

    center: float
    se: float
    df: float | None = None

    def _quantile(self, level: float) -> float:
        if self.df is None:
            return float(norm_ppf(1.0 - level))
        from scipy.stats import t  # as evals.compare.sampling: only smoke runs need it

        return float(t.ppf(1.0 - level, self.df))

    def _upper(self, level: float) -> float:
        return self.center + self._quantile(level) * self.se if self.se > 0 else self.center

    def _lower(self, level: float) -> float:
        return self.center - self._quantile(level) * self.se if self.se > 0 else self.center


@dataclass(frozen=True, eq=False)
class McNemarBounds(Bounds):
    """The McNemar test with the δ shift (``stats.mcnemar_worse``): ``worse`` pairs went pass→fail,
    ``better`` fail→pass, of ``n``. Conditional on its ``D`` discordant pairs the test sees Δ in
    [−D/n, D/n], so its inversion never reaches past ±D/n: the far end of a large change (the one
    beyond the estimate, away from 0) undercovered, at −0.40 on a 100-case slice 0.91 where 0.97
    was printed. That end decides no verdict the estimate's sign allows (improved needs Δ̂ > δ,
    regressed Δ̂ < −δ), so it is the wider of the inversion and the ``smoothed`` bound at the same
    level; a side no pair moved towards has no test to invert at all (its p-value is at least ½)
    and gets the smoothed bound alone."""

    worse: int
    better: int
    n: int
    mid_p: bool
    smoothed: NormalBounds

    def _upper(self, level: float) -> float:
        if self.worse == 0:
            return self.smoothed.upper(level)
        inverted = _mcnemar_upper(self.worse, self.better, self.n, level, self.mid_p)
        return max(inverted, self.smoothed.upper(level)) if self.better >= self.worse else inverted

    def _lower(self, level: float) -> float:
        if self.better == 0:
            return self.smoothed.lower(level)
        inverted = -_mcnemar_upper(self.better, self.worse, self.n, level, self.mid_p)
        return min(inverted, self.smoothed.lower(level)) if self.worse >= self.better else inverted


@dataclass(frozen=True, eq=False)
class BootstrapTBounds(Bounds):
    """``stats.bootstrap_t_p`` inverted: ``t_star`` are the resamples' studentized means."""

    center: float
    se: float
    t_star: np.ndarray  # sorted ascending

    def _upper(self, level: float) -> float:
        k = _rank(level, self.t_star.size)
        if k < 0:
            return math.inf
        return _minus_times(self.center, float(self.t_star[k]), self.se)

    def _lower(self, level: float) -> float:
        k = _rank(level, self.t_star.size)
        if k < 0:
            return -math.inf
        return _minus_times(self.center, float(self.t_star[-1 - k]), self.se)


@dataclass(frozen=True, eq=False)
class BootstrapBounds(Bounds):
    """``stats.bootstrap_p_worse`` inverted: ``dist`` is the resampled oriented delta."""

    dist: np.ndarray  # sorted ascending

    def _upper(self, level: float) -> float:
        k = _rank(level, self.dist.size)
        return math.inf if k < 0 else float(self.dist[-1 - k])

    def _lower(self, level: float) -> float:
        k = _rank(level, self.dist.size)
        return -math.inf if k < 0 else float(self.dist[k])


def _rank(level: float, resamples: int) -> int:
    """The most resamples ``k`` beyond the bound that still give the test's p-value
    ``(1 + k)/(B + 1) ≤ level``, in the same floating-point arithmetic as the test (−1: even none
    does, so the test cannot reject at this level)."""
    k = math.floor(level * (resamples + 1)) - 1
    while k + 1 < resamples and (2 + k) / (resamples + 1) <= level:
        k += 1
    while k >= 0 and (1 + k) / (resamples + 1) > level:
        k -= 1
    return k


def _minus_times(center: float, q: float, se: float) -> float:
    """``center − q·se``, where a zero SE (every case's delta alike) leaves the center whatever q is."""
    return center if se == 0 else center - q * se


def holm_levels(p: np.ndarray, w: np.ndarray, alpha: float) -> np.ndarray:
    """The level each unit was tested at by weighted Holm (``stats.weighted_holm``) at ``alpha``:
    a unit rejected at step k gets ``alpha·w/W_k``, every unit not rejected ``alpha·w/W_J``; 0
    for weight 0 (not in the family)."""
    p, w = np.asarray(p, dtype=float), np.asarray(w, dtype=float)
    levels = np.zeros(p.size)
    live = np.flatnonzero(w > 0)
    if live.size == 0:
        return levels
    adjusted = weighted_holm(p, w)
    order = live[np.argsort(p[live] / w[live], kind="stable")]
    remaining = np.cumsum(w[order][::-1])[::-1]
    rejected = adjusted[order] <= alpha  # a prefix of the order: the adjusted p never falls along it
    levels[order] = alpha * w[order] / np.where(rejected, remaining, w[order][~rejected].sum() or 1.0)
    return levels


def bh_level(q: np.ndarray, alpha: float) -> float:
    """Benjamini & Yekutieli's FCR level for units selected by BH at ``alpha`` from their q-values:
    ``alpha·R/m`` with R the rejections (at least 1)."""
    q = np.asarray(q, dtype=float)
    return alpha * max(int(np.count_nonzero(q <= alpha)), 1) / max(q.size, 1)


def agree(upper: float, lower: float, margin: float, *, regressed: bool, improved: bool) -> tuple[float, float]:
    """The bounds on the side of ±``margin`` the verdict says: ``upper < −margin`` exactly when
    regressed, ``lower > margin`` exactly when improved. The inversion already puts them there;
    this only settles a bound that floating-point rounding left on the boundary itself."""
    upper = min(upper, math.nextafter(-margin, -math.inf)) if regressed else max(upper, -margin)
    lower = max(lower, math.nextafter(margin, math.inf)) if improved else min(lower, margin)
    return upper, lower
